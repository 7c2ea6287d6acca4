//! The engine: `P` lanes over `P x 2^A` users, one quantum per `start`.
//!
//! Phases, one row of `P` users per step:
//! 1. LOAD: takes a beat of `P` demands from the input stream (valid/ready), reads
//!    the users' credits, stores each user's run of keys and sums the totals. Nothing
//!    persistent is written, so a range error here leaves the credits untouched.
//! 2. PLAN: supply, the borrowed total `B = min(supply, candidates)` and the used
//!    donations `U = min(B, donated)` (Karma), or `min(C, total demand)` (max-min).
//! 3. SEARCH: radix-4 passes, one row per cycle, both thresholds at once, until each
//!    interval has shrunk to one key: at most 17 passes over a 32-bit key range.
//! 4. FINAL: per user the keys below the threshold, plus one more for the lowest
//!    indices whose key equals it; allocations and credits go out on the result stream
//!    (valid/ready) and the credits are written back.
//!
//! Cycles per quantum: `2R + 1` (LOAD) `+ 2` (PLAN) `+ passes (R + 3)` `+ 2R + 2`
//! (FINAL, when the result stream never stalls), where `R = ceil(n / P)` rows.

use crate::count_lane::PROBES;
use crate::lane::EngineLane;
use crate::search::SearchUnit;
use rust_hdl::prelude::*;

use fairshare_abi as abi;
/// Status codes of the `error` output: the device ABI's (`fairshare_abi::status`);
/// the engine's tests check that the block reports exactly these.
pub use fairshare_abi::status as error_code;

/// FSM states.
#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
pub enum Phase {
    /// Waiting for `start`; the credit port is live.
    Idle,
    /// Waiting for a demand beat.
    LoadWait,
    /// Computing and storing a row's runs.
    LoadCompute,
    /// Supply and targets.
    Plan,
    /// Search intervals.
    Init,
    /// Streaming rows through the counters.
    SearchRun,
    /// Counting the last row of a pass.
    SearchDrain,
    /// Narrowing the intervals.
    SearchUpdate,
    /// Another pass?
    SearchCheck,
    /// Slices left at the thresholds.
    FinalStart,
    /// Reading a row.
    FinalRead,
    /// Presenting a row's results.
    FinalEmit,
}

