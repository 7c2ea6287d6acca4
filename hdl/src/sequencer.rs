//! The engine's sequencer: the FSM that steps a quantum through its phases, its row
//! and wait counters, and the registered copies of its state that steer the rest of
//! the engine.
//!
//! The state is one-hot, a flip-flop per phase (Idle is none of them set), so that
//! each next-state bit is a LUT or two from flip-flops; with the state encoded in five
//! bits the next-state logic was five LUT levels, which the placer spread across the
//! die (docs/engine.md). The engine reads copies of the state
//! bits made from the same next-state signals (`at_*`), so that the state itself stays
//! beside its logic. The test below steps it against the FSM written the obvious way,
//! an encoded state and one `match`.
//!
//! A block of its own so that synthesis keeps it one (`hdl/synth.sh` marks it
//! `keep_hierarchy`): flattened into the engine, the next-state logic shared LUTs with
//! the datapath it steers (the enables of the users-left counter that feeds every
//! lane), the placer put those LUTs near the lanes, and the critical path left the FSM
//! and came back, two wires across the die in one cycle. Here every output leaves a
//! flip-flop, and every input but `start` and the demand stream's
//! `in_valid` is a flip-flop's: a path into or out of this block crosses
//! the die at most once.
//!
//! Owns when the engine moves and the status that follows from it (`busy`, `done`,
//! `error`, `cycles`); the engine owns what it does in each phase, on the registered
//! decodes `at_*` (the state itself does not leave the block). Depends on nothing but
//! the phase latencies of the lanes and the search units, which set its waits, and the
//! device ABI's status codes.

use crate::lane::{LOAD_LATENCY, SEARCH_LATENCY};
use crate::search::{COUNT_LATENCY, PROBE_LATENCY};
use fairshare_abi::status;
use rust_hdl::prelude::*;

/// The engine's phases (see [`crate::engine`]).
#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
pub enum Phase {
    /// Waiting for `start`; the credit port is live once `busy` has fallen (the cycle
    /// after the state returns here), its words two cycles after their row.
    Idle,
    /// Acts on the check of the settings made with `start` (`start_code`): refuses
    /// the quantum (`done` with `error`, two cycles of `busy`) or starts LOAD.
    Begin,
    /// Taking demand beats, one row per cycle.
    LoadRun,
    /// The last rows of LOAD in the lanes' pipelines.
    LoadDrain,
    /// LOAD's totals, key ranges and counts at the warm probes shift out of the lanes.
    LoadReduce,
    /// Totals and the pool size check.
    Plan1,
    /// Supply.
    Plan2,
    /// The searches' targets.
    Plan3,
    /// Targets and errors.
    Plan4,
    /// Search intervals.
    SearchInit,
    /// The probes follow the intervals.
    SearchWait,
    /// Another pass?
    SearchCheck,
    /// Streaming rows through the counters.
    SearchIssue,
    /// The last rows of a pass in the pipelines.
    SearchDrain,
    /// The counts shift out of the lanes.
    SearchReduce,
    /// Counts against the targets.
    SearchUpdate1,
    /// Narrowing the intervals.
    SearchUpdate2,
    /// Slices left at the thresholds; probes become the thresholds.
    FinalStart,
    /// The thresholds reach the lanes.
    FinalWait,
    /// Streaming rows through FINAL (the results start out behind them).
    FinalIssue,
    /// The last rows of FINAL in the pipelines and the results out, until lane 0's
    /// `last_taken` says the last row was taken
    /// ([`crate::result_queue::LAST_TAKEN_DELAY`] cycles after).
    Emit,
}

