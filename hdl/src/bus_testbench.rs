//! A bus-level driver for the RustHDL model of the [`AxiTop`]: an AXI4-Lite master
//! that goes through all five handshakes, and stream agents that feed demand beats and
//! take result beats, all with optional seeded random stalls, the way a PCIe shell
//! would. It checks the slave's side of the protocol as it goes (responses and result
//! beats hold still until taken; `tlast` marks the last result row).

use crate::axi_top::{AxiTop, RESP_OKAY};
use crate::engine_sim::Stalls;
use fairshare_abi as abi;
use rust_hdl::prelude::*;

/// What one quantum through the bus returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BusQuantum {
    /// Allocation per user (empty when the device reported an error).
    pub alloc: Vec<u32>,
    /// Credits per user after the quantum.
    pub credits: Vec<u32>,
    /// `STATUS` after the quantum.
    pub status: u32,
    /// `SEQ_DONE` after the quantum.
    pub seq_done: u32,
    /// `CYCLES` after the quantum.
    pub cycles: u32,
}

/// Drives a [`AxiTop`] with `P` lanes and `2^A` rows per lane.
pub struct BusTestbench<const P: usize, const A: usize> {
    uut: Box<AxiTop<P, A>>,
    stalls: Stalls,
    demand: Vec<u32>,
    next_row: usize,
    tlast_row: Option<usize>,
    results: Vec<(u32, u32)>,
    held: Option<Vec<u64>>,
    irqs: u64,
}

impl<const P: usize, const A: usize> BusTestbench<P, A> {
    /// A device at power-up. `stall_seed` 0: no stalls; otherwise every valid and
    /// ready the testbench drives drops with probability 1/4 per cycle (xorshift64).
    pub fn new(stall_seed: u64) -> Self {
        let mut uut = crate::build::boxed(AxiTop::<P, A>::new);
        uut.connect_all();
        let mut sim = BusTestbench {
            uut,
            stalls: Stalls(stall_seed),
            demand: Vec::new(),
            next_row: 0,
            tlast_row: None,
            results: Vec::new(),
            held: None,
            irqs: 0,
        };
        sim.settle();
        sim
    }

    fn settle(&mut self) {
        assert!(simulate(&mut *self.uut, 10_000), "device logic did not settle");
    }

    fn active(&mut self) -> bool {
        self.stalls.active()
    }

    /// Drives the stream agents and settles; the caller then samples its own
    /// handshakes and calls [`Self::edge`].
    fn pre(&mut self) {
        let rows = self.demand.len().div_ceil(P);
        let offer = self.next_row < rows && self.active();
        self.uut.s_axis_tvalid.next = offer;
        for lane in 0..P {
            let d = if offer { self.demand.get(self.next_row * P + lane).copied().unwrap_or(0) } else { 0 };
            self.uut.s_axis_tdata[lane].next = (d as u64).into();
        }
        self.uut.s_axis_tlast.next = offer && Some(self.next_row) == self.tlast_row;
        let take = self.active();
        self.uut.m_axis_tready.next = take;
        self.settle();
        if offer && self.uut.s_axis_tready.val() {
            self.next_row += 1;
        }
        if self.uut.m_axis_tvalid.val() {
            let mut beat: Vec<u64> = self.uut.m_axis_alloc.iter().map(|s| s.val().to_u64()).collect();
            beat.extend(self.uut.m_axis_credit.iter().map(|s| s.val().to_u64()));
            beat.push(self.uut.m_axis_tlast.val() as u64);
            if let Some(h) = self.held.take() {
                assert_eq!(h, beat, "a result beat changed while tready was low");
            }
            if take {
                let n = self.demand.len();
                for lane in 0..P {
                    if self.results.len() < n {
                        self.results.push((beat[lane] as u32, beat[P + lane] as u32));
                    }
                }
                assert_eq!(beat[2 * P] == 1, self.results.len() == n, "tlast must mark the last result row only");
            } else {
                self.held = Some(beat);
            }
        }
        if self.uut.irq.val() {
            self.irqs += 1;
        }
    }

    /// One clock edge; inputs set since the last settle are settled first (see
    /// `EngineSim::tick`: a change made with the clock would race it).
    fn edge(&mut self) {
        self.settle();
        self.uut.clock.next = true.into();
        self.settle();
        self.uut.clock.next = false.into();
        self.settle();
    }

