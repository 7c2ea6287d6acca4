//! The AXI top level of the device: the [`Engine`] behind an AXI4-Lite slave (registers and
//! doorbell, the map of `fairshare_abi`) and AXI-Stream ports (demands in,
//! results out), the interfaces a PCIe DMA shell or an open NIC provides.
//!
//! - AXI4-Lite: the five channels with full valid/ready handshakes; the write address
//!   and data channels are accepted independently, the response waits for `bready`;
//!   writes honour `wstrb`; unmapped or misaligned offsets, writes to read-only
//!   registers, and credit-port accesses while a quantum runs answer `SLVERR` and change
//!   nothing. One write and one read may be in flight at a time.
//! - `s_axis_*`: one beat per row of `P` demands, `tlast` on the row holding user
//!   `N_USERS - 1`; a `tlast` elsewhere (or missing there) sets `STATUS.framing`.
//! - `m_axis_*`: one beat per row of results (allocation and credits per lane), `tlast`
//!   on the last row, back-pressure by `tready`.
//! - The DMA mover of the shell reads the buffer addresses (`*_addr`) and `seq`, and
//!   writes the completion record after the last result beat; `irq` pulses for one cycle
//!   when a quantum ends with `CONTROL.irq_enable` set.
//!
//! There is no reset input: registers start from their power-up values (initialized
//! flip-flops, as on iCE40, Xilinx and Intel parts).

use crate::engine::Engine;
use fairshare_abi as abi;
use rust_hdl::prelude::*;

/// AXI response: OKAY.
pub const RESP_OKAY: u64 = 0;
/// AXI response: SLVERR.
pub const RESP_SLVERR: u64 = 2;
/// Address bits of the AXI4-Lite port (a 4 KiB BAR window).
pub const ADDR_BITS: usize = 12;

