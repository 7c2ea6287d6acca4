//! One probe's counting datapath in a lane: for the user streamed through it, how many
//! of its keys lie below the probe, in two registered stages (one carry chain each), so
//! that the engine's clock is not bounded by it.

use rust_hdl::prelude::*;

/// Probes per search and per pass: a radix-4 search, so each pass cuts the interval
/// by four.
pub const PROBES: usize = 3;

/// Keys of one user: `start, start + 1, ..., start + run - 1` (unit step). A probe at
/// `t` counts the keys `< t`: `clamp(t - start, 0, run)`.
///
/// Stage 1 (`probe`, `start`, `run` in cycle `c`): `probe - start` and `probe < start`,
/// and `run` registered (each unit its own copy, beside its clamp; hdl/synth.sh keeps
/// the copies). Stage 2: the clamp. `count` and `at` hold the result in cycle `c + 2`.
#[derive(LogicBlock)]
pub struct CountLane {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Probe value (cycle `c`).
    pub probe: Signal<In, Bits<32>>,
    /// First key (cycle `c`).
    pub start: Signal<In, Bits<32>>,
    /// Number of keys (cycle `c`).
    pub run: Signal<In, Bits<32>>,
    /// Keys below the probe (cycle `c + 2`).
    pub count: Signal<Out, Bits<32>>,
    /// The probe is one of the keys (cycle `c + 2`).
    pub at: Signal<Out, Bit>,
    diff: DFF<Bits<32>>,
    below: DFF<Bit>,
    run_r: DFF<Bits<32>>,
    count_r: DFF<Bits<32>>,
    at_r: DFF<Bit>,
}

impl CountLane {
    /// A lane in its reset state.
    pub fn new() -> Self {
        CountLane {
            clock: Default::default(),
            probe: Default::default(),
            start: Default::default(),
            run: Default::default(),
            count: Default::default(),
            at: Default::default(),
            diff: Default::default(),
            below: Default::default(),
            run_r: Default::default(),
            count_r: Default::default(),
            at_r: Default::default(),
        }
    }
}

impl Default for CountLane {
    fn default() -> Self {
        Self::new()
    }
}

impl Logic for CountLane {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, diff, below, run_r, count_r, at_r);
        self.diff.d.next = self.probe.val() - self.start.val();
        self.below.d.next = self.probe.val() < self.start.val();
        self.run_r.d.next = self.run.val();
        self.count_r.d.next = 0.into();
        self.at_r.d.next = false;
        if !self.below.q.val() {
            if self.diff.q.val() < self.run_r.q.val() {
                self.count_r.d.next = self.diff.q.val();
                self.at_r.d.next = true;
            } else {
                self.count_r.d.next = self.run_r.q.val();
            }
        }
        self.count.next = self.count_r.q.val();
        self.at.next = self.at_r.q.val();
    }
}
