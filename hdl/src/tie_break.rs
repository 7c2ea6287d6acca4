//! FINAL's result for one user of a lane: the allocation and the balance after the
//! keys below the threshold (its count at the threshold), held in a delay line until the prefix network of
//! [`crate::grant`] says whether the user also takes the tie-break slice, then that
//! slice added.
//!
//! Timing: what is given in cycle `t` meets `grant` in `t + DELAY`, and the result
//! is registered then (`alloc`, `credit` and `exists` show it from `t + DELAY + 1`).
//! The values plus and minus one are computed a cycle before `grant`, beside the last
//! delay stage, so that `grant` only selects (no carry chain after it).

use crate::lane::DELAY;
use rust_hdl::prelude::*;

/// The user's result through the delay line, and its tie-break slice.
#[derive(LogicBlock, Default)]
pub struct TieBreak {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The allocation before the searches (every cycle).
    pub base: Signal<In, Bits<32>>,
    /// The balance before the searches (`c1`).
    pub c1: Signal<In, Bits<32>>,
    /// The user's keys below its threshold.
    pub count: Signal<In, Bits<32>>,
    /// The user takes its keys as slices (a Karma borrower or a max-min user).
    pub take: Signal<In, Bit>,
    /// Its keys are credits it earns (a Karma donor whose slices are lent).
    pub earn: Signal<In, Bit>,
    /// Its keys are credits it spends (a Karma borrower).
    pub spend: Signal<In, Bit>,
    /// The user exists (its balance is written).
    pub exists_in: Signal<In, Bit>,
    /// The user takes the tie-break slice (`DELAY` cycles after the rest).
    pub grant: Signal<In, Bit>,
    /// The allocation.
    pub alloc: Signal<Out, Bits<32>>,
    /// The balance.
    pub credit: Signal<Out, Bits<32>>,
    /// The user exists.
    pub exists: Signal<Out, Bit>,
    al_d: [DFF<Bits<32>>; DELAY],
    cd_d: [DFF<Bits<32>>; DELAY],
    /// Bit 0 `take`, 1 `earn`, 2 `spend`, 3 `exists_in`.
    fl_d: [DFF<Bits<4>>; DELAY],
    al_up: DFF<Bits<32>>,
    cd_up: DFF<Bits<32>>,
    cd_dn: DFF<Bits<32>>,
    alloc_f: DFF<Bits<32>>,
    credit_f: DFF<Bits<32>>,
    ok_f: DFF<Bit>,
    /// The keys taken as slices (0 for a user that takes none).
    taken: Signal<Local, Bits<32>>,
    /// The balance after the keys as one addition of 33 bits, so that `cd_d[0]` is
    /// given by a carry chain alone (no selection after two chains): `c1` with a 1
    /// below it, plus the count with a 0 below it (earned), its complement with a 1
    /// below it (spent: `c1 + !count + 1`), or 0; bits 1 to 32 of the sum.
    c1_wide: Signal<Local, Bits<33>>,
    keys_wide: Signal<Local, Bits<33>>,
    credit_wide: Signal<Local, Bits<33>>,
}

