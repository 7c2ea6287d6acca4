//! The host's handle to a fairshare device reached through two mapped regions, BAR0
//! and a DMA buffer, whatever provides them (VFIO or the emulator's shared-memory
//! file): identification, the doorbell / completion protocol of [`fairshare_abi`] with
//! sequence numbers and timeouts, and credit checkpoint and restore through the
//! registers. [`DeviceHandle`] is an [`Accelerator`].

use crate::mmio::{barrier, OutOfBounds, Region};
use crate::signal::{self, Spinner};
use fairshare_abi::{self as abi, Accelerator, Completion, DeviceError, Limits, QuantumOutput, QuantumSettings};
use std::time::{Duration, Instant};

/// Where the demand, result and completion buffers sit in the DMA region of a device
/// that holds `max_users` users (each 64-byte aligned; the total rounded to pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaLayout {
    /// Offset of the demand buffer.
    pub demand: usize,
    /// Offset of the result buffer.
    pub result: usize,
    /// Offset of the completion record.
    pub completion: usize,
    /// Bytes of the DMA region.
    pub total: usize,
}

impl DmaLayout {
    /// The layout for `max_users` users.
    pub fn for_users(max_users: usize) -> DmaLayout {
        let align = |x: usize, a: usize| x.div_ceil(a) * a;
        let result = align(max_users * abi::DEMAND_BYTES, 64);
        let completion = align(result + max_users * abi::RESULT_ENTRY_BYTES, 64);
        DmaLayout { demand: 0, result, completion, total: align(completion + abi::COMPLETION_BYTES, 4096) }
    }
}

/// What the device told us it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `MAX_USERS`.
    pub max_users: usize,
    /// `CAPS.lanes`.
    pub lanes: usize,
    /// `CAPS.credit_bits`.
    pub credit_bits: u32,
    /// `CAPS.modes` (bit `m` for mode `m`).
    pub modes: u32,
    /// `CAPS.weighted`.
    pub weighted: bool,
}

/// Why a device cannot be used at all (at open time).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The host has no VFIO.
    #[error("{path} does not exist: this machine has no VFIO (load it with `modprobe vfio-pci` and bind the device to vfio-pci), or use --backend software or emulator:PATH")]
    NoVfio {
        /// The missing path.
        path: String,
    },
    /// The address is not a PCI address or sysfs path.
    #[error("`{0}` is not a PCI address: use DDDD:BB:DD.F (as `lspci -D` prints it) or a /sys/bus/pci/devices path")]
    BadAddress(String),
    /// No device at that address, or no IOMMU group.
    #[error("{0}")]
    NotFound(String),
    /// The OS refused access.
    #[error("permission denied opening {path}: run as root or give your user access to the VFIO group device")]
    Permission {
        /// What was refused.
        path: String,
    },
    /// BAR0 cannot be used.
    #[error("BAR0 {0}: is this a fairshare device with the bitstream loaded?")]
    Bar(String),
    /// Identification failed.
    #[error("{what}: found 0x{found:08X}, expected 0x{expected:08X}; {hint}")]
    Identity {
        /// Which register.
        what: &'static str,
        /// What it read.
        found: u32,
        /// What it should read.
        expected: u32,
        /// What to do.
        hint: &'static str,
    },
    /// Another host is attached to the emulator (one host at a time).
    #[error("another host is attached to the emulator at {path}; it serves one host at a time")]
    Busy {
        /// The emulator's socket.
        path: String,
    },
    /// Some other I/O failure, with context.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A buffer or register access outside the mapping: the device's layout does not match
/// what it reported.
impl From<OutOfBounds> for DeviceError {
    fn from(e: OutOfBounds) -> Self {
        DeviceError::Protocol(e.to_string())
    }
}

/// An open device.
pub struct DeviceHandle {
    bar: Region,
    dma: Region,
    iova: u64,
    layout: DmaLayout,
    info: DeviceInfo,
    seq: u32,
    tag: u32,
    /// How long to wait for a completion or a credit acknowledgement.
    pub timeout: Duration,
    label: String,
    _owner: Option<Box<dyn std::any::Any + Send>>,
    /// Whether whatever serves the device is still there, and what to say if not.
    liveness: Option<(Box<dyn Fn() -> bool + Send>, String)>,
    /// The device shares this process's memory and takes part in [`crate::signal`]
    /// (the emulator): kick it after commands, block on a futex while waiting. A real
    /// device is polled.
    shared: bool,
    /// The result buffer's words of the last quantum (reused).
    raw: Vec<u32>,
    /// How long a wait spins before it blocks ([`Accelerator::set_blocking_wait`]).
    spin: Duration,
}

