//! The one admission rule: whether a quantum fits a device, and if not, the status code
//! the device answers. The RustHDL engine implements exactly these checks in hardware
//! (in this order: users, guaranteed share, fair share, mode, then credits, demands,
//! pool size); its software model and the emulator call [`admit`]; the host calls it
//! before it sends a quantum, so that a quantum the device would refuse runs on
//! software instead, with the reason named.

use crate::registers::{mode, status};

/// Every demand, share, balance and the pool size a device computes with is below this
/// (2^31): a 32-bit word with one bit of headroom for the data path's sums.
pub const WORD_LIMIT: u64 = 1 << 31;

/// The largest value of a device word: 2^31 - 1.
pub const WORD_MAX: u64 = WORD_LIMIT - 1;

/// What a device offers, as far as admission is concerned (its `MAX_USERS` and
/// `CAPS.modes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most users per quantum.
    pub max_users: usize,
    /// Supported modes, bit `m` for mode `m` (`CAPS.modes`).
    pub modes: u32,
}

/// Why a device does not take a quantum: the status code it answers, the user to
/// blame if one is, and the value that does not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The code of [`status`] the device answers.
    pub code: u32,
    /// The index of the user whose value does not fit, where one is to blame.
    pub user: Option<usize>,
    /// What does not fit, naming the value (after the user, if there is one:
    /// "has 5 credits, ...").
    pub reason: String,
}

impl Refusal {
    /// The refusal with the user called by `name` (e.g. its name in the pool) instead
    /// of its index.
    pub fn naming(&self, name: impl Fn(usize) -> Option<String>) -> String {
        let who = match self.user {
            Some(u) => format!("user {} ", name(u).unwrap_or_else(|| u.to_string())),
            None => String::new(),
        };
        format!("{who}{} (status code {}: {})", self.reason, self.code, status::describe(self.code))
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.naming(|_| None))
    }
}

fn refuse(code: u32, reason: String) -> Result<(), Refusal> {
    Err(Refusal { code, user: None, reason })
}

fn refuse_user(code: u32, user: usize, reason: String) -> Result<(), Refusal> {
    Err(Refusal { code, user: Some(user), reason })
}

/// The checks that depend on the configuration only: `users` users, mode word
/// `mode_word`, fair share `fair` and guaranteed share `guaranteed` of every user.
pub fn admit_config(limits: &Limits, mode_word: u32, users: usize, fair: u64, guaranteed: u64) -> Result<(), Refusal> {
    if users == 0 || users > limits.max_users {
        return refuse(status::USERS, format!("{users} users; the device holds 1 to {}", limits.max_users));
    }
    if guaranteed > fair {
        return refuse(status::GUARANTEED, format!("guaranteed share {guaranteed} is above the fair share {fair}"));
    }
    if fair == 0 || fair >= WORD_LIMIT {
        return refuse(status::CAPACITY, format!("fair share {fair}; a device takes 1 to {WORD_MAX}"));
    }
    if mode_word >= 32 || limits.modes >> mode_word & 1 == 0 {
        return refuse(status::MODE, format!("mode {mode_word} is not one the device computes"));
    }
    Ok(())
}

/// Whether a device of `limits` takes one quantum: the configuration as in
/// [`admit_config`], then each user's balance before the quantum (`credits`, Karma
/// only: it and what it may earn this quantum must stay below [`WORD_LIMIT`]), each
/// demand, and the pool size (`users x fair`, except in strict partitioning, which
/// never adds shares up). `credits` and `demand` have one entry per user.
pub fn admit<T: Copy + Into<u64>>(
    limits: &Limits,
    mode_word: u32,
    fair: u64,
    guaranteed: u64,
    credits: &[T],
    demand: &[T],
) -> Result<(), Refusal> {
    let n = demand.len();
    admit_config(limits, mode_word, n, fair, guaranteed)?;
    if mode_word == mode::KARMA {
        if credits.len() != n {
            return refuse(status::USERS, format!("{} balances for {n} users", credits.len()));
        }
        for (u, (&c, &d)) in credits.iter().zip(demand).enumerate() {
            let (c, d): (u64, u64) = (c.into(), d.into());
            // The balance after the free credits, and after the most a donor can earn.
            let with_free = c + (fair - guaranteed);
            let earned = if d < guaranteed { with_free + (guaranteed - d) } else { with_free };
            if c >= WORD_LIMIT || earned >= WORD_LIMIT {
                return refuse_user(
                    status::CREDIT,
                    u,
                    format!("has {c} credits, which could reach {earned}; device balances stay below 2^31"),
                );
            }
        }
    }
    if let Some((u, d)) = demand.iter().map(|&d| d.into()).enumerate().find(|&(_, d)| d >= WORD_LIMIT) {
        return refuse_user(status::DEMAND, u, format!("demands {d} slices; a device takes at most {WORD_MAX}"));
    }
    if mode_word != mode::STRICT && n as u64 * fair >= WORD_LIMIT {
        return refuse(
            status::CAPACITY,
            format!("a pool of {n} x {fair} = {} slices; a device sums at most {WORD_MAX}", n as u64 * fair),
        );
    }
    Ok(())
}

