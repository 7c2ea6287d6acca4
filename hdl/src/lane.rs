//! One lane of the engine: the RAM banks of the users it owns (user `row * P + lane`),
//! the per-user arithmetic of the LOAD pass (guaranteed allocation, donation, the user's
//! run of candidate keys), of the SEARCH passes (keys below the probes) and of the FINAL
//! pass (slices taken below the thresholds, new credits), as a pipeline of one row per
//! cycle in which every stage is at most one carry chain and a few LUTs deep; FINAL's
//! results go out through the lane's [`ResultQueue`] as they are written.
//!
//! Keys are unit-step runs `start, start + 1, ..., start + run - 1`; a search selects
//! the `target` smallest keys, ties to the lowest user index. Karma borrowers have
//! `start = !c1` (so the most credits come first), donors `start = c1`, where `c1` is
//! the balance after the free credits; max-min users have `start = 1`, `run = demand`.
//!
//! Timing, for a row stepped in cycle `t` (its banks are read at the end of `t`): the
//! bank outputs are registered in `t + 1`, LOAD writes its runs in `t + 5`, gives them to
//! its totals then and to its key ranges in `t + 6`, and its counts at the warm probes
//! to its sums in `t + 7`; SEARCH gives its counts to its sums in `t + 4`; the
//! accumulators act on them [`crate::reduce::LATENCY`] cycles later. FINAL
//! presents its threshold flags (`at_a`, `at_b`) in `t + 4`, takes `grant` in
//! [`GRANT_CYCLE`] and writes the credits and allocations in `t + 14`.
//!
//! Sums and key ranges are kept per lane and reduced across the lanes afterwards by a
//! shift chain towards lane 0 (see [`crate::reduce`]), so that no signal crosses more
//! than one lane in a cycle.

use crate::count_lane::{CountLane, PROBES};
use crate::key_range::KeyRange;
use crate::lane_banks::LaneBanks;
use crate::reduce::SatAcc;
use crate::result_queue::ResultQueue;
use crate::run_rule::RunRule;
use crate::tie_break::TieBreak;
use rust_hdl::prelude::*;

/// Modes of the `mode` input: the device ABI's (`fairshare_abi::mode`).
pub use fairshare_abi::mode;

/// Values of the `phase` input: what the rows stepped through the lane are for. One bit
/// per phase (LOAD bit 0, SEARCH bit 1, FINAL bit 2), so that each of the lane's phase
/// flags registers a bit of the input, or a bit and a valid bit, without a decode shared
/// between the lanes.
pub mod phase {
    /// LOAD: compute and store the users' runs.
    pub const LOAD: u64 = 1;
    /// SEARCH: count keys below the probes.
    pub const SEARCH: u64 = 2;
    /// FINAL: compute and store allocations and credits, and send them out.
    pub const FINAL: u64 = 4;
}

/// Cycle (after the row's step) in which LOAD writes the row's run and gives it to the
/// totals (the key ranges take it a cycle later).
const LOAD_WRITE_CYCLE: usize = 5;
/// Cycle (after the row's step) in which LOAD gives the row's counts at the warm probes
/// to the sums: the run of [`LOAD_WRITE_CYCLE`] through the warm count units' two stages.
const LOAD_WARM_CYCLE: usize = LOAD_WRITE_CYCLE + 2;
/// Cycles from a row's step to its last LOAD update (the warm counts).
pub const LOAD_LATENCY: usize = LOAD_WARM_CYCLE + crate::reduce::LATENCY;
/// Cycle (after the row's step) in which SEARCH gives the row's counts to the sums.
const SEARCH_ADD_CYCLE: usize = 4;
/// Cycles from a row's step to its SEARCH update (counts).
pub const SEARCH_LATENCY: usize = SEARCH_ADD_CYCLE + crate::reduce::LATENCY;
/// Cycle (after the row's step) in which FINAL presents `at_a` and `at_b`.
pub const AT_CYCLE: usize = 4;
/// Cycle (after the row's step) in which FINAL takes `grant`.
pub const GRANT_CYCLE: usize = AT_CYCLE + crate::grant::LATENCY;
/// Cycles from a row's step to its FINAL writes.
pub const FINAL_LATENCY: usize = GRANT_CYCLE + 1;
/// FINAL's delay line, from the cycle after [`AT_CYCLE`] to [`GRANT_CYCLE`].
pub(crate) const DELAY: usize = GRANT_CYCLE - AT_CYCLE;