impl DeviceHandle {
    /// Attaches to a device whose BAR0 and DMA region are mapped: checks `MAGIC` and
    /// the ABI major version, reads the capabilities and programs the buffer addresses
    /// (`iova` is the bus address of the DMA region's first byte). `owner` keeps
    /// whatever must outlive the mappings (VFIO container and device).
    pub fn attach(
        bar: Region,
        dma: Region,
        iova: u64,
        label: String,
        owner: Option<Box<dyn std::any::Any + Send>>,
    ) -> Result<DeviceHandle, OpenError> {
        let bad_bar = |e: OutOfBounds| OpenError::Bar(e.to_string());
        if bar.len() < abi::BAR_BYTES {
            return Err(OpenError::Bar(format!("has {} bytes, the register map needs {}", bar.len(), abi::BAR_BYTES)));
        }
        let magic = bar.read32(abi::MAGIC.offset as usize).map_err(bad_bar)?;
        if magic != abi::MAGIC_VALUE {
            return Err(OpenError::Identity {
                what: "MAGIC",
                found: magic,
                expected: abi::MAGIC_VALUE,
                hint: "this is not a fairshare device (or its emulator is not serving this file yet)",
            });
        }
        let version = bar.read32(abi::VERSION.offset as usize).map_err(bad_bar)?;
        if version >> 16 != abi::VERSION_MAJOR {
            return Err(OpenError::Identity {
                what: "VERSION",
                found: version,
                expected: abi::VERSION_VALUE,
                hint: "the device speaks another major ABI version: update the host or the bitstream",
            });
        }
        let caps = bar.read32(abi::CAPS.offset as usize).map_err(bad_bar)?;
        let info = DeviceInfo {
            max_users: bar.read32(abi::MAX_USERS.offset as usize).map_err(bad_bar)? as usize,
            lanes: abi::CAPS_LANES.get(caps) as usize,
            credit_bits: abi::CAPS_CREDIT_BITS.get(caps),
            modes: abi::CAPS_MODES.get(caps),
            weighted: abi::CAPS_WEIGHTED.get(caps) == 1,
        };
        if info.credit_bits != 32 {
            return Err(OpenError::Bar(format!(
                "reports {}-bit credit words; this host speaks 32-bit words only",
                info.credit_bits
            )));
        }
        if info.lanes == 0 || info.lanes > abi::MAX_LANES {
            return Err(OpenError::Bar(format!("reports {} lanes (1 to {} supported)", info.lanes, abi::MAX_LANES)));
        }
        let layout = DmaLayout::for_users(info.max_users);
        if dma.len() < layout.total {
            return Err(OpenError::Bar(format!(
                "the DMA region has {} bytes, {} users need {}",
                dma.len(),
                info.max_users,
                layout.total
            )));
        }
        let seq = bar.read32(abi::SEQ_DONE.offset as usize).map_err(bad_bar)?;
        let tag = abi::CREDIT_CMD_TAG.get(bar.read32(abi::CREDIT_ACK.offset as usize).map_err(bad_bar)?);
        let dev = DeviceHandle {
            bar,
            dma,
            iova,
            layout,
            info,
            seq,
            tag,
            timeout: Duration::from_secs(2),
            label,
            _owner: owner,
            liveness: None,
            shared: false,
            raw: Vec::new(),
            spin: signal::HOST_SPIN,
        };
        for (lo, hi, off) in [
            (abi::DEMAND_ADDR_LO, abi::DEMAND_ADDR_HI, dev.layout.demand),
            (abi::RESULT_ADDR_LO, abi::RESULT_ADDR_HI, dev.layout.result),
            (abi::COMPLETION_ADDR_LO, abi::COMPLETION_ADDR_HI, dev.layout.completion),
        ] {
            let addr = dev.iova + off as u64;
            dev.reg_write(lo.offset, addr as u32).map_err(bad_bar)?;
            dev.reg_write(hi.offset, (addr >> 32) as u32).map_err(bad_bar)?;
        }
        Ok(dev)
    }

