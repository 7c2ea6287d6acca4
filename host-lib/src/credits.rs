//! The one exact representation of Karma credits.
//!
//! Credits are a signed 64-bit fixed-point number with [`FRAC_BITS`] = 16 fractional
//! bits: the raw integer `r` stands for `r / 65536` credits. The integer range is
//! therefore about ±1.4 × 10^14 credits, which holds the paper's 900,000 initial
//! credits (and the reference library's 10^12) with room for centuries of quanta.
//!
//! * Equal fair shares (Algorithm 1): every borrowing price is exactly 1 and the free
//!   credits per quantum are whole, so credits stay exact integers (fraction bits 0).
//! * Weighted fair shares (Algorithm 2): the price of a borrowed slice
//!   `p_u = C / (n f_u)` is rounded **up** to the next multiple of 2^-16 and the free
//!   credits per quantum `S / n` are rounded **down**, so rounding never creates
//!   credit. When both are dyadic rationals with denominator at most 2^16 (as in
//!   `vectors/karma_random.json`) the arithmetic is exact.
//!
//! Every operation that could leave the range is checked; callers turn `None` into
//! [`crate::Error::CreditOverflow`] and keep their previous state.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Number of fractional bits of [`Credits`].
pub const FRAC_BITS: u32 = 16;
/// `1 << FRAC_BITS`: the raw value of one whole credit.
pub const SCALE: i64 = 1 << FRAC_BITS;

/// A credit balance or amount: fixed point, 16 fractional bits, 64-bit signed.
///
/// In JSON (state files) a balance is written as its exact decimal string, e.g.
/// `"4.625"`, so files do not depend on the number of fractional bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Credits(i64);

impl Credits {
    /// No credits.
    pub const ZERO: Credits = Credits(0);
    /// One whole credit (what a used donated slice earns).
    pub const ONE: Credits = Credits(SCALE);
    /// The largest representable balance.
    pub const MAX: Credits = Credits(i64::MAX);

    /// From the raw fixed-point integer (units of 2^-16 credit).
    pub const fn from_raw(raw: i64) -> Self {
        Credits(raw)
    }

    /// The raw fixed-point integer (units of 2^-16 credit).
    pub const fn raw(self) -> i64 {
        self.0
    }

    /// Whole credits; `None` if outside the representable range.
    pub fn from_int(whole: i64) -> Option<Self> {
        whole.checked_mul(SCALE).map(Credits)
    }

    /// True when the value has no fractional part.
    pub fn is_integer(self) -> bool {
        self.0 & (SCALE - 1) == 0
    }

    /// The largest whole number of credits not above the value.
    pub fn floor_int(self) -> i64 {
        self.0 >> FRAC_BITS
    }

    /// Checked addition.
    pub fn checked_add(self, other: Credits) -> Option<Credits> {
        self.0.checked_add(other.0).map(Credits)
    }

    /// Checked subtraction.
    pub fn checked_sub(self, other: Credits) -> Option<Credits> {
        self.0.checked_sub(other.0).map(Credits)
    }

    /// `self * k` for a whole number of slices, checked.
    pub fn checked_mul_int(self, k: u64) -> Option<Credits> {
        let k = i64::try_from(k).ok()?;
        self.0.checked_mul(k).map(Credits)
    }

    /// True when the value equals the exact fraction `num / den` (`den > 0`).
    pub fn equals_fraction(self, num: i128, den: i128) -> bool {
        den > 0 && num.checked_mul(SCALE as i128) == (self.0 as i128).checked_mul(den)
    }

    /// The nearest `f64` (for metrics and display only, never for allocation).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / SCALE as f64
    }
}

/// Exact decimal form: every value has a finite decimal expansion (at most 16
/// fractional digits, since 10^16 / 2^16 = 5^16). Integers print without a point.
impl fmt::Display for Credits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = self.0 as i128;
        let sign = if raw < 0 { "-" } else { "" };
        let abs = raw.unsigned_abs();
        let whole = abs >> FRAC_BITS;
        let frac = abs & (SCALE as u128 - 1);
        if frac == 0 {
            return write!(f, "{sign}{whole}");
        }
        let digits = frac * 5u128.pow(FRAC_BITS); // frac / 2^16 = digits / 10^16
        let s = format!("{digits:016}");
        write!(f, "{sign}{whole}.{}", s.trim_end_matches('0'))
    }
}