/// The FSM of an engine whose lanes hold `2^A` rows.
#[derive(LogicBlock)]
pub struct Sequencer<const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse to compute one quantum (taken when not `busy`).
    pub start: Signal<In, Bit>,
    /// The check of the settings taken with `start` (0: good), read in Begin.
    pub start_code: Signal<In, Bits<4>>,
    /// Demand stream valid.
    pub in_valid: Signal<In, Bit>,
    /// The quantum's last result row was taken (lane 0's result queue, a flip-flop,
    /// [`crate::result_queue::LAST_TAKEN_DELAY`] cycles after: the result stream's
    /// handshake does not reach this block).
    pub last_taken: Signal<In, Bit>,
    /// The quantum's last row, `ceil(n / P) - 1` (from the settings taken with
    /// `start`; read in Begin): LOAD ends with the beat of that row.
    pub last_row_in: Signal<In, Bits<A>>,
    /// Each search unit needs another pass.
    pub more_a: Signal<In, Bit>,
    /// See `more_a`.
    pub more_b: Signal<In, Bit>,
    /// Each search unit's first pass starts warm (its counts may be LOAD's): with
    /// `more_*`, whether the first pass streams the rows.
    pub warm_a: Signal<In, Bit>,
    /// See `warm_a`.
    pub warm_b: Signal<In, Bit>,
    /// The capacity check refused the quantum (final from Plan2 on).
    pub refused: Signal<In, Bit>,
    /// The lanes reported bad input (final from Plan1 on).
    pub lane_errors: Signal<In, Bits<2>>,
    /// Either search needs another pass (registered `more_a | more_b`; valid in
    /// SearchCheck: the search units' `more` is valid two cycles after an interval
    /// changes, this flag three, SearchCheck comes after four).
    pub more_any: Signal<Out, Bit>,
    /// A quantum is in progress, until the cycle after the state returns to Idle (see
    /// the engine's `busy`).
    pub busy: Signal<Out, Bit>,
    /// The last quantum finished; cleared by `start`.
    pub done: Signal<Out, Bit>,
    /// Error code of the last quantum: the settings' check, or (in Plan4) refused for
    /// its capacity, a lane's bad demand or credit.
    pub error: Signal<Out, Bits<4>>,
    /// Cycles from `start` to the end of the last quantum.
    pub cycles: Signal<Out, Bits<32>>,
    /// The state is Idle: the engine takes the settings and checks them in every idle
    /// cycle (those of the cycle with `start` are kept).
    pub at_idle: Signal<Out, Bit>,
    /// `at_idle` again, from a register of its own: the settings' enables (about a
    /// hundred flip-flops placed among the lanes they feed; from `at_idle`'s register
    /// the enable crossed the die, 7.7 ns at 81ff025).
    pub take_settings: Signal<Out, Bit>,
    /// Begin and LoadRun again, from registers of their own, for the engine's count of
    /// the users still to come (`left`: set in Begin, counted down as LoadRun takes
    /// beats): that register sits among the lanes it gates, and its enable, a LUT of
    /// `at_begin`'s and `at_load_run`'s registers and `in_valid`, was placed with them across the die
    /// (7.7 ns of wire at c918f96).
    pub start_left: Signal<Out, Bit>,
    /// See `start_left`.
    pub count_left: Signal<Out, Bit>,
    /// Registered decodes of the state (computed from the next state): the state is
    /// LoadRun (the demand stream's `in_ready`), a row enters the lanes in SEARCH or
    /// FINAL, FINAL's rows enter, the lanes' counters restart, the lanes' sums shift,
    /// the engine's sums clear (Begin, SearchIssue: they hold LOAD's counts until a pass
    /// streams), its key ranges clear (Begin), results are shown.
    pub at_load_run: Signal<Out, Bit>,
    /// See `at_load_run`.
    pub at_issue: Signal<Out, Bit>,
    /// See `at_load_run`.
    pub at_final_issue: Signal<Out, Bit>,
    /// See `at_load_run`.
    pub at_restart: Signal<Out, Bit>,
    /// See `at_load_run`.
    pub at_reduce: Signal<Out, Bit>,
    /// See `at_load_run`.
    pub at_clear: Signal<Out, Bit>,
    /// See `at_load_run`.
    pub at_begin: Signal<Out, Bit>,
    /// Registered decodes for the two search units (far apart on the die): their
    /// targets load (Plan4), their intervals start (SearchInit), they check for another
    /// pass (SearchCheck), and the narrowing's two cycles (SearchUpdate1, 2).
    pub at_load_target: Signal<Out, Bit>,
    /// See `at_load_target`.
    pub at_search_init: Signal<Out, Bit>,
    /// See `at_load_target`.
    pub at_search_check: Signal<Out, Bit>,
    /// See `at_load_target`.
    pub at_update1: Signal<Out, Bit>,
    /// See `at_load_target`.
    pub at_update2: Signal<Out, Bit>,
    /// Registered decodes for the engine's registers that change once per phase: the
    /// sums are taken (Plan1), the supply (Plan2) and the searches' targets (Plan3) are
    /// computed, FINAL's rests are loaded (FinalStart).
    /// Decoded from the state in the engine, one LUT would serve registers on both sides
    /// of the die, a wire longer than a cycle allows.
    pub at_plan1: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_plan2: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_plan3: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_final_start: Signal<Out, Bit>,
    /// The state, one-hot: one flip-flop per phase but Idle (`is_active` clear), so
    /// that each next-state bit is a LUT or two from flip-flops (a 5-bit encoded state
    /// takes five LUT levels, which the placer spreads across the die). These
    /// drive only the next-state logic and the status beside them; the engine reads
    /// the copies below (`*_r`), which `hdl/synth.sh` keeps from being merged with
    /// them.
    is_active: DFF<Bit>,
    is_begin: DFF<Bit>,
    is_load_run: DFF<Bit>,
    is_load_drain: DFF<Bit>,
    is_load_reduce: DFF<Bit>,
    is_plan1: DFF<Bit>,
    is_plan2: DFF<Bit>,
    is_plan3: DFF<Bit>,
    is_plan4: DFF<Bit>,
    is_search_init: DFF<Bit>,
    is_search_wait: DFF<Bit>,
    is_search_check: DFF<Bit>,
    is_search_issue: DFF<Bit>,
    is_search_drain: DFF<Bit>,
    is_search_reduce: DFF<Bit>,
    is_update1: DFF<Bit>,
    is_update2: DFF<Bit>,
    is_final_start: DFF<Bit>,
    is_final_wait: DFF<Bit>,
    is_final_issue: DFF<Bit>,
    is_emit: DFF<Bit>,
    /// The quantum's status.
    status: Status,
    /// The engine's copies of the state.
    decodes: Decodes,
    /// The phase as a name, for waveforms.
    trace: PhaseTrace,
    row: DFF<Bits<A>>,
    last_row: DFF<Bits<A>>,
    countdown: DFF<Bits<8>>,
    countdown_zero: DFF<Bit>,
    /// The row streamed now is the last of the quantum.
    row_last_r: DFF<Bit>,
    more_r: DFF<Bit>,
    /// The first pass's counts are LOAD's: every search that needs a pass starts it
    /// warm (registered `(!more_a | warm_a) & (!more_b | warm_b)`, valid with `more_r`).
    loaded_r: DFF<Bit>,
    /// The next SearchCheck is the quantum's first (from SearchInit on).
    first_r: DFF<Bit>,
    /// PLAN stops the quantum: refused, or bad input (final before Plan4 reads it).
    stop_r: DFF<Bit>,
    /// The next state, one bit per phase (`nx_active`: not Idle).
    nx_active: Signal<Local, Bit>,
    nx_begin: Signal<Local, Bit>,
    nx_load_run: Signal<Local, Bit>,
    nx_load_drain: Signal<Local, Bit>,
    nx_load_reduce: Signal<Local, Bit>,
    nx_plan1: Signal<Local, Bit>,
    nx_plan2: Signal<Local, Bit>,
    nx_plan3: Signal<Local, Bit>,
    nx_plan4: Signal<Local, Bit>,
    nx_search_init: Signal<Local, Bit>,
    nx_search_wait: Signal<Local, Bit>,
    nx_search_check: Signal<Local, Bit>,
    nx_search_issue: Signal<Local, Bit>,
    nx_search_drain: Signal<Local, Bit>,
    nx_search_reduce: Signal<Local, Bit>,
    nx_update1: Signal<Local, Bit>,
    nx_update2: Signal<Local, Bit>,
    nx_final_start: Signal<Local, Bit>,
    nx_final_wait: Signal<Local, Bit>,
    nx_final_issue: Signal<Local, Bit>,
    nx_emit: Signal<Local, Bit>,
    countdown_next: Signal<Local, Bits<8>>,
    /// SearchCheck skips the rows of the first pass (see `loaded_r`).
    skip: Signal<Local, Bit>,
    row_next: Signal<Local, Bits<A>>,
    taken: Signal<Local, Bit>,
    idle_start: Signal<Local, Bit>,
    refuse: Signal<Local, Bit>,
    finish: Signal<Local, Bit>,
    reduce_wait: Constant<Bits<8>>,
    search_reduce_wait: Constant<Bits<8>>,
    load_wait: Constant<Bits<8>>,
    search_wait: Constant<Bits<8>>,
    probe_wait: Constant<Bits<8>>,
}