/// The device: engine, register file, bus and stream ports.
#[derive(LogicBlock)]
pub struct AxiTop<const P: usize, const A: usize> {
    /// Clock of the bus and the engine.
    pub clock: Signal<In, Clock>,
    /// AXI4-Lite write address valid.
    pub s_axil_awvalid: Signal<In, Bit>,
    /// AXI4-Lite write address ready.
    pub s_axil_awready: Signal<Out, Bit>,
    /// AXI4-Lite write address (byte offset in BAR0).
    pub s_axil_awaddr: Signal<In, Bits<ADDR_BITS>>,
    /// AXI4-Lite write data valid.
    pub s_axil_wvalid: Signal<In, Bit>,
    /// AXI4-Lite write data ready.
    pub s_axil_wready: Signal<Out, Bit>,
    /// AXI4-Lite write data.
    pub s_axil_wdata: Signal<In, Bits<32>>,
    /// AXI4-Lite write strobes, one per byte.
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    /// AXI4-Lite write response valid.
    pub s_axil_bvalid: Signal<Out, Bit>,
    /// AXI4-Lite write response ready.
    pub s_axil_bready: Signal<In, Bit>,
    /// AXI4-Lite write response (0 OKAY, 2 SLVERR).
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    /// AXI4-Lite read address valid.
    pub s_axil_arvalid: Signal<In, Bit>,
    /// AXI4-Lite read address ready.
    pub s_axil_arready: Signal<Out, Bit>,
    /// AXI4-Lite read address.
    pub s_axil_araddr: Signal<In, Bits<ADDR_BITS>>,
    /// AXI4-Lite read data valid.
    pub s_axil_rvalid: Signal<Out, Bit>,
    /// AXI4-Lite read data ready.
    pub s_axil_rready: Signal<In, Bit>,
    /// AXI4-Lite read data.
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    /// AXI4-Lite read response.
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    /// Demand stream valid.
    pub s_axis_tvalid: Signal<In, Bit>,
    /// Demand stream ready.
    pub s_axis_tready: Signal<Out, Bit>,
    /// Demand stream data, lane `i` = user `row * P + i`.
    pub s_axis_tdata: [Signal<In, Bits<32>>; P],
    /// Demand stream last beat.
    pub s_axis_tlast: Signal<In, Bit>,
    /// Result stream valid.
    pub m_axis_tvalid: Signal<Out, Bit>,
    /// Result stream ready.
    pub m_axis_tready: Signal<In, Bit>,
    /// Result stream: allocation per lane.
    pub m_axis_alloc: [Signal<Out, Bits<32>>; P],
    /// Result stream: credits after the quantum per lane.
    pub m_axis_credit: [Signal<Out, Bits<32>>; P],
    /// Result stream last beat.
    pub m_axis_tlast: Signal<Out, Bit>,
    /// Sequence number of the quantum in progress (or last run), for the DMA mover.
    pub seq: Signal<Out, Bits<32>>,
    /// Demand buffer bus address.
    pub demand_addr: Signal<Out, Bits<64>>,
    /// Result buffer bus address.
    pub result_addr: Signal<Out, Bits<64>>,
    /// Completion record bus address.
    pub completion_addr: Signal<Out, Bits<64>>,
    /// One-cycle pulse when a quantum ends and interrupts are enabled.
    pub irq: Signal<Out, Bit>,
    engine: Engine<P, A>,
    aw_hold: DFF<Bit>,
    aw_addr: DFF<Bits<ADDR_BITS>>,
    w_hold: DFF<Bit>,
    w_data: DFF<Bits<32>>,
    w_strb: DFF<Bits<4>>,
    b_valid: DFF<Bit>,
    b_resp: DFF<Bits<2>>,
    r_valid: DFF<Bit>,
    r_data: DFF<Bits<32>>,
    r_resp: DFF<Bits<2>>,
    control: DFF<Bits<32>>,
    n_users: DFF<Bits<32>>,
    fair: DFF<Bits<32>>,
    guaranteed: DFF<Bits<32>>,
    doorbell: DFF<Bits<32>>,
    seq_done: DFF<Bits<32>>,
    quanta: DFF<Bits<32>>,
    framing: DFF<Bit>,
    rejected: DFF<Bit>,
    addr_regs: [DFF<Bits<32>>; 6],
    credit_row: DFF<Bits<32>>,
    credit_cmd: DFF<Bits<32>>,
    credit_ack: DFF<Bits<32>>,
    credit_words: [DFF<Bits<32>>; P],
    n_latched: DFF<Bits<32>>,
    in_base: DFF<Bits<32>>,
    out_base: DFF<Bits<32>>,
    done_seen: DFF<Bit>,
    /// The doorbell was written: the engine starts in the next cycle, from a
    /// flip-flop (not from the address decode), with the settings already stable.
    start_pulse: DFF<Bit>,
    wr_fire: Signal<Local, Bit>,
    wmask: Signal<Local, Bits<32>>,
    cmd_merged: Signal<Local, Bits<32>>,
    m0: Signal<Local, Bits<32>>,
    m1: Signal<Local, Bits<32>>,
    m2: Signal<Local, Bits<32>>,
    m3: Signal<Local, Bits<32>>,
    status_word: Signal<Local, Bits<32>>,
    lane_sel: Signal<Local, Bits<ADDR_BITS>>,
    row_ok: Signal<Local, Bit>,
    okay: Constant<Bits<2>>,
    slverr: Constant<Bits<2>>,
    magic: Constant<Bits<32>>,
    version: Constant<Bits<32>>,
    max_users: Constant<Bits<32>>,
    caps: Constant<Bits<32>>,
    control_mask: Constant<Bits<32>>,
    rows: Constant<Bits<32>>,
    lane_count: Constant<Bits<32>>,
    lane_index: [Constant<Bits<ADDR_BITS>>; P],
    a_magic: Constant<Bits<ADDR_BITS>>,
    a_version: Constant<Bits<ADDR_BITS>>,
    a_max_users: Constant<Bits<ADDR_BITS>>,
    a_caps: Constant<Bits<ADDR_BITS>>,
    a_control: Constant<Bits<ADDR_BITS>>,
    a_n_users: Constant<Bits<ADDR_BITS>>,
    a_fair: Constant<Bits<ADDR_BITS>>,
    a_guaranteed: Constant<Bits<ADDR_BITS>>,
    a_doorbell: Constant<Bits<ADDR_BITS>>,
    a_status: Constant<Bits<ADDR_BITS>>,
    a_seq_done: Constant<Bits<ADDR_BITS>>,
    a_quanta: Constant<Bits<ADDR_BITS>>,
    a_cycles: Constant<Bits<ADDR_BITS>>,
    a_addr: [Constant<Bits<ADDR_BITS>>; 6],
    a_credit_row: Constant<Bits<ADDR_BITS>>,
    a_credit_cmd: Constant<Bits<ADDR_BITS>>,
    a_credit_ack: Constant<Bits<ADDR_BITS>>,
    a_credit_data: Constant<Bits<ADDR_BITS>>,
}

