//! The AXI4-Lite slave's channels, without the register map: the write address and
//! data channels accepted independently and held until both are there, then one
//! response, from the fourth cycle after the write takes effect, that waits for
//! `bready` (so writes take effect at least five cycles apart: a row written to
//! `CREDIT_ROW` has come out of the credit banks, two cycles, and been checked against
//! the rows, before a command can take its words, and a credit write command, which
//! reaches the engine from a flip-flop a cycle after it takes effect, has landed in the
//! banks, at the end of the cycle after that ([`crate::bank::WRITE_LATENCY`]), before
//! the row is read for the next command, two cycles before that command); the read address taken when no data is pending,
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
    /// A write took effect one, two and three cycles ago: its response is on its way.
    b_pending: DFF<Bit>,
    b_pending2: DFF<Bit>,
    b_pending3: DFF<Bit>,
    b_valid: DFF<Bit>,
    m0: Signal<Local, Bits<32>>,
    m1: Signal<Local, Bits<32>>,
    m2: Signal<Local, Bits<32>>,
    m3: Signal<Local, Bits<32>>,
}

impl Logic for AxiLiteWrite {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, aw_hold, aw_addr, w_hold, w_data, w_strb, b_pending, b_pending2, b_pending3, b_valid);
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
        self.b_pending2.d.next = self.b_pending.q.val();
        self.b_pending3.d.next = self.b_pending2.q.val();
        if self.b_pending.q.val() {
            self.b_pending.d.next = false;
        }
        if self.b_pending3.q.val() {
            self.b_valid.d.next = true;
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
        self.fire.next = self.aw_hold.q.val()
            && self.w_hold.q.val()
            && !self.b_pending.q.val()
            && !self.b_pending2.q.val()
            && !self.b_pending3.q.val()
            && !self.b_valid.q.val();
        if self.fire.val() {
            self.aw_hold.d.next = false;
            self.w_hold.d.next = false;
            self.b_pending.d.next = true;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::collections::VecDeque;

    /// Settles the inputs, then one clock edge.
    fn tick<L: Block>(b: &mut L, clock: impl Fn(&mut L, bool)) {
        assert!(simulate(b, 100));
        clock(b, true);
        assert!(simulate(b, 100));
        clock(b, false);
        assert!(simulate(b, 100));
    }

    /// A master that follows AXI's rules at random (valid raised whenever it likes and
    /// held with its payload until the handshake, `bready` at random) writes 2,000
    /// words, the address and data channels running ahead of each other: every write
    /// fires exactly once, in order, with its address, data and strobes as a bit mask,
    /// never while a response waits and never within four cycles of the last (the credit
    /// port's words and writes need them); every fire gets exactly one response, no
    /// earlier than four cycles after it; none is lost.
    #[test]
    fn fires_each_write_once_in_order_and_answers_each_once() {
        let mut rng = ChaCha8Rng::seed_from_u64(41);
        let mut b = AxiLiteWrite::default();
        b.connect_all();
        let writes: Vec<(u64, u32, u8)> =
            (0..2_000).map(|_| (rng.gen_range(0..1 << ADDR_BITS), rng.gen(), rng.gen_range(0..16))).collect();
        let mask = |strb: u8| (0..4).filter(|i| strb >> i & 1 == 1).fold(0u64, |m, i| m | 0xff << (8 * i));
        let (mut aw, mut w, mut fired, mut answered) = (0, 0, 0, 0);
        let (mut aw_on, mut w_on) = (false, false);
        let (mut last_fire, mut min_gap, mut fire_gaps_of_5) = (None::<usize>, usize::MAX, 0);
        for cycle in 0..40_000 {
            if answered == writes.len() {
                break;
            }
            aw_on |= aw < writes.len() && rng.gen_bool(0.6);
            w_on |= w < writes.len() && rng.gen_bool(0.6);
            b.awvalid.next = aw_on;
            b.awaddr.next = writes.get(aw).map_or(0, |x| x.0).into();
            b.wvalid.next = w_on;
            b.wdata.next = u64::from(writes.get(w).map_or(0, |x| x.1)).into();
            b.wstrb.next = u64::from(writes.get(w).map_or(0, |x| x.2)).into();
            b.bready.next = rng.gen_bool(0.5);
            assert!(simulate(&mut b, 100));
            if b.fire.val() {
                assert!(!b.bvalid.val(), "write {fired} fired while a response waits");
                if let Some(last) = last_fire {
                    min_gap = min_gap.min(cycle - last);
                    fire_gaps_of_5 += usize::from(cycle - last == 5);
                }
                last_fire = Some(cycle);
                let (addr, data, strb) = writes[fired];
                let got = (b.addr.val().to_u64(), b.data.val().to_u64(), b.mask.val().to_u64());
                assert_eq!(got, (addr, u64::from(data), mask(strb)), "write {fired}");
                fired += 1;
            }
            if b.bvalid.val() && b.bready.val() {
                answered += 1;
                assert!(answered <= fired, "a response without a write");
                assert!(last_fire.is_some_and(|f| cycle >= f + 4), "write {answered} answered within four cycles");
            }
            if aw_on && b.awready.val() {
                aw += 1;
                aw_on = false;
            }
            if w_on && b.wready.val() {
                w += 1;
                w_on = false;
            }
            tick(&mut b, |b, c| b.clock.next = c.into());
        }
        assert_eq!((fired, answered), (writes.len(), writes.len()), "writes fired and answered");
        // Writes five cycles apart, the fastest the channels allow, happened.
        assert_eq!(min_gap, 5, "the closest writes");
        assert!(fire_gaps_of_5 > 20, "{fire_gaps_of_5} writes five cycles after the last");
    }

    /// A master issuing 2,000 reads at random, the register file giving a random word
    /// and a random refusal every cycle, `rready` at random: each accepted address is
    /// answered exactly once, in order, with the word and refusal of the cycle it was
    /// accepted in, the answer held unchanged until `rready`; no address is accepted
    /// while an answer waits.
    #[test]
    fn answers_each_read_once_with_the_word_of_its_address_cycle() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let mut b = AxiLiteRead::default();
        b.connect_all();
        let mut expected: VecDeque<(u64, u64)> = VecDeque::new();
        let (mut issued, mut answered, mut refused) = (0, 0, 0);
        let mut ar_on = false;
        let mut shown: Option<(u64, u64)> = None;
        for _ in 0..40_000 {
            if answered == 2_000 {
                break;
            }
            ar_on |= issued < 2_000 && rng.gen_bool(0.5);
            b.arvalid.next = ar_on;
            let (word, refuse) = (u64::from(rng.gen::<u32>()), rng.gen_bool(0.3));
            b.word.next = word.into();
            b.refuse.next = refuse;
            b.rready.next = rng.gen_bool(0.5);
            assert!(simulate(&mut b, 100));
            if b.rvalid.val() {
                let beat = (b.rdata.val().to_u64(), b.rresp.val().to_u64());
                assert!(shown.is_none_or(|s| s == beat), "read {answered} changed before rready");
                shown = Some(beat);
                assert!(!b.arready.val(), "an address accepted while read {answered} waits");
                if b.rready.val() {
                    assert_eq!(Some(beat), expected.pop_front(), "read {answered}");
                    answered += 1;
                    refused += usize::from(beat.1 == RESP_SLVERR);
                    shown = None;
                }
            }
            if ar_on && b.arready.val() {
                expected.push_back((word, if refuse { RESP_SLVERR } else { RESP_OKAY }));
                issued += 1;
                ar_on = false;
            }
            tick(&mut b, |b, c| b.clock.next = c.into());
        }
        assert_eq!((answered, expected.len()), (2_000, 0), "reads answered, left");
        assert!(refused > 300 && refused < 2_000 - 300, "{refused} of 2,000 refused");
    }
}