impl<const A: usize> Sequencer<A> {
    /// The sequencer of an engine of `lanes` lanes (the reductions take `lanes` cycles,
    /// and [`crate::reduce::LATENCY`] more for the engine's accumulators).
    pub fn new(lanes: usize) -> Self {
        Sequencer {
            clock: Default::default(),
            start: Default::default(),
            start_code: Default::default(),
            in_valid: Default::default(),
            last_taken: Default::default(),
            last_row_in: Default::default(),
            more_a: Default::default(),
            more_b: Default::default(),
            warm_a: Default::default(),
            warm_b: Default::default(),
            refused: Default::default(),
            lane_errors: Default::default(),
            more_any: Default::default(),
            busy: Default::default(),
            done: Default::default(),
            error: Default::default(),
            cycles: Default::default(),
            at_idle: Default::default(),
            take_settings: Default::default(),
            start_left: Default::default(),
            count_left: Default::default(),
            at_load_run: Default::default(),
            at_issue: Default::default(),
            at_final_issue: Default::default(),
            at_restart: Default::default(),
            at_reduce: Default::default(),
            at_clear: Default::default(),
            at_begin: Default::default(),
            at_load_target: Default::default(),
            at_search_init: Default::default(),
            at_search_check: Default::default(),
            at_update1: Default::default(),
            at_update2: Default::default(),
            at_plan1: Default::default(),
            at_plan2: Default::default(),
            at_plan3: Default::default(),
            at_final_start: Default::default(),
            is_active: Default::default(),
            is_begin: Default::default(),
            is_load_run: Default::default(),
            is_load_drain: Default::default(),
            is_load_reduce: Default::default(),
            is_plan1: Default::default(),
            is_plan2: Default::default(),
            is_plan3: Default::default(),
            is_plan4: Default::default(),
            is_search_init: Default::default(),
            is_search_wait: Default::default(),
            is_search_check: Default::default(),
            is_search_issue: Default::default(),
            is_search_drain: Default::default(),
            is_search_reduce: Default::default(),
            is_update1: Default::default(),
            is_update2: Default::default(),
            is_final_start: Default::default(),
            is_final_wait: Default::default(),
            is_final_issue: Default::default(),
            is_emit: Default::default(),
            status: Default::default(),
            decodes: Default::default(),
            trace: Default::default(),
            row: Default::default(),
            last_row: Default::default(),
            countdown: Default::default(),
            countdown_zero: Default::default(),
            row_last_r: Default::default(),
            more_r: Default::default(),
            loaded_r: Default::default(),
            first_r: Default::default(),
            stop_r: Default::default(),
            nx_active: Default::default(),
            nx_begin: Default::default(),
            nx_load_run: Default::default(),
            nx_load_drain: Default::default(),
            nx_load_reduce: Default::default(),
            nx_plan1: Default::default(),
            nx_plan2: Default::default(),
            nx_plan3: Default::default(),
            nx_plan4: Default::default(),
            nx_search_init: Default::default(),
            nx_search_wait: Default::default(),
            nx_search_check: Default::default(),
            nx_search_issue: Default::default(),
            nx_search_drain: Default::default(),
            nx_search_reduce: Default::default(),
            nx_update1: Default::default(),
            nx_update2: Default::default(),
            nx_final_start: Default::default(),
            nx_final_wait: Default::default(),
            nx_final_issue: Default::default(),
            nx_emit: Default::default(),
            countdown_next: Default::default(),
            skip: Default::default(),
            row_next: Default::default(),
            taken: Default::default(),
            idle_start: Default::default(),
            refuse: Default::default(),
            finish: Default::default(),
            reduce_wait: Constant::new(Bits::<8>::from((lanes + crate::reduce::LATENCY) as u64)),
            search_reduce_wait: Constant::new(Bits::<8>::from((lanes + crate::reduce::LATENCY + COUNT_LATENCY) as u64)),
            load_wait: Constant::new(Bits::<8>::from(LOAD_LATENCY as u64 - 1)),
            search_wait: Constant::new(Bits::<8>::from(SEARCH_LATENCY as u64 - 2)),
            probe_wait: Constant::new(Bits::<8>::from(PROBE_LATENCY as u64 - 2)),
        }
    }
}

