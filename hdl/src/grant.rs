//! FINAL's tie-break without a chain across the lanes: a key exactly at a threshold
//! takes one of the slices left there (`rest`), lowest user index first. In a row, the
//! user in lane `i` is served iff its key is at the threshold and the users at the
//! threshold up to and including it, counted from the first user of the pool, are at
//! most `rest`. The count within the row is an inclusive prefix count over the lanes
//! (a Kogge-Stone network, one registered level per cycle); the count of the rows
//! before is taken off `rest` by the engine, one row per cycle.

use rust_hdl::prelude::*;

/// Levels of the prefix network: enough for 32 lanes, the most the engine has.
pub const LEVELS: usize = 5;
/// Cycles from `at_a`/`at_b` to `grant`: the level-0 register, the network's levels,
/// one cycle for the engine's update of `rest`, one for the comparison, one to carry
/// the grant to its lane (the network sits apart from the lanes, too far for the
/// comparison's result to reach a lane in the same cycle: docs/engine.md).
pub const LATENCY: usize = LEVELS + 4;

/// One lane's position in the prefix network, for both thresholds (A: Karma's
/// borrowers, B: donors or max-min users).
#[derive(LogicBlock, Default)]
pub struct GrantCell {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// This lane's key is at threshold A (cycle `c`).
    pub at_a: Signal<In, Bit>,
    /// This lane's key is at threshold B (cycle `c`).
    pub at_b: Signal<In, Bit>,
    /// Level 1 input: the level-0 count of lane `i - 1` (0 for lane 0). Search A.
    pub nb_a1: Signal<In, Bits<6>>,
    /// Level 2 input: the level-1 count of lane `i - 2` (0 if none). Search A.
    pub nb_a2: Signal<In, Bits<6>>,
    /// Level 3 input: lane `i - 4`. Search A.
    pub nb_a3: Signal<In, Bits<6>>,
    /// Level 4 input: lane `i - 8`. Search A.
    pub nb_a4: Signal<In, Bits<6>>,
    /// Level 5 input: lane `i - 16`. Search A.
    pub nb_a5: Signal<In, Bits<6>>,
    /// Level 1 input. Search B.
    pub nb_b1: Signal<In, Bits<6>>,
    /// Level 2 input. Search B.
    pub nb_b2: Signal<In, Bits<6>>,
    /// Level 3 input. Search B.
    pub nb_b3: Signal<In, Bits<6>>,
    /// Level 4 input. Search B.
    pub nb_b4: Signal<In, Bits<6>>,
    /// Level 5 input. Search B.
    pub nb_b5: Signal<In, Bits<6>>,
    /// Level-0 count (for lane `i + 1`). Search A.
    pub lv_a0: Signal<Out, Bits<6>>,
    /// Level-1 count (for lane `i + 2`). Search A.
    pub lv_a1: Signal<Out, Bits<6>>,
    /// Level-2 count (for lane `i + 4`). Search A.
    pub lv_a2: Signal<Out, Bits<6>>,
    /// Level-3 count (for lane `i + 8`). Search A.
    pub lv_a3: Signal<Out, Bits<6>>,
    /// Level-4 count (for lane `i + 16`). Search A.
    pub lv_a4: Signal<Out, Bits<6>>,
    /// Level-0 count. Search B.
    pub lv_b0: Signal<Out, Bits<6>>,
    /// Level-1 count. Search B.
    pub lv_b1: Signal<Out, Bits<6>>,
    /// Level-2 count. Search B.
    pub lv_b2: Signal<Out, Bits<6>>,
    /// Level-3 count. Search B.
    pub lv_b3: Signal<Out, Bits<6>>,
    /// Level-4 count. Search B.
    pub lv_b4: Signal<Out, Bits<6>>,
    /// Users at threshold A in lanes `0..=i` of the row (cycle `c + LEVELS + 1`); the
    /// last lane's is the row's total.
    pub incl_a: Signal<Out, Bits<6>>,
    /// Users at threshold B in lanes `0..=i` (cycle `c + LEVELS + 1`).
    pub incl_b: Signal<Out, Bits<6>>,
    /// Slices left at A before this row is at least 64 (cycle `c + LEVELS + 2`).
    pub rest_a_big: Signal<In, Bit>,
    /// Slices left at A before this row, modulo 64 (cycle `c + LEVELS + 2`).
    pub rest_a_low: Signal<In, Bits<6>>,
    /// Slices left at B before this row is at least 64.
    pub rest_b_big: Signal<In, Bit>,
    /// Slices left at B before this row, modulo 64.
    pub rest_b_low: Signal<In, Bits<6>>,
    /// This lane's user takes one more slice (cycle `c + LATENCY`).
    pub grant: Signal<Out, Bit>,
    a0: DFF<Bits<6>>,
    a1: DFF<Bits<6>>,
    a2: DFF<Bits<6>>,
    a3: DFF<Bits<6>>,
    a4: DFF<Bits<6>>,
    a5: DFF<Bits<6>>,
    a6: DFF<Bits<6>>,
    b0: DFF<Bits<6>>,
    b1: DFF<Bits<6>>,
    b2: DFF<Bits<6>>,
    b3: DFF<Bits<6>>,
    b4: DFF<Bits<6>>,
    b5: DFF<Bits<6>>,
    b6: DFF<Bits<6>>,
    /// The at bits, delayed with the counts (bit 0 A, bit 1 B, per level).
    at_d: [DFF<Bits<2>>; 7],
    grant_r: DFF<Bit>,
    /// `grant_r` once more, placed by its lane.
    grant_l: DFF<Bit>,
}

