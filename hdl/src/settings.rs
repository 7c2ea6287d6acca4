//! The quantum's settings: taken and checked in every cycle the engine is idle (so that
//! those of the cycle with `start` are kept), and what follows from them for the whole
//! quantum: the free credits `f - g`, the last row `(n - 1) / P`, the pool size `n f`
//! and the shared slices `n (f - g)`.
//!
//! The products are saturated at 2^32 - 1: `n < 2^16` and `f < 2^31` (both checked),
//! two 16 x 16 bit products per value of registered halves, each registered before and
//! after its multiplier, then one addition: ready [`LATENCY`] cycles after the settings
//! are taken (PLAN reads them after LOAD, at least 13 cycles after `start`).

use crate::engine::row_divider;
use crate::multiplier::Multiplier;
use fairshare_abi as abi;
use rust_hdl::prelude::*;

/// Cycles from the clock edge that takes the settings to the edge after which
/// `capacity` and `shared` hold their products.
pub const LATENCY: usize = 6;

/// The settings of an engine of `P` lanes and `2^A` rows.
#[derive(LogicBlock)]
pub struct Settings<const P: usize, const A: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Take and check the inputs (the engine is idle).
    pub take: Signal<In, Bit>,
    /// Mode input.
    pub mode_in: Signal<In, Bits<2>>,
    /// Users input.
    pub n_in: Signal<In, Bits<32>>,
    /// Fair share input.
    pub fair_in: Signal<In, Bits<32>>,
    /// Guaranteed share input.
    pub guaranteed_in: Signal<In, Bits<32>>,
    /// The mode taken.
    pub mode: Signal<Out, Bits<2>>,
    /// The users taken.
    pub n: Signal<Out, Bits<32>>,
    /// The fair share taken.
    pub fair: Signal<Out, Bits<32>>,
    /// The guaranteed share taken.
    pub guaranteed: Signal<Out, Bits<32>>,
    /// `f - g` (a cycle after the settings).
    pub free: Signal<Out, Bits<32>>,
    /// The quantum's last row, `(n - 1) / P`.
    pub last_row: Signal<Out, Bits<A>>,
    /// The same, from a register of its own for the sequencer (hdl/synth.sh keeps it
    /// apart, so it sits beside the sequencer and not among the lanes that read
    /// `last_row`).
    pub seq_last_row: Signal<Out, Bits<A>>,
    /// The check of the settings taken: 0, or the status code that refuses them.
    pub code: Signal<Out, Bits<4>>,
    /// `n f`, saturated.
    pub capacity: Signal<Out, Bits<32>>,
    /// `n (f - g)`, saturated.
    pub shared: Signal<Out, Bits<32>>,
    cfg_mode: DFF<Bits<2>>,
    cfg_n: DFF<Bits<32>>,
    cfg_fair: DFF<Bits<32>>,
    cfg_guaranteed: DFF<Bits<32>>,
    cfg_last_row: DFF<Bits<A>>,
    seq_last_row_r: DFF<Bits<A>>,
    start_code: DFF<Bits<4>>,
    free_r: DFF<Bits<32>>,
    /// The multiplications' operands, registered beside the multipliers: the settings'
    /// registers serve the whole engine and sit far from them. `n` has a copy per
    /// multiplier (`cap_lo`, `cap_hi`, `shared_lo`, `shared_hi`; hdl/synth.sh keeps them),
    /// as the multipliers sit apart in the die's DSP rows.
    n16: [DFF<Bits<16>>; 4],
    fair_lo: DFF<Bits<16>>,
    fair_hi: DFF<Bits<16>>,
    free_lo: DFF<Bits<16>>,
    free_hi: DFF<Bits<16>>,
    /// The multipliers, each registering its operands once more and its product in
    /// the block itself (a multiplier's own delay is most of a cycle: the measurements,
    /// docs/engine.md, "Clock on an ECP5-85F").
    mult: [Multiplier; 4],
    cap_lo: DFF<Bits<32>>,
    cap_hi: DFF<Bits<32>>,
    shared_lo: DFF<Bits<32>>,
    shared_hi: DFF<Bits<32>>,
    capacity_r: DFF<Bits<32>>,
    shared_r: DFF<Bits<32>>,
    cap_sum: Signal<Local, Bits<32>>,
    cap_carry: Signal<Local, Bit>,
    shared_sum: Signal<Local, Bits<32>>,
    shared_carry: Signal<Local, Bit>,
    /// `(n - 1) / P` as a multiplication by a reciprocal (see [`row_divider`]); locals
    /// between, as RustHDL's Verilog cannot slice an expression.
    n_m1: Signal<Local, Bits<32>>,
    users_m1: Signal<Local, Bits<16>>,
    quotient: Signal<Local, Bits<32>>,
    div_lo: Signal<Local, Bits<32>>,
    div_hi: Signal<Local, Bits<32>>,
    recip_lo: Constant<Bits<16>>,
    recip_hi: Constant<Bits<16>>,
    recip_shift: Constant<Bits<32>>,
    n_max: Constant<Bits<32>>,
    max: Constant<Bits<32>>,
    limit: Constant<Bits<32>>,
    mode_strict: Constant<Bits<2>>,
    code_users: Constant<Bits<4>>,
    code_guaranteed: Constant<Bits<4>>,
    code_capacity: Constant<Bits<4>>,
    code_mode: Constant<Bits<4>>,
}

