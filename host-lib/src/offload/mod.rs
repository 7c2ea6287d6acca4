//! The offload backend: a pool whose quanta run on an [`Accelerator`] (the RTL model
//! in-process, the emulated device, a device behind VFIO), checked every quantum, with
//! the software as the fallback that never loses a credit.
//!
//! How a device's result is checked is the [`Verify`] mode:
//! - `sync`: the software computes the quantum too, before the result is used;
//! - `async` (the default for devices): the cheap invariant check
//!   ([`crate::policy::invariants::check_words`]: lengths, `min(d, g) <= alloc <= d`, the
//!   pool size, per-user credit conservation) on the caller's critical path, then the
//!   device's result is used; the exact recomputation follows on a verifier thread
//!   (`verifier`, a bounded crossbeam channel of [`VERIFIER_DEPTH`] quanta);
//! - `sample:K`: the same with one quantum in K recomputed, from the device's credits;
//! - `invariants`: the invariant check only.
//!
//! Any fault, timeout, failed check or mismatch drops the device for good and records
//! why ([`Fallback`], carrying the [`DeviceError`]); later quanta run on software.
//! Credits are never lost:
//! - a fault seen before a result is used (a timeout, a broken invariant, a `sync`
//!   mismatch) leaves the pool at its last good credits, and the software answers the
//!   quantum exactly as if the device had never been used;
//! - a mismatch the verifier finds at quantum `q` (`async`, `sample:K`) is seen by the
//!   caller some quanta later, at most [`VERIFIER_DEPTH`] + 1. The software's credits
//!   after `q` become the truth, and every quantum issued since is recomputed from them
//!   by the verifier. With `async` every quantum before `q` was verified, so the pool's
//!   credits are then exactly those of a pure software run; only the allocations issued
//!   for `q` and the quanta after it ([`Fallback::issued_after`] counts them) can have
//!   differed from that run's, each within the invariants, which were checked. With
//!   `sample:K` the software takes over from the device's credits before `q`; a wrong
//!   quantum between two samples that keeps every invariant is not seen at all.
//!
//! The device computes in its units: equal shares, whole credits below 2^31. What fits
//! is decided by the ABI's one admission rule ([`fairshare_abi::admit`]) plus what the
//! words cannot express (unequal shares, fractional or negative balances): a pool or a
//! quantum that does not fit runs on software, with the reason recorded.

mod admission;
mod verifier;
mod verify;

pub use admission::{admit_quantum, device_shape, mode_of, DeviceShape};
pub use verify::{BadVerify, Checks, Fallback, FallbackSummary, Timing, Verify, VERIFIER_DEPTH};

use crate::allocator::Savepoint;
use crate::error::Result;
use crate::policy::invariants;
use crate::{Allocator, Credits};
use admission::from_word;
use fairshare_abi::{self as abi, Accelerator, DeviceError, Limits, QuantumOutput, QuantumSettings};
use std::time::Instant;
use verifier::Verifier;
use verify::differs;

/// The device and its pool's equal shares in its words (fixed: the pool's users cannot
/// change while it is offloaded).
struct Device {
    accelerator: Box<dyn Accelerator>,
    settings: QuantumSettings,
    limits: Limits,
}

/// What [`Offload::submit`] leaves for [`Offload::judge`].
struct Submitted {
    /// The device's answer (its result is in `Offload::out`).
    answer: std::result::Result<(), DeviceError>,
    /// In `sync`, the software's own quantum (computed while the device did) and its time.
    software: Option<(Result<()>, u64)>,
    /// The verifier's queue went away while a check was queued.
    queue_failed: bool,
    /// Quanta the pool had run before this one.
    quantum: u64,
}

/// A pool served by a device, verified, with software fallback.
pub struct Offload {
    pool: Allocator,
    device: Option<Device>,
    label: String,
    verify: Verify,
    fallback: Option<Fallback>,
    device_quanta: u64,
    verifier: Option<Verifier>,
    /// The device's balances after the last quantum, in its words.
    credit_words: Vec<u32>,
    /// This quantum's demands in device words, and the device's answer (reused).
    words: Vec<u32>,
    out: QuantumOutput,
    timing: Timing,
    /// A running average of the device's own time per quantum (0: none yet), and
    /// whether the device let the caller work while it computed, last quantum.
    device_average_ns: u64,
    overlaps: bool,
    /// The checks of a verifier that has stopped.
    checks: Checks,
    /// The last device quantum, to be queued for its check (async, sample:K).
    pending: Option<verifier::Job>,
}

