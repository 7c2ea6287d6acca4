//! One threshold search of the engine: the interval `[lo, hi)` that holds the
//! `target`-th smallest key, narrowed by four each pass from the counts at three probes.
//! The engine has two (Karma's borrowers and donors; max-min uses one).
//!
//! Every step is registered and at most one carry chain deep: the counts are registered
//! as they arrive (a cycle before `update1`), then the narrowing takes three cycles
//! (`update1` compares, `update2` chooses the new ends, the cycle after takes them), and
//! the next probes follow the interval through a free-running pipeline.
//!
//! **Warm start.** A quantum's threshold is most often within a few keys of the last
//! one (Karma's credits move by at most a quantum's slices, and the level among them
//! moves less), so the first pass of a search probes around the last threshold the unit
//! found, `t - WARM_SPAN`, `t` and `t + WARM_SPAN` (each clamped into the interval),
//! instead of the interval's quarters, when `t` lies inside the interval. If the new
//! threshold is within `WARM_SPAN` of `t`, one more pass ends the search (two in all,
//! where the bursty Karma workload of `fairshare hdl cycles` takes four over its key
//! spread of 150 to 340); if not, the pass still narrows the interval, and the search
//! may take one pass more than without it. Any increasing probes inside the interval
//! keep the search exact (its invariant below only needs the counts), so this changes
//! the passes, never the threshold.

use crate::count_lane::PROBES;
use rust_hdl::prelude::*;

/// Cycles from `init` or `update2` to the check that decides on another pass (the
/// engine's registered copy of `more` is valid then), after which the next pass's
/// first row takes the probes: the interval changes two cycles after `init` or
/// `update2`, `more` follows it in two cycles and the probes in five.
pub const PROBE_LATENCY: usize = 6;

/// Cycles the counts take into the unit's registers before `update1` compares them:
/// the engine's reduction ends this many cycles before `update1`.
pub const COUNT_LATENCY: usize = 1;

/// The most passes a search takes: 17 over a 32-bit key range from cold (each pass
/// keeps a quarter), one more after a warm first pass that missed.
pub const MAX_PASSES: usize = 18;

