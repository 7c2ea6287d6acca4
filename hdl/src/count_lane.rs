//! One lane of the engine's counting datapath: for the user streamed through it this
//! cycle, how many of its keys lie below each probe, added to the running sums that
//! come from the previous lane (a saturating chain across the lanes).

use rust_hdl::prelude::*;

/// Probes per search and per pass: a radix-4 search, so each pass cuts the interval
/// by four.
pub const PROBES: usize = 3;

/// Keys of one user: `start, start + 1, ..., start + run - 1` (unit step). A probe at
/// `t` counts the keys `< t`: `clamp(t - start, 0, run)`.
#[derive(LogicBlock)]
pub struct CountLane {
    /// First key.
    pub start: Signal<In, Bits<32>>,
    /// Number of keys (0: the user is not in this search).
    pub run: Signal<In, Bits<32>>,
    /// Probe values.
    pub probe: [Signal<In, Bits<32>>; PROBES],
    /// Sums from the previous lane.
    pub sum_in: [Signal<In, Bits<32>>; PROBES],
    /// Sums including this lane (saturating at 2^32 - 1).
    pub sum_out: [Signal<Out, Bits<32>>; PROBES],
    /// This lane's own count per probe.
    pub count: [Signal<Out, Bits<32>>; PROBES],
    max: Constant<Bits<32>>,
}

impl CountLane {
    /// A lane (all-ones constant for saturation).
    pub fn new() -> Self {
        CountLane {
            start: Default::default(),
            run: Default::default(),
            probe: Default::default(),
            sum_in: Default::default(),
            sum_out: Default::default(),
            count: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
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
        for j in 0..PROBES {
            self.count[j].next = 0.into();
            if self.probe[j].val() > self.start.val() {
                if self.probe[j].val() - self.start.val() < self.run.val() {
                    self.count[j].next = self.probe[j].val() - self.start.val();
                } else {
                    self.count[j].next = self.run.val();
                }
            }
            if self.sum_in[j].val() > self.max.val() - self.count[j].val() {
                self.sum_out[j].next = self.max.val();
            } else {
                self.sum_out[j].next = self.sum_in[j].val() + self.count[j].val();
            }
        }
    }
}
