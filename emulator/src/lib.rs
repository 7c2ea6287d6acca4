//! # fairshare-emulator: the emulated device
//!
//! Serves the register map of `fairshare-abi` over the shared-memory file of
//! `fairshare_driver::shm`, and computes each quantum with the RustHDL engine (cycle by
//! cycle) or its software model, writing results and the completion record as the
//! hardware's DMA would. `fairshare device-sim` runs it as a separate process; tests
//! and benchmarks may run it on a thread ([`InProcess`]). It returns errors and never
//! ends the process: an injected crash is [`Stopped::Crashed`], which the command turns
//! into its exit status.
//!
//! Faults can be injected on request, each at one quantum (counted from 1 by this
//! emulator): a late completion, a wrong sequence number, a corrupted allocation, or a
//! crash after half of the results are written.
//!
//! Owns the device's side of the protocol only; depends on the ABI, the driver's
//! shared-memory file and the engines of `fairshare-hdl`, never on the host library.

use fairshare_abi::{self as abi, Accelerator, Completion, DeviceError, Mode};
use fairshare_driver::mmio::{barrier, OutOfBounds, Region};
use fairshare_driver::shm::{self, ClaimError};
use fairshare_driver::signal::{self, Spinner};
use fairshare_hdl::catalog::{self, HdlError, SimulatedEngine, SoftwareEngine};
use std::fs::File;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use std::time::Instant;

/// Why an emulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// No engine of that shape.
    #[error(transparent)]
    Shape(#[from] HdlError),
    /// The socket path is taken by something that must not be replaced.
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// Creating or mapping the device memory failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The mapping is smaller than the register map.
    #[error(transparent)]
    Bounds(#[from] OutOfBounds),
    /// The emulator thread could not start or stopped before it was ready.
    #[error("{0}")]
    Thread(String),
}

/// A `--model` or `--fault` that does not parse, with what is expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SpecError(pub String);

/// Why [`Emulator::serve`] returned before it was asked to stop.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped {
    /// An injected `crash` fault (the command exits with status 70).
    Crashed,
}

/// What computes the quanta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// The RustHDL engine, cycle by cycle.
    Rtl,
    /// The engine's software model (same results and status codes, no cycles).
    Software,
}

impl FromStr for Model {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s {
            "rtl" => Ok(Model::Rtl),
            "software" => Ok(Model::Software),
            other => Err(SpecError(format!("model `{other}`: use rtl or software"))),
        }
    }
}

/// A kind of injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The completion is written after a delay (see [`Emulator::late_by`]).
    Late,
    /// The completion carries another sequence number.
    WrongSeq,
    /// User 0's allocation is one slice more than computed (breaks an invariant of every
    /// policy: the host's cheap check sees it in every verification mode).
    Corrupt,
    /// One slice moved from a borrower to another user who wanted more, with a credit
    /// moved back (the first pair of users where that is possible; none if there is
    /// none), and the device keeps the changed balances. Keeps every invariant: only an
    /// exact recomputation sees it (`--verify sync`, `async`, a sampled quantum).
    Swap,
    /// Half of the results are written, then the emulator stops ([`Emulator::serve`]
    /// returns [`Stopped::Crashed`]; `fairshare device-sim` exits with status 70).
    Crash,
}

/// A fault at one quantum: `KIND@Q`, e.g. `late@3`, `wrong-seq@1`, `corrupt@10`,
/// `swap@7`, `crash@5`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// At which quantum served (from 1).
    pub at: u64,
}

impl FromStr for Fault {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let bad = |why: String| SpecError(why);
        let (kind, at) =
            s.split_once('@').ok_or_else(|| bad(format!("fault `{s}`: expected KIND@QUANTUM, e.g. late@3")))?;
        let kind = match kind {
            "late" => FaultKind::Late,
            "wrong-seq" => FaultKind::WrongSeq,
            "corrupt" => FaultKind::Corrupt,
            "swap" => FaultKind::Swap,
            "crash" => FaultKind::Crash,
            other => return Err(bad(format!("fault `{other}`: use late, wrong-seq, corrupt, swap or crash"))),
        };
        let at: u64 = at.parse().map_err(|_| bad(format!("fault `{s}`: `{at}` is not a quantum number")))?;
        if at == 0 {
            return Err(bad(format!("fault `{s}`: quanta count from 1")));
        }
        Ok(Fault { kind, at })
    }
}