impl Offload {
    /// Puts `pool` on `device`: checks that the pool fits the device and restores its
    /// credits there (read back and compared), and starts the verifier thread
    /// (`async`, `sample:K`). If anything does not fit or fails, the pool runs on
    /// software and [`Offload::fallback`] says why.
    pub fn new(pool: Allocator, device: Box<dyn Accelerator>, verify: Verify) -> Offload {
        let label = device.label();
        let mut o = Offload::software(pool);
        (o.label, o.verify) = (label, verify);
        let limits = device.limits();
        let shape = match device_shape(&o.pool, &limits) {
            Ok(shape) => shape,
            Err(e) => {
                o.drop_device(e);
                return o;
            }
        };
        let mode = mode_of(o.pool.policy());
        let settings = QuantumSettings { mode, fair: shape.fair, guaranteed: shape.guaranteed };
        o.device = Some(Device { accelerator: device, settings, limits });
        if let Err(e) = o.restore(&shape.credits) {
            o.drop_device(e);
            return o;
        }
        o.credit_words = shape.credits;
        if matches!(verify, Verify::Async | Verify::Sample(_)) {
            match Verifier::start(o.pool.clone()) {
                Ok(v) => o.verifier = Some(v),
                Err(e) => o.drop_device(DeviceError::Io {
                    what: "starting the verifier thread".into(),
                    source: std::sync::Arc::new(e),
                }),
            }
        }
        o
    }

    /// A pool on software only (the same interface, no device).
    pub fn software(pool: Allocator) -> Offload {
        Offload {
            pool,
            device: None,
            label: "software".into(),
            verify: Verify::Sync,
            fallback: None,
            device_quanta: 0,
            verifier: None,
            credit_words: Vec::new(),
            words: Vec::new(),
            out: QuantumOutput::default(),
            timing: Timing::default(),
            device_average_ns: 0,
            overlaps: false,
            checks: Checks::default(),
            pending: None,
        }
    }

    /// Writes `want` (the pool's balances in device words) to the device and reads them back.
    fn restore(&mut self, want: &[u32]) -> std::result::Result<(), DeviceError> {
        let Some(dev) = self.device.as_mut() else { return Ok(()) };
        dev.accelerator.write_credits(want)?;
        let got = dev.accelerator.read_credits(want.len())?;
        if got != want {
            return Err(DeviceError::Protocol("credits read back differ from those written".into()));
        }
        Ok(())
    }

    /// Stops using the device before the pool's next quantum, because of `error`. The
    /// verifier first checks every quantum still queued: if it finds an earlier
    /// mismatch, that is the reason recorded, and the pool takes the software's credits.
    fn drop_device(&mut self, error: DeviceError) {
        let quantum = self.pool.quantum();
        self.drop_device_after(quantum, error);
    }

    fn drop_device_after(&mut self, quantum: u64, error: DeviceError) {
        if let (Some(v), Some(job)) = (self.verifier.as_mut(), self.pending.take()) {
            // Checked with the rest below (the queue only goes when the verifier does).
            let _ = queue(v, job, &self.credit_words, std::time::Duration::ZERO);
        }
        self.device = None;
        let mut fallback = Fallback { quantum, error, issued_after: 0 };
        if let Some(mut v) = self.verifier.take() {
            v.drain();
            self.checks = v.checks;
            match v.finish() {
                Some((_, None)) => {}
                Some((software, Some(m))) => {
                    // Quanta the device issued after the bad one, now recomputed.
                    let issued_after = self.pool.quantum().saturating_sub(m.quantum + 1);
                    fallback =
                        Fallback { quantum: m.quantum, error: DeviceError::Verification(m.reason), issued_after };
                    self.pool = software;
                }
                // Not a device fault (a bug); the pool keeps the device's checked credits.
                None => fallback.error = DeviceError::Protocol("the verifier thread panicked".into()),
            }
        }
        self.fallback = Some(fallback);
    }

    /// Falls back now if the verifier has found a mismatch.
    fn poll_verifier(&mut self) {
        if self.verifier.as_ref().is_some_and(Verifier::mismatched) {
            self.drop_device(DeviceError::Verification("found by the verifier".into()));
        }
    }

    /// Waits until the verifier has checked every quantum the device answered, and
    /// falls back if one was wrong: afterwards [`Offload::allocator`] holds verified credits
    /// and [`Offload::fallback`] is final. Free with `sync` and `invariants`.
    pub fn settle(&mut self) {
        self.queue_pending();
        if let Some(v) = self.verifier.as_mut() {
            v.drain();
        }
        self.poll_verifier();
    }

    /// Where the pool is between quanta ([`Allocator::savepoint`]), to come back to with
    /// [`Offload::roll_back`].
    pub fn savepoint(&self) -> Savepoint {
        self.pool.savepoint()
    }

