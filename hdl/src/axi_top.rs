//! The AXI top level of the device: the [`Engine`] behind an AXI4-Lite slave (registers and
//! doorbell, the map of `fairshare_abi`) and AXI-Stream ports (demands in,
//! results out), the interfaces a PCIe DMA shell or an open NIC provides.
//!
//! - AXI4-Lite: the five channels with full valid/ready handshakes; the write address
//!   and data channels are accepted independently, the response waits for `bready`;
//!   writes honour `wstrb`; unmapped or misaligned offsets, writes to read-only
//!   registers, and credit-port accesses while a quantum runs (credit commands also in
//!   the two cycles after: the credit banks answer the port's row two cycles after they
//!   are given it) answer `SLVERR` and change nothing. One write and one read may be in
//!   flight at a time; writes take effect at least five cycles apart (see
//!   [`crate::axi_lite`]).
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

use crate::axi_lite::{AxiLiteRead, AxiLiteWrite};
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
    /// The AXI4-Lite write and read channels.
    write: AxiLiteWrite,
    /// The response of the last write (`bresp`), decided here (see [`crate::axi_lite`]).
    write_resp: DFF<Bits<2>>,
    resp_okay: Constant<Bits<2>>,
    resp_slverr: Constant<Bits<2>>,
    read: AxiLiteRead,
    control: DFF<Bits<32>>,
    n_users: DFF<Bits<32>>,
    fair: DFF<Bits<32>>,
    guaranteed: DFF<Bits<32>>,
    doorbell: DFF<Bits<32>>,
    seq_done: DFF<Bits<32>>,
    quanta: DFF<Bits<32>>,
    framing: DFF<Bit>,
    rejected: DFF<Bit>,
    /// The engine was busy one and two cycles ago: the credit banks give the port's
    /// row [`crate::bank::READ_LATENCY`] (two) cycles after the engine lets go of them.
    busy_1: DFF<Bit>,
    busy_2: DFF<Bit>,
    /// The credit port's words are the port's row: not busy for two cycles.
    port_settled: Signal<Local, Bit>,
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
    cmd_merged: Signal<Local, Bits<32>>,
    /// The write firing this cycle is refused.
    wr_refuse: Signal<Local, Bit>,
    /// The word at the read address, and whether the read is refused.
    rd_word: Signal<Local, Bits<32>>,
    rd_refuse: Signal<Local, Bit>,
    status_word: Signal<Local, Bits<32>>,
    lane_sel: Signal<Local, Bits<ADDR_BITS>>,
    /// `CREDIT_ROW` names a row of the banks, compared a cycle after the row is written
    /// (writes take effect five cycles apart), so that no credit command waits on the
    /// compare's carry chain.
    row_ok: DFF<Bit>,
    /// A credit write command took effect in the last cycle: the engine's credit port
    /// writes the row from this flip-flop, not from the address decode (the port's
    /// write registers sit in every lane, across the die).
    credit_write: DFF<Bit>,
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
            write: Default::default(),
            write_resp: Default::default(),
            resp_okay: Constant::new(RESP_OKAY.into()),
            resp_slverr: Constant::new(RESP_SLVERR.into()),
            read: Default::default(),
            control: Default::default(),
            n_users: Default::default(),
            fair: Default::default(),
            guaranteed: Default::default(),
            doorbell: Default::default(),
            seq_done: Default::default(),
            quanta: Default::default(),
            framing: Default::default(),
            rejected: Default::default(),
            busy_1: Default::default(),
            busy_2: Default::default(),
            port_settled: Default::default(),
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
            cmd_merged: Default::default(),
            wr_refuse: Default::default(),
            rd_word: Default::default(),
            rd_refuse: Default::default(),
            status_word: Default::default(),
            lane_sel: Default::default(),
            row_ok: Default::default(),
            credit_write: Default::default(),
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
            write_resp,
            control,
            n_users,
            fair,
            guaranteed,
            doorbell,
            seq_done,
            quanta,
            framing,
            rejected,
            busy_1,
            busy_2,
            credit_row,
            row_ok,
            credit_write,
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
        self.engine.credit_write.next = self.credit_write.q.val();
        self.credit_write.d.next = false;
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
        self.lane_sel.next = (self.write.addr.val() - self.a_credit_data.val()) >> 2;
        self.row_ok.d.next = self.credit_row.q.val() < self.rows.val();
        self.busy_1.d.next = self.engine.busy.val();
        self.busy_2.d.next = self.busy_1.q.val();
        self.port_settled.next = !self.engine.busy.val() && !self.busy_1.q.val() && !self.busy_2.q.val();

        // Write channels: address and data accepted independently, then one response.
        self.write.clock.next = self.clock.val();
        self.write.awvalid.next = self.s_axil_awvalid.val();
        self.s_axil_awready.next = self.write.awready.val();
        self.write.awaddr.next = self.s_axil_awaddr.val();
        self.write.wvalid.next = self.s_axil_wvalid.val();
        self.s_axil_wready.next = self.write.wready.val();
        self.write.wdata.next = self.s_axil_wdata.val();
        self.write.wstrb.next = self.s_axil_wstrb.val();
        self.s_axil_bvalid.next = self.write.bvalid.val();
        self.write.bready.next = self.s_axil_bready.val();
        self.s_axil_bresp.next = self.write_resp.q.val();
        self.wr_refuse.next = false;
        self.cmd_merged.next =
            (self.credit_cmd.q.val() & !self.write.mask.val()) | (self.write.data.val() & self.write.mask.val());
        if self.write.fire.val() {
            if self.write.addr.val() == self.a_control.val() {
                self.control.d.next = ((self.control.q.val() & !self.write.mask.val())
                    | (self.write.data.val() & self.write.mask.val()))
                    & self.control_mask.val();
            } else if self.write.addr.val() == self.a_n_users.val() {
                self.n_users.d.next =
                    (self.n_users.q.val() & !self.write.mask.val()) | (self.write.data.val() & self.write.mask.val());
            } else if self.write.addr.val() == self.a_fair.val() {
                self.fair.d.next =
                    (self.fair.q.val() & !self.write.mask.val()) | (self.write.data.val() & self.write.mask.val());
            } else if self.write.addr.val() == self.a_guaranteed.val() {
                self.guaranteed.d.next = (self.guaranteed.q.val() & !self.write.mask.val())
                    | (self.write.data.val() & self.write.mask.val());
            } else if self.write.addr.val() == self.a_doorbell.val() {
                if self.engine.busy.val() {
                    self.rejected.d.next = true;
                } else {
                    self.doorbell.d.next = (self.doorbell.q.val() & !self.write.mask.val())
                        | (self.write.data.val() & self.write.mask.val());
                    self.start_pulse.d.next = true;
                    self.rejected.d.next = false;
                    self.framing.d.next = false;
                    self.n_latched.d.next = self.n_users.q.val();
                    self.in_base.d.next = 0.into();
                    self.out_base.d.next = 0.into();
                }
            } else if self.write.addr.val() == self.a_credit_row.val() {
                self.credit_row.d.next = (self.credit_row.q.val() & !self.write.mask.val())
                    | (self.write.data.val() & self.write.mask.val());
            } else if self.write.addr.val() == self.a_credit_cmd.val() {
                if !self.port_settled.val() || !self.row_ok.q.val() {
                    self.wr_refuse.next = true;
                } else {
                    self.credit_cmd.d.next = self.cmd_merged.val();
                    self.credit_ack.d.next = self.cmd_merged.val();
                    if self.cmd_merged.val().get_bit(0) {
                        self.credit_write.d.next = true;
                    } else {
                        for i in 0..P {
                            self.credit_words[i].d.next = self.engine.credit_rdata[i].val();
                        }
                    }
                }
            } else {
                self.wr_refuse.next = true;
                for j in 0..6 {
                    if self.write.addr.val() == self.a_addr[j].val() {
                        self.wr_refuse.next = false;
                        self.addr_regs[j].d.next = (self.addr_regs[j].q.val() & !self.write.mask.val())
                            | (self.write.data.val() & self.write.mask.val());
                    }
                }
                if self.write.addr.val().get_bits::<2>(0) == 0 && self.write.addr.val() >= self.a_credit_data.val() {
                    for i in 0..P {
                        if self.lane_sel.val() == self.lane_index[i].val() {
                            if self.engine.busy.val() {
                                self.wr_refuse.next = true;
                            } else {
                                self.wr_refuse.next = false;
                                self.credit_words[i].d.next = (self.credit_words[i].q.val() & !self.write.mask.val())
                                    | (self.write.data.val() & self.write.mask.val());
                            }
                        }
                    }
                }
            }
        }
        if self.write.fire.val() {
            self.write_resp.d.next = self.resp_okay.val();
            if self.wr_refuse.val() {
                self.write_resp.d.next = self.resp_slverr.val();
            }
        }

        // Read channels: the address is taken when no data is pending; the data follow
        // one cycle later and wait for `rready`.
        self.read.clock.next = self.clock.val();
        self.read.arvalid.next = self.s_axil_arvalid.val();
        self.s_axil_arready.next = self.read.arready.val();
        self.s_axil_rvalid.next = self.read.rvalid.val();
        self.read.rready.next = self.s_axil_rready.val();
        self.s_axil_rdata.next = self.read.rdata.val();
        self.s_axil_rresp.next = self.read.rresp.val();
        self.rd_word.next = 0.into();
        self.rd_refuse.next = false;
        if self.s_axil_araddr.val() == self.a_magic.val() {
            self.rd_word.next = self.magic.val();
        } else if self.s_axil_araddr.val() == self.a_version.val() {
            self.rd_word.next = self.version.val();
        } else if self.s_axil_araddr.val() == self.a_max_users.val() {
            self.rd_word.next = self.max_users.val();
        } else if self.s_axil_araddr.val() == self.a_caps.val() {
            self.rd_word.next = self.caps.val();
        } else if self.s_axil_araddr.val() == self.a_control.val() {
            self.rd_word.next = self.control.q.val();
        } else if self.s_axil_araddr.val() == self.a_n_users.val() {
            self.rd_word.next = self.n_users.q.val();
        } else if self.s_axil_araddr.val() == self.a_fair.val() {
            self.rd_word.next = self.fair.q.val();
        } else if self.s_axil_araddr.val() == self.a_guaranteed.val() {
            self.rd_word.next = self.guaranteed.q.val();
        } else if self.s_axil_araddr.val() == self.a_doorbell.val() {
            self.rd_word.next = self.doorbell.q.val();
        } else if self.s_axil_araddr.val() == self.a_status.val() {
            self.rd_word.next = self.status_word.val();
        } else if self.s_axil_araddr.val() == self.a_seq_done.val() {
            self.rd_word.next = self.seq_done.q.val();
        } else if self.s_axil_araddr.val() == self.a_quanta.val() {
            self.rd_word.next = self.quanta.q.val();
        } else if self.s_axil_araddr.val() == self.a_cycles.val() {
            self.rd_word.next = self.engine.cycles.val();
        } else if self.s_axil_araddr.val() == self.a_credit_row.val() {
            self.rd_word.next = self.credit_row.q.val();
        } else if self.s_axil_araddr.val() == self.a_credit_cmd.val() {
            self.rd_word.next = self.credit_cmd.q.val();
        } else if self.s_axil_araddr.val() == self.a_credit_ack.val() {
            self.rd_word.next = self.credit_ack.q.val();
        } else {
            self.rd_refuse.next = true;
            for j in 0..6 {
                if self.s_axil_araddr.val() == self.a_addr[j].val() {
                    self.rd_refuse.next = false;
                    self.rd_word.next = self.addr_regs[j].q.val();
                }
            }
            if self.s_axil_araddr.val().get_bits::<2>(0) == 0 && self.s_axil_araddr.val() >= self.a_credit_data.val() {
                for i in 0..P {
                    if ((self.s_axil_araddr.val() - self.a_credit_data.val()) >> 2) == self.lane_index[i].val() {
                        if self.engine.busy.val() {
                            self.rd_refuse.next = true;
                        } else {
                            self.rd_refuse.next = false;
                            self.rd_word.next = self.credit_words[i].q.val();
                        }
                    }
                }
            }
        }
        self.read.word.next = self.rd_word.val();
        self.read.refuse.next = self.rd_refuse.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus_testbench::BusTestbench;
    use fairshare_abi::{Access, Decoded};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const OKAY: u8 = RESP_OKAY as u8;
    const SLVERR: u8 = RESP_SLVERR as u8;

    /// The value a register holds after `old` is written with `data` under `strb`.
    fn merged(old: u32, data: u32, strb: u8) -> u32 {
        let mask = (0..4).filter(|b| strb >> b & 1 == 1).fold(0u32, |m, b| m | 0xFF << (8 * b));
        (old & !mask) | (data & mask)
    }

    /// Every offset of the BAR window against `abi::decode`: reads answer SLVERR exactly
    /// where the map has nothing; read-only registers hold their values and refuse writes;
    /// read-write registers take writes byte by byte.
    fn decoder_matches_the_map<const P: usize, const A: usize>(seed: u64) {
        let mut d = BusTestbench::<P, A>::new(seed);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut offsets: Vec<u32> = (0..0x200).step_by(4).collect();
        offsets.extend([0x001, 0x022, 0x103, 0x200, 0x7FC, 0xFFC]);
        for &off in &offsets {
            let decoded = abi::decode(off, P);
            let (_, resp) = d.read_resp(off);
            let want = if decoded == Decoded::Unmapped { SLVERR } else { OKAY };
            assert_eq!(resp, want, "read of 0x{off:03X} ({decoded:?})");
        }
        // Identification.
        assert_eq!(d.read(abi::MAGIC.offset), abi::MAGIC_VALUE);
        assert_eq!(d.read(abi::VERSION.offset), abi::VERSION_VALUE);
        assert_eq!(d.read(abi::MAX_USERS.offset), (P << A) as u32);
        let caps = d.read(abi::CAPS.offset);
        assert_eq!(abi::CAPS_LANES.get(caps), P as u32);
        assert_eq!(abi::CAPS_CREDIT_BITS.get(caps), 32);
        assert_eq!(abi::CAPS_MODES.get(caps), 0b111);
        assert_eq!(abi::CAPS_WEIGHTED.get(caps), 0);
        // Writes, with random data and strobes.
        for &off in &offsets {
            let decoded = abi::decode(off, P);
            if matches!(decoded, Decoded::Register(r) if r.name == "DOORBELL" || r.name == "CREDIT_CMD") {
                continue; // actions; covered by the quantum and credit tests
            }
            let before = d.read_resp(off).0;
            let data: u32 = rng.gen();
            let strb: u8 = rng.gen_range(0..16);
            let resp = d.write_strb(off, data, strb);
            match decoded {
                Decoded::Unmapped => assert_eq!(resp, SLVERR, "write to unmapped 0x{off:03X}"),
                Decoded::Register(r) if r.access == Access::ReadOnly => {
                    assert_eq!(resp, SLVERR, "write to read-only {}", r.name);
                    assert_eq!(d.read(off), before, "{} changed on a refused write", r.name);
                }
                Decoded::Register(r) => {
                    assert_eq!(resp, OKAY, "write to {}", r.name);
                    let mut want = merged(before, data, strb);
                    if r.name == "CONTROL" {
                        want &= abi::CONTROL_MODE.set(0, u32::MAX) | abi::CONTROL_IRQ.set(0, u32::MAX);
                    }
                    assert_eq!(d.read(off), want, "{} after writing 0x{data:08X} with strobes {strb:04b}", r.name);
                }
                Decoded::CreditData(lane) => {
                    assert_eq!(resp, OKAY, "write to CREDIT_DATA[{lane}]");
                    assert_eq!(d.read(off), merged(before, data, strb), "CREDIT_DATA[{lane}]");
                }
            }
        }
    }

    #[test]
    fn decoder_matches_the_register_map() {
        decoder_matches_the_map::<4, 2>(0);
        decoder_matches_the_map::<4, 2>(11);
        decoder_matches_the_map::<1, 6>(13);
        // 32 lanes: the model is built on the stack before it is boxed.
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(|| decoder_matches_the_map::<32, 1>(12))
            .unwrap()
            .join()
            .unwrap();
    }
}