impl<const P: usize, const A: usize> Default for AxiTop<P, A> {
    fn default() -> Self {
        Self::new()
    }
}

fn addr(offset: u32) -> Constant<Bits<ADDR_BITS>> {
    Constant::new(Bits::<ADDR_BITS>::from(offset as u64))
}

fn word(value: u32) -> Constant<Bits<32>> {
    Constant::new(Bits::<32>::from(value as u64))
}

impl<const P: usize, const A: usize> AxiTop<P, A> {
    /// A device at power-up (credits 0, registers at their reset values).
    pub fn new() -> Self {
        assert!(P <= abi::MAX_LANES, "the register map has credit words for {} lanes", abi::MAX_LANES);
        let control_mask = abi::CONTROL_IRQ.set(abi::CONTROL_MODE.set(0, u32::MAX), u32::MAX);
        AxiTop {
            clock: Default::default(),
            s_axil_awvalid: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wstrb: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rready: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axis_tvalid: Default::default(),
            s_axis_tready: Default::default(),
            s_axis_tdata: array_init::array_init(|_| Default::default()),
            s_axis_tlast: Default::default(),
            m_axis_tvalid: Default::default(),
            m_axis_tready: Default::default(),
            m_axis_alloc: array_init::array_init(|_| Default::default()),
            m_axis_credit: array_init::array_init(|_| Default::default()),
            m_axis_tlast: Default::default(),
            seq: Default::default(),
            demand_addr: Default::default(),
            result_addr: Default::default(),
            completion_addr: Default::default(),
            irq: Default::default(),
            engine: Engine::new(),
            aw_hold: Default::default(),
            aw_addr: Default::default(),
            w_hold: Default::default(),
            w_data: Default::default(),
            w_strb: Default::default(),
            b_valid: Default::default(),
            b_resp: Default::default(),
            r_valid: Default::default(),
            r_data: Default::default(),
            r_resp: Default::default(),
            control: Default::default(),
            n_users: Default::default(),
            fair: Default::default(),
            guaranteed: Default::default(),
            doorbell: Default::default(),
            seq_done: Default::default(),
            quanta: Default::default(),
            framing: Default::default(),
            rejected: Default::default(),
            addr_regs: Default::default(),
            credit_row: Default::default(),
            credit_cmd: Default::default(),
            credit_ack: Default::default(),
            credit_words: array_init::array_init(|_| Default::default()),
            n_latched: Default::default(),
            in_base: Default::default(),
            out_base: Default::default(),
            done_seen: Default::default(),
            start_pulse: Default::default(),
            wr_fire: Default::default(),
            wmask: Default::default(),
            cmd_merged: Default::default(),
            m0: Default::default(),
            m1: Default::default(),
            m2: Default::default(),
            m3: Default::default(),
            status_word: Default::default(),
            lane_sel: Default::default(),
            row_ok: Default::default(),
            okay: Constant::new(RESP_OKAY.into()),
            slverr: Constant::new(RESP_SLVERR.into()),
            magic: word(abi::MAGIC_VALUE),
            version: word(abi::VERSION_VALUE),
            max_users: word(Engine::<P, A>::MAX_USERS as u32),
            caps: word(abi::caps_word(P)),
            control_mask: word(control_mask),
            rows: word(1 << A),
            lane_count: word(P as u32),
            lane_index: array_init::array_init(|i| addr(i as u32)),
            a_magic: addr(abi::MAGIC.offset),
            a_version: addr(abi::VERSION.offset),
            a_max_users: addr(abi::MAX_USERS.offset),
            a_caps: addr(abi::CAPS.offset),
            a_control: addr(abi::CONTROL.offset),
            a_n_users: addr(abi::N_USERS.offset),
            a_fair: addr(abi::FAIR_SHARE.offset),
            a_guaranteed: addr(abi::GUARANTEED.offset),
            a_doorbell: addr(abi::DOORBELL.offset),
            a_status: addr(abi::STATUS.offset),
            a_seq_done: addr(abi::SEQ_DONE.offset),
            a_quanta: addr(abi::QUANTA.offset),
            a_cycles: addr(abi::CYCLES.offset),
            a_addr: [
                addr(abi::DEMAND_ADDR_LO.offset),
                addr(abi::DEMAND_ADDR_HI.offset),
                addr(abi::RESULT_ADDR_LO.offset),
                addr(abi::RESULT_ADDR_HI.offset),
                addr(abi::COMPLETION_ADDR_LO.offset),
                addr(abi::COMPLETION_ADDR_HI.offset),
            ],
            a_credit_row: addr(abi::CREDIT_ROW.offset),
            a_credit_cmd: addr(abi::CREDIT_CMD.offset),
            a_credit_ack: addr(abi::CREDIT_ACK.offset),
            a_credit_data: addr(abi::CREDIT_DATA_BASE),
        }
    }
}

