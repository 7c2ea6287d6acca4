//! The engine: `P` lanes over `P x 2^A` users, one quantum per `start`.
//!
//! Phases, one row of `P` users per cycle through the lanes' pipelines (see
//! [`crate::lane`]), each stage at most one carry chain deep:
//! 1. LOAD: takes a beat of `P` demands per cycle from the input stream (valid/ready),
//!    reads the users' credits, stores each user's run of keys and adds up the totals
//!    per lane; the lanes' totals are then reduced by a shift chain towards lane 0
//!    (`P + 1` cycles: the engine's accumulators act a cycle after they are given a
//!    value, [`crate::reduce::LATENCY`]). Nothing persistent is written, so a range error here leaves the
//!    credits untouched.
//! 2. PLAN: supply, the borrowed total `B = min(supply, candidates)` and the used
//!    donations `U = min(B, donated)` (Karma), or `min(C, total demand)` (max-min), one
//!    step per cycle. The pool size `n f` and the shared slices `n (f - g)` come from
//!    two 16 x 16 bit multiplications per product, started with the quantum.
//! 3. SEARCH: radix-4 passes, one row per cycle, both thresholds at once, until each
//!    interval has shrunk to one key: at most 17 passes over a 32-bit key range. Each
//!    pass is followed by the reduction of the lanes' counts (`P + 1` cycles), the
//!    narrowing (2) and the next probes ([`crate::search::PROBE_LATENCY`], which
//!    includes the cycle in which the new interval is taken).
//! 4. FINAL: per user the keys below the threshold, plus one more for the lowest
//!    indices whose key equals it (a prefix count across the lanes, see
//!    [`crate::grant`]); allocations and credits are written into the banks.
//! 5. Results out: one row every two cycles on the result stream (valid/ready), read
//!    straight from the banks.
//!
//! Cycles per quantum, when the result stream never stalls, with `R = ceil(n / P)`
//! rows and `k` search passes: [`cycles`].

use crate::count_lane::PROBES;
use crate::grant::{GrantCell, LEVELS};
use crate::lane::{phase, EngineLane, FINAL_LATENCY, LOAD_LATENCY, SEARCH_LATENCY};
use crate::reduce::{MaxAcc, SatAcc};
use crate::search::{SearchUnit, PROBE_LATENCY};
use crate::sequencer::Sequencer;
use rust_hdl::prelude::*;

use fairshare_abi as abi;
/// Status codes of the `error` output: the device ABI's (`fairshare_abi::status`);
/// the engine's tests check that the block reports exactly these.
pub use fairshare_abi::status as error_code;

