//! One lane of the engine: the RAM banks of the users it owns (user `row * P + lane`),
//! the per-user arithmetic of the LOAD pass (guaranteed allocation, donation, the user's
//! run of candidate keys) and of the FINAL pass (slices taken below the thresholds,
//! ties in index order, new credits), and its links in the lane-to-lane chains.
//!
//! Keys are unit-step runs `start, start + 1, ..., start + run - 1`; a search selects
//! the `target` smallest keys, ties to the lowest user index. Karma borrowers have
//! `start = !c1` (so the most credits come first), donors `start = c1`, where `c1` is
//! the balance after the free credits; max-min users have `start = 1`, `run = demand`.

use crate::count_lane::CountLane;
use rust_hdl::prelude::*;

/// Modes of the `mode` input: the device ABI's (`fairshare_abi::mode`).
pub use fairshare_abi::mode;

/// One lane; `A` address bits per RAM bank (2^A users per lane).
#[derive(LogicBlock)]
pub struct EngineLane<const A: usize> {
    /// Clock of every register and RAM.
    pub clock: Signal<In, Clock>,
    /// Mode register (see [`mode`]).
    pub mode: Signal<In, Bits<2>>,
    /// Row read by every bank (data valid one cycle later).
    pub rd_addr: Signal<In, Bits<A>>,
    /// Row written.
    pub wr_addr: Signal<In, Bits<A>>,
    /// LOAD: write start, run, base and kind of this row.
    pub write_state: Signal<In, Bit>,
    /// FINAL or restore: write the credit bank.
    pub write_credit: Signal<In, Bit>,
    /// Restore: write `host_credit` instead of the computed balance.
    pub use_host_credit: Signal<In, Bit>,
    /// Balance written on restore.
    pub host_credit: Signal<In, Bits<32>>,
    /// Capture `demand_in`.
    pub latch_demand: Signal<In, Bit>,
    /// This lane's demand in the current beat.
    pub demand_in: Signal<In, Bits<32>>,
    /// Index of lane 0's user in the current row.
    pub user_base: Signal<In, Bits<32>>,
    /// Users in the pool.
    pub n_users: Signal<In, Bits<32>>,
    /// Fair share `f`.
    pub fair: Signal<In, Bits<32>>,
    /// Guaranteed share `g`.
    pub guaranteed: Signal<In, Bits<32>>,
    /// Free credits per quantum, `f - g`.
    pub free: Signal<In, Bits<32>>,
    /// Probes of search A (in FINAL: all equal to its threshold). (probe 0)
    pub probe_a0: Signal<In, Bits<32>>,
    /// Probes of search A (in FINAL: all equal to its threshold). (probe 1)
    pub probe_a1: Signal<In, Bits<32>>,
    /// Probes of search A (in FINAL: all equal to its threshold). (probe 2)
    pub probe_a2: Signal<In, Bits<32>>,
    /// Probes of search B. (probe 0)
    pub probe_b0: Signal<In, Bits<32>>,
    /// Probes of search B. (probe 1)
    pub probe_b1: Signal<In, Bits<32>>,
    /// Probes of search B. (probe 2)
    pub probe_b2: Signal<In, Bits<32>>,
    /// Chain: keys below the probes of search A. (probe 0)
    pub count_a_in0: Signal<In, Bits<32>>,
    /// Chain: keys below the probes of search A. (probe 1)
    pub count_a_in1: Signal<In, Bits<32>>,
    /// Chain: keys below the probes of search A. (probe 2)
    pub count_a_in2: Signal<In, Bits<32>>,
    /// Chain out. (probe 0)
    pub count_a_out0: Signal<Out, Bits<32>>,
    /// Chain out. (probe 1)
    pub count_a_out1: Signal<Out, Bits<32>>,
    /// Chain out. (probe 2)
    pub count_a_out2: Signal<Out, Bits<32>>,
    /// Chain: keys below the probes of search B. (probe 0)
    pub count_b_in0: Signal<In, Bits<32>>,
    /// Chain: keys below the probes of search B. (probe 1)
    pub count_b_in1: Signal<In, Bits<32>>,
    /// Chain: keys below the probes of search B. (probe 2)
    pub count_b_in2: Signal<In, Bits<32>>,
    /// Chain out. (probe 0)
    pub count_b_out0: Signal<Out, Bits<32>>,
    /// Chain out. (probe 1)
    pub count_b_out1: Signal<Out, Bits<32>>,
    /// Chain out. (probe 2)
    pub count_b_out2: Signal<Out, Bits<32>>,
    /// Chain: slices at the threshold of A still to give (FINAL).
    pub rest_a_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub rest_a_out: Signal<Out, Bits<32>>,
    /// Chain: slices at the threshold of B still to give.
    pub rest_b_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub rest_b_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): candidate slices of search A.
    pub total_a_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub total_a_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): keys of search B (donated slices, or max-min demand).
    pub total_b_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub total_b_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): the lowest run start of search A (2^32 - 1 if none).
    pub first_a_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub first_a_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): the highest run end (start + run) of search A (0 if none).
    pub end_a_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub end_a_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): the lowest run start of search B (2^32 - 1 if none).
    pub first_b_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub first_b_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): the highest run end (start + run) of search B (0 if none).
    pub end_b_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub end_b_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): pool size, sum of `f`.
    pub capacity_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub capacity_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): shared slices, sum of `f - g`.
    pub shared_in: Signal<In, Bits<32>>,
    /// Chain out.
    pub shared_out: Signal<Out, Bits<32>>,
    /// Chain (LOAD): error bits, bit 0 a demand at or above 2^31, bit 1 a balance at or
    /// above 2^31 or one that could reach it this quantum (Karma).
    pub error_in: Signal<In, Bits<2>>,
    /// Chain out.
    pub error_out: Signal<Out, Bits<2>>,
    /// FINAL: allocation of this lane's user (0 if the lane has no user).
    pub alloc: Signal<Out, Bits<32>>,
    /// FINAL: credits after the quantum.
    pub credit: Signal<Out, Bits<32>>,
    /// The credit bank at `rd_addr` (checkpoint).
    pub credit_now: Signal<Out, Bits<32>>,
    user_ok: Signal<Local, Bit>,
    credit_ram: RAM<Bits<32>, A>,
    start_ram: RAM<Bits<32>, A>,
    run_ram: RAM<Bits<32>, A>,
    base_ram: RAM<Bits<32>, A>,
    kind_ram: RAM<Bits<2>, A>,
    demand: DFF<Bits<32>>,
    count_a: CountLane,
    count_b: CountLane,
    lane_index: Constant<Bits<32>>,
    max: Constant<Bits<32>>,
    limit: Constant<Bits<32>>,
    mode_karma: Constant<Bits<2>>,
    mode_maxmin: Constant<Bits<2>>,
    c1: Signal<Local, Bits<32>>,
    new_kind: Signal<Local, Bits<2>>,
    new_start: Signal<Local, Bits<32>>,
    new_run: Signal<Local, Bits<32>>,
    new_base: Signal<Local, Bits<32>>,
    new_end: Signal<Local, Bits<32>>,
    credit_error: Signal<Local, Bit>,
    demand_error: Signal<Local, Bit>,
    error_bits: Signal<Local, Bits<2>>,
    grant_a: Signal<Local, Bits<32>>,
    grant_b: Signal<Local, Bits<32>>,
    take_a: Signal<Local, Bits<32>>,
    take_b: Signal<Local, Bits<32>>,
    final_credit: Signal<Local, Bits<32>>,
}

