//! The engine's sequencer: the FSM that steps a quantum through its phases, its row
//! and wait counters, and the registered decodes of its state that steer the rest of
//! the engine.
//!
//! A block of its own so that synthesis keeps it one (`hdl/synth.sh` marks it
//! `keep_hierarchy`): flattened into the engine, the next-state logic shared LUTs with
//! the datapath it steers (the enables of the users-left counter that feeds every
//! lane), the placer put those LUTs near the lanes, and the critical path left the FSM
//! and came back, two wires across the die in one cycle. Here every output but
//! `accept` leaves a flip-flop, and every input but the stream handshakes (`start`,
//! `in_valid`, `out_ready`) is a flip-flop's: a path into or out of this block crosses
//! the die at most once.
//!
//! Owns when the engine moves and the status that follows from it (`busy`, `done`,
//! `error`, `cycles`); the engine owns what it does in each phase, on the registered
//! decodes `at_*` (the state itself does not leave the block). Depends on nothing but
//! the phase latencies of the lanes and the search units, which set its waits, and the
//! device ABI's status codes.

use crate::lane::{FINAL_LATENCY, LOAD_LATENCY, SEARCH_LATENCY};
use crate::search::PROBE_LATENCY;
use fairshare_abi::status;
use rust_hdl::prelude::*;

/// The engine's phases (see [`crate::engine`]).
#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
pub enum Phase {
    /// Waiting for `start`; the credit port is live.
    Idle,
    /// Acts on the check of the settings made with `start` (`start_code`): refuses
    /// the quantum (`done` with `error`, one cycle of `busy`) or starts LOAD.
    Begin,
    /// Taking demand beats, one row per cycle.
    LoadRun,
    /// The last rows of LOAD in the lanes' pipelines.
    LoadDrain,
    /// LOAD's totals and key ranges shift out of the lanes.
    LoadReduce,
    /// Totals and the pool size check.
    Plan1,
    /// Supply.
    Plan2,
    /// Borrowed total.
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
    /// Streaming rows through FINAL.
    FinalIssue,
    /// The last rows of FINAL in the pipelines.
    FinalDrain,
    /// Results out: from row 0.
    EmitStart,
    /// Reading a row.
    EmitWait,
    /// Presenting a row's results.
    EmitShow,
}

