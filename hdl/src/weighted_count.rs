//! What a weighted lane would add (Algorithm 2, not in the engine): one probe's count of
//! a weighted borrower's keys, which step by the borrower's price instead of by one, so
//! the count is a quotient. The block exists to be measured (`fairshare hdl verilog
//! --top weighted-count`, then `hdl/synth.sh ecp5 weighted-count:...`), and it is checked
//! here against the host library's rule.
//!
//! Keys `c, c - p, c - 2p, ...` (`run` of them, price `p >= 1`); a probe `t` counts the
//! keys above it, as the host library's Karma does for a borrower (raw fixed-point
//! units): `0` if `c <= t`, else `min(run, floor((c - t - 1) / p) + 1)`.
//!
//! The division is a multiplication by a reciprocal stored with the user,
//! `r = floor(2^32 / p)` (for `p >= 2`), and one exact correction: with `x = c - t - 1 <
//! 2^32`, `q0 = floor(x r / 2^32)` is `floor(x / p)` or one less (since `x r / 2^32 >
//! x / p - x / 2^32 > x / p - 1`), so `q = q0 + (x - q0 p >= p)`. A price of one (a user
//! with the mean share) has `q = x`. The two products are built from 16 x 16 partial
//! products (RustHDL's one multiplier, an ECP5 MULT18X18D each): four for `x r`, three
//! for the low half of `q0 p`. Every stage is registered, its carry chains side by side
//! (none feeds another in the same cycle): [`WEIGHTED_LATENCY`] cycles from the inputs
//! to the count.

use rust_hdl::prelude::*;

/// Cycles from `key`, `probe`, `price`, `reciprocal` and `run` to `count`.
pub const WEIGHTED_LATENCY: usize = 10;

/// One probe's count of a weighted borrower's keys above the probe.
#[derive(LogicBlock, Default)]
pub struct WeightedCount {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The borrower's first key `c` (raw units).
    pub key: Signal<In, Bits<32>>,
    /// The probe `t`.
    pub probe: Signal<In, Bits<32>>,
    /// The price `p` (at least 1).
    pub price: Signal<In, Bits<32>>,
    /// `floor(2^32 / p)` for `p >= 2` (unused when `p = 1`).
    pub reciprocal: Signal<In, Bits<32>>,
    /// Number of keys.
    pub run: Signal<In, Bits<32>>,
    /// Keys above the probe, [`WEIGHTED_LATENCY`] cycles after the inputs.
    pub count: Signal<Out, Bits<32>>,
    // Stage 1: x = c - t - 1 and c > t; the operands move along with it.
    x1: DFF<Bits<32>>,
    above1: DFF<Bit>,
    price1: DFF<Bits<32>>,
    recip1: DFF<Bits<32>>,
    run1: DFF<Bits<32>>,
    // Stage 2: the four partial products of x r.
    xr_ll: DFF<Bits<32>>,
    xr_lh: DFF<Bits<32>>,
    xr_hl: DFF<Bits<32>>,
    xr_hh: DFF<Bits<32>>,
    // Stage 3: two partial sums of x r.
    xr_lo: DFF<Bits<64>>,
    xr_hi: DFF<Bits<64>>,
    // Stage 4: q0, the high half of x r (or x when p = 1).
    q0: DFF<Bits<32>>,
    // Stage 5: the three partial products of q0 p that reach its low half.
    qp_ll: DFF<Bits<32>>,
    qp_lh: DFF<Bits<16>>,
    qp_hl: DFF<Bits<16>>,
    // Stage 6: the middle sum; stage 7: q0 p (low half, exact since q0 p <= x).
    qp_mid: DFF<Bits<16>>,
    qp_ll7: DFF<Bits<32>>,
    qp: DFF<Bits<32>>,
    // Stage 8: the remainder x - q0 p; stage 9: the quotient plus one; stage 10: the count.
    rem: DFF<Bits<32>>,
    quotient_plus_one: DFF<Bits<32>>,
    count_r: DFF<Bits<32>>,
    // x, c > t, p, run and q0 along the stages that need them.
    x_d: [DFF<Bits<32>>; 7],
    above_d: [DFF<Bit>; 8],
    price_d: [DFF<Bits<32>>; 7],
    run_d: [DFF<Bits<32>>; 8],
    q0_d: [DFF<Bits<32>>; 4],
    unit_price: DFF<Bit>,
    xr: Signal<Local, Bits<64>>,
    qp_lh_full: Signal<Local, Bits<32>>,
    qp_hl_full: Signal<Local, Bits<32>>,
    q0_plus_one: Signal<Local, Bits<32>>,
    q0_plus_two: Signal<Local, Bits<32>>,
}

