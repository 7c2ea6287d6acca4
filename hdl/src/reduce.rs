//! The accumulators of the engine's sums, minima and maxima, and the shift chain that
//! reduces them across lanes.
//!
//! Each lane accumulates its own users (one row per cycle, one carry chain per
//! cycle). After a pass the lanes' accumulators shift towards lane 0, one lane per
//! cycle, and the engine's accumulator of the same kind adds up what leaves lane 0:
//! `P` cycles per pass (and [`LATENCY`] more for the engine's accumulator) instead of a
//! chain of `P` adders in every cycle. The last lane
//! shifts in zero, so every accumulator ends a reduction at zero, its identity (a
//! minimum is kept as the maximum of the complemented values).
//!
//! Both register what they are given (`x` with `add` or `take`) and act on it a cycle
//! later ([`LATENCY`]), so that the carry chain of a sum or a comparison starts at a
//! flip-flop beside the accumulator, not at the far end of a wire from the unit that
//! computed `x` (that wire alone took most of a cycle: docs/engine.md). A `shift` acts at once and must not come in the cycle of an `add` or
//! `take`, nor in the cycle after one: the engine's sequencer waits [`LATENCY`] cycles
//! more after the last row of a pass, and reduces for [`LATENCY`] cycles more (in
//! SEARCH, [`crate::search::COUNT_LATENCY`] more again, for the search units' registers).

use rust_hdl::prelude::*;

/// Cycles from `x` with `add` (or `take`) to the accumulator holding the result,
/// beyond the cycle of the update itself: `q` shows `x` [`LATENCY`] + 1 cycles after it
/// was given.
pub const LATENCY: usize = 1;

/// A saturating sum (at `2^32 - 1`). The sum is kept modulo 2^32 with a sticky flag
/// for a carry out of bit 31, and `q` is `2^32 - 1` once the flag is set: an addition
/// is one carry chain straight into the register (the flag is one LUT after the chain),
/// not a chain whose carry then selects all 32 bits. `x` and `add` are registered
/// first ([`LATENCY`]).
#[derive(LogicBlock)]
pub struct SatAcc {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Value to add.
    pub x: Signal<In, Bits<32>>,
    /// Add `x` (the addition is made in the next cycle).
    pub add: Signal<In, Bit>,
    /// Take `shift_in` this cycle (not in the cycle of an `add` or the one after: it
    /// would drop the pending addition).
    pub shift: Signal<In, Bit>,
    /// The next lane's sum (0 for the last lane, or to clear).
    pub shift_in: Signal<In, Bits<32>>,
    /// The sum.
    pub q: Signal<Out, Bits<32>>,
    /// `x` and `add`, registered beside the adder.
    xr: DFF<Bits<32>>,
    add_r: DFF<Bit>,
    acc: DFF<Bits<32>>,
    saturated: DFF<Bit>,
    sum: Signal<Local, Bits<32>>,
    carry: Signal<Local, Bit>,
    max: Constant<Bits<32>>,
}

impl Default for SatAcc {
    fn default() -> Self {
        SatAcc {
            clock: Default::default(),
            x: Default::default(),
            add: Default::default(),
            shift: Default::default(),
            shift_in: Default::default(),
            q: Default::default(),
            xr: Default::default(),
            add_r: Default::default(),
            acc: Default::default(),
            saturated: Default::default(),
            sum: Default::default(),
            carry: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
        }
    }
}

impl Logic for SatAcc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, xr, add_r, acc, saturated);
        self.xr.d.next = self.x.val();
        self.add_r.d.next = self.add.val();
        self.sum.next = self.acc.q.val() + self.xr.q.val();
        // The carry out of bit 31, from the operands' and the sum's top bits (one LUT
        // after the chain instead of a second comparison).
        self.carry.next = (self.acc.q.val().get_bit(31) & self.xr.q.val().get_bit(31))
            | ((self.acc.q.val().get_bit(31) | self.xr.q.val().get_bit(31)) & !self.sum.val().get_bit(31));
        if self.shift.val() {
            self.acc.d.next = self.shift_in.val();
            self.saturated.d.next = false;
        } else if self.add_r.q.val() {
            self.acc.d.next = self.sum.val();
            self.saturated.d.next = self.saturated.q.val() | self.carry.val();
        }
        self.q.next = self.acc.q.val();
        if self.saturated.q.val() {
            self.q.next = self.max.val();
        }
    }
}