impl<const P: usize, const A: usize> Default for Settings<P, A> {
    fn default() -> Self {
        let (recip_lo, recip_hi, recip_shift) = row_divider(P);
        Settings {
            clock: Default::default(),
            take: Default::default(),
            mode_in: Default::default(),
            n_in: Default::default(),
            fair_in: Default::default(),
            guaranteed_in: Default::default(),
            mode: Default::default(),
            n: Default::default(),
            fair: Default::default(),
            guaranteed: Default::default(),
            free: Default::default(),
            last_row: Default::default(),
            seq_last_row: Default::default(),
            code: Default::default(),
            capacity: Default::default(),
            shared: Default::default(),
            cfg_mode: Default::default(),
            cfg_n: Default::default(),
            cfg_fair: Default::default(),
            cfg_guaranteed: Default::default(),
            cfg_last_row: Default::default(),
            seq_last_row_r: Default::default(),
            start_code: Default::default(),
            free_r: Default::default(),
            n16: array_init::array_init(|_| Default::default()),
            fair_lo: Default::default(),
            fair_hi: Default::default(),
            free_lo: Default::default(),
            free_hi: Default::default(),
            mult: array_init::array_init(|_| Default::default()),
            cap_lo: Default::default(),
            cap_hi: Default::default(),
            shared_lo: Default::default(),
            shared_hi: Default::default(),
            capacity_r: Default::default(),
            shared_r: Default::default(),
            cap_sum: Default::default(),
            cap_carry: Default::default(),
            shared_sum: Default::default(),
            shared_carry: Default::default(),
            n_m1: Default::default(),
            users_m1: Default::default(),
            quotient: Default::default(),
            div_lo: Default::default(),
            div_hi: Default::default(),
            recip_lo: Constant::new(Bits::<16>::from(recip_lo)),
            recip_hi: Constant::new(Bits::<16>::from(recip_hi)),
            recip_shift: Constant::new(Bits::<32>::from(recip_shift)),
            n_max: Constant::new(Bits::<32>::from((P << A) as u64)),
            max: Constant::new(Bits::<32>::from(0xFFFF_FFFF_u64)),
            limit: Constant::new(Bits::<32>::from(abi::WORD_LIMIT)),
            mode_strict: Constant::new(Bits::<2>::from(abi::mode::STRICT as u64)),
            code_users: Constant::new(Bits::<4>::from(abi::status::USERS as u64)),
            code_guaranteed: Constant::new(Bits::<4>::from(abi::status::GUARANTEED as u64)),
            code_capacity: Constant::new(Bits::<4>::from(abi::status::CAPACITY as u64)),
            code_mode: Constant::new(Bits::<4>::from(abi::status::MODE as u64)),
        }
    }
}