    /// Puts the pool back at `savepoint`, taken before a quantum whose result the caller
    /// could not keep (e.g. its commit to a ledger failed). Waits for the verifier first
    /// ([`Offload::settle`]); on a device, the credits are written back there (read back
    /// and compared) and the verifier restarts from them. A device that fails this is
    /// dropped, with the reason in [`Offload::fallback`]: the pool is right either way.
    /// A savepoint of another user count is refused and changes nothing.
    pub fn roll_back(&mut self, savepoint: Savepoint) -> Result<()> {
        self.settle();
        self.pool.roll_back(savepoint)?;
        // The verifier's copy of the pool is at the quantum rolled back: it stops here
        // (everything it had was checked by `settle`) and starts again below.
        if let Some(v) = self.verifier.take() {
            self.checks = v.checks;
        }
        let Some(limits) = self.device.as_ref().map(|d| d.limits) else { return Ok(()) };
        let shape = match device_shape(&self.pool, &limits) {
            Ok(shape) => shape,
            Err(e) => {
                self.drop_device(e);
                return Ok(());
            }
        };
        if let Err(e) = self.restore(&shape.credits) {
            self.drop_device(e);
            return Ok(());
        }
        self.credit_words = shape.credits;
        if matches!(self.verify, Verify::Async | Verify::Sample(_)) {
            match Verifier::start(self.pool.clone()) {
                Ok(mut v) => {
                    v.checks = self.checks;
                    self.verifier = Some(v);
                }
                Err(e) => self.drop_device(DeviceError::Io {
                    what: "starting the verifier thread".into(),
                    source: std::sync::Arc::new(e),
                }),
            }
        }
        Ok(())
    }

    /// Runs one quantum (on the device while it is healthy). Errors are the software's
    /// (a wrong demand length, a credit overflow) and change nothing.
    ///
    /// A device quantum is three steps: [`Offload::admit`] (the demands in device words,
    /// through the ABI's rule), [`Offload::submit`] (the device computes while the
    /// caller checks earlier quanta, or in `sync` computes this one), [`Offload::judge`]
    /// (a fault or a wrong result drops the device and the software answers; otherwise
    /// the result is used, checked as the verification mode says).
    pub fn allocate(&mut self, demand: &[u64]) -> Result<&[u64]> {
        let start = Instant::now();
        self.timing = Timing::default();
        self.poll_verifier();
        if self.device.is_none() || demand.len() != self.pool.users().len() {
            return self.pool.allocate(demand);
        }
        if let Err(e) = self.admit(demand) {
            self.drop_device(e);
            return self.pool.allocate(demand);
        }
        let submitted = self.submit(demand);
        let result = self.judge(demand, submitted);
        self.timing.critical_path_ns = start.elapsed().as_nanos() as u64;
        result?;
        Ok(self.pool.allocations())
    }

    /// Sends the admitted demands to the device and waits for its answer. Meanwhile the
    /// caller works: in `sync` the software's own quantum; otherwise checks of earlier
    /// quanta, as many as fit in the time the device is expected to take.
    fn submit(&mut self, demand: &[u64]) -> Submitted {
        let (budget, quantum) = (self.overlap_budget(), self.pool.quantum());
        let mut submitted = Submitted { answer: Ok(()), software: None, queue_failed: false, quantum };
        let Some(dev) = self.device.as_mut() else {
            submitted.answer = Err(DeviceError::Protocol("no device to submit to".into()));
            return submitted;
        };
        // While the verifier thread checks, the wait for the device leaves it the CPU.
        if let Some(v) = self.verifier.as_ref() {
            dev.accelerator.set_blocking_wait(v.busy());
        }
        let (pool, verifier, verify) = (&mut self.pool, &mut self.verifier, self.verify);
        let (pending, credit_words) = (&mut self.pending, &self.credit_words);
        let (software, queue_failed) = (&mut submitted.software, &mut submitted.queue_failed);
        let mut overlapped = false;
        let sent = Instant::now();
        let mut meanwhile = || {
            overlapped = true;
            match (verify, verifier.as_mut()) {
                (Verify::Sync, _) => {
                    let begin = Instant::now();
                    let r = pool.allocate(demand).map(|_| ());
                    *software = Some((r, begin.elapsed().as_nanos() as u64));
                }
                (_, Some(v)) => {
                    if let Some(job) = pending.take() {
                        *queue_failed = !queue(v, job, credit_words, budget);
                    }
                    v.help(sent, budget)
                }
                (_, None) => {}
            }
        };
        submitted.answer =
            dev.accelerator.quantum_into_overlapped(dev.settings, &self.words, &mut self.out, &mut meanwhile);
        self.overlaps = overlapped;
        self.timing.round_trip_ns = sent.elapsed().as_nanos() as u64;
        submitted
    }

