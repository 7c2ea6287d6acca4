//! One threshold search of the engine: the interval `[lo, hi)` that holds the
//! `target`-th smallest key, narrowed by four each pass from the counts at three probes.
//! The engine has two (Karma's borrowers and donors; max-min uses one).

use crate::count_lane::PROBES;
use rust_hdl::prelude::*;

/// A radix-4 threshold search. Invariant while active: fewer than `target` keys lie
/// below `lo`, at least `target` below `hi`.
#[derive(LogicBlock)]
pub struct SearchUnit {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Store `target` (keys to select).
    pub load_target: Signal<In, Bit>,
    /// Keys to select.
    pub target: Signal<In, Bits<32>>,
    /// Keys in all runs (held by the engine from LOAD until the search starts).
    pub total: Signal<In, Bits<32>>,
    /// Start: the interval `[first, beyond)` of the keys that exist, or no search when
    /// the target is 0 or all.
    pub init: Signal<In, Bit>,
    /// The lowest key (no key lies below it).
    pub first: Signal<In, Bits<32>>,
    /// One past the highest key (every key lies below it).
    pub beyond: Signal<In, Bits<32>>,
    /// Narrow the interval from `count` (keys below each probe, after a pass).
    pub update: Signal<In, Bit>,
    /// Decide whether another pass is needed (refreshes `active`).
    pub check: Signal<In, Bit>,
    /// Keys below each probe.
    pub count: [Signal<In, Bits<32>>; PROBES],
    /// Probes for the next pass: `lo + k max((hi - lo) / 4, 1)`, clamped to `hi`.
    pub probe: [Signal<Out, Bits<32>>; PROBES],
    /// The threshold once done: the `target`-th smallest key.
    pub threshold: Signal<Out, Bits<32>>,
    /// Keys to give at the threshold: `target - keys below it`.
    pub rest: Signal<Out, Bits<32>>,
    /// Another pass is needed.
    pub more: Signal<Out, Bit>,
    target_r: DFF<Bits<32>>,
    lo: DFF<Bits<32>>,
    hi: DFF<Bits<32>>,
    lo_count: DFF<Bits<32>>,
    active: DFF<Bit>,
    len: Signal<Local, Bits<32>>,
    step: Signal<Local, Bits<32>>,
    max: Constant<Bits<32>>,
}

impl Default for SearchUnit {
    fn default() -> Self {
        SearchUnit {
            clock: Default::default(),
            load_target: Default::default(),
            target: Default::default(),
            total: Default::default(),
            init: Default::default(),
            first: Default::default(),
            beyond: Default::default(),
            update: Default::default(),
            check: Default::default(),
            count: Default::default(),
            probe: Default::default(),
            threshold: Default::default(),
            rest: Default::default(),
            more: Default::default(),
            target_r: Default::default(),
            lo: Default::default(),
            hi: Default::default(),
            lo_count: Default::default(),
            active: Default::default(),
            len: Default::default(),
            step: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
        }
    }
}

impl Logic for SearchUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, target_r, lo, hi, lo_count, active);
        self.len.next = self.hi.q.val() - self.lo.q.val();
        self.step.next = self.len.val() >> 2;
        if self.step.val() == 0 {
            self.step.next = 1.into();
        }
        self.probe[0].next = self.hi.q.val();
        self.probe[1].next = self.hi.q.val();
        self.probe[2].next = self.hi.q.val();
        if self.step.val() < self.len.val() {
            self.probe[0].next = self.lo.q.val() + self.step.val();
        }
        if self.step.val() + self.step.val() < self.len.val() {
            self.probe[1].next = self.lo.q.val() + self.step.val() + self.step.val();
        }
        if self.step.val() + self.step.val() + self.step.val() < self.len.val() {
            self.probe[2].next = self.lo.q.val() + self.step.val() + self.step.val() + self.step.val();
        }
        self.threshold.next = self.lo.q.val();
        self.rest.next = self.target_r.q.val() - self.lo_count.q.val();
        self.more.next = self.active.q.val() & (self.len.val() > 1);
        if self.load_target.val() {
            self.target_r.d.next = self.target.val();
        }
        if self.init.val() {
            self.lo.d.next = self.first.val();
            self.hi.d.next = self.beyond.val();
            self.lo_count.d.next = 0.into();
            self.active.d.next = true;
            if self.target_r.q.val() == 0 {
                self.active.d.next = false;
            } else if self.target_r.q.val() == self.total.val() {
                self.lo.d.next = self.max.val();
                self.lo_count.d.next = self.total.val();
                self.active.d.next = false;
            }
        }
        // Counts grow with the probe: the last probe below the target is the new low
        // end, the first at or above it the new high end.
        if self.update.val() & self.active.q.val() {
            for j in 0..PROBES {
                if self.count[j].val() < self.target_r.q.val() {
                    self.lo.d.next = self.probe[j].val();
                    self.lo_count.d.next = self.count[j].val();
                }
            }
            if self.count[2].val() >= self.target_r.q.val() {
                self.hi.d.next = self.probe[2].val();
            }
            if self.count[1].val() >= self.target_r.q.val() {
                self.hi.d.next = self.probe[1].val();
            }
            if self.count[0].val() >= self.target_r.q.val() {
                self.hi.d.next = self.probe[0].val();
            }
        }
        if self.check.val() {
            self.active.d.next = self.active.q.val() & (self.len.val() > 1);
        }
    }
}