/// One lane; `A` address bits per RAM bank (2^A users per lane).
#[derive(LogicBlock)]
pub struct EngineLane<const A: usize> {
    /// Clock of every register and RAM.
    pub clock: Signal<In, Clock>,
    /// Mode (see [`mode`]); held for the whole quantum.
    pub mode: Signal<In, Bits<2>>,
    /// What the rows are for (see [`phase`]); set at least one cycle before a phase's
    /// first step and held until [`FINAL_LATENCY`] cycles after its last (a row's
    /// valid bit runs that long whatever its phase: a SEARCH row still in it when the
    /// phase turns to FINAL would write; the engine's gap between the two is longer).
    pub phase: Signal<In, Bits<3>>,
    /// Fair share `f`; held for the quantum.
    pub fair: Signal<In, Bits<32>>,
    /// Guaranteed share `g`; held for the quantum.
    pub guaranteed: Signal<In, Bits<32>>,
    /// Free credits per quantum, `f - g`; held for the quantum.
    pub free: Signal<In, Bits<32>>,
    /// The engine's `start` and whether its sequencer is past Idle (its registered
    /// `at_idle`, inverted): the lane keeps its own copy of the engine's `busy` from
    /// them by the sequencer's recurrence, `busy' = (!busy & start) | active`, so that
    /// no one register drives every lane's credit port. While not busy, the credit
    /// port owns the credit bank.
    pub start: Signal<In, Bit>,
    /// See `start`.
    pub active: Signal<In, Bit>,
    /// Credit port: row read (data two cycles later) and written.
    pub credit_row: Signal<In, Bits<A>>,
    /// Credit port: write `host_credit` to the row.
    pub credit_write: Signal<In, Bit>,
    /// Credit port: the balance written.
    pub host_credit: Signal<In, Bits<32>>,
    /// Rows from 0 again (read and write counters).
    pub restart: Signal<In, Bit>,
    /// A row enters the pipeline: the banks are read at the row counter, which then
    /// advances; in LOAD, `demand_in` is taken.
    pub step: Signal<In, Bit>,
    /// The result stream takes the row at the head of the result queue.
    pub out_ready: Signal<In, Bit>,
    /// The quantum's last row (held for the quantum).
    pub last_row: Signal<In, Bits<A>>,
    /// This lane's demand in the current beat (taken with `step`).
    pub demand_in: Signal<In, Bits<32>>,
    /// LOAD: the lane's user of the current beat exists (taken on `step`; a
    /// registered flag of the engine, so that no lane compares a shared count).
    pub exists: Signal<In, Bit>,
    /// Probes of search A (Karma's borrowers); in LOAD the warm probes
    /// ([`crate::search::SearchUnit::load_probe`]), in FINAL probe 0 is its threshold.
    pub probe_a0: Signal<In, Bits<32>>,
    /// Probe 1 of search A.
    pub probe_a1: Signal<In, Bits<32>>,
    /// Probe 2 of search A.
    pub probe_a2: Signal<In, Bits<32>>,
    /// Probes of search B (donors, or max-min users); in LOAD the warm probes, in FINAL
    /// probe 0 is its threshold.
    pub probe_b0: Signal<In, Bits<32>>,
    /// Probe 1 of search B.
    pub probe_b1: Signal<In, Bits<32>>,
    /// Probe 2 of search B.
    pub probe_b2: Signal<In, Bits<32>>,
    /// FINAL: this lane's user takes one more slice (cycle [`GRANT_CYCLE`]).
    pub grant: Signal<In, Bit>,
    /// Shift the accumulators towards lane 0 in the next cycle (they take the `*_in`
    /// values; registered in the lane, so that no engine signal drives every
    /// accumulator of every lane).
    pub shift: Signal<In, Bit>,
    /// Chain from lane `i + 1`: its sum for probe 0 of A (in LOAD at the warm probes
    /// of [`crate::search::SearchUnit::load_probe`]; so the other sums).
    pub sum_a_in0: Signal<In, Bits<32>>,
    /// Chain: sum for probe 1 of A.
    pub sum_a_in1: Signal<In, Bits<32>>,
    /// Chain: sum for probe 2 of A.
    pub sum_a_in2: Signal<In, Bits<32>>,
    /// Chain: sum for probe 0 of B.
    pub sum_b_in0: Signal<In, Bits<32>>,
    /// Chain: sum for probe 1 of B.
    pub sum_b_in1: Signal<In, Bits<32>>,
    /// Chain: sum for probe 2 of B.
    pub sum_b_in2: Signal<In, Bits<32>>,
    /// Chain (LOAD): the keys of A (candidate slices).
    pub total_a_in: Signal<In, Bits<32>>,
    /// Chain (LOAD): the keys of B.
    pub total_b_in: Signal<In, Bits<32>>,
    /// Chain (LOAD): the complement of the lowest run start of A.
    pub nfirst_a_in: Signal<In, Bits<32>>,
    /// Chain (LOAD): the highest run end of A.
    pub end_a_in: Signal<In, Bits<32>>,
    /// Chain (LOAD): the complement of the lowest run start of B.
    pub nfirst_b_in: Signal<In, Bits<32>>,
    /// Chain (LOAD): the highest run end of B.
    pub end_b_in: Signal<In, Bits<32>>,
    /// Chain (LOAD): error bits, bit 0 a demand at or above 2^31, bit 1 a balance at or
    /// above 2^31 or one that could reach it this quantum (Karma).
    pub err_in: Signal<In, Bits<2>>,
    /// Chain out: this lane's sum for probe 0 of A.
    pub sum_a_out0: Signal<Out, Bits<32>>,
    /// Chain out: probe 1 of A.
    pub sum_a_out1: Signal<Out, Bits<32>>,
    /// Chain out: probe 2 of A.
    pub sum_a_out2: Signal<Out, Bits<32>>,
    /// Chain out: probe 0 of B.
    pub sum_b_out0: Signal<Out, Bits<32>>,
    /// Chain out: probe 1 of B.
    pub sum_b_out1: Signal<Out, Bits<32>>,
    /// Chain out: probe 2 of B.
    pub sum_b_out2: Signal<Out, Bits<32>>,
    /// Chain out: the keys of A.
    pub total_a_out: Signal<Out, Bits<32>>,
    /// Chain out: the keys of B.
    pub total_b_out: Signal<Out, Bits<32>>,
    /// Chain out: complement of the lowest start of A.
    pub nfirst_a_out: Signal<Out, Bits<32>>,
    /// Chain out: highest end of A.
    pub end_a_out: Signal<Out, Bits<32>>,
    /// Chain out: complement of the lowest start of B.
    pub nfirst_b_out: Signal<Out, Bits<32>>,
    /// Chain out: highest end of B.
    pub end_b_out: Signal<Out, Bits<32>>,
    /// Chain out: error bits.
    pub err_out: Signal<Out, Bits<2>>,
    /// FINAL: this lane's key is at threshold A (cycle [`AT_CYCLE`]).
    pub at_a: Signal<Out, Bit>,
    /// FINAL: this lane's key is at threshold B (cycle [`AT_CYCLE`]).
    pub at_b: Signal<Out, Bit>,
    /// A result row is at the head of the queue (see [`ResultQueue`]).
    pub result_valid: Signal<Out, Bit>,
    /// The last row was taken [`crate::result_queue::LAST_TAKEN_DELAY`] cycles before
    /// (a flip-flop).
    pub result_last_taken: Signal<Out, Bit>,
    /// The head's allocation.
    pub result_alloc: Signal<Out, Bits<32>>,
    /// The head's balance.
    pub result_credit: Signal<Out, Bits<32>>,
    /// The credit bank at `credit_row` of two cycles before, while the engine is not busy
    /// (the credit port).
    pub credit: Signal<Out, Bits<32>>,
    banks: LaneBanks<A>,
    queue: ResultQueue<A>,
    last_l: DFF<Bits<A>>,
    row_ctr: DFF<Bits<A>>,
    wr_ctr: DFF<Bits<A>>,
    valid: DFF<Bits<16>>,
    // The lane's own copies of the engine's busy, settings, probes and row controls: every
    // lane registers them so that no engine register drives all the lanes (hdl/synth.sh
    // keeps these registers by name, and `borrower2`, or Yosys would merge the copies).
    busy_l: DFF<Bit>,
    mode_l: DFF<Bits<2>>,
    shift_l: DFF<Bit>,
    fair_l: DFF<Bits<32>>,
    g_l: DFF<Bits<32>>,
    free_l: DFF<Bits<32>>,
    pa: [DFF<Bits<32>>; PROBES],
    pb: [DFF<Bits<32>>; PROBES],
    demand: DFF<Bits<32>>,
    ok1: DFF<Bit>,
    // Stage 2: the kind and the beat, registered (the 32-bit banks' words come out of
    // their blocks' own output registers in this stage: `banks.credit` and the others).
    kd2: DFF<Bits<3>>,
    /// The user is a borrower (its kind, decoded from the bank): which probes its
    /// counts take. One copy per count unit, beside it (hdl/synth.sh keeps the copies).
    borrower2: [DFF<Bit>; PROBES],
    dm2: DFF<Bits<32>>,
    ok2: DFF<Bit>,
    // Stage 3.
    c1_3: DFF<Bits<32>>,
    cr3: DFF<Bits<32>>,
    dmg3: DFF<Bits<32>>,
    gmd3: DFF<Bits<32>>,
    dm3: DFF<Bits<32>>,
    bs3: DFF<Bits<32>>,
    kd3: DFF<Bits<3>>,
    /// Bit 0 d < g, 1 d > g, 2 d < f, 3 stored balance >= 2^31, 4 d >= 2^31, 5 user exists.
    fl3: DFF<Bits<6>>,
    // Stage 4.
    c1_4: DFF<Bits<32>>,
    brun4: DFF<Bits<32>>,
    gmd4: DFF<Bits<32>>,
    dm4: DFF<Bits<32>>,
    bs4: DFF<Bits<32>>,
    kd4: DFF<Bits<3>>,
    /// The user's kind and what FINAL does with its count, decoded a stage early (each
    /// drives a 32-bit operand's LUTs; from `kd4` they were one register's fanout
    /// through a decode LUT): a borrower, a donor, its count taken as slices (a Karma
    /// borrower or a max-min user), taken from its credits (a Karma borrower), added to
    /// them (a Karma donor).
    borrower4: DFF<Bit>,
    donor4: DFF<Bit>,
    take4: DFF<Bit>,
    spend4: DFF<Bit>,
    earn4: DFF<Bit>,
    /// The user exists.
    ok4: DFF<Bit>,
    // Stage 5 (LOAD): the user's run, stored and added up.
    nk5: DFF<Bits<2>>,
    ns5: DFF<Bits<32>>,
    nr5: DFF<Bits<32>>,
    nb5: DFF<Bits<32>>,
    ne5: DFF<Bits<2>>,
    ok5: DFF<Bit>,
    err: DFF<Bits<2>>,
    /// Stages 3 and 4 (LOAD): the user's kind, run, base allocation and errors, decided
    /// from the flags and registered, then selected from the words.
    rule: RunRule,
    /// Stages 5 and 6 (LOAD): the key ranges of search A and of search B.
    range_a: KeyRange,
    range_b: KeyRange,
    /// FINAL: the result, delayed until `grant`, and the tie-break slice.
    tie_break: TieBreak,
    count: [CountLane; PROBES],
    /// LOAD (stage 5 on): the user's run counted at its search's probes, which in LOAD
    /// are the warm probes around the last thresholds, so that a first pass that starts
    /// warm need not stream the rows again (see [`crate::search`]): the counts reach the
    /// sums in [`LOAD_WARM_CYCLE`]. Units of their own: a multiplexer in front of the
    /// search's count units would lengthen the path from the banks.
    warm: [CountLane; PROBES],
    /// Which probes the warm counts take (the user is a borrower, from the rule's kind,
    /// stage 5), one copy per unit; the kind of the row in stages 6 and 7.
    wborrower5: [DFF<Bit>; PROBES],
    nk6: DFF<Bits<2>>,
    nk7: DFF<Bits<2>>,
    sum_a: [SatAcc; PROBES],
    sum_b: [SatAcc; PROBES],
    /// LOAD: the keys of each search (A's are the candidate slices).
    total_a: SatAcc,
    total_b: SatAcc,
    /// Bits of `valid` (bit `k`: the row stepped `k + 1` cycles ago) a cycle before
    /// SEARCH's sums, LOAD's writes, totals and key-range flags, LOAD's warm counts, and
    /// FINAL's writes: each of those flags is registered from the phase input and the
    /// valid bit a cycle early, so that it comes from a flip-flop of its own (from one
    /// register of the phase, decoded, they were a fan-out across the lane).
    search_early: Constant<Bits<16>>,
    load_early: Constant<Bits<16>>,
    warm_early: Constant<Bits<16>>,
    final_early: Constant<Bits<16>>,
    mode_karma: Constant<Bits<2>>,
    mode_maxmin: Constant<Bits<2>>,
    karma: Signal<Local, Bit>,
    maxmin: Signal<Local, Bit>,
    /// The phase is LOAD: which counts the sums take (warm or the search's), one copy
    /// per probe's pair of sums (hdl/synth.sh keeps the copies).
    load_sum: [DFF<Bit>; PROBES],
    borrower3: Signal<Local, Bit>,
    donor3: Signal<Local, Bit>,
    reach3: Signal<Local, Bits<32>>,
    /// A SEARCH row in stage 4 (`SEARCH_ADD_CYCLE`): its counts add to the sums.
    search_add: DFF<Bit>,
    /// A LOAD row in stage 5 (`LOAD_WRITE_CYCLE`): its run is written and added up.
    load_write: DFF<Bit>,
    /// A LOAD row in stage 7 (`LOAD_WARM_CYCLE`): its warm counts add to its search's sums.
    warm_add: DFF<Bit>,
    /// A LOAD row in stage 5 (`load_write`) of kind A (1) or B (2): its run adds to
    /// that search's sum, and extends its key ranges if it is not empty.
    load_a5: Signal<Local, Bit>,
    load_b5: Signal<Local, Bit>,
    /// A FINAL row in stage `FINAL_LATENCY`: its results are written.
    final_write: DFF<Bit>,
}

