//! What a user is in this quantum, decided in the lane's LOAD stage 3 from flags the
//! earlier stages computed and selected in stage 4 from the words: its kind (a Karma
//! borrower, a donor or a max-min user), the run of keys it puts into its search, its
//! base allocation and its range errors (`../shared/spec/karma.md`, Algorithm 1 with
//! equal shares; max-min; strict).
//!
//! Timing: the flags of a row are given in cycle `t`, its words (`c1`, `given`, ...)
//! in `t + 1`, and the outputs show that row in `t + 1` (combinational on the words; the
//! lane registers them, its stage 5). The flags are comparisons and carries made a
//! stage or two earlier; the decisions they make (the kind, which word each output
//! takes, the errors) are registered here, so that every output bit is one selection
//! of words by flip-flops: with the decision in front of the selection, its LUTs were
//! shared by the run's 32 bits and placed far from them (docs/engine.md). `c1 != 0`
//! (a 32-bit OR) is registered as it is and only gates the kind: a borrower's run
//! `min(d - g, c1)` is 0 anyway when `c1` is 0, so the words chosen need not wait for it
//! (in the decision, that OR and the decision's LUT were one path too long, 8.2 ns).

use rust_hdl::prelude::*;

/// Kinds, as stored in the lane's kind bank (bits 0-1; bit 2 says the user exists).
pub mod kind {
    /// Neither: the user takes its base allocation and nothing more.
    pub const NONE: u64 = 0;
    /// A Karma borrower (search A).
    pub const BORROWER: u64 = 1;
    /// A Karma donor, or a max-min user (search B).
    pub const DONOR: u64 = 2;
}

/// Bits of `flags`.
pub mod flag {
    /// `d < g`.
    pub const BELOW_GUARANTEED: usize = 0;
    /// `d > g`.
    pub const ABOVE_GUARANTEED: usize = 1;
    /// `d < f`.
    pub const BELOW_FAIR: usize = 2;
    /// The stored balance is at or above 2^31.
    pub const BALANCE_HIGH: usize = 3;
    /// `d` is at or above 2^31.
    pub const DEMAND_HIGH: usize = 4;
    /// The user exists.
    pub const EXISTS: usize = 5;
}

/// Bits of `credit_flags`, about `c1`, the balance after the free credits.
pub mod credit_flag {
    /// `c1 != 0`.
    pub const SOME: usize = 0;
    /// `c1` is at or above 2^31.
    pub const HIGH: usize = 1;
    /// `c1 + (g - d)`, a donor's balance if everything it gives is taken, is at or above 2^31.
    pub const REACH_HIGH: usize = 2;
}

/// Bits of `error`.
pub mod error {
    /// A demand at or above 2^31.
    pub const DEMAND: usize = 0;
    /// A balance at or above 2^31, or one that could reach it this quantum (Karma).
    pub const CREDIT: usize = 1;
}