impl<const P: usize, const A: usize> Logic for AxiTop<P, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            aw_hold,
            aw_addr,
            w_hold,
            w_data,
            w_strb,
            b_valid,
            b_resp,
            r_valid,
            r_data,
            r_resp,
            control,
            n_users,
            fair,
            guaranteed,
            doorbell,
            seq_done,
            quanta,
            framing,
            rejected,
            credit_row,
            credit_cmd,
            credit_ack,
            n_latched,
            in_base,
            out_base,
            done_seen,
            start_pulse
        );
        for j in 0..6 {
            self.addr_regs[j].clock.next = self.clock.val();
            self.addr_regs[j].d.next = self.addr_regs[j].q.val();
        }
        for i in 0..P {
            self.credit_words[i].clock.next = self.clock.val();
            self.credit_words[i].d.next = self.credit_words[i].q.val();
        }

        // Engine: configuration from the registers, streams straight through.
        self.engine.clock.next = self.clock.val();
        self.engine.mode.next = self.control.q.val().get_bits::<2>(0);
        self.engine.n_users.next = self.n_users.q.val();
        self.engine.fair.next = self.fair.q.val();
        self.engine.guaranteed.next = self.guaranteed.q.val();
        self.engine.start.next = self.start_pulse.q.val();
        self.start_pulse.d.next = false;
        self.engine.credit_row.next = self.credit_row.q.val().get_bits::<A>(0);
        self.engine.credit_write.next = false;
        self.engine.in_valid.next = self.s_axis_tvalid.val();
        self.s_axis_tready.next = self.engine.in_ready.val();
        self.m_axis_tvalid.next = self.engine.out_valid.val();
        self.engine.out_ready.next = self.m_axis_tready.val();
        for i in 0..P {
            self.engine.in_data[i].next = self.s_axis_tdata[i].val();
            self.m_axis_alloc[i].next = self.engine.out_alloc[i].val();
            self.m_axis_credit[i].next = self.engine.out_credit[i].val();
            self.engine.credit_wdata[i].next = self.credit_words[i].q.val();
        }
        self.m_axis_tlast.next = self.out_base.q.val() + self.lane_count.val() >= self.n_latched.q.val();
        self.seq.next = self.doorbell.q.val();
        self.demand_addr.next =
            (bit_cast::<64, 32>(self.addr_regs[1].q.val()) << 32) | bit_cast::<64, 32>(self.addr_regs[0].q.val());
        self.result_addr.next =
            (bit_cast::<64, 32>(self.addr_regs[3].q.val()) << 32) | bit_cast::<64, 32>(self.addr_regs[2].q.val());
        self.completion_addr.next =
            (bit_cast::<64, 32>(self.addr_regs[5].q.val()) << 32) | bit_cast::<64, 32>(self.addr_regs[4].q.val());

        // Stream framing: count beats against the latched user count.
        if self.s_axis_tvalid.val() && self.engine.in_ready.val() {
            self.in_base.d.next = self.in_base.q.val() + self.lane_count.val();
            if self.s_axis_tlast.val() != (self.in_base.q.val() + self.lane_count.val() >= self.n_latched.q.val()) {
                self.framing.d.next = true;
            }
        }
        if self.engine.out_valid.val() && self.m_axis_tready.val() {
            self.out_base.d.next = self.out_base.q.val() + self.lane_count.val();
        }

        // Completion: sequence number, quanta counter, interrupt.
        self.done_seen.d.next = self.engine.done.val();
        self.irq.next = false;
        if self.engine.done.val() && !self.done_seen.q.val() {
            self.seq_done.d.next = self.doorbell.q.val();
            if self.engine.error.val() == 0 {
                self.quanta.d.next = self.quanta.q.val() + 1;
            }
            self.irq.next = self.control.q.val().get_bit(8);
        }

        self.status_word.next = (bit_cast::<32, 4>(self.engine.error.val()) << 8)
            .replace_bit(0, self.engine.busy.val())
            .replace_bit(1, self.engine.done.val())
            .replace_bit(2, self.framing.q.val())
            .replace_bit(3, self.rejected.q.val());
        self.lane_sel.next = (self.aw_addr.q.val() - self.a_credit_data.val()) >> 2;
        self.row_ok.next = self.credit_row.q.val() < self.rows.val();

        // Write channels: address and data accepted independently, then one response.
        self.s_axil_awready.next = !self.aw_hold.q.val();
        self.s_axil_wready.next = !self.w_hold.q.val();
        self.s_axil_bvalid.next = self.b_valid.q.val();
        self.s_axil_bresp.next = self.b_resp.q.val();
        if self.s_axil_awvalid.val() && !self.aw_hold.q.val() {
            self.aw_hold.d.next = true;
            self.aw_addr.d.next = self.s_axil_awaddr.val();
        }
        if self.s_axil_wvalid.val() && !self.w_hold.q.val() {
            self.w_hold.d.next = true;
            self.w_data.d.next = self.s_axil_wdata.val();
            self.w_strb.d.next = self.s_axil_wstrb.val();
        }
        if self.b_valid.q.val() && self.s_axil_bready.val() {
            self.b_valid.d.next = false;
        }
        self.m0.next = 0.into();
        self.m1.next = 0.into();
        self.m2.next = 0.into();
        self.m3.next = 0.into();
        if self.w_strb.q.val().get_bit(0) {
            self.m0.next = 0x0000_00FF_u64.into();
        }
        if self.w_strb.q.val().get_bit(1) {
            self.m1.next = 0x0000_FF00_u64.into();
        }
        if self.w_strb.q.val().get_bit(2) {
            self.m2.next = 0x00FF_0000_u64.into();
        }
        if self.w_strb.q.val().get_bit(3) {
            self.m3.next = 0xFF00_0000_u64.into();
        }
        self.wmask.next = self.m0.val() | self.m1.val() | self.m2.val() | self.m3.val();
        self.cmd_merged.next = (self.credit_cmd.q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
        self.wr_fire.next = self.aw_hold.q.val() && self.w_hold.q.val() && !self.b_valid.q.val();
        if self.wr_fire.val() {
            self.aw_hold.d.next = false;
            self.w_hold.d.next = false;
            self.b_valid.d.next = true;
            self.b_resp.d.next = self.okay.val();
            if self.aw_addr.q.val() == self.a_control.val() {
                self.control.d.next = ((self.control.q.val() & !self.wmask.val())
                    | (self.w_data.q.val() & self.wmask.val()))
                    & self.control_mask.val();
            } else if self.aw_addr.q.val() == self.a_n_users.val() {
                self.n_users.d.next =
                    (self.n_users.q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
            } else if self.aw_addr.q.val() == self.a_fair.val() {
                self.fair.d.next = (self.fair.q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
            } else if self.aw_addr.q.val() == self.a_guaranteed.val() {
                self.guaranteed.d.next =
                    (self.guaranteed.q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
            } else if self.aw_addr.q.val() == self.a_doorbell.val() {
                if self.engine.busy.val() {
                    self.rejected.d.next = true;
                } else {
                    self.doorbell.d.next =
                        (self.doorbell.q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
                    self.start_pulse.d.next = true;
                    self.rejected.d.next = false;
                    self.framing.d.next = false;
                    self.n_latched.d.next = self.n_users.q.val();
                    self.in_base.d.next = 0.into();
                    self.out_base.d.next = 0.into();
                }
            } else if self.aw_addr.q.val() == self.a_credit_row.val() {
                self.credit_row.d.next =
                    (self.credit_row.q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
            } else if self.aw_addr.q.val() == self.a_credit_cmd.val() {
                if self.engine.busy.val() || !self.row_ok.val() {
                    self.b_resp.d.next = self.slverr.val();
                } else {
                    self.credit_cmd.d.next = self.cmd_merged.val();
                    self.credit_ack.d.next = self.cmd_merged.val();
                    if self.cmd_merged.val().get_bit(0) {
                        self.engine.credit_write.next = true;
                    } else {
                        for i in 0..P {
                            self.credit_words[i].d.next = self.engine.credit_rdata[i].val();
                        }
                    }
                }
            } else {
                self.b_resp.d.next = self.slverr.val();
                for j in 0..6 {
                    if self.aw_addr.q.val() == self.a_addr[j].val() {
                        self.b_resp.d.next = self.okay.val();
                        self.addr_regs[j].d.next =
                            (self.addr_regs[j].q.val() & !self.wmask.val()) | (self.w_data.q.val() & self.wmask.val());
                    }
                }
                if self.aw_addr.q.val().get_bits::<2>(0) == 0 && self.aw_addr.q.val() >= self.a_credit_data.val() {
                    for i in 0..P {
                        if self.lane_sel.val() == self.lane_index[i].val() {
                            if self.engine.busy.val() {
                                self.b_resp.d.next = self.slverr.val();
                            } else {
                                self.b_resp.d.next = self.okay.val();
                                self.credit_words[i].d.next = (self.credit_words[i].q.val() & !self.wmask.val())
                                    | (self.w_data.q.val() & self.wmask.val());
                            }
                        }
                    }
                }
            }
        }

        // Read channels: the address is taken when no data is pending; the data follow
        // one cycle later and wait for `rready`.
        self.s_axil_arready.next = !self.r_valid.q.val();
        self.s_axil_rvalid.next = self.r_valid.q.val();
        self.s_axil_rdata.next = self.r_data.q.val();
        self.s_axil_rresp.next = self.r_resp.q.val();
        if self.r_valid.q.val() && self.s_axil_rready.val() {
            self.r_valid.d.next = false;
        }
        if self.s_axil_arvalid.val() && !self.r_valid.q.val() {
            self.r_valid.d.next = true;
            self.r_resp.d.next = self.okay.val();
            self.r_data.d.next = 0.into();
            if self.s_axil_araddr.val() == self.a_magic.val() {
                self.r_data.d.next = self.magic.val();
            } else if self.s_axil_araddr.val() == self.a_version.val() {
                self.r_data.d.next = self.version.val();
            } else if self.s_axil_araddr.val() == self.a_max_users.val() {
                self.r_data.d.next = self.max_users.val();
            } else if self.s_axil_araddr.val() == self.a_caps.val() {
                self.r_data.d.next = self.caps.val();
            } else if self.s_axil_araddr.val() == self.a_control.val() {
                self.r_data.d.next = self.control.q.val();
            } else if self.s_axil_araddr.val() == self.a_n_users.val() {
                self.r_data.d.next = self.n_users.q.val();
            } else if self.s_axil_araddr.val() == self.a_fair.val() {
                self.r_data.d.next = self.fair.q.val();
            } else if self.s_axil_araddr.val() == self.a_guaranteed.val() {
                self.r_data.d.next = self.guaranteed.q.val();
            } else if self.s_axil_araddr.val() == self.a_doorbell.val() {
                self.r_data.d.next = self.doorbell.q.val();
            } else if self.s_axil_araddr.val() == self.a_status.val() {
                self.r_data.d.next = self.status_word.val();
            } else if self.s_axil_araddr.val() == self.a_seq_done.val() {
                self.r_data.d.next = self.seq_done.q.val();
            } else if self.s_axil_araddr.val() == self.a_quanta.val() {
                self.r_data.d.next = self.quanta.q.val();
            } else if self.s_axil_araddr.val() == self.a_cycles.val() {
                self.r_data.d.next = self.engine.cycles.val();
            } else if self.s_axil_araddr.val() == self.a_credit_row.val() {
                self.r_data.d.next = self.credit_row.q.val();
            } else if self.s_axil_araddr.val() == self.a_credit_cmd.val() {
                self.r_data.d.next = self.credit_cmd.q.val();
            } else if self.s_axil_araddr.val() == self.a_credit_ack.val() {
                self.r_data.d.next = self.credit_ack.q.val();
            } else {
                self.r_resp.d.next = self.slverr.val();
                for j in 0..6 {
                    if self.s_axil_araddr.val() == self.a_addr[j].val() {
                        self.r_resp.d.next = self.okay.val();
                        self.r_data.d.next = self.addr_regs[j].q.val();
                    }
                }
                if self.s_axil_araddr.val().get_bits::<2>(0) == 0
                    && self.s_axil_araddr.val() >= self.a_credit_data.val()
                {
                    for i in 0..P {
                        if ((self.s_axil_araddr.val() - self.a_credit_data.val()) >> 2) == self.lane_index[i].val() {
                            if self.engine.busy.val() {
                                self.r_resp.d.next = self.slverr.val();
                            } else {
                                self.r_resp.d.next = self.okay.val();
                                self.r_data.d.next = self.credit_words[i].q.val();
                            }
                        }
                    }
                }
            }
        }
    }
}