impl<const A: usize> Default for EngineLane<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const A: usize> EngineLane<A> {
    /// A lane in its reset state (every lane is the same; the engine tells each which
    /// of its users exist).
    pub fn new() -> Self {
        EngineLane {
            search_early: Constant::new(Bits::<16>::from(1u64 << (SEARCH_ADD_CYCLE - 2))),
            load_early: Constant::new(Bits::<16>::from(1u64 << (LOAD_WRITE_CYCLE - 2))),
            warm_early: Constant::new(Bits::<16>::from(1u64 << (LOAD_WARM_CYCLE - 2))),
            final_early: Constant::new(Bits::<16>::from(1u64 << (FINAL_LATENCY - 2))),
            mode_karma: Constant::new(Bits::<2>::from(mode::KARMA as u64)),
            mode_maxmin: Constant::new(Bits::<2>::from(mode::MAXMIN as u64)),
            clock: Default::default(),
            mode: Default::default(),
            phase: Default::default(),
            fair: Default::default(),
            guaranteed: Default::default(),
            free: Default::default(),
            start: Default::default(),
            active: Default::default(),
            credit_row: Default::default(),
            credit_write: Default::default(),
            host_credit: Default::default(),
            restart: Default::default(),
            step: Default::default(),
            out_ready: Default::default(),
            last_row: Default::default(),
            demand_in: Default::default(),
            exists: Default::default(),
            probe_a0: Default::default(),
            probe_a1: Default::default(),
            probe_a2: Default::default(),
            probe_b0: Default::default(),
            probe_b1: Default::default(),
            probe_b2: Default::default(),
            grant: Default::default(),
            shift: Default::default(),
            sum_a_in0: Default::default(),
            sum_a_in1: Default::default(),
            sum_a_in2: Default::default(),
            sum_b_in0: Default::default(),
            sum_b_in1: Default::default(),
            sum_b_in2: Default::default(),
            total_a_in: Default::default(),
            total_b_in: Default::default(),
            nfirst_a_in: Default::default(),
            end_a_in: Default::default(),
            nfirst_b_in: Default::default(),
            end_b_in: Default::default(),
            err_in: Default::default(),
            sum_a_out0: Default::default(),
            sum_a_out1: Default::default(),
            sum_a_out2: Default::default(),
            sum_b_out0: Default::default(),
            sum_b_out1: Default::default(),
            sum_b_out2: Default::default(),
            total_a_out: Default::default(),
            total_b_out: Default::default(),
            nfirst_a_out: Default::default(),
            end_a_out: Default::default(),
            nfirst_b_out: Default::default(),
            end_b_out: Default::default(),
            err_out: Default::default(),
            at_a: Default::default(),
            at_b: Default::default(),
            result_valid: Default::default(),
            result_last_taken: Default::default(),
            result_alloc: Default::default(),
            result_credit: Default::default(),
            credit: Default::default(),
            banks: Default::default(),
            queue: Default::default(),
            last_l: Default::default(),
            row_ctr: Default::default(),
            wr_ctr: Default::default(),
            valid: Default::default(),
            busy_l: Default::default(),
            mode_l: Default::default(),
            shift_l: Default::default(),
            fair_l: Default::default(),
            g_l: Default::default(),
            free_l: Default::default(),
            pa: array_init::array_init(|_| Default::default()),
            pb: array_init::array_init(|_| Default::default()),
            demand: Default::default(),
            ok1: Default::default(),
            kd2: Default::default(),
            dm2: Default::default(),
            ok2: Default::default(),
            c1_3: Default::default(),
            cr3: Default::default(),
            dmg3: Default::default(),
            gmd3: Default::default(),
            dm3: Default::default(),
            bs3: Default::default(),
            kd3: Default::default(),
            fl3: Default::default(),
            c1_4: Default::default(),
            brun4: Default::default(),
            gmd4: Default::default(),
            dm4: Default::default(),
            bs4: Default::default(),
            kd4: Default::default(),
            borrower4: Default::default(),
            donor4: Default::default(),
            take4: Default::default(),
            spend4: Default::default(),
            earn4: Default::default(),
            ok4: Default::default(),
            nk5: Default::default(),
            ns5: Default::default(),
            nr5: Default::default(),
            nb5: Default::default(),
            ne5: Default::default(),
            ok5: Default::default(),
            err: Default::default(),
            rule: Default::default(),
            range_a: Default::default(),
            range_b: Default::default(),
            tie_break: Default::default(),
            count: array_init::array_init(|_| Default::default()),
            warm: array_init::array_init(|_| Default::default()),
            wborrower5: array_init::array_init(|_| Default::default()),
            nk6: Default::default(),
            nk7: Default::default(),
            sum_a: array_init::array_init(|_| Default::default()),
            sum_b: array_init::array_init(|_| Default::default()),
            total_a: Default::default(),
            total_b: Default::default(),
            karma: Default::default(),
            maxmin: Default::default(),
            load_sum: array_init::array_init(|_| Default::default()),
            borrower2: array_init::array_init(|_| Default::default()),
            borrower3: Default::default(),
            donor3: Default::default(),
            reach3: Default::default(),
            search_add: Default::default(),
            load_write: Default::default(),
            warm_add: Default::default(),
            load_a5: Default::default(),
            load_b5: Default::default(),
            final_write: Default::default(),
        }
    }
}