/// The per-user rule of LOAD.
#[derive(LogicBlock, Default)]
pub struct RunRule {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The pool runs Karma.
    pub karma: Signal<In, Bit>,
    /// The pool runs max-min (neither: strict partitioning).
    pub maxmin: Signal<In, Bit>,
    /// See [`flag`] (a cycle before the words).
    pub flags: Signal<In, Bits<6>>,
    /// See [`credit_flag`] (a cycle before the words).
    pub credit_flags: Signal<In, Bits<3>>,
    /// `c1`.
    pub c1: Signal<In, Bits<32>>,
    /// `g - d` (a donor's donation).
    pub given: Signal<In, Bits<32>>,
    /// `min(d - g, c1)` (a borrower's reach; 0 when `c1` is 0, which the rule relies on).
    pub wanted: Signal<In, Bits<32>>,
    /// `d`.
    pub demand: Signal<In, Bits<32>>,
    /// `g`.
    pub guaranteed: Signal<In, Bits<32>>,
    /// `f`.
    pub fair: Signal<In, Bits<32>>,
    /// See [`kind`].
    pub kind: Signal<Out, Bits<2>>,
    /// The first key of the user's run: a borrower's `!c1` (the most credits first), a
    /// donor's `c1`, a max-min user's 1.
    pub start: Signal<Out, Bits<32>>,
    /// The run's length (0 for a user of no search or one that does not exist).
    pub run: Signal<Out, Bits<32>>,
    /// The allocation before the searches: a Karma user's `min(d, g)`, strict's
    /// `min(d, f)`, max-min's 0.
    pub base: Signal<Out, Bits<32>>,
    /// See [`error`] (only for a user that exists).
    pub error: Signal<Out, Bits<2>>,
    /// The decisions, registered: the kind (a borrower's before `c1 != 0`, which
    /// `some_r` holds), the errors, and the word each output takes
    /// (0: none, the output is 0). `start`: 1 `c1`, 2 `!c1`, 3 the key 1; `run`: 1
    /// `given`, 2 `wanted`, 3 `demand`; `base`: 1 `demand`, 2 `guaranteed`, 3 `fair`.
    kind_r: DFF<Bits<2>>,
    some_r: DFF<Bit>,
    error_r: DFF<Bits<2>>,
    start_from: DFF<Bits<2>>,
    run_from: DFF<Bits<2>>,
    base_from: DFF<Bits<2>>,
    credit_error: Signal<Local, Bit>,
}