/// The FSM of an engine whose lanes hold `2^A` rows.
#[derive(LogicBlock)]
pub struct Sequencer<const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse to compute one quantum (taken in Idle).
    pub start: Signal<In, Bit>,
    /// The check of the settings taken with `start` (0: good), read in Begin.
    pub start_code: Signal<In, Bits<4>>,
    /// Demand stream valid.
    pub in_valid: Signal<In, Bit>,
    /// Result stream ready.
    pub out_ready: Signal<In, Bit>,
    /// The beat taken next is the last of LOAD.
    pub last_beat: Signal<In, Bit>,
    /// Each search unit needs another pass.
    pub more_a: Signal<In, Bit>,
    /// See `more_a`.
    pub more_b: Signal<In, Bit>,
    /// The capacity check refused the quantum (final from Plan2 on).
    pub refused: Signal<In, Bit>,
    /// The lanes reported bad input (final from Plan1 on).
    pub lane_errors: Signal<In, Bits<2>>,
    /// A demand beat is taken this cycle (LoadRun and `in_valid`: the stream's
    /// handshake, the one output that is not a flip-flop's).
    pub accept: Signal<Out, Bit>,
    /// Either search needs another pass (registered `more_a | more_b`; valid in
    /// SearchCheck: the search units' `more` is valid two cycles after an interval
    /// changes, this flag three, SearchCheck comes after four).
    pub more_any: Signal<Out, Bit>,
    /// A quantum is in progress (see the engine's `busy`).
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
    /// Registered decodes of the state (computed from the next state): the state is
    /// LoadRun (the demand stream's `in_ready`), a row enters the lanes in SEARCH or
    /// FINAL, FINAL's rows enter, the lanes' counters restart, the lanes' sums shift,
    /// the engine's sums clear (Begin, SearchCheck), its key ranges clear (Begin),
    /// results are shown.
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
    /// See `at_load_run`.
    pub at_emit_show: Signal<Out, Bit>,
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
    /// sums are taken (Plan1), the supply (Plan2) and the borrowed total (Plan3) are
    /// computed, FINAL's rests are loaded (FinalStart), results begin (EmitStart).
    /// Decoded from the state in the engine, one LUT served registers on both sides of
    /// the die (80a0eba + lane copies: state to `rest_b` through 8.6 ns of routing).
    pub at_plan1: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_plan2: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_plan3: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_final_start: Signal<Out, Bit>,
    /// See `at_plan1`.
    pub at_emit_start: Signal<Out, Bit>,
    phase: DFF<Phase>,
    row: DFF<Bits<A>>,
    last_row: DFF<Bits<A>>,
    countdown: DFF<Bits<8>>,
    countdown_zero: DFF<Bit>,
    /// The row streamed now is the last of the quantum.
    row_last_r: DFF<Bit>,
    more_r: DFF<Bit>,
    /// PLAN stops the quantum: refused, or bad input (final before Plan4 reads it).
    stop_r: DFF<Bit>,
    load_run_r: DFF<Bit>,
    issue_r: DFF<Bit>,
    final_issue_r: DFF<Bit>,
    restart_r: DFF<Bit>,
    reduce_r: DFF<Bit>,
    clear_r: DFF<Bit>,
    begin_r: DFF<Bit>,
    emit_show_r: DFF<Bit>,
    load_target_r: DFF<Bit>,
    search_init_r: DFF<Bit>,
    search_check_r: DFF<Bit>,
    update1_r: DFF<Bit>,
    update2_r: DFF<Bit>,
    plan1_r: DFF<Bit>,
    plan2_r: DFF<Bit>,
    plan3_r: DFF<Bit>,
    final_start_r: DFF<Bit>,
    emit_start_r: DFF<Bit>,
    /// The state is not Idle (so that `at_idle` is set from reset).
    active_r: DFF<Bit>,
    busy_r: DFF<Bit>,
    done_r: DFF<Bit>,
    error_r: DFF<Bits<4>>,
    cycles_r: DFF<Bits<32>>,
    next: Signal<Local, Phase>,
    countdown_next: Signal<Local, Bits<8>>,
    row_next: Signal<Local, Bits<A>>,
    taken: Signal<Local, Bit>,
    idle_start: Signal<Local, Bit>,
    refuse: Signal<Local, Bit>,
    finish: Signal<Local, Bit>,
    reduce_wait: Constant<Bits<8>>,
    load_wait: Constant<Bits<8>>,
    search_wait: Constant<Bits<8>>,
    probe_wait: Constant<Bits<8>>,
    final_wait: Constant<Bits<8>>,
    code_demand: Constant<Bits<4>>,
    code_credit: Constant<Bits<4>>,
    code_capacity: Constant<Bits<4>>,
}