/// A device served over a shared-memory file.
pub struct Emulator {
    memory: File,
    listener: UnixListener,
    /// The host attached now (one at a time).
    client: Option<UnixStream>,
    path: PathBuf,
    bar: Region,
    dma: Region,
    engine: Box<dyn SimulatedEngine>,
    faults: Vec<Fault>,
    served: u64,
    quanta_ok: u32,
    last_seq: u32,
    last_cmd: u32,
    /// The demands and result words of the last quantum (reused).
    demand: Vec<u32>,
    results: Vec<u32>,
    out: abi::QuantumOutput,
    /// How late a `late` completion is (default 3 s, above the host's default 2 s timeout).
    pub late_by: Duration,
}

impl Emulator {
    /// Creates the shared-memory file at `path` for an engine of `lanes` lanes holding
    /// `users` users, fills in the identification registers (`MAGIC` last, then the file
    /// is renamed into place, so a host never sees half a device).
    pub fn create(
        path: &Path,
        users: usize,
        lanes: usize,
        model: Model,
        faults: Vec<Fault>,
    ) -> Result<Self, EmulatorError> {
        let engine: Box<dyn SimulatedEngine> = match model {
            Model::Rtl => catalog::engine(lanes, users)?,
            Model::Software => {
                let capacity = catalog::model_capacity(lanes, users)?;
                Box::new(SoftwareEngine::new(lanes, capacity))
            }
        };
        let max_users = engine.capacity();
        let (memory, bar, dma) = shm::create_memory(max_users).map_err(|source| EmulatorError::Io {
            what: "creating the device memory (a sealed memfd)".into(),
            source,
        })?;
        let init = [
            (abi::VERSION.offset, abi::VERSION_VALUE),
            (abi::MAX_USERS.offset, max_users as u32),
            (abi::CAPS.offset, abi::caps_word(lanes)),
        ];
        for (off, v) in init {
            bar.write32(off as usize, v)?;
        }
        barrier();
        bar.write32(abi::MAGIC.offset as usize, abi::MAGIC_VALUE)?;
        barrier();
        // Only a complete device is announced: the socket appears last.
        let listener = shm::claim(path)?;
        listener.set_nonblocking(true).map_err(|source| EmulatorError::Io {
            what: format!("making the socket {} non-blocking", path.display()),
            source,
        })?;
        Ok(Emulator {
            memory,
            listener,
            client: None,
            path: path.to_path_buf(),
            bar,
            dma,
            engine,
            faults,
            served: 0,
            quanta_ok: 0,
            last_seq: 0,
            last_cmd: 0,
            demand: Vec::new(),
            results: Vec::new(),
            out: abi::QuantumOutput::default(),
            late_by: Duration::from_secs(3),
        })
    }

    /// Most users.
    pub fn max_users(&self) -> usize {
        self.engine.capacity()
    }

    /// Quanta served so far.
    pub fn served(&self) -> u64 {
        self.served
    }

    fn reg(&self, r: abi::Register) -> u32 {
        self.bar.read32(r.offset as usize).unwrap_or(0)
    }

    fn set(&self, r: abi::Register, v: u32) {
        let _ = self.bar.write32(r.offset as usize, v);
    }

    fn fault(&self, kind: FaultKind) -> bool {
        self.faults.iter().any(|f| f.kind == kind && f.at == self.served)
    }

