//! The engine: `P` lanes over `P x 2^A` users, one quantum per `start`.
//!
//! Phases, one row of `P` users per cycle through the lanes' pipelines (see
//! [`crate::lane`]), each stage at most one carry chain deep:
//! 1. LOAD: takes a beat of `P` demands per cycle from the input stream (valid/ready),
//!    reads the users' credits, stores each user's run of keys and adds up the totals
//!    per lane, and the keys below the probes a warm first search pass would take (the
//!    last thresholds and [`crate::search::WARM_SPAN`] on either side: when the pass
//!    does start warm, its counts are these, and no row streams for it); the lanes'
//!    totals are then reduced by a shift chain towards lane 0
//!    (`P + 1` cycles: the engine's accumulators act a cycle after they are given a
//!    value, [`crate::reduce::LATENCY`]). Nothing persistent is written, so a range error here leaves the
//!    credits untouched.
//! 2. PLAN ([`crate::plan`]): supply, the borrowed total `B = min(supply, candidates)`
//!    and the used donations `U = min(B, donated)` (Karma), or `min(C, total demand)`
//!    (max-min), one step per cycle. The pool size `n f` and the shared slices
//!    `n (f - g)` come from the settings' multiplications ([`crate::settings`]), started
//!    with the quantum.
//! 3. SEARCH: radix-4 passes, one row per cycle, both thresholds at once, until each
//!    interval has shrunk to one key, the first probing around the last quantum's
//!    threshold when it lies inside the interval (the warm start of [`crate::search`]):
//!    at most [`crate::search::MAX_PASSES`]. A first pass in which each search that
//!    needs one starts warm takes LOAD's counts instead of streaming the rows. Each
//!    pass that streams the rows is followed by the reduction of the lanes' counts (`P + 1` cycles), the
//!    counts into the search units' registers ([`crate::search::COUNT_LATENCY`]), the
//!    narrowing (2) and the next probes ([`crate::search::PROBE_LATENCY`], which
//!    includes the cycle in which the new interval is taken).
//! 4. FINAL: per user the keys below the threshold, plus one more for the lowest
//!    indices whose key equals it (a prefix count across the lanes, see
//!    [`crate::grant`]'s network); allocations and credits are written into the banks.
//! 5. Results out, from FINAL's first written row on: a row per cycle on the result
//!    stream (valid/ready), each lane's [`crate::result_queue`] reading the rows FINAL
//!    has written; back-pressure stops the queues, not FINAL.
//!
//! Cycles per quantum, when the result stream never stalls, with `R = ceil(n / P)`
//! rows and `k` search passes: [`cycles`].

use crate::count_lane::PROBES;
use crate::grant::{GrantNetwork, LEVELS};
use crate::lane::{phase, EngineLane, FINAL_LATENCY, LOAD_LATENCY, SEARCH_LATENCY};
use crate::plan::Plan;
use crate::reduce::Totals;
use crate::search::{SearchUnit, PROBE_LATENCY};
use crate::sequencer::Sequencer;
use crate::settings::Settings;
use rust_hdl::prelude::*;

/// Status codes of the `error` output: the device ABI's (`fairshare_abi::status`);
/// the engine's tests check that the block reports exactly these.
pub use fairshare_abi::status as error_code;