impl<const A: usize> Sequencer<A> {
    /// The sequencer of an engine of `lanes` lanes (the reductions take `lanes` cycles).
    pub fn new(lanes: usize) -> Self {
        Sequencer {
            clock: Default::default(),
            start: Default::default(),
            start_code: Default::default(),
            in_valid: Default::default(),
            out_ready: Default::default(),
            last_beat: Default::default(),
            more_a: Default::default(),
            more_b: Default::default(),
            refused: Default::default(),
            lane_errors: Default::default(),
            accept: Default::default(),
            more_any: Default::default(),
            busy: Default::default(),
            done: Default::default(),
            error: Default::default(),
            cycles: Default::default(),
            at_idle: Default::default(),
            at_load_run: Default::default(),
            at_issue: Default::default(),
            at_final_issue: Default::default(),
            at_restart: Default::default(),
            at_reduce: Default::default(),
            at_clear: Default::default(),
            at_begin: Default::default(),
            at_emit_show: Default::default(),
            at_load_target: Default::default(),
            at_search_init: Default::default(),
            at_search_check: Default::default(),
            at_update1: Default::default(),
            at_update2: Default::default(),
            at_plan1: Default::default(),
            at_plan2: Default::default(),
            at_plan3: Default::default(),
            at_final_start: Default::default(),
            at_emit_start: Default::default(),
            phase: Default::default(),
            row: Default::default(),
            last_row: Default::default(),
            countdown: Default::default(),
            countdown_zero: Default::default(),
            row_last_r: Default::default(),
            more_r: Default::default(),
            stop_r: Default::default(),
            load_run_r: Default::default(),
            issue_r: Default::default(),
            final_issue_r: Default::default(),
            restart_r: Default::default(),
            reduce_r: Default::default(),
            clear_r: Default::default(),
            begin_r: Default::default(),
            emit_show_r: Default::default(),
            load_target_r: Default::default(),
            search_init_r: Default::default(),
            search_check_r: Default::default(),
            update1_r: Default::default(),
            update2_r: Default::default(),
            plan1_r: Default::default(),
            plan2_r: Default::default(),
            plan3_r: Default::default(),
            final_start_r: Default::default(),
            emit_start_r: Default::default(),
            active_r: Default::default(),
            busy_r: Default::default(),
            done_r: Default::default(),
            error_r: Default::default(),
            cycles_r: Default::default(),
            next: Default::default(),
            countdown_next: Default::default(),
            row_next: Default::default(),
            taken: Default::default(),
            idle_start: Default::default(),
            refuse: Default::default(),
            finish: Default::default(),
            reduce_wait: Constant::new(Bits::<8>::from(lanes as u64)),
            load_wait: Constant::new(Bits::<8>::from(LOAD_LATENCY as u64 - 1)),
            search_wait: Constant::new(Bits::<8>::from(SEARCH_LATENCY as u64 - 2)),
            probe_wait: Constant::new(Bits::<8>::from(PROBE_LATENCY as u64 - 2)),
            final_wait: Constant::new(Bits::<8>::from(FINAL_LATENCY as u64 - 1)),
            code_demand: Constant::new(Bits::<4>::from(status::DEMAND as u64)),
            code_credit: Constant::new(Bits::<4>::from(status::CREDIT as u64)),
            code_capacity: Constant::new(Bits::<4>::from(status::CAPACITY as u64)),
        }
    }
}

