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

/// A saturating sum (at `2^32 - 1`). The sum is kept modulo 2^32 with a sticky flag
/// for a carry out of bit 31, and `q` is `2^32 - 1` once the flag is set: an addition
/// is one carry chain straight into the register (the flag is one LUT after the chain),
/// not a chain whose carry then selects all 32 bits.
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
    saturated: DFF<Bit>,
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
            saturated: Default::default(),
            sum: Default::default(),
            carry: Default::default(),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
        }
    }
}

impl Logic for SatAcc {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc, saturated);
        self.sum.next = self.acc.q.val() + self.x.val();
        // The carry out of bit 31, from the operands' and the sum's top bits (one LUT
        // after the chain instead of a second comparison).
        self.carry.next = (self.acc.q.val().get_bit(31) & self.x.val().get_bit(31))
            | ((self.acc.q.val().get_bit(31) | self.x.val().get_bit(31)) & !self.sum.val().get_bit(31));
        if self.shift.val() {
            self.acc.d.next = self.shift_in.val();
            self.saturated.d.next = false;
        } else if self.add.val() {
            self.acc.d.next = self.sum.val();
            self.saturated.d.next = self.saturated.q.val() | self.carry.val();
        }
        self.q.next = self.acc.q.val();
        if self.saturated.q.val() {
            self.q.next = self.max.val();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(acc: &mut SatAcc) {
        acc.clock.next = true.into();
        assert!(simulate(acc, 100));
        acc.clock.next = false.into();
        assert!(simulate(acc, 100));
    }

    /// Sums against `u32::saturating_add`, across the saturation (and after it, where
    /// the register itself has wrapped), then a shift that replaces the sum.
    #[test]
    fn sat_acc_saturates_and_shifts() {
        let mut acc = SatAcc::default();
        acc.connect_all();
        let mut expect = 0u32;
        let xs = [5u32, 0x7FFF_FFFF, 0x7FFF_FFF0, 0x10, 0, 1, 0xFFFF_FFFF, 3];
        for (i, &x) in xs.iter().enumerate() {
            acc.x.next = (x as u64).into();
            acc.add.next = true;
            acc.shift.next = false;
            tick(&mut acc);
            expect = expect.saturating_add(x);
            assert_eq!(acc.q.val().to_u64(), expect as u64, "after adding {xs:?}[..={i}]");
        }
        assert_eq!(expect, u32::MAX, "the sequence must reach saturation");
        // A shift (which wins over an add) replaces the sum and clears the flag.
        acc.shift.next = true;
        acc.shift_in.next = 7u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 7);
        acc.shift.next = false;
        acc.x.next = 0xFFFF_FFF8u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0xFFFF_FFFF);
        acc.add.next = false;
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0xFFFF_FFFF, "holds without add");
        acc.shift.next = true;
        acc.shift_in.next = 0u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0);
        // A neighbour's saturated sum shifted in stays saturated under an add, and a
        // sum that saturates again after a shift shows it.
        acc.shift_in.next = 0xFFFF_FFFFu64.into();
        tick(&mut acc);
        acc.shift.next = false;
        acc.add.next = true;
        acc.x.next = 0u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0xFFFF_FFFF);
        acc.x.next = 2u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0xFFFF_FFFF, "saturated sum plus 2");
        acc.shift.next = true;
        acc.shift_in.next = 0xFFFF_FFF0u64.into();
        tick(&mut acc);
        acc.shift.next = false;
        acc.x.next = 0x0Fu64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0xFFFF_FFFF);
        acc.x.next = 0x11u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 0xFFFF_FFFF, "saturated again after a shift");
        acc.add.next = false;
        acc.shift.next = true;
        acc.shift_in.next = 9u64.into();
        tick(&mut acc);
        assert_eq!(acc.q.val().to_u64(), 9, "the flag is cleared by a shift");
    }
}
