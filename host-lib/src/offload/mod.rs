//! The offload backend: a pool whose quanta run on an [`Accelerator`] (the RTL model
//! in-process, the emulated device, a device behind VFIO), checked every quantum, with
//! the software as the fallback that never loses a credit.
//!
//! The [`Allocator`] inside stays the source of truth: it holds the last good credits.
//! A device result is accepted only after it has been checked (against the software's
//! own result in [`Verify::Full`], against the policy's invariants,
//! [`crate::policy::invariants`], in [`Verify::Checks`]); any fault, timeout or failed
//! check drops the device for good, records why ([`Fallback`], carrying the
//! [`DeviceError`]), and the quantum is answered by the software from the last good
//! credits, exactly as if the device had never been used.
//!
//! The device computes in its units: equal shares, whole credits below 2^31. What fits
//! is decided by the ABI's one admission rule ([`fairshare_abi::admit`]) plus what the
//! words cannot express (unequal shares, fractional or negative balances): a pool or a
//! quantum that does not fit runs on software, with the reason recorded.

use crate::error::Result;
use crate::policy::invariants;
use crate::{Allocator, Credits, Policy};
use fairshare_abi::{self as abi, Accelerator, DeviceError, Limits, Mode, QuantumOutput};

/// The device mode (`CONTROL.mode`) that computes `policy`.
pub fn mode_of(policy: Policy) -> Mode {
    match policy {
        Policy::Karma => Mode::Karma,
        Policy::MaxMin => Mode::MaxMin,
        Policy::Strict => Mode::Strict,
    }
}

/// A device balance (whole credits) as `Credits`.
fn from_word(c: u32) -> Credits {
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
        // Name the user as the pool knows it.
        let reason = match r.reason.split_once(' ').and_then(|(_, rest)| rest.split_once(' ')) {
            Some((index, rest)) if r.reason.starts_with("user ") => match index.parse::<usize>() {
                Ok(u) if u < users.len() => format!("user `{}` {rest}", users[u].name),
                _ => r.reason.clone(),
            },
            _ => r.reason.clone(),
        };
        DeviceError::Unsupported(abi::Refusal { code: r.code, reason }.to_string())
    })
}

/// How much of a device result is checked before it is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// The software computes every quantum too; any difference is a fault.
    Full,
    /// The result is checked against the policy's invariants only
    /// ([`crate::policy::invariants`]). Cheaper than [`Verify::Full`], and blind to a
    /// result that keeps every invariant but is still wrong (say, a slice lent by the
    /// wrong donor).
    Checks,
}

/// Why and when the device was dropped.
#[derive(Clone, Debug)]
pub struct Fallback {
    /// Quanta completed before the switch (the quantum that failed is the next one).
    pub quantum: u64,
    /// What went wrong.
    pub error: DeviceError,
}

impl std::fmt::Display for Fallback {
    /// The one wording of a fallback, for every command and report.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dropped after {} quanta: {}", self.quantum, self.error)
    }
}

/// A pool served by a device, verified, with software fallback.
pub struct Offload {
    pool: Allocator,
    /// The device, with the pool's equal fair and guaranteed shares in its words (fixed:
    /// the pool's users cannot change while it is offloaded).
    device: Option<(Box<dyn Accelerator>, u32, u32)>,
    label: String,
    verify: Verify,
    fallback: Option<Fallback>,
    device_quanta: u64,
}

impl Offload {
    /// Puts `pool` on `device`: checks that the pool fits the device and restores its
    /// credits there (read back and compared). If anything does not fit or fails, the
    /// pool runs on software and [`Offload::fallback`] says why.
    pub fn new(pool: Allocator, device: Box<dyn Accelerator>, verify: Verify) -> Offload {
        let label = device.label();
        let mut o = Offload { pool, device: None, label, verify, fallback: None, device_quanta: 0 };
        match device_shape(&o.pool, &device.limits()) {
            Ok(shape) => {
                o.device = Some((device, shape.fair, shape.guaranteed));
                if let Err(e) = o.restore(&shape.credits) {
                    o.drop_device(e);
                }
            }
            Err(e) => o.drop_device(e),
        }
        o
    }

