//! PLAN: from LOAD's totals and the settings' products, what the searches must select
//! (`../shared/spec/karma.md`, Algorithm 1 with equal shares; max-min):
//!
//! - Karma: the supply is the donated total plus the shared slices `n (f - g)`; the
//!   borrowed total `B = min(supply, candidates)`; search A selects `B` slices among the
//!   borrowers' keys, search B the `min(B, donated)` donations used.
//! - Max-min: search B selects `min(n f, total demand)` slices among the users' keys.
//! - Strict: nothing to select.
//!
//! One step per cycle (`plan1`, `plan2`, `plan3`; the targets are read in the cycle
//! after), each at most one carry chain: step 2 compares the totals (and decodes the
//! mode) into registers while it adds the supply, step 3 compares the supply and
//! registers both targets, so that the search units load them from
//! flip-flops (a minimum in front of their wire was a critical path: docs/engine.md).
//! A pool of `n f >= 2^31` slices is refused (`refused`, but for strict partitioning,
//! which never adds slices up).

use fairshare_abi as abi;
use rust_hdl::prelude::*;

/// The PLAN steps.
#[derive(LogicBlock)]
pub struct Plan {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Step 1: take the totals and check the pool size.
    pub plan1: Signal<In, Bit>,
    /// Step 2: the supply, and the totals compared.
    pub plan2: Signal<In, Bit>,
    /// Step 3: the targets.
    pub plan3: Signal<In, Bit>,
    /// The mode.
    pub mode: Signal<In, Bits<2>>,
    /// LOAD's total of search A (the borrowers' candidate slices).
    pub candidates: Signal<In, Bits<32>>,
    /// LOAD's total of search B (donations; max-min: demands).
    pub donated: Signal<In, Bits<32>>,
    /// The pool size `n f`.
    pub capacity: Signal<In, Bits<32>>,
    /// The shared slices `n (f - g)`.
    pub shared: Signal<In, Bits<32>>,
    /// The total of search A's keys (after step 1).
    pub total_a: Signal<Out, Bits<32>>,
    /// The total of search B's keys (after step 1).
    pub total_b: Signal<Out, Bits<32>>,
    /// The pool is too large (after step 1).
    pub refused: Signal<Out, Bit>,
    /// Slices search A selects (registered in step 3, from the mode and `capacity`
    /// registered in step 2).
    pub target_a: Signal<Out, Bits<32>>,
    /// Slices search B selects (registered in step 3, from the mode and `capacity`
    /// registered in step 2).
    pub target_b: Signal<Out, Bits<32>>,
    total_a_r: DFF<Bits<32>>,
    total_b_r: DFF<Bits<32>>,
    supply: DFF<Bits<32>>,
    target_a_r: DFF<Bits<32>>,
    target_b_r: DFF<Bits<32>>,
    refused_r: DFF<Bit>,
    supply_sum: Signal<Local, Bits<32>>,
    supply_carry: Signal<Local, Bit>,
    /// Step 3's comparison of the supply.
    supply_below_a: Signal<Local, Bit>,
    /// Step 2's comparisons of the totals and the mode, registered for step 3, and the
    /// pool size it compared.
    a_below_b: DFF<Bit>,
    capacity_below_b: DFF<Bit>,
    karma: DFF<Bit>,
    maxmin: DFF<Bit>,
    /// `n f`, taken in step 2 beside the comparison that chose it (max-min's target
    /// when it is the smaller), so that step 3 reads only this block's registers.
    capacity_r: DFF<Bits<32>>,
    max: Constant<Bits<32>>,
    limit: Constant<Bits<32>>,
    mode_karma: Constant<Bits<2>>,
    mode_maxmin: Constant<Bits<2>>,
    mode_strict: Constant<Bits<2>>,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            clock: Default::default(),
            plan1: Default::default(),
            plan2: Default::default(),
            plan3: Default::default(),
            mode: Default::default(),
            candidates: Default::default(),
            donated: Default::default(),
            capacity: Default::default(),
            shared: Default::default(),
            total_a: Default::default(),
            total_b: Default::default(),
            refused: Default::default(),
            target_a: Default::default(),
            target_b: Default::default(),
            total_a_r: Default::default(),
            total_b_r: Default::default(),
            supply: Default::default(),
            target_a_r: Default::default(),
            target_b_r: Default::default(),
            refused_r: Default::default(),
            supply_sum: Default::default(),
            supply_carry: Default::default(),
            supply_below_a: Default::default(),
            a_below_b: Default::default(),
            capacity_below_b: Default::default(),
            karma: Default::default(),
            maxmin: Default::default(),
            capacity_r: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
            limit: Constant::new(Bits::<32>::from(abi::WORD_LIMIT)),
            mode_karma: Constant::new(Bits::<2>::from(abi::mode::KARMA as u64)),
            mode_maxmin: Constant::new(Bits::<2>::from(abi::mode::MAXMIN as u64)),
            mode_strict: Constant::new(Bits::<2>::from(abi::mode::STRICT as u64)),
        }
    }
}