/// [`admit`]'s verdict, in one branch-free pass that also converts the demands into
/// the words sent to the device (a host checks every quantum before it sends it): true
/// exactly when [`admit`] accepts, and then `words` holds `demand` as device words (its
/// length set to the demand's). When it refuses, [`admit`] says why.
pub fn admits(
    limits: &Limits,
    mode_word: u32,
    fair: u64,
    guaranteed: u64,
    credits: &[u32],
    demand: &[u64],
    words: &mut Vec<u32>,
) -> bool {
    let n = demand.len();
    words.resize(n, 0);
    if admit_config(limits, mode_word, n, fair, guaranteed).is_err() {
        return false;
    }
    if mode_word != mode::STRICT && n as u64 * fair >= WORD_LIMIT {
        return false;
    }
    // Every value below 2^31 exactly when their OR is.
    let mut high = 0u64;
    if mode_word == mode::KARMA {
        if credits.len() != n {
            return false;
        }
        // The most a balance can reach this quantum, c + free + max(g - d, 0), in u32
        // lanes: the shares are below 2^31 (the configuration check), so free +
        // max(g - d, 0) <= f is too, and the sum cannot wrap while c is below 2^31 (c
        // itself joins the OR). The word d as u32 is d itself unless d is refused anyway.
        let (free, g) = ((fair - guaranteed) as u32, guaranteed as i32);
        let mut reach = 0u32;
        for ((w, &c), &d) in words.iter_mut().zip(credits).zip(demand) {
            *w = d as u32;
            high |= d;
            let lent = g.wrapping_sub(*w as i32);
            reach |= c | c.wrapping_add(free).wrapping_add((lent & !(lent >> 31)) as u32);
        }
        high |= reach as u64;
    } else {
        for (w, &d) in words.iter_mut().zip(demand) {
            *w = d as u32;
            high |= d;
        }
    }
    high < WORD_LIMIT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registers::ALL_MODES;

    const DEV: Limits = Limits { max_users: 8, modes: ALL_MODES };

    fn code(r: Result<(), Refusal>) -> u32 {
        r.err().map_or(status::NONE, |r| r.code)
    }

    #[test]
    fn a_refusal_names_its_user_by_index_as_data() {
        let r = admit::<u64>(&DEV, mode::KARMA, 2, 1, &[0, 0, 0], &[1, WORD_LIMIT, 1]).unwrap_err();
        assert_eq!((r.code, r.user), (status::DEMAND, Some(1)));
        assert!(r.to_string().starts_with("user 1 demands 2147483648 slices"), "{r}");
        let named = r.naming(|u| Some(format!("`u{u}`")));
        assert!(named.starts_with("user `u1` demands"), "{named}");
        let r = admit::<u32>(&DEV, mode::KARMA, 2, 1, &[0; 9], &[0; 9]).unwrap_err();
        assert_eq!(r.user, None, "not one user's fault: {r}");
    }

    #[test]
    fn configuration_checks_come_first_in_the_engines_order() {
        assert_eq!(code(admit::<u32>(&DEV, mode::KARMA, 2, 1, &[], &[])), status::USERS);
        assert_eq!(code(admit::<u32>(&DEV, mode::KARMA, 2, 1, &[0; 9], &[0; 9])), status::USERS);
        // Users before the guaranteed share, the guaranteed share before the fair share.
        assert_eq!(code(admit::<u32>(&DEV, 3, 0, 1, &[0], &[0])), status::GUARANTEED);
        assert_eq!(code(admit::<u32>(&DEV, 3, 0, 0, &[0], &[0])), status::CAPACITY);
        assert_eq!(code(admit::<u64>(&DEV, mode::KARMA, WORD_LIMIT, 0, &[0], &[0])), status::CAPACITY);
        assert_eq!(code(admit::<u32>(&DEV, 3, 2, 1, &[0], &[0])), status::MODE);
        let karma_only = Limits { max_users: 8, modes: 1 };
        assert_eq!(code(admit::<u32>(&karma_only, mode::MAXMIN, 2, 1, &[0], &[0])), status::MODE);
        assert_eq!(code(admit::<u32>(&DEV, mode::KARMA, 2, 1, &[5, 5], &[1, 9])), status::NONE);
    }

    #[test]
    fn credits_demands_and_pool_size_are_checked_against_the_word_limit() {
        let top = WORD_MAX;
        // A balance that the free credits (f - g = 1) push to 2^31.
        assert_eq!(code(admit::<u64>(&DEV, mode::KARMA, 2, 1, &[top - 1], &[1])), status::NONE);
        assert_eq!(code(admit::<u64>(&DEV, mode::KARMA, 2, 1, &[top], &[1])), status::CREDIT);
        // A donor (demand 0 below g = 1) may earn one more.
        assert_eq!(code(admit::<u64>(&DEV, mode::KARMA, 2, 1, &[top - 2], &[0])), status::NONE);
        assert_eq!(code(admit::<u64>(&DEV, mode::KARMA, 2, 1, &[top - 1], &[0])), status::CREDIT);
        // Balances do not matter outside Karma.
        assert_eq!(code(admit::<u64>(&DEV, mode::MAXMIN, 2, 1, &[u64::MAX], &[1])), status::NONE);
        assert_eq!(code(admit::<u64>(&DEV, mode::MAXMIN, 2, 1, &[0], &[WORD_LIMIT])), status::DEMAND);
        // Credits are checked before demands.
        assert_eq!(code(admit::<u64>(&DEV, mode::KARMA, 2, 1, &[top], &[WORD_LIMIT])), status::CREDIT);
        let half = WORD_LIMIT / 2;
        assert_eq!(code(admit::<u64>(&DEV, mode::MAXMIN, half, 0, &[0, 0], &[0, 0])), status::CAPACITY);
        assert_eq!(code(admit::<u64>(&DEV, mode::STRICT, half, 0, &[0, 0], &[0, 0])), status::NONE);
        assert_eq!(code(admit::<u64>(&DEV, mode::MAXMIN, half - 1, 0, &[0, 0], &[0, 0])), status::NONE);
    }

    #[test]
    fn a_refusal_names_the_value_and_the_code() {
        let r = admit::<u64>(&DEV, mode::KARMA, 2, 1, &[0, 0, 7], &[1, 2, WORD_LIMIT]).unwrap_err();
        let text = r.to_string();
        assert!(text.contains("user 2") && text.contains("2147483648") && text.contains("status code 3"), "{text}");
    }

    #[test]
    fn the_fast_verdict_agrees_with_the_rule() {
        // Values at and around every edge of the rule, and random ones.
        let edges = [
            0u64,
            1,
            2,
            3,
            5,
            WORD_MAX - 8,
            WORD_MAX - 2,
            WORD_MAX - 1,
            WORD_MAX,
            WORD_LIMIT,
            u32::MAX as u64,
            1 << 32,
            u64::MAX,
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let pick = |next: &mut dyn FnMut() -> u64| {
            let r = next();
            if r.is_multiple_of(3) {
                r >> 33
            } else {
                edges[(r % edges.len() as u64) as usize]
            }
        };
        let (mut accepted, mut refused) = (0, 0);
        for _ in 0..200_000 {
            let n = (next() % 9) as usize;
            let mode_word = (next() % 4) as u32;
            let fair = pick(&mut next).max(1) % (WORD_LIMIT + 1);
            let guaranteed = if next() % 4 == 0 { pick(&mut next) } else { fair / 2 };
            let credits: Vec<u32> = (0..n).map(|_| pick(&mut next).min(u32::MAX as u64) as u32).collect();
            let demand: Vec<u64> = (0..n).map(|_| pick(&mut next)).collect();
            let short = if next() % 20 == 0 { &credits[..n.saturating_sub(1)] } else { &credits[..] };
            let wide: Vec<u64> = short.iter().map(|&c| c as u64).collect();
            let rule = admit(&DEV, mode_word, fair, guaranteed, &wide, &demand).is_ok();
            let mut words = vec![7; next() as usize % 12];
            assert_eq!(
                admits(&DEV, mode_word, fair, guaranteed, short, &demand, &mut words),
                rule,
                "mode {mode_word} f {fair} g {guaranteed} credits {short:?} demand {demand:?}"
            );
            if rule {
                let sent: Vec<u64> = words.iter().map(|&w| w as u64).collect();
                assert_eq!(sent, demand, "the words are the demands");
                accepted += 1
            } else {
                refused += 1
            }
        }
        assert!(accepted > 10_000 && refused > 10_000, "both verdicts exercised: {accepted} / {refused}");
    }
}