    /// Interrupt pulses seen so far.
    pub fn irqs(&self) -> u64 {
        self.irqs
    }

    /// One AXI4-Lite write of `data` with byte strobes `strb` to `offset`; returns
    /// `bresp`. Address and data are offered independently after random delays.
    pub fn write_strb(&mut self, offset: u32, data: u32, strb: u8) -> u8 {
        self.write_strb_counted(offset, data, strb).0
    }

    /// [`Self::write_strb`], with the cycles it took.
    fn write_strb_counted(&mut self, offset: u32, data: u32, strb: u8) -> (u8, usize) {
        let (mut aw_done, mut w_done) = (false, false);
        let (mut aw_on, mut w_on) = (false, false);
        let mut held_resp: Option<u64> = None;
        for cycle in 1..=10_000 {
            aw_on |= !aw_done && self.active();
            w_on |= !w_done && self.active();
            let bready = self.active();
            self.uut.s_axil_awvalid.next = aw_on && !aw_done;
            self.uut.s_axil_awaddr.next = (offset as u64).into();
            self.uut.s_axil_wvalid.next = w_on && !w_done;
            self.uut.s_axil_wdata.next = (data as u64).into();
            self.uut.s_axil_wstrb.next = (strb as u64).into();
            self.uut.s_axil_bready.next = bready;
            self.pre();
            aw_done |= self.uut.s_axil_awvalid.val() && self.uut.s_axil_awready.val();
            w_done |= self.uut.s_axil_wvalid.val() && self.uut.s_axil_wready.val();
            let mut resp = None;
            if self.uut.s_axil_bvalid.val() {
                let r = self.uut.s_axil_bresp.val().to_u64();
                if let Some(h) = held_resp {
                    assert_eq!(h, r, "bresp changed while bvalid waited");
                }
                held_resp = Some(r);
                if bready {
                    resp = Some(r as u8);
                }
            }
            self.edge();
            if let Some(r) = resp {
                self.uut.s_axil_awvalid.next = false;
                self.uut.s_axil_wvalid.next = false;
                self.uut.s_axil_bready.next = false;
                return (r, cycle);
            }
        }
        panic!("write to 0x{offset:03X} never completed");
    }

    /// Two full-word writes, the second's address and data offered as soon as the
    /// channels have taken the first's (AXI4-Lite lets a master run ahead of the
    /// responses), `bready` always high, no stalls: the two take effect as close together
    /// as the slave allows. Returns both responses, in order.
    pub fn write_pair(&mut self, first: (u32, u32), second: (u32, u32)) -> [u8; 2] {
        let writes = [first, second];
        let (mut aw, mut w, mut answered) = (0, 0, 0);
        let mut resp = [0u8; 2];
        for _ in 0..10_000 {
            self.uut.s_axil_awvalid.next = aw < 2;
            self.uut.s_axil_awaddr.next = u64::from(writes[aw.min(1)].0).into();
            self.uut.s_axil_wvalid.next = w < 2;
            self.uut.s_axil_wdata.next = u64::from(writes[w.min(1)].1).into();
            self.uut.s_axil_wstrb.next = 0xF_u64.into();
            self.uut.s_axil_bready.next = true;
            self.pre();
            let aw_taken = self.uut.s_axil_awvalid.val() && self.uut.s_axil_awready.val();
            let w_taken = self.uut.s_axil_wvalid.val() && self.uut.s_axil_wready.val();
            if self.uut.s_axil_bvalid.val() {
                resp[answered] = self.uut.s_axil_bresp.val().to_u64() as u8;
                answered += 1;
            }
            self.edge();
            aw += usize::from(aw_taken);
            w += usize::from(w_taken);
            if answered == 2 {
                self.uut.s_axil_awvalid.next = false;
                self.uut.s_axil_wvalid.next = false;
                self.uut.s_axil_bready.next = false;
                return resp;
            }
        }
        panic!("writes to 0x{:03X} and 0x{:03X} never completed", first.0, second.0);
    }

    /// A full-word write; panics unless the response is OKAY.
    pub fn write(&mut self, offset: u32, data: u32) {
        let r = self.write_strb(offset, data, 0xF);
        assert_eq!(r as u64, RESP_OKAY, "write to 0x{offset:03X} answered {r}");
    }