impl Logic for GrantCell {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, a0, a1, a2, a3, a4, a5, a6, b0, b1, b2, b3, b4, b5, b6, grant_r, grant_l);
        for k in 0..7 {
            self.at_d[k].clock.next = self.clock.val();
        }
        self.at_d[0].d.next = self.at_d[0].q.val().replace_bit(0, self.at_a.val()).replace_bit(1, self.at_b.val());
        self.a0.d.next = 0.into();
        self.b0.d.next = 0.into();
        if self.at_a.val() {
            self.a0.d.next = 1.into();
        }
        if self.at_b.val() {
            self.b0.d.next = 1.into();
        }
        for k in 1..7 {
            self.at_d[k].d.next = self.at_d[k - 1].q.val();
        }
        self.a1.d.next = self.a0.q.val() + self.nb_a1.val();
        self.a2.d.next = self.a1.q.val() + self.nb_a2.val();
        self.a3.d.next = self.a2.q.val() + self.nb_a3.val();
        self.a4.d.next = self.a3.q.val() + self.nb_a4.val();
        self.a5.d.next = self.a4.q.val() + self.nb_a5.val();
        self.a6.d.next = self.a5.q.val();
        self.b1.d.next = self.b0.q.val() + self.nb_b1.val();
        self.b2.d.next = self.b1.q.val() + self.nb_b2.val();
        self.b3.d.next = self.b2.q.val() + self.nb_b3.val();
        self.b4.d.next = self.b3.q.val() + self.nb_b4.val();
        self.b5.d.next = self.b4.q.val() + self.nb_b5.val();
        self.b6.d.next = self.b5.q.val();
        self.lv_a0.next = self.a0.q.val();
        self.lv_a1.next = self.a1.q.val();
        self.lv_a2.next = self.a2.q.val();
        self.lv_a3.next = self.a3.q.val();
        self.lv_a4.next = self.a4.q.val();
        self.lv_b0.next = self.b0.q.val();
        self.lv_b1.next = self.b1.q.val();
        self.lv_b2.next = self.b2.q.val();
        self.lv_b3.next = self.b3.q.val();
        self.lv_b4.next = self.b4.q.val();
        self.incl_a.next = self.a5.q.val();
        self.incl_b.next = self.b5.q.val();
        // Served iff at the threshold and the users at it so far (this one included)
        // are at most the slices left before the row.
        self.grant_r.d.next = false;
        if self.at_d[6].q.val().get_bit(0) & (self.rest_a_big.val() | (self.a6.q.val() <= self.rest_a_low.val())) {
            self.grant_r.d.next = true;
        }
        if self.at_d[6].q.val().get_bit(1) & (self.rest_b_big.val() | (self.b6.q.val() <= self.rest_b_low.val())) {
            self.grant_r.d.next = true;
        }
        self.grant_l.d.next = self.grant_r.q.val();
        self.grant.next = self.grant_l.q.val();
    }
}