    /// A pool on software only (the same interface, no device).
    pub fn software(pool: Allocator) -> Offload {
        Offload { pool, device: None, label: "software".into(), verify: Verify::Full, fallback: None, device_quanta: 0 }
    }

    /// Writes `want` (the pool's balances in device words) to the device and reads them back.
    fn restore(&mut self, want: &[u32]) -> std::result::Result<(), DeviceError> {
        let Some((dev, _, _)) = self.device.as_mut() else { return Ok(()) };
        dev.write_credits(want)?;
        let got = dev.read_credits(want.len())?;
        if got != want {
            return Err(DeviceError::Protocol("credits read back differ from those written".into()));
        }
        Ok(())
    }

    /// Stops using the device before the pool's next quantum.
    fn drop_device(&mut self, error: DeviceError) {
        self.drop_device_after(self.pool.quantum(), error);
    }

    fn drop_device_after(&mut self, quantum: u64, error: DeviceError) {
        self.device = None;
        self.fallback = Some(Fallback { quantum, error });
    }

    /// Runs one quantum (on the device while it is healthy). Errors are the software's
    /// (a wrong demand length, a credit overflow) and change nothing.
    pub fn allocate(&mut self, demand: &[u64]) -> Result<&[u64]> {
        if self.device.is_none() || demand.len() != self.pool.users().len() {
            return self.pool.allocate(demand);
        }
        let Some((dev, f, g)) = self.device.as_mut() else { return self.pool.allocate(demand) };
        let (f, g) = (*f, *g);
        if let Err(e) = admit_quantum(&self.pool, &dev.limits(), demand) {
            self.drop_device(e);
            return self.pool.allocate(demand);
        }
        // Admitted: every demand fits a word.
        let words: Vec<u32> = demand.iter().map(|&d| d as u32).collect();
        let out = match dev.quantum(mode_of(self.pool.policy()), f, g, &words) {
            Ok(out) if out.alloc.len() == words.len() && out.credits.len() == words.len() => out,
            Ok(out) => {
                let e = format!("the device returned {} results for {} users", out.alloc.len(), words.len());
                self.drop_device(DeviceError::Protocol(e));
                return self.pool.allocate(demand);
            }
            Err(e) => {
                self.drop_device(e);
                return self.pool.allocate(demand);
            }
        };
        match self.verify {
            Verify::Full => {
                let q = self.pool.quantum();
                if let Err(e) = self.pool.allocate(demand) {
                    // The device ran a quantum the software refuses: put its credits back.
                    let want: Vec<u32> = self.pool.credits().iter().map(|c| c.floor_int() as u32).collect();
                    if let Err(fault) = self.restore(&want) {
                        self.drop_device(fault);
                    }
                    return Err(e);
                }
                if let Some(reason) = Self::compare(&out, self.pool.allocations(), self.pool.credits()) {
                    self.drop_device_after(q, DeviceError::Verification(reason));
                } else {
                    self.device_quanta += 1;
                }
                Ok(self.pool.allocations())
            }
            Verify::Checks => {
                let alloc: Vec<u64> = out.alloc.iter().map(|&a| a as u64).collect();
                let after: Vec<Credits> = out.credits.iter().map(|&c| from_word(c)).collect();
                let (policy, params) = (self.pool.policy(), self.pool.params());
                match invariants::check(policy, params, demand, self.pool.credits(), &alloc, &after) {
                    Ok(()) => {
                        self.pool.commit(alloc, after);
                        self.device_quanta += 1;
                        Ok(self.pool.allocations())
                    }
                    Err(v) => {
                        self.drop_device(DeviceError::Verification(v.0));
                        self.pool.allocate(demand)
                    }
                }
            }
        }
    }

    fn compare(out: &QuantumOutput, want_alloc: &[u64], want_credits: &[Credits]) -> Option<String> {
        for u in 0..out.alloc.len() {
            let c = from_word(out.credits[u]);
            if out.alloc[u] as u64 != want_alloc[u] || c != want_credits[u] {
                return Some(format!(
                    "the device's result differs from the software's at user {u}: allocation {} vs {}, credits {} vs {}",
                    out.alloc[u], want_alloc[u], c, want_credits[u]
                ));
            }
        }
        None
    }