    /// Serves until `stop` is set (or an injected crash). Polls the doorbell and the
    /// credit command registers; when idle it spins (yielding now and then) for
    /// [`signal::DEVICE_SPIN`], then blocks on the host's kick word (a futex,
    /// [`fairshare_driver::signal`]) for up to 5 ms at a time: back-to-back quanta are
    /// answered within microseconds, an idle device takes no CPU. While idle, between
    /// 1 and 5 ms apart, it answers hosts that connect and notices one that left.
    pub fn serve(&mut self, stop: &AtomicBool) -> Result<(), Stopped> {
        let mut spinner = Spinner::new(signal::DEVICE_SPIN);
        let mut checked = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            // Read before polling: a kick after the poll changes it, and the sleep below
            // then returns at once.
            let kicked = self.bar.word(signal::KICK).map(|w| w.load(Ordering::SeqCst)).unwrap_or(0);
            if self.poll()? {
                spinner.reset();
                continue;
            }
            if spinner.spin() {
                continue;
            }
            // Only while idle: a busy poll loop does not read the clock.
            if checked.elapsed() > Duration::from_millis(1) {
                checked = Instant::now();
                self.connections();
            }
            if let (Ok(asleep), Ok(kick)) = (self.bar.word(signal::DEVICE_ASLEEP), self.bar.word(signal::KICK)) {
                signal::sleep_while(asleep, kick, kicked, Duration::from_millis(5));
            }
        }
        Ok(())
    }

    /// Frees the device when its host left, and answers hosts that connect: the
    /// device memory for the first, a refusal while one is attached.
    pub fn connections(&mut self) {
        if self.client.as_ref().is_some_and(|c| !shm::peer_alive(c)) {
            self.client = None;
        }
        while let Ok((stream, _)) = self.listener.accept() {
            // A host that closed its connection just before this one came is gone.
            if self.client.as_ref().is_some_and(|c| !shm::peer_alive(c)) {
                self.client = None;
            }
            if self.client.is_some() {
                shm::refuse(stream);
            } else if shm::grant(&stream, &self.memory).is_ok() {
                self.client = Some(stream);
            }
        }
    }

    /// Handles one pending doorbell or credit command; false when there was none.
    pub fn poll(&mut self) -> Result<bool, Stopped> {
        barrier();
        let seq = self.reg(abi::DOORBELL);
        if seq != self.last_seq {
            self.last_seq = seq;
            // The demands (a plain bulk copy) are read after the doorbell was seen.
            barrier();
            self.quantum(seq)?;
            return Ok(true);
        }
        let cmd = self.reg(abi::CREDIT_CMD);
        if cmd != self.last_cmd {
            self.last_cmd = cmd;
            self.credit_command(cmd);
            return Ok(true);
        }
        Ok(false)
    }

    fn credit_command(&mut self, cmd: u32) {
        let row = self.reg(abi::CREDIT_ROW) as usize;
        let lanes = self.engine.lanes();
        if row * lanes < self.engine.capacity() {
            if abi::CREDIT_CMD_WRITE.get(cmd) == 1 {
                let words: Vec<u32> =
                    (0..lanes).map(|l| self.bar.read32(abi::credit_data(l) as usize).unwrap_or(0)).collect();
                self.engine.write_row(row, &words);
            } else {
                for (l, w) in self.engine.read_row(row).into_iter().enumerate() {
                    let _ = self.bar.write32(abi::credit_data(l) as usize, w);
                }
            }
        }
        barrier();
        self.set(abi::CREDIT_ACK, cmd);
        self.wake_host(self.bar.word(abi::CREDIT_ACK.offset as usize));
    }

    /// Wakes a host that blocks on `word` (just written).
    fn wake_host(&self, word: Result<&std::sync::atomic::AtomicU32, OutOfBounds>) {
        if let (Ok(asleep), Ok(word)) = (self.bar.word(signal::HOST_ASLEEP), word) {
            signal::wake(asleep, word);
        }
    }

    /// Bus address registers as offsets into the DMA region.
    fn address(&self, lo: abi::Register, hi: abi::Register) -> usize {
        ((self.reg(hi) as u64) << 32 | self.reg(lo) as u64) as usize
    }

    /// One quantum as the engine sees it: the configuration checked by the ABI's
    /// admission rule (users, shares, mode), then the engine, which checks the rest.
    fn compute(&mut self, mode_word: u32, fair: u32, guaranteed: u32, demand: &[u32]) -> Result<(), u32> {
        abi::admit_config(&self.engine.limits(), mode_word, demand.len(), fair as u64, guaranteed as u64)
            .map_err(|r| r.code)?;
        let mode = Mode::from_word(mode_word).ok_or(abi::status::MODE)?;
        self.engine.quantum_into(abi::QuantumSettings { mode, fair, guaranteed }, demand, &mut self.out).map_err(|e| {
            match e {
                DeviceError::Refused { code } => code,
                // The engines refuse with status codes only; anything else is a bad request.
                _ => abi::status::USERS,
            }
        })
    }

    /// The `swap` fault: moves one slice from a borrower `u` to a user `v` who got at
    /// least its guaranteed share `g` and wanted more, and one credit from `v` to `u`,
    /// as if the engine had picked the wrong lender; the engine keeps those balances.
    fn swap(&mut self, g: u32) {
        let (demand, out) = (&self.demand, &mut self.out);
        let Some(u) = (0..out.alloc.len()).find(|&u| out.alloc[u] > g) else { return };
        let lender = |v: usize| v != u && out.alloc[v] >= g && out.alloc[v] < demand[v] && out.credits[v] >= 1;
        let Some(v) = (0..out.alloc.len()).find(|&v| lender(v)) else { return };
        out.alloc[u] -= 1;
        out.credits[u] += 1;
        out.alloc[v] += 1;
        out.credits[v] -= 1;
        let lanes = self.engine.lanes();
        for user in [u, v] {
            let row = user / lanes;
            let mut words = self.engine.read_row(row);
            words[user % lanes] = self.out.credits[user];
            self.engine.write_row(row, &words);
        }
    }

    fn quantum(&mut self, seq: u32) -> Result<(), Stopped> {
        let start = Instant::now();
        self.served += 1;
        self.set(abi::STATUS, abi::STATUS_BUSY.set(0, 1));
        let mode = abi::CONTROL_MODE.get(self.reg(abi::CONTROL));
        let n = self.reg(abi::N_USERS) as usize;
        let (fair, guaranteed) = (self.reg(abi::FAIR_SHARE), self.reg(abi::GUARANTEED));
        let demand_at = self.address(abi::DEMAND_ADDR_LO, abi::DEMAND_ADDR_HI);
        let result_at = self.address(abi::RESULT_ADDR_LO, abi::RESULT_ADDR_HI);
        let completion_at = self.address(abi::COMPLETION_ADDR_LO, abi::COMPLETION_ADDR_HI);
        let outcome = if n == 0 || n > self.engine.capacity() {
            Err(abi::status::USERS)
        } else {
            let mut demand = std::mem::take(&mut self.demand);
            demand.resize(n, 0);
            let read = self.dma.read_words(demand_at, &mut demand);
            let outcome = read.map(|()| self.compute(mode, fair, guaranteed, &demand));
            self.demand = demand;
            match outcome {
                Err(e) => {
                    eprintln!("device-sim: sequence number {seq}: demand buffer: {e}; no completion");
                    return Ok(());
                }
                Ok(outcome) => outcome,
            }
        };
        let (code, cycles) = match outcome {
            Ok(()) => {
                if self.fault(FaultKind::Corrupt) {
                    self.out.alloc[0] += 1;
                }
                if self.fault(FaultKind::Swap) {
                    self.swap(guaranteed);
                }
                let r = &self.out;
                let mut words = std::mem::take(&mut self.results);
                words.clear();
                words.extend(r.alloc.iter().zip(&r.credits).flat_map(|(&a, &c)| [a, c]));
                let written = if self.fault(FaultKind::Crash) { &words[..words.len() / 2] } else { &words[..] };
                let wrote = self.dma.write_words(result_at, written);
                self.results = words;
                if let Err(e) = wrote {
                    eprintln!("device-sim: sequence number {seq}: result buffer: {e}; no completion");
                    return Ok(());
                }
                if self.fault(FaultKind::Crash) {
                    eprintln!("device-sim: injected crash in quantum {} (sequence number {seq})", self.served);
                    return Err(Stopped::Crashed);
                }
                self.quanta_ok = self.quanta_ok.wrapping_add(1);
                (abi::status::NONE, self.out.cycles)
            }
            Err(code) => (code, 0),
        };
        if self.fault(FaultKind::Late) {
            std::thread::sleep(self.late_by);
        }
        let status = abi::STATUS_ERROR.set(abi::STATUS_DONE.set(0, 1), code);
        let echoed = if self.fault(FaultKind::WrongSeq) { seq.wrapping_add(7) } else { seq };
        let device_ns = start.elapsed().as_nanos() as u64;
        let words = Completion { seq: echoed, status, cycles, quanta: self.quanta_ok, device_ns }.to_words();
        barrier();
        // Status, cycles and quanta first (a plain bulk copy, ordered before the sequence
        // number by the fence); the sequence number (what the host waits on) last.
        let body = self.dma.write_words(completion_at + 4, &words[1..]);
        barrier();
        if body.and_then(|_| self.dma.write32(completion_at, words[0])).is_err() {
            eprintln!("device-sim: sequence number {seq}: the completion address is outside the DMA region");
        }
        self.wake_host(self.dma.word(completion_at));
        self.set(abi::CYCLES, cycles);
        self.set(abi::QUANTA, self.quanta_ok);
        self.set(abi::SEQ_DONE, seq);
        self.set(abi::STATUS, status);
        Ok(())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // A host that connects later must not find a device that is gone.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// An emulator serving on a thread of this process (the in-process variant, for tests
/// and benchmarks). Dropping it stops the thread and removes the file.
pub struct InProcess {
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), Stopped>>>,
}

