//! What a device accepts, from the pool's side: the device's mode for a policy, the pool
//! in device words (equal shares, whole balances below 2^31), and each quantum through
//! the ABI's one admission rule, with the refused user named as the pool knows it.

use crate::{Allocator, Credits, Policy};
use fairshare_abi::{self as abi, DeviceError, Limits, Mode};

/// The device mode (`CONTROL.mode`) that computes `policy`.
pub fn mode_of(policy: Policy) -> Mode {
    match policy {
        Policy::Karma => Mode::Karma,
        Policy::MaxMin => Mode::MaxMin,
        Policy::Strict => Mode::Strict,
    }
}

/// A device balance (whole credits) as `Credits`.
pub(crate) fn from_word(c: u32) -> Credits {
    Credits::from_int(c as i64).unwrap_or(Credits::MAX) // u32 always fits
}

/// A pool in device words: equal shares and whole balances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceShape {
    /// The fair share of every user.
    pub fair: u32,
    /// The guaranteed share of every user.
    pub guaranteed: u32,
    /// Balances, per user.
    pub credits: Vec<u32>,
}

/// `pool` in the words of a device of `limits`, or why it does not fit
/// ([`DeviceError::Unsupported`]): unequal shares (Algorithm 2), fractional, negative or
/// too large balances, or what the ABI's admission rule refuses (more users, a mode the
/// device lacks, shares or a pool size beyond its words). Demands are admitted per
/// quantum ([`admit_quantum`]).
pub fn device_shape(pool: &Allocator, limits: &Limits) -> std::result::Result<DeviceShape, DeviceError> {
    let users = pool.users();
    let (f, g) = (users[0].fair_share, users[0].guaranteed);
    if let Some(u) = users.iter().find(|u| u.fair_share != f || u.guaranteed != g) {
        return Err(DeviceError::Unsupported(format!(
            "user `{}` has fair share {} and guaranteed share {} where user `{}` has {f} and {g}: the device computes equal shares only (Algorithm 1)",
            u.name, u.fair_share, u.guaranteed, users[0].name
        )));
    }
    let mode = mode_of(pool.policy()).word();
    abi::admit_config(limits, mode, users.len(), f, g)?;
    if mode != abi::mode::STRICT && pool.params().capacity > abi::WORD_MAX {
        return Err(DeviceError::Unsupported(format!(
            "a pool of {} slices; device words hold at most {}",
            pool.params().capacity,
            abi::WORD_MAX
        )));
    }
    let credits = pool
        .credits()
        .iter()
        .zip(users)
        .map(|(&c, user)| match u32::try_from(c.floor_int()) {
            Ok(w) if c.is_integer() && w as u64 <= abi::WORD_MAX => Ok(w),
            _ => Err(DeviceError::Unsupported(format!(
                "user `{}` has {c} credits; the device holds whole credits from 0 to {}",
                user.name,
                abi::WORD_MAX
            ))),
        })
        .collect::<std::result::Result<_, _>>()?;
    // Both shares are below the word limit, checked by the admission rule.
    Ok(DeviceShape { fair: f as u32, guaranteed: g as u32, credits })
}

/// Whether the device takes the quantum of `demand` on `pool` (the ABI's admission
/// rule with the pool's balances), before anything is sent.
pub fn admit_quantum(pool: &Allocator, limits: &Limits, demand: &[u64]) -> std::result::Result<(), DeviceError> {
    let users = pool.users();
    let (f, g) = (users[0].fair_share, users[0].guaranteed);
    let credits: Vec<u64> = pool.credits().iter().map(|c| u64::try_from(c.floor_int()).unwrap_or(u64::MAX)).collect();
    abi::admit(limits, mode_of(pool.policy()).word(), f, g, &credits, demand).map_err(|r| {
        // The user as the pool knows it.
        DeviceError::Unsupported(r.naming(|u| users.get(u).map(|user| format!("`{}`", user.name))))
    })
}