    /// One AXI4-Lite read; returns `(rdata, rresp)`.
    pub fn read_resp(&mut self, offset: u32) -> (u32, u8) {
        let mut ar_done = false;
        let mut ar_on = false;
        let mut held: Option<(u64, u64)> = None;
        for _ in 0..10_000 {
            ar_on |= !ar_done && self.active();
            let rready = self.active();
            self.uut.s_axil_arvalid.next = ar_on && !ar_done;
            self.uut.s_axil_araddr.next = (offset as u64).into();
            self.uut.s_axil_rready.next = rready;
            self.pre();
            ar_done |= self.uut.s_axil_arvalid.val() && self.uut.s_axil_arready.val();
            let mut out = None;
            if self.uut.s_axil_rvalid.val() && ar_done {
                let now = (self.uut.s_axil_rdata.val().to_u64(), self.uut.s_axil_rresp.val().to_u64());
                if let Some(h) = held {
                    assert_eq!(h, now, "read data changed while rvalid waited");
                }
                held = Some(now);
                if rready {
                    out = Some((now.0 as u32, now.1 as u8));
                }
            }
            self.edge();
            if let Some(o) = out {
                self.uut.s_axil_arvalid.next = false;
                self.uut.s_axil_rready.next = false;
                return o;
            }
        }
        panic!("read of 0x{offset:03X} never completed");
    }

    /// A read that must answer OKAY.
    pub fn read(&mut self, offset: u32) -> u32 {
        let (d, r) = self.read_resp(offset);
        assert_eq!(r as u64, RESP_OKAY, "read of 0x{offset:03X} answered {r}");
        d
    }

    /// Runs one quantum the way the host and a DMA shell would: configuration
    /// registers, doorbell `seq`, demand beats (with `tlast` on row `tlast_row`, the
    /// last row when `None`), result beats, then `STATUS` polled until done.
    pub fn quantum_framed(
        &mut self,
        seq: u32,
        mode: u32,
        fair: u32,
        guaranteed: u32,
        demand: &[u32],
        tlast_row: Option<usize>,
    ) -> BusQuantum {
        let n = demand.len();
        self.write(abi::CONTROL.offset, abi::CONTROL_IRQ.set(abi::CONTROL_MODE.set(0, mode), 1));
        self.write(abi::N_USERS.offset, n as u32);
        self.write(abi::FAIR_SHARE.offset, fair);
        self.write(abi::GUARANTEED.offset, guaranteed);
        self.offer(demand, tlast_row);
        self.write(abi::DOORBELL.offset, seq);
        let mut status = 0;
        for _ in 0..1_000_000 {
            status = self.read(abi::STATUS.offset);
            if abi::STATUS_DONE.get(status) == 1 && abi::STATUS_BUSY.get(status) == 0 {
                break;
            }
        }
        assert_eq!(abi::STATUS_DONE.get(status), 1, "quantum {seq} never finished");
        let seq_done = self.read(abi::SEQ_DONE.offset);
        let cycles = self.read(abi::CYCLES.offset);
        let (alloc, credits) = self.results.drain(..).unzip();
        self.demand.clear();
        BusQuantum { alloc, credits, status, seq_done, cycles }
    }

    /// [`Self::quantum_framed`] with correct framing.
    pub fn quantum(&mut self, seq: u32, mode: u32, fair: u32, guaranteed: u32, demand: &[u32]) -> BusQuantum {
        self.quantum_framed(seq, mode, fair, guaranteed, demand, None)
    }

    /// Restores the credits of users `0 .. credits.len()` through `CREDIT_DATA` and
    /// write commands; returns the first non-OKAY response, if any.
    pub fn write_credits(&mut self, credits: &[u32], tag: u32) -> Result<(), u8> {
        for row in 0..credits.len().div_ceil(P) {
            self.write(abi::CREDIT_ROW.offset, row as u32);
            for lane in 0..P {
                let c = credits.get(row * P + lane).copied().unwrap_or(0);
                let r = self.write_strb(abi::credit_data(lane), c, 0xF);
                if r as u64 != RESP_OKAY {
                    return Err(r);
                }
            }
            let cmd = abi::CREDIT_CMD_TAG.set(abi::CREDIT_CMD_WRITE.set(0, 1), tag.wrapping_add(row as u32));
            let r = self.write_strb(abi::CREDIT_CMD.offset, cmd, 0xF);
            if r as u64 != RESP_OKAY {
                return Err(r);
            }
            assert_eq!(self.read(abi::CREDIT_ACK.offset), cmd, "CREDIT_ACK must echo the command");
        }
        Ok(())
    }