impl Logic for RunRule {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, kind_r, some_r, start_from, run_from, base_from, error_r);
        // Decided from the flags (cycle `t`).
        self.kind_r.d.next = 0.into();
        self.start_from.d.next = 0.into();
        self.run_from.d.next = 0.into();
        self.base_from.d.next = 0.into();
        self.credit_error.next = false;
        if self.karma.val() {
            if self.flags.val().get_bit(0) {
                self.kind_r.d.next = 2.into();
                self.start_from.d.next = 1.into();
                self.run_from.d.next = 1.into();
                self.base_from.d.next = 1.into();
            } else {
                self.base_from.d.next = 2.into();
                if self.flags.val().get_bit(1) {
                    self.kind_r.d.next = 1.into();
                    self.start_from.d.next = 2.into();
                    self.run_from.d.next = 2.into();
                }
            }
            // The balance must be below 2^31 (so `c1` cannot wrap), and so must every
            // balance this quantum can produce: `c1`, and a donor's `c1` plus
            // everything it could earn. Borrowers only lose credits.
            self.credit_error.next = self.flags.val().get_bit(3)
                | self.credit_flags.val().get_bit(1)
                | (self.flags.val().get_bit(0) & self.credit_flags.val().get_bit(2));
        } else if self.maxmin.val() {
            self.kind_r.d.next = 2.into();
            self.start_from.d.next = 3.into();
            self.run_from.d.next = 3.into();
        } else if self.flags.val().get_bit(2) {
            self.base_from.d.next = 1.into();
        } else {
            self.base_from.d.next = 3.into();
        }
        if !self.flags.val().get_bit(5) {
            self.kind_r.d.next = 0.into();
            self.run_from.d.next = 0.into();
            self.base_from.d.next = 0.into();
        }
        self.some_r.d.next = self.credit_flags.val().get_bit(0);
        self.error_r.d.next = bits::<2>(0)
            .replace_bit(0, self.flags.val().get_bit(5) & self.flags.val().get_bit(4))
            .replace_bit(1, self.flags.val().get_bit(5) & self.credit_error.val());

        // Selected from the words (cycle `t + 1`).
        self.kind.next = self.kind_r.q.val();
        if (self.kind_r.q.val() == 1) & !self.some_r.q.val() {
            self.kind.next = 0.into();
        }
        self.error.next = self.error_r.q.val();
        self.start.next = 0.into();
        if self.start_from.q.val() == 1 {
            self.start.next = self.c1.val();
        } else if self.start_from.q.val() == 2 {
            self.start.next = !self.c1.val();
        } else if self.start_from.q.val() == 3 {
            self.start.next = 1.into();
        }
        self.run.next = 0.into();
        if self.run_from.q.val() == 1 {
            self.run.next = self.given.val();
        } else if self.run_from.q.val() == 2 {
            self.run.next = self.wanted.val();
        } else if self.run_from.q.val() == 3 {
            self.run.next = self.demand.val();
        }
        self.base.next = 0.into();
        if self.base_from.q.val() == 1 {
            self.base.next = self.demand.val();
        } else if self.base_from.q.val() == 2 {
            self.base.next = self.guaranteed.val();
        } else if self.base_from.q.val() == 3 {
            self.base.next = self.fair.val();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// One user as the spec has it.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct User {
        /// 0 Karma, 1 max-min, 2 strict.
        pub(crate) mode: u8,
        pub(crate) fair: u32,
        pub(crate) guaranteed: u32,
        pub(crate) balance: u32,
        pub(crate) demand: u32,
        pub(crate) exists: bool,
    }

    /// (kind, start, run, base, error) of the user, from the spec's definitions with
    /// wide arithmetic: Karma: a user demanding less than `g` donates `g - d` (its keys
    /// start at its balance `c1 = c + f - g`), one demanding more borrows up to
    /// `min(d - g, c1)` if it has credits (keys from `!c1`, richest first), every Karma
    /// user keeps `min(d, g)`; max-min: every user's run is its demand; strict: `min(d,
    /// f)`. Errors: a demand of 2^31 or more; under Karma a balance, `c1`, or a donor's
    /// balance after earning all it gives, of 2^31 or more.
    pub(crate) fn model(u: &User) -> (u64, u64, u64, u64, u64) {
        if !u.exists {
            return (kind::NONE, 0, 0, 0, 0);
        }
        let (d, g, f) = (u64::from(u.demand), u64::from(u.guaranteed), u64::from(u.fair));
        let c1 = u64::from(u.balance) + (f - g);
        let high = 1u64 << 31;
        let mut credit_error = false;
        let (kind, start, run, base) = match u.mode {
            0 => {
                credit_error = u64::from(u.balance) >= high || c1 >= high || (d < g && c1 + (g - d) >= high);
                if d < g {
                    (kind::DONOR, c1 as u32 as u64, g - d, d)
                } else if d > g && c1 != 0 {
                    (kind::BORROWER, !(c1 as u32) as u64, (d - g).min(c1) as u32 as u64, g)
                } else {
                    (kind::NONE, 0, 0, g)
                }
            }
            1 => (kind::DONOR, 1, d, 0),
            _ => (kind::NONE, 0, 0, d.min(f)),
        };
        let error = u64::from(d >= high) | (u64::from(credit_error) << 1);
        (kind, start, run, base, error)
    }

    /// Values near the edges the flags are about, and anywhere.
    fn word(rng: &mut ChaCha8Rng, near: &[u32]) -> u32 {
        match rng.gen_range(0..3) {
            0 => near[rng.gen_range(0..near.len())].wrapping_add(rng.gen_range(0..3)).wrapping_sub(1),
            1 => rng.gen_range(0..64),
            _ => rng.gen(),
        }
    }

    /// A user's inputs as the lane's earlier stages compute them (stages 2 and 3), in
    /// 32-bit words: its flags and credit flags, then (c1, given, wanted, demand,
    /// guaranteed, fair).
    fn inputs(u: &User) -> (u64, u64, [u32; 6]) {
        let free = u.fair - u.guaranteed;
        let c1 = u.balance.wrapping_add(free);
        let given = u.guaranteed.wrapping_sub(u.demand);
        let flags = u64::from(u.demand < u.guaranteed)
            | u64::from(u.demand > u.guaranteed) << 1
            | u64::from(u.demand < u.fair) << 2
            | u64::from(u.balance >> 31) << 3
            | u64::from(u.demand >> 31) << 4
            | u64::from(u.exists) << 5;
        let credit_flags = u64::from(c1 != 0) | u64::from(c1 >> 31) << 1 | u64::from(c1.wrapping_add(given) >> 31) << 2;
        let wanted = u.demand.wrapping_sub(u.guaranteed).min(c1);
        (flags, credit_flags, [c1, given, wanted, u.demand, u.guaranteed, u.fair])
    }

    /// The block against the model, on a stream of random users of every mode (a
    /// row every cycle, as in LOAD: a row's flags in the cycle of the previous row's
    /// words): demands and balances at the shares and at 2^31, balances that wrap `c1`.
    /// The mode changes with the row at times, so a decision must come from the
    /// settings of its own row's cycle.
    #[test]
    fn decides_each_users_kind_run_base_and_errors_as_the_spec() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut rule = RunRule::default();
        rule.connect_all();
        let mut seen = std::collections::HashSet::new();
        let mut mode = 0;
        let mut previous: Option<User> = None;
        for _ in 0..40_000 {
            if rng.gen_bool(0.05) {
                mode = rng.gen_range(0..3);
            }
            let fair = rng.gen_range(1..1u32 << 31);
            // At times no free credits, so that a balance of 0 leaves `c1` at 0.
            let guaranteed = if rng.gen_bool(0.15) { fair } else { rng.gen_range(0..=fair) };
            let balance = word(&mut rng, &[0, 1 << 31, (1 << 31) - (fair - guaranteed)]);
            let demand = word(&mut rng, &[guaranteed, fair, 1 << 31]);
            let u = User { mode, fair, guaranteed, balance, demand, exists: rng.gen_bool(0.9) };
            // This row's flags with this cycle's settings; the previous row's words
            // (random ones before the first).
            let (flags, credit_flags, _) = inputs(&u);
            let words = previous.as_ref().map_or_else(|| [rng.gen(); 6], |p| inputs(p).2);
            rule.karma.next = u.mode == 0;
            rule.maxmin.next = u.mode == 1;
            rule.flags.next = flags.into();
            rule.credit_flags.next = credit_flags.into();
            rule.c1.next = u64::from(words[0]).into();
            rule.given.next = u64::from(words[1]).into();
            rule.wanted.next = u64::from(words[2]).into();
            rule.demand.next = u64::from(words[3]).into();
            rule.guaranteed.next = u64::from(words[4]).into();
            rule.fair.next = u64::from(words[5]).into();
            rule.clock.next = false.into();
            assert!(simulate(&mut rule, 100));
            let got = (
                rule.kind.val().to_u64(),
                rule.start.val().to_u64(),
                rule.run.val().to_u64(),
                rule.base.val().to_u64(),
                rule.error.val().to_u64(),
            );
            rule.clock.next = true.into();
            assert!(simulate(&mut rule, 100));
            let Some(p) = previous.replace(u) else { continue };
            let want = model(&p);
            // A user with errors is refused as a whole: only the error bits count.
            if want.4 != 0 {
                assert_eq!(got.4, want.4, "{p:?}");
                seen.insert((p.mode, 9));
                continue;
            }
            // The start of a user with an empty run is never read.
            let (got, want) =
                if want.2 == 0 { ((got.0, 0, 0, got.3, got.4), (want.0, 0, 0, want.3, want.4)) } else { (got, want) };
            assert_eq!(got, want, "{p:?}");
            seen.insert((p.mode, want.0));
            // A Karma user above its share without credits: no borrower.
            if p.mode == 0 && p.demand > p.guaranteed && p.balance.wrapping_add(p.fair - p.guaranteed) == 0 {
                seen.insert((0, 8));
            }
        }
        // Every mode, every kind, errors.
        for case in [
            (0, kind::NONE),
            (0, kind::BORROWER),
            (0, kind::DONOR),
            (0, 8),
            (0, 9),
            (1, kind::DONOR),
            (1, 9),
            (2, kind::NONE),
        ] {
            assert!(seen.contains(&case), "never saw mode/kind {case:?}: {seen:?}");
        }
    }
}