/// Error from parsing a credit value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a credit value: {reason}")]
pub struct ParseCreditsError {
    /// The text that did not parse.
    pub text: String,
    /// Why.
    pub reason: &'static str,
}

/// Parses `12`, `-3.25` or `37/8`; the value must be exactly representable.
impl FromStr for Credits {
    type Err = ParseCreditsError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseCreditsError { text: text.to_string(), reason };
        let (num, den) =
            parse_fraction(text.trim()).ok_or_else(|| err("expected an integer, a decimal or a fraction a/b"))?;
        let scaled = num.checked_mul(SCALE as i128).ok_or_else(|| err("out of range"))?;
        if scaled % den != 0 {
            return Err(err("not a multiple of 2^-16 (not exactly representable)"));
        }
        i64::try_from(scaled / den).map(Credits).map_err(|_| err("out of range"))
    }
}

impl Serialize for Credits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Credits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Text(String),
            Whole(i64),
        }
        match Repr::deserialize(d)? {
            Repr::Text(t) => t.parse().map_err(serde::de::Error::custom),
            Repr::Whole(w) => {
                Credits::from_int(w).ok_or_else(|| serde::de::Error::custom(format!("{w} credits are out of range")))
            }
        }
    }
}

/// Parses an exact rational `num/den` (den > 0) from `a`, `a.b` or `a/b`.
pub fn parse_fraction(text: &str) -> Option<(i128, i128)> {
    if let Some((a, b)) = text.split_once('/') {
        let num: i128 = a.trim().parse().ok()?;
        let den: i128 = b.trim().parse().ok()?;
        return (den > 0).then_some((num, den));
    }
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int_part, frac_part) = body.split_once('.').unwrap_or((body, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.chars().chain(frac_part.chars()).all(|c| c.is_ascii_digit()) || frac_part.len() > 30 {
        return None;
    }
    let den = 10i128.checked_pow(frac_part.len() as u32)?;
    let digits = format!("{int_part}{frac_part}");
    let num: i128 = if digits.is_empty() { 0 } else { digits.parse().ok()? };
    Some((if neg { -num } else { num }, den))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_exact_and_round_trips() {
        for (text, raw) in
            [("0", 0), ("5", 5 * SCALE), ("-3", -3 * SCALE), ("4.625", 4 * SCALE + SCALE * 5 / 8), ("-0.5", -SCALE / 2)]
        {
            let c = Credits::from_raw(raw);
            assert_eq!(c.to_string(), text);
            assert_eq!(text.parse::<Credits>().unwrap(), c);
        }
        let tiny = Credits::from_raw(1);
        assert_eq!(tiny.to_string(), "0.0000152587890625");
        assert_eq!(tiny.to_string().parse::<Credits>().unwrap(), tiny);
        assert_eq!(Credits::MAX.to_string().parse::<Credits>().unwrap(), Credits::MAX);
    }

    #[test]
    fn parses_fractions_and_rejects_inexact() {
        assert_eq!("37/8".parse::<Credits>().unwrap().raw(), 37 * SCALE / 8);
        assert!("1/3".parse::<Credits>().is_err());
        assert!("0.1".parse::<Credits>().is_err());
        assert!("abc".parse::<Credits>().is_err());
        assert!("1/0".parse::<Credits>().is_err());
        assert!("1e9".parse::<Credits>().is_err());
        assert!("999999999999999999".parse::<Credits>().is_err());
    }

    #[test]
    fn fraction_comparison_and_overflow() {
        let c = Credits::from_int(7).unwrap();
        assert!(c.equals_fraction(14, 2));
        assert!(!c.equals_fraction(15, 2));
        assert!(Credits::from_int(i64::MAX / SCALE + 1).is_none());
        assert!(Credits::MAX.checked_add(Credits::ONE).is_none());
        assert_eq!(Credits::from_raw(-1).floor_int(), -1);
    }
}