impl<const A: usize> Logic for Sequencer<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            is_active,
            is_begin,
            is_load_run,
            is_load_drain,
            is_load_reduce,
            is_plan1,
            is_plan2,
            is_plan3,
            is_plan4,
            is_search_init,
            is_search_wait,
            is_search_check,
            is_search_issue,
            is_search_drain,
            is_search_reduce,
            is_update1,
            is_update2,
            is_final_start,
            is_final_wait,
            is_final_issue,
            is_emit,
            row,
            last_row,
            countdown,
            countdown_zero,
            row_last_r,
            more_r,
            loaded_r,
            first_r,
            stop_r
        );
        self.taken.next = self.is_load_run.q.val() & self.in_valid.val();
        // The status's events, on the state bits beside them: `start` while not busy,
        // Begin refuses bad settings, Plan4 stops a refused or bad quantum, Emit sees
        // the last row taken.
        self.idle_start.next = !self.status.busy.val() & self.start.val();
        self.refuse.next = self.is_begin.q.val() & (self.start_code.val() != 0);
        self.finish.next = self.refuse.val()
            | (self.is_plan4.q.val() & self.stop_r.q.val())
            | (self.is_emit.q.val() & self.last_taken.val());
        // The next state: each bit is where it comes from and whether it stays.
        self.nx_active.next = self.idle_start.val() | (self.is_active.q.val() & !self.finish.val());
        self.nx_begin.next = self.idle_start.val();
        self.nx_load_run.next = (self.is_begin.q.val() & (self.start_code.val() == 0))
            | (self.is_load_run.q.val() & !(self.taken.val() & self.row_last_r.q.val()));
        self.nx_load_drain.next = (self.is_load_run.q.val() & self.taken.val() & self.row_last_r.q.val())
            | (self.is_load_drain.q.val() & !self.countdown_zero.q.val());
        self.nx_load_reduce.next = (self.is_load_drain.q.val() & self.countdown_zero.q.val())
            | (self.is_load_reduce.q.val() & !self.countdown_zero.q.val());
        self.nx_plan1.next = self.is_load_reduce.q.val() & self.countdown_zero.q.val();
        self.nx_plan2.next = self.is_plan1.q.val();
        self.nx_plan3.next = self.is_plan2.q.val();
        self.nx_plan4.next = self.is_plan3.q.val();
        self.nx_search_init.next = self.is_plan4.q.val() & !self.stop_r.q.val();
        self.nx_search_wait.next = self.is_search_init.q.val()
            | self.is_update2.q.val()
            | (self.is_search_wait.q.val() & !self.countdown_zero.q.val());
        self.nx_search_check.next = self.is_search_wait.q.val() & self.countdown_zero.q.val();
        // The first pass, where LOAD counted it, goes straight to the narrowing.
        self.skip.next = self.first_r.q.val() & self.loaded_r.q.val();
        self.nx_search_issue.next = (self.is_search_check.q.val() & self.more_r.q.val() & !self.skip.val())
            | (self.is_search_issue.q.val() & !self.row_last_r.q.val());
        self.nx_search_drain.next = (self.is_search_issue.q.val() & self.row_last_r.q.val())
            | (self.is_search_drain.q.val() & !self.countdown_zero.q.val());
        self.nx_search_reduce.next = (self.is_search_drain.q.val() & self.countdown_zero.q.val())
            | (self.is_search_reduce.q.val() & !self.countdown_zero.q.val());
        self.nx_update1.next = (self.is_search_reduce.q.val() & self.countdown_zero.q.val())
            | (self.is_search_check.q.val() & self.more_r.q.val() & self.skip.val());
        self.nx_update2.next = self.is_update1.q.val();
        self.nx_final_start.next = self.is_search_check.q.val() & !self.more_r.q.val();
        self.nx_final_wait.next =
            self.is_final_start.q.val() | (self.is_final_wait.q.val() & !self.countdown_zero.q.val());
        self.nx_final_issue.next = (self.is_final_wait.q.val() & self.countdown_zero.q.val())
            | (self.is_final_issue.q.val() & !self.row_last_r.q.val());
        self.nx_emit.next =
            (self.is_final_issue.q.val() & self.row_last_r.q.val()) | (self.is_emit.q.val() & !self.last_taken.val());

        // The wait counter counts down to zero and stays there; the phases that wait
        // load it as they are entered.
        self.countdown_next.next = self.countdown.q.val();
        if self.countdown.q.val() != 0 {
            self.countdown_next.next = self.countdown.q.val() - 1;
        }
        if self.is_load_run.q.val() & self.taken.val() & self.row_last_r.q.val() {
            self.countdown_next.next = self.load_wait.val();
        }
        if self.is_load_drain.q.val() & self.countdown_zero.q.val() {
            self.countdown_next.next = self.reduce_wait.val();
        }
        // A search's counts also take COUNT_LATENCY cycles into the search units.
        if self.is_search_drain.q.val() & self.countdown_zero.q.val() {
            self.countdown_next.next = self.search_reduce_wait.val();
        }
        if self.is_search_init.q.val() | self.is_update2.q.val() {
            self.countdown_next.next = self.probe_wait.val();
        }
        if self.is_search_issue.q.val() & self.row_last_r.q.val() {
            self.countdown_next.next = self.search_wait.val();
        }
        if self.is_final_start.q.val() {
            self.countdown_next.next = 1.into();
        }
        // The row: from 0 in Begin and SearchCheck, one on per beat taken in LoadRun,
        // per cycle in SearchIssue and FinalIssue; back to 0 after the last of LOAD,
        // SEARCH and FINAL (the lanes count the result rows themselves).
        self.row_next.next = self.row.q.val();
        if (self.is_load_run.q.val() & self.taken.val()) | self.is_search_issue.q.val() | self.is_final_issue.q.val() {
            self.row_next.next = self.row.q.val() + 1;
        }
        if self.is_begin.q.val()
            | self.is_search_check.q.val()
            | (self.is_load_run.q.val() & self.taken.val() & self.row_last_r.q.val())
            | ((self.is_search_issue.q.val() | self.is_final_issue.q.val()) & self.row_last_r.q.val())
        {
            self.row_next.next = 0.into();
        }
        if self.is_begin.q.val() {
            self.last_row.d.next = self.last_row_in.val();
        }

        // The status.
        self.status.clock.next = self.clock.val();
        self.status.start.next = self.start.val();
        self.status.active.next = self.is_active.q.val();
        self.status.refuse.next = self.refuse.val();
        self.status.start_code.next = self.start_code.val();
        self.status.plan4.next = self.is_plan4.q.val();
        self.status.refused.next = self.refused.val();
        self.status.lane_errors.next = self.lane_errors.val();
        self.is_active.d.next = self.nx_active.val();
        self.is_begin.d.next = self.nx_begin.val();
        self.is_load_run.d.next = self.nx_load_run.val();
        self.is_load_drain.d.next = self.nx_load_drain.val();
        self.is_load_reduce.d.next = self.nx_load_reduce.val();
        self.is_plan1.d.next = self.nx_plan1.val();
        self.is_plan2.d.next = self.nx_plan2.val();
        self.is_plan3.d.next = self.nx_plan3.val();
        self.is_plan4.d.next = self.nx_plan4.val();
        self.is_search_init.d.next = self.nx_search_init.val();
        self.is_search_wait.d.next = self.nx_search_wait.val();
        self.is_search_check.d.next = self.nx_search_check.val();
        self.is_search_issue.d.next = self.nx_search_issue.val();
        self.is_search_drain.d.next = self.nx_search_drain.val();
        self.is_search_reduce.d.next = self.nx_search_reduce.val();
        self.is_update1.d.next = self.nx_update1.val();
        self.is_update2.d.next = self.nx_update2.val();
        self.is_final_start.d.next = self.nx_final_start.val();
        self.is_final_wait.d.next = self.nx_final_wait.val();
        self.is_final_issue.d.next = self.nx_final_issue.val();
        self.is_emit.d.next = self.nx_emit.val();
        // The phase's name, for waveforms.
        self.trace.clock.next = self.clock.val();
        self.trace.next[0].next = self.nx_begin.val();
        self.trace.next[1].next = self.nx_load_run.val();
        self.trace.next[2].next = self.nx_load_drain.val();
        self.trace.next[3].next = self.nx_load_reduce.val();
        self.trace.next[4].next = self.nx_plan1.val();
        self.trace.next[5].next = self.nx_plan2.val();
        self.trace.next[6].next = self.nx_plan3.val();
        self.trace.next[7].next = self.nx_plan4.val();
        self.trace.next[8].next = self.nx_search_init.val();
        self.trace.next[9].next = self.nx_search_wait.val();
        self.trace.next[10].next = self.nx_search_check.val();
        self.trace.next[11].next = self.nx_search_issue.val();
        self.trace.next[12].next = self.nx_search_drain.val();
        self.trace.next[13].next = self.nx_search_reduce.val();
        self.trace.next[14].next = self.nx_update1.val();
        self.trace.next[15].next = self.nx_update2.val();
        self.trace.next[16].next = self.nx_final_start.val();
        self.trace.next[17].next = self.nx_final_wait.val();
        self.trace.next[18].next = self.nx_final_issue.val();
        self.trace.next[19].next = self.nx_emit.val();
        self.countdown.d.next = self.countdown_next.val();
        self.countdown_zero.d.next = self.countdown_next.val() == 0;
        self.row.d.next = self.row_next.val();
        // Begin loads `last_row` (row 0 is next); it holds for the quantum.
        self.row_last_r.d.next = self.row_next.val() == self.last_row.q.val();
        if self.is_begin.q.val() {
            self.row_last_r.d.next = self.last_row_in.val() == 0;
        }
        self.more_r.d.next = self.more_a.val() | self.more_b.val();
        self.loaded_r.d.next = (!self.more_a.val() | self.warm_a.val()) & (!self.more_b.val() | self.warm_b.val());
        if self.is_search_init.q.val() {
            self.first_r.d.next = true;
        }
        if self.is_search_check.q.val() {
            self.first_r.d.next = false;
        }
        self.stop_r.d.next = self.refused.val() | (self.lane_errors.val() != 0);
        // The engine's copies of the state.
        self.decodes.clock.next = self.clock.val();
        self.decodes.active.next = self.nx_active.val();
        self.decodes.phase_begin.next = self.nx_begin.val();
        self.decodes.load_run.next = self.nx_load_run.val();
        self.decodes.load_reduce.next = self.nx_load_reduce.val();
        self.decodes.plan1.next = self.nx_plan1.val();
        self.decodes.plan2.next = self.nx_plan2.val();
        self.decodes.plan3.next = self.nx_plan3.val();
        self.decodes.plan4.next = self.nx_plan4.val();
        self.decodes.search_init.next = self.nx_search_init.val();
        self.decodes.search_check.next = self.nx_search_check.val();
        self.decodes.search_issue.next = self.nx_search_issue.val();
        self.decodes.search_reduce.next = self.nx_search_reduce.val();
        self.decodes.update1.next = self.nx_update1.val();
        self.decodes.update2.next = self.nx_update2.val();
        self.decodes.final_start.next = self.nx_final_start.val();
        self.decodes.final_issue.next = self.nx_final_issue.val();

        self.more_any.next = self.more_r.q.val();
        self.busy.next = self.status.busy.val();
        self.done.next = self.status.done.val();
        self.error.next = self.status.error.val();
        self.cycles.next = self.status.cycles.val();
        self.at_idle.next = self.decodes.at_idle.val();
        self.take_settings.next = self.decodes.take_settings.val();
        self.start_left.next = self.decodes.start_left.val();
        self.count_left.next = self.decodes.count_left.val();
        self.at_load_run.next = self.decodes.at_load_run.val();
        self.at_issue.next = self.decodes.at_issue.val();
        self.at_final_issue.next = self.decodes.at_final_issue.val();
        self.at_restart.next = self.decodes.at_restart.val();
        self.at_reduce.next = self.decodes.at_reduce.val();
        self.at_clear.next = self.decodes.at_clear.val();
        self.at_begin.next = self.decodes.at_begin.val();
        self.at_load_target.next = self.decodes.at_load_target.val();
        self.at_search_init.next = self.decodes.at_search_init.val();
        self.at_search_check.next = self.decodes.at_search_check.val();
        self.at_update1.next = self.decodes.at_update1.val();
        self.at_update2.next = self.decodes.at_update2.val();
        self.at_plan1.next = self.decodes.at_plan1.val();
        self.at_plan2.next = self.decodes.at_plan2.val();
        self.at_plan3.next = self.decodes.at_plan3.val();
        self.at_final_start.next = self.decodes.at_final_start.val();
    }
}

