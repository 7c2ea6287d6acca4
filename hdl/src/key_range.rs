//! One search's key range within a lane: the lowest run start and the highest run end
//! of the lane's users in that search, taken during LOAD and shifted towards lane 0
//! afterwards (the chain of [`crate::reduce`]). The search starts from the interval
//! they bound.
//!
//! A lane has one for each search. Each registers its own copy of the row's run (start
//! and length) so that it feeds only this range's end adder, take flag and maximums: with
//! one register the synthesis merges the two ranges' end adders into one placed between
//! them, too far from both (docs/engine.md; hdl/synth.sh keeps the copies).
//!
//! Timing, for a row whose run is given in cycle `t` (`start`, `run`): `load` says in
//! `t + 1` whether it belongs to this search; the run's complemented start and its end
//! are registered in `t + 2` and given to the maximums, which hold them
//! [`crate::reduce::LATENCY`] cycles later. A run of length 0 extends nothing.

use crate::reduce::MaxAcc;
use rust_hdl::prelude::*;

/// A search's key range in one lane.
#[derive(LogicBlock, Default)]
pub struct KeyRange {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The row's run start (every cycle; registered here).
    pub start: Signal<In, Bits<32>>,
    /// The row's run length (every cycle; registered here).
    pub run: Signal<In, Bits<32>>,
    /// The run given in the previous cycle is this search's (a LOAD row of its kind).
    pub load: Signal<In, Bit>,
    /// Take the next lane's range (the chain's shift; not while a row is in flight).
    pub shift: Signal<In, Bit>,
    /// Chain from lane `i + 1`: the complement of its lowest start.
    pub nfirst_in: Signal<In, Bits<32>>,
    /// Chain from lane `i + 1`: its highest end.
    pub end_in: Signal<In, Bits<32>>,
    /// The complement of the lowest start taken (0: none).
    pub nfirst_out: Signal<Out, Bits<32>>,
    /// The highest end taken (0: none).
    pub end_out: Signal<Out, Bits<32>>,
    /// This range's copy of the run.
    start5: DFF<Bits<32>>,
    run5: DFF<Bits<32>>,
    /// The run's complemented start and its end, registered: each drives its maximum's
    /// candidate register and its comparison with that candidate; a second copy of
    /// each (`*_acc`) drives the comparison with the maximum (see [`MaxAcc`]).
    nfs6: DFF<Bits<32>>,
    end6: DFF<Bits<32>>,
    nfs6_acc: DFF<Bits<32>>,
    end6_acc: DFF<Bits<32>>,
    /// The run extends the range, decided a stage early so that the maximums are given
    /// a flag from a flip-flop.
    take6: DFF<Bit>,
    /// The maximums: of the complemented starts (the lowest start) and of the ends.
    low: MaxAcc,
    high: MaxAcc,
}

impl Logic for KeyRange {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, start5, run5, nfs6, end6, nfs6_acc, end6_acc, take6);
        self.low.clock.next = self.clock.val();
        self.high.clock.next = self.clock.val();
        self.start5.d.next = self.start.val();
        self.run5.d.next = self.run.val();
        self.nfs6.d.next = !self.start5.q.val();
        self.end6.d.next = self.start5.q.val() + self.run5.q.val();
        self.nfs6_acc.d.next = !self.start5.q.val();
        self.end6_acc.d.next = self.start5.q.val() + self.run5.q.val();
        self.take6.d.next = self.load.val() & (self.run5.q.val() != 0);
        self.low.x.next = self.nfs6.q.val();
        self.high.x.next = self.end6.q.val();
        self.low.x_acc.next = self.nfs6_acc.q.val();
        self.high.x_acc.next = self.end6_acc.q.val();
        self.low.take.next = self.take6.q.val();
        self.high.take.next = self.take6.q.val();
        self.low.shift.next = self.shift.val();
        self.high.shift.next = self.shift.val();
        self.low.shift_in.next = self.nfirst_in.val();
        self.high.shift_in.next = self.end_in.val();
        self.nfirst_out.next = self.low.q.val();
        self.end_out.next = self.high.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Cycles from a row's run to the range holding it: registered copy, registered
    /// candidate, the maximum's registered operand and its update.
    const SETTLE: usize = 3 + crate::reduce::LATENCY;

    fn tick(r: &mut KeyRange) {
        r.clock.next = true.into();
        assert!(simulate(r, 100));
        r.clock.next = false.into();
        assert!(simulate(r, 100));
    }

    /// The range against the obvious model: batches of rows (runs of every length,
    /// rows of the other search between), then a pause, then the range is the
    /// complemented minimum start and the maximum end over this search's non-empty
    /// runs; then a shift of a few cycles takes the next lane's values at once.
    #[test]
    fn takes_the_lowest_start_and_highest_end_of_its_searchs_runs() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut r = KeyRange::default();
        r.connect_all();
        // (nfirst, end) as the model has them: the chain's identity to start with.
        let (mut nfirst, mut end) = (0u32, 0u32);
        let (mut extended, mut empty_skipped) = (0, 0);
        for batch in 0..300 {
            let rows: Vec<(u32, u32, bool)> = (0..rng.gen_range(1..20))
                .map(|_| {
                    let start = if rng.gen_bool(0.5) { rng.gen_range(0..1 << 31) } else { rng.gen() };
                    let run = match rng.gen_range(0..4) {
                        0 => 0,
                        1 => rng.gen_range(1..10),
                        _ => rng.gen_range(0..=u32::MAX - start),
                    };
                    (start, run, rng.gen_bool(0.6))
                })
                .collect();
            // Row k's run in cycle k, its `load` flag in cycle k + 1.
            for t in 0..rows.len() + SETTLE {
                let (start, run) = rows.get(t).map_or((rng.gen(), rng.gen()), |&(s, l, _)| (s, l));
                r.start.next = u64::from(start).into();
                r.run.next = u64::from(run).into();
                r.load.next = t.checked_sub(1).and_then(|k| rows.get(k)).is_some_and(|row| row.2);
                r.shift.next = false;
                tick(&mut r);
            }
            for &(start, run, mine) in &rows {
                if mine && run > 0 {
                    nfirst = nfirst.max(!start);
                    end = end.max(start.wrapping_add(run));
                    extended += 1;
                } else if mine {
                    empty_skipped += 1;
                }
            }
            let got = (r.nfirst_out.val().to_u64(), r.end_out.val().to_u64());
            assert_eq!(got, (nfirst as u64, end as u64), "batch {batch}: rows {rows:?}");
            if rng.gen_bool(0.5) {
                for _ in 0..rng.gen_range(1..4) {
                    (nfirst, end) = (rng.gen(), rng.gen());
                    r.nfirst_in.next = u64::from(nfirst).into();
                    r.end_in.next = u64::from(end).into();
                    r.shift.next = true;
                    tick(&mut r);
                    let got = (r.nfirst_out.val().to_u64(), r.end_out.val().to_u64());
                    assert_eq!(got, (nfirst as u64, end as u64), "batch {batch}: a shift");
                }
                if rng.gen_bool(0.5) {
                    // The last lane shifts in zero: the range empties.
                    (nfirst, end) = (0, 0);
                    r.nfirst_in.next = 0u64.into();
                    r.end_in.next = 0u64.into();
                    tick(&mut r);
                }
                r.shift.next = false;
            }
        }
        assert!(extended > 500 && empty_skipped > 100, "{extended} runs taken, {empty_skipped} empty ones");
    }
}
