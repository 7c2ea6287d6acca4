//! The offload backend: a pool whose quanta run on an [`Accelerator`] (the RTL model
//! in-process, the emulated device, a device behind VFIO), checked every quantum, with
//! the software as the fallback that never loses a credit.
//!
//! The [`Allocator`] inside stays the source of truth: it holds the last good credits.
//! A device result is accepted only after it has been checked (against the software's
//! own result in [`Verify::Full`], against the invariants of the policy in
//! [`Verify::Checks`]); any fault, timeout or failed check drops the device for good,
//! records why, and the quantum is answered by the software from the last good
//! credits, exactly as if the device had never been used.
//!
//! The device computes in its units: equal shares, whole credits in 31 bits. A pool
//! that does not fit (unequal shares, fractional or too large balances, more users
//! than the device holds) runs on software from the start, with the reason recorded.

use crate::error::Result;
use crate::{Allocator, Credits, Policy};

/// Largest value of a device word (demands, shares, balances): 2^31 - 1.
pub const DEVICE_MAX: u64 = (1 << 31) - 1;

/// A device balance (whole credits) as `Credits`.
fn from_word(c: u32) -> Credits {
    Credits::from_int(c as i64).unwrap_or(Credits::MAX) // u32 always fits
}

/// A device that computes quanta in its units: equal shares (Algorithm 1), whole
/// credits. A returned `Err` is a description of a fault; the offload backend stops
/// using the device after one.
pub trait Accelerator {
    /// Where it is, for messages (`rtl-sim`, `emulator:PATH`, `vfio:ADDR`).
    fn label(&self) -> String;
    /// Most users it holds.
    fn max_users(&self) -> usize;
    /// Restores the balances of users `0 .. credits.len()`.
    fn write_credits(&mut self, credits: &[u32]) -> std::result::Result<(), String>;
    /// Checkpoints the balances of users `0 .. n`.
    fn read_credits(&mut self, n: usize) -> std::result::Result<Vec<u32>, String>;
    /// One quantum of `policy` with equal shares: allocations and credits after.
    fn quantum(
        &mut self,
        policy: Policy,
        fair: u32,
        guaranteed: u32,
        demand: &[u32],
    ) -> std::result::Result<(Vec<u32>, Vec<u32>), String>;
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

/// `pool` in the words of a device that holds `max_users` users, or why it does not
/// fit: more users, unequal shares (Algorithm 2), a pool of 2^31 slices or more,
/// fractional, negative or too large balances. The one statement of what a device can
/// take; demands are checked per quantum against [`DEVICE_MAX`].
pub fn device_shape(pool: &Allocator, max_users: usize) -> std::result::Result<DeviceShape, String> {
    let users = pool.users();
    if users.len() > max_users {
        return Err(format!("{} users; the device holds {max_users}", users.len()));
    }
    let (f, g) = (users[0].fair_share, users[0].guaranteed);
    if users.iter().any(|u| u.fair_share != f || u.guaranteed != g) {
        return Err("unequal fair or guaranteed shares (Algorithm 2); the device computes equal shares only".into());
    }
    let capacity = pool.params().capacity;
    if capacity > DEVICE_MAX {
        return Err(format!("pool of {capacity} slices; device words hold at most {DEVICE_MAX}"));
    }
    let credits = pool
        .credits()
        .iter()
        .enumerate()
        .map(|(u, &c)| match u32::try_from(c.floor_int()) {
            Ok(w) if c.is_integer() && w as u64 <= DEVICE_MAX => Ok(w),
            _ => Err(format!("user {u} has {c} credits; the device holds whole credits from 0 to {DEVICE_MAX}")),
        })
        .collect::<std::result::Result<_, _>>()?;
    // Both shares are at most the pool size, checked above.
    Ok(DeviceShape { fair: f as u32, guaranteed: g as u32, credits })
}

/// How much of a device result is checked before it is accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// The software computes every quantum too; any difference is a fault.
    Full,
    /// The result is checked against the policy's invariants only: lengths,
    /// `min(d, g) <= alloc <= d`, the pool's capacity, and credit conservation per user
    /// (Karma: a borrower's balance moves by exactly the free credits minus its
    /// borrowed slices, a donor's by the free credits plus at most its unused
    /// guaranteed slices, and donors earn no more than borrowers paid; other policies:
    /// balances unchanged). Cheaper than [`Verify::Full`], and blind to a result that
    /// keeps every invariant but is still wrong (say, a slice lent by the wrong donor).
    Checks,
}