impl<const A: usize> Logic for EngineLane<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, row_ctr, wr_ctr, valid, last_l, busy_l, mode_l, shift_l, fair_l, g_l, free_l, demand, ok1,
            kd2, dm2, ok2, c1_3, cr3, dmg3, gmd3, dm3, bs3, kd3, fl3, c1_4, brun4, gmd4, dm4, bs4, kd4, borrower4,
            donor4, take4, spend4, earn4, ok4, nk5, ns5, nr5, nb5, ne5, ok5, err, nk6, nk7
        );
        dff_setup!(self, clock, search_add, load_write, warm_add, final_write);
        self.banks.clock.next = self.clock.val();
        for j in 0..PROBES {
            self.pa[j].clock.next = self.clock.val();
            self.borrower2[j].clock.next = self.clock.val();
            self.pb[j].clock.next = self.clock.val();
            self.count[j].clock.next = self.clock.val();
            self.warm[j].clock.next = self.clock.val();
            self.wborrower5[j].clock.next = self.clock.val();
            self.load_sum[j].clock.next = self.clock.val();
            self.sum_a[j].clock.next = self.clock.val();
            self.sum_b[j].clock.next = self.clock.val();
        }
        self.total_a.clock.next = self.clock.val();
        self.total_b.clock.next = self.clock.val();
        self.range_a.clock.next = self.clock.val();
        self.range_b.clock.next = self.clock.val();
        self.tie_break.clock.next = self.clock.val();

        // The lane's copy of the engine's `busy` (see `start`).
        self.busy_l.d.next = (!self.busy_l.q.val() & self.start.val()) | self.active.val();
        // Local copies of the quantum's settings and the probes (few loads per register).
        self.mode_l.d.next = self.mode.val();
        self.fair_l.d.next = self.fair.val();
        self.g_l.d.next = self.guaranteed.val();
        self.free_l.d.next = self.free.val();
        self.pa[0].d.next = self.probe_a0.val();
        self.pa[1].d.next = self.probe_a1.val();
        self.pa[2].d.next = self.probe_a2.val();
        self.pb[0].d.next = self.probe_b0.val();
        self.pb[1].d.next = self.probe_b1.val();
        self.pb[2].d.next = self.probe_b2.val();
        self.karma.next = self.mode_l.q.val() == self.mode_karma.val();
        self.maxmin.next = self.mode_l.q.val() == self.mode_maxmin.val();
        // The phase's flags (see `search_early`): a row's valid bit moves up one place
        // a cycle, so a valid bit a place early, registered with the phase, is the flag
        // of that row in that phase.
        for j in 0..PROBES {
            self.load_sum[j].d.next = self.phase.val().get_bit(0);
        }
        self.search_add.d.next = self.phase.val().get_bit(1) & ((self.valid.q.val() & self.search_early.val()) != 0);
        self.load_write.d.next = self.phase.val().get_bit(0) & ((self.valid.q.val() & self.load_early.val()) != 0);
        self.warm_add.d.next = self.phase.val().get_bit(0) & ((self.valid.q.val() & self.warm_early.val()) != 0);
        self.final_write.d.next = self.phase.val().get_bit(2) & ((self.valid.q.val() & self.final_early.val()) != 0);

        // Row counters and the valid bits of the pipeline (bit k: the row of stage k + 1).
        if self.restart.val() {
            self.row_ctr.d.next = 0.into();
            self.wr_ctr.d.next = 0.into();
        } else if self.step.val() {
            self.row_ctr.d.next = self.row_ctr.q.val() + 1;
        }
        self.valid.d.next = (self.valid.q.val() << 1).replace_bit(0, self.step.val());
        // The beat, every cycle (the valid bits say which cycles hold a row): no
        // enable with a fan-out across the lanes.
        self.demand.d.next = self.demand_in.val();
        self.ok1.d.next = self.exists.val();
        self.shift_l.d.next = self.shift.val();

        // Banks: read at the row counter (the credit bank at `credit_row` while not busy),
        // written at the write counter.
        self.banks.busy.next = self.busy_l.q.val();
        self.banks.row.next = self.row_ctr.q.val();
        self.banks.write_row.next = self.wr_ctr.q.val();
        self.banks.port_row.next = self.credit_row.val();
        self.banks.port_write.next = self.credit_write.val();
        self.banks.port_credit.next = self.host_credit.val();
        self.credit.next = self.banks.credit.val();
        // Results out: the queue reads the result banks behind FINAL's writes.
        self.last_l.d.next = self.last_row.val();
        self.queue.clock.next = self.clock.val();
        self.queue.restart.next = self.restart.val();
        self.queue.write.next = self.final_write.q.val();
        self.queue.last_row.next = self.last_l.q.val();
        self.queue.alloc_in.next = self.banks.result_alloc.val();
        self.queue.credit_in.next = self.banks.result_credit.val();
        self.queue.ready.next = self.out_ready.val();
        self.banks.result_row.next = self.queue.row.val();
        self.result_valid.next = self.queue.valid.val();
        self.result_last_taken.next = self.queue.last_taken.val();
        self.result_alloc.next = self.queue.alloc.val();
        self.result_credit.next = self.queue.credit.val();

        // Stage 1: the kind and the beat, registered (the 32-bit banks register their
        // own words).
        self.kd2.d.next = self.banks.kind.val();
        for j in 0..PROBES {
            self.borrower2[j].d.next = self.banks.kind.val().get_bits::<2>(0) == 1;
        }
        self.dm2.d.next = self.demand.q.val();
        self.ok2.d.next = self.ok1.q.val();

        // Stage 2. LOAD: the balance after the free credits, and the demand against
        // the shares. SEARCH and FINAL: the user's probes (its search's) minus its start.
        self.c1_3.d.next = self.banks.credit.val() + self.free_l.q.val();
        self.cr3.d.next = self.banks.credit.val();
        self.dmg3.d.next = self.dm2.q.val() - self.g_l.q.val();
        self.gmd3.d.next = self.g_l.q.val() - self.dm2.q.val();
        self.dm3.d.next = self.dm2.q.val();
        self.bs3.d.next = self.banks.base.val();
        self.kd3.d.next = self.kd2.q.val();
        self.fl3.d.next = bits::<6>(0)
            .replace_bit(0, self.dm2.q.val() < self.g_l.q.val())
            .replace_bit(1, self.dm2.q.val() > self.g_l.q.val())
            .replace_bit(2, self.dm2.q.val() < self.fair_l.q.val())
            .replace_bit(3, self.banks.credit.val().get_bit(31))
            .replace_bit(4, self.dm2.q.val().get_bit(31))
            .replace_bit(5, self.ok2.q.val());
        for j in 0..PROBES {
            self.count[j].start.next = self.banks.start.val();
            self.count[j].run.next = self.banks.run.val();
            self.count[j].probe.next = self.pb[j].q.val();
            if self.borrower2[j].q.val() {
                self.count[j].probe.next = self.pa[j].q.val();
            }
        }

        // Stage 3 (LOAD): a borrower's run min(d - g, c1), a donor's reach c1 + (g - d).
        self.c1_4.d.next = self.cr3.q.val();
        if self.karma.val() {
            self.c1_4.d.next = self.c1_3.q.val();
        }
        self.brun4.d.next = self.c1_3.q.val();
        if self.dmg3.q.val() < self.c1_3.q.val() {
            self.brun4.d.next = self.dmg3.q.val();
        }
        self.gmd4.d.next = self.gmd3.q.val();
        self.dm4.d.next = self.dm3.q.val();
        self.bs4.d.next = self.bs3.q.val();
        self.kd4.d.next = self.kd3.q.val();
        self.borrower3.next = self.kd3.q.val().get_bits::<2>(0) == 1;
        self.donor3.next = self.kd3.q.val().get_bits::<2>(0) == 2;
        self.borrower4.d.next = self.borrower3.val();
        self.donor4.d.next = self.donor3.val();
        self.take4.d.next = (self.karma.val() & self.borrower3.val()) | (self.maxmin.val() & self.donor3.val());
        self.spend4.d.next = self.karma.val() & self.borrower3.val();
        self.earn4.d.next = self.karma.val() & self.donor3.val();
        self.ok4.d.next = self.fl3.q.val().get_bit(5);
        // The rule decides from the flags in this stage (and registers its decisions).
        self.reach3.next = self.c1_3.q.val() + self.gmd3.q.val();
        self.rule.clock.next = self.clock.val();
        self.rule.karma.next = self.karma.val();
        self.rule.maxmin.next = self.maxmin.val();
        self.rule.flags.next = self.fl3.q.val();
        self.rule.credit_flags.next = bits::<3>(0)
            .replace_bit(0, self.c1_3.q.val() != 0)
            .replace_bit(1, self.c1_3.q.val().get_bit(31))
            .replace_bit(2, self.reach3.val().get_bit(31));

        // Stage 4 (LOAD): the user's kind, run, base allocation and errors, selected by
        // the rule's decisions; the run is stored (`ns5`, `nr5`) and each search's key
        // range takes its own copy.
        self.rule.c1.next = self.c1_4.q.val();
        self.rule.given.next = self.gmd4.q.val();
        self.rule.wanted.next = self.brun4.q.val();
        self.rule.demand.next = self.dm4.q.val();
        self.rule.guaranteed.next = self.g_l.q.val();
        self.rule.fair.next = self.fair_l.q.val();
        self.nk5.d.next = self.rule.kind.val();
        self.ns5.d.next = self.rule.start.val();
        self.nr5.d.next = self.rule.run.val();
        self.nb5.d.next = self.rule.base.val();
        self.ne5.d.next = self.rule.error.val();
        self.ok5.d.next = self.ok4.q.val();
        for j in 0..PROBES {
            self.wborrower5[j].d.next = self.rule.kind.val() == 1;
        }
        self.range_a.start.next = self.rule.start.val();
        self.range_a.run.next = self.rule.run.val();
        self.range_b.start.next = self.rule.start.val();
        self.range_b.run.next = self.rule.run.val();

        // Stages 5 to 7 (LOAD): the run counted at the warm probes of its search.
        for j in 0..PROBES {
            self.warm[j].start.next = self.ns5.q.val();
            self.warm[j].run.next = self.nr5.q.val();
            self.warm[j].probe.next = self.pb[j].q.val();
            if self.wborrower5[j].q.val() {
                self.warm[j].probe.next = self.pa[j].q.val();
            }
        }
        self.nk6.d.next = self.nk5.q.val();
        self.nk7.d.next = self.nk6.q.val();

        // Stage 4 (FINAL): the keys below the threshold are taken; the tie-break slice
        // comes later (`grant`).
        self.at_a.next = self.count[0].at.val() & self.borrower4.q.val();
        self.at_b.next = self.count[0].at.val() & self.donor4.q.val();
        self.tie_break.base.next = self.bs4.q.val();
        self.tie_break.c1.next = self.c1_4.q.val();
        self.tie_break.count.next = self.count[0].count_tie.val();
        self.tie_break.take.next = self.take4.q.val();
        self.tie_break.earn.next = self.earn4.q.val();
        self.tie_break.spend.next = self.spend4.q.val();
        self.tie_break.exists_in.next = self.kd4.q.val().get_bit(2);
        self.tie_break.grant.next = self.grant.val();

        // SEARCH (cycle 4) and LOAD (cycle 7): sums; LOAD (cycle 5): totals; LOAD (cycle
        // 6): key ranges (each accumulator registers what it is given,
        // `crate::reduce::LATENCY`).
        for j in 0..PROBES {
            self.sum_a[j].x.next = self.count[j].count.val();
            self.sum_b[j].x.next = self.count[j].count.val();
            self.sum_a[j].add.next = self.search_add.q.val() & self.borrower4.q.val();
            self.sum_b[j].add.next = self.search_add.q.val() & self.donor4.q.val();
            if self.load_sum[j].q.val() {
                self.sum_a[j].x.next = self.warm[j].count.val();
                self.sum_b[j].x.next = self.warm[j].count.val();
                self.sum_a[j].add.next = self.warm_add.q.val() & (self.nk7.q.val() == 1);
                self.sum_b[j].add.next = self.warm_add.q.val() & (self.nk7.q.val() == 2);
            }
            self.sum_a[j].shift.next = self.shift_l.q.val();
            self.sum_b[j].shift.next = self.shift_l.q.val();
        }
        self.load_a5.next = self.load_write.q.val() & (self.nk5.q.val() == 1);
        self.load_b5.next = self.load_write.q.val() & (self.nk5.q.val() == 2);
        self.total_a.x.next = self.nr5.q.val();
        self.total_b.x.next = self.nr5.q.val();
        self.total_a.add.next = self.load_a5.val();
        self.total_b.add.next = self.load_b5.val();
        self.total_a.shift.next = self.shift_l.q.val();
        self.total_b.shift.next = self.shift_l.q.val();
        self.total_a.shift_in.next = self.total_a_in.val();
        self.total_b.shift_in.next = self.total_b_in.val();
        self.total_a_out.next = self.total_a.q.val();
        self.total_b_out.next = self.total_b.q.val();
        self.sum_a[0].shift_in.next = self.sum_a_in0.val();
        self.sum_a[1].shift_in.next = self.sum_a_in1.val();
        self.sum_a[2].shift_in.next = self.sum_a_in2.val();
        self.sum_b[0].shift_in.next = self.sum_b_in0.val();
        self.sum_b[1].shift_in.next = self.sum_b_in1.val();
        self.sum_b[2].shift_in.next = self.sum_b_in2.val();
        self.sum_a_out0.next = self.sum_a[0].q.val();
        self.sum_a_out1.next = self.sum_a[1].q.val();
        self.sum_a_out2.next = self.sum_a[2].q.val();
        self.sum_b_out0.next = self.sum_b[0].q.val();
        self.sum_b_out1.next = self.sum_b[1].q.val();
        self.sum_b_out2.next = self.sum_b[2].q.val();
        if self.shift_l.q.val() {
            self.err.d.next = self.err_in.val();
        } else if self.load_write.q.val() {
            self.err.d.next = self.err.q.val() | self.ne5.q.val();
        }
        self.err_out.next = self.err.q.val();
        self.range_a.load.next = self.load_a5.val();
        self.range_b.load.next = self.load_b5.val();
        self.range_a.shift.next = self.shift_l.q.val();
        self.range_b.shift.next = self.shift_l.q.val();
        self.range_a.nfirst_in.next = self.nfirst_a_in.val();
        self.range_a.end_in.next = self.end_a_in.val();
        self.range_b.nfirst_in.next = self.nfirst_b_in.val();
        self.range_b.end_in.next = self.end_b_in.val();
        self.nfirst_a_out.next = self.range_a.nfirst_out.val();
        self.end_a_out.next = self.range_a.end_out.val();
        self.nfirst_b_out.next = self.range_b.nfirst_out.val();
        self.end_b_out.next = self.range_b.end_out.val();

        // Writes: LOAD's runs (cycle 5), FINAL's results (cycle FINAL_LATENCY) to the
        // result banks and the balances to the credit bank, the credit port while not
        // busy. A user past the last has no result: its words in the result banks
        // are whatever FINAL computed for no demand, its balance is not written.
        self.banks.start_in.next = self.ns5.q.val();
        self.banks.run_in.next = self.nr5.q.val();
        self.banks.kind_in.next = bits::<3>(0).replace_bit(2, self.ok5.q.val()) | bit_cast::<3, 2>(self.nk5.q.val());
        self.banks.base_in.next = self.nb5.q.val();
        self.banks.write_run.next = self.load_write.q.val();
        self.banks.write_base.next = self.load_write.q.val();
        self.banks.write_result.next = self.final_write.q.val();
        self.banks.result_alloc_in.next = self.tie_break.alloc.val();
        self.banks.result_credit_in.next = self.tie_break.credit.val();
        if self.load_write.q.val() | self.final_write.q.val() {
            self.wr_ctr.d.next = self.wr_ctr.q.val() + 1;
        }
        self.banks.credit_in.next = self.tie_break.credit.val();
        self.banks.write_credit.next = self.final_write.q.val() & self.tie_break.exists.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_rule::kind;
    use crate::run_rule::tests::{model, User};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Address bits of the lane under test: 8 rows.
    const A: usize = 3;
    const ROWS: usize = 1 << A;

    /// One clock cycle: the inputs settle before the rising edge, as a testbench sets
    /// them between edges (RustHDL moves a change one level per delta step).
    fn tick(l: &mut EngineLane<A>) {
        assert!(simulate(l, 1_000));
        l.clock.next = true.into();
        assert!(simulate(l, 1_000));
        l.clock.next = false.into();
        assert!(simulate(l, 1_000));
    }

    fn word(x: u64) -> Bits<32> {
        x.into()
    }

    /// The lane's sums and key ranges emptied: one shift with the chain's inputs at 0
    /// (as the last lane's are), which the lane registers and acts on a cycle later.
    fn clear(l: &mut EngineLane<A>) {
        l.shift.next = true;
        tick(l);
        l.shift.next = false;
        tick(l);
        tick(l);
    }

    /// Phase `p` from the next row on, and the row counters back to row 0, once the
    /// last phase's rows are [`FINAL_LATENCY`] cycles old (see the `phase` input).
    fn enter(l: &mut EngineLane<A>, p: u64) {
        for _ in 0..FINAL_LATENCY {
            tick(l);
        }
        l.phase.next = p.into();
        tick(l);
        l.restart.next = true;
        tick(l);
        l.restart.next = false;
    }

    /// Keys of a run below the probe `t`, as the count units define them.
    fn below(t: u64, start: u64, run: u64) -> u64 {
        t.saturating_sub(start).min(run)
    }

    /// A probe or threshold around the runs of one search (their starts and ends, a
    /// little outside them, or anywhere for a search without runs).
    fn probe(rng: &mut ChaCha8Rng, runs: &[(u64, u64)]) -> u64 {
        let lo = runs.iter().map(|r| r.0).min().unwrap_or(0).saturating_sub(2);
        let hi = runs.iter().map(|r| r.0 + r.1).max().unwrap_or(64) + 2;
        rng.gen_range(lo..=hi).min(u64::from(u32::MAX))
    }

    /// The whole lane as a pipeline, quantum after quantum on one lane (its banks
    /// carry what the last quantum left): balances written through the credit port,
    /// LOAD (the users' runs summed per search, counted at three probes per search, the
    /// key ranges, the errors), a SEARCH
    /// pass (keys below three probes per search), FINAL (the keys at the thresholds
    /// flagged, random tie-break grants among them, the allocations and balances
    /// written), the results taken from the result queue at random and the balances
    /// through the port, every value against run_rule's model of the spec and the count units'
    /// definition of a key below a probe. Rows are stepped back to back, at the
    /// latencies the lane publishes.
    #[test]
    fn runs_a_quantum_of_eight_users_as_the_spec() {
        let mut rng = ChaCha8Rng::seed_from_u64(38);
        let mut l = EngineLane::<A>::new();
        l.connect_all();
        let mut seen = std::collections::HashSet::new();
        for quantum in 0..300 {
            let m = rng.gen_range(0..3u8);
            let fair = rng.gen_range(1..40u32);
            let guaranteed = rng.gen_range(0..=fair);
            let users: Vec<User> = (0..ROWS)
                .map(|_| {
                    let rare = rng.gen_bool(0.01);
                    User {
                        mode: m,
                        fair,
                        guaranteed,
                        balance: if rare { rng.gen_range((1 << 31) - 50..=(1 << 31)) } else { rng.gen_range(0..60) },
                        demand: if rng.gen_bool(0.01) { 1 << 31 } else { rng.gen_range(0..2 * fair + 5) },
                        exists: rng.gen_bool(0.85),
                    }
                })
                .collect();
            let want: Vec<_> = users.iter().map(model).collect();
            let hw_mode = [mode::KARMA, mode::MAXMIN, mode::STRICT][usize::from(m)];
            l.mode.next = u64::from(hw_mode).into();
            l.fair.next = word(fair.into());
            l.guaranteed.next = word(guaranteed.into());
            l.free.next = word((fair - guaranteed).into());
            l.last_row.next = ((ROWS - 1) as u64).into();

            // Balances through the port while the lane is idle.
            for (row, u) in users.iter().enumerate() {
                l.credit_row.next = (row as u64).into();
                l.host_credit.next = word(u.balance.into());
                l.credit_write.next = true;
                tick(&mut l);
            }
            l.credit_write.next = false;
            l.start.next = true;
            l.active.next = true;
            tick(&mut l);
            l.start.next = false;

            // LOAD, with the probes a warm first pass would take (any probes: LOAD counts
            // each user's run at its search's).
            let runs = |k: u64| -> Vec<(u64, u64)> {
                want.iter().filter(|w| w.0 == k && w.2 != 0).map(|w| (w.1, w.2)).collect()
            };
            let (runs_a, runs_b) = (runs(kind::BORROWER), runs(kind::DONOR));
            let la: [u64; PROBES] = std::array::from_fn(|_| probe(&mut rng, &runs_a));
            let lb: [u64; PROBES] = std::array::from_fn(|_| probe(&mut rng, &runs_b));
            for (port, p) in [&mut l.probe_a0, &mut l.probe_a1, &mut l.probe_a2].into_iter().zip(la) {
                port.next = word(p);
            }
            for (port, p) in [&mut l.probe_b0, &mut l.probe_b1, &mut l.probe_b2].into_iter().zip(lb) {
                port.next = word(p);
            }
            clear(&mut l);
            enter(&mut l, phase::LOAD);
            for u in &users {
                l.step.next = true;
                l.demand_in.next = word(u.demand.into());
                l.exists.next = u.exists;
                tick(&mut l);
            }
            l.step.next = false;
            for _ in 0..LOAD_LATENCY + 2 {
                tick(&mut l);
            }
            let error = want.iter().fold(0, |e, w| e | w.4);
            assert_eq!(l.err_out.val().to_u64(), error, "quantum {quantum}: errors of {users:?}");
            if error != 0 {
                seen.insert(("error", m));
                // The engine refuses the quantum: the rest is never read.
                l.active.next = false;
                tick(&mut l);
                tick(&mut l);
                continue;
            }
            let sum = |k: u64| want.iter().filter(|w| w.0 == k).map(|w| w.2).sum::<u64>();
            let nfirst = |r: &[(u64, u64)]| r.iter().map(|x| !x.0 & 0xffff_ffff).max().unwrap_or(0);
            let end = |r: &[(u64, u64)]| r.iter().map(|x| x.0 + x.1).max().unwrap_or(0);
            let got = (l.total_a_out.val().to_u64(), l.total_b_out.val().to_u64());
            assert_eq!(got, (sum(kind::BORROWER), sum(kind::DONOR)), "quantum {quantum}: LOAD totals of {users:?}");
            let counts = |p: u64, k: u64| want.iter().filter(|w| w.0 == k).map(|w| below(p, w.1, w.2)).sum::<u64>();
            let got_a = [&l.sum_a_out0, &l.sum_a_out1, &l.sum_a_out2].map(|s| s.val().to_u64());
            let got_b = [&l.sum_b_out0, &l.sum_b_out1, &l.sum_b_out2].map(|s| s.val().to_u64());
            assert_eq!(got_a, la.map(|p| counts(p, kind::BORROWER)), "quantum {quantum}: LOAD at {la:?} of {users:?}");
            assert_eq!(got_b, lb.map(|p| counts(p, kind::DONOR)), "quantum {quantum}: LOAD at {lb:?} of {users:?}");
            let got = (l.nfirst_a_out.val().to_u64(), l.end_a_out.val().to_u64());
            assert_eq!(got, (nfirst(&runs_a), end(&runs_a)), "quantum {quantum}: range A of {users:?}");
            let got = (l.nfirst_b_out.val().to_u64(), l.end_b_out.val().to_u64());
            assert_eq!(got, (nfirst(&runs_b), end(&runs_b)), "quantum {quantum}: range B of {users:?}");
            seen.extend(want.iter().map(|w| ("kind", w.0 as u8 * 3 + m)));

            // A SEARCH pass.
            let pa: [u64; PROBES] = std::array::from_fn(|_| probe(&mut rng, &runs_a));
            let pb: [u64; PROBES] = std::array::from_fn(|_| probe(&mut rng, &runs_b));
            for (port, p) in [&mut l.probe_a0, &mut l.probe_a1, &mut l.probe_a2].into_iter().zip(pa) {
                port.next = word(p);
            }
            for (port, p) in [&mut l.probe_b0, &mut l.probe_b1, &mut l.probe_b2].into_iter().zip(pb) {
                port.next = word(p);
            }
            clear(&mut l);
            enter(&mut l, phase::SEARCH);
            for _ in 0..ROWS {
                l.step.next = true;
                tick(&mut l);
            }
            l.step.next = false;
            for _ in 0..SEARCH_LATENCY + 2 {
                tick(&mut l);
            }
            let got_a = [&l.sum_a_out0, &l.sum_a_out1, &l.sum_a_out2].map(|s| s.val().to_u64());
            let got_b = [&l.sum_b_out0, &l.sum_b_out1, &l.sum_b_out2].map(|s| s.val().to_u64());
            assert_eq!(got_a, pa.map(|p| counts(p, kind::BORROWER)), "quantum {quantum}: probes {pa:?} of {users:?}");
            assert_eq!(got_b, pb.map(|p| counts(p, kind::DONOR)), "quantum {quantum}: probes {pb:?} of {users:?}");

            // FINAL: thresholds, the keys at them flagged, grants among those.
            let (ta, tb) = (probe(&mut rng, &runs_a), probe(&mut rng, &runs_b));
            l.probe_a0.next = word(ta);
            l.probe_b0.next = word(tb);
            let threshold = |w: &(u64, u64, u64, u64, u64)| if w.0 == kind::BORROWER { ta } else { tb };
            let at: Vec<(bool, bool)> = want
                .iter()
                .map(|w| {
                    let t = threshold(w);
                    let on = w.2 != 0 && w.1 <= t && t < w.1 + w.2;
                    (on && w.0 == kind::BORROWER, on && w.0 == kind::DONOR)
                })
                .collect();
            let grant: Vec<bool> = at.iter().map(|&(a, b)| (a || b) && rng.gen_bool(0.5)).collect();
            enter(&mut l, phase::FINAL);
            let mut flagged = vec![(false, false); ROWS];
            for t in 0..ROWS + FINAL_LATENCY + 2 {
                l.step.next = t < ROWS;
                l.grant.next = t.checked_sub(GRANT_CYCLE).and_then(|r| grant.get(r)).copied().unwrap_or(false);
                tick(&mut l);
                // After this edge the lane shows cycle t + 1.
                if let Some(f) = (t + 1).checked_sub(AT_CYCLE).and_then(|r| flagged.get_mut(r)) {
                    *f = (l.at_a.val(), l.at_b.val());
                }
            }
            assert_eq!(flagged, at, "quantum {quantum}: thresholds {ta}, {tb} of {users:?}");
            l.grant.next = false;

            // The results: allocations (and balances) from the result queue, balances
            // through the port.
            let results: Vec<(u64, u64)> = users
                .iter()
                .zip(&want)
                .zip(&grant)
                .map(|((u, w), &g)| {
                    let keys = below(threshold(w), w.1, w.2) + u64::from(g);
                    let karma = m == 0;
                    let take = (karma && w.0 == kind::BORROWER) || (m == 1 && w.0 == kind::DONOR);
                    let alloc = w.3 + if take { keys } else { 0 };
                    let c1 = u64::from(u.balance) + if karma { u64::from(fair - guaranteed) } else { 0 };
                    let credit = match (karma, w.0) {
                        _ if !u.exists => u64::from(u.balance),
                        (true, kind::BORROWER) => c1 - keys,
                        (true, kind::DONOR) => c1 + keys,
                        _ => c1,
                    };
                    if g {
                        seen.insert(("grant", w.0 as u8 * 3 + m));
                    }
                    (alloc, credit)
                })
                .collect();
            // The result queue has read what FINAL wrote and holds it; the stream takes
            // the rows at random from here.
            let mut out = Vec::new();
            let mut after_last = 0;
            for _ in 0..20 * ROWS {
                if out.len() == ROWS {
                    after_last += 1;
                    if after_last == crate::result_queue::LAST_TAKEN_DELAY {
                        break;
                    }
                }
                let ready = rng.gen_bool(0.7);
                l.out_ready.next = ready;
                assert!(simulate(&mut l, 1_000));
                // Flagged only LAST_TAKEN_DELAY cycles after the last row is taken (the
                // loop ends then).
                assert!(!l.result_last_taken.val(), "quantum {quantum}: the last row flagged after {} rows", out.len());
                if ready && l.result_valid.val() {
                    out.push((l.result_alloc.val().to_u64(), l.result_credit.val().to_u64()));
                }
                tick(&mut l);
            }
            assert!(l.result_last_taken.val(), "quantum {quantum}: the last row's taking not flagged");
            l.out_ready.next = false;
            let mut got: Vec<u64> = out.iter().map(|r| r.0).collect();
            for ((row, r), u) in out.iter().enumerate().zip(&users) {
                if u.exists {
                    assert_eq!(r.1, results[row].1, "quantum {quantum}: the queue's balance of row {row}, {users:?}");
                }
            }
            l.active.next = false;
            tick(&mut l);
            tick(&mut l);
            for (row, r) in got.iter_mut().enumerate() {
                l.credit_row.next = (row as u64).into();
                for _ in 0..crate::bank::READ_LATENCY {
                    tick(&mut l);
                }
                *r = (*r << 32) | l.credit.val().to_u64();
            }
            let want: Vec<u64> = results.iter().map(|&(a, c)| (a << 32) | c).collect();
            assert_eq!(got, want, "quantum {quantum}: (allocation << 32 | balance) of {users:?}, grants {grant:?}");
        }
        // Every mode, errors, each kind of user in the modes that have it, grants to
        // Karma's borrowers and donors and to max-min's users.
        let b = kind::BORROWER as u8 * 3;
        let d = kind::DONOR as u8 * 3;
        for case in [
            ("error", 0),
            ("error", 1),
            ("kind", b),
            ("kind", d),
            ("kind", d + 1),
            ("kind", 2),
            ("grant", b),
            ("grant", d),
            ("grant", d + 1),
        ] {
            assert!(seen.contains(&case), "never saw {case:?}: {seen:?}");
        }
    }
}
