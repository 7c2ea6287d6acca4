//! The engine simulated cycle by cycle: a driver for the RustHDL model that steps the
//! clock and talks to the block through its own handshakes (demand beats, results with
//! back-pressure, the credit port), the way an FPGA shell would. It is production code,
//! not only a test aid: the `rtl-sim` backend, the emulator's RTL model and `fairshare
//! hdl cycles` run quanta through it (as an `Accelerator`, see [`crate::catalog`]).

use crate::engine::Engine;
use fairshare_abi::QuantumOutput;
use rust_hdl::prelude::*;

/// The engine refused the quantum with this status code (see
/// [`crate::engine::error_code`]); its credits are unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineError(pub u32);

/// The random stalls of the testbenches (RustHDL and C++ alike): a xorshift64 sequence
/// that, for each valid or ready a testbench drives, says whether it is asserted this
/// cycle (probability 3/4). Seed 0: always asserted.
pub struct Stalls(pub u64);

impl Stalls {
    /// Whether the next valid or ready is asserted.
    pub fn active(&mut self) -> bool {
        if self.0 == 0 {
            return true;
        }
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 & 3 != 0
    }
}

/// Drives an [`Engine`] with `P` lanes and `2^A` rows.
pub struct EngineSim<const P: usize, const A: usize> {
    uut: Box<Engine<P, A>>,
    /// 0: the streams never stall. Otherwise the seed of a xorshift64 sequence that,
    /// every cycle, drops `in_valid` and `out_ready` each with probability 1/4 (the C++
    /// Verilator testbench draws the same sequence). While `out_ready` is low the result
    /// beat must hold still; the driver asserts that it does.
    pub stall_seed: u64,
}

impl<const P: usize, const A: usize> Default for EngineSim<P, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const P: usize, const A: usize> EngineSim<P, A> {
    /// A fresh engine (credits 0).
    pub fn new() -> Self {
        let mut uut = Box::new(Engine::<P, A>::new());
        uut.connect_all();
        let mut sim = EngineSim { uut, stall_seed: 0 };
        sim.settle();
        sim
    }

    fn settle(&mut self) {
        assert!(simulate(&mut *self.uut, 10_000), "engine logic did not settle");
    }

    /// One clock cycle: inputs set by the caller are sampled at the rising edge.
    fn tick(&mut self) {
        self.uut.clock.next = true.into();
        self.settle();
        self.uut.clock.next = false.into();
        self.settle();
    }

    /// Rows needed for `n` users.
    fn rows(n: usize) -> usize {
        n.div_ceil(P)
    }

    /// Writes the credits of users `0 .. credits.len()` through the credit port.
    pub fn write_credits(&mut self, credits: &[u32]) {
        for (row, words) in credits.chunks(P).enumerate() {
            self.write_row(row, words);
        }
    }

    /// Writes the balances of row `row` (users `row * P ..`) through the credit port.
    pub fn write_row(&mut self, row: usize, words: &[u32]) {
        self.uut.credit_row.next = (row as u64).into();
        for lane in 0..P {
            self.uut.credit_wdata[lane].next = (words.get(lane).copied().unwrap_or(0) as u64).into();
        }
        self.uut.credit_write.next = true;
        self.tick();
        self.uut.credit_write.next = false;
        self.settle();
    }

    /// Reads the balances of row `row` through the credit port.
    pub fn read_row(&mut self, row: usize) -> Vec<u32> {
        self.uut.credit_row.next = (row as u64).into();
        self.tick();
        self.uut.credit_rdata.iter().map(|s| s.val().to_u64() as u32).collect()
    }

    /// Reads the credits of users `0 .. n` through the credit port.
    pub fn read_credits(&mut self, n: usize) -> Vec<u32> {
        let mut out: Vec<u32> = (0..Self::rows(n)).flat_map(|row| self.read_row(row)).collect();
        out.truncate(n);
        out
    }

    /// Runs one quantum: `mode` (0 Karma, 1 max-min, 2 strict), equal fair share
    /// `fair` and guaranteed share `guaranteed`, one demand per user.
    pub fn quantum(
        &mut self,
        mode: u8,
        fair: u32,
        guaranteed: u32,
        demand: &[u32],
    ) -> Result<QuantumOutput, EngineError> {
        let n = demand.len();
        let u = &mut self.uut;
        u.mode.next = (mode as u64).into();
        u.n_users.next = (n as u64).into();
        u.fair.next = (fair as u64).into();
        u.guaranteed.next = (guaranteed as u64).into();
        u.start.next = true;
        u.in_valid.next = false;
        u.out_ready.next = false;
        self.tick();
        self.uut.start.next = false;
        self.settle();
        let mut row = 0;
        let mut alloc = Vec::with_capacity(n);
        let mut credits = Vec::with_capacity(n);
        let mut stalls = Stalls(self.stall_seed);
        let mut draw = move || stalls.active();
        let mut held: Option<(Vec<u64>, Vec<u64>)> = None;
        for _ in 0..100_000_000u64 {
            if !self.uut.busy.val() {
                break;
            }
            let (in_active, out_active) = (draw(), draw());
            // Demand beats, in order.
            let offer = row < Self::rows(n) && in_active;
            self.uut.in_valid.next = offer;
            for lane in 0..P {
                let d = if offer { demand.get(row * P + lane).copied().unwrap_or(0) } else { 0 };
                self.uut.in_data[lane].next = (d as u64).into();
            }
            self.uut.out_ready.next = out_active;
            self.settle();
            let accepted_demand = offer && self.uut.in_ready.val();
            if self.uut.out_valid.val() {
                let beat: (Vec<u64>, Vec<u64>) = (
                    self.uut.out_alloc.iter().map(|s| s.val().to_u64()).collect(),
                    self.uut.out_credit.iter().map(|s| s.val().to_u64()).collect(),
                );
                if let Some(h) = held.take() {
                    assert_eq!(h, beat, "a result beat changed while out_ready was low");
                }
                if out_active {
                    for lane in 0..P {
                        if alloc.len() < n {
                            alloc.push(beat.0[lane] as u32);
                            credits.push(beat.1[lane] as u32);
                        }
                    }
                } else {
                    held = Some(beat);
                }
            }
            if accepted_demand {
                row += 1;
            }
            self.tick();
        }
        self.uut.in_valid.next = false;
        self.uut.out_ready.next = false;
        self.settle();
        assert!(self.uut.done.val(), "engine did not finish");
        let code = self.uut.error.val().to_u64() as u32;
        if code != 0 {
            return Err(EngineError(code));
        }
        assert_eq!(alloc.len(), n, "engine emitted {} results for {n} users", alloc.len());
        Ok(QuantumOutput { alloc, credits, cycles: self.uut.cycles.val().to_u64() as u32, device_ns: 0 })
    }
}