/// The quantum's status, beside the FSM: `busy` from `start` to the cycle after the
/// state returns to Idle, `done`, the error code and the cycle count.
#[derive(LogicBlock)]
pub struct Status {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// `start` (taken when not busy).
    pub start: Signal<In, Bit>,
    /// The state is not Idle.
    pub active: Signal<In, Bit>,
    /// Begin refuses the settings (`start_code` is the error).
    pub refuse: Signal<In, Bit>,
    /// The check of the settings.
    pub start_code: Signal<In, Bits<4>>,
    /// The state is Plan4 (`refused` and `lane_errors` are final).
    pub plan4: Signal<In, Bit>,
    /// The capacity check refused the quantum.
    pub refused: Signal<In, Bit>,
    /// The lanes' error bits (bit 1: a credit, else a demand).
    pub lane_errors: Signal<In, Bits<2>>,

    /// See [`Sequencer::busy`].
    pub busy: Signal<Out, Bit>,
    /// See [`Sequencer::done`].
    pub done: Signal<Out, Bit>,
    /// See [`Sequencer::error`].
    pub error: Signal<Out, Bits<4>>,
    /// See [`Sequencer::cycles`].
    pub cycles: Signal<Out, Bits<32>>,
    /// `start` is taken this cycle: a quantum begins. (The sequencer computes its
    /// own copy: an output computed from this block's inputs that fed back into them
    /// would be a combinational loop to Verilator, one `always` per module.)
    begins: Signal<Local, Bit>,
    busy_r: DFF<Bit>,
    done_r: DFF<Bit>,
    error_r: DFF<Bits<4>>,
    cycles_r: DFF<Bits<32>>,
    code_demand: Constant<Bits<4>>,
    code_credit: Constant<Bits<4>>,
    code_capacity: Constant<Bits<4>>,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            clock: Default::default(),
            start: Default::default(),
            active: Default::default(),
            refuse: Default::default(),
            start_code: Default::default(),
            plan4: Default::default(),
            refused: Default::default(),
            lane_errors: Default::default(),
            begins: Default::default(),
            busy: Default::default(),
            done: Default::default(),
            error: Default::default(),
            cycles: Default::default(),
            busy_r: Default::default(),
            done_r: Default::default(),
            error_r: Default::default(),
            cycles_r: Default::default(),
            code_demand: Constant::new(Bits::<4>::from(status::DEMAND as u64)),
            code_credit: Constant::new(Bits::<4>::from(status::CREDIT as u64)),
            code_capacity: Constant::new(Bits::<4>::from(status::CAPACITY as u64)),
        }
    }
}

impl Logic for Status {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy_r, done_r, error_r, cycles_r);
        self.begins.next = !self.busy_r.q.val() & self.start.val();
        // `busy` follows the state a cycle late as it ends: the quantum closes in the
        // cycle after `finish` (busy, the state Idle), so that each lane's copy of
        // `busy`, kept by the same recurrence from registered `at_idle` and `start`
        // (see the engine), falls with it. `start` is ignored while busy.
        self.busy_r.d.next = self.begins.val() | self.active.val();
        if self.busy_r.q.val() {
            self.cycles_r.d.next = self.cycles_r.q.val() + 1;
        }
        if self.busy_r.q.val() & !self.active.val() {
            self.done_r.d.next = true;
        }
        if self.begins.val() {
            self.cycles_r.d.next = 1.into();
            self.done_r.d.next = false;
            self.error_r.d.next = 0.into();
        }
        if self.refuse.val() {
            self.error_r.d.next = self.start_code.val();
        }
        if self.plan4.val() {
            if self.refused.val() {
                self.error_r.d.next = self.code_capacity.val();
            }
            if self.lane_errors.val() != 0 {
                self.error_r.d.next = self.code_demand.val();
                if self.lane_errors.val().get_bit(1) {
                    self.error_r.d.next = self.code_credit.val();
                }
            }
        }
        self.busy.next = self.busy_r.q.val();
        self.done.next = self.done_r.q.val();
        self.error.next = self.error_r.q.val();
        self.cycles.next = self.cycles_r.q.val();
    }
}