impl Logic for WeightedCount {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            x1,
            above1,
            price1,
            recip1,
            run1,
            xr_ll,
            xr_lh,
            xr_hl,
            xr_hh,
            xr_lo,
            xr_hi,
            q0,
            qp_ll,
            qp_lh,
            qp_hl,
            qp_mid,
            qp_ll7,
            qp,
            rem,
            quotient_plus_one,
            count_r,
            unit_price
        );
        for i in 0..7 {
            self.x_d[i].clock.next = self.clock.val();
            self.price_d[i].clock.next = self.clock.val();
        }
        for i in 0..8 {
            self.above_d[i].clock.next = self.clock.val();
            self.run_d[i].clock.next = self.clock.val();
        }
        for i in 0..4 {
            self.q0_d[i].clock.next = self.clock.val();
        }
        // Stage 1.
        // key - probe - 1 is key + !probe (mod 2^32): one carry chain.
        self.x1.d.next = self.key.val() + !self.probe.val();
        self.above1.d.next = self.key.val() > self.probe.val();
        self.price1.d.next = self.price.val();
        self.recip1.d.next = self.reciprocal.val();
        self.run1.d.next = self.run.val();
        // Stage 2: x r as four 16 x 16 products.
        self.xr_ll.d.next = self.x1.q.val().get_bits::<16>(0) * self.recip1.q.val().get_bits::<16>(0);
        self.xr_lh.d.next = self.x1.q.val().get_bits::<16>(0) * self.recip1.q.val().get_bits::<16>(16);
        self.xr_hl.d.next = self.x1.q.val().get_bits::<16>(16) * self.recip1.q.val().get_bits::<16>(0);
        self.xr_hh.d.next = self.x1.q.val().get_bits::<16>(16) * self.recip1.q.val().get_bits::<16>(16);
        self.x_d[0].d.next = self.x1.q.val();
        self.above_d[0].d.next = self.above1.q.val();
        self.price_d[0].d.next = self.price1.q.val();
        self.run_d[0].d.next = self.run1.q.val();
        for i in 1..7 {
            self.x_d[i].d.next = self.x_d[i - 1].q.val();
            self.price_d[i].d.next = self.price_d[i - 1].q.val();
        }
        for i in 1..8 {
            self.above_d[i].d.next = self.above_d[i - 1].q.val();
            self.run_d[i].d.next = self.run_d[i - 1].q.val();
        }
        // Stage 3: x r = (ll + lh 2^16) + (hl 2^16 + hh 2^32).
        self.xr_lo.d.next = bit_cast::<64, 32>(self.xr_ll.q.val()) + (bit_cast::<64, 32>(self.xr_lh.q.val()) << 16);
        self.xr_hi.d.next =
            (bit_cast::<64, 32>(self.xr_hl.q.val()) << 16) + (bit_cast::<64, 32>(self.xr_hh.q.val()) << 32);
        self.unit_price.d.next = self.price_d[0].q.val() == 1;
        // Stage 4: q0 = floor(x r / 2^32); x itself for a price of one.
        self.xr.next = self.xr_lo.q.val() + self.xr_hi.q.val();
        self.q0.d.next = self.xr.val().get_bits::<32>(32);
        if self.unit_price.q.val() {
            self.q0.d.next = self.x_d[1].q.val();
        }
        // Stage 5: the partial products of q0 p that reach its low 32 bits.
        self.qp_ll.d.next = self.q0.q.val().get_bits::<16>(0) * self.price_d[2].q.val().get_bits::<16>(0);
        self.qp_lh_full.next = self.q0.q.val().get_bits::<16>(0) * self.price_d[2].q.val().get_bits::<16>(16);
        self.qp_hl_full.next = self.q0.q.val().get_bits::<16>(16) * self.price_d[2].q.val().get_bits::<16>(0);
        self.qp_lh.d.next = self.qp_lh_full.val().get_bits::<16>(0);
        self.qp_hl.d.next = self.qp_hl_full.val().get_bits::<16>(0);
        self.q0_d[0].d.next = self.q0.q.val();
        for i in 1..4 {
            self.q0_d[i].d.next = self.q0_d[i - 1].q.val();
        }
        // Stage 6: the middle sum (mod 2^16); stage 7: q0 p mod 2^32, which is q0 p.
        self.qp_mid.d.next = self.qp_lh.q.val() + self.qp_hl.q.val();
        self.qp_ll7.d.next = self.qp_ll.q.val();
        self.qp.d.next = self.qp_ll7.q.val() + (bit_cast::<32, 16>(self.qp_mid.q.val()) << 16);
        // Stage 8: the remainder, below 2p.
        self.rem.d.next = self.x_d[5].q.val() - self.qp.q.val();
        // Stage 9: the exact quotient plus one (keys from c down to c - q p), its two
        // candidates and the compare side by side.
        self.q0_plus_one.next = self.q0_d[3].q.val() + 1;
        self.q0_plus_two.next = self.q0_d[3].q.val() + 2;
        self.quotient_plus_one.d.next = self.q0_plus_one.val();
        if self.rem.q.val() >= self.price_d[6].q.val() {
            self.quotient_plus_one.d.next = self.q0_plus_two.val();
        }
        // Stage 10: min(run, q + 1) keys above the probe, none if c <= t.
        self.count_r.d.next = self.run_d[7].q.val();
        if self.quotient_plus_one.q.val() < self.run_d[7].q.val() {
            self.count_r.d.next = self.quotient_plus_one.q.val();
        }
        if !self.above_d[7].q.val() {
            self.count_r.d.next = 0.into();
        }
        self.count.next = self.count_r.q.val();
    }
}