    /// Reads the device's balances and checks them against the pool's (a checkpoint of
    /// the device through its registers). A difference or a fault drops the device.
    /// Returns the pool's balances, the good ones either way.
    pub fn checkpoint(&mut self) -> &[Credits] {
        if let Some((dev, _, _)) = self.device.as_mut() {
            let n = self.pool.users().len();
            let error = match dev.read_credits(n) {
                Ok(got) if got.iter().map(|&c| from_word(c)).eq(self.pool.credits().iter().copied()) => None,
                Ok(_) => Some(DeviceError::Protocol(
                    "checkpoint: the device's credits differ from the last good ones".into(),
                )),
                Err(e) => Some(e),
            };
            if let Some(e) = error {
                self.drop_device(e);
            }
        }
        self.pool.credits()
    }

    /// The pool (allocations, credits, configuration).
    pub fn pool(&self) -> &Allocator {
        &self.pool
    }

    /// Whether quanta still go to the device.
    pub fn on_device(&self) -> bool {
        self.device.is_some()
    }

    /// The device's label (kept after a fallback).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Why the pool left the device, if it did.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// Quanta the device answered (and that were accepted).
    pub fn device_quanta(&self) -> u64 {
        self.device_quanta
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{Alpha, PoolConfig};

    /// What a fake device does wrong, and when (1-based quantum on the device).
    #[derive(Clone, Copy)]
    enum Fault {
        None,
        Error(u64),
        AllocPlusOne(u64),
        CreditPlusOne(u64),
        AllocAboveDemand(u64),
        CreditsMinted(u64),
        DropUser(u64),
    }

    /// A device that computes with the software policy in device words.
    struct Fake {
        pool: Allocator,
        fault: Fault,
        quanta: u64,
    }

    impl Accelerator for Fake {
        fn label(&self) -> String {
            "fake".into()
        }
        fn limits(&self) -> Limits {
            Limits { max_users: 64, modes: abi::ALL_MODES }
        }
        fn write_credits(&mut self, credits: &[u32]) -> std::result::Result<(), DeviceError> {
            let mut state = self.pool.export_state();
            for (u, c) in credits.iter().enumerate() {
                state.users[u].credits = from_word(*c);
            }
            self.pool = Allocator::from_state(state).map_err(|e| DeviceError::Protocol(e.to_string()))?;
            Ok(())
        }
        fn read_credits(&mut self, n: usize) -> std::result::Result<Vec<u32>, DeviceError> {
            Ok(self.pool.credits()[..n].iter().map(|c| c.floor_int() as u32).collect())
        }
        fn quantum(
            &mut self,
            _mode: Mode,
            _f: u32,
            _g: u32,
            demand: &[u32],
        ) -> std::result::Result<QuantumOutput, DeviceError> {
            self.quanta += 1;
            let d: Vec<u64> = demand.iter().map(|&x| x as u64).collect();
            let mut alloc: Vec<u32> = self
                .pool
                .allocate(&d)
                .map_err(|e| DeviceError::Protocol(e.to_string()))?
                .iter()
                .map(|&a| a as u32)
                .collect();
            let mut credits = self.read_credits(demand.len())?;
            match self.fault {
                Fault::Error(q) if q == self.quanta => {
                    return Err(DeviceError::Timeout { what: "sequence number 1".into(), after: Default::default() })
                }
                Fault::AllocPlusOne(q) if q == self.quanta => alloc[0] += 1,
                Fault::CreditPlusOne(q) if q == self.quanta => credits[1] += 1,
                Fault::AllocAboveDemand(q) if q == self.quanta => alloc[2] = demand[2] + 1,
                Fault::CreditsMinted(q) if q == self.quanta => credits[3] += 100,
                Fault::DropUser(q) if q == self.quanta => {
                    alloc.pop();
                }
                _ => {}
            }
            Ok(QuantumOutput { alloc, credits, cycles: 0 })
        }
    }

    fn pool(policy: Policy) -> Allocator {
        Allocator::new(PoolConfig::equal(5, 4, Alpha::new(1, 2).unwrap(), 10).unwrap(), policy).unwrap()
    }

    fn demands() -> Vec<Vec<u64>> {
        (0..30u64).map(|q| (0..5u64).map(|u| (q * 7 + u * 13) % 11).collect()).collect()
    }

    fn run(policy: Policy, fault: Fault, verify: Verify) -> Offload {
        let fake = Fake { pool: pool(policy), fault, quanta: 0 };
        let mut o = Offload::new(pool(policy), Box::new(fake), verify);
        let mut reference = pool(policy);
        for d in demands() {
            let got = o.allocate(&d).unwrap().to_vec();
            assert_eq!(got, reference.allocate(&d).unwrap(), "allocations equal the software's every quantum");
            assert_eq!(o.pool().credits(), reference.credits(), "credits equal the software's every quantum");
        }
        o
    }

    #[test]
    fn healthy_device_serves_every_quantum() {
        for policy in Policy::ALL {
            for verify in [Verify::Full, Verify::Checks] {
                let o = run(policy, Fault::None, verify);
                assert!(o.on_device() && o.fallback().is_none());
                assert_eq!(o.device_quanta(), 30);
            }
        }
    }

    #[test]
    fn every_fault_falls_back_without_losing_credits() {
        let loud = [
            (Fault::Error(4), "timeout", "no completion"),
            (Fault::AllocAboveDemand(7), "verification", "allocation"),
            (Fault::CreditsMinted(3), "verification", "credit"),
            (Fault::DropUser(2), "protocol", "results for 5 users"),
        ];
        // Off by one somewhere: only the full comparison is sure to see it.
        let quiet =
            [(Fault::AllocPlusOne(9), "verification", "differs"), (Fault::CreditPlusOne(3), "verification", "differs")];
        let cases =
            loud.iter().map(|&c| (Verify::Checks, c)).chain(loud.iter().chain(&quiet).map(|&c| (Verify::Full, c)));
        for (verify, (fault, kind, words)) in cases {
            let o = run(Policy::Karma, fault, verify);
            let fb = o.fallback().unwrap();
            assert!(!o.on_device());
            assert_eq!(fb.error.kind(), kind, "{verify:?}: {fb}");
            assert!(fb.error.to_string().contains(words), "{verify:?}: {fb}");
            let at = match fault {
                Fault::Error(q)
                | Fault::AllocPlusOne(q)
                | Fault::CreditPlusOne(q)
                | Fault::AllocAboveDemand(q)
                | Fault::CreditsMinted(q)
                | Fault::DropUser(q) => q,
                Fault::None => unreachable!(),
            };
            assert_eq!(fb.quantum, at - 1, "{fb}");
            assert_eq!(o.device_quanta(), at - 1);
        }
    }

    #[test]
    fn pools_the_device_cannot_hold_run_on_software() {
        let fake = Fake { pool: pool(Policy::Karma), fault: Fault::None, quanta: 0 };
        let config = PoolConfig::equal(5, 4, Alpha::new(1, 2).unwrap(), -1).unwrap();
        let o = Offload::new(Allocator::new(config, Policy::Karma).unwrap(), Box::new(fake), Verify::Full);
        let fb = o.fallback().unwrap();
        assert!(fb.error.to_string().contains("whole credits from 0"), "{fb}");
        assert_eq!(fb.error.kind(), "unsupported");
        let fake = Fake { pool: pool(Policy::Karma), fault: Fault::None, quanta: 0 };
        let mut o = Offload::new(pool(Policy::Karma), Box::new(fake), Verify::Full);
        o.allocate(&[1, 2, 3, 1 << 31, 0]).unwrap();
        let fb = o.fallback().unwrap().to_string();
        assert!(fb.contains("user `u3` demands 2147483648") && fb.contains("status code 3"), "{fb}");
    }

    #[test]
    fn bad_demand_changes_nothing_and_keeps_the_device() {
        let fake = Fake { pool: pool(Policy::Karma), fault: Fault::None, quanta: 0 };
        let mut o = Offload::new(pool(Policy::Karma), Box::new(fake), Verify::Full);
        assert!(o.allocate(&[1, 2]).is_err());
        assert!(o.on_device());
        assert_eq!(o.pool().quantum(), 0);
        assert_eq!(o.checkpoint(), pool(Policy::Karma).credits());
        assert!(o.on_device());
    }
}