/// How far from the last threshold the first pass probes (see the warm start above):
/// a new threshold within this span is one radix-4 pass from found.
pub const WARM_SPAN: u64 = 4;

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
    /// Start: the interval `[first, beyond)` of the keys that exist, or (one cycle
    /// later, from registered comparisons) no search when the target is 0 or all.
    /// Registered first, beside the interval (the sequencer that sends it sits apart, and
    /// the wire from it was once the critical path: docs/engine.md). `target` is loaded at
    /// least one cycle before; `first`, `beyond` and `total` are read in the cycle of
    /// `init` (and `total` in the one after).
    pub init: Signal<In, Bit>,
    /// The lowest key (no key lies below it).
    pub first: Signal<In, Bits<32>>,
    /// One past the highest key (every key lies below it).
    pub beyond: Signal<In, Bits<32>>,
    /// Narrowing, first cycle: compare `count` (keys below each probe, after a pass)
    /// with the target.
    pub update1: Signal<In, Bit>,
    /// Narrowing, second cycle (the cycle after `update1`): the new interval's ends are
    /// chosen, and taken in the cycle after.
    pub update2: Signal<In, Bit>,
    /// Decide whether another pass is needed (refreshes `active`).
    pub check: Signal<In, Bit>,
    /// Keys below each probe: valid from the cycle before `update1` through the cycle
    /// before `update2`. Registered here first (the reduction that counts sits apart,
    /// and its wire into the 32-bit comparisons was a critical path: docs/engine.md).
    pub count: [Signal<In, Bits<32>>; PROBES],
    /// Probes for the next pass: `lo + k max((hi - lo) / 4, 1)`, clamped to `hi`, or
    /// in a warm first pass the last threshold and `WARM_SPAN` on either side of it
    /// (five cycles after the interval changed).
    pub probe: [Signal<Out, Bits<32>>; PROBES],
    /// The threshold once done: the `target`-th smallest key.
    pub threshold: Signal<Out, Bits<32>>,
    /// Keys to give at the threshold: `target - keys below it` (one cycle after the
    /// interval changed).
    pub rest: Signal<Out, Bits<32>>,
    /// Another pass is needed (two cycles after the interval changed).
    pub more: Signal<Out, Bit>,
    /// The probes of a warm first pass as LOAD counts them, before the interval is
    /// known: `t - WARM_SPAN`, `t` and `t + WARM_SPAN` around the last threshold `t`,
    /// saturated at 0 and `2^32 - 1` (registered; stable while no search ends). Once the
    /// pass starts warm, the keys below them are the keys below its probes: a probe
    /// clamped to an end of the interval moved only where no key lies.
    pub load_probe: [Signal<Out, Bits<32>>; PROBES],
    /// The first pass starts warm (four cycles after `init`, valid until the interval
    /// first narrows): its counts may be LOAD's, made at [`Self::load_probe`].
    pub warm_start: Signal<Out, Bit>,
    target_r: DFF<Bits<32>>,
    /// `count` and `total`, registered beside the comparisons that read them.
    count_r: [DFF<Bits<32>>; PROBES],
    total_r: DFF<Bits<32>>,
    lo: DFF<Bits<32>>,
    hi: DFF<Bits<32>>,
    lo_count: DFF<Bits<32>>,
    active: DFF<Bit>,
    /// `init`, registered, and one cycle later, with the target compared while it was:
    /// 0, all keys.
    init_r: DFF<Bit>,
    init_d: DFF<Bit>,
    /// `first` and `beyond` of the cycle of `init`, registered beside the interval (the
    /// accumulators that find them sit apart).
    first_r: DFF<Bits<32>>,
    beyond_r: DFF<Bits<32>>,
    target_zero: DFF<Bit>,
    target_all: DFF<Bit>,
    below: [DFF<Bit>; PROBES],
    len: DFF<Bits<32>>,
    step: DFF<Bits<32>>,
    step3: DFF<Bits<32>>,
    candidate: [DFF<Bits<32>>; PROBES],
    in_range: [DFF<Bit>; PROBES],
    probe_r: [DFF<Bits<32>>; PROBES],
    more_r: DFF<Bit>,
    rest_r: DFF<Bits<32>>,
    /// The narrowing's choices, made in `update2` from registered comparisons and
    /// taken a cycle later, so that no comparison or priority chain sits in front of
    /// the interval's registers: the new low end (the last probe below the target) and
    /// the keys below it, the new high end (the first probe at or above the target), and
    /// whether each end moves.
    lo_next: DFF<Bits<32>>,
    lo_count_next: DFF<Bits<32>>,
    hi_next: DFF<Bits<32>>,
    move_lo: DFF<Bit>,
    move_hi: DFF<Bit>,
    /// The warm start: the last threshold found (`prev`, valid or not) and the warm
    /// probes in three registered steps (from the interval: the last threshold inside it,
    /// its distances to the ends and the threshold moved by `WARM_SPAN`; whether each
    /// distance exceeds `WARM_SPAN`, so that the clamp's 32 multiplexers take a flag from
    /// a flip-flop; then the probes clamped to the ends), within the cold probes' five.
    /// Only a first pass can start warm: after a warm pass the last threshold is an end
    /// of the interval or outside it (the new interval is one of the four parts its
    /// probes cut, and the middle probe is the last threshold), and after a cold one it
    /// was outside from the start.
    prev: DFF<Bits<32>>,
    prev_valid: DFF<Bit>,
    prev_above_lo: DFF<Bit>,
    prev_below_hi: DFF<Bit>,
    room_lo: DFF<Bits<32>>,
    room_hi: DFF<Bits<32>>,
    lo_far: DFF<Bit>,
    hi_far: DFF<Bit>,
    prev_minus: DFF<Bits<32>>,
    prev_plus: DFF<Bits<32>>,
    warm: DFF<Bit>,
    warm_probe: [DFF<Bits<32>>; PROBES],
    /// `load_probe`, and whether `t` is within `WARM_SPAN` of either end of the 32 bits.
    load_probe_r: [DFF<Bits<32>>; PROBES],
    prev_low: DFF<Bit>,
    prev_high: DFF<Bit>,
    quarter: Signal<Local, Bits<32>>,
    step2: Signal<Local, Bits<32>>,
    max: Constant<Bits<32>>,
    span: Constant<Bits<32>>,
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
            update1: Default::default(),
            update2: Default::default(),
            check: Default::default(),
            count: Default::default(),
            probe: Default::default(),
            threshold: Default::default(),
            rest: Default::default(),
            more: Default::default(),
            target_r: Default::default(),
            count_r: Default::default(),
            total_r: Default::default(),
            lo: Default::default(),
            hi: Default::default(),
            lo_count: Default::default(),
            active: Default::default(),
            init_r: Default::default(),
            first_r: Default::default(),
            beyond_r: Default::default(),
            init_d: Default::default(),
            target_zero: Default::default(),
            target_all: Default::default(),
            below: Default::default(),
            len: Default::default(),
            step: Default::default(),
            step3: Default::default(),
            candidate: Default::default(),
            in_range: Default::default(),
            probe_r: Default::default(),
            more_r: Default::default(),
            rest_r: Default::default(),
            lo_next: Default::default(),
            lo_count_next: Default::default(),
            hi_next: Default::default(),
            move_lo: Default::default(),
            move_hi: Default::default(),
            prev: Default::default(),
            prev_valid: Default::default(),
            prev_above_lo: Default::default(),
            prev_below_hi: Default::default(),
            room_lo: Default::default(),
            room_hi: Default::default(),
            lo_far: Default::default(),
            hi_far: Default::default(),
            prev_minus: Default::default(),
            prev_plus: Default::default(),
            warm: Default::default(),
            warm_probe: Default::default(),
            load_probe: Default::default(),
            warm_start: Default::default(),
            load_probe_r: Default::default(),
            prev_low: Default::default(),
            prev_high: Default::default(),
            quarter: Default::default(),
            step2: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
            span: Constant::new(Bits::<32>::from(WARM_SPAN)),
        }
    }
}

