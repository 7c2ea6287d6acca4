//! The engine simulated cycle by cycle: a driver for the RustHDL model that steps the
//! clock and talks to the block through its own handshakes (demand beats, results with
//! back-pressure, the credit port), the way an FPGA shell would. It is production code,
//! not only a test aid: the `rtl-sim` backend, the emulator's RTL model and `fairshare
//! hdl cycles` run quanta through it (as an `Accelerator`, see [`crate::catalog`]).

use crate::engine::Engine;
use fairshare_abi::QuantumOutput;
use rust_hdl::core::vcd_probe::{write_vcd_change, write_vcd_dump, write_vcd_header, VCDProbe};
use rust_hdl::prelude::*;
use std::sync::{Arc, Mutex};

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

/// The nominal clock period of a waveform, in picoseconds (the VCD's time unit):
/// 10 ns, so that cycle `k`'s rising edge is at `k x 10 ns`. Only the cycle count is
/// simulated; the period is a label.
pub const TRACE_PERIOD_PS: u64 = 10_000;

/// Where RustHDL's VCD writer puts its text: a buffer that [`EngineSim::take_trace`]
/// empties, so that the writer never meets an I/O error (it would panic on one) and
/// the caller writes the text wherever it wants, with errors it can report.
#[derive(Clone, Default)]
struct TraceBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for TraceBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A waveform being recorded: every signal of the engine, one sample after each
/// clock edge and after each change of the inputs.
struct Trace {
    /// Taken out and put back around each RustHDL call (they consume it).
    probe: Option<VCDProbe<TraceBuffer>>,
    buffer: TraceBuffer,
    /// Rising edges so far.
    edges: u64,
    /// The time of the next input sample (after the last falling edge).
    input_time: u64,
    /// The header's top scope is still RustHDL's `uut`.
    header_pending: bool,
}

/// Drives an [`Engine`] with `P` lanes and `2^A` rows.
pub struct EngineSim<const P: usize, const A: usize> {
    uut: Box<Engine<P, A>>,
    trace: Option<Trace>,
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
        let mut uut = crate::build::boxed(Engine::<P, A>::new);
        uut.connect_all();
        let mut sim = EngineSim { uut, trace: None, stall_seed: 0 };
        sim.settle();
        sim
    }

    /// Starts recording a waveform (VCD) of every signal of the engine, named as in
    /// its Verilog (`in_valid`, `in_data$0`, ...; the top scope is `top`), from the
    /// current state on: one sample at each clock edge ([`TRACE_PERIOD_PS`] apart)
    /// and one after each change of the inputs between edges. The text accumulates
    /// until [`EngineSim::take_trace`] takes it.
    pub fn start_trace(&mut self) {
        let buffer = TraceBuffer::default();
        let probe = write_vcd_header(buffer.clone(), &*self.uut);
        let probe = write_vcd_dump(probe, &*self.uut);
        self.trace = Some(Trace { probe: Some(probe), buffer, edges: 0, input_time: 0, header_pending: true });
    }

    /// The waveform text recorded since the last call (empty when not recording). The
    /// concatenation of all calls is one VCD file.
    pub fn take_trace(&mut self) -> Vec<u8> {
        let Some(trace) = &mut self.trace else { return Vec::new() };
        let text = std::mem::take(&mut *trace.buffer.0.lock().unwrap_or_else(|p| p.into_inner()));
        if !std::mem::take(&mut trace.header_pending) {
            return text;
        }
        // The header (ASCII, up to `$enddefinitions`): RustHDL names the top scope `uut`,
        // the Verilog names the module `top`. RustHDL declares the FSM states (written as
        // strings) as wires of width 0; they become `string` variables, which GTKWave
        // shows as text.
        let end = b"$enddefinitions";
        let split = text.windows(end.len()).position(|w| w == end).unwrap_or(text.len());
        let header = String::from_utf8_lossy(&text[..split])
            .replacen("$scope module uut $end", "$scope module top $end", 1)
            .replace("$var wire 0 ", "$var string 1 ");
        [header.as_bytes(), &text[split..]].concat()
    }

    /// Samples every signal into the waveform at `time` (ps), if recording.
    fn sample(&mut self, time: u64) {
        if let Some(trace) = &mut self.trace {
            if let Some(mut probe) = trace.probe.take() {
                // Writes to a TraceBuffer cannot fail.
                let _ = probe.timestamp(time);
                trace.probe = Some(write_vcd_change(probe, &*self.uut));
            }
        }
    }

    fn settle(&mut self) {
        assert!(simulate(&mut *self.uut, 10_000), "engine logic did not settle");
    }

    /// Settles a change of the inputs made between clock edges, and samples it.
    fn settle_inputs(&mut self) {
        self.settle();
        if let Some(trace) = &mut self.trace {
            let time = trace.input_time;
            trace.input_time += 1;
            self.sample(time);
        }
    }

    /// One clock cycle: inputs set by the caller are settled first, as a testbench
    /// sets them between edges, then sampled at the rising edge. (RustHDL moves a
    /// change one level of the hierarchy per delta step, the clock included: an
    /// input changed together with the clock would race it to the flip-flops.)
    fn tick(&mut self) {
        self.settle_inputs();
        let edge = self.trace.as_mut().map_or(0, |t| {
            t.edges += 1;
            t.edges * TRACE_PERIOD_PS
        });
        self.uut.clock.next = true.into();
        self.settle();
        self.sample(edge);
        self.uut.clock.next = false.into();
        self.settle();
        self.sample(edge + TRACE_PERIOD_PS / 2);
        if let Some(t) = &mut self.trace {
            t.input_time = edge + 3 * TRACE_PERIOD_PS / 4;
        }
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
        self.settle_inputs();
        // The write lands at the end of the next cycle; a read of its row given then
        // would be undefined.
        for _ in 1..crate::bank::WRITE_LATENCY {
            self.tick();
        }
    }

    /// Reads the balances of row `row` through the credit port.
    pub fn read_row(&mut self, row: usize) -> Vec<u32> {
        self.uut.credit_row.next = (row as u64).into();
        for _ in 0..crate::bank::READ_LATENCY {
            self.tick();
        }
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
        self.settle_inputs();
        let (mut row, mut beats) = (0, 0);
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
            self.settle_inputs();
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
                    beats += 1;
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
        self.settle_inputs();
        assert!(self.uut.done.val(), "engine did not finish");
        let code = self.uut.error.val().to_u64() as u32;
        if code != 0 {
            return Err(EngineError(code));
        }
        assert_eq!(alloc.len(), n, "engine emitted {} results for {n} users", alloc.len());
        assert_eq!(beats, Self::rows(n), "engine emitted {beats} result rows for {n} users");
        Ok(QuantumOutput { alloc, credits, cycles: self.uut.cycles.val().to_u64() as u32, device_ns: 0 })
    }
}