    fn reg_write(&self, offset: u32, value: u32) -> Result<(), OutOfBounds> {
        self.bar.write32(offset as usize, value)
    }

    fn reg_read(&self, offset: u32) -> Result<u32, OutOfBounds> {
        self.bar.read32(offset as usize)
    }

    /// Checks `alive` about every millisecond while waiting for the device, and fails
    /// with [`DeviceError::Gone`] (saying `gone`) as soon as it returns false.
    pub fn set_liveness(&mut self, alive: Box<dyn Fn() -> bool + Send>, gone: String) {
        self.liveness = Some((alive, gone));
    }

    /// Declares that whatever serves the device shares its memory with this process and
    /// speaks [`crate::signal`]: commands kick it, waits block on a futex after the
    /// spin instead of polling with sleeps. For the emulator's shared-memory file only.
    pub fn set_shared_memory(&mut self) {
        self.shared = true;
    }

    /// After a command: wake an emulator that sleeps.
    fn kick(&self) -> Result<(), OutOfBounds> {
        if self.shared {
            signal::kick(&self.bar)?;
        }
        Ok(())
    }

    /// The capabilities read at attach time.
    pub fn info(&self) -> DeviceInfo {
        self.info
    }

    fn limits(&self) -> Limits {
        Limits { max_users: self.info.max_users, modes: self.info.modes }
    }

