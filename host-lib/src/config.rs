//! Pool configuration: users with fair and guaranteed shares, initial credits, and the
//! per-quantum Karma parameters derived from them (prices, free credits, shared slices).

use crate::credits::{parse_fraction, Credits, SCALE};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The guaranteed fraction of the fair share, `g = floor(alpha * f)`, held exactly as
/// a fraction so that `0.29 * 100` is 29 and not 28.
///
/// This follows the paper: alpha is the *guaranteed* fraction (alpha = 1 is max-min
/// up to the fair share, alpha = 0 makes every slice shared). The authors' public C++
/// library uses the opposite convention.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Alpha {
    num: u64,
    den: u64,
}

impl Alpha {
    /// alpha = 0: nothing guaranteed, every slice shared.
    pub const ZERO: Alpha = Alpha { num: 0, den: 1 };
    /// alpha = 1: the whole fair share guaranteed.
    pub const ONE: Alpha = Alpha { num: 1, den: 1 };

    /// Exact `num / den`; an error unless `0 <= num/den <= 1`.
    pub fn new(num: u64, den: u64) -> Result<Self> {
        if den == 0 || num > den {
            return Err(Error::BadAlpha(format!("{num}/{den}")));
        }
        Ok(Alpha { num, den })
    }

    /// From a float, read through its shortest decimal form (`0.29` is exactly 29/100).
    pub fn from_f64(alpha: f64) -> Result<Self> {
        alpha.to_string().parse()
    }

    /// The guaranteed share for fair share `f`: `floor(alpha * f)`, exact.
    pub fn guaranteed(self, fair_share: u64) -> u64 {
        (fair_share as u128 * self.num as u128 / self.den as u128) as u64
    }

    /// The value as a float (display only).
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl FromStr for Alpha {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        let bad = || Error::BadAlpha(text.to_string());
        let (num, den) = parse_fraction(text.trim()).ok_or_else(bad)?;
        if num < 0 || num > den {
            return Err(bad());
        }
        let g = gcd(num as u128, den as u128);
        let num = u64::try_from(num as u128 / g).map_err(|_| bad())?;
        let den = u64::try_from(den as u128 / g).map_err(|_| bad())?;
        Alpha::new(num, den).map_err(|_| bad())
    }
}

impl fmt::Display for Alpha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_f64())
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// One user of a pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserConfig {
    /// A name unique in the pool (used by the CLI and by state files).
    pub name: String,
    /// Fair share `f_u` in slices (at least 1).
    pub fair_share: u64,
    /// Guaranteed share `g_u <= f_u` in slices.
    pub guaranteed: u64,
    /// Credits at the start.
    pub initial_credits: Credits,
}

impl UserConfig {
    /// A user with `guaranteed = floor(alpha * fair_share)`.
    pub fn with_alpha(name: impl Into<String>, fair_share: u64, alpha: Alpha, initial_credits: Credits) -> Self {
        UserConfig { name: name.into(), fair_share, guaranteed: alpha.guaranteed(fair_share), initial_credits }
    }
}

/// The users of a pool, in index order (ties are always broken by the lowest index).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolConfig {
    /// Users in index order.
    pub users: Vec<UserConfig>,
}

impl PoolConfig {
    /// `n` users named `u0 .. u{n-1}` with equal shares (Algorithm 1).
    pub fn equal(n: usize, fair_share: u64, alpha: Alpha, initial_credits: i64) -> Result<Self> {
        let credits = Credits::from_int(initial_credits).ok_or_else(|| {
            Error::PoolTooLarge(format!("initial credits {initial_credits} do not fit the credit range"))
        })?;
        let users = (0..n).map(|i| UserConfig::with_alpha(format!("u{i}"), fair_share, alpha, credits)).collect();
        let config = PoolConfig { users };
        config.validate()?;
        Ok(config)
    }

    /// Checks every rule of the model; the error names the user and the field.
    pub fn validate(&self) -> Result<()> {
        KarmaParams::from_config(self).map(|_| ())
    }

    /// Pool size `C = sum f_u`.
    pub fn capacity(&self) -> u64 {
        self.users.iter().map(|u| u.fair_share).sum()
    }
}

/// What one Karma quantum needs besides demands and credits, derived from a config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KarmaParams {
    /// Fair share per user.
    pub fair_share: Vec<u64>,
    /// Guaranteed share `g_u` per user.
    pub guaranteed: Vec<u64>,
    /// Price of one borrowed slice per user: `C / (n f_u)` rounded up (1 with equal shares).
    pub price: Vec<Credits>,
    /// Free credits every user gains per quantum: `S / n` rounded down (`f - g` with equal shares).
    pub free: Credits,
    /// Shared slices `S = sum (f_u - g_u)`.
    pub shared: u64,
    /// Pool size `C = sum f_u`.
    pub capacity: u64,
}