impl Logic for TieBreak {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, al_up, cd_up, cd_dn, alloc_f, credit_f, ok_f);
        for k in 0..DELAY {
            self.al_d[k].clock.next = self.clock.val();
            self.cd_d[k].clock.next = self.clock.val();
            self.fl_d[k].clock.next = self.clock.val();
        }
        self.taken.next = 0.into();
        if self.take.val() {
            self.taken.next = self.count.val();
        }
        self.al_d[0].d.next = self.base.val() + self.taken.val();
        self.c1_wide.next = (bit_cast::<33, 32>(self.c1.val()) << 1) | bits::<33>(1);
        self.keys_wide.next = 0.into();
        if self.earn.val() {
            self.keys_wide.next = bit_cast::<33, 32>(self.count.val()) << 1;
        }
        if self.spend.val() {
            self.keys_wide.next = (bit_cast::<33, 32>(!self.count.val()) << 1) | bits::<33>(1);
        }
        self.credit_wide.next = self.c1_wide.val() + self.keys_wide.val();
        self.cd_d[0].d.next = self.credit_wide.val().get_bits::<32>(1);
        self.fl_d[0].d.next = bits::<4>(0)
            .replace_bit(0, self.take.val())
            .replace_bit(1, self.earn.val())
            .replace_bit(2, self.spend.val())
            .replace_bit(3, self.exists_in.val());
        for k in 1..DELAY {
            self.al_d[k].d.next = self.al_d[k - 1].q.val();
            self.cd_d[k].d.next = self.cd_d[k - 1].q.val();
            self.fl_d[k].d.next = self.fl_d[k - 1].q.val();
        }
        // The loop only names the last element of the delay line.
        for k in (DELAY - 1)..DELAY {
            self.al_up.d.next = self.al_d[k - 1].q.val() + 1;
            self.cd_up.d.next = self.cd_d[k - 1].q.val() + 1;
            self.cd_dn.d.next = self.cd_d[k - 1].q.val() - 1;
            self.alloc_f.d.next = self.al_d[k].q.val();
            if self.grant.val() & self.fl_d[k].q.val().get_bit(0) {
                self.alloc_f.d.next = self.al_up.q.val();
            }
            self.credit_f.d.next = self.cd_d[k].q.val();
            if self.grant.val() & self.fl_d[k].q.val().get_bit(1) {
                self.credit_f.d.next = self.cd_up.q.val();
            }
            if self.grant.val() & self.fl_d[k].q.val().get_bit(2) {
                self.credit_f.d.next = self.cd_dn.q.val();
            }
            self.ok_f.d.next = self.fl_d[k].q.val().get_bit(3);
        }
        self.alloc.next = self.alloc_f.q.val();
        self.credit.next = self.credit_f.q.val();
        self.exists.next = self.ok_f.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[derive(Clone, Copy, Debug)]
    struct Row {
        base: u32,
        c1: u32,
        count: u32,
        /// 0: takes nothing, 1: a taker (max-min), 2: a borrower (takes, spends), 3: a
        /// donor (earns).
        role: u8,
        exists: bool,
        grant: bool,
    }

    /// What the user ends with, its keys below the threshold and the granted slice
    /// at it counted alike: a taker's allocation grows by them, a borrower's balance
    /// falls by them, a donor's rises (32-bit words, as the banks hold them).
    fn model(r: &Row) -> (u64, u64, bool) {
        let keys = r.count.wrapping_add(u32::from(r.grant && r.role != 0));
        let alloc = if matches!(r.role, 1 | 2) { r.base.wrapping_add(keys) } else { r.base };
        let credit = match r.role {
            2 => r.c1.wrapping_sub(keys),
            3 => r.c1.wrapping_add(keys),
            _ => r.c1,
        };
        (alloc as u64, credit as u64, r.exists)
    }

    /// A row a cycle through the block, every row's grant `DELAY` cycles after it,
    /// every result against the model `DELAY + 1` cycles after it: back-to-back rows
    /// of every role, granted or not, values at the edges of the word (wrapping, as
    /// the hardware does: the engine's range checks keep real users from it).
    #[test]
    fn adds_the_granted_slice_to_each_users_result_after_the_delay() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let mut b = TieBreak::default();
        b.connect_all();
        let edge = |rng: &mut ChaCha8Rng| match rng.gen_range(0..3) {
            0 => [0u32, 1, u32::MAX, 1 << 31][rng.gen_range(0..4)],
            _ => rng.gen(),
        };
        let rows: Vec<Row> = (0..3_000)
            .map(|_| Row {
                base: edge(&mut rng),
                c1: edge(&mut rng),
                count: edge(&mut rng),
                role: rng.gen_range(0..4),
                exists: rng.gen_bool(0.8),
                grant: rng.gen_bool(0.5),
            })
            .collect();
        let mut granted = 0;
        for t in 0..rows.len() + DELAY + 1 {
            if let Some(r) = rows.get(t) {
                b.base.next = u64::from(r.base).into();
                b.c1.next = u64::from(r.c1).into();
                b.count.next = u64::from(r.count).into();
                b.take.next = matches!(r.role, 1 | 2);
                b.spend.next = r.role == 2;
                b.earn.next = r.role == 3;
                b.exists_in.next = r.exists;
            }
            b.grant.next = t.checked_sub(DELAY).and_then(|k| rows.get(k)).is_some_and(|r| r.grant);
            b.clock.next = true.into();
            assert!(simulate(&mut b, 100));
            b.clock.next = false.into();
            assert!(simulate(&mut b, 100));
            if let Some(r) = t.checked_sub(DELAY).and_then(|k| rows.get(k)) {
                let got = (b.alloc.val().to_u64(), b.credit.val().to_u64(), b.exists.val());
                assert_eq!(got, model(r), "row {}: {r:?}", t - DELAY);
                granted += usize::from(r.grant && r.role != 0);
            }
        }
        assert!(granted > 1_000, "only {granted} rows were given a slice");
    }
}