/// The engine's copies of the state: each a flip-flop set from the next state, as the
/// state bits are, so that the state itself stays beside its logic (see the module's
/// doc). Inputs: the next state's bits; outputs: [`Sequencer`]'s `at_*`.
#[derive(LogicBlock, Default)]
pub struct Decodes {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The next state is not Idle.
    pub active: Signal<In, Bit>,
    /// The next state is Begin (not `begin`: a Verilog keyword).
    pub phase_begin: Signal<In, Bit>,
    /// LoadRun.
    pub load_run: Signal<In, Bit>,
    /// LoadReduce.
    pub load_reduce: Signal<In, Bit>,
    /// Plan1.
    pub plan1: Signal<In, Bit>,
    /// Plan2.
    pub plan2: Signal<In, Bit>,
    /// Plan3.
    pub plan3: Signal<In, Bit>,
    /// Plan4.
    pub plan4: Signal<In, Bit>,
    /// SearchInit.
    pub search_init: Signal<In, Bit>,
    /// SearchCheck.
    pub search_check: Signal<In, Bit>,
    /// SearchIssue.
    pub search_issue: Signal<In, Bit>,
    /// SearchReduce.
    pub search_reduce: Signal<In, Bit>,
    /// SearchUpdate1.
    pub update1: Signal<In, Bit>,
    /// SearchUpdate2.
    pub update2: Signal<In, Bit>,
    /// FinalStart.
    pub final_start: Signal<In, Bit>,
    /// FinalIssue.
    pub final_issue: Signal<In, Bit>,
    /// See [`Sequencer::at_idle`].
    pub at_idle: Signal<Out, Bit>,
    /// See [`Sequencer::take_settings`].
    pub take_settings: Signal<Out, Bit>,
    /// See [`Sequencer::start_left`].
    pub start_left: Signal<Out, Bit>,
    /// See [`Sequencer::count_left`].
    pub count_left: Signal<Out, Bit>,
    /// See [`Sequencer::at_load_run`].
    pub at_load_run: Signal<Out, Bit>,
    /// See [`Sequencer::at_issue`].
    pub at_issue: Signal<Out, Bit>,
    /// See [`Sequencer::at_final_issue`].
    pub at_final_issue: Signal<Out, Bit>,
    /// See [`Sequencer::at_restart`].
    pub at_restart: Signal<Out, Bit>,
    /// See [`Sequencer::at_reduce`].
    pub at_reduce: Signal<Out, Bit>,
    /// See [`Sequencer::at_clear`].
    pub at_clear: Signal<Out, Bit>,
    /// See [`Sequencer::at_begin`].
    pub at_begin: Signal<Out, Bit>,
    /// See [`Sequencer::at_load_target`].
    pub at_load_target: Signal<Out, Bit>,
    /// See [`Sequencer::at_search_init`].
    pub at_search_init: Signal<Out, Bit>,
    /// See [`Sequencer::at_search_check`].
    pub at_search_check: Signal<Out, Bit>,
    /// See [`Sequencer::at_update1`].
    pub at_update1: Signal<Out, Bit>,
    /// See [`Sequencer::at_update2`].
    pub at_update2: Signal<Out, Bit>,
    /// See [`Sequencer::at_plan1`].
    pub at_plan1: Signal<Out, Bit>,
    /// See [`Sequencer::at_plan2`].
    pub at_plan2: Signal<Out, Bit>,
    /// See [`Sequencer::at_plan3`].
    pub at_plan3: Signal<Out, Bit>,
    /// See [`Sequencer::at_final_start`].
    pub at_final_start: Signal<Out, Bit>,
    /// The state is not Idle (so that `at_idle` is set from reset).
    active_r: DFF<Bit>,
    /// The same, for `take_settings`.
    settings_active_r: DFF<Bit>,
    /// The same, for `start_left` and `count_left`.
    start_left_r: DFF<Bit>,
    count_left_r: DFF<Bit>,
    load_run_r: DFF<Bit>,
    issue_r: DFF<Bit>,
    final_issue_r: DFF<Bit>,
    restart_r: DFF<Bit>,
    reduce_r: DFF<Bit>,
    clear_r: DFF<Bit>,
    begin_r: DFF<Bit>,
    load_target_r: DFF<Bit>,
    search_init_r: DFF<Bit>,
    search_check_r: DFF<Bit>,
    update1_r: DFF<Bit>,
    update2_r: DFF<Bit>,
    plan1_r: DFF<Bit>,
    plan2_r: DFF<Bit>,
    plan3_r: DFF<Bit>,
    final_start_r: DFF<Bit>,
}

impl Logic for Decodes {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            active_r,
            settings_active_r,
            start_left_r,
            count_left_r,
            load_run_r,
            issue_r,
            final_issue_r,
            restart_r,
            reduce_r,
            clear_r,
            begin_r,
            load_target_r,
            search_init_r,
            search_check_r,
            update1_r,
            update2_r,
            plan1_r,
            plan2_r,
            plan3_r,
            final_start_r
        );
        self.active_r.d.next = self.active.val();
        self.settings_active_r.d.next = self.active.val();
        self.start_left_r.d.next = self.phase_begin.val();
        self.count_left_r.d.next = self.load_run.val();
        self.load_run_r.d.next = self.load_run.val();
        self.issue_r.d.next = self.search_issue.val() | self.final_issue.val();
        self.final_issue_r.d.next = self.final_issue.val();
        self.restart_r.d.next = !self.active.val() | self.search_check.val() | self.final_start.val();
        self.reduce_r.d.next = self.load_reduce.val() | self.search_reduce.val();
        self.clear_r.d.next = self.phase_begin.val() | self.search_issue.val();
        self.begin_r.d.next = self.phase_begin.val();
        self.load_target_r.d.next = self.plan4.val();
        self.search_init_r.d.next = self.search_init.val();
        self.search_check_r.d.next = self.search_check.val();
        self.update1_r.d.next = self.update1.val();
        self.update2_r.d.next = self.update2.val();
        self.plan1_r.d.next = self.plan1.val();
        self.plan2_r.d.next = self.plan2.val();
        self.plan3_r.d.next = self.plan3.val();
        self.final_start_r.d.next = self.final_start.val();
        self.at_idle.next = !self.active_r.q.val();
        self.take_settings.next = !self.settings_active_r.q.val();
        self.start_left.next = self.start_left_r.q.val();
        self.count_left.next = self.count_left_r.q.val();
        self.at_load_run.next = self.load_run_r.q.val();
        self.at_issue.next = self.issue_r.q.val();
        self.at_final_issue.next = self.final_issue_r.q.val();
        self.at_restart.next = self.restart_r.q.val();
        self.at_reduce.next = self.reduce_r.q.val();
        self.at_clear.next = self.clear_r.q.val();
        self.at_begin.next = self.begin_r.q.val();
        self.at_load_target.next = self.load_target_r.q.val();
        self.at_search_init.next = self.search_init_r.q.val();
        self.at_search_check.next = self.search_check_r.q.val();
        self.at_update1.next = self.update1_r.q.val();
        self.at_update2.next = self.update2_r.q.val();
        self.at_plan1.next = self.plan1_r.q.val();
        self.at_plan2.next = self.plan2_r.q.val();
        self.at_plan3.next = self.plan3_r.q.val();
        self.at_final_start.next = self.final_start_r.q.val();
    }
}