/// The engine block.
#[derive(LogicBlock)]
pub struct Engine<const P: usize, const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse to compute one quantum (ignored unless idle).
    pub start: Signal<In, Bit>,
    /// Mode: 0 Karma, 1 max-min, 2 strict.
    pub mode: Signal<In, Bits<2>>,
    /// Users in the pool.
    pub n_users: Signal<In, Bits<32>>,
    /// Fair share of every user.
    pub fair: Signal<In, Bits<32>>,
    /// Guaranteed share of every user.
    pub guaranteed: Signal<In, Bits<32>>,
    /// Demand stream: a beat carries the demands of users `row * P + lane`.
    pub in_valid: Signal<In, Bit>,
    /// Demand stream ready.
    pub in_ready: Signal<Out, Bit>,
    /// Demand stream data, one per lane.
    pub in_data: [Signal<In, Bits<32>>; P],
    /// Result stream valid.
    pub out_valid: Signal<Out, Bit>,
    /// Result stream ready (back-pressure).
    pub out_ready: Signal<In, Bit>,
    /// Allocations of the row.
    pub out_alloc: [Signal<Out, Bits<32>>; P],
    /// Credits after the quantum.
    pub out_credit: [Signal<Out, Bits<32>>; P],
    /// Credit port (idle only): row to read or write.
    pub credit_row: Signal<In, Bits<A>>,
    /// Credit port: write `credit_wdata` to the row.
    pub credit_write: Signal<In, Bit>,
    /// Credit port: balances to write.
    pub credit_wdata: [Signal<In, Bits<32>>; P],
    /// Credit port: balances of the row (one cycle after `credit_row`).
    pub credit_rdata: [Signal<Out, Bits<32>>; P],
    /// A quantum is in progress.
    pub busy: Signal<Out, Bit>,
    /// The last quantum finished (successfully or with `error`); cleared by `start`.
    pub done: Signal<Out, Bit>,
    /// Error code of the last quantum (see [`error_code`]).
    pub error: Signal<Out, Bits<4>>,
    /// Cycles from `start` to the end of the last quantum.
    pub cycles: Signal<Out, Bits<32>>,
    lanes: [EngineLane<A>; P],
    state: DFF<Phase>,
    cfg_mode: DFF<Bits<2>>,
    cfg_n: DFF<Bits<32>>,
    cfg_fair: DFF<Bits<32>>,
    cfg_guaranteed: DFF<Bits<32>>,
    row: DFF<Bits<A>>,
    user_base: DFF<Bits<32>>,
    total_a: DFF<Bits<32>>,
    total_b: DFF<Bits<32>>,
    capacity: DFF<Bits<32>>,
    first_a: DFF<Bits<32>>,
    end_a: DFF<Bits<32>>,
    first_b: DFF<Bits<32>>,
    end_b: DFF<Bits<32>>,
    shared: DFF<Bits<32>>,
    lane_errors: DFF<Bits<2>>,
    acc_a: [DFF<Bits<32>>; PROBES],
    acc_b: [DFF<Bits<32>>; PROBES],
    rest_a: DFF<Bits<32>>,
    rest_b: DFF<Bits<32>>,
    pipe_valid: DFF<Bit>,
    done_flag: DFF<Bit>,
    err_code: DFF<Bits<4>>,
    cycle_count: DFF<Bits<32>>,
    search_a: SearchUnit,
    search_b: SearchUnit,
    supply: Signal<Local, Bits<32>>,
    borrow: Signal<Local, Bits<32>>,
    last_row: Signal<Local, Bit>,
    capacity_refused: Signal<Local, Bit>,
    n_max: Constant<Bits<32>>,
    lane_count: Constant<Bits<32>>,
    max: Constant<Bits<32>>,
    limit: Constant<Bits<32>>,
    mode_karma: Constant<Bits<2>>,
    mode_maxmin: Constant<Bits<2>>,
    mode_strict: Constant<Bits<2>>,
    code_users: Constant<Bits<4>>,
    code_guaranteed: Constant<Bits<4>>,
    code_demand: Constant<Bits<4>>,
    code_credit: Constant<Bits<4>>,
    code_capacity: Constant<Bits<4>>,
    code_mode: Constant<Bits<4>>,
}

impl<const P: usize, const A: usize> Default for Engine<P, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const P: usize, const A: usize> Engine<P, A> {
    /// Most users: `P x 2^A`.
    pub const MAX_USERS: usize = P << A;

    /// An engine in its reset state (all credits 0).
    pub fn new() -> Self {
        Engine {
            clock: Default::default(),
            start: Default::default(),
            mode: Default::default(),
            n_users: Default::default(),
            fair: Default::default(),
            guaranteed: Default::default(),
            in_valid: Default::default(),
            in_ready: Default::default(),
            in_data: array_init::array_init(|_| Default::default()),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out_alloc: array_init::array_init(|_| Default::default()),
            out_credit: array_init::array_init(|_| Default::default()),
            credit_row: Default::default(),
            credit_write: Default::default(),
            credit_wdata: array_init::array_init(|_| Default::default()),
            credit_rdata: array_init::array_init(|_| Default::default()),
            busy: Default::default(),
            done: Default::default(),
            error: Default::default(),
            cycles: Default::default(),
            lanes: array_init::array_init(EngineLane::new),
            state: Default::default(),
            cfg_mode: Default::default(),
            cfg_n: Default::default(),
            cfg_fair: Default::default(),
            cfg_guaranteed: Default::default(),
            row: Default::default(),
            user_base: Default::default(),
            total_a: Default::default(),
            total_b: Default::default(),
            capacity: Default::default(),
            first_a: Default::default(),
            end_a: Default::default(),
            first_b: Default::default(),
            end_b: Default::default(),
            shared: Default::default(),
            lane_errors: Default::default(),
            acc_a: Default::default(),
            acc_b: Default::default(),
            rest_a: Default::default(),
            rest_b: Default::default(),
            pipe_valid: Default::default(),
            done_flag: Default::default(),
            err_code: Default::default(),
            cycle_count: Default::default(),
            search_a: Default::default(),
            search_b: Default::default(),
            supply: Default::default(),
            borrow: Default::default(),
            last_row: Default::default(),
            capacity_refused: Default::default(),
            n_max: Constant::new(Bits::<32>::from(Self::MAX_USERS as u64)),
            lane_count: Constant::new(Bits::<32>::from(P as u64)),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
            limit: Constant::new(Bits::<32>::from(abi::WORD_LIMIT)),
            mode_karma: Constant::new(Bits::<2>::from(abi::mode::KARMA as u64)),
            mode_maxmin: Constant::new(Bits::<2>::from(abi::mode::MAXMIN as u64)),
            mode_strict: Constant::new(Bits::<2>::from(abi::mode::STRICT as u64)),
            code_users: Constant::new(Bits::<4>::from(abi::status::USERS as u64)),
            code_guaranteed: Constant::new(Bits::<4>::from(abi::status::GUARANTEED as u64)),
            code_demand: Constant::new(Bits::<4>::from(abi::status::DEMAND as u64)),
            code_credit: Constant::new(Bits::<4>::from(abi::status::CREDIT as u64)),
            code_capacity: Constant::new(Bits::<4>::from(abi::status::CAPACITY as u64)),
            code_mode: Constant::new(Bits::<4>::from(abi::status::MODE as u64)),
        }
    }
}

