//! What the engine must compute: one quantum of the software policies of `host-lib`,
//! expressed in the engine's units (equal shares, whole credits in 32-bit words). The
//! engine's tests, `fairshare hdl cycles` and the `rtl-sim` checks all compare against
//! this one function.

use fairshare::{Alpha, Credits, Implementation, KarmaParams, PoolConfig};
use fairshare_abi::Mode;

/// The pool the engine computes for: `users` users of fair share `fair` and guaranteed
/// share `guaranteed` (Algorithm 1).
pub fn params(users: usize, fair: u32, guaranteed: u32) -> Result<KarmaParams, fairshare::Error> {
    let alpha = Alpha::new(guaranteed as u64, fair as u64)?;
    KarmaParams::from_config(&PoolConfig::equal(users, fair as u64, alpha, 0)?)
}

/// The software policy of `mode`.
pub fn policy(mode: Mode) -> fairshare::Policy {
    match mode {
        Mode::Karma => fairshare::Policy::Karma,
        Mode::MaxMin => fairshare::Policy::MaxMin,
        Mode::Strict => fairshare::Policy::Strict,
    }
}

/// Allocations and credits after the quantum, per user, for `mode`, fair share
/// `fair`, guaranteed share `guaranteed` and the credits before.
/// An error names what does not fit the engine's units (never a silent truncation).
pub fn expected(
    mode: Mode,
    fair: u32,
    guaranteed: u32,
    credits: &[u32],
    demand: &[u32],
) -> Result<(Vec<u32>, Vec<u32>), String> {
    let params = params(demand.len(), fair, guaranteed).map_err(|e| e.to_string())?;
    let d: Vec<u64> = demand.iter().map(|&x| x as u64).collect();
    let c: Vec<Credits> = credits.iter().map(|&x| Credits::from_int(x as i64).unwrap_or(Credits::MAX)).collect();
    let fairshare::policy::Outcome { alloc, credits: after } =
        fairshare::policy::run(policy(mode), Implementation::Batched, &params, &d, &c).map_err(|e| e.to_string())?;
    let word = |x: i64| u32::try_from(x).map_err(|_| format!("software value {x} does not fit 32 bits"));
    Ok((
        alloc.iter().map(|&a| word(a as i64)).collect::<Result<_, _>>()?,
        after.iter().map(|c| word(c.floor_int())).collect::<Result<_, _>>()?,
    ))
}