/// A maximum. `x` and `take` are registered first ([`LATENCY`]), and `x` is compared
/// in the cycle it is given with what the maximum will be when it is taken (the
/// registered candidate if that one is taken now, else the maximum), so that the
/// update's enable is one LUT on flip-flops (`take` registered and the comparisons
/// registered) instead of a 32-bit comparison against the register it enables. Both
/// comparisons are registered as they are and the choice between them is made in that
/// LUT, from the enable registered: no multiplexer after a carry chain.
///
/// `x_acc` is `x` again, for the comparison with the maximum: a lane gives it from a
/// register of its own, which can sit beside that comparison and the maximum (pulled
/// towards the next lanes by the chain), while the register of `x` sits beside the
/// candidate's register and the other comparison. With one register for both, seed 3
/// of 35273e8 placed it 50 columns from the comparison with the maximum (docs/engine.md).
#[derive(LogicBlock, Default)]
pub struct MaxAcc {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Candidate value.
    pub x: Signal<In, Bits<32>>,
    /// The same value as `x`, for the comparison with the maximum.
    pub x_acc: Signal<In, Bits<32>>,
    /// Take `x` if it is larger.
    pub take: Signal<In, Bit>,
    /// Take `shift_in` instead (not in the cycle of a `take` or the one after).
    pub shift: Signal<In, Bit>,
    /// The next lane's maximum (0 for the last lane, or to clear).
    pub shift_in: Signal<In, Bits<32>>,
    /// The maximum.
    pub q: Signal<Out, Bits<32>>,
    acc: DFF<Bits<32>>,
    /// `x` and `take`, registered.
    xr: DFF<Bits<32>>,
    take_r: DFF<Bit>,
    /// `xr` is larger than the maximum and than the candidate before it (compared a
    /// cycle early), and whether that candidate was taken.
    above_acc: DFF<Bit>,
    above_xr: DFF<Bit>,
    enabled: DFF<Bit>,
    enable: Signal<Local, Bit>,
}

impl Logic for MaxAcc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc, xr, take_r, above_acc, above_xr, enabled);
        self.enable.next = self.take_r.q.val() & self.above_acc.q.val();
        if self.enabled.q.val() {
            self.enable.next = self.take_r.q.val() & self.above_xr.q.val();
        }
        self.xr.d.next = self.x.val();
        self.take_r.d.next = self.take.val();
        self.above_acc.d.next = self.x_acc.val() > self.acc.q.val();
        self.above_xr.d.next = self.x.val() > self.xr.q.val();
        self.enabled.d.next = self.enable.val();
        if self.shift.val() {
            self.acc.d.next = self.shift_in.val();
        } else if self.enable.val() {
            self.acc.d.next = self.xr.q.val();
        }
        self.q.next = self.acc.q.val();
    }
}

/// The engine's end of the lanes' shift chain: what leaves lane 0 during a reduction,
/// added up (each probe's sum of both searches, and in LOAD each search's keys) or
/// kept as the quantum's key ranges and error bits (LOAD). The sums are cleared before
/// each pass that streams the rows (`clear`), the keys, key ranges and error bits with
/// the quantum; a chain ends in zero, every accumulator's identity.
#[derive(LogicBlock, Default)]
pub struct Totals {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Lane 0's sums leave it this cycle: add them.
    pub add: Signal<In, Bit>,
    /// Clear the sums (a pass begins, or a quantum).
    pub clear: Signal<In, Bit>,
    /// Lane 0's key ranges and error bits leave it this cycle (LOAD): take them.
    pub take: Signal<In, Bit>,
    /// Clear the keys, key ranges and error bits (a quantum begins).
    pub clear_ranges: Signal<In, Bit>,
    /// Lane 0's sum per probe of search A.
    pub sum_a_in: [Signal<In, Bits<32>>; crate::count_lane::PROBES],
    /// Lane 0's sum per probe of search B.
    pub sum_b_in: [Signal<In, Bits<32>>; crate::count_lane::PROBES],
    /// Lane 0's keys of A (LOAD).
    pub total_a_in: Signal<In, Bits<32>>,
    /// Lane 0's keys of B (LOAD).
    pub total_b_in: Signal<In, Bits<32>>,
    /// Lane 0's complemented lowest start of A.
    pub nfirst_a_in: Signal<In, Bits<32>>,
    /// Lane 0's highest end of A.
    pub end_a_in: Signal<In, Bits<32>>,
    /// Lane 0's complemented lowest start of B.
    pub nfirst_b_in: Signal<In, Bits<32>>,
    /// Lane 0's highest end of B.
    pub end_b_in: Signal<In, Bits<32>>,
    /// Lane 0's error bits.
    pub errors_in: Signal<In, Bits<2>>,
    /// The sums of search A, per probe.
    pub sum_a: [Signal<Out, Bits<32>>; crate::count_lane::PROBES],
    /// The sums of search B, per probe.
    pub sum_b: [Signal<Out, Bits<32>>; crate::count_lane::PROBES],
    /// The keys of A (the candidate slices).
    pub total_a: Signal<Out, Bits<32>>,
    /// The keys of B.
    pub total_b: Signal<Out, Bits<32>>,
    /// The complement of A's lowest start.
    pub nfirst_a: Signal<Out, Bits<32>>,
    /// A's highest end.
    pub end_a: Signal<Out, Bits<32>>,
    /// The complement of B's lowest start.
    pub nfirst_b: Signal<Out, Bits<32>>,
    /// B's highest end.
    pub end_b: Signal<Out, Bits<32>>,
    /// The lanes' error bits, ORed.
    pub errors: Signal<Out, Bits<2>>,
    sum_a_acc: [SatAcc; crate::count_lane::PROBES],
    sum_b_acc: [SatAcc; crate::count_lane::PROBES],
    total_a_acc: SatAcc,
    total_b_acc: SatAcc,
    nfirst_a_acc: MaxAcc,
    end_a_acc: MaxAcc,
    nfirst_b_acc: MaxAcc,
    end_b_acc: MaxAcc,
    errors_r: DFF<Bits<2>>,
}