/// The network of `P` cells and the slices left at each threshold: the engine's
/// FINAL tie-break. `rest_a`/`rest_b` are loaded with the searches' slices to give at
/// their thresholds (`load_rest`), and every issued row's users at a threshold are taken
/// off them as the row leaves the network, so that the next row is compared with what
/// the rows before it left.
#[derive(LogicBlock)]
pub struct GrantNetwork<const P: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Load `rest_a_in` and `rest_b_in` (FINAL starts).
    pub load_rest: Signal<In, Bit>,
    /// Slices to give at threshold A.
    pub rest_a_in: Signal<In, Bits<32>>,
    /// Slices to give at threshold B.
    pub rest_b_in: Signal<In, Bits<32>>,
    /// A row is issued to the lanes (its `at_*` come [`crate::lane::AT_CYCLE`] cycles later).
    pub issue: Signal<In, Bit>,
    /// Each lane's key is at threshold A.
    pub at_a: [Signal<In, Bit>; P],
    /// Each lane's key is at threshold B.
    pub at_b: [Signal<In, Bit>; P],
    /// Each lane's user takes one more slice ([`LATENCY`] cycles after its `at_*`).
    pub grant: [Signal<Out, Bit>; P],
    cells: [GrantCell; P],
    /// Bit `k`: the row issued `k + 1` cycles ago.
    issued: DFF<Bits<16>>,
    rest_a: DFF<Bits<32>>,
    rest_b: DFF<Bits<32>>,
    rest_a_big: DFF<Bit>,
    rest_b_big: DFF<Bit>,
    rest_a_low: DFF<Bits<6>>,
    rest_b_low: DFF<Bits<6>>,
    row_pop_a: Signal<Local, Bits<6>>,
    row_pop_b: Signal<Local, Bits<6>>,
    pop_a: Signal<Local, Bits<32>>,
    pop_b: Signal<Local, Bits<32>>,
    /// The bit of `issued` of the row whose threshold users leave the network.
    rest_update: Constant<Bits<16>>,
}

impl<const P: usize> Default for GrantNetwork<P> {
    fn default() -> Self {
        GrantNetwork {
            clock: Default::default(),
            load_rest: Default::default(),
            rest_a_in: Default::default(),
            rest_b_in: Default::default(),
            issue: Default::default(),
            at_a: array_init::array_init(|_| Default::default()),
            at_b: array_init::array_init(|_| Default::default()),
            grant: array_init::array_init(|_| Default::default()),
            cells: array_init::array_init(|_| Default::default()),
            issued: Default::default(),
            rest_a: Default::default(),
            rest_b: Default::default(),
            rest_a_big: Default::default(),
            rest_b_big: Default::default(),
            rest_a_low: Default::default(),
            rest_b_low: Default::default(),
            row_pop_a: Default::default(),
            row_pop_b: Default::default(),
            pop_a: Default::default(),
            pop_b: Default::default(),
            rest_update: Constant::new(Bits::<16>::from(1u64 << (crate::lane::AT_CYCLE + LEVELS))),
        }
    }
}