impl KarmaParams {
    /// Validates `config` and derives prices and free credits.
    pub fn from_config(config: &PoolConfig) -> Result<Self> {
        let users = &config.users;
        if users.is_empty() {
            return Err(Error::NoUsers);
        }
        let mut names = std::collections::HashSet::new();
        for (i, u) in users.iter().enumerate() {
            if u.fair_share == 0 {
                return Err(Error::ZeroFairShare { user: i, name: u.name.clone() });
            }
            if u.guaranteed > u.fair_share {
                return Err(Error::GuaranteedAboveFair {
                    user: i,
                    name: u.name.clone(),
                    guaranteed: u.guaranteed,
                    fair_share: u.fair_share,
                });
            }
            if !names.insert(u.name.as_str()) {
                return Err(Error::DuplicateUser(u.name.clone()));
            }
        }
        let n = users.len() as u128;
        let capacity: u128 = users.iter().map(|u| u.fair_share as u128).sum();
        let shared: u128 = users.iter().map(|u| (u.fair_share - u.guaranteed) as u128).sum();
        if capacity > i64::MAX as u128 / SCALE as u128 {
            return Err(Error::PoolTooLarge(format!("sum of fair shares {capacity} is above {}", i64::MAX / SCALE)));
        }
        let price = users
            .iter()
            .map(|u| {
                let den = n * u.fair_share as u128;
                let raw = (capacity * SCALE as u128).div_ceil(den);
                i64::try_from(raw)
                    .map(Credits::from_raw)
                    .map_err(|_| Error::PoolTooLarge("a borrowing price does not fit".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let free = Credits::from_raw((shared * SCALE as u128 / n) as i64);
        Ok(KarmaParams {
            fair_share: users.iter().map(|u| u.fair_share).collect(),
            guaranteed: users.iter().map(|u| u.guaranteed).collect(),
            price,
            free,
            shared: shared as u64,
            capacity: capacity as u64,
        })
    }

    /// Number of users.
    pub fn len(&self) -> usize {
        self.guaranteed.len()
    }

    /// True when the pool has no users (never for a validated config).
    pub fn is_empty(&self) -> bool {
        self.guaranteed.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alpha_is_exact() {
        assert_eq!("0.29".parse::<Alpha>().unwrap().guaranteed(100), 29);
        assert_eq!(Alpha::from_f64(0.29).unwrap().guaranteed(100), 29);
        assert_eq!("1".parse::<Alpha>().unwrap().guaranteed(7), 7);
        assert_eq!("0.5".parse::<Alpha>().unwrap().guaranteed(5), 2);
        // Too many digits to hold exactly: an error, never a silently different alpha.
        assert!("0.5000000000000000000000001".parse::<Alpha>().is_err());
        for bad in ["1.01", "-0.1", "x", "", "nan"] {
            assert!(bad.parse::<Alpha>().is_err(), "{bad}");
        }
        assert!(Alpha::from_f64(f64::NAN).is_err());
    }

    #[test]
    fn equal_shares_have_unit_prices() {
        let p = KarmaParams::from_config(&PoolConfig::equal(3, 2, Alpha::new(1, 2).unwrap(), 6).unwrap()).unwrap();
        assert_eq!(p.price, vec![Credits::ONE; 3]);
        assert_eq!(p.free, Credits::ONE);
        assert_eq!((p.shared, p.capacity), (3, 6));
    }

    #[test]
    fn weighted_prices_round_up_and_free_rounds_down() {
        let c = Credits::ZERO;
        let cfg = PoolConfig {
            users: vec![
                UserConfig { name: "a".into(), fair_share: 1, guaranteed: 0, initial_credits: c },
                UserConfig { name: "b".into(), fair_share: 2, guaranteed: 0, initial_credits: c },
            ],
        };
        let p = KarmaParams::from_config(&cfg).unwrap();
        // C/(n f) = 3/2 and 3/4: exact. S/n = 3/2: exact.
        assert_eq!(p.price, vec![Credits::from_raw(3 * SCALE / 2), Credits::from_raw(3 * SCALE / 4)]);
        let cfg3 = PoolConfig {
            users: (0..3)
                .map(|i| UserConfig {
                    name: format!("{i}"),
                    fair_share: 1 + (i == 0) as u64,
                    guaranteed: 0,
                    initial_credits: c,
                })
                .collect(),
        };
        let p3 = KarmaParams::from_config(&cfg3).unwrap();
        // C = 4, n = 3: price of user 1 = 4/3 -> rounded up; free = 4/3 -> rounded down.
        assert_eq!(p3.price[1].raw(), (4 * SCALE + 2) / 3);
        assert_eq!(p3.free.raw(), 4 * SCALE / 3);
    }

    #[test]
    fn invalid_configs_name_the_user() {
        let c = Credits::ZERO;
        let mk = |f, g| PoolConfig {
            users: vec![UserConfig { name: "x".into(), fair_share: f, guaranteed: g, initial_credits: c }],
        };
        assert!(matches!(mk(0, 0).validate(), Err(Error::ZeroFairShare { user: 0, .. })));
        assert!(matches!(mk(2, 3).validate(), Err(Error::GuaranteedAboveFair { guaranteed: 3, fair_share: 2, .. })));
        assert_eq!(PoolConfig { users: vec![] }.validate(), Err(Error::NoUsers));
        let mut dup = mk(1, 0);
        dup.users.push(dup.users[0].clone());
        assert_eq!(dup.validate(), Err(Error::DuplicateUser("x".into())));
        assert!(matches!(mk(u64::MAX, 0).validate(), Err(Error::PoolTooLarge(_))));
    }
}