impl<const P: usize, const A: usize> Logic for Engine<P, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            cfg_mode,
            cfg_n,
            cfg_fair,
            cfg_guaranteed,
            row,
            user_base,
            total_a,
            total_b,
            capacity,
            first_a,
            end_a,
            first_b,
            end_b,
            shared,
            lane_errors,
            rest_a,
            rest_b,
            pipe_valid,
            done_flag,
            err_code,
            cycle_count
        );
        for j in 0..PROBES {
            self.acc_a[j].clock.next = self.clock.val();
            self.acc_b[j].clock.next = self.clock.val();
            self.acc_a[j].d.next = self.acc_a[j].q.val();
            self.acc_b[j].d.next = self.acc_b[j].q.val();
        }
        // The two threshold searches: pulses from the FSM, counts from the accumulators.
        self.search_a.clock.next = self.clock.val();
        self.search_b.clock.next = self.clock.val();
        self.search_a.load_target.next = false;
        self.search_b.load_target.next = false;
        self.search_a.init.next = false;
        self.search_b.init.next = false;
        self.search_a.update.next = false;
        self.search_b.update.next = false;
        self.search_a.check.next = false;
        self.search_b.check.next = false;
        self.search_a.target.next = 0.into();
        self.search_b.target.next = 0.into();
        self.search_a.total.next = self.total_a.q.val();
        self.search_a.first.next = self.first_a.q.val();
        self.search_a.beyond.next = self.end_a.q.val();
        self.search_b.first.next = self.first_b.q.val();
        self.search_b.beyond.next = self.end_b.q.val();
        self.search_b.total.next = self.total_b.q.val();
        for j in 0..PROBES {
            self.search_a.count[j].next = self.acc_a[j].q.val();
            self.search_b.count[j].next = self.acc_b[j].q.val();
        }
        self.last_row.next = self.user_base.q.val() + self.lane_count.val() >= self.cfg_n.q.val();
        // The pool size must fit the data path (strict partitioning never adds it up).
        self.capacity_refused.next =
            (self.cfg_mode.q.val() != self.mode_strict.val()) & (self.capacity.q.val() >= self.limit.val());

        // Lanes: shared controls, then the chains from lane to lane.
        for i in 0..P {
            self.lanes[i].clock.next = self.clock.val();
            self.lanes[i].mode.next = self.cfg_mode.q.val();
            self.lanes[i].rd_addr.next = self.row.q.val();
            self.lanes[i].wr_addr.next = self.row.q.val();
            self.lanes[i].write_state.next = false;
            self.lanes[i].write_credit.next = false;
            self.lanes[i].use_host_credit.next = false;
            self.lanes[i].host_credit.next = self.credit_wdata[i].val();
            self.lanes[i].latch_demand.next = false;
            self.lanes[i].demand_in.next = self.in_data[i].val();
            self.lanes[i].user_base.next = self.user_base.q.val();
            self.lanes[i].n_users.next = self.cfg_n.q.val();
            self.lanes[i].fair.next = self.cfg_fair.q.val();
            self.lanes[i].guaranteed.next = self.cfg_guaranteed.q.val();
            self.lanes[i].free.next = self.cfg_fair.q.val() - self.cfg_guaranteed.q.val();
            self.lanes[i].probe_a0.next = self.search_a.probe[0].val();
            self.lanes[i].probe_b0.next = self.search_b.probe[0].val();
            self.lanes[i].probe_a1.next = self.search_a.probe[1].val();
            self.lanes[i].probe_b1.next = self.search_b.probe[1].val();
            self.lanes[i].probe_a2.next = self.search_a.probe[2].val();
            self.lanes[i].probe_b2.next = self.search_b.probe[2].val();
            self.out_alloc[i].next = self.lanes[i].alloc.val();
            self.out_credit[i].next = self.lanes[i].credit.val();
            self.credit_rdata[i].next = self.lanes[i].credit_now.val();
        }
        self.lanes[0].count_a_in0.next = self.acc_a[0].q.val();
        self.lanes[0].count_b_in0.next = self.acc_b[0].q.val();
        self.lanes[0].count_a_in1.next = self.acc_a[1].q.val();
        self.lanes[0].count_b_in1.next = self.acc_b[1].q.val();
        self.lanes[0].count_a_in2.next = self.acc_a[2].q.val();
        self.lanes[0].count_b_in2.next = self.acc_b[2].q.val();
        self.lanes[0].rest_a_in.next = self.rest_a.q.val();
        self.lanes[0].rest_b_in.next = self.rest_b.q.val();
        self.lanes[0].total_a_in.next = self.total_a.q.val();
        self.lanes[0].total_b_in.next = self.total_b.q.val();
        self.lanes[0].capacity_in.next = self.capacity.q.val();
        self.lanes[0].first_a_in.next = self.first_a.q.val();
        self.lanes[0].end_a_in.next = self.end_a.q.val();
        self.lanes[0].first_b_in.next = self.first_b.q.val();
        self.lanes[0].end_b_in.next = self.end_b.q.val();
        self.lanes[0].shared_in.next = self.shared.q.val();
        self.lanes[0].error_in.next = self.lane_errors.q.val();
        for i in 1..P {
            self.lanes[i].count_a_in0.next = self.lanes[i - 1].count_a_out0.val();
            self.lanes[i].count_b_in0.next = self.lanes[i - 1].count_b_out0.val();
            self.lanes[i].count_a_in1.next = self.lanes[i - 1].count_a_out1.val();
            self.lanes[i].count_b_in1.next = self.lanes[i - 1].count_b_out1.val();
            self.lanes[i].count_a_in2.next = self.lanes[i - 1].count_a_out2.val();
            self.lanes[i].count_b_in2.next = self.lanes[i - 1].count_b_out2.val();
            self.lanes[i].rest_a_in.next = self.lanes[i - 1].rest_a_out.val();
            self.lanes[i].rest_b_in.next = self.lanes[i - 1].rest_b_out.val();
            self.lanes[i].total_a_in.next = self.lanes[i - 1].total_a_out.val();
            self.lanes[i].total_b_in.next = self.lanes[i - 1].total_b_out.val();
            self.lanes[i].capacity_in.next = self.lanes[i - 1].capacity_out.val();
            self.lanes[i].first_a_in.next = self.lanes[i - 1].first_a_out.val();
            self.lanes[i].end_a_in.next = self.lanes[i - 1].end_a_out.val();
            self.lanes[i].first_b_in.next = self.lanes[i - 1].first_b_out.val();
            self.lanes[i].end_b_in.next = self.lanes[i - 1].end_b_out.val();
            self.lanes[i].shared_in.next = self.lanes[i - 1].shared_out.val();
            self.lanes[i].error_in.next = self.lanes[i - 1].error_out.val();
        }

        // Outputs by default.
        self.in_ready.next = false;
        self.out_valid.next = false;
        self.busy.next = self.state.q.val() != Phase::Idle;
        self.done.next = self.done_flag.q.val();
        self.error.next = self.err_code.q.val();
        self.cycles.next = self.cycle_count.q.val();
        if self.state.q.val() != Phase::Idle {
            self.cycle_count.d.next = self.cycle_count.q.val() + 1;
        }
        self.supply.next = self.max.val();
        if self.total_b.q.val() <= self.max.val() - self.shared.q.val() {
            self.supply.next = self.total_b.q.val() + self.shared.q.val();
        }
        self.borrow.next = self.total_a.q.val();
        if self.supply.val() < self.total_a.q.val() {
            self.borrow.next = self.supply.val();
        }

        // SEARCH: the row read last cycle (valid from the second cycle of a pass, and in
        // the drain cycle after the last row) adds its counts to the accumulators.
        if ((self.state.q.val() == Phase::SearchRun) & self.pipe_valid.q.val())
            | (self.state.q.val() == Phase::SearchDrain)
        {
            for i in (P - 1)..P {
                self.acc_a[0].d.next = self.lanes[i].count_a_out0.val();
                self.acc_b[0].d.next = self.lanes[i].count_b_out0.val();
                self.acc_a[1].d.next = self.lanes[i].count_a_out1.val();
                self.acc_b[1].d.next = self.lanes[i].count_b_out1.val();
                self.acc_a[2].d.next = self.lanes[i].count_a_out2.val();
                self.acc_b[2].d.next = self.lanes[i].count_b_out2.val();
            }
        }

        match self.state.q.val() {
            Phase::Idle => {
                for i in 0..P {
                    self.lanes[i].rd_addr.next = self.credit_row.val();
                    self.lanes[i].wr_addr.next = self.credit_row.val();
                    self.lanes[i].write_credit.next = self.credit_write.val();
                    self.lanes[i].use_host_credit.next = true;
                }
                if self.start.val() {
                    self.cfg_mode.d.next = self.mode.val();
                    self.cfg_n.d.next = self.n_users.val();
                    self.cfg_fair.d.next = self.fair.val();
                    self.cfg_guaranteed.d.next = self.guaranteed.val();
                    self.cycle_count.d.next = 1.into();
                    self.done_flag.d.next = false;
                    self.err_code.d.next = 0.into();
                    self.row.d.next = 0.into();
                    self.user_base.d.next = 0.into();
                    self.total_a.d.next = 0.into();
                    self.total_b.d.next = 0.into();
                    self.capacity.d.next = 0.into();
                    self.first_a.d.next = self.max.val();
                    self.end_a.d.next = 0.into();
                    self.first_b.d.next = self.max.val();
                    self.end_b.d.next = 0.into();
                    self.shared.d.next = 0.into();
                    self.lane_errors.d.next = 0.into();
                    if (self.n_users.val() == 0) | (self.n_users.val() > self.n_max.val()) {
                        self.err_code.d.next = self.code_users.val();
                        self.done_flag.d.next = true;
                    } else if self.guaranteed.val() > self.fair.val() {
                        self.err_code.d.next = self.code_guaranteed.val();
                        self.done_flag.d.next = true;
                    } else if (self.fair.val() == 0) | (self.fair.val() >= self.limit.val()) {
                        self.err_code.d.next = self.code_capacity.val();
                        self.done_flag.d.next = true;
                    } else if self.mode.val() > self.mode_strict.val() {
                        self.err_code.d.next = self.code_mode.val();
                        self.done_flag.d.next = true;
                    } else {
                        self.state.d.next = Phase::LoadWait;
                    }
                }
            }
            Phase::LoadWait => {
                self.in_ready.next = true;
                if self.in_valid.val() {
                    for i in 0..P {
                        self.lanes[i].latch_demand.next = true;
                    }
                    self.state.d.next = Phase::LoadCompute;
                }
            }
            Phase::LoadCompute => {
                for i in 0..P {
                    self.lanes[i].write_state.next = true;
                }
                for i in (P - 1)..P {
                    self.total_a.d.next = self.lanes[i].total_a_out.val();
                    self.total_b.d.next = self.lanes[i].total_b_out.val();
                    self.capacity.d.next = self.lanes[i].capacity_out.val();
                    self.first_a.d.next = self.lanes[i].first_a_out.val();
                    self.end_a.d.next = self.lanes[i].end_a_out.val();
                    self.first_b.d.next = self.lanes[i].first_b_out.val();
                    self.end_b.d.next = self.lanes[i].end_b_out.val();
                    self.shared.d.next = self.lanes[i].shared_out.val();
                    self.lane_errors.d.next = self.lanes[i].error_out.val();
                }
                if self.last_row.val() {
                    self.state.d.next = Phase::Plan;
                } else {
                    self.row.d.next = self.row.q.val() + 1;
                    self.user_base.d.next = self.user_base.q.val() + self.lane_count.val();
                    self.state.d.next = Phase::LoadWait;
                }
            }
            Phase::Plan => {
                self.search_a.load_target.next = true;
                self.search_b.load_target.next = true;
                self.state.d.next = Phase::Init;
                if self.cfg_mode.q.val() == self.mode_karma.val() {
                    self.search_a.target.next = self.borrow.val();
                    self.search_b.target.next = self.total_b.q.val();
                    if self.borrow.val() < self.total_b.q.val() {
                        self.search_b.target.next = self.borrow.val();
                    }
                }
                if self.cfg_mode.q.val() == self.mode_maxmin.val() {
                    self.search_b.target.next = self.total_b.q.val();
                    if self.capacity.q.val() < self.total_b.q.val() {
                        self.search_b.target.next = self.capacity.q.val();
                    }
                }
                if self.capacity_refused.val() {
                    self.err_code.d.next = self.code_capacity.val();
                }
                if self.lane_errors.q.val() != 0 {
                    self.err_code.d.next = self.code_demand.val();
                    if (self.lane_errors.q.val() & 2) != 0 {
                        self.err_code.d.next = self.code_credit.val();
                    }
                }
                if self.capacity_refused.val() | (self.lane_errors.q.val() != 0) {
                    self.done_flag.d.next = true;
                    self.state.d.next = Phase::Idle;
                }
            }
            Phase::Init => {
                self.search_a.init.next = true;
                self.search_b.init.next = true;
                self.state.d.next = Phase::SearchCheck;
            }
            Phase::SearchRun => {
                self.pipe_valid.d.next = true;
                if self.last_row.val() {
                    self.state.d.next = Phase::SearchDrain;
                } else {
                    self.row.d.next = self.row.q.val() + 1;
                    self.user_base.d.next = self.user_base.q.val() + self.lane_count.val();
                }
            }
            Phase::SearchDrain => {
                self.pipe_valid.d.next = false;
                self.state.d.next = Phase::SearchUpdate;
            }
            Phase::SearchUpdate => {
                self.search_a.update.next = true;
                self.search_b.update.next = true;
                self.state.d.next = Phase::SearchCheck;
            }
            Phase::SearchCheck => {
                for j in 0..PROBES {
                    self.acc_a[j].d.next = 0.into();
                    self.acc_b[j].d.next = 0.into();
                }
                self.search_a.check.next = true;
                self.search_b.check.next = true;
                self.row.d.next = 0.into();
                self.user_base.d.next = 0.into();
                self.pipe_valid.d.next = false;
                if self.search_a.more.val() | self.search_b.more.val() {
                    self.state.d.next = Phase::SearchRun;
                } else {
                    self.state.d.next = Phase::FinalStart;
                }
            }
            Phase::FinalStart => {
                self.rest_a.d.next = self.search_a.rest.val();
                self.rest_b.d.next = self.search_b.rest.val();
                self.state.d.next = Phase::FinalRead;
            }
            Phase::FinalRead => {
                self.state.d.next = Phase::FinalEmit;
            }
            Phase::FinalEmit => {
                for i in 0..P {
                    self.lanes[i].probe_a0.next = self.search_a.threshold.val();
                    self.lanes[i].probe_b0.next = self.search_b.threshold.val();
                    self.lanes[i].probe_a1.next = self.search_a.threshold.val();
                    self.lanes[i].probe_b1.next = self.search_b.threshold.val();
                    self.lanes[i].probe_a2.next = self.search_a.threshold.val();
                    self.lanes[i].probe_b2.next = self.search_b.threshold.val();
                }
                self.out_valid.next = true;
                if self.out_ready.val() {
                    for i in 0..P {
                        self.lanes[i].write_credit.next = true;
                    }
                    for i in (P - 1)..P {
                        self.rest_a.d.next = self.lanes[i].rest_a_out.val();
                        self.rest_b.d.next = self.lanes[i].rest_b_out.val();
                    }
                    if self.last_row.val() {
                        self.done_flag.d.next = true;
                        self.state.d.next = Phase::Idle;
                    } else {
                        self.row.d.next = self.row.q.val() + 1;
                        self.user_base.d.next = self.user_base.q.val() + self.lane_count.val();
                        self.state.d.next = Phase::FinalRead;
                    }
                }
            }
        }
    }
}
