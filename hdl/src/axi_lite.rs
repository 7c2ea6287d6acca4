//! The AXI4-Lite slave's channels, without the register map: the write address and
//! data channels accepted independently and held until both are there, then one
//! response that waits for `bready`; the read address taken when no data is pending,
//! the data a cycle later, held until `rready`. The register file beside them
//! ([`crate::axi_top`]) decodes the address, says whether the access is refused
//! (`SLVERR`) and gives or takes the data. The write response's code is the register
//! file's own register: it is decided from `fire`, and a block input that fed back
//! into the block computing `fire` would be, to Verilator, a combinational loop
//! (one `always` block per module).

use crate::axi_top::{ADDR_BITS, RESP_OKAY, RESP_SLVERR};
use rust_hdl::prelude::*;

/// The write channels (AW, W, B).
#[derive(LogicBlock, Default)]
pub struct AxiLiteWrite {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Write address valid.
    pub awvalid: Signal<In, Bit>,
    /// Write address ready.
    pub awready: Signal<Out, Bit>,
    /// Write address.
    pub awaddr: Signal<In, Bits<ADDR_BITS>>,
    /// Write data valid.
    pub wvalid: Signal<In, Bit>,
    /// Write data ready.
    pub wready: Signal<Out, Bit>,
    /// Write data.
    pub wdata: Signal<In, Bits<32>>,
    /// Write strobes.
    pub wstrb: Signal<In, Bits<4>>,
    /// Write response valid.
    pub bvalid: Signal<Out, Bit>,
    /// Write response ready.
    pub bready: Signal<In, Bit>,
    /// A write takes effect this cycle (address and data held, no response pending).
    pub fire: Signal<Out, Bit>,
    /// The write's address.
    pub addr: Signal<Out, Bits<ADDR_BITS>>,
    /// The write's data.
    pub data: Signal<Out, Bits<32>>,
    /// The write's strobes as a bit mask.
    pub mask: Signal<Out, Bits<32>>,
    aw_hold: DFF<Bit>,
    aw_addr: DFF<Bits<ADDR_BITS>>,
    w_hold: DFF<Bit>,
    w_data: DFF<Bits<32>>,
    w_strb: DFF<Bits<4>>,
    b_valid: DFF<Bit>,
    m0: Signal<Local, Bits<32>>,
    m1: Signal<Local, Bits<32>>,
    m2: Signal<Local, Bits<32>>,
    m3: Signal<Local, Bits<32>>,
}

impl Logic for AxiLiteWrite {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, aw_hold, aw_addr, w_hold, w_data, w_strb, b_valid);
        self.awready.next = !self.aw_hold.q.val();
        self.wready.next = !self.w_hold.q.val();
        self.bvalid.next = self.b_valid.q.val();
        if self.awvalid.val() && !self.aw_hold.q.val() {
            self.aw_hold.d.next = true;
            self.aw_addr.d.next = self.awaddr.val();
        }
        if self.wvalid.val() && !self.w_hold.q.val() {
            self.w_hold.d.next = true;
            self.w_data.d.next = self.wdata.val();
            self.w_strb.d.next = self.wstrb.val();
        }
        if self.b_valid.q.val() && self.bready.val() {
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
        self.mask.next = self.m0.val() | self.m1.val() | self.m2.val() | self.m3.val();
        self.addr.next = self.aw_addr.q.val();
        self.data.next = self.w_data.q.val();
        self.fire.next = self.aw_hold.q.val() && self.w_hold.q.val() && !self.b_valid.q.val();
        if self.fire.val() {
            self.aw_hold.d.next = false;
            self.w_hold.d.next = false;
            self.b_valid.d.next = true;
        }
    }
}

/// The read channels (AR, R).
#[derive(LogicBlock)]
pub struct AxiLiteRead {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Read address valid.
    pub arvalid: Signal<In, Bit>,
    /// Read address ready.
    pub arready: Signal<Out, Bit>,
    /// Read data valid.
    pub rvalid: Signal<Out, Bit>,
    /// Read data ready.
    pub rready: Signal<In, Bit>,
    /// Read data.
    pub rdata: Signal<Out, Bits<32>>,
    /// Read response.
    pub rresp: Signal<Out, Bits<2>>,
    /// The register file's word at the read address (`araddr`, decoded beside).
    pub word: Signal<In, Bits<32>>,
    /// The register file refuses the read (`SLVERR`, data 0 or what it gives).
    pub refuse: Signal<In, Bit>,
    r_valid: DFF<Bit>,
    r_data: DFF<Bits<32>>,
    r_resp: DFF<Bits<2>>,
    okay: Constant<Bits<2>>,
    slverr: Constant<Bits<2>>,
}

impl Default for AxiLiteRead {
    fn default() -> Self {
        AxiLiteRead {
            clock: Default::default(),
            arvalid: Default::default(),
            arready: Default::default(),
            rvalid: Default::default(),
            rready: Default::default(),
            rdata: Default::default(),
            rresp: Default::default(),
            word: Default::default(),
            refuse: Default::default(),
            r_valid: Default::default(),
            r_data: Default::default(),
            r_resp: Default::default(),
            okay: Constant::new(RESP_OKAY.into()),
            slverr: Constant::new(RESP_SLVERR.into()),
        }
    }
}

impl Logic for AxiLiteRead {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r_valid, r_data, r_resp);
        self.arready.next = !self.r_valid.q.val();
        self.rvalid.next = self.r_valid.q.val();
        self.rdata.next = self.r_data.q.val();
        self.rresp.next = self.r_resp.q.val();
        if self.r_valid.q.val() && self.rready.val() {
            self.r_valid.d.next = false;
        }
        if self.arvalid.val() && !self.r_valid.q.val() {
            self.r_valid.d.next = true;
            self.r_data.d.next = self.word.val();
            self.r_resp.d.next = self.okay.val();
            if self.refuse.val() {
                self.r_resp.d.next = self.slverr.val();
            }
        }
    }
}