impl<const A: usize> EngineLane<A> {
    /// Lane number `lane` (its users are `row * P + lane`).
    pub fn new(lane: usize) -> Self {
        EngineLane {
            clock: Default::default(),
            mode: Default::default(),
            rd_addr: Default::default(),
            wr_addr: Default::default(),
            write_state: Default::default(),
            write_credit: Default::default(),
            use_host_credit: Default::default(),
            host_credit: Default::default(),
            latch_demand: Default::default(),
            demand_in: Default::default(),
            user_base: Default::default(),
            n_users: Default::default(),
            fair: Default::default(),
            guaranteed: Default::default(),
            free: Default::default(),
            probe_a0: Default::default(),
            probe_a1: Default::default(),
            probe_a2: Default::default(),
            probe_b0: Default::default(),
            probe_b1: Default::default(),
            probe_b2: Default::default(),
            count_a_in0: Default::default(),
            count_a_in1: Default::default(),
            count_a_in2: Default::default(),
            count_a_out0: Default::default(),
            count_a_out1: Default::default(),
            count_a_out2: Default::default(),
            count_b_in0: Default::default(),
            count_b_in1: Default::default(),
            count_b_in2: Default::default(),
            count_b_out0: Default::default(),
            count_b_out1: Default::default(),
            count_b_out2: Default::default(),
            rest_a_in: Default::default(),
            rest_a_out: Default::default(),
            rest_b_in: Default::default(),
            rest_b_out: Default::default(),
            total_a_in: Default::default(),
            total_a_out: Default::default(),
            total_b_in: Default::default(),
            total_b_out: Default::default(),
            first_a_in: Default::default(),
            first_a_out: Default::default(),
            end_a_in: Default::default(),
            end_a_out: Default::default(),
            first_b_in: Default::default(),
            first_b_out: Default::default(),
            end_b_in: Default::default(),
            end_b_out: Default::default(),
            capacity_in: Default::default(),
            capacity_out: Default::default(),
            shared_in: Default::default(),
            shared_out: Default::default(),
            error_in: Default::default(),
            error_out: Default::default(),
            alloc: Default::default(),
            credit: Default::default(),
            credit_now: Default::default(),
            user_ok: Default::default(),
            credit_ram: Default::default(),
            start_ram: Default::default(),
            run_ram: Default::default(),
            base_ram: Default::default(),
            kind_ram: Default::default(),
            demand: Default::default(),
            count_a: CountLane::new(),
            count_b: CountLane::new(),
            lane_index: Constant::new(Bits::<32>::from(lane as u64)),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
            limit: Constant::new(Bits::<32>::from(fairshare_abi::WORD_LIMIT)),
            mode_karma: Constant::new(Bits::<2>::from(mode::KARMA as u64)),
            mode_maxmin: Constant::new(Bits::<2>::from(mode::MAXMIN as u64)),
            c1: Default::default(),
            new_kind: Default::default(),
            new_start: Default::default(),
            new_run: Default::default(),
            new_base: Default::default(),
            new_end: Default::default(),
            credit_error: Default::default(),
            demand_error: Default::default(),
            error_bits: Default::default(),
            grant_a: Default::default(),
            grant_b: Default::default(),
            take_a: Default::default(),
            take_b: Default::default(),
            final_credit: Default::default(),
        }
    }
}