impl Logic for SearchUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            target_r,
            total_r,
            lo,
            hi,
            lo_count,
            active,
            init_r,
            first_r,
            beyond_r,
            init_d,
            target_zero,
            target_all,
            len,
            step,
            step3,
            more_r,
            rest_r,
            lo_next,
            lo_count_next,
            hi_next,
            move_lo,
            move_hi,
            prev,
            prev_valid,
            prev_above_lo,
            prev_below_hi,
            room_lo,
            room_hi,
            lo_far,
            hi_far,
            prev_minus,
            prev_plus,
            warm,
            prev_low,
            prev_high
        );
        for j in 0..PROBES {
            self.below[j].clock.next = self.clock.val();
            self.count_r[j].clock.next = self.clock.val();
            self.count_r[j].d.next = self.count[j].val();
            self.candidate[j].clock.next = self.clock.val();
            self.in_range[j].clock.next = self.clock.val();
            self.probe_r[j].clock.next = self.clock.val();
            self.warm_probe[j].clock.next = self.clock.val();
            self.load_probe_r[j].clock.next = self.clock.val();
            self.load_probe[j].next = self.load_probe_r[j].q.val();
            self.below[j].d.next = self.below[j].q.val();
        }
        // The probes, one stage per cycle: the length, the step, its multiples, the
        // probes and whether they lie inside the interval, the clamp.
        self.len.d.next = self.hi.q.val() - self.lo.q.val();
        self.quarter.next = self.len.q.val() >> 2;
        self.step.d.next = self.quarter.val();
        if self.quarter.val() == 0 {
            self.step.d.next = 1.into();
        }
        self.step2.next = self.step.q.val() << 1;
        self.step3.d.next = self.step.q.val() + self.step2.val();
        self.candidate[0].d.next = self.lo.q.val() + self.step.q.val();
        self.candidate[1].d.next = self.lo.q.val() + self.step2.val();
        self.candidate[2].d.next = self.lo.q.val() + self.step3.q.val();
        self.in_range[0].d.next = self.step.q.val() < self.len.q.val();
        self.in_range[1].d.next = self.step2.val() < self.len.q.val();
        self.in_range[2].d.next = self.step3.q.val() < self.len.q.val();
        // The warm probes, beside them: the last threshold strictly inside the interval
        // and moved by WARM_SPAN, clamped to the interval's ends (so the three increase).
        self.prev_above_lo.d.next = self.lo.q.val() < self.prev.q.val();
        self.prev_below_hi.d.next = self.prev.q.val() < self.hi.q.val();
        self.room_lo.d.next = self.prev.q.val() - self.lo.q.val();
        self.room_hi.d.next = self.hi.q.val() - self.prev.q.val();
        self.prev_minus.d.next = self.prev.q.val() - self.span.val();
        self.prev_plus.d.next = self.prev.q.val() + self.span.val();
        self.warm.d.next = self.prev_valid.q.val() & self.prev_above_lo.q.val() & self.prev_below_hi.q.val();
        self.warm_probe[0].d.next = self.lo.q.val();
        self.lo_far.d.next = self.room_lo.q.val() > self.span.val();
        self.hi_far.d.next = self.room_hi.q.val() > self.span.val();
        if self.lo_far.q.val() {
            self.warm_probe[0].d.next = self.prev_minus.q.val();
        }
        self.warm_probe[1].d.next = self.prev.q.val();
        self.warm_probe[2].d.next = self.hi.q.val();
        if self.hi_far.q.val() {
            self.warm_probe[2].d.next = self.prev_plus.q.val();
        }
        self.warm_start.next = self.warm.q.val();
        // LOAD's probes: the last threshold and WARM_SPAN on either side, saturated.
        self.prev_low.d.next = self.prev.q.val() < self.span.val();
        self.prev_high.d.next = self.prev.q.val() > (self.max.val() - self.span.val());
        self.load_probe_r[0].d.next = self.prev_minus.q.val();
        if self.prev_low.q.val() {
            self.load_probe_r[0].d.next = 0.into();
        }
        self.load_probe_r[1].d.next = self.prev.q.val();
        self.load_probe_r[2].d.next = self.prev_plus.q.val();
        if self.prev_high.q.val() {
            self.load_probe_r[2].d.next = self.max.val();
        }
        for j in 0..PROBES {
            self.probe_r[j].d.next = self.hi.q.val();
            if self.in_range[j].q.val() {
                self.probe_r[j].d.next = self.candidate[j].q.val();
            }
            if self.warm.q.val() {
                self.probe_r[j].d.next = self.warm_probe[j].q.val();
            }
            self.probe[j].next = self.probe_r[j].q.val();
        }
        self.more_r.d.next = self.active.q.val() & (self.len.q.val() > 1);
        self.more.next = self.more_r.q.val();
        self.rest_r.d.next = self.target_r.q.val() - self.lo_count.q.val();
        self.rest.next = self.rest_r.q.val();
        self.threshold.next = self.lo.q.val();
        if self.load_target.val() {
            self.target_r.d.next = self.target.val();
        }
        // The target's two special cases take effect one cycle after the interval is
        // set, from registered comparisons, so that no 32-bit compare sits in front of the
        // interval's multiplexers: `more` follows `active` in two cycles, and the engine
        // reads it (registered once more) six cycles after `init`.
        self.total_r.d.next = self.total.val();
        self.init_r.d.next = self.init.val();
        self.first_r.d.next = self.first.val();
        self.beyond_r.d.next = self.beyond.val();
        self.init_d.d.next = self.init_r.q.val();
        self.target_zero.d.next = self.target_r.q.val() == 0;
        self.target_all.d.next = self.target_r.q.val() == self.total_r.q.val();
        if self.init_r.q.val() {
            self.lo.d.next = self.first_r.q.val();
            self.hi.d.next = self.beyond_r.q.val();
            self.lo_count.d.next = 0.into();
            self.active.d.next = true;
        }
        if self.init_d.q.val() {
            if self.target_zero.q.val() {
                self.active.d.next = false;
            } else if self.target_all.q.val() {
                self.lo.d.next = self.max.val();
                self.lo_count.d.next = self.total_r.q.val();
                self.active.d.next = false;
            }
        }
        // Counts grow with the probe: the last probe below the target is the new low
        // end, the first at or above it the new high end.
        if self.update1.val() {
            for j in 0..PROBES {
                self.below[j].d.next = self.count_r[j].q.val() < self.target_r.q.val();
            }
        }
        self.lo_next.d.next = self.probe_r[0].q.val();
        self.lo_count_next.d.next = self.count_r[0].q.val();
        for j in 1..PROBES {
            if self.below[j].q.val() {
                self.lo_next.d.next = self.probe_r[j].q.val();
                self.lo_count_next.d.next = self.count_r[j].q.val();
            }
        }
        self.hi_next.d.next = self.probe_r[2].q.val();
        if !self.below[1].q.val() {
            self.hi_next.d.next = self.probe_r[1].q.val();
        }
        if !self.below[0].q.val() {
            self.hi_next.d.next = self.probe_r[0].q.val();
        }
        self.move_lo.d.next = self.update2.val()
            & self.active.q.val()
            & (self.below[0].q.val() | self.below[1].q.val() | self.below[2].q.val());
        self.move_hi.d.next = self.update2.val()
            & self.active.q.val()
            & !(self.below[0].q.val() & self.below[1].q.val() & self.below[2].q.val());
        if self.move_lo.q.val() {
            self.lo.d.next = self.lo_next.q.val();
            self.lo_count.d.next = self.lo_count_next.q.val();
        }
        if self.move_hi.q.val() {
            self.hi.d.next = self.hi_next.q.val();
        }
        if self.check.val() {
            self.active.d.next = self.more_r.q.val();
            // A search that ends here found its threshold (the special cases end before,
            // with `active` clear): the next quantum's first pass probes around it.
            if self.active.q.val() & !self.more_r.q.val() {
                self.prev.d.next = self.lo.q.val();
                self.prev_valid.d.next = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn settle(s: &mut SearchUnit) {
        assert!(simulate(s, 1000));
    }

    fn tick(s: &mut SearchUnit) {
        s.clock.next = true.into();
        settle(s);
        s.clock.next = false.into();
        settle(s);
    }

    /// Runs one search as the engine drives it (target loaded, `init`, then per pass:
    /// `check` `PROBE_LATENCY` cycles after the interval's last change, the next cycle
    /// the probes counted, `update1`, `update2` with the counts held). Returns the
    /// threshold, the rest, the passes and whether the first started warm (then the
    /// keys below LOAD's probes must be the keys below the pass's probes: checked here;
    /// LOAD's probes are read at the first check, as they were during LOAD: they follow
    /// the last threshold, which only the end of a search changes).
    fn run(s: &mut SearchUnit, keys: &[u64], target: u64) -> (u64, u64, usize, bool) {
        let below = |p: u64| keys.iter().filter(|&&k| k < p).count() as u64;
        let mut warm_first = false;
        let (first, beyond) = match (keys.iter().min(), keys.iter().max()) {
            (Some(&lo), Some(&hi)) => (lo, hi + 1),
            _ => (0, 1),
        };
        s.target.next = target.into();
        // The total is read in the cycle of `init` and the one after, the interval's ends
        // in the cycle of `init` (the engine holds them longer): anything else around them.
        s.total.next = 0xdead_beef_u64.into();
        s.first.next = 0xdead_beef_u64.into();
        s.beyond.next = 0xdead_beef_u64.into();
        s.load_target.next = true;
        settle(s);
        tick(s);
        s.load_target.next = false;
        s.init.next = true;
        s.total.next = (keys.len() as u64).into();
        s.first.next = first.into();
        s.beyond.next = beyond.into();
        settle(s);
        tick(s);
        s.init.next = false;
        s.first.next = 0xdead_beef_u64.into();
        s.beyond.next = 0xdead_beef_u64.into();
        let mut passes = 0;
        loop {
            for k in 1..PROBE_LATENCY {
                if k == 2 {
                    s.total.next = 0xdead_beef_u64.into();
                }
                tick(s);
            }
            s.check.next = true;
            settle(s);
            let more = s.more.val();
            tick(s);
            s.check.next = false;
            if !more {
                break;
            }
            passes += 1;
            assert!(passes <= 40, "the search does not end");
            settle(s);
            if passes == 1 && s.warm_start.val() {
                warm_first = true;
                for j in 0..PROBES {
                    let (l, probe) = (s.load_probe[j].val().to_u64(), s.probe[j].val().to_u64());
                    assert_eq!(below(l), below(probe), "LOAD's probe {j} ({l}) against the warm pass's ({probe})");
                }
            }
            for j in 0..PROBES {
                s.count[j].next = below(s.probe[j].val().to_u64()).into();
            }
            // The counts arrive a cycle before `update1`, and hold until `update2`.
            settle(s);
            tick(s);
            s.update1.next = true;
            settle(s);
            tick(s);
            s.update1.next = false;
            // Past their window the counts are anything.
            for j in 0..PROBES {
                s.count[j].next = (0xdead_0000 + j as u64).into();
            }
            s.update2.next = true;
            settle(s);
            tick(s);
            s.update2.next = false;
        }
        settle(s);
        (s.threshold.val().to_u64(), s.rest.val().to_u64(), passes, warm_first)
    }

    /// The obvious model: the keys sorted; the `target`-th smallest (from 1) and how
    /// many of the target are still to give at it (the keys at the threshold that are
    /// taken); no search for a target of 0 (the lowest key, none to give) or of every
    /// key (past every key).
    fn model(keys: &[u64], target: u64) -> (u64, u64) {
        let mut sorted = keys.to_vec();
        sorted.sort_unstable();
        let first = sorted.first().copied().unwrap_or(0);
        if target == 0 {
            return (first, 0);
        }
        if target == keys.len() as u64 {
            return (0xFFFF_FFFF, 0);
        }
        let t = sorted[target as usize - 1];
        let below = sorted.iter().filter(|&&k| k < t).count() as u64;
        (t, target - below)
    }

    /// The most passes a radix-4 search of an interval of `len` keys takes: each keeps
    /// one of its four parts (three of `max(len / 4, 1)`, the last what is left) until
    /// one key is left.
    fn worst_passes(len: u64, memo: &mut std::collections::HashMap<u64, usize>) -> usize {
        if len <= 1 {
            return 0;
        }
        if let Some(&p) = memo.get(&len) {
            return p;
        }
        let step = (len / 4).max(1);
        let last = len.saturating_sub(3 * step).max(1);
        let p = 1 + worst_passes(step, memo).max(worst_passes(last, memo));
        memo.insert(len, p);
        p
    }

    /// The last threshold a search found (`None` before any, and unchanged by the
    /// special cases, target 0 or all), as the warm start keeps it.
    fn last_found(prev: Option<u64>, keys: &[u64], target: u64) -> Option<u64> {
        if target == 0 || target == keys.len() as u64 {
            prev
        } else {
            Some(model(keys, target).0)
        }
    }

    /// Whether a search of `keys` starts warm after `prev`: the last threshold lies
    /// strictly inside the interval `[first, beyond)`.
    fn warm(prev: Option<u64>, keys: &[u64]) -> Option<u64> {
        let (first, beyond) = (*keys.iter().min()?, *keys.iter().max()? + 1);
        prev.filter(|&t| first < t && t < beyond)
    }

    /// The unit against the model on random multisets of keys (narrow and wide ranges,
    /// many duplicates, keys up to 2^31), every target from none to all; the passes
    /// are those of a radix-4 search, one more where the first pass started warm
    /// around the last threshold and missed.
    #[test]
    fn selects_the_target_th_key_as_sorting_does() {
        let mut rng = ChaCha8Rng::seed_from_u64(37);
        let mut s = SearchUnit::default();
        s.connect_all();
        let mut searched = 0;
        let mut prev = None;
        for round in 0..150 {
            let n = rng.gen_range(1..40);
            let span: u64 = match round % 3 {
                0 => rng.gen_range(1..8),
                1 => rng.gen_range(8..100_000),
                _ => 1 << 31,
            };
            let base = rng.gen_range(0..=(1u64 << 31) - span);
            let keys: Vec<u64> = (0..n).map(|_| base + rng.gen_range(0..span)).collect();
            for target in 0..=n as u64 {
                let (threshold, rest, passes, _) = run(&mut s, &keys, target);
                let ctx = format!("keys {keys:?}, target {target}");
                assert_eq!((threshold, rest), model(&keys, target), "{ctx}");
                let range = keys.iter().max().unwrap_or(&0) - keys.iter().min().unwrap_or(&0) + 1;
                let bound = worst_passes(range, &mut std::collections::HashMap::new());
                let bound = bound + usize::from(warm(prev, &keys).is_some());
                assert!(passes <= bound, "{passes} passes for a range of {range}: {ctx}");
                searched += usize::from(passes > 0);
                prev = last_found(prev, &keys, target);
            }
        }
        assert!(searched > 2000, "only {searched} searches needed a pass");
    }

    /// The warm start: searches one after the other over keys that drift (a wide spread,
    /// as Karma's credits have, the target and the keys moving a little each time), each
    /// exact; where the new threshold lies within `WARM_SPAN` of the last (and the last
    /// inside the interval), the search takes at most two passes, where a cold search's
    /// worst case over these ranges is four or more; elsewhere at most one more than
    /// that worst case. A first pass starts warm exactly when the last threshold lies
    /// inside the interval, and then the keys below LOAD's probes are the pass's counts.
    #[test]
    fn a_threshold_near_the_last_one_takes_two_passes() {
        let (hits, misses, warm_firsts) = drifting(43, 1_000..1_300);
        assert!(hits > 300 && misses > 20, "{hits} warm hits over ranges of four cold passes, {misses} others");
        assert!(warm_firsts > 300, "{warm_firsts} first passes started warm");
    }

    /// The same at both ends of the keys' 32 bits, where LOAD's probes saturate (keys
    /// packed within 12 of 0 and of `2^32 - 2`, the highest a run can hold, so that most
    /// thresholds lie within `WARM_SPAN` of an end).
    #[test]
    fn loads_probes_saturate_at_both_ends_of_the_keys() {
        let top = 0xFFFF_FFFE_u64;
        for (seed, range) in [(44, 0..12), (45, top - 11..top + 1)] {
            let (_, _, warm_firsts) = drifting(seed, range.clone());
            assert!(warm_firsts > 300, "{range:?}: {warm_firsts} first passes started warm");
        }
    }

    /// Searches over 60 keys drawn from `range` that drift a little each round, 600
    /// rounds: each exact, the passes bounded as `a_threshold_near_the_last_one_takes_two_passes`
    /// says; returns the warm hits (over ranges that take four cold passes or more), the
    /// other searches, and the first passes that started warm.
    fn drifting(seed: u64, range: std::ops::Range<u64>) -> (usize, usize, usize) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut s = SearchUnit::default();
        s.connect_all();
        let (mut prev, mut hits, mut misses, mut warm_firsts) = (None, 0, 0, 0);
        let (low, high) = (range.start, range.end - 1);
        let mut keys: Vec<u64> = (0..60).map(|_| rng.gen_range(range.clone())).collect();
        let mut target = 30;
        for round in 0..600 {
            // Every key and the target move a little; now and then a jump.
            let jump = rng.gen_bool(0.1);
            for k in keys.iter_mut() {
                *k = (*k + rng.gen_range(0..3)).saturating_sub(1).clamp(low, high);
            }
            target = if jump { rng.gen_range(1..60) } else { (target + rng.gen_range(0..3)).clamp(2, 59) - 1 };
            let (threshold, rest, passes, warm_first) = run(&mut s, &keys, target);
            let ctx = format!("round {round}: keys {keys:?}, target {target}");
            assert_eq!((threshold, rest), model(&keys, target), "{ctx}");
            if passes > 0 {
                assert_eq!(warm_first, warm(prev, &keys).is_some(), "the first pass starts warm: {ctx}");
                warm_firsts += usize::from(warm_first);
            }
            let range = keys.iter().max().unwrap() - keys.iter().min().unwrap() + 1;
            let cold = worst_passes(range, &mut std::collections::HashMap::new());
            match warm(prev, &keys) {
                Some(t) if threshold + WARM_SPAN >= t && threshold < t + WARM_SPAN => {
                    assert!(passes <= 2, "{passes} passes, last threshold {t}: {ctx}");
                    hits += usize::from(cold >= 4);
                }
                w => {
                    assert!(passes <= cold + usize::from(w.is_some()), "{passes} passes: {ctx}");
                    misses += 1;
                }
            }
            prev = last_found(prev, &keys, target);
        }
        (hits, misses, warm_firsts)
    }
}