/// Cycles of one quantum of `n` users on `p` lanes with `k` search passes, when the
/// demand stream is never empty and the result stream never stalls (what the `cycles`
/// output reports), with `R = ceil(n / p)`:
/// - `2 + R + 1 + LOAD_LATENCY + p + L`: start, the settings' check, LOAD, the beat
///   register, its drain and the reduction (`L` = [`crate::reduce::LATENCY`], the
///   engine's accumulators taking what leaves lane 0);
/// - `4`: PLAN;
/// - `1 + PROBE_LATENCY`: the first interval, its probes and the check;
/// - `k (R + SEARCH_LATENCY + p + L + 2 + PROBE_LATENCY)`: per pass the rows, the drain,
///   the reduction, the narrowing, the next probes and the check;
/// - `3 + R + FINAL_LATENCY`: FINAL;
/// - `2 + 2R`: results out, a row every two cycles, and the cycle that closes the
///   quantum (the lanes' copies of `busy` fall with it).
///
/// With the constants of this build: `4R + p + 41 + k (R + p + 14)`.
pub fn cycles(n: usize, p: usize, k: usize) -> usize {
    let r = n.div_ceil(p);
    let reduce = p + crate::reduce::LATENCY;
    let load = 2 + r + 1 + LOAD_LATENCY + reduce;
    let first = 4 + 1 + PROBE_LATENCY;
    let passes = k * (r + SEARCH_LATENCY + reduce + 2 + PROBE_LATENCY);
    let fin = 3 + r + FINAL_LATENCY;
    load + first + passes + fin + 2 + 2 * r
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
    /// Credit port: write `credit_wdata` to the row.
    pub credit_write: Signal<In, Bit>,
    /// Credit port: balances to write.
    pub credit_wdata: [Signal<In, Bits<32>>; P],
    /// Credit port: balances of the row (one cycle after `credit_row`; in the cycle
    /// after a write to that row, undefined on an FPGA, where the banks have no
    /// read-first logic: read it a cycle later).
    pub credit_rdata: [Signal<Out, Bits<32>>; P],
    /// A quantum is in progress: from the cycle after `start` to the cycle after its
    /// last result is taken (two cycles for a quantum refused for its settings).
    pub busy: Signal<Out, Bit>,
    /// The last quantum finished (successfully or with `error`); cleared by `start`.
    pub done: Signal<Out, Bit>,
    /// Error code of the last quantum (see [`error_code`]).
    pub error: Signal<Out, Bits<4>>,
    /// Cycles from `start` to the end of the last quantum (3 for one refused for its
    /// settings).
    pub cycles: Signal<Out, Bits<32>>,
    lanes: [EngineLane<A>; P],
    cells: [GrantCell; P],
    sequencer: Sequencer<A>,
    /// The demand beat taken in the previous cycle: it enters the lanes now. Its data
    /// and the lanes' "user exists" flags are registered every cycle (no enable).
    beat_valid: DFF<Bit>,
    beat_data: [DFF<Bits<32>>; P],
    beat_ok: [DFF<Bit>; P],
    cfg_mode: DFF<Bits<2>>,
    cfg_n: DFF<Bits<32>>,
    cfg_fair: DFF<Bits<32>>,
    cfg_guaranteed: DFF<Bits<32>>,
    free: DFF<Bits<32>>,
    lane_phase: DFF<Bits<2>>,
    final_mode: DFF<Bit>,
    left: DFF<Bits<32>>,
    /// The quantum's last row, `ceil(n / P) - 1`, taken with the settings.
    cfg_last_row: DFF<Bits<A>>,
    /// The check of the settings taken with `start` (0 if they are good), made in
    /// Idle, acted on in Begin.
    start_code: DFF<Bits<4>>,
    /// The multiplications' operands, registered beside the multipliers: the settings'
    /// registers serve the whole engine and sit far from them. `n` has a copy per
    /// multiplier (`cap_lo`, `cap_hi`, `shared_lo`, `shared_hi`; hdl/synth.sh keeps them),
    /// as the multipliers sit apart in the die's DSP rows.
    n16: [DFF<Bits<16>>; 4],
    fair_lo: DFF<Bits<16>>,
    fair_hi: DFF<Bits<16>>,
    free_lo: DFF<Bits<16>>,
    free_hi: DFF<Bits<16>>,
    /// Each multiplier's operands once more and its product, registers that drive
    /// nothing but the multiplier and are driven by nothing but it, so that the placer
    /// can put them beside it: a multiplier's own delay is most of a cycle, so the wire
    /// to it must be short (the measurements: docs/engine.md, "Clock on an ECP5-85F").
    mul_n: [DFF<Bits<16>>; 4],
    mul_f: [DFF<Bits<16>>; 4],
    product: [DFF<Bits<32>>; 4],
    cap_lo: DFF<Bits<32>>,
    cap_hi: DFF<Bits<32>>,
    shared_lo: DFF<Bits<32>>,
    shared_hi: DFF<Bits<32>>,
    capacity: DFF<Bits<32>>,
    shared: DFF<Bits<32>>,
    total_a: DFF<Bits<32>>,
    total_b: DFF<Bits<32>>,
    supply: DFF<Bits<32>>,
    borrow: DFF<Bits<32>>,
    refused: DFF<Bit>,
    sum_a: [SatAcc; PROBES],
    sum_b: [SatAcc; PROBES],
    nfirst_a: MaxAcc,
    end_a: MaxAcc,
    nfirst_b: MaxAcc,
    end_b: MaxAcc,
    lane_errors: DFF<Bits<2>>,
    reducing_d: DFF<Bit>,
    load_reducing_d: DFF<Bit>,
    probe_a: [DFF<Bits<32>>; PROBES],
    probe_b: [DFF<Bits<32>>; PROBES],
    final_valid: DFF<Bits<16>>,
    rest_a: DFF<Bits<32>>,
    rest_b: DFF<Bits<32>>,
    rest_a_big: DFF<Bit>,
    rest_b_big: DFF<Bit>,
    rest_a_low: DFF<Bits<6>>,
    rest_b_low: DFF<Bits<6>>,
    search_a: SearchUnit,
    search_b: SearchUnit,
    accept: Signal<Local, Bit>,
    step: Signal<Local, Bit>,
    reducing: Signal<Local, Bit>,
    clear: Signal<Local, Bit>,
    cap_sum: Signal<Local, Bits<32>>,
    cap_carry: Signal<Local, Bit>,
    shared_sum: Signal<Local, Bits<32>>,
    shared_carry: Signal<Local, Bit>,
    supply_sum: Signal<Local, Bits<32>>,
    supply_carry: Signal<Local, Bit>,
    row_pop_a: Signal<Local, Bits<6>>,
    row_pop_b: Signal<Local, Bits<6>>,
    pop_a: Signal<Local, Bits<32>>,
    pop_b: Signal<Local, Bits<32>>,
    /// The bit of `final_valid` of the row whose threshold users leave the prefix
    /// network (see `crate::grant`).
    rest_update: Constant<Bits<16>>,
    n_max: Constant<Bits<32>>,
    lane_index: [Constant<Bits<32>>; P],
    lane_count: Constant<Bits<32>>,
    /// `(n - 1) / P` as a multiplication by a reciprocal (see [`row_divider`]).
    recip_lo: Constant<Bits<16>>,
    /// See `recip_lo`.
    recip_hi: Constant<Bits<16>>,
    /// See `recip_lo`.
    recip_shift: Constant<Bits<32>>,
    n_m1: Signal<Local, Bits<32>>,
    users_m1: Signal<Local, Bits<16>>,
    last_row: Signal<Local, Bits<32>>,
    div_lo: Signal<Local, Bits<32>>,
    div_hi: Signal<Local, Bits<32>>,
    max: Constant<Bits<32>>,
    limit: Constant<Bits<32>>,
    mode_karma: Constant<Bits<2>>,
    mode_maxmin: Constant<Bits<2>>,
    mode_strict: Constant<Bits<2>>,
    phase_load: Constant<Bits<2>>,
    phase_search: Constant<Bits<2>>,
    phase_final: Constant<Bits<2>>,
    phase_emit: Constant<Bits<2>>,
    code_users: Constant<Bits<4>>,
    code_guaranteed: Constant<Bits<4>>,
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

    /// An engine in its reset state (all credits 0). `P` is 1 to 32 (the prefix
    /// network of [`crate::grant`]) and `P x 2^A` below 2^16 (the multiplications of
    /// PLAN take the user count as 16 bits).
    pub fn new() -> Self {
        assert!((1..=1 << LEVELS).contains(&P), "an engine has 1 to 32 lanes, not {P}");
        assert!(Self::MAX_USERS < 1 << 16, "an engine holds fewer than 65,536 users");
        let (recip_lo, recip_hi, recip_shift) = row_divider(P);
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
            cells: array_init::array_init(|_| Default::default()),
            sequencer: Sequencer::new(P),
            beat_valid: Default::default(),
            beat_data: array_init::array_init(|_| Default::default()),
            beat_ok: array_init::array_init(|_| Default::default()),
            cfg_mode: Default::default(),
            cfg_n: Default::default(),
            cfg_fair: Default::default(),
            cfg_guaranteed: Default::default(),
            free: Default::default(),
            lane_phase: Default::default(),
            final_mode: Default::default(),
            left: Default::default(),
            cfg_last_row: Default::default(),
            start_code: Default::default(),
            mul_n: array_init::array_init(|_| Default::default()),
            mul_f: array_init::array_init(|_| Default::default()),
            product: array_init::array_init(|_| Default::default()),
            cap_lo: Default::default(),
            cap_hi: Default::default(),
            shared_lo: Default::default(),
            shared_hi: Default::default(),
            capacity: Default::default(),
            shared: Default::default(),
            total_a: Default::default(),
            total_b: Default::default(),
            supply: Default::default(),
            borrow: Default::default(),
            refused: Default::default(),
            sum_a: array_init::array_init(|_| Default::default()),
            sum_b: array_init::array_init(|_| Default::default()),
            nfirst_a: Default::default(),
            end_a: Default::default(),
            nfirst_b: Default::default(),
            end_b: Default::default(),
            lane_errors: Default::default(),
            reducing_d: Default::default(),
            load_reducing_d: Default::default(),
            probe_a: array_init::array_init(|_| Default::default()),
            probe_b: array_init::array_init(|_| Default::default()),
            final_valid: Default::default(),
            rest_a: Default::default(),
            rest_b: Default::default(),
            rest_a_big: Default::default(),
            rest_b_big: Default::default(),
            rest_a_low: Default::default(),
            rest_b_low: Default::default(),
            search_a: Default::default(),
            search_b: Default::default(),
            accept: Default::default(),
            step: Default::default(),
            reducing: Default::default(),
            clear: Default::default(),
            n16: array_init::array_init(|_| Default::default()),
            fair_lo: Default::default(),
            fair_hi: Default::default(),
            free_lo: Default::default(),
            free_hi: Default::default(),
            cap_sum: Default::default(),
            cap_carry: Default::default(),
            shared_sum: Default::default(),
            shared_carry: Default::default(),
            supply_sum: Default::default(),
            supply_carry: Default::default(),
            row_pop_a: Default::default(),
            row_pop_b: Default::default(),
            pop_a: Default::default(),
            pop_b: Default::default(),
            rest_update: Constant::new(Bits::<16>::from(1u64 << (crate::lane::AT_CYCLE + LEVELS))),
            n_max: Constant::new(Bits::<32>::from(Self::MAX_USERS as u64)),
            lane_index: array_init::array_init(|i| Constant::new(Bits::<32>::from(i as u64))),
            lane_count: Constant::new(Bits::<32>::from(P as u64)),
            recip_lo: Constant::new(Bits::<16>::from(recip_lo)),
            recip_hi: Constant::new(Bits::<16>::from(recip_hi)),
            recip_shift: Constant::new(Bits::<32>::from(recip_shift)),
            n_m1: Default::default(),
            users_m1: Default::default(),
            last_row: Default::default(),
            div_lo: Default::default(),
            div_hi: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
            limit: Constant::new(Bits::<32>::from(abi::WORD_LIMIT)),
            mode_karma: Constant::new(Bits::<2>::from(abi::mode::KARMA as u64)),
            mode_maxmin: Constant::new(Bits::<2>::from(abi::mode::MAXMIN as u64)),
            mode_strict: Constant::new(Bits::<2>::from(abi::mode::STRICT as u64)),
            phase_load: Constant::new(Bits::<2>::from(phase::LOAD)),
            phase_search: Constant::new(Bits::<2>::from(phase::SEARCH)),
            phase_final: Constant::new(Bits::<2>::from(phase::FINAL)),
            phase_emit: Constant::new(Bits::<2>::from(phase::EMIT)),
            code_users: Constant::new(Bits::<4>::from(abi::status::USERS as u64)),
            code_guaranteed: Constant::new(Bits::<4>::from(abi::status::GUARANTEED as u64)),
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
            beat_valid,
            cfg_mode,
            cfg_n,
            cfg_fair,
            cfg_guaranteed,
            free,
            lane_phase,
            final_mode,
            left,
            cfg_last_row,
            start_code,
            fair_lo,
            fair_hi,
            free_lo,
            free_hi,
            cap_lo,
            cap_hi,
            shared_lo,
            shared_hi,
            capacity,
            shared,
            total_a,
            total_b,
            supply,
            borrow,
            refused,
            lane_errors,
            reducing_d,
            load_reducing_d,
            final_valid,
            rest_a,
            rest_b,
            rest_a_big,
            rest_b_big,
            rest_a_low,
            rest_b_low
        );
        for i in 0..P {
            self.beat_data[i].clock.next = self.clock.val();
            self.beat_ok[i].clock.next = self.clock.val();
        }
        for j in 0..PROBES {
            self.probe_a[j].clock.next = self.clock.val();
            self.probe_b[j].clock.next = self.clock.val();
            self.sum_a[j].clock.next = self.clock.val();
            self.sum_b[j].clock.next = self.clock.val();
        }
        self.nfirst_a.clock.next = self.clock.val();
        self.end_a.clock.next = self.clock.val();
        self.nfirst_b.clock.next = self.clock.val();
        self.end_b.clock.next = self.clock.val();

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

        // The pool size `n f` and the shared slices `n (f - g)`, saturated at 2^32 - 1:
        // `n < 2^16` and `f < 2^31` (both checked at start), two 16 x 16 bit products
        // per value of registered halves, each registered before and after its
        // multiplier, then one addition: ready six cycles after the settings (PLAN reads
        // them after LOAD, at least 13 cycles after start).
        self.free.d.next = self.cfg_fair.q.val() - self.cfg_guaranteed.q.val();
        for k in 0..4 {
            self.n16[k].clock.next = self.clock.val();
            self.n16[k].d.next = self.cfg_n.q.val().get_bits::<16>(0);
        }
        self.fair_lo.d.next = self.cfg_fair.q.val().get_bits::<16>(0);
        self.fair_hi.d.next = self.cfg_fair.q.val().get_bits::<16>(16);
        self.free_lo.d.next = self.free.q.val().get_bits::<16>(0);
        self.free_hi.d.next = self.free.q.val().get_bits::<16>(16);
        self.mul_f[0].d.next = self.fair_lo.q.val();
        self.mul_f[1].d.next = self.fair_hi.q.val();
        self.mul_f[2].d.next = self.free_lo.q.val();
        self.mul_f[3].d.next = self.free_hi.q.val();
        for k in 0..4 {
            self.mul_n[k].clock.next = self.clock.val();
            self.mul_f[k].clock.next = self.clock.val();
            self.product[k].clock.next = self.clock.val();
            self.mul_n[k].d.next = self.n16[k].q.val();
            self.product[k].d.next = self.mul_n[k].q.val() * self.mul_f[k].q.val();
        }
        self.cap_lo.d.next = self.product[0].q.val();
        self.cap_hi.d.next = self.product[1].q.val();
        self.shared_lo.d.next = self.product[2].q.val();
        self.shared_hi.d.next = self.product[3].q.val();
        self.cap_sum.next = (self.cap_hi.q.val() << 16) + self.cap_lo.q.val();
        self.cap_carry.next = (self.cap_hi.q.val().get_bit(15) & self.cap_lo.q.val().get_bit(31))
            | ((self.cap_hi.q.val().get_bit(15) | self.cap_lo.q.val().get_bit(31)) & !self.cap_sum.val().get_bit(31));
        self.capacity.d.next = self.cap_sum.val();
        if self.cap_carry.val() | ((self.cap_hi.q.val() >> 16) != 0) {
            self.capacity.d.next = self.max.val();
        }
        self.shared_sum.next = (self.shared_hi.q.val() << 16) + self.shared_lo.q.val();
        self.shared_carry.next = (self.shared_hi.q.val().get_bit(15) & self.shared_lo.q.val().get_bit(31))
            | ((self.shared_hi.q.val().get_bit(15) | self.shared_lo.q.val().get_bit(31))
                & !self.shared_sum.val().get_bit(31));
        self.shared.d.next = self.shared_sum.val();
        if self.shared_carry.val() | ((self.shared_hi.q.val() >> 16) != 0) {
            self.shared.d.next = self.max.val();
        }

        // The engine's accumulators: what leaves lane 0 during a reduction.
        self.sum_a[0].x.next = self.lanes[0].sum_a_out0.val();
        self.sum_a[1].x.next = self.lanes[0].sum_a_out1.val();
        self.sum_a[2].x.next = self.lanes[0].sum_a_out2.val();
        self.sum_b[0].x.next = self.lanes[0].sum_b_out0.val();
        self.sum_b[1].x.next = self.lanes[0].sum_b_out1.val();
        self.sum_b[2].x.next = self.lanes[0].sum_b_out2.val();
        // The lanes shift one cycle after `reducing` (they register it): so does the
        // engine.
        self.reducing_d.d.next = self.reducing.val();
        self.load_reducing_d.d.next =
            self.sequencer.at_reduce.val() & (self.lane_phase.q.val() == self.phase_load.val());
        for j in 0..PROBES {
            self.sum_a[j].add.next = self.reducing_d.q.val();
            self.sum_b[j].add.next = self.reducing_d.q.val();
            self.sum_a[j].shift.next = self.clear.val();
            self.sum_b[j].shift.next = self.clear.val();
            self.sum_a[j].shift_in.next = 0.into();
            self.sum_b[j].shift_in.next = 0.into();
        }
        self.nfirst_a.x.next = self.lanes[0].nfirst_a_out.val();
        self.end_a.x.next = self.lanes[0].end_a_out.val();
        self.nfirst_b.x.next = self.lanes[0].nfirst_b_out.val();
        self.end_b.x.next = self.lanes[0].end_b_out.val();
        self.nfirst_a.take.next = self.load_reducing_d.q.val();
        self.end_a.take.next = self.load_reducing_d.q.val();
        self.nfirst_b.take.next = self.load_reducing_d.q.val();
        self.end_b.take.next = self.load_reducing_d.q.val();
        self.nfirst_a.shift.next = self.sequencer.at_begin.val();
        self.end_a.shift.next = self.sequencer.at_begin.val();
        self.nfirst_b.shift.next = self.sequencer.at_begin.val();
        self.end_b.shift.next = self.sequencer.at_begin.val();
        self.nfirst_a.shift_in.next = 0.into();
        self.end_a.shift_in.next = 0.into();
        self.nfirst_b.shift_in.next = 0.into();
        self.end_b.shift_in.next = 0.into();
        if self.load_reducing_d.q.val() {
            self.lane_errors.d.next = self.lane_errors.q.val() | self.lanes[0].err_out.val();
        }

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
        // The targets (taken in Plan4): the borrowed total, and what it takes from the
        // donors; max-min's one search takes the capacity from the candidates.
        self.search_a.target.next = 0.into();
        self.search_b.target.next = 0.into();
        if self.cfg_mode.q.val() == self.mode_karma.val() {
            self.search_a.target.next = self.borrow.q.val();
            self.search_b.target.next = self.total_b.q.val();
            if self.borrow.q.val() < self.total_b.q.val() {
                self.search_b.target.next = self.borrow.q.val();
            }
        }
        if self.cfg_mode.q.val() == self.mode_maxmin.val() {
            self.search_b.target.next = self.total_b.q.val();
            if self.capacity.q.val() < self.total_b.q.val() {
                self.search_b.target.next = self.capacity.q.val();
            }
        }
        self.search_a.total.next = self.total_a.q.val();
        self.search_b.total.next = self.total_b.q.val();
        self.search_a.first.next = !self.nfirst_a.q.val();
        self.search_a.beyond.next = self.end_a.q.val();
        self.search_b.first.next = !self.nfirst_b.q.val();
        self.search_b.beyond.next = self.end_b.q.val();
        for j in 0..PROBES {
            self.search_a.count[j].next = self.sum_a[j].q.val();
            self.search_b.count[j].next = self.sum_b[j].q.val();
            // The lanes' probes: the searches' while searching, their thresholds in FINAL.
            self.probe_a[j].d.next = self.search_a.probe[j].val();
            self.probe_b[j].d.next = self.search_b.probe[j].val();
            if self.final_mode.q.val() {
                self.probe_a[j].d.next = self.search_a.threshold.val();
                self.probe_b[j].d.next = self.search_b.threshold.val();
            }
        }

        // FINAL's tie-break: the slices left at each threshold, less the users at it in
        // each row that passes the prefix network (see `crate::grant`).
        self.final_valid.d.next = (self.final_valid.q.val() << 1).replace_bit(0, self.sequencer.at_final_issue.val());
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
        if (self.final_valid.q.val() & self.rest_update.val()) != 0 {
            self.rest_a.d.next = 0.into();
            if self.rest_a.q.val() > self.pop_a.val() {
                self.rest_a.d.next = self.rest_a.q.val() - self.pop_a.val();
            }
            self.rest_b.d.next = 0.into();
            if self.rest_b.q.val() > self.pop_b.val() {
                self.rest_b.d.next = self.rest_b.q.val() - self.pop_b.val();
            }
        }
        for i in 0..P {
            self.cells[i].clock.next = self.clock.val();
            self.cells[i].at_a.next = self.lanes[i].at_a.val();
            self.cells[i].at_b.next = self.lanes[i].at_b.val();
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

        // Lanes: shared controls, then the shift chain from lane to lane.
        for i in 0..P {
            self.lanes[i].clock.next = self.clock.val();
            self.lanes[i].mode.next = self.cfg_mode.q.val();
            self.lanes[i].phase.next = self.lane_phase.q.val();
            self.lanes[i].fair.next = self.cfg_fair.q.val();
            self.lanes[i].guaranteed.next = self.cfg_guaranteed.q.val();
            self.lanes[i].free.next = self.free.q.val();
            self.lanes[i].start.next = self.start.val();
            self.lanes[i].active.next = !self.sequencer.at_idle.val();
            self.lanes[i].credit_row.next = self.credit_row.val();
            self.lanes[i].credit_write.next = self.credit_write.val();
            self.lanes[i].host_credit.next = self.credit_wdata[i].val();
            self.lanes[i].restart.next = self.sequencer.at_restart.val();
            self.lanes[i].step.next = self.step.val();
            self.lanes[i].advance.next = self.sequencer.at_emit_show.val() & self.out_ready.val();
            self.lanes[i].demand_in.next = self.beat_data[i].q.val();
            self.lanes[i].exists.next = self.beat_ok[i].q.val();
            self.lanes[i].probe_a0.next = self.probe_a[0].q.val();
            self.lanes[i].probe_a1.next = self.probe_a[1].q.val();
            self.lanes[i].probe_a2.next = self.probe_a[2].q.val();
            self.lanes[i].probe_b0.next = self.probe_b[0].q.val();
            self.lanes[i].probe_b1.next = self.probe_b[1].q.val();
            self.lanes[i].probe_b2.next = self.probe_b[2].q.val();
            self.lanes[i].grant.next = self.cells[i].grant.val();
            self.lanes[i].shift.next = self.reducing.val();
            self.lanes[i].sum_a_in0.next = 0.into();
            self.lanes[i].sum_a_in1.next = 0.into();
            self.lanes[i].sum_a_in2.next = 0.into();
            self.lanes[i].sum_b_in0.next = 0.into();
            self.lanes[i].sum_b_in1.next = 0.into();
            self.lanes[i].sum_b_in2.next = 0.into();
            self.lanes[i].nfirst_a_in.next = 0.into();
            self.lanes[i].end_a_in.next = 0.into();
            self.lanes[i].nfirst_b_in.next = 0.into();
            self.lanes[i].end_b_in.next = 0.into();
            self.lanes[i].err_in.next = 0.into();
            self.out_alloc[i].next = self.lanes[i].alloc.val();
            self.out_credit[i].next = self.lanes[i].credit.val();
            self.credit_rdata[i].next = self.lanes[i].credit.val();
        }
        for i in 0..(P - 1) {
            self.lanes[i].sum_a_in0.next = self.lanes[i + 1].sum_a_out0.val();
            self.lanes[i].sum_a_in1.next = self.lanes[i + 1].sum_a_out1.val();
            self.lanes[i].sum_a_in2.next = self.lanes[i + 1].sum_a_out2.val();
            self.lanes[i].sum_b_in0.next = self.lanes[i + 1].sum_b_out0.val();
            self.lanes[i].sum_b_in1.next = self.lanes[i + 1].sum_b_out1.val();
            self.lanes[i].sum_b_in2.next = self.lanes[i + 1].sum_b_out2.val();
            self.lanes[i].nfirst_a_in.next = self.lanes[i + 1].nfirst_a_out.val();
            self.lanes[i].end_a_in.next = self.lanes[i + 1].end_a_out.val();
            self.lanes[i].nfirst_b_in.next = self.lanes[i + 1].nfirst_b_out.val();
            self.lanes[i].end_b_in.next = self.lanes[i + 1].end_b_out.val();
            self.lanes[i].err_in.next = self.lanes[i + 1].err_out.val();
        }

        // Outputs by default.
        self.in_ready.next = self.sequencer.at_load_run.val();
        self.out_valid.next = self.sequencer.at_emit_show.val();
        self.busy.next = self.sequencer.busy.val();
        self.done.next = self.sequencer.done.val();
        self.error.next = self.sequencer.error.val();
        self.cycles.next = self.sequencer.cycles.val();
        self.supply_sum.next = self.total_b.q.val() + self.shared.q.val();
        self.supply_carry.next = (self.total_b.q.val().get_bit(31) & self.shared.q.val().get_bit(31))
            | ((self.total_b.q.val().get_bit(31) | self.shared.q.val().get_bit(31))
                & !self.supply_sum.val().get_bit(31));

        // The sequencer: when the engine moves (its inputs are flip-flops but for the
        // stream handshakes).
        self.sequencer.clock.next = self.clock.val();
        self.sequencer.start.next = self.start.val();
        self.sequencer.start_code.next = self.start_code.q.val();
        self.sequencer.in_valid.next = self.in_valid.val();
        self.sequencer.out_ready.next = self.out_ready.val();
        self.sequencer.last_row_in.next = self.cfg_last_row.q.val();
        self.sequencer.more_a.next = self.search_a.more.val();
        self.sequencer.more_b.next = self.search_b.more.val();
        self.sequencer.refused.next = self.refused.q.val();
        self.sequencer.lane_errors.next = self.lane_errors.q.val();

        // What the engine does in each phase.
        // The settings are taken and checked into `start_code` (from the inputs) in
        // every idle cycle, so that those of the cycle with `start` are kept; Begin acts
        // on the check. `start` reaches only the sequencer.
        // The quantum's last row, (n - 1) / P (see `row_divider`).
        // (Locals between: RustHDL's Verilog cannot slice an expression.)
        self.n_m1.next = self.n_users.val() - 1;
        self.users_m1.next = self.n_m1.val().get_bits::<16>(0);
        self.div_lo.next = self.users_m1.val() * self.recip_lo.val();
        self.div_hi.next = self.users_m1.val() * self.recip_hi.val();
        self.last_row.next = ((self.div_lo.val() >> 16) + self.div_hi.val()) >> self.recip_shift.val();
        if self.sequencer.at_idle.val() {
            self.cfg_mode.d.next = self.mode.val();
            self.cfg_n.d.next = self.n_users.val();
            self.cfg_last_row.d.next = self.last_row.val().get_bits::<A>(0);
            self.cfg_fair.d.next = self.fair.val();
            self.cfg_guaranteed.d.next = self.guaranteed.val();
            self.start_code.d.next = 0.into();
            if (self.n_users.val() == 0) | (self.n_users.val() > self.n_max.val()) {
                self.start_code.d.next = self.code_users.val();
            } else if self.guaranteed.val() > self.fair.val() {
                self.start_code.d.next = self.code_guaranteed.val();
            } else if (self.fair.val() == 0) | (self.fair.val() >= self.limit.val()) {
                self.start_code.d.next = self.code_capacity.val();
            } else if self.mode.val() > self.mode_strict.val() {
                self.start_code.d.next = self.code_mode.val();
            }
        }
        // What changes once per phase, on the sequencer's registered decodes (a decode
        // of the state here would be one LUT serving registers all over the die).
        if self.sequencer.at_begin.val() {
            self.left.d.next = self.cfg_n.q.val();
            self.lane_errors.d.next = 0.into();
            self.lane_phase.d.next = self.phase_load.val();
            self.final_mode.d.next = false;
        }
        // A beat is taken only in LoadRun.
        if self.accept.val() {
            self.left.d.next = self.left.q.val() - self.lane_count.val();
        }
        if self.sequencer.at_plan1.val() {
            self.total_a.d.next = self.sum_a[0].q.val();
            self.total_b.d.next = self.sum_b[0].q.val();
            self.refused.d.next =
                (self.cfg_mode.q.val() != self.mode_strict.val()) & (self.capacity.q.val() >= self.limit.val());
        }
        if self.sequencer.at_plan2.val() {
            self.supply.d.next = self.supply_sum.val();
            if self.supply_carry.val() {
                self.supply.d.next = self.max.val();
            }
        }
        if self.sequencer.at_plan3.val() {
            // The borrowed total, min(supply, candidates).
            self.borrow.d.next = self.total_a.q.val();
            if self.supply.q.val() < self.total_a.q.val() {
                self.borrow.d.next = self.supply.q.val();
            }
        }
        if self.sequencer.at_search_check.val() & self.sequencer.more_any.val() {
            self.lane_phase.d.next = self.phase_search.val();
        }
        if self.sequencer.at_final_start.val() {
            self.rest_a.d.next = self.search_a.rest.val();
            self.rest_b.d.next = self.search_b.rest.val();
            self.final_mode.d.next = true;
            self.lane_phase.d.next = self.phase_final.val();
        }
        if self.sequencer.at_emit_start.val() {
            self.lane_phase.d.next = self.phase_emit.val();
            self.final_mode.d.next = false;
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