    /// What the device answered, judged: a fault drops the device and the software's
    /// quantum stands; a result is checked as the verification mode says, and used.
    fn judge(&mut self, demand: &[u64], submitted: Submitted) -> Result<()> {
        let Submitted { answer, software, queue_failed, quantum } = submitted;
        if queue_failed {
            self.drop_device_after(quantum, DeviceError::Protocol("the verifier queue is gone".into()));
            return self.pool.allocate(demand).map(|_| ());
        }
        self.timing.device_ns = self.out.device_ns;
        let n = demand.len();
        let fault = match answer {
            Ok(()) if self.out.alloc.len() == n && self.out.credits.len() == n => None,
            Ok(()) => Some(DeviceError::Protocol(format!(
                "the device returned {} results for {n} users",
                self.out.alloc.len()
            ))),
            Err(e) => Some(e),
        };
        if let Some(e) = fault {
            self.drop_device_after(quantum, e);
            // In `sync` the software may have answered the quantum already.
            return match software {
                Some((r, _)) => r,
                None => self.pool.allocate(demand).map(|_| ()),
            };
        }
        if self.out.device_ns > 0 {
            let (average, now) = (self.device_average_ns, self.out.device_ns);
            self.device_average_ns = if average == 0 { now } else { (7 * average + now) / 8 };
        }
        match self.verify {
            Verify::Sync => self.verify_sync(demand, software),
            Verify::Async | Verify::Sample(_) | Verify::Invariants => self.use_checked(demand),
        }
    }

    /// The demands in device words, admitted by the ABI's rule with the device's
    /// balances; the named reason if not.
    fn admit(&mut self, demand: &[u64]) -> std::result::Result<(), DeviceError> {
        let Some(dev) = self.device.as_ref() else { return Ok(()) };
        // One pass: the verdict, and the words to send.
        let QuantumSettings { mode, fair, guaranteed } = dev.settings;
        if abi::admits(
            &dev.limits,
            mode.word(),
            fair as u64,
            guaranteed as u64,
            &self.credit_words,
            demand,
            &mut self.words,
        ) {
            return Ok(());
        }
        // Refused: say why, naming the user as the pool knows it.
        admit_quantum(&self.pool, &dev.limits, demand)
    }

    /// How long the caller may work while the device computes: the device's average
    /// time (a check expected to end before the device's answer costs the caller nothing;
    /// one that ends a little after costs it less than waking the verifier thread does on
    /// a core it shares), and nothing for a device that does not let it.
    fn overlap_budget(&self) -> std::time::Duration {
        let ns = if self.overlaps { self.device_average_ns } else { 0 };
        std::time::Duration::from_nanos(ns)
    }

    /// `sync`: the software computes the quantum (unless it did while the device
    /// computed: `software`, with its time) and the device's result must equal it.
    fn verify_sync(&mut self, demand: &[u64], software: Option<(Result<()>, u64)>) -> Result<()> {
        let (computed, ns) = software.unwrap_or_else(|| {
            let begin = Instant::now();
            let r = self.pool.allocate(demand).map(|_| ());
            (r, begin.elapsed().as_nanos() as u64)
        });
        self.timing.verifier_ns = ns;
        // The quantum's index: the software counted it if it took it.
        let q = self.pool.quantum() - u64::from(computed.is_ok());
        if let Err(e) = computed {
            // The device ran a quantum the software refuses: put its credits back.
            let back = std::mem::take(&mut self.credit_words);
            if let Err(fault) = self.restore(&back) {
                self.drop_device(fault);
            }
            self.credit_words = back;
            return Err(e);
        }
        if let Some(reason) = differs(&self.out.alloc, &self.out.credits, self.pool.allocations(), self.pool.credits())
        {
            self.drop_device_after(q, DeviceError::Verification(reason));
        } else {
            self.device_quanta += 1;
            std::mem::swap(&mut self.credit_words, &mut self.out.credits);
        }
        Ok(())
    }