impl<const P: usize, const A: usize> Logic for Settings<P, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            cfg_mode,
            cfg_n,
            cfg_fair,
            cfg_guaranteed,
            cfg_last_row,
            seq_last_row_r,
            start_code,
            free_r,
            fair_lo,
            fair_hi,
            free_lo,
            free_hi,
            cap_lo,
            cap_hi,
            shared_lo,
            shared_hi,
            capacity_r,
            shared_r
        );
        // The last row and the check, from the inputs.
        self.n_m1.next = self.n_in.val() - 1;
        self.users_m1.next = self.n_m1.val().get_bits::<16>(0);
        self.div_lo.next = self.users_m1.val() * self.recip_lo.val();
        self.div_hi.next = self.users_m1.val() * self.recip_hi.val();
        self.quotient.next = ((self.div_lo.val() >> 16) + self.div_hi.val()) >> self.recip_shift.val();
        if self.take.val() {
            self.cfg_mode.d.next = self.mode_in.val();
            self.cfg_n.d.next = self.n_in.val();
            self.cfg_last_row.d.next = self.quotient.val().get_bits::<A>(0);
            self.seq_last_row_r.d.next = self.quotient.val().get_bits::<A>(0);
            self.cfg_fair.d.next = self.fair_in.val();
            self.cfg_guaranteed.d.next = self.guaranteed_in.val();
            self.start_code.d.next = 0.into();
            if (self.n_in.val() == 0) | (self.n_in.val() > self.n_max.val()) {
                self.start_code.d.next = self.code_users.val();
            } else if self.guaranteed_in.val() > self.fair_in.val() {
                self.start_code.d.next = self.code_guaranteed.val();
            } else if (self.fair_in.val() == 0) | (self.fair_in.val() >= self.limit.val()) {
                self.start_code.d.next = self.code_capacity.val();
            } else if self.mode_in.val() > self.mode_strict.val() {
                self.start_code.d.next = self.code_mode.val();
            }
        }

        // The products.
        self.free_r.d.next = self.cfg_fair.q.val() - self.cfg_guaranteed.q.val();
        for k in 0..4 {
            self.n16[k].clock.next = self.clock.val();
            self.n16[k].d.next = self.cfg_n.q.val().get_bits::<16>(0);
        }
        self.fair_lo.d.next = self.cfg_fair.q.val().get_bits::<16>(0);
        self.fair_hi.d.next = self.cfg_fair.q.val().get_bits::<16>(16);
        self.free_lo.d.next = self.free_r.q.val().get_bits::<16>(0);
        self.free_hi.d.next = self.free_r.q.val().get_bits::<16>(16);
        self.mult[0].b.next = self.fair_lo.q.val();
        self.mult[1].b.next = self.fair_hi.q.val();
        self.mult[2].b.next = self.free_lo.q.val();
        self.mult[3].b.next = self.free_hi.q.val();
        for k in 0..4 {
            self.mult[k].clock.next = self.clock.val();
            self.mult[k].a.next = self.n16[k].q.val();
        }
        self.cap_lo.d.next = self.mult[0].product.val();
        self.cap_hi.d.next = self.mult[1].product.val();
        self.shared_lo.d.next = self.mult[2].product.val();
        self.shared_hi.d.next = self.mult[3].product.val();
        self.cap_sum.next = (self.cap_hi.q.val() << 16) + self.cap_lo.q.val();
        self.cap_carry.next = (self.cap_hi.q.val().get_bit(15) & self.cap_lo.q.val().get_bit(31))
            | ((self.cap_hi.q.val().get_bit(15) | self.cap_lo.q.val().get_bit(31)) & !self.cap_sum.val().get_bit(31));
        self.capacity_r.d.next = self.cap_sum.val();
        if self.cap_carry.val() | ((self.cap_hi.q.val() >> 16) != 0) {
            self.capacity_r.d.next = self.max.val();
        }
        self.shared_sum.next = (self.shared_hi.q.val() << 16) + self.shared_lo.q.val();
        self.shared_carry.next = (self.shared_hi.q.val().get_bit(15) & self.shared_lo.q.val().get_bit(31))
            | ((self.shared_hi.q.val().get_bit(15) | self.shared_lo.q.val().get_bit(31))
                & !self.shared_sum.val().get_bit(31));
        self.shared_r.d.next = self.shared_sum.val();
        if self.shared_carry.val() | ((self.shared_hi.q.val() >> 16) != 0) {
            self.shared_r.d.next = self.max.val();
        }

        self.mode.next = self.cfg_mode.q.val();
        self.n.next = self.cfg_n.q.val();
        self.fair.next = self.cfg_fair.q.val();
        self.guaranteed.next = self.cfg_guaranteed.q.val();
        self.free.next = self.free_r.q.val();
        self.last_row.next = self.cfg_last_row.q.val();
        self.seq_last_row.next = self.seq_last_row_r.q.val();
        self.code.next = self.start_code.q.val();
        self.capacity.next = self.capacity_r.q.val();
        self.shared.next = self.shared_r.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn tick<const P: usize, const A: usize>(s: &mut Settings<P, A>) {
        s.clock.next = true.into();
        assert!(simulate(s, 100));
        s.clock.next = false.into();
        assert!(simulate(s, 100));
    }

    /// The device ABI's check of a quantum's settings, in its order: users, shares,
    /// the fair share's range, the mode.
    fn check(users: usize, mode: u32, n: u32, f: u32, g: u32) -> u32 {
        if n == 0 || n as usize > users {
            abi::status::USERS
        } else if g > f {
            abi::status::GUARANTEED
        } else if f == 0 || u64::from(f) >= abi::WORD_LIMIT {
            abi::status::CAPACITY
        } else if mode > abi::mode::STRICT {
            abi::status::MODE
        } else {
            0
        }
    }

    /// Settings taken in one cycle and held while the inputs change: the check, the
    /// last row by integer division, and the products in wide arithmetic, saturated,
    /// exactly `LATENCY` cycles later; for 1, 3, 8 and 13 lanes.
    fn against_the_model<const P: usize, const A: usize>(seed: u64) -> [usize; 8] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut s = Settings::<P, A>::default();
        s.connect_all();
        let users = P << A;
        let mut codes = [0usize; 8];
        for _ in 0..400 {
            let n: u32 = match rng.gen_range(0..4) {
                0 => rng.gen_range(0..=2),
                1 => users as u32 + rng.gen_range(0..2),
                _ => rng.gen_range(1..=users as u32),
            };
            let f: u32 = match rng.gen_range(0..4) {
                0 => (abi::WORD_LIMIT as u32).wrapping_sub(rng.gen_range(0..2)),
                1 => rng.gen_range(0..3),
                _ => rng.gen_range(0..1 << 31),
            };
            let g: u32 = if rng.gen_bool(0.1) { f.wrapping_add(1) } else { rng.gen_range(0..=f) };
            let mode: u32 = rng.gen_range(0..4);
            s.take.next = true;
            s.mode_in.next = u64::from(mode).into();
            s.n_in.next = u64::from(n).into();
            s.fair_in.next = u64::from(f).into();
            s.guaranteed_in.next = u64::from(g).into();
            tick(&mut s);
            s.take.next = false;
            for _ in 0..LATENCY {
                s.mode_in.next = u64::from(rng.gen_range(0..4u32)).into();
                s.n_in.next = u64::from(rng.gen::<u32>()).into();
                s.fair_in.next = u64::from(rng.gen::<u32>()).into();
                s.guaranteed_in.next = u64::from(rng.gen::<u32>()).into();
                tick(&mut s);
            }
            let ctx = format!("P {P}, mode {mode}, n {n}, f {f}, g {g}");
            let code = check(users, mode, n, f, g);
            assert_eq!(s.code.val().to_u64(), u64::from(code), "{ctx}");
            codes[code as usize] += 1;
            let taken = (s.mode.val().to_u64(), s.n.val().to_u64(), s.fair.val().to_u64(), s.guaranteed.val().to_u64());
            assert_eq!(taken, (u64::from(mode), u64::from(n), u64::from(f), u64::from(g)), "{ctx}");
            if code != 0 {
                continue;
            }
            assert_eq!(s.free.val().to_u64(), u64::from(f - g), "{ctx}");
            assert_eq!(s.last_row.val().to_u64(), u64::from((n - 1) / P as u32), "{ctx}");
            assert_eq!(s.seq_last_row.val().to_u64(), u64::from((n - 1) / P as u32), "{ctx}");
            let saturated = |x: u64| x.min(u64::from(u32::MAX));
            assert_eq!(s.capacity.val().to_u64(), saturated(u64::from(n) * u64::from(f)), "{ctx}");
            assert_eq!(s.shared.val().to_u64(), saturated(u64::from(n) * u64::from(f - g)), "{ctx}");
        }
        codes
    }

    #[test]
    fn takes_checks_and_multiplies_the_settings_as_the_abi_says() {
        let mut codes = [0usize; 8];
        for c in [
            against_the_model::<1, 6>(1),
            against_the_model::<3, 4>(2),
            against_the_model::<8, 7>(3),
            against_the_model::<13, 12>(4),
        ] {
            for (all, k) in codes.iter_mut().zip(c) {
                *all += k;
            }
        }
        // Every outcome of the check, many times.
        let outcomes = [0, abi::status::USERS, abi::status::GUARANTEED, abi::status::CAPACITY, abi::status::MODE];
        assert!(outcomes.iter().all(|&c| codes[c as usize] > 20), "outcomes by status code: {codes:?}");
    }
}