/// Why and when the device was dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// Quanta completed before the switch (the quantum that failed is the next one).
    pub quantum: u64,
    /// What went wrong.
    pub reason: String,
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
        match device_shape(&o.pool, device.max_users()) {
            Ok(shape) => {
                o.device = Some((device, shape.fair, shape.guaranteed));
                if let Err(reason) = o.restore(&shape.credits) {
                    o.drop_device(reason);
                }
            }
            Err(reason) => o.drop_device(reason),
        }
        o
    }

    /// A pool on software only (the same interface, no device).
    pub fn software(pool: Allocator) -> Offload {
        Offload { pool, device: None, label: "software".into(), verify: Verify::Full, fallback: None, device_quanta: 0 }
    }

    /// Writes `want` (the pool's balances in device words) to the device and reads them back.
    fn restore(&mut self, want: &[u32]) -> std::result::Result<(), String> {
        let (dev, _, _) = self.device.as_mut().ok_or("no device")?;
        dev.write_credits(want).map_err(|e| format!("restoring credits: {e}"))?;
        let got = dev.read_credits(want.len()).map_err(|e| format!("reading credits back: {e}"))?;
        if got != want {
            return Err("credits read back differ from those written".into());
        }
        Ok(())
    }

    /// Stops using the device before the pool's next quantum.
    fn drop_device(&mut self, reason: String) {
        self.drop_device_after(self.pool.quantum(), reason);
    }

    fn drop_device_after(&mut self, quantum: u64, reason: String) {
        self.device = None;
        self.fallback = Some(Fallback { quantum, reason });
    }

    /// Runs one quantum (on the device while it is healthy). Errors are the software's
    /// (a wrong demand length, a credit overflow) and change nothing.
    pub fn allocate(&mut self, demand: &[u64]) -> Result<&[u64]> {
        if self.device.is_none() || demand.len() != self.pool.users().len() {
            return self.pool.allocate(demand);
        }
        if let Some(u) = demand.iter().position(|&d| d > DEVICE_MAX) {
            let reason = format!("user {u} demands {} slices, beyond the device's words", demand[u]);
            self.drop_device(reason);
            return self.pool.allocate(demand);
        }
        let words: Vec<u32> = demand.iter().map(|&d| d as u32).collect();
        let policy = self.pool.policy();
        let q = self.pool.quantum() + 1;
        let Some((dev, f, g)) = self.device.as_mut() else { return self.pool.allocate(demand) };
        let (alloc, credits) = match dev.quantum(policy, *f, *g, &words) {
            Ok(r) => r,
            Err(fault) => {
                self.drop_device(format!("quantum {q}: {fault}"));
                return self.pool.allocate(demand);
            }
        };
        match self.verify {
            Verify::Full => {
                if let Err(e) = self.pool.allocate(demand) {
                    // The device ran a quantum the software refuses: put its credits back.
                    let want: Vec<u32> = self.pool.credits().iter().map(|c| c.floor_int() as u32).collect();
                    if let Err(reason) = self.restore(&want) {
                        self.drop_device(format!("quantum {q}: {reason}"));
                    }
                    return Err(e);
                }
                if let Some(reason) = Self::compare(&alloc, &credits, self.pool.allocations(), self.pool.credits()) {
                    self.drop_device_after(q - 1, format!("quantum {q}: {reason}"));
                } else {
                    self.device_quanta += 1;
                }
                Ok(self.pool.allocations())
            }
            Verify::Checks => match self.check(demand, &alloc, &credits) {
                Ok(after) => {
                    self.pool.commit(alloc.iter().map(|&a| a as u64).collect(), after);
                    self.device_quanta += 1;
                    Ok(self.pool.allocations())
                }
                Err(reason) => {
                    self.drop_device(format!("quantum {q}: {reason}"));
                    self.pool.allocate(demand)
                }
            },
        }
    }

    fn compare(alloc: &[u32], credits: &[u32], want_alloc: &[u64], want_credits: &[Credits]) -> Option<String> {
        if alloc.len() != want_alloc.len() || credits.len() != want_credits.len() {
            return Some(format!("the device returned {} results for {} users", alloc.len(), want_alloc.len()));
        }
        for u in 0..alloc.len() {
            let c = from_word(credits[u]);
            if alloc[u] as u64 != want_alloc[u] || c != want_credits[u] {
                return Some(format!(
                    "the device's result differs from the software's at user {u}: allocation {} vs {}, credits {} vs {}",
                    alloc[u], want_alloc[u], c, want_credits[u]
                ));
            }
        }
        None
    }

    /// The policy's invariants on a device result; the new balances if they hold.
    fn check(&self, demand: &[u64], alloc: &[u32], credits: &[u32]) -> std::result::Result<Vec<Credits>, String> {
        let n = demand.len();
        if alloc.len() != n || credits.len() != n {
            return Err(format!("the device returned {} results for {n} users", alloc.len()));
        }
        let params = self.pool.params();
        let mut total = 0u64;
        for u in 0..n {
            let a = alloc[u] as u64;
            let floor = demand[u].min(params.guaranteed[u]);
            if a > demand[u] || a < floor {
                return Err(format!(
                    "allocation {a} of user {u} is outside [{floor}, {}] (guaranteed part to demand)",
                    demand[u]
                ));
            }
            total += a;
        }
        if total > params.capacity {
            return Err(format!("the allocations sum to {total}, above the pool's {} slices", params.capacity));
        }
        let free = params.free.floor_int();
        let (mut borrowed, mut earned) = (0i64, 0i64);
        for u in 0..n {
            let (before, after) = (self.pool.credits()[u].floor_int(), credits[u] as i64);
            let (a, g, d) = (alloc[u] as i64, params.guaranteed[u] as i64, demand[u] as i64);
            let ok = match self.pool.policy() {
                // Algorithm 1, price 1: a borrower pays one credit per slice above g; a
                // donor earns at most one per slice it left unused below g.
                Policy::Karma if a > g => {
                    borrowed += a - g;
                    after == before + free - (a - g)
                }
                Policy::Karma => {
                    earned += after - before - free;
                    (0..=(g - d).max(0)).contains(&(after - before - free))
                }
                Policy::MaxMin | Policy::Strict => after == before,
            };
            if !ok {
                return Err(format!(
                    "credit conservation broken at user {u}: {before} -> {after} credits with allocation {a}, guaranteed {g}, demand {d}"
                ));
            }
        }
        if earned > borrowed {
            return Err(format!(
                "credit conservation broken: donors earned {earned} credits for {borrowed} borrowed slices"
            ));
        }
        Ok(credits.iter().map(|&c| from_word(c)).collect())
    }

    /// Reads the device's balances and checks them against the pool's (a checkpoint of
    /// the device through its registers). A difference or a fault drops the device.
    /// Returns the pool's balances, the good ones either way.
    pub fn checkpoint(&mut self) -> &[Credits] {
        if let Some((dev, _, _)) = self.device.as_mut() {
            let n = self.pool.users().len();
            let reason = match dev.read_credits(n) {
                Ok(got) if got.iter().map(|&c| from_word(c)).eq(self.pool.credits().iter().copied()) => None,
                Ok(_) => Some("checkpoint: the device's credits differ from the last good ones".to_string()),
                Err(e) => Some(format!("checkpoint: {e}")),
            };
            if let Some(r) = reason {
                self.drop_device(r);
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
        fn max_users(&self) -> usize {
            64
        }
        fn write_credits(&mut self, credits: &[u32]) -> std::result::Result<(), String> {
            let mut state = self.pool.export_state();
            for (u, c) in credits.iter().enumerate() {
                state.users[u].credits = from_word(*c);
            }
            self.pool = Allocator::from_state(state).map_err(|e| e.to_string())?;
            Ok(())
        }
        fn read_credits(&mut self, n: usize) -> std::result::Result<Vec<u32>, String> {
            Ok(self.pool.credits()[..n].iter().map(|c| c.floor_int() as u32).collect())
        }
        fn quantum(
            &mut self,
            _policy: Policy,
            _f: u32,
            _g: u32,
            demand: &[u32],
        ) -> std::result::Result<(Vec<u32>, Vec<u32>), String> {
            self.quanta += 1;
            let d: Vec<u64> = demand.iter().map(|&x| x as u64).collect();
            let mut alloc: Vec<u32> =
                self.pool.allocate(&d).map_err(|e| e.to_string())?.iter().map(|&a| a as u32).collect();
            let mut credits = self.read_credits(demand.len())?;
            match self.fault {
                Fault::Error(q) if q == self.quanta => return Err("timeout".into()),
                Fault::AllocPlusOne(q) if q == self.quanta => alloc[0] += 1,
                Fault::CreditPlusOne(q) if q == self.quanta => credits[1] += 1,
                Fault::AllocAboveDemand(q) if q == self.quanta => alloc[2] = demand[2] + 1,
                Fault::CreditsMinted(q) if q == self.quanta => credits[3] += 100,
                Fault::DropUser(q) if q == self.quanta => {
                    alloc.pop();
                }
                _ => {}
            }
            Ok((alloc, credits))
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
            (Fault::Error(4), "timeout"),
            (Fault::AllocAboveDemand(7), "allocation"),
            (Fault::CreditsMinted(3), "credit"),
            (Fault::DropUser(2), "results for 5 users"),
        ];
        // Off by one somewhere: only the full comparison is sure to see it.
        let quiet = [(Fault::AllocPlusOne(9), "differs"), (Fault::CreditPlusOne(3), "differs")];
        let cases =
            loud.iter().map(|&c| (Verify::Checks, c)).chain(loud.iter().chain(&quiet).map(|&c| (Verify::Full, c)));
        for (verify, (fault, words)) in cases {
            let o = run(Policy::Karma, fault, verify);
            let fb = o.fallback().unwrap();
            assert!(!o.on_device());
            assert!(fb.reason.contains(words), "{verify:?}: {}", fb.reason);
            let at = match fault {
                Fault::Error(q)
                | Fault::AllocPlusOne(q)
                | Fault::CreditPlusOne(q)
                | Fault::AllocAboveDemand(q)
                | Fault::CreditsMinted(q)
                | Fault::DropUser(q) => q,
                Fault::None => unreachable!(),
            };
            assert_eq!(fb.quantum, at - 1, "{}", fb.reason);
            assert_eq!(o.device_quanta(), at - 1);
        }
    }

    #[test]
    fn pools_the_device_cannot_hold_run_on_software() {
        let fake = Fake { pool: pool(Policy::Karma), fault: Fault::None, quanta: 0 };
        let config = PoolConfig::equal(5, 4, Alpha::new(1, 2).unwrap(), -1).unwrap();
        let o = Offload::new(Allocator::new(config, Policy::Karma).unwrap(), Box::new(fake), Verify::Full);
        assert!(o.fallback().unwrap().reason.contains("whole credits from 0"), "{:?}", o.fallback());
        let fake = Fake { pool: pool(Policy::Karma), fault: Fault::None, quanta: 0 };
        let mut o = Offload::new(pool(Policy::Karma), Box::new(fake), Verify::Full);
        o.allocate(&[1, 2, 3, 1 << 31, 0]).unwrap();
        assert!(o.fallback().unwrap().reason.contains("beyond the device's words"));
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