/// Phases other than Idle.
pub const PHASES: usize = 20;

/// The phase as a name, for waveforms and the test below only (`sequencer.trace.name.q`
/// in a trace): nothing reads it, synthesis removes it.
#[derive(LogicBlock, Default)]
pub struct PhaseTrace {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The next state, one-hot: bit `k` is the `k + 1`-th phase of [`Phase`] (none:
    /// Idle).
    pub next: [Signal<In, Bit>; PHASES],
    /// The phase.
    pub phase: Signal<Out, Phase>,
    name: DFF<Phase>,
}

impl Logic for PhaseTrace {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, name);
        self.name.d.next = Phase::Idle;
        if self.next[0].val() {
            self.name.d.next = Phase::Begin;
        }
        if self.next[1].val() {
            self.name.d.next = Phase::LoadRun;
        }
        if self.next[2].val() {
            self.name.d.next = Phase::LoadDrain;
        }
        if self.next[3].val() {
            self.name.d.next = Phase::LoadReduce;
        }
        if self.next[4].val() {
            self.name.d.next = Phase::Plan1;
        }
        if self.next[5].val() {
            self.name.d.next = Phase::Plan2;
        }
        if self.next[6].val() {
            self.name.d.next = Phase::Plan3;
        }
        if self.next[7].val() {
            self.name.d.next = Phase::Plan4;
        }
        if self.next[8].val() {
            self.name.d.next = Phase::SearchInit;
        }
        if self.next[9].val() {
            self.name.d.next = Phase::SearchWait;
        }
        if self.next[10].val() {
            self.name.d.next = Phase::SearchCheck;
        }
        if self.next[11].val() {
            self.name.d.next = Phase::SearchIssue;
        }
        if self.next[12].val() {
            self.name.d.next = Phase::SearchDrain;
        }
        if self.next[13].val() {
            self.name.d.next = Phase::SearchReduce;
        }
        if self.next[14].val() {
            self.name.d.next = Phase::SearchUpdate1;
        }
        if self.next[15].val() {
            self.name.d.next = Phase::SearchUpdate2;
        }
        if self.next[16].val() {
            self.name.d.next = Phase::FinalStart;
        }
        if self.next[17].val() {
            self.name.d.next = Phase::FinalWait;
        }
        if self.next[18].val() {
            self.name.d.next = Phase::FinalIssue;
        }
        if self.next[19].val() {
            self.name.d.next = Phase::Emit;
        }
        self.phase.next = self.name.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The sequencer's inputs in one cycle.
    #[derive(Clone, Copy, Debug)]
    struct Inputs {
        start: bool,
        start_code: u64,
        in_valid: bool,
        last_taken: bool,
        last_row: u64,
        more_a: bool,
        more_b: bool,
        warm_a: bool,
        warm_b: bool,
        refused: bool,
        lane_errors: u64,
    }

    /// The FSM written the obvious way: an encoded state and one `match`, each
    /// phase naming where it goes, and every registered decode an `==` on the next
    /// state. The block's one-hot state must step exactly like it.
    struct Model {
        phase: Phase,
        row: u64,
        last_row: u64,
        countdown: u64,
        countdown_zero: bool,
        row_last: bool,
        more: bool,
        /// Every search that needs a pass starts it warm (the inputs, registered).
        loaded: bool,
        /// The next SearchCheck is the first since SearchInit.
        first: bool,
        stop: bool,
        busy: bool,
        /// The cycle after the quantum ends: still busy, the state Idle.
        closing: bool,
        done: bool,
        error: u64,
        cycles: u64,
        /// The registered decodes, in the order of `decodes`.
        at: [bool; 20],
    }

    const LANES: usize = 2;
    const ROWS: u64 = 8;

    /// The decodes of a state, in the order `Model::at` and `outputs` list them.
    fn decodes(p: Phase) -> [bool; 20] {
        use Phase::*;
        [
            p == Idle,
            p == Idle,
            p == Begin,
            p == LoadRun,
            p == LoadRun,
            p == SearchIssue || p == FinalIssue,
            p == FinalIssue,
            p == Idle || p == SearchCheck || p == FinalStart,
            p == LoadReduce || p == SearchReduce,
            p == Begin || p == SearchIssue,
            p == Begin,
            p == Plan4,
            p == SearchInit,
            p == SearchCheck,
            p == SearchUpdate1,
            p == SearchUpdate2,
            p == Plan1,
            p == Plan2,
            p == Plan3,
            p == FinalStart,
        ]
    }

    fn outputs(s: &Sequencer<3>) -> [bool; 20] {
        [
            s.at_idle.val(),
            s.take_settings.val(),
            s.start_left.val(),
            s.count_left.val(),
            s.at_load_run.val(),
            s.at_issue.val(),
            s.at_final_issue.val(),
            s.at_restart.val(),
            s.at_reduce.val(),
            s.at_clear.val(),
            s.at_begin.val(),
            s.at_load_target.val(),
            s.at_search_init.val(),
            s.at_search_check.val(),
            s.at_update1.val(),
            s.at_update2.val(),
            s.at_plan1.val(),
            s.at_plan2.val(),
            s.at_plan3.val(),
            s.at_final_start.val(),
        ]
    }

    impl Model {
        fn new() -> Self {
            Model {
                phase: Phase::Idle,
                row: 0,
                last_row: 0,
                countdown: 0,
                countdown_zero: false,
                row_last: false,
                more: false,
                loaded: false,
                first: false,
                stop: false,
                busy: false,
                closing: false,
                done: false,
                error: 0,
                cycles: 0,
                at: decodes(Phase::Idle),
            }
        }

        fn accept(&self, i: &Inputs) -> bool {
            self.phase == Phase::LoadRun && i.in_valid
        }