    /// `async`, `sample:K`, `invariants`: the invariant check, then the device's result
    /// is the quantum's; the verifier gets it to recompute.
    fn use_checked(&mut self, demand: &[u64]) -> Result<()> {
        // The last quantum's check, if the device gave no wait to queue it in.
        self.queue_pending();
        let (policy, params) = (self.pool.policy(), self.pool.params());
        let words = invariants::Words {
            demand: &self.words,
            before: &self.credit_words,
            alloc: &self.out.alloc,
            after: &self.out.credits,
        };
        if let Err(v) = invariants::check_words(policy, params, &words) {
            self.drop_device(DeviceError::Verification(v.0));
            return self.pool.allocate(demand).map(|_| ());
        }
        let quantum = self.pool.quantum();
        self.pool.commit_words(&self.out.alloc, &self.out.credits);
        self.device_quanta += 1;
        let (verify, budget) = (self.verify, self.overlap_budget());
        if let Some(v) = self.verifier.as_mut() {
            let mut job = v.job();
            job.quantum = quantum;
            job.check = match verify {
                Verify::Sample(k) if quantum.is_multiple_of(k) => verifier::Check::Replay,
                Verify::Sample(_) => verifier::Check::Skip,
                _ => verifier::Check::Running,
            };
            if job.check == verifier::Check::Replay {
                job.before.clear();
                job.before.extend_from_slice(&self.credit_words);
            }
            std::mem::swap(&mut job.demand, &mut self.words);
            std::mem::swap(&mut job.alloc, &mut self.out.alloc);
            self.timing.verifier_ns = v.last_ns;
            // Queued during the next quantum's wait for the device, with the device's
            // credits after this one (`credit_words` until then): its copy costs the
            // caller nothing there. A device that gives no wait gets it now.
            std::mem::swap(&mut self.credit_words, &mut self.out.credits);
            self.pending = Some(job);
            if !(self.overlaps && budget > std::time::Duration::ZERO) {
                self.queue_pending();
            }
            return Ok(());
        }
        std::mem::swap(&mut self.credit_words, &mut self.out.credits);
        Ok(())
    }

    /// Queues the last device quantum for its check (see [`Offload::use_checked`]).
    fn queue_pending(&mut self) {
        let budget = self.overlap_budget();
        let (Some(v), Some(job)) = (self.verifier.as_mut(), self.pending.take()) else { return };
        if !queue(v, job, &self.credit_words, budget) {
            self.drop_device(DeviceError::Protocol("the verifier queue is gone".into()));
        }
    }