/// Cycles of one quantum of `n` users on `p` lanes with `k` search passes, the first of
/// them made of LOAD's counts when `loaded` (every search that needs a pass starts it
/// warm), when the demand stream is never empty and the result stream never stalls
/// (what the `cycles` output reports), with `R = ceil(n / p)`:
/// - `2 + R + 1 + LOAD_LATENCY + p + L`: start, the settings' check, LOAD, the beat
///   register, its drain and the reduction (`L` = [`crate::reduce::LATENCY`], the
///   engine's accumulators taking what leaves lane 0);
/// - `4`: PLAN;
/// - `1 + PROBE_LATENCY`: the first interval, its probes and the check;
/// - `k (R + SEARCH_LATENCY + p + L + C + 2 + PROBE_LATENCY)`: per pass the rows, the
///   drain, the reduction, the counts into the search units (`C` =
///   [`crate::search::COUNT_LATENCY`]), the narrowing, the next probes and the check;
///   a pass made of LOAD's counts only the narrowing, the next probes and the check
///   (`2 + PROBE_LATENCY`);
/// - `3 + R + FINAL_LATENCY`: FINAL, whose results go out a row per cycle behind its
///   writes ([`crate::result_queue`]);
/// - `LATENCY + D + 1`: the last row through the result queue
///   ([`crate::result_queue::LATENCY`]), the cycles until the sequencer learns it was
///   taken (`D` = [`crate::result_queue::LAST_TAKEN_DELAY`], two flip-flops of lane 0's
///   queue) and the cycle that closes the quantum (the lanes' copies of `busy` fall
///   with it).
///
/// With the constants of this build: `2R + p + 49 + k (R + p + 15)`, less `R + p + 7`
/// when `loaded`.
pub fn cycles(n: usize, p: usize, k: usize, loaded: bool) -> usize {
    let r = n.div_ceil(p);
    let reduce = p + crate::reduce::LATENCY;
    let load = 2 + r + 1 + LOAD_LATENCY + reduce;
    let first = 4 + 1 + PROBE_LATENCY;
    let streamed = k - usize::from(loaded && k > 0);
    let passes = streamed * (r + SEARCH_LATENCY + reduce + crate::search::COUNT_LATENCY + 2 + PROBE_LATENCY)
        + (k - streamed) * (2 + PROBE_LATENCY);
    let fin = 3 + r + FINAL_LATENCY;
    load + first + passes + fin + crate::result_queue::LATENCY + crate::result_queue::LAST_TAKEN_DELAY + 1
}

/// The reciprocal that divides a user count below 2^16 by `p` (the quantum's last
/// row is `(n - 1) / p`): `(m_lo, m_hi, shift)` with `x / p = ((x * m_lo >> 16) +
/// x * m_hi) >> shift` for every `x < 2^16`, where `m_hi * 2^16 + m_lo` is
/// `ceil(2^(16 + l) / p)`, `l = ceil(log2 p)` and `shift = l` (the multiplier is exact
/// for 16-bit numerators; for a power of two it is `2^16`, a shift). Checked for every
/// `x` and `p` up to 32 by the test beside it.
pub fn row_divider(p: usize) -> (u64, u64, u64) {
    let l = usize::BITS - (p - 1).leading_zeros();
    let m = (1u64 << (16 + l)).div_ceil(p as u64);
    (m & 0xFFFF, m >> 16, l as u64)
}

/// The engine's phases, stepped by its [`Sequencer`].
pub use crate::sequencer::Phase;

/// The engine block.
#[derive(LogicBlock)]
pub struct Engine<const P: usize, const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pulse to compute one quantum (ignored while `busy`).
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
    /// Credit port: write `credit_wdata` to the row (registered beside the credit bank,
    /// it lands at the end of the next cycle: [`crate::bank::WRITE_LATENCY`]).
    pub credit_write: Signal<In, Bit>,
    /// Credit port: balances to write.
    pub credit_wdata: [Signal<In, Bits<32>>; P],
    /// Credit port: balances of the row (two cycles after `credit_row`, the credit
    /// bank's registered read and its output register). A row given in the cycle a write
    /// lands on it (the cycle after `credit_write`) reads undefined words on an FPGA,
    /// where the banks have no read-first logic: give it two cycles after the write.
    pub credit_rdata: [Signal<Out, Bits<32>>; P],
    /// A quantum is in progress: from the cycle after `start` to the third cycle after
    /// its last result is taken ([`crate::result_queue::LAST_TAKEN_DELAY`] cycles for
    /// the sequencer to learn it, one to return to Idle; two cycles for a quantum
    /// refused for its settings).
    pub busy: Signal<Out, Bit>,
    /// The last quantum finished (successfully or with `error`); cleared by `start`.
    pub done: Signal<Out, Bit>,
    /// Error code of the last quantum (see [`error_code`]).
    pub error: Signal<Out, Bits<4>>,
    /// Cycles from `start` to the end of the last quantum (3 for one refused for its
    /// settings).
    pub cycles: Signal<Out, Bits<32>>,
    lanes: [EngineLane<A>; P],
    sequencer: Sequencer<A>,
    /// The quantum's settings, their check and their products.
    settings: Settings<P, A>,
    /// FINAL's tie-break across the lanes.
    network: GrantNetwork<P>,
    /// PLAN: the searches' targets.
    plan: Plan,
    /// The demand beat taken in the previous cycle: it enters the lanes now. Its data
    /// and the lanes' "user exists" flags are registered every cycle (no enable).
    beat_valid: DFF<Bit>,
    beat_data: [DFF<Bits<32>>; P],
    beat_ok: [DFF<Bit>; P],
    lane_phase: DFF<Bits<3>>,
    final_mode: DFF<Bit>,
    left: DFF<Bits<32>>,
    /// What leaves lane 0: the sums, key ranges and error bits.
    totals: Totals,
    reducing_d: DFF<Bit>,
    load_reducing_d: DFF<Bit>,
    /// The lanes take the searches' LOAD probes ([`SearchUnit::load_probe`]): from Begin
    /// to Plan1, so LOAD's rows count at them, and the search's own probes have reached
    /// the lanes long before a pass streams.
    probe_load: DFF<Bit>,
    probe_a: [DFF<Bits<32>>; PROBES],
    probe_b: [DFF<Bits<32>>; PROBES],
    search_a: SearchUnit,
    search_b: SearchUnit,
    accept: Signal<Local, Bit>,
    step: Signal<Local, Bit>,
    reducing: Signal<Local, Bit>,
    clear: Signal<Local, Bit>,
    lane_index: [Constant<Bits<32>>; P],
    lane_count: Constant<Bits<32>>,
    phase_load: Constant<Bits<3>>,
    phase_search: Constant<Bits<3>>,
    phase_final: Constant<Bits<3>>,
}