    fn run_quantum(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(), DeviceError> {
        let QuantumSettings { mode, fair, guaranteed } = settings;
        let n = demand.len();
        abi::admit_config(&self.limits(), mode.word(), n, fair as u64, guaranteed as u64)?;
        let seq = self.seq.wrapping_add(1);
        self.dma.write_words(self.layout.demand, demand)?;
        // Poison the completion's sequence number so that only a fresh record matches.
        self.dma.write32(self.layout.completion, !seq)?;
        self.reg_write(abi::CONTROL.offset, abi::CONTROL_MODE.set(0, mode.word()))?;
        self.reg_write(abi::N_USERS.offset, n as u32)?;
        self.reg_write(abi::FAIR_SHARE.offset, fair)?;
        self.reg_write(abi::GUARANTEED.offset, guaranteed)?;
        barrier();
        self.reg_write(abi::DOORBELL.offset, seq)?;
        self.kick()?;
        self.seq = seq;
        // The device computes now: the caller's own work goes here, not after the wait.
        meanwhile();
        let completion = Word::Dma(self.layout.completion);
        self.wait(
            || format!("sequence number {seq}"),
            completion,
            |dev| Ok(dev.dma.read32(dev.layout.completion)? != !seq),
        )?;
        barrier();
        let mut words = [0u32; abi::COMPLETION_BYTES / 4];
        self.dma.read_words(self.layout.completion, &mut words)?;
        let record = Completion::from_words(words);
        if record.seq != seq {
            return Err(DeviceError::Protocol(format!(
                "completion with sequence number {}, expected {seq}",
                record.seq
            )));
        }
        let code = abi::STATUS_ERROR.get(record.status);
        if code != abi::status::NONE {
            return Err(DeviceError::Refused { code });
        }
        self.raw.resize(2 * n, 0);
        self.dma.read_words(self.layout.result, &mut self.raw)?;
        out.alloc.resize(n, 0);
        out.credits.resize(n, 0);
        for ((a, c), entry) in out.alloc.iter_mut().zip(out.credits.iter_mut()).zip(self.raw.chunks_exact(2)) {
            (*a, *c) = (entry[0], entry[1]);
        }
        out.cycles = record.cycles;
        out.device_ns = record.device_ns;
        Ok(())
    }

    fn credit_command(&mut self, write: bool) -> Result<(), DeviceError> {
        self.tag = (self.tag + 1) & 0xFF_FFFF;
        let cmd = abi::CREDIT_CMD_TAG.set(abi::CREDIT_CMD_WRITE.set(0, write as u32), self.tag);
        barrier();
        self.reg_write(abi::CREDIT_CMD.offset, cmd)?;
        self.kick()?;
        let ack = Word::Bar(abi::CREDIT_ACK.offset as usize);
        self.wait(
            || format!("credit command 0x{cmd:08X}"),
            ack,
            |dev| Ok(dev.reg_read(abi::CREDIT_ACK.offset)? == cmd),
        )?;
        barrier();
        Ok(())
    }

    /// Waits until `done` holds or the timeout passes. Spins first ([`Spinner`], for
    /// [`signal::HOST_SPIN`], or [`signal::HOST_SPIN_SHARED`] when the caller's other
    /// threads need the CPU: a fast device answers in microseconds); then, with the emulator,
    /// blocks on a futex on `word` while it holds what it held last (woken by the
    /// emulator's write), or, with a real device, polls every 20 us. Checks the
    /// liveness about every millisecond.
    fn wait(
        &self,
        what: impl FnOnce() -> String,
        word: Word,
        mut done: impl FnMut(&Self) -> Result<bool, DeviceError>,
    ) -> Result<(), DeviceError> {
        let start = Instant::now();
        let mut spinner = Spinner::new(self.spin);
        let mut checked = start;
        while !done(self)? {
            if spinner.spin() {
                continue;
            }
            let now = Instant::now();
            if now - start > self.timeout {
                return Err(DeviceError::Timeout { what: what(), after: self.timeout });
            }
            if let Some((alive, gone)) = &self.liveness {
                if now - checked > Duration::from_millis(1) {
                    checked = now;
                    if !alive() {
                        return Err(DeviceError::Gone(gone.clone()));
                    }
                }
            }
            if self.shared {
                let word = match word {
                    Word::Dma(off) => self.dma.word(off)?,
                    Word::Bar(off) => self.bar.word(off)?,
                };
                let left = self.timeout.saturating_sub(now - start).min(Duration::from_millis(1));
                // Whatever it holds now is not the answer (`done` said so): sleep until it
                // changes. Read before the flag is set, so a change in between is seen.
                let seen = word.load(std::sync::atomic::Ordering::SeqCst);
                if !done(self)? {
                    signal::sleep_while(self.bar.word(signal::HOST_ASLEEP)?, word, seen, left);
                }
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
        Ok(())
    }

    /// Restores the balances of users `0 .. credits.len()`, row by row through
    /// `CREDIT_DATA` and write commands.
    fn write_credit_rows(&mut self, credits: &[u32]) -> Result<(), DeviceError> {
        if credits.len() > self.info.max_users {
            return Err(DeviceError::Unsupported(format!(
                "{} users: the device holds {}",
                credits.len(),
                self.info.max_users
            )));
        }
        let p = self.info.lanes;
        for (row, chunk) in credits.chunks(p).enumerate() {
            self.reg_write(abi::CREDIT_ROW.offset, row as u32)?;
            for lane in 0..p {
                self.reg_write(abi::credit_data(lane), chunk.get(lane).copied().unwrap_or(0))?;
            }
            self.credit_command(true)?;
        }
        Ok(())
    }

    /// Checkpoints the balances of users `0 .. n` through read commands.
    fn read_credit_rows(&mut self, n: usize) -> Result<Vec<u32>, DeviceError> {
        if n > self.info.max_users {
            return Err(DeviceError::Unsupported(format!("{n} users: the device holds {}", self.info.max_users)));
        }
        let p = self.info.lanes;
        let mut out = Vec::with_capacity(n);
        for row in 0..n.div_ceil(p) {
            self.reg_write(abi::CREDIT_ROW.offset, row as u32)?;
            self.credit_command(false)?;
            for lane in 0..p.min(n - row * p) {
                out.push(self.reg_read(abi::credit_data(lane))?);
            }
        }
        Ok(out)
    }
}

impl Accelerator for DeviceHandle {
    fn label(&self) -> String {
        self.label.clone()
    }
    fn limits(&self) -> Limits {
        DeviceHandle::limits(self)
    }
    fn write_credits(&mut self, credits: &[u32]) -> Result<(), DeviceError> {
        self.write_credit_rows(credits)
    }
    fn read_credits(&mut self, n: usize) -> Result<Vec<u32>, DeviceError> {
        self.read_credit_rows(n)
    }
    fn quantum_into(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
    ) -> Result<(), DeviceError> {
        self.run_quantum(settings, demand, out, &mut || {})
    }
    fn quantum_into_overlapped(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(), DeviceError> {
        self.run_quantum(settings, demand, out, meanwhile)
    }
    fn set_blocking_wait(&mut self, block: bool) {
        self.spin = if block { signal::HOST_SPIN_SHARED } else { signal::HOST_SPIN };
    }
}

/// A word a wait blocks on.
#[derive(Clone, Copy)]
enum Word {
    /// In the DMA region (the completion record).
    Dma(usize),
    /// In BAR0 (a register).
    Bar(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use fairshare_abi::Mode;

    /// BAR0 and DMA regions in plain memory with the identification registers set.
    fn regions(magic: u32, version: u32, caps: u32) -> (Region, Region) {
        let bar = Region::anonymous(4096).unwrap();
        for (r, v) in [(abi::MAGIC, magic), (abi::VERSION, version), (abi::CAPS, caps), (abi::MAX_USERS, 64)] {
            bar.write32(r.offset as usize, v).unwrap();
        }
        (bar, Region::anonymous(DmaLayout::for_users(64).total).unwrap())
    }

    fn attach(magic: u32, version: u32, caps: u32) -> Result<DeviceHandle, OpenError> {
        let (bar, dma) = regions(magic, version, caps);
        DeviceHandle::attach(bar, dma, 0x1000, "test".into(), None)
    }

    #[test]
    fn attach_checks_identity_and_capabilities() {
        let good = abi::caps_word(4);
        let dev = attach(abi::MAGIC_VALUE, abi::VERSION_VALUE, good).unwrap();
        assert_eq!(dev.info(), DeviceInfo { max_users: 64, lanes: 4, credit_bits: 32, modes: 0b111, weighted: false });
        // The buffer addresses are programmed: bus address of the DMA region plus offsets.
        assert_eq!(dev.reg_read(abi::RESULT_ADDR_LO.offset).unwrap() as usize, 0x1000 + dev.layout.result);
        let e = attach(0, abi::VERSION_VALUE, good).err().unwrap().to_string();
        assert!(e.contains("MAGIC") && e.contains("not a fairshare device"), "{e}");
        let e = attach(abi::MAGIC_VALUE, (abi::VERSION_MAJOR + 1) << 16, good).err().unwrap().to_string();
        assert!(e.contains("another major ABI version"), "{e}");
        let e = attach(abi::MAGIC_VALUE, abi::VERSION_VALUE, abi::CAPS_CREDIT_BITS.set(good, 16)).err().unwrap();
        assert!(e.to_string().contains("16-bit credit words"), "{e}");
        let e = attach(abi::MAGIC_VALUE, abi::VERSION_VALUE, abi::CAPS_LANES.set(good, 0)).err().unwrap();
        assert!(e.to_string().contains("0 lanes"), "{e}");
    }

    #[test]
    fn a_silent_device_times_out_and_bad_requests_are_refused() {
        let mut dev = attach(abi::MAGIC_VALUE, abi::VERSION_VALUE, abi::caps_word(4)).unwrap();
        dev.timeout = Duration::from_millis(20);
        let e = dev.quantum(QuantumSettings { mode: Mode::Karma, fair: 2, guaranteed: 1 }, &[1, 2, 3]).unwrap_err();
        assert!(matches!(e, DeviceError::Timeout { .. }), "{e}");
        assert!(matches!(
            dev.quantum(QuantumSettings { mode: Mode::Karma, fair: 2, guaranteed: 1 }, &[]),
            Err(DeviceError::Unsupported(_))
        ));
        assert!(matches!(
            dev.quantum(QuantumSettings { mode: Mode::Karma, fair: 2, guaranteed: 1 }, &[0; 65]),
            Err(DeviceError::Unsupported(_))
        ));
        assert!(matches!(
            dev.quantum(QuantumSettings { mode: Mode::Karma, fair: 0, guaranteed: 1 }, &[1]),
            Err(DeviceError::Unsupported(_))
        ));
        assert!(matches!(dev.read_credits(1), Err(DeviceError::Timeout { .. })));
        // A device that computes Karma only is not asked for max-min.
        let (bar, dma) = regions(abi::MAGIC_VALUE, abi::VERSION_VALUE, abi::CAPS_MODES.set(abi::caps_word(4), 1));
        let mut karma_only = DeviceHandle::attach(bar, dma, 0, "test".into(), None).unwrap();
        let e = karma_only.quantum(QuantumSettings { mode: Mode::MaxMin, fair: 2, guaranteed: 1 }, &[1]).unwrap_err();
        assert!(e.to_string().contains("mode 1"), "{e}");
    }
}