    /// Checkpoints the credits of users `0 .. n` through read commands.
    pub fn read_credits(&mut self, n: usize, tag: u32) -> Result<Vec<u32>, u8> {
        let mut out = Vec::with_capacity(n);
        for row in 0..n.div_ceil(P) {
            self.write(abi::CREDIT_ROW.offset, row as u32);
            let cmd = abi::CREDIT_CMD_TAG.set(0, tag.wrapping_add(row as u32));
            let r = self.write_strb(abi::CREDIT_CMD.offset, cmd, 0xF);
            if r as u64 != RESP_OKAY {
                return Err(r);
            }
            assert_eq!(self.read(abi::CREDIT_ACK.offset), cmd, "CREDIT_ACK must echo the command");
            for lane in 0..P {
                if row * P + lane < n {
                    out.push(self.read(abi::credit_data(lane)));
                }
            }
        }
        Ok(out)
    }

    /// Offers `demand` on the stream from its first row (`tlast` on row `tlast_row`, the
    /// last row when `None`) and takes the results afresh, as the edges that follow run.
    fn offer(&mut self, demand: &[u32], tlast_row: Option<usize>) {
        self.demand = demand.to_vec();
        self.next_row = 0;
        self.tlast_row = Some(tlast_row.unwrap_or(demand.len().div_ceil(P).saturating_sub(1)));
        self.results.clear();
        self.held = None;
    }

    /// Starts a quantum and returns while it runs (no demand beats are offered), for
    /// tests of what the bus does during a quantum. Finish it with [`Self::finish`].
    pub fn start_stalled(&mut self, seq: u32, n: usize, fair: u32, guaranteed: u32) {
        self.write(abi::CONTROL.offset, 0);
        self.write(abi::N_USERS.offset, n as u32);
        self.write(abi::FAIR_SHARE.offset, fair);
        self.write(abi::GUARANTEED.offset, guaranteed);
        self.demand.clear();
        self.write(abi::DOORBELL.offset, seq);
    }

    /// Feeds `demand` to a quantum started with the interrupt enabled (`CONTROL` bit 8)
    /// and, `at` cycles after the first demand beat is offered (`None`: never), offers
    /// a credit read command with no stalls (it takes effect the cycle after); returns
    /// its response and the cycle of the interrupt. For tests of the credit port around
    /// a quantum's end: run it once without a command to learn the interrupt's cycle.
    pub fn finish_with_a_credit_read(&mut self, demand: &[u32], at: Option<usize>, tag: u32) -> (Option<u8>, usize) {
        self.offer(demand, None);
        let irqs = self.irqs;
        let (mut irq_at, mut resp) = (None, None);
        let mut cycle = 0;
        loop {
            if resp.is_none() && at.is_some_and(|at| cycle >= at) {
                let stalls = std::mem::replace(&mut self.stalls, Stalls(0));
                let cmd = abi::CREDIT_CMD_TAG.set(0, tag);
                let (r, used) = self.write_strb_counted(abi::CREDIT_CMD.offset, cmd, 0xF);
                self.stalls = stalls;
                resp = Some(r);
                // The interrupt within the write's cycles: at its last (an upper bound).
                cycle += used;
            } else {
                self.pre();
                self.edge();
                cycle += 1;
            }
            if self.irqs > irqs && irq_at.is_none() {
                irq_at = Some(cycle);
            }
            if let Some(irq) = irq_at.filter(|_| resp.is_some() || at.is_none()) {
                self.demand.clear();
                return (resp, irq);
            }
            assert!(cycle < 1_000_000, "the quantum never ended");
        }
    }

    /// Feeds `demand` to a quantum started by [`Self::start_stalled`] and waits for it.
    pub fn finish(&mut self, demand: &[u32]) -> u32 {
        self.offer(demand, None);
        loop {
            let status = self.read(abi::STATUS.offset);
            if abi::STATUS_BUSY.get(status) == 0 {
                self.demand.clear();
                return status;
            }
        }
    }
}