impl<const A: usize> Logic for Sequencer<A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            phase,
            row,
            last_row,
            countdown,
            countdown_zero,
            row_last_r,
            more_r,
            stop_r,
            load_run_r,
            issue_r,
            final_issue_r,
            restart_r,
            reduce_r,
            clear_r,
            begin_r,
            emit_show_r,
            load_target_r,
            search_init_r,
            search_check_r,
            update1_r,
            update2_r,
            plan1_r,
            plan2_r,
            plan3_r,
            final_start_r,
            emit_start_r,
            active_r,
            busy_r,
            done_r,
            error_r,
            cycles_r
        );
        self.taken.next = self.load_run_r.q.val() & self.in_valid.val();
        self.next.next = self.phase.q.val();
        self.countdown_next.next = self.countdown.q.val();
        if self.countdown.q.val() != 0 {
            self.countdown_next.next = self.countdown.q.val() - 1;
        }
        self.row_next.next = self.row.q.val();
        match self.phase.q.val() {
            Phase::Idle => {
                if self.start.val() {
                    self.next.next = Phase::Begin;
                }
            }
            Phase::Begin => {
                self.row_next.next = 0.into();
                self.next.next = Phase::LoadRun;
                if self.start_code.val() != 0 {
                    self.next.next = Phase::Idle;
                }
            }
            Phase::LoadRun => {
                if self.taken.val() {
                    if self.last_beat.val() {
                        self.last_row.d.next = self.row.q.val();
                        self.row_next.next = 0.into();
                        self.countdown_next.next = self.load_wait.val();
                        self.next.next = Phase::LoadDrain;
                    } else {
                        self.row_next.next = self.row.q.val() + 1;
                    }
                }
            }
            Phase::LoadDrain => {
                if self.countdown_zero.q.val() {
                    self.countdown_next.next = self.reduce_wait.val();
                    self.next.next = Phase::LoadReduce;
                }
            }
            Phase::LoadReduce => {
                if self.countdown_zero.q.val() {
                    self.next.next = Phase::Plan1;
                }
            }
            Phase::Plan1 => {
                self.next.next = Phase::Plan2;
            }
            Phase::Plan2 => {
                self.next.next = Phase::Plan3;
            }
            Phase::Plan3 => {
                self.next.next = Phase::Plan4;
            }
            Phase::Plan4 => {
                self.next.next = Phase::SearchInit;
                if self.stop_r.q.val() {
                    self.next.next = Phase::Idle;
                }
            }
            Phase::SearchInit => {
                self.countdown_next.next = self.probe_wait.val();
                self.next.next = Phase::SearchWait;
            }
            Phase::SearchWait => {
                if self.countdown_zero.q.val() {
                    self.next.next = Phase::SearchCheck;
                }
            }
            Phase::SearchCheck => {
                self.row_next.next = 0.into();
                if self.more_r.q.val() {
                    self.next.next = Phase::SearchIssue;
                } else {
                    self.next.next = Phase::FinalStart;
                }
            }
            Phase::SearchIssue => {
                if self.row_last_r.q.val() {
                    self.row_next.next = 0.into();
                    self.countdown_next.next = self.search_wait.val();
                    self.next.next = Phase::SearchDrain;
                } else {
                    self.row_next.next = self.row.q.val() + 1;
                }
            }
            Phase::SearchDrain => {
                if self.countdown_zero.q.val() {
                    self.countdown_next.next = self.reduce_wait.val();
                    self.next.next = Phase::SearchReduce;
                }
            }
            Phase::SearchReduce => {
                if self.countdown_zero.q.val() {
                    self.next.next = Phase::SearchUpdate1;
                }
            }
            Phase::SearchUpdate1 => {
                self.next.next = Phase::SearchUpdate2;
            }
            Phase::SearchUpdate2 => {
                self.countdown_next.next = self.probe_wait.val();
                self.next.next = Phase::SearchWait;
            }
            Phase::FinalStart => {
                self.countdown_next.next = 1.into();
                self.next.next = Phase::FinalWait;
            }
            Phase::FinalWait => {
                if self.countdown_zero.q.val() {
                    self.next.next = Phase::FinalIssue;
                }
            }
            Phase::FinalIssue => {
                if self.row_last_r.q.val() {
                    self.row_next.next = 0.into();
                    self.countdown_next.next = self.final_wait.val();
                    self.next.next = Phase::FinalDrain;
                } else {
                    self.row_next.next = self.row.q.val() + 1;
                }
            }
            Phase::FinalDrain => {
                if self.countdown_zero.q.val() {
                    self.next.next = Phase::EmitStart;
                }
            }
            Phase::EmitStart => {
                self.next.next = Phase::EmitWait;
            }
            Phase::EmitWait => {
                self.next.next = Phase::EmitShow;
            }
            Phase::EmitShow => {
                if self.out_ready.val() {
                    if self.row_last_r.q.val() {
                        self.next.next = Phase::Idle;
                    } else {
                        self.row_next.next = self.row.q.val() + 1;
                        self.next.next = Phase::EmitWait;
                    }
                }
            }
        }
        // The status, on the registered decodes (Idle is `!active_r`, Begin `begin_r`,
        // Plan4 `load_target_r`, EmitShow `emit_show_r`) rather than on the state: its
        // registers' enables are a LUT or two from flip-flops beside them (a run with
        // them on the state had four LUTs and two wires across the die between the
        // state and `done`).
        self.idle_start.next = !self.active_r.q.val() & self.start.val();
        self.refuse.next = self.begin_r.q.val() & (self.start_code.val() != 0);
        self.finish.next = self.refuse.val()
            | (self.load_target_r.q.val() & self.stop_r.q.val())
            | (self.emit_show_r.q.val() & self.out_ready.val() & self.row_last_r.q.val());
        if self.busy_r.q.val() {
            self.cycles_r.d.next = self.cycles_r.q.val() + 1;
        }
        if self.idle_start.val() {
            self.cycles_r.d.next = 1.into();
            self.done_r.d.next = false;
            self.error_r.d.next = 0.into();
            self.busy_r.d.next = true;
        }
        if self.refuse.val() {
            self.error_r.d.next = self.start_code.val();
        }
        if self.load_target_r.q.val() {
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
        if self.finish.val() {
            self.done_r.d.next = true;
            self.busy_r.d.next = false;
        }
        self.phase.d.next = self.next.val();
        self.countdown.d.next = self.countdown_next.val();
        self.countdown_zero.d.next = self.countdown_next.val() == 0;
        self.row.d.next = self.row_next.val();
        // Against the `last_row` of the previous quantum in the cycle LOAD writes it;
        // first read in SEARCH, many cycles later.
        self.row_last_r.d.next = self.row_next.val() == self.last_row.q.val();
        self.more_r.d.next = self.more_a.val() | self.more_b.val();
        self.stop_r.d.next = self.refused.val() | (self.lane_errors.val() != 0);
        self.active_r.d.next = self.next.val() != Phase::Idle;
        self.load_run_r.d.next = self.next.val() == Phase::LoadRun;
        self.issue_r.d.next = (self.next.val() == Phase::SearchIssue) | (self.next.val() == Phase::FinalIssue);
        self.final_issue_r.d.next = self.next.val() == Phase::FinalIssue;
        self.restart_r.d.next = (self.next.val() == Phase::Idle)
            | (self.next.val() == Phase::SearchCheck)
            | (self.next.val() == Phase::FinalStart)
            | (self.next.val() == Phase::EmitStart);
        self.reduce_r.d.next = (self.next.val() == Phase::LoadReduce) | (self.next.val() == Phase::SearchReduce);
        self.clear_r.d.next = (self.next.val() == Phase::Begin) | (self.next.val() == Phase::SearchCheck);
        self.begin_r.d.next = self.next.val() == Phase::Begin;
        self.emit_show_r.d.next = self.next.val() == Phase::EmitShow;
        self.load_target_r.d.next = self.next.val() == Phase::Plan4;
        self.search_init_r.d.next = self.next.val() == Phase::SearchInit;
        self.search_check_r.d.next = self.next.val() == Phase::SearchCheck;
        self.update1_r.d.next = self.next.val() == Phase::SearchUpdate1;
        self.update2_r.d.next = self.next.val() == Phase::SearchUpdate2;
        self.plan1_r.d.next = self.next.val() == Phase::Plan1;
        self.plan2_r.d.next = self.next.val() == Phase::Plan2;
        self.plan3_r.d.next = self.next.val() == Phase::Plan3;
        self.final_start_r.d.next = self.next.val() == Phase::FinalStart;
        self.emit_start_r.d.next = self.next.val() == Phase::EmitStart;

        self.accept.next = self.taken.val();
        self.more_any.next = self.more_r.q.val();
        self.busy.next = self.busy_r.q.val();
        self.done.next = self.done_r.q.val();
        self.error.next = self.error_r.q.val();
        self.cycles.next = self.cycles_r.q.val();
        self.at_idle.next = !self.active_r.q.val();
        self.at_load_run.next = self.load_run_r.q.val();
        self.at_issue.next = self.issue_r.q.val();
        self.at_final_issue.next = self.final_issue_r.q.val();
        self.at_restart.next = self.restart_r.q.val();
        self.at_reduce.next = self.reduce_r.q.val();
        self.at_clear.next = self.clear_r.q.val();
        self.at_begin.next = self.begin_r.q.val();
        self.at_emit_show.next = self.emit_show_r.q.val();
        self.at_load_target.next = self.load_target_r.q.val();
        self.at_search_init.next = self.search_init_r.q.val();
        self.at_search_check.next = self.search_check_r.q.val();
        self.at_update1.next = self.update1_r.q.val();
        self.at_update2.next = self.update2_r.q.val();
        self.at_plan1.next = self.plan1_r.q.val();
        self.at_plan2.next = self.plan2_r.q.val();
        self.at_plan3.next = self.plan3_r.q.val();
        self.at_final_start.next = self.final_start_r.q.val();
        self.at_emit_start.next = self.emit_start_r.q.val();
    }
}