impl Logic for Plan {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            total_a_r,
            total_b_r,
            supply,
            target_a_r,
            target_b_r,
            refused_r,
            a_below_b,
            capacity_below_b,
            karma,
            maxmin,
            capacity_r
        );
        // The supply, saturated: the carry out of bit 31 from the operands' and the
        // sum's top bits.
        self.supply_sum.next = self.total_b_r.q.val() + self.shared.val();
        self.supply_carry.next = (self.total_b_r.q.val().get_bit(31) & self.shared.val().get_bit(31))
            | ((self.total_b_r.q.val().get_bit(31) | self.shared.val().get_bit(31))
                & !self.supply_sum.val().get_bit(31));
        if self.plan1.val() {
            self.total_a_r.d.next = self.candidates.val();
            self.total_b_r.d.next = self.donated.val();
            self.refused_r.d.next =
                (self.mode.val() != self.mode_strict.val()) & (self.capacity.val() >= self.limit.val());
        }
        if self.plan2.val() {
            self.a_below_b.d.next = self.total_a_r.q.val() < self.total_b_r.q.val();
            self.capacity_below_b.d.next = self.capacity.val() < self.total_b_r.q.val();
            self.karma.d.next = self.mode.val() == self.mode_karma.val();
            self.maxmin.d.next = self.mode.val() == self.mode_maxmin.val();
            self.capacity_r.d.next = self.capacity.val();
            self.supply.d.next = self.supply_sum.val();
            if self.supply_carry.val() {
                self.supply.d.next = self.max.val();
            }
        }
        // Step 3 (from step 2's registered comparisons of the totals, and the supply's).
        // Karma: search A the borrowed total `min(supply, candidates)`, search B
        // the donations used, `min(supply, candidates, donated)`, which is
        // `min(candidates, donated)` as the supply (donated plus the shared slices,
        // saturated) is never below the donated total; max-min: search B `min(n f, demand)`.
        self.supply_below_a.next = self.supply.q.val() < self.total_a_r.q.val();
        if self.plan3.val() {
            self.target_a_r.d.next = 0.into();
            self.target_b_r.d.next = 0.into();
            if self.karma.q.val() {
                self.target_a_r.d.next = self.total_a_r.q.val();
                if self.supply_below_a.val() {
                    self.target_a_r.d.next = self.supply.q.val();
                }
                self.target_b_r.d.next = self.total_b_r.q.val();
                if self.a_below_b.q.val() {
                    self.target_b_r.d.next = self.total_a_r.q.val();
                }
            }
            if self.maxmin.q.val() {
                self.target_b_r.d.next = self.total_b_r.q.val();
                if self.capacity_below_b.q.val() {
                    self.target_b_r.d.next = self.capacity_r.q.val();
                }
            }
        }
        self.target_a.next = self.target_a_r.q.val();
        self.target_b.next = self.target_b_r.q.val();
        self.total_a.next = self.total_a_r.q.val();
        self.total_b.next = self.total_b_r.q.val();
        self.refused.next = self.refused_r.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn tick(p: &mut Plan) {
        p.clock.next = true.into();
        assert!(simulate(p, 100));
        p.clock.next = false.into();
        assert!(simulate(p, 100));
    }

    /// The three steps against the spec's quantities in wide arithmetic (sums
    /// saturated at 2^32 - 1 as the engine's accumulators are), for every mode, with
    /// totals and products at the edges of 2^31 and 2^32.
    #[test]
    fn targets_follow_the_spec_for_every_mode() {
        let mut rng = ChaCha8Rng::seed_from_u64(29);
        let mut p = Plan::default();
        p.connect_all();
        let word = |rng: &mut ChaCha8Rng| -> u64 {
            match rng.gen_range(0..4) {
                0 => [0, 1, (1 << 31) - 1, 1 << 31, u64::from(u32::MAX)][rng.gen_range(0..5)],
                1 => rng.gen_range(0..100),
                _ => rng.gen::<u32>().into(),
            }
        };
        let (mut supply_bound, mut demand_bound) = (0, 0);
        for _ in 0..5_000 {
            let mode: u64 = rng.gen_range(0..3);
            let (candidates, donated, capacity, shared) =
                (word(&mut rng), word(&mut rng), word(&mut rng), word(&mut rng));
            p.mode.next = mode.into();
            p.candidates.next = candidates.into();
            p.donated.next = donated.into();
            p.capacity.next = capacity.into();
            p.shared.next = shared.into();
            for step in 1..=3 {
                p.plan1.next = step == 1;
                p.plan2.next = step == 2;
                p.plan3.next = step == 3;
                if step == 3 {
                    // Step 2 has read the mode and `n f`: step 3 must not.
                    p.mode.next = rng.gen_range(0..4u64).into();
                    p.capacity.next = word(&mut rng).into();
                }
                tick(&mut p);
            }
            p.plan3.next = false;
            // The targets are registers: what the inputs do after step 3 changes nothing.
            p.candidates.next = word(&mut rng).into();
            p.donated.next = word(&mut rng).into();
            p.capacity.next = word(&mut rng).into();
            p.shared.next = word(&mut rng).into();
            tick(&mut p);
            let supply = (donated + shared).min(u64::from(u32::MAX));
            let borrowed = supply.min(candidates);
            let (a, b) = match mode {
                0 => (borrowed, borrowed.min(donated)),
                1 => (0, capacity.min(donated)),
                _ => (0, 0),
            };
            let ctx =
                format!("mode {mode}, candidates {candidates}, donated {donated}, n f {capacity}, shared {shared}");
            assert_eq!((p.target_a.val().to_u64(), p.target_b.val().to_u64()), (a, b), "{ctx}");
            assert_eq!((p.total_a.val().to_u64(), p.total_b.val().to_u64()), (candidates, donated), "{ctx}");
            assert_eq!(p.refused.val(), mode != 2 && capacity >= abi::WORD_LIMIT, "{ctx}");
            supply_bound += usize::from(mode == 0 && supply < candidates);
            demand_bound += usize::from(mode == 1 && capacity < donated);
        }
        assert!(supply_bound > 200 && demand_bound > 200, "{supply_bound} supply-bound, {demand_bound} capacity-bound");
    }
}