impl<const P: usize, const A: usize> Default for Engine<P, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const P: usize, const A: usize> Engine<P, A> {
    /// Most users: `P x 2^A`.
    pub const MAX_USERS: usize = P << A;

    /// An engine in its reset state (all credits 0). `P` is 1 to 32 (the prefix
    /// network of [`crate::grant`]) and `P x 2^A` below 2^16 (the multiplications of
    /// PLAN take the user count as 16 bits).
    pub fn new() -> Self {
        assert!((1..=1 << LEVELS).contains(&P), "an engine has 1 to 32 lanes, not {P}");
        assert!(Self::MAX_USERS < 1 << 16, "an engine holds fewer than 65,536 users");
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
            lanes: array_init::array_init(|_| EngineLane::new()),
            sequencer: Sequencer::new(P),
            settings: Default::default(),
            network: Default::default(),
            plan: Default::default(),
            beat_valid: Default::default(),
            beat_data: array_init::array_init(|_| Default::default()),
            beat_ok: array_init::array_init(|_| Default::default()),
            lane_phase: Default::default(),
            final_mode: Default::default(),
            left: Default::default(),
            totals: Default::default(),
            reducing_d: Default::default(),
            load_reducing_d: Default::default(),
            probe_load: Default::default(),
            probe_a: array_init::array_init(|_| Default::default()),
            probe_b: array_init::array_init(|_| Default::default()),
            search_a: Default::default(),
            search_b: Default::default(),
            accept: Default::default(),
            step: Default::default(),
            reducing: Default::default(),
            clear: Default::default(),
            lane_index: array_init::array_init(|i| Constant::new(Bits::<32>::from(i as u64))),
            lane_count: Constant::new(Bits::<32>::from(P as u64)),
            phase_load: Constant::new(Bits::<3>::from(phase::LOAD)),
            phase_search: Constant::new(Bits::<3>::from(phase::SEARCH)),
            phase_final: Constant::new(Bits::<3>::from(phase::FINAL)),
        }
    }
}