    /// Reads the device's balances and checks them against the pool's (a checkpoint of
    /// the device through its registers), after the verifier has caught up
    /// ([`Offload::settle`]). A difference or a fault drops the device. Returns the
    /// pool's balances, the good ones either way.
    pub fn check_device_credits(&mut self) -> &[Credits] {
        self.settle();
        if let Some(dev) = self.device.as_mut() {
            let n = self.pool.users().len();
            let error = match dev.accelerator.read_credits(n) {
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

    /// The pool (allocations, credits, configuration). With `async` or `sample:K` its
    /// credits may be ahead of verification by up to [`VERIFIER_DEPTH`] quanta; call
    /// [`Offload::settle`] first for verified ones.
    pub fn allocator(&self) -> &Allocator {
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

    /// Why the pool left the device, if it did (final after [`Offload::settle`]).
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// Quanta the device answered and whose results were used.
    pub fn device_quanta(&self) -> u64 {
        self.device_quanta
    }

    /// Where the last quantum's time went.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// Which thread recomputed the quanta checked so far (`async`, `sample:K`).
    pub fn checks(&self) -> Checks {
        self.verifier.as_ref().map_or(self.checks, |v| v.checks)
    }
}

/// Queues `job` on `v` with the device's credits after it; wakes the verifier thread
/// unless the check fits in the caller's next wait of `budget`. False if the queue is
/// gone.
fn queue(v: &mut Verifier, mut job: verifier::Job, credits_after: &[u32], budget: std::time::Duration) -> bool {
    job.credits.clear();
    job.credits.extend_from_slice(credits_after);
    let sent = v.send(job);
    if budget.is_zero() || !v.fits(budget) {
        v.wake();
    }
    sent
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{Alpha, Policy, PoolConfig, UserConfig};
    use fairshare_abi::Limits;

    /// What a fake device does wrong, and when (1-based quantum on the device).
    #[derive(Clone, Copy, Debug)]
    enum Fault {
        None,
        Error(u64),
        AllocPlusOne(u64),
        CreditPlusOne(u64),
        AllocAboveDemand(u64),
        CreditsMinted(u64),
        DropUser(u64),
        /// From this quantum on, at the first one where it can: one slice moved from a
        /// borrower to another user who wanted more, credits moved with it. Keeps every
        /// invariant; only a recomputation sees it.
        Swap(u64),
    }

    impl Fault {
        fn at(self) -> u64 {
            match self {
                Fault::Error(q)
                | Fault::AllocPlusOne(q)
                | Fault::CreditPlusOne(q)
                | Fault::AllocAboveDemand(q)
                | Fault::CreditsMinted(q)
                | Fault::DropUser(q)
                | Fault::Swap(q) => q,
                Fault::None => u64::MAX,
            }
        }
    }

    /// A device that computes with the software policy in device words.
    struct Fake {
        pool: Allocator,
        fault: Fault,
        quanta: u64,
        /// The device quantum (1-based) where a `Swap` was applied.
        swapped: std::sync::Arc<std::sync::Mutex<Option<u64>>>,
        /// `Some(ns)`: it computes apart from the caller, lets the caller work meanwhile
        /// and reports `ns` of its own time; `None`: it computes on the caller's thread.
        apart: Option<u64>,
    }

    fn fake(policy: Policy, fault: Fault) -> Fake {
        Fake { pool: pool(policy), fault, quanta: 0, swapped: Default::default(), apart: None }
    }

    /// How the fake devices of the tests compute: on the caller's thread; apart, slowly
    /// (every check fits in the caller's wait); apart, quickly (none fits).
    const APART: [Option<u64>; 3] = [None, Some(1_000_000_000), Some(1)];

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
        fn quantum_into(
            &mut self,
            settings: QuantumSettings,
            demand: &[u32],
            out: &mut QuantumOutput,
        ) -> std::result::Result<(), DeviceError> {
            let guaranteed = settings.guaranteed;
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
                Fault::Swap(q) if q <= self.quanta && self.swapped.lock().unwrap().is_none() => {
                    let g = guaranteed;
                    let from = (0..alloc.len()).find(|&u| alloc[u] > g);
                    let to = (0..alloc.len())
                        .find(|&v| Some(v) != from && alloc[v] >= g && alloc[v] < demand[v] && credits[v] >= 1);
                    if let (Some(u), Some(v)) = (from, to) {
                        (alloc[u], credits[u], alloc[v], credits[v]) =
                            (alloc[u] - 1, credits[u] + 1, alloc[v] + 1, credits[v] - 1);
                        *self.swapped.lock().unwrap() = Some(self.quanta);
                        // The device keeps what it reported.
                        self.write_credits(&credits)?;
                    }
                }
                _ => {}
            }
            *out = QuantumOutput { alloc, credits, cycles: 0, device_ns: self.apart.unwrap_or(0) };
            Ok(())
        }
        fn quantum_into_overlapped(
            &mut self,
            settings: QuantumSettings,
            demand: &[u32],
            out: &mut QuantumOutput,
            meanwhile: &mut dyn FnMut(),
        ) -> std::result::Result<(), DeviceError> {
            if self.apart.is_some() {
                meanwhile();
            }
            self.quantum_into(settings, demand, out)
        }
    }

    fn pool(policy: Policy) -> Allocator {
        Allocator::new(PoolConfig::equal(5, 4, Alpha::new(1, 2).unwrap(), 10).unwrap(), policy).unwrap()
    }

    fn demands() -> Vec<Vec<u64>> {
        (0..30u64).map(|q| (0..5u64).map(|u| (q * 7 + u * 13) % 11).collect()).collect()
    }

    const MODES: [Verify; 5] = [Verify::Sync, Verify::Async, Verify::Sample(1), Verify::Sample(3), Verify::Invariants];

    /// Runs the demands on a fake device with `fault`; every quantum whose result was
    /// used before the fault is checked against the software, and so is everything
    /// after the fallback is final.
    fn run(policy: Policy, fault: Fault, verify: Verify, apart: Option<u64>) -> Offload {
        let device = Fake { apart, ..fake(policy, fault) };
        let mut o = Offload::new(pool(policy), Box::new(device), verify);
        let mut reference = pool(policy);
        for (q, d) in demands().iter().enumerate() {
            let got = o.allocate(d).unwrap().to_vec();
            let want = reference.allocate(d).unwrap().to_vec();
            if (q as u64) + 1 < fault.at() {
                assert_eq!(got, want, "{verify}: allocations equal the software's before the fault");
                assert_eq!(o.allocator().credits(), reference.credits(), "{verify}: credits before the fault");
            }
        }
        o.settle();
        if o.fallback().is_some() || matches!(fault, Fault::None) {
            assert_eq!(
                o.allocator().credits(),
                reference.credits(),
                "{verify}: credits after a fallback are the software's"
            );
            assert_eq!(o.allocator().quantum(), 30);
        }
        o
    }

    #[test]
    fn healthy_device_serves_every_quantum() {
        for policy in Policy::ALL {
            for verify in MODES {
                for apart in APART {
                    let o = run(policy, Fault::None, verify, apart);
                    assert!(o.on_device() && o.fallback().is_none(), "{verify}: {:?}", o.fallback());
                    assert_eq!(o.device_quanta(), 30);
                    // Every quantum recomputed once, by one of the two threads.
                    let checks = o.checks();
                    let recomputed = match verify {
                        Verify::Async | Verify::Sample(1) => 30,
                        Verify::Sample(3) => 10,
                        Verify::Sync | Verify::Invariants => 0,
                        Verify::Sample(_) => unreachable!(),
                    };
                    assert_eq!(checks.total(), recomputed, "{verify} {apart:?}: {checks:?}");
                    // The caller checks while it waits only where the device computes apart:
                    // where the checks fit, nearly all (the thread only takes quanta left
                    // waiting for milliseconds); where they do not, only its probes.
                    match apart {
                        Some(1_000_000_000) if recomputed > 0 => {
                            assert!(checks.while_waiting >= recomputed * 2 / 3, "{verify}: {checks:?}")
                        }
                        Some(_) => {
                            let probes = 30u64.div_ceil(verifier::PROBE_EVERY);
                            assert!(checks.while_waiting <= probes, "{verify} {apart:?}: {checks:?}")
                        }
                        None => assert_eq!(checks.while_waiting, 0, "{verify}: {checks:?}"),
                    }
                }
            }
        }
    }

    /// Quanta rolled back at random points (as when their commit fails) leave the pool,
    /// the device and the verifier where they were: every later quantum equals a
    /// software run that never saw the rolled-back ones, and the device stays in use.
    #[test]
    fn rolled_back_quanta_leave_no_trace_on_device_or_verifier() {
        for policy in Policy::ALL {
            for (verify, apart) in MODES.into_iter().flat_map(|v| APART.map(|a| (v, a))) {
                let device = Fake { apart, ..fake(policy, Fault::None) };
                let mut o = Offload::new(pool(policy), Box::new(device), verify);
                let mut reference = pool(policy);
                for (q, d) in demands().iter().enumerate() {
                    if q % 3 == 1 {
                        let at = o.savepoint();
                        // A quantum on other demands, whose result is thrown away.
                        let other: Vec<u64> = d.iter().map(|x| 10 - x).collect();
                        o.allocate(&other).unwrap();
                        o.roll_back(at).unwrap();
                        assert_eq!(o.allocator().credits(), reference.credits(), "{verify}: rolled back");
                    }
                    let got = o.allocate(d).unwrap().to_vec();
                    assert_eq!(got, reference.allocate(d).unwrap(), "{policy:?} {verify} {apart:?}: quantum {q}");
                    assert_eq!(o.allocator().quantum(), reference.quantum());
                }
                o.settle();
                assert!(o.on_device() && o.fallback().is_none(), "{verify}: {:?}", o.fallback());
                assert_eq!(o.allocator().credits(), reference.credits(), "{verify}");
                // A savepoint of the pool before its users changed (same count, new
                // shares) is refused, and so is one of another shape; nothing changes.
                let mut reshared = o.allocator().clone();
                let stale = reshared.savepoint();
                reshared.set_shares(&[(4, 1); 5]).unwrap();
                assert!(reshared.roll_back(stale).is_err());
                let mut bigger = pool(policy);
                bigger
                    .join(
                        UserConfig::with_alpha("x", 4, Alpha::new(1, 2).unwrap(), Credits::ZERO),
                        crate::PoolChange::Resize,
                    )
                    .unwrap();
                assert!(o.roll_back(bigger.savepoint()).is_err());
                assert_eq!(o.allocator().credits(), reference.credits());
            }
        }
    }

    #[test]
    fn every_fault_falls_back_without_losing_credits() {
        // Seen before the result is used, in every mode.
        let loud = [
            (Fault::Error(4), "timeout", "no completion"),
            (Fault::AllocAboveDemand(7), "verification", "allocation"),
            (Fault::CreditsMinted(3), "verification", "credit"),
            (Fault::DropUser(2), "protocol", "results for 5 users"),
            (Fault::AllocPlusOne(9), "verification", ""),
            (Fault::CreditPlusOne(3), "verification", ""),
        ];
        for (verify, apart) in MODES.into_iter().flat_map(|v| APART.map(|a| (v, a))) {
            for (fault, kind, words) in loud {
                let o = run(Policy::Karma, fault, verify, apart);
                let fb = o.fallback().unwrap();
                assert!(!o.on_device());
                assert_eq!(fb.error.kind(), kind, "{verify} {fault:?}: {fb}");
                assert!(fb.error.to_string().contains(words), "{verify}: {fb}");
                assert_eq!(fb.quantum, fault.at() - 1, "{verify}: {fb}");
                assert_eq!(fb.issued_after, 0, "{verify}: {fb}");
                assert_eq!(o.device_quanta(), fault.at() - 1);
            }
        }
    }

    #[test]
    fn a_wrong_result_that_keeps_every_invariant_is_found_by_recomputation_only() {
        for (verify, apart) in MODES.into_iter().flat_map(|v| APART.map(|a| (v, a))) {
            let device = Fake { apart, ..fake(Policy::Karma, Fault::Swap(5)) };
            let swapped = device.swapped.clone();
            let mut o = Offload::new(pool(Policy::Karma), Box::new(device), verify);
            let mut reference = pool(Policy::Karma);
            let mut differed = Vec::new();
            for d in demands() {
                let got = o.allocate(&d).unwrap().to_vec();
                differed.push(got != reference.allocate(&d).unwrap());
            }
            o.settle();
            let at = swapped.lock().unwrap().expect("the demands offer a swap");
            match verify {
                Verify::Invariants | Verify::Sample(3)
                    if verify == Verify::Invariants || !(at - 1).is_multiple_of(3) =>
                {
                    assert!(o.fallback().is_none() && o.on_device(), "{verify}: not seen ({at})");
                    assert!(differed[at as usize - 1], "{verify}: the wrong allocation was issued");
                }
                _ => {
                    let fb = o.fallback().unwrap();
                    assert_eq!(fb.quantum, at - 1, "{verify}: {fb}");
                    assert!(fb.error.to_string().contains("differs from the software's"), "{verify}: {fb}");
                    assert_eq!(o.allocator().credits(), reference.credits(), "{verify}: the software's credits");
                    assert_eq!(o.allocator().quantum(), 30);
                    // Found at once in sync, before the result is used; otherwise by the
                    // verifier, after the device's result for it and maybe later ones were.
                    if verify == Verify::Sync {
                        assert_eq!((fb.issued_after, o.device_quanta()), (0, at - 1), "{fb}");
                    } else {
                        assert_eq!(o.device_quanta(), at + fb.issued_after, "{verify}: {fb}");
                    }
                }
            }
        }
    }

    #[test]
    fn async_falls_back_at_the_mismatch_with_the_software_credits() {
        // However far the verifier lags, the mismatch is named at the quantum it happened
        // in, and the software's credits cover every later quantum. (How many device quanta
        // followed depends on the scheduling; the soak bounds them.)
        let device = fake(Policy::Karma, Fault::Swap(2));
        let swapped = device.swapped.clone();
        let mut o = Offload::new(pool(Policy::Karma), Box::new(device), Verify::Async);
        let mut reference = pool(Policy::Karma);
        let mut issued = Vec::new();
        for d in demands() {
            issued.push(o.allocate(&d).unwrap().to_vec());
            reference.allocate(&d).unwrap();
        }
        o.settle();
        let fb = o.fallback().unwrap().clone();
        let at = swapped.lock().unwrap().unwrap();
        assert_eq!(fb.quantum, at - 1);
        assert!(fb.to_string().contains("dropped after"), "{fb}");
        assert_eq!(o.allocator().credits(), reference.credits());
        // Every later quantum is the software's.
        let mut reference_after = reference.clone();
        for d in demands() {
            assert_eq!(o.allocate(&d).unwrap(), reference_after.allocate(&d).unwrap());
        }
        assert!(!o.on_device());
    }

    #[test]
    fn pools_the_device_cannot_hold_run_on_software() {
        let config = PoolConfig::equal(5, 4, Alpha::new(1, 2).unwrap(), -1).unwrap();
        let o = Offload::new(
            Allocator::new(config, Policy::Karma).unwrap(),
            Box::new(fake(Policy::Karma, Fault::None)),
            Verify::Sync,
        );
        let fb = o.fallback().unwrap();
        assert!(fb.error.to_string().contains("whole credits from 0"), "{fb}");
        assert_eq!(fb.error.kind(), "unsupported");
        for verify in MODES {
            let mut o = Offload::new(pool(Policy::Karma), Box::new(fake(Policy::Karma, Fault::None)), verify);
            o.allocate(&[1, 2, 3, 1 << 31, 0]).unwrap();
            let fb = o.fallback().unwrap().to_string();
            assert!(fb.contains("user `u3` demands 2147483648") && fb.contains("status code 3"), "{fb}");
        }
    }

    #[test]
    fn bad_demand_changes_nothing_and_keeps_the_device() {
        for verify in MODES {
            let mut o = Offload::new(pool(Policy::Karma), Box::new(fake(Policy::Karma, Fault::None)), verify);
            assert!(o.allocate(&[1, 2]).is_err());
            assert!(o.on_device());
            assert_eq!(o.allocator().quantum(), 0);
            assert_eq!(o.check_device_credits(), pool(Policy::Karma).credits());
            assert!(o.on_device());
        }
    }

    #[test]
    fn verify_modes_parse_and_print_back() {
        for s in ["sync", "async", "sample:1", "sample:100", "invariants"] {
            assert_eq!(s.parse::<Verify>().unwrap().to_string(), s);
        }
        for (bad, words) in [("full", "use sync"), ("sample:0", "from 1"), ("sample:x", "from 1"), ("", "use sync")] {
            assert!(bad.parse::<Verify>().unwrap_err().0.contains(words), "{bad}");
        }
    }
}
