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
/// the grant to its lane (the network sits apart from the lanes: from the comparison
/// straight to the lane was 4.6 ns of routing at ae3ee5f).
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
