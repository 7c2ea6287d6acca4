//! The accumulators of the engine's sums, minima and maxima, and the shift chain that
//! reduces them across lanes.
//!
//! Each lane accumulates its own users (one row per cycle, one carry chain per
//! cycle). After a pass the lanes' accumulators shift towards lane 0, one lane per
//! cycle, and the engine's accumulator of the same kind adds up what leaves lane 0:
//! `P` cycles per pass instead of a chain of `P` adders in every cycle. The last lane
//! shifts in zero, so every accumulator ends a reduction at zero, its identity (a
//! minimum is kept as the maximum of the complemented values).

use rust_hdl::prelude::*;

/// A saturating sum (at `2^32 - 1`).
#[derive(LogicBlock)]
pub struct SatAcc {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Value to add.
    pub x: Signal<In, Bits<32>>,
    /// Add `x` this cycle.
    pub add: Signal<In, Bit>,
    /// Take `shift_in` instead (wins over `add`).
    pub shift: Signal<In, Bit>,
    /// The next lane's sum (0 for the last lane, or to clear).
    pub shift_in: Signal<In, Bits<32>>,
    /// The sum.
    pub q: Signal<Out, Bits<32>>,
    acc: DFF<Bits<32>>,
    sum: Signal<Local, Bits<32>>,
    carry: Signal<Local, Bit>,
    max: Constant<Bits<32>>,
}

impl Default for SatAcc {
    fn default() -> Self {
        SatAcc {
            clock: Default::default(),
            x: Default::default(),
            add: Default::default(),
            shift: Default::default(),
            shift_in: Default::default(),
            q: Default::default(),
            acc: Default::default(),
            sum: Default::default(),
            carry: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
        }
    }
}

impl Logic for SatAcc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc);
        self.sum.next = self.acc.q.val() + self.x.val();
        // The carry out of bit 31, from the operands' and the sum's top bits (one LUT
        // after the chain instead of a second comparison).
        self.carry.next = (self.acc.q.val().get_bit(31) & self.x.val().get_bit(31))
            | ((self.acc.q.val().get_bit(31) | self.x.val().get_bit(31)) & !self.sum.val().get_bit(31));
        if self.shift.val() {
            self.acc.d.next = self.shift_in.val();
        } else if self.add.val() {
            if self.carry.val() {
                self.acc.d.next = self.max.val();
            } else {
                self.acc.d.next = self.sum.val();
            }
        }
        self.q.next = self.acc.q.val();
    }
}

/// A maximum.
#[derive(LogicBlock, Default)]
pub struct MaxAcc {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Candidate value.
    pub x: Signal<In, Bits<32>>,
    /// Take `x` this cycle if it is larger.
    pub take: Signal<In, Bit>,
    /// Take `shift_in` instead (wins over `take`).
    pub shift: Signal<In, Bit>,
    /// The next lane's maximum (0 for the last lane, or to clear).
    pub shift_in: Signal<In, Bits<32>>,
    /// The maximum.
    pub q: Signal<Out, Bits<32>>,
    acc: DFF<Bits<32>>,
}

impl Logic for MaxAcc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc);
        if self.shift.val() {
            self.acc.d.next = self.shift_in.val();
        } else if self.take.val() & (self.x.val() > self.acc.q.val()) {
            self.acc.d.next = self.x.val();
        }
        self.q.next = self.acc.q.val();
    }
}