impl<const P: usize> Logic for GrantNetwork<P> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, issued, rest_a, rest_b, rest_a_big, rest_b_big, rest_a_low, rest_b_low);
        // The slices left at each threshold, less the users at it in each row that
        // leaves the network (the last cell's inclusive count is the row's).
        self.issued.d.next = (self.issued.q.val() << 1).replace_bit(0, self.issue.val());
        for i in (P - 1)..P {
            self.row_pop_a.next = self.cells[i].incl_a.val();
            self.row_pop_b.next = self.cells[i].incl_b.val();
        }
        self.pop_a.next = bit_cast::<32, 6>(self.row_pop_a.val());
        self.pop_b.next = bit_cast::<32, 6>(self.row_pop_b.val());
        self.rest_a_big.d.next = self.rest_a.q.val() >= 64;
        self.rest_b_big.d.next = self.rest_b.q.val() >= 64;
        self.rest_a_low.d.next = self.rest_a.q.val().get_bits::<6>(0);
        self.rest_b_low.d.next = self.rest_b.q.val().get_bits::<6>(0);
        if (self.issued.q.val() & self.rest_update.val()) != 0 {
            self.rest_a.d.next = 0.into();
            if self.rest_a.q.val() > self.pop_a.val() {
                self.rest_a.d.next = self.rest_a.q.val() - self.pop_a.val();
            }
            self.rest_b.d.next = 0.into();
            if self.rest_b.q.val() > self.pop_b.val() {
                self.rest_b.d.next = self.rest_b.q.val() - self.pop_b.val();
            }
        }
        if self.load_rest.val() {
            self.rest_a.d.next = self.rest_a_in.val();
            self.rest_b.d.next = self.rest_b_in.val();
        }
        for i in 0..P {
            self.cells[i].clock.next = self.clock.val();
            self.cells[i].at_a.next = self.at_a[i].val();
            self.cells[i].at_b.next = self.at_b[i].val();
            self.cells[i].rest_a_big.next = self.rest_a_big.q.val();
            self.cells[i].rest_b_big.next = self.rest_b_big.q.val();
            self.cells[i].rest_a_low.next = self.rest_a_low.q.val();
            self.cells[i].rest_b_low.next = self.rest_b_low.q.val();
            self.cells[i].nb_a1.next = 0.into();
            self.cells[i].nb_a2.next = 0.into();
            self.cells[i].nb_a3.next = 0.into();
            self.cells[i].nb_a4.next = 0.into();
            self.cells[i].nb_a5.next = 0.into();
            self.cells[i].nb_b1.next = 0.into();
            self.cells[i].nb_b2.next = 0.into();
            self.cells[i].nb_b3.next = 0.into();
            self.cells[i].nb_b4.next = 0.into();
            self.cells[i].nb_b5.next = 0.into();
            self.grant[i].next = self.cells[i].grant.val();
        }
        for i in 1..P {
            self.cells[i].nb_a1.next = self.cells[i - 1].lv_a0.val();
            self.cells[i].nb_b1.next = self.cells[i - 1].lv_b0.val();
        }
        for i in 2..P {
            self.cells[i].nb_a2.next = self.cells[i - 2].lv_a1.val();
            self.cells[i].nb_b2.next = self.cells[i - 2].lv_b1.val();
        }
        for i in 4..P {
            self.cells[i].nb_a3.next = self.cells[i - 4].lv_a2.val();
            self.cells[i].nb_b3.next = self.cells[i - 4].lv_b2.val();
        }
        for i in 8..P {
            self.cells[i].nb_a4.next = self.cells[i - 8].lv_a3.val();
            self.cells[i].nb_b4.next = self.cells[i - 8].lv_b3.val();
        }
        for i in 16..P {
            self.cells[i].nb_a5.next = self.cells[i - 16].lv_a4.val();
            self.cells[i].nb_b5.next = self.cells[i - 16].lv_b4.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// One row's inputs: which lanes' keys are at each threshold, and the slices left at
    /// each before the row.
    #[derive(Clone, Debug)]
    struct Row {
        at_a: Vec<bool>,
        at_b: Vec<bool>,
        rest_a: u64,
        rest_b: u64,
    }

    /// What the row's lanes get, the obvious way: a lane at a threshold is served iff
    /// the lanes at it up to and including it number at most the slices left.
    fn model(row: &Row) -> (Vec<bool>, Vec<u64>, Vec<u64>) {
        let prefix = |at: &[bool]| {
            at.iter()
                .scan(0u64, |n, &x| {
                    *n += u64::from(x);
                    Some(*n)
                })
                .collect::<Vec<_>>()
        };
        let (pa, pb) = (prefix(&row.at_a), prefix(&row.at_b));
        let grant = (0..row.at_a.len())
            .map(|i| (row.at_a[i] && pa[i] <= row.rest_a) || (row.at_b[i] && pb[i] <= row.rest_b))
            .collect();
        (grant, pa, pb)
    }

    /// `P` cells wired into the prefix network as the engine wires them, a new row every
    /// cycle; every grant (at `LATENCY`) and every prefix count (at `LEVELS + 1`)
    /// against the model, for 1 to 32 lanes.
    #[test]
    fn a_row_of_cells_serves_the_lowest_lanes_at_each_threshold() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for p in [1usize, 2, 3, 8, 13, 32] {
            let mut cells: Vec<GrantCell> = (0..p).map(|_| GrantCell::default()).collect();
            for c in &mut cells {
                c.connect_all();
            }
            let rows: Vec<Row> = (0..600)
                .map(|_| {
                    let density = rng.gen_range(0.0..1.0);
                    Row {
                        at_a: (0..p).map(|_| rng.gen_bool(density)).collect(),
                        at_b: (0..p).map(|_| rng.gen_bool(density * 0.5)).collect(),
                        rest_a: if rng.gen_bool(0.1) { rng.gen_range(64..200) } else { rng.gen_range(0..=p as u64) },
                        rest_b: rng.gen_range(0..=p as u64 + 2),
                    }
                })
                .collect();
            let (mut granted, mut refused) = (0, 0);
            for t in 0..rows.len() + LATENCY + 1 {
                // Inputs of cycle t: row t's keys, the rest of the row LEVELS + 2 before,
                // each cell's neighbours' counts as they are now.
                let lv: Vec<[[u64; 5]; 2]> = cells
                    .iter()
                    .map(|c| {
                        [
                            [c.lv_a0.val(), c.lv_a1.val(), c.lv_a2.val(), c.lv_a3.val(), c.lv_a4.val()]
                                .map(|b| b.to_u64()),
                            [c.lv_b0.val(), c.lv_b1.val(), c.lv_b2.val(), c.lv_b3.val(), c.lv_b4.val()]
                                .map(|b| b.to_u64()),
                        ]
                    })
                    .collect();
                for (i, c) in cells.iter_mut().enumerate() {
                    let row = rows.get(t);
                    c.at_a.next = row.is_some_and(|r| r.at_a[i]);
                    c.at_b.next = row.is_some_and(|r| r.at_b[i]);
                    if let Some(r) = t.checked_sub(LEVELS + 2).and_then(|k| rows.get(k)) {
                        c.rest_a_big.next = r.rest_a >= 64;
                        c.rest_a_low.next = (r.rest_a % 64).into();
                        c.rest_b_big.next = r.rest_b >= 64;
                        c.rest_b_low.next = (r.rest_b % 64).into();
                    }
                    let nb = |level: usize, side: usize| -> Bits<6> {
                        i.checked_sub(1 << level).map_or(0, |j| lv[j][side][level]).into()
                    };
                    (c.nb_a1.next, c.nb_a2.next, c.nb_a3.next, c.nb_a4.next, c.nb_a5.next) =
                        (nb(0, 0), nb(1, 0), nb(2, 0), nb(3, 0), nb(4, 0));
                    (c.nb_b1.next, c.nb_b2.next, c.nb_b3.next, c.nb_b4.next, c.nb_b5.next) =
                        (nb(0, 1), nb(1, 1), nb(2, 1), nb(3, 1), nb(4, 1));
                    assert!(simulate(c, 1000));
                }
                if let Some(r) = t.checked_sub(LEVELS + 1).and_then(|k| rows.get(k)) {
                    let (_, pa, pb) = model(r);
                    for (i, c) in cells.iter().enumerate() {
                        assert_eq!(
                            (c.incl_a.val().to_u64(), c.incl_b.val().to_u64()),
                            (pa[i], pb[i]),
                            "P {p}, lane {i}, {r:?}"
                        );
                    }
                }
                if let Some(r) = t.checked_sub(LATENCY).and_then(|k| rows.get(k)) {
                    let (want, _, _) = model(r);
                    let got: Vec<bool> = cells.iter().map(|c| c.grant.val()).collect();
                    assert_eq!(got, want, "P {p}, row {}, {r:?}", t - LATENCY);
                    granted += want.iter().filter(|&&g| g).count();
                    refused += (0..p).filter(|&i| (r.at_a[i] || r.at_b[i]) && !want[i]).count();
                }
                for c in &mut cells {
                    c.clock.next = true.into();
                    assert!(simulate(c, 1000));
                    c.clock.next = false.into();
                    assert!(simulate(c, 1000));
                }
            }
            // Both outcomes were seen many times: lanes at a threshold served and refused.
            assert!(granted > 100 && (p < 2 || refused > 100), "P {p}: {granted} granted, {refused} refused");
        }
    }

    /// The network as the engine drives it: the slices left at each threshold loaded,
    /// then rows issued back to back, each row's `at_*` `AT_CYCLE` cycles after its
    /// issue; every grant against the definition of the tie-break over the whole pass:
    /// the users at a threshold, in index order across the rows, take one slice each
    /// while slices are left there.
    #[test]
    fn the_network_gives_the_slices_left_to_the_lowest_indices_across_rows() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut net = GrantNetwork::<5>::default();
        net.connect_all();
        let p = 5;
        let at = crate::lane::AT_CYCLE;
        let (mut granted, mut refused) = (0, 0);
        for pass in 0..200 {
            let rows = rng.gen_range(1..12);
            let density = rng.gen_range(0.0..1.0);
            let at_a: Vec<Vec<bool>> = (0..rows).map(|_| (0..p).map(|_| rng.gen_bool(density)).collect()).collect();
            let at_b: Vec<Vec<bool>> =
                (0..rows).map(|_| (0..p).map(|_| rng.gen_bool(density / 2.0)).collect()).collect();
            let total_a: u64 = at_a.iter().flatten().filter(|&&x| x).count() as u64;
            let rest_a = if rng.gen_bool(0.1) { rng.gen_range(64..100) } else { rng.gen_range(0..=total_a + 1) };
            let rest_b = rng.gen_range(0..=p as u64 * 2);
            // The definition: running counts over the pass in index order.
            let mut want = vec![vec![false; p]; rows];
            let (mut seen_a, mut seen_b) = (0u64, 0u64);
            for r in 0..rows {
                for i in 0..p {
                    seen_a += u64::from(at_a[r][i]);
                    seen_b += u64::from(at_b[r][i]);
                    want[r][i] = (at_a[r][i] && seen_a <= rest_a) || (at_b[r][i] && seen_b <= rest_b);
                }
            }
            // Cycle 0 loads the rests; rows are issued from cycle 2.
            let issue = |t: usize| (2..2 + rows).contains(&t).then(|| t - 2);
            for t in 0..2 + rows + at + LATENCY + 2 {
                net.load_rest.next = t == 0;
                net.rest_a_in.next = rest_a.into();
                net.rest_b_in.next = rest_b.into();
                net.issue.next = issue(t).is_some();
                let row = t.checked_sub(at).and_then(issue);
                for i in 0..p {
                    net.at_a[i].next = row.is_some_and(|r| at_a[r][i]);
                    net.at_b[i].next = row.is_some_and(|r| at_b[r][i]);
                }
                assert!(simulate(&mut net, 1000));
                if let Some(r) = t.checked_sub(at + LATENCY).and_then(issue) {
                    let got: Vec<bool> = (0..p).map(|i| net.grant[i].val()).collect();
                    assert_eq!(got, want[r], "pass {pass}, row {r} of {at_a:?} / {at_b:?}, rests {rest_a} {rest_b}");
                    granted += want[r].iter().filter(|&&g| g).count();
                    refused += (0..p).filter(|&i| (at_a[r][i] || at_b[r][i]) && !want[r][i]).count();
                }
                net.clock.next = true.into();
                assert!(simulate(&mut net, 1000));
                net.clock.next = false.into();
                assert!(simulate(&mut net, 1000));
            }
        }
        assert!(granted > 500 && refused > 500, "{granted} granted, {refused} refused");
    }
}