impl<const P: usize, const A: usize> Logic for Engine<P, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, beat_valid, lane_phase, final_mode, left, reducing_d, load_reducing_d, probe_load);
        self.settings.clock.next = self.clock.val();
        self.network.clock.next = self.clock.val();
        self.plan.clock.next = self.clock.val();
        for i in 0..P {
            self.beat_data[i].clock.next = self.clock.val();
            self.beat_ok[i].clock.next = self.clock.val();
        }
        for j in 0..PROBES {
            self.probe_a[j].clock.next = self.clock.val();
            self.probe_b[j].clock.next = self.clock.val();
        }
        self.totals.clock.next = self.clock.val();

        // Decoded controls.
        // `busy` is a register of the sequencer, set with the move out of Idle and
        // cleared a cycle after the move back: an output with no path from `start` (a
        // shell may decide `start` from `busy`).
        // A demand beat is taken; it enters the lanes in the next cycle, from the beat
        // registers, so that `step` is two flip-flops and one LUT away from every lane.
        // The demand stream's handshake, on the sequencer's registered copy of LoadRun.
        self.accept.next = self.sequencer.at_load_run.val() & self.in_valid.val();
        self.beat_valid.d.next = self.accept.val();
        for i in 0..P {
            self.beat_data[i].d.next = self.in_data[i].val();
            self.beat_ok[i].d.next = self.left.q.val() > self.lane_index[i].val();
        }
        self.step.next = self.beat_valid.q.val() | self.sequencer.at_issue.val();
        self.reducing.next = self.sequencer.at_reduce.val();
        self.clear.next = self.sequencer.at_clear.val();

        // The settings: taken and checked in every idle cycle, so that those of the cycle
        // with `start` are kept; Begin acts on the check (`start` reaches only the
        // sequencer). The pool size and the shared slices follow (see `Settings`).
        self.settings.take.next = self.sequencer.take_settings.val();
        self.settings.mode_in.next = self.mode.val();
        self.settings.n_in.next = self.n_users.val();
        self.settings.fair_in.next = self.fair.val();
        self.settings.guaranteed_in.next = self.guaranteed.val();

        // The engine's accumulators: what leaves lane 0 during a reduction. The lanes
        // shift one cycle after `reducing` (they register it): so does the engine.
        self.reducing_d.d.next = self.reducing.val();
        self.load_reducing_d.d.next =
            self.sequencer.at_reduce.val() & (self.lane_phase.q.val() == self.phase_load.val());
        self.totals.add.next = self.reducing_d.q.val();
        self.totals.clear.next = self.clear.val();
        self.totals.take.next = self.load_reducing_d.q.val();
        self.totals.clear_ranges.next = self.sequencer.at_begin.val();
        self.totals.sum_a_in[0].next = self.lanes[0].sum_a_out0.val();
        self.totals.sum_a_in[1].next = self.lanes[0].sum_a_out1.val();
        self.totals.sum_a_in[2].next = self.lanes[0].sum_a_out2.val();
        self.totals.sum_b_in[0].next = self.lanes[0].sum_b_out0.val();
        self.totals.sum_b_in[1].next = self.lanes[0].sum_b_out1.val();
        self.totals.sum_b_in[2].next = self.lanes[0].sum_b_out2.val();
        self.totals.total_a_in.next = self.lanes[0].total_a_out.val();
        self.totals.total_b_in.next = self.lanes[0].total_b_out.val();
        self.totals.nfirst_a_in.next = self.lanes[0].nfirst_a_out.val();
        self.totals.end_a_in.next = self.lanes[0].end_a_out.val();
        self.totals.nfirst_b_in.next = self.lanes[0].nfirst_b_out.val();
        self.totals.end_b_in.next = self.lanes[0].end_b_out.val();
        self.totals.errors_in.next = self.lanes[0].err_out.val();

        // The two threshold searches: pulses from the FSM, counts from the accumulators.
        self.search_a.clock.next = self.clock.val();
        self.search_b.clock.next = self.clock.val();
        self.search_a.load_target.next = self.sequencer.at_load_target.val();
        self.search_b.load_target.next = self.sequencer.at_load_target.val();
        self.search_a.init.next = self.sequencer.at_search_init.val();
        self.search_b.init.next = self.sequencer.at_search_init.val();
        self.search_a.update1.next = self.sequencer.at_update1.val();
        self.search_b.update1.next = self.sequencer.at_update1.val();
        self.search_a.update2.next = self.sequencer.at_update2.val();
        self.search_b.update2.next = self.sequencer.at_update2.val();
        self.search_a.check.next = self.sequencer.at_search_check.val();
        self.search_b.check.next = self.sequencer.at_search_check.val();
        // The targets (taken in Plan4).
        self.search_a.target.next = self.plan.target_a.val();
        self.search_b.target.next = self.plan.target_b.val();
        self.search_a.total.next = self.plan.total_a.val();
        self.search_b.total.next = self.plan.total_b.val();
        self.search_a.first.next = !self.totals.nfirst_a.val();
        self.search_a.beyond.next = self.totals.end_a.val();
        self.search_b.first.next = !self.totals.nfirst_b.val();
        self.search_b.beyond.next = self.totals.end_b.val();
        for j in 0..PROBES {
            self.search_a.count[j].next = self.totals.sum_a[j].val();
            self.search_b.count[j].next = self.totals.sum_b[j].val();
            // The lanes' probes: the searches' LOAD probes in LOAD, their probes while
            // searching, their thresholds in FINAL.
            self.probe_a[j].d.next = self.search_a.probe[j].val();
            self.probe_b[j].d.next = self.search_b.probe[j].val();
            if self.probe_load.q.val() {
                self.probe_a[j].d.next = self.search_a.load_probe[j].val();
                self.probe_b[j].d.next = self.search_b.load_probe[j].val();
            }
            if self.final_mode.q.val() {
                self.probe_a[j].d.next = self.search_a.threshold.val();
                self.probe_b[j].d.next = self.search_b.threshold.val();
            }
        }

        // FINAL's tie-break: the slices left at each threshold, given to the lowest
        // indices at it (see `crate::grant`).
        self.network.load_rest.next = self.sequencer.at_final_start.val();
        self.network.rest_a_in.next = self.search_a.rest.val();
        self.network.rest_b_in.next = self.search_b.rest.val();
        self.network.issue.next = self.sequencer.at_final_issue.val();
        for i in 0..P {
            self.network.at_a[i].next = self.lanes[i].at_a.val();
            self.network.at_b[i].next = self.lanes[i].at_b.val();
        }

        // Lanes: shared controls, then the shift chain from lane to lane.
        for i in 0..P {
            self.lanes[i].clock.next = self.clock.val();
            self.lanes[i].mode.next = self.settings.mode.val();
            self.lanes[i].phase.next = self.lane_phase.q.val();
            self.lanes[i].fair.next = self.settings.fair.val();
            self.lanes[i].guaranteed.next = self.settings.guaranteed.val();
            self.lanes[i].free.next = self.settings.free.val();
            self.lanes[i].start.next = self.start.val();
            self.lanes[i].active.next = !self.sequencer.at_idle.val();
            self.lanes[i].credit_row.next = self.credit_row.val();
            self.lanes[i].credit_write.next = self.credit_write.val();
            self.lanes[i].host_credit.next = self.credit_wdata[i].val();
            self.lanes[i].restart.next = self.sequencer.at_restart.val();
            self.lanes[i].step.next = self.step.val();
            self.lanes[i].out_ready.next = self.out_ready.val();
            self.lanes[i].last_row.next = self.settings.last_row.val();
            self.lanes[i].demand_in.next = self.beat_data[i].q.val();
            self.lanes[i].exists.next = self.beat_ok[i].q.val();
            self.lanes[i].probe_a0.next = self.probe_a[0].q.val();
            self.lanes[i].probe_a1.next = self.probe_a[1].q.val();
            self.lanes[i].probe_a2.next = self.probe_a[2].q.val();
            self.lanes[i].probe_b0.next = self.probe_b[0].q.val();
            self.lanes[i].probe_b1.next = self.probe_b[1].q.val();
            self.lanes[i].probe_b2.next = self.probe_b[2].q.val();
            self.lanes[i].grant.next = self.network.grant[i].val();
            self.lanes[i].shift.next = self.reducing.val();
            self.lanes[i].sum_a_in0.next = 0.into();
            self.lanes[i].sum_a_in1.next = 0.into();
            self.lanes[i].sum_a_in2.next = 0.into();
            self.lanes[i].sum_b_in0.next = 0.into();
            self.lanes[i].sum_b_in1.next = 0.into();
            self.lanes[i].sum_b_in2.next = 0.into();
            self.lanes[i].total_a_in.next = 0.into();
            self.lanes[i].total_b_in.next = 0.into();
            self.lanes[i].nfirst_a_in.next = 0.into();
            self.lanes[i].end_a_in.next = 0.into();
            self.lanes[i].nfirst_b_in.next = 0.into();
            self.lanes[i].end_b_in.next = 0.into();
            self.lanes[i].err_in.next = 0.into();
            self.out_alloc[i].next = self.lanes[i].result_alloc.val();
            self.out_credit[i].next = self.lanes[i].result_credit.val();
            self.credit_rdata[i].next = self.lanes[i].credit.val();
        }
        for i in 0..(P - 1) {
            self.lanes[i].sum_a_in0.next = self.lanes[i + 1].sum_a_out0.val();
            self.lanes[i].sum_a_in1.next = self.lanes[i + 1].sum_a_out1.val();
            self.lanes[i].sum_a_in2.next = self.lanes[i + 1].sum_a_out2.val();
            self.lanes[i].sum_b_in0.next = self.lanes[i + 1].sum_b_out0.val();
            self.lanes[i].sum_b_in1.next = self.lanes[i + 1].sum_b_out1.val();
            self.lanes[i].sum_b_in2.next = self.lanes[i + 1].sum_b_out2.val();
            self.lanes[i].total_a_in.next = self.lanes[i + 1].total_a_out.val();
            self.lanes[i].total_b_in.next = self.lanes[i + 1].total_b_out.val();
            self.lanes[i].nfirst_a_in.next = self.lanes[i + 1].nfirst_a_out.val();
            self.lanes[i].end_a_in.next = self.lanes[i + 1].end_a_out.val();
            self.lanes[i].nfirst_b_in.next = self.lanes[i + 1].nfirst_b_out.val();
            self.lanes[i].end_b_in.next = self.lanes[i + 1].end_b_out.val();
            self.lanes[i].err_in.next = self.lanes[i + 1].err_out.val();
        }

        // Outputs by default.
        self.in_ready.next = self.sequencer.at_load_run.val();
        self.out_valid.next = self.lanes[0].result_valid.val();
        self.busy.next = self.sequencer.busy.val();
        self.done.next = self.sequencer.done.val();
        self.error.next = self.sequencer.error.val();
        self.cycles.next = self.sequencer.cycles.val();

        // The sequencer: when the engine moves (its inputs are flip-flops but for the
        // stream handshakes).
        self.sequencer.clock.next = self.clock.val();
        self.sequencer.start.next = self.start.val();
        self.sequencer.start_code.next = self.settings.code.val();
        self.sequencer.in_valid.next = self.in_valid.val();
        self.sequencer.last_taken.next = self.lanes[0].result_last_taken.val();
        self.sequencer.last_row_in.next = self.settings.seq_last_row.val();
        self.sequencer.more_a.next = self.search_a.more.val();
        self.sequencer.more_b.next = self.search_b.more.val();
        self.sequencer.warm_a.next = self.search_a.warm_start.val();
        self.sequencer.warm_b.next = self.search_b.warm_start.val();
        self.sequencer.refused.next = self.plan.refused.val();
        self.sequencer.lane_errors.next = self.totals.errors.val();

        // What the engine does in each phase.
        // What changes once per phase, on the sequencer's registered decodes (a decode
        // of the state here would be one LUT serving registers all over the die).
        if self.sequencer.at_begin.val() {
            self.probe_load.d.next = true;
            self.lane_phase.d.next = self.phase_load.val();
            self.final_mode.d.next = false;
        }
        // The users still to come, on the sequencer's copies of Begin and LoadRun kept
        // for this register (a beat is taken only in LoadRun: the condition of `accept`).
        if self.sequencer.start_left.val() {
            self.left.d.next = self.settings.n.val();
        }
        if self.sequencer.count_left.val() & self.in_valid.val() {
            self.left.d.next = self.left.q.val() - self.lane_count.val();
        }
        // PLAN, one step per cycle.
        if self.sequencer.at_plan1.val() {
            self.probe_load.d.next = false;
        }
        self.plan.plan1.next = self.sequencer.at_plan1.val();
        self.plan.plan2.next = self.sequencer.at_plan2.val();
        self.plan.plan3.next = self.sequencer.at_plan3.val();
        self.plan.mode.next = self.settings.mode.val();
        self.plan.candidates.next = self.totals.total_a.val();
        self.plan.donated.next = self.totals.total_b.val();
        self.plan.capacity.next = self.settings.capacity.val();
        self.plan.shared.next = self.settings.shared.val();
        if self.sequencer.at_search_check.val() & self.sequencer.more_any.val() {
            self.lane_phase.d.next = self.phase_search.val();
        }
        if self.sequencer.at_final_start.val() {
            self.final_mode.d.next = true;
            self.lane_phase.d.next = self.phase_final.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::row_divider;

    /// The reciprocal against integer division, for every 16-bit numerator and every
    /// lane count an engine can have.
    #[test]
    fn row_divider_divides_exactly() {
        for p in 1..=32usize {
            let (lo, hi, shift) = row_divider(p);
            assert!(lo < 1 << 16 && hi < 1 << 16, "p = {p}: {lo} {hi}");
            for x in 0..1u64 << 16 {
                assert_eq!((((x * lo) >> 16) + x * hi) >> shift, x / p as u64, "x = {x}, p = {p}");
            }
        }
    }
}