impl Logic for Totals {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, errors_r);
        for j in 0..crate::count_lane::PROBES {
            self.sum_a_acc[j].clock.next = self.clock.val();
            self.sum_b_acc[j].clock.next = self.clock.val();
            self.sum_a_acc[j].x.next = self.sum_a_in[j].val();
            self.sum_b_acc[j].x.next = self.sum_b_in[j].val();
            self.sum_a_acc[j].add.next = self.add.val();
            self.sum_b_acc[j].add.next = self.add.val();
            self.sum_a_acc[j].shift.next = self.clear.val();
            self.sum_b_acc[j].shift.next = self.clear.val();
            self.sum_a_acc[j].shift_in.next = 0.into();
            self.sum_b_acc[j].shift_in.next = 0.into();
            self.sum_a[j].next = self.sum_a_acc[j].q.val();
            self.sum_b[j].next = self.sum_b_acc[j].q.val();
        }
        self.total_a_acc.clock.next = self.clock.val();
        self.total_b_acc.clock.next = self.clock.val();
        self.total_a_acc.x.next = self.total_a_in.val();
        self.total_b_acc.x.next = self.total_b_in.val();
        self.total_a_acc.add.next = self.take.val();
        self.total_b_acc.add.next = self.take.val();
        self.total_a_acc.shift.next = self.clear_ranges.val();
        self.total_b_acc.shift.next = self.clear_ranges.val();
        self.total_a_acc.shift_in.next = 0.into();
        self.total_b_acc.shift_in.next = 0.into();
        self.total_a.next = self.total_a_acc.q.val();
        self.total_b.next = self.total_b_acc.q.val();
        self.nfirst_a_acc.clock.next = self.clock.val();
        self.end_a_acc.clock.next = self.clock.val();
        self.nfirst_b_acc.clock.next = self.clock.val();
        self.end_b_acc.clock.next = self.clock.val();
        self.nfirst_a_acc.x.next = self.nfirst_a_in.val();
        self.nfirst_a_acc.x_acc.next = self.nfirst_a_in.val();
        self.end_a_acc.x.next = self.end_a_in.val();
        self.end_a_acc.x_acc.next = self.end_a_in.val();
        self.nfirst_b_acc.x.next = self.nfirst_b_in.val();
        self.nfirst_b_acc.x_acc.next = self.nfirst_b_in.val();
        self.end_b_acc.x.next = self.end_b_in.val();
        self.end_b_acc.x_acc.next = self.end_b_in.val();
        self.nfirst_a_acc.take.next = self.take.val();
        self.end_a_acc.take.next = self.take.val();
        self.nfirst_b_acc.take.next = self.take.val();
        self.end_b_acc.take.next = self.take.val();
        self.nfirst_a_acc.shift.next = self.clear_ranges.val();
        self.end_a_acc.shift.next = self.clear_ranges.val();
        self.nfirst_b_acc.shift.next = self.clear_ranges.val();
        self.end_b_acc.shift.next = self.clear_ranges.val();
        self.nfirst_a_acc.shift_in.next = 0.into();
        self.end_a_acc.shift_in.next = 0.into();
        self.nfirst_b_acc.shift_in.next = 0.into();
        self.end_b_acc.shift_in.next = 0.into();
        self.nfirst_a.next = self.nfirst_a_acc.q.val();
        self.end_a.next = self.end_a_acc.q.val();
        self.nfirst_b.next = self.nfirst_b_acc.q.val();
        self.end_b.next = self.end_b_acc.q.val();
        if self.take.val() {
            self.errors_r.d.next = self.errors_r.q.val() | self.errors_in.val();
        }
        if self.clear_ranges.val() {
            self.errors_r.d.next = 0.into();
        }
        self.errors.next = self.errors_r.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// One cycle's inputs: `update` is `add` or `take`.
    #[derive(Clone, Copy, Debug)]
    struct Cycle {
        x: u32,
        update: bool,
        shift: bool,
        shift_in: u32,
    }

    /// Values that reach and cross 2^31 and 2^32 quickly, and small ones.
    fn value(rng: &mut ChaCha8Rng) -> u32 {
        const EDGES: [u32; 7] = [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFF0, 0xFFFF_FFFE, 0xFFFF_FFFF];
        match rng.gen_range(0..4) {
            0 => EDGES[rng.gen_range(0..EDGES.len())],
            1 => rng.gen_range(0..16),
            2 => rng.gen_range(0..0x1000_0000),
            _ => rng.gen(),
        }
    }

    /// Runs of updates (with gaps), then shifts, as the engine gives them: no shift in
    /// the cycle of an update or the one after.
    fn cycles(seed: u64, n: usize) -> Vec<Cycle> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        while out.len() < n {
            for _ in 0..rng.gen_range(1..12) {
                let update = rng.gen_bool(0.7);
                out.push(Cycle { x: value(&mut rng), update, shift: false, shift_in: value(&mut rng) });
            }
            for _ in 0..rng.gen_range(LATENCY..LATENCY + 2) {
                out.push(Cycle { x: value(&mut rng), update: false, shift: false, shift_in: value(&mut rng) });
            }
            for _ in 0..rng.gen_range(1..5) {
                out.push(Cycle { x: value(&mut rng), update: false, shift: true, shift_in: value(&mut rng) });
            }
        }
        out
    }

    /// The accumulator the obvious way: after the clock edge of cycle `t`, a shift in
    /// `t` has replaced it, else an update given in `t - LATENCY` has been applied.
    fn model(cs: &[Cycle], apply: fn(u32, u32) -> u32) -> Vec<u32> {
        let mut acc = 0u32;
        (0..cs.len())
            .map(|t| {
                if cs[t].shift {
                    acc = cs[t].shift_in;
                } else if t >= LATENCY && cs[t - LATENCY].update {
                    acc = apply(acc, cs[t - LATENCY].x);
                }
                acc
            })
            .collect()
    }

    macro_rules! check_against_model {
        ($block:ty, $update:ident, $apply:expr, $cs:expr $(, $copy:ident)*) => {{
            let cs: &[Cycle] = $cs;
            let expect = model(cs, $apply);
            let mut acc = <$block>::default();
            acc.connect_all();
            for (t, c) in cs.iter().enumerate() {
                acc.x.next = (c.x as u64).into();
                $(acc.$copy.next = (c.x as u64).into();)*
                acc.$update.next = c.update;
                acc.shift.next = c.shift;
                acc.shift_in.next = (c.shift_in as u64).into();
                acc.clock.next = true.into();
                assert!(simulate(&mut acc, 100));
                acc.clock.next = false.into();
                assert!(simulate(&mut acc, 100));
                assert_eq!(acc.q.val().to_u64(), expect[t] as u64, "cycle {t}: {:?}", &cs[t.saturating_sub(3)..=t]);
            }
            expect
        }};
    }

    /// Sums against `u32::saturating_add` over random runs of adds and shifts, with
    /// values at the edges of 2^31 and 2^32: saturation is reached, stays under further
    /// adds, is cleared by a shift, and is reached again after a shifted-in sum.
    #[test]
    fn sat_acc_adds_saturating_and_shifts() {
        let cs = cycles(1, 4_000);
        let expect = check_against_model!(SatAcc, add, u32::saturating_add, &cs);
        let saturated = (1..cs.len()).filter(|&t| expect[t] == u32::MAX && expect[t - 1] != u32::MAX).count();
        let wrapped = (LATENCY..cs.len())
            .filter(|&t| !cs[t].shift && cs[t - LATENCY].update)
            .filter(|&t| expect[t - 1].checked_add(cs[t - LATENCY].x).is_none() && expect[t - 1] != u32::MAX)
            .count();
        assert!(saturated > 20 && wrapped > 20, "the sequence must saturate often: {saturated}, {wrapped}");
    }

    /// Maximums against `u32::max` over random runs of takes and shifts, consecutive
    /// takes included (the comparison with the candidate taken the cycle before).
    #[test]
    fn max_acc_takes_the_largest_and_shifts() {
        let cs = cycles(2, 4_000);
        let expect = check_against_model!(MaxAcc, take, u32::max, &cs, x_acc);
        let back_to_back = (LATENCY + 1..cs.len())
            .filter(|&t| !cs[t].shift && cs[t - LATENCY].update && cs[t - LATENCY - 1].update)
            .filter(|&t| expect[t] != expect[t - 1] && expect[t - 1] != expect[t - 2])
            .count();
        assert!(back_to_back > 20, "consecutive takes must both raise the maximum: {back_to_back}");
    }
}