        /// One clock edge.
        fn step(&mut self, i: &Inputs) {
            use Phase::*;
            let cz = self.countdown_zero;
            let mut next = self.phase;
            let mut countdown = self.countdown.saturating_sub(1);
            let mut row = self.row;
            let mut last_row = self.last_row;
            let (load_wait, reduce_wait) = (LOAD_LATENCY as u64 - 1, (LANES + crate::reduce::LATENCY) as u64);
            let (search_wait, probe_wait) = (SEARCH_LATENCY as u64 - 2, PROBE_LATENCY as u64 - 2);
            let mut finish = false;
            let mut error = self.error;
            match self.phase {
                Idle if i.start && !self.busy => next = Begin,
                Idle => {}
                Begin => {
                    row = 0;
                    last_row = i.last_row;
                    next = if i.start_code != 0 { Idle } else { LoadRun };
                    if i.start_code != 0 {
                        error = i.start_code;
                        finish = true;
                    }
                }
                LoadRun if i.in_valid && self.row == self.last_row => {
                    (row, countdown, next) = (0, load_wait, LoadDrain)
                }
                LoadRun if i.in_valid => row = self.row + 1,
                LoadRun => {}
                LoadDrain if cz => (countdown, next) = (reduce_wait, LoadReduce),
                LoadReduce if cz => next = Plan1,
                LoadDrain | LoadReduce => {}
                Plan1 => next = Plan2,
                Plan2 => next = Plan3,
                Plan3 => next = Plan4,
                Plan4 => {
                    if i.refused {
                        error = status::CAPACITY as u64;
                    }
                    if i.lane_errors != 0 {
                        error = if i.lane_errors & 2 != 0 { status::CREDIT } else { status::DEMAND } as u64;
                    }
                    finish = self.stop;
                    next = if self.stop { Idle } else { SearchInit };
                }
                SearchInit => (countdown, next, self.first) = (probe_wait, SearchWait, true),
                SearchWait if cz => next = SearchCheck,
                SearchWait => {}
                // The first pass with LOAD's counts: straight to the narrowing.
                SearchCheck if self.more && self.first && self.loaded => {
                    (row, next, self.first) = (0, SearchUpdate1, false)
                }
                SearchCheck => (row, next, self.first) = (0, if self.more { SearchIssue } else { FinalStart }, false),
                SearchIssue if self.row_last => (row, countdown, next) = (0, search_wait, SearchDrain),
                FinalIssue if self.row_last => (row, next) = (0, Emit),
                SearchIssue | FinalIssue => row = self.row + 1,
                SearchDrain if cz => (countdown, next) = (reduce_wait + COUNT_LATENCY as u64, SearchReduce),
                SearchReduce if cz => next = SearchUpdate1,
                SearchDrain | SearchReduce => {}
                SearchUpdate1 => next = SearchUpdate2,
                SearchUpdate2 => (countdown, next) = (probe_wait, SearchWait),
                FinalStart => (countdown, next) = (1, FinalWait),
                FinalWait if cz => next = FinalIssue,
                FinalWait => {}
                Emit if i.last_taken => (finish, next) = (true, Idle),
                Emit => {}
            }
            let was_busy = self.busy;
            if was_busy {
                self.cycles += 1;
            }
            if self.closing {
                (self.done, self.busy) = (true, false);
            }
            self.closing = finish;
            if !was_busy && i.start {
                (self.cycles, self.done, self.busy, error) = (1, false, true, 0);
            }
            self.error = error;
            self.row_last = row % ROWS == last_row;
            (self.phase, self.countdown, self.countdown_zero) = (next, countdown, countdown == 0);
            (self.row, self.last_row) = (row % ROWS, last_row);
            self.more = i.more_a || i.more_b;
            self.loaded = (!i.more_a || i.warm_a) && (!i.more_b || i.warm_b);
            self.stop = i.refused || i.lane_errors != 0;
            self.at = decodes(next);
        }
    }

    fn tick(s: &mut Sequencer<3>) {
        s.clock.next = true.into();
        assert!(simulate(s, 1000));
        s.clock.next = false.into();
        assert!(simulate(s, 1000));
    }

    /// The one-hot sequencer against the encoded model under random inputs, every
    /// output in every cycle, until every phase has been visited many times.
    #[test]
    fn one_hot_state_steps_like_the_encoded_fsm() {
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        let mut s = Sequencer::<3>::new(LANES);
        s.connect_all();
        let mut m = Model::new();
        let mut visits = std::collections::HashMap::new();
        let mut lane_busy = false;
        let mut exits = std::collections::HashMap::new();
        for cycle in 0..60_000 {
            let i = Inputs {
                start: rng.gen_bool(0.5),
                start_code: if rng.gen_bool(0.05) { rng.gen_range(1..16) } else { 0 },
                in_valid: rng.gen_bool(0.7),
                last_taken: rng.gen_bool(0.2),
                last_row: if rng.gen_bool(0.5) { 0 } else { rng.gen_range(0..ROWS) },
                more_a: rng.gen_bool(0.3),
                more_b: rng.gen_bool(0.3),
                warm_a: rng.gen_bool(0.5),
                warm_b: rng.gen_bool(0.5),
                refused: rng.gen_bool(0.03),
                lane_errors: if rng.gen_bool(0.03) { rng.gen_range(1..4) } else { 0 },
            };
            s.start.next = i.start;
            s.start_code.next = i.start_code.into();
            s.in_valid.next = i.in_valid;
            s.last_taken.next = i.last_taken;
            s.last_row_in.next = i.last_row.into();
            s.more_a.next = i.more_a;
            s.more_b.next = i.more_b;
            s.warm_a.next = i.warm_a;
            s.warm_b.next = i.warm_b;
            s.refused.next = i.refused;
            s.lane_errors.next = i.lane_errors.into();
            assert!(simulate(&mut s, 1000));
            let ctx = format!("cycle {cycle}, {:?}, inputs {i:?}", m.phase);
            // The engine's accept: the registered `at_load_run` and `in_valid`.
            assert_eq!(s.at_load_run.val() & i.in_valid, m.accept(&i), "accept: {ctx}");
            // A lane's copy of `busy`, from `start` and the registered `at_idle`.
            lane_busy = (!lane_busy & i.start) | !s.at_idle.val();
            tick(&mut s);
            let was = m.phase;
            m.step(&i);
            *visits.entry(format!("{:?}", m.phase)).or_insert(0u32) += 1;
            if was == Phase::SearchCheck {
                *exits.entry(format!("{:?}", m.phase)).or_insert(0u32) += 1;
            }
            assert_eq!(s.trace.phase.val(), m.phase, "phase: {ctx}");
            assert_eq!(outputs(&s), m.at, "decodes: {ctx}");
            assert_eq!(s.more_any.val(), m.more, "more_any: {ctx}");
            assert_eq!(s.busy.val(), m.busy, "busy: {ctx}");
            assert_eq!(lane_busy, m.busy, "a lane's copy of busy: {ctx}");
            assert_eq!(s.done.val(), m.done, "done: {ctx}");
            assert_eq!(s.error.val().to_u64(), m.error, "error: {ctx}");
            assert_eq!(s.cycles.val().to_u64(), m.cycles, "cycles: {ctx}");
        }
        // Every one of the 21 phases, each often enough that its exits were taken.
        assert_eq!(visits.len(), 21, "phases visited: {visits:?}");
        assert!(visits.values().all(|&v| v >= 100), "phases visited: {visits:?}");
        // SearchCheck's three exits: a pass that streams, a first pass of LOAD's counts
        // (straight to the narrowing), FINAL.
        assert_eq!(exits.len(), 3, "SearchCheck's exits: {exits:?}");
        assert!(exits.values().all(|&v| v >= 50), "SearchCheck's exits: {exits:?}");
    }
}