impl InProcess {
    /// Creates the file at `path` and starts serving it; returns once a host may open it.
    pub fn start(
        path: &Path,
        users: usize,
        lanes: usize,
        model: Model,
        faults: Vec<Fault>,
    ) -> Result<Self, EmulatorError> {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let (tx, rx) = crossbeam::channel::bounded(1);
        let (path, flag) = (path.to_path_buf(), stop.clone());
        // The RustHDL model is built on the thread that runs it (and needs a deep stack
        // for wide shapes).
        let thread = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || match Emulator::create(&path, users, lanes, model, faults) {
                Ok(mut emu) => {
                    let _ = tx.send(Ok(()));
                    emu.serve(&flag)
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    Ok(())
                }
            })
            .map_err(|e| EmulatorError::Thread(format!("starting the emulator thread: {e}")))?;
        rx.recv().map_err(|_| EmulatorError::Thread("the emulator thread stopped before it was ready".into()))??;
        Ok(InProcess { stop, thread: Some(thread) })
    }

    /// Stops serving; `Err(Stopped::Crashed)` if an injected crash had already stopped it.
    pub fn stop(mut self) -> Result<(), Stopped> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().map_or(Ok(()), |t| t.join().unwrap_or(Err(Stopped::Crashed)))
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// The register decoder fuzzed. Any sequence of
        /// register writes by a host (any offset of BAR0, any value, doorbells and credit
        /// commands included) over any DMA contents is served without a panic, and
        /// without a crash when none is injected.
        #[test]
        fn the_register_decoder_survives_any_writes(
            writes in proptest::collection::vec((0..abi::BAR_BYTES / 4, any::<u32>()), 1..48),
            small in proptest::collection::vec((0..abi::BAR_BYTES / 4, 0u32..300), 0..16),
            dma in proptest::collection::vec(any::<u32>(), 0..256),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut emu = Emulator::create(&dir.path().join("fuzz.shm"), 64, 4, Model::Software, vec![]).unwrap();
            for (i, &w) in dma.iter().enumerate() {
                emu.dma.write32(i * 4, w).unwrap();
            }
            // Small values too, so that user counts, shares and addresses are often valid.
            for &(reg, value) in writes.iter().chain(&small) {
                emu.bar.write32(reg * 4, value).unwrap();
                prop_assert!(emu.poll().is_ok());
            }
        }
    }
}