impl<const A: usize> Logic for EngineLane<A> {
    #[hdl_gen]
    fn update(&mut self) {
        // Clocks and addresses of the banks.
        self.credit_ram.read_clock.next = self.clock.val();
        self.credit_ram.write_clock.next = self.clock.val();
        self.start_ram.read_clock.next = self.clock.val();
        self.start_ram.write_clock.next = self.clock.val();
        self.run_ram.read_clock.next = self.clock.val();
        self.run_ram.write_clock.next = self.clock.val();
        self.base_ram.read_clock.next = self.clock.val();
        self.base_ram.write_clock.next = self.clock.val();
        self.kind_ram.read_clock.next = self.clock.val();
        self.kind_ram.write_clock.next = self.clock.val();
        dff_setup!(self, clock, demand);
        if self.latch_demand.val() {
            self.demand.d.next = self.demand_in.val();
        }
        self.credit_ram.read_address.next = self.rd_addr.val();
        self.start_ram.read_address.next = self.rd_addr.val();
        self.run_ram.read_address.next = self.rd_addr.val();
        self.base_ram.read_address.next = self.rd_addr.val();
        self.kind_ram.read_address.next = self.rd_addr.val();
        self.credit_ram.write_address.next = self.wr_addr.val();
        self.start_ram.write_address.next = self.wr_addr.val();
        self.run_ram.write_address.next = self.wr_addr.val();
        self.base_ram.write_address.next = self.wr_addr.val();
        self.kind_ram.write_address.next = self.wr_addr.val();
        self.credit_now.next = self.credit_ram.read_data.val();
        self.user_ok.next = (self.user_base.val() + self.lane_index.val()) < self.n_users.val();

        // LOAD: the user's run, from its demand and its balance after the free credits.
        self.c1.next = self.credit_ram.read_data.val() + self.free.val();
        self.new_kind.next = 0.into();
        self.new_start.next = 0.into();
        self.new_run.next = 0.into();
        self.new_base.next = 0.into();
        self.credit_error.next = false;
        if self.mode.val() == self.mode_karma.val() {
            if self.demand.q.val() < self.guaranteed.val() {
                self.new_kind.next = 2.into();
                self.new_start.next = self.c1.val();
                self.new_run.next = self.guaranteed.val() - self.demand.q.val();
                self.new_base.next = self.demand.q.val();
            } else {
                self.new_base.next = self.guaranteed.val();
                if (self.demand.q.val() > self.guaranteed.val()) & (self.c1.val() != 0) {
                    self.new_kind.next = 1.into();
                    self.new_start.next = !self.c1.val();
                    if self.demand.q.val() - self.guaranteed.val() < self.c1.val() {
                        self.new_run.next = self.demand.q.val() - self.guaranteed.val();
                    } else {
                        self.new_run.next = self.c1.val();
                    }
                }
            }
            // The stored balance must be below 2^31 (so `c1` cannot wrap), and so must
            // every balance this quantum can produce: `c1`, and a donor's `c1` plus
            // everything it could earn. Borrowers only lose credits.
            if (self.credit_ram.read_data.val() >= self.limit.val())
                | (self.c1.val() >= self.limit.val())
                | ((self.new_kind.val() == 2) & (self.c1.val() + self.new_run.val() >= self.limit.val()))
            {
                self.credit_error.next = true;
            }
        } else if self.mode.val() == self.mode_maxmin.val() {
            self.new_kind.next = 2.into();
            self.new_start.next = 1.into();
            self.new_run.next = self.demand.q.val();
        } else if self.demand.q.val() < self.fair.val() {
            self.new_base.next = self.demand.q.val();
        } else {
            self.new_base.next = self.fair.val();
        }
        self.demand_error.next = self.demand.q.val() >= self.limit.val();
        if !self.user_ok.val() {
            self.new_kind.next = 0.into();
            self.new_run.next = 0.into();
            self.new_base.next = 0.into();
        }
        self.start_ram.write_data.next = self.new_start.val();
        self.run_ram.write_data.next = self.new_run.val();
        self.base_ram.write_data.next = self.new_base.val();
        self.kind_ram.write_data.next = self.new_kind.val();
        self.start_ram.write_enable.next = self.write_state.val();
        self.run_ram.write_enable.next = self.write_state.val();
        self.base_ram.write_enable.next = self.write_state.val();
        self.kind_ram.write_enable.next = self.write_state.val();
        // LOAD chains (saturating sums, OR of errors).
        self.total_a_out.next = self.total_a_in.val();
        self.total_b_out.next = self.total_b_in.val();
        if self.new_kind.val() == 1 {
            if self.total_a_in.val() > self.max.val() - self.new_run.val() {
                self.total_a_out.next = self.max.val();
            } else {
                self.total_a_out.next = self.total_a_in.val() + self.new_run.val();
            }
        }
        if self.new_kind.val() == 2 {
            if self.total_b_in.val() > self.max.val() - self.new_run.val() {
                self.total_b_out.next = self.max.val();
            } else {
                self.total_b_out.next = self.total_b_in.val() + self.new_run.val();
            }
        }
        // The key range of each search, so that its first pass starts from the keys
        // that exist instead of the whole 32-bit range.
        self.new_end.next = self.new_start.val() + self.new_run.val();
        self.first_a_out.next = self.first_a_in.val();
        self.end_a_out.next = self.end_a_in.val();
        self.first_b_out.next = self.first_b_in.val();
        self.end_b_out.next = self.end_b_in.val();
        if (self.new_kind.val() == 1) & (self.new_run.val() != 0) {
            if self.new_start.val() < self.first_a_in.val() {
                self.first_a_out.next = self.new_start.val();
            }
            if self.new_end.val() > self.end_a_in.val() {
                self.end_a_out.next = self.new_end.val();
            }
        }
        if (self.new_kind.val() == 2) & (self.new_run.val() != 0) {
            if self.new_start.val() < self.first_b_in.val() {
                self.first_b_out.next = self.new_start.val();
            }
            if self.new_end.val() > self.end_b_in.val() {
                self.end_b_out.next = self.new_end.val();
            }
        }
        self.capacity_out.next = self.capacity_in.val();
        self.shared_out.next = self.shared_in.val();
        if self.user_ok.val() {
            if self.capacity_in.val() > self.max.val() - self.fair.val() {
                self.capacity_out.next = self.max.val();
            } else {
                self.capacity_out.next = self.capacity_in.val() + self.fair.val();
            }
            if self.shared_in.val() > self.max.val() - self.free.val() {
                self.shared_out.next = self.max.val();
            } else {
                self.shared_out.next = self.shared_in.val() + self.free.val();
            }
        }
        // This user's error bits (none for the padding beyond `n_users`).
        self.error_bits.next = 0.into();
        if self.user_ok.val() & self.demand_error.val() & self.credit_error.val() {
            self.error_bits.next = 3.into();
        } else if self.user_ok.val() & self.demand_error.val() {
            self.error_bits.next = 1.into();
        } else if self.user_ok.val() & self.credit_error.val() {
            self.error_bits.next = 2.into();
        }
        self.error_out.next = self.error_in.val() | self.error_bits.val();

        // SEARCH and FINAL: counts of the stored runs below the probes.
        self.count_a.start.next = self.start_ram.read_data.val();
        self.count_b.start.next = self.start_ram.read_data.val();
        self.count_a.run.next = 0.into();
        self.count_b.run.next = 0.into();
        if self.kind_ram.read_data.val() == 1 {
            self.count_a.run.next = self.run_ram.read_data.val();
        }
        if self.kind_ram.read_data.val() == 2 {
            self.count_b.run.next = self.run_ram.read_data.val();
        }
        self.count_a.probe[0].next = self.probe_a0.val();
        self.count_b.probe[0].next = self.probe_b0.val();
        self.count_a.sum_in[0].next = self.count_a_in0.val();
        self.count_b.sum_in[0].next = self.count_b_in0.val();
        self.count_a_out0.next = self.count_a.sum_out[0].val();
        self.count_b_out0.next = self.count_b.sum_out[0].val();
        self.count_a.probe[1].next = self.probe_a1.val();
        self.count_b.probe[1].next = self.probe_b1.val();
        self.count_a.sum_in[1].next = self.count_a_in1.val();
        self.count_b.sum_in[1].next = self.count_b_in1.val();
        self.count_a_out1.next = self.count_a.sum_out[1].val();
        self.count_b_out1.next = self.count_b.sum_out[1].val();
        self.count_a.probe[2].next = self.probe_a2.val();
        self.count_b.probe[2].next = self.probe_b2.val();
        self.count_a.sum_in[2].next = self.count_a_in2.val();
        self.count_b.sum_in[2].next = self.count_b_in2.val();
        self.count_a_out2.next = self.count_a.sum_out[2].val();
        self.count_b_out2.next = self.count_b.sum_out[2].val();

        // FINAL: a key exactly at the threshold takes one of the slices left, in index
        // order along the chain.
        self.grant_a.next = 0.into();
        self.grant_b.next = 0.into();
        if (self.kind_ram.read_data.val() == 1)
            & (self.probe_a0.val() >= self.start_ram.read_data.val())
            & (self.probe_a0.val() - self.start_ram.read_data.val() < self.run_ram.read_data.val())
            & (self.rest_a_in.val() != 0)
        {
            self.grant_a.next = 1.into();
        }
        if (self.kind_ram.read_data.val() == 2)
            & (self.probe_b0.val() >= self.start_ram.read_data.val())
            & (self.probe_b0.val() - self.start_ram.read_data.val() < self.run_ram.read_data.val())
            & (self.rest_b_in.val() != 0)
        {
            self.grant_b.next = 1.into();
        }
        self.rest_a_out.next = self.rest_a_in.val() - self.grant_a.val();
        self.rest_b_out.next = self.rest_b_in.val() - self.grant_b.val();
        self.take_a.next = self.count_a.count[0].val() + self.grant_a.val();
        self.take_b.next = self.count_b.count[0].val() + self.grant_b.val();
        self.alloc.next = 0.into();
        // Karma: a borrower's taken keys are slices; a donor's are donations used (they
        // earn credits, not slices). Max-min: the taken keys are the slices.
        if self.user_ok.val() {
            if self.mode.val() == self.mode_maxmin.val() {
                self.alloc.next = self.base_ram.read_data.val() + self.take_b.val();
            } else {
                self.alloc.next = self.base_ram.read_data.val() + self.take_a.val();
            }
        }
        self.final_credit.next = self.credit_ram.read_data.val();
        if self.mode.val() == self.mode_karma.val() {
            self.final_credit.next = self.c1.val() - self.take_a.val() + self.take_b.val();
        }
        self.credit.next = self.final_credit.val();
        self.credit_ram.write_data.next = self.final_credit.val();
        if self.use_host_credit.val() {
            self.credit_ram.write_data.next = self.host_credit.val();
        }
        self.credit_ram.write_enable.next = self.write_credit.val() & (self.user_ok.val() | self.use_host_credit.val());
    }
}