/// The reciprocal a weighted user stores with its price: `floor(2^32 / p)` for `p >= 2`,
/// `0` for `p = 1` (whose quotient needs none).
pub fn reciprocal(price: u32) -> u32 {
    if price <= 1 {
        0
    } else {
        ((1u64 << 32) / price as u64) as u32
    }
}

/// The host library's count, for the tests: keys above `probe` of `run` keys stepping
/// down by `price` from `key`.
pub fn expected_count(key: u32, probe: u32, price: u32, run: u32) -> u32 {
    if key <= probe {
        0
    } else {
        (((key - probe - 1) / price) + 1).min(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Edge cases (a price of one and of 2^31 and more, keys at and next to the probe,
    /// the largest key, quotients one off a multiple of the price), then random ones
    /// over wide and narrow ranges; one input per cycle, every count checked
    /// [`WEIGHTED_LATENCY`] cycles later against [`expected_count`].
    #[test]
    fn weighted_count_matches_the_host_rule_at_full_rate() {
        let mut cases: Vec<(u32, u32, u32, u32)> = vec![
            (10, 3, 1, 100),
            (10, 3, 1, 2),
            (10, 10, 1, 5),
            (10, 11, 3, 5),
            (11, 10, 7, 5),
            (u32::MAX, 0, 1, u32::MAX),
            (u32::MAX, 0, 2, u32::MAX),
            (u32::MAX, 0, 3, 7),
            (u32::MAX, 0, u32::MAX, 9),
            (u32::MAX, 1, 1 << 31, 9),
            (1 << 31, 0, (1 << 31) - 1, 9),
            (100, 0, 10, 1000),
            (101, 0, 10, 1000),
            (99, 0, 10, 1000),
            (65_536 * 7 + 1, 1, 65_536, 1000),
            (0, 0, 5, 5),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(16);
        for i in 0..3000 {
            let wide = i % 2 == 0;
            let key: u32 = if wide { rng.gen() } else { rng.gen_range(0..1 << 20) };
            let probe: u32 =
                if rng.gen_bool(0.1) { key.wrapping_add(rng.gen_range(0..3)) } else { rng.gen_range(0..=key) };
            let price: u32 = match rng.gen_range(0..4) {
                0 => 1,
                1 => rng.gen_range(2..1 << 16),
                2 => rng.gen_range(2..=u32::MAX),
                _ => 1 << rng.gen_range(1..32),
            };
            let run: u32 = if rng.gen_bool(0.5) { rng.gen() } else { rng.gen_range(0..64) };
            cases.push((key, probe, price, run));
        }
        let mut uut = WeightedCount::default();
        uut.connect_all();
        let mut checked = 0;
        for cycle in 0..cases.len() + WEIGHTED_LATENCY - 1 {
            if let Some(&(key, probe, price, run)) = cases.get(cycle) {
                uut.key.next = (key as u64).into();
                uut.probe.next = (probe as u64).into();
                uut.price.next = (price as u64).into();
                uut.reciprocal.next = (reciprocal(price) as u64).into();
                uut.run.next = (run as u64).into();
            }
            uut.clock.next = true.into();
            assert!(simulate(&mut uut, 100));
            uut.clock.next = false.into();
            assert!(simulate(&mut uut, 100));
            if cycle + 1 >= WEIGHTED_LATENCY {
                let (key, probe, price, run) = cases[cycle + 1 - WEIGHTED_LATENCY];
                let want = expected_count(key, probe, price, run);
                assert_eq!(uut.count.val().to_u64(), want as u64, "key {key} probe {probe} price {price} run {run}");
                checked += 1;
            }
        }
        assert_eq!(checked, cases.len());
    }

    /// The reciprocal's claim: `floor(x r / 2^32)` is the quotient or one less, for
    /// every price and the numerators nearest the edges.
    #[test]
    fn reciprocal_is_at_most_one_short() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        for _ in 0..200_000 {
            let p: u32 = if rng.gen_bool(0.5) { rng.gen_range(2..1 << 12) } else { rng.gen_range(2..=u32::MAX) };
            let x: u32 = match rng.gen_range(0..3) {
                0 => u32::MAX - 1 - rng.gen_range(0..1000),
                1 => (rng.gen_range(0..=u32::MAX / p)).saturating_mul(p).saturating_sub(rng.gen_range(0..2)),
                _ => rng.gen(),
            };
            let q0 = ((x as u64 * reciprocal(p) as u64) >> 32) as u32;
            let q = x / p;
            assert!(q0 == q || q0 + 1 == q, "x {x} p {p}: q0 {q0}, q {q}");
        }
    }
}
