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
/// the copies). Stage 2: the clamp. `count` and `at` hold the result in cycle `c + 2`,
/// and `count_tie` the same count from a flip-flop of its own, for the tie-break's
/// adders ([`crate::tie_break`]), while `count` feeds the sums: one register placed
/// between both was the engine's critical path (hdl/synth.sh keeps both registers,
/// which Yosys would otherwise merge).
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
    /// `count` again, for the tie-break (cycle `c + 2`).
    pub count_tie: Signal<Out, Bits<32>>,
    diff: DFF<Bits<32>>,
    below: DFF<Bit>,
    run_r: DFF<Bits<32>>,
    count_r: DFF<Bits<32>>,
    count_t: DFF<Bits<32>>,
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
            count_tie: Default::default(),
            diff: Default::default(),
            below: Default::default(),
            run_r: Default::default(),
            count_r: Default::default(),
            count_t: Default::default(),
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
        dff_setup!(self, clock, diff, below, run_r, count_r, count_t, at_r);
        self.diff.d.next = self.probe.val() - self.start.val();
        self.below.d.next = self.probe.val() < self.start.val();
        self.run_r.d.next = self.run.val();
        self.count_r.d.next = 0.into();
        self.count_t.d.next = 0.into();
        self.at_r.d.next = false;
        if !self.below.q.val() {
            if self.diff.q.val() < self.run_r.q.val() {
                self.count_r.d.next = self.diff.q.val();
                self.count_t.d.next = self.diff.q.val();
                self.at_r.d.next = true;
            } else {
                self.count_r.d.next = self.run_r.q.val();
                self.count_t.d.next = self.run_r.q.val();
            }
        }
        self.count.next = self.count_r.q.val();
        self.count_tie.next = self.count_t.q.val();
        self.at.next = self.at_r.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A new (probe, start, run) every cycle, each result two cycles later against the
    /// definition (`clamp(t - start, 0, run)`, at when `start <= t < start + run`),
    /// with probes at, just below and just above the run's ends.
    #[test]
    fn counts_the_keys_below_the_probe_two_cycles_later() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut c = CountLane::default();
        c.connect_all();
        let rows: Vec<(u64, u64, u64)> = (0..5_000)
            .map(|_| {
                let start = u64::from(rng.gen::<u32>() >> rng.gen_range(0..32));
                let span: u64 = 1 << rng.gen_range(0..32);
                let run = rng.gen_range(0..=(u64::from(u32::MAX) - start).min(span));
                let probe = match rng.gen_range(0..4) {
                    0 => start + rng.gen_range(0..3),
                    1 => (start + run).saturating_sub(1) + rng.gen_range(0..3),
                    2 => start.saturating_sub(1),
                    _ => u64::from(rng.gen::<u32>()),
                };
                (probe.min(u64::from(u32::MAX)), start, run)
            })
            .collect();
        let (mut at, mut inside) = (0, 0);
        for t in 0..rows.len() + 2 {
            if let Some(&(p, s, r)) = rows.get(t) {
                c.probe.next = p.into();
                c.start.next = s.into();
                c.run.next = r.into();
            }
            assert!(simulate(&mut c, 100));
            c.clock.next = true.into();
            assert!(simulate(&mut c, 100));
            c.clock.next = false.into();
            assert!(simulate(&mut c, 100));
            if let Some(&(p, s, r)) = t.checked_sub(1).and_then(|k| rows.get(k)) {
                let want = (p.saturating_sub(s).min(r), s <= p && p < s + r);
                assert_eq!((c.count.val().to_u64(), c.at.val()), want, "probe {p}, run {s} + {r}");
                assert_eq!(c.count_tie.val().to_u64(), want.0, "the tie-break's copy: probe {p}, run {s} + {r}");
                at += usize::from(want.1);
                inside += usize::from(want.0 > 0 && want.0 < r);
            }
        }
        assert!(at > 1_000 && inside > 500, "{at} probes at a key, {inside} inside a run");
    }
}
