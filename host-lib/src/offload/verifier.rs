//! The exact software recomputation of device quanta in [`super::Verify::Async`] and
//! [`super::Verify::Sample`], off the caller's critical path.
//!
//! The caller queues each quantum the device answered (its demands, and the device's
//! allocations and credits after; the credits before for a sampled quantum) on a
//! bounded channel of [`DEPTH`] quanta, and gets the buffers back to reuse them: the
//! steady state allocates nothing. One software [`Allocator`], the verifier's own copy
//! of the pool, checks them in order:
//! - `async`: it computes every quantum from its own credits and compares;
//! - `sample:K`: it replays one quantum in K from the device's credits before it, and
//!   skips the others;
//! - after the first mismatch (at quantum `q`) it stops comparing and computes every
//!   later quantum from the software's credits after `q`, so that when the caller
//!   stops it ([`Verifier::finish`]) its pool is exactly where a software run from the
//!   software's own credits after `q` would be.
//!
//! Two threads do the checking, whichever is idle:
//! - **the caller, while it waits for the device** ([`Verifier::help`]): a device that
//!   computes apart from the caller gives it the device's compute time, which it would
//!   otherwise spend spinning; it checks queued quanta then, as long as the next check
//!   is expected to end before the device answers (an average of the checks so far
//!   against the time the caller gives). On few cores this is the cheapest place: no
//!   thread is woken, and the caller's core does nothing else meanwhile;
//! - **the verifier thread**, at the lowest priority (nice 19), for what the caller
//!   cannot fit in its waits: the caller wakes it when a check does not fit, and it
//!   wakes by itself every [`LAG`] to take quanta queued for longer than that (a caller
//!   that stopped sending quanta).
//!
//! The pool and the queue's head are taken under one lock, so the quanta are checked in
//! the order they were queued, whoever checks them. When [`DEPTH`] quanta are queued the
//! caller checks one itself before it queues another (back-pressure, never a dropped
//! check).

use crate::Allocator;
use crossbeam::channel::{self, Receiver, Sender, TryRecvError, TrySendError};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Quanta the device may run ahead of verification: the job channel's depth. When it
/// is full the caller checks a quantum before it queues the next.
pub const DEPTH: usize = 64;

/// How long a queued quantum may wait for the caller's next wait before the verifier
/// thread takes it by itself.
pub const LAG: Duration = Duration::from_millis(2);

/// One in this many of the caller's waits checks a quantum even when the checks seem
/// not to fit ([`Verifier::help`]).
pub(super) const PROBE_EVERY: u64 = 16;

/// The verifier thread's nice value: the lowest priority, so that it takes the CPU
/// time the caller and the device leave (on few cores, a device emulated on the host
/// and the caller would otherwise wait for it).
const BACKGROUND: i32 = 19;

/// One device quantum to verify; its buffers travel back to be reused.
#[derive(Default)]
pub(super) struct Job {
    /// Quanta before this one (the pool's counter before it).
    pub quantum: u64,
    /// Demands, device words.
    pub demand: Vec<u32>,
    /// The device's allocations.
    pub alloc: Vec<u32>,
    /// The device's credits after.
    pub credits: Vec<u32>,
    /// The device's credits before (sampled quanta only).
    pub before: Vec<u32>,
    /// Recompute this quantum from `before` (`sample:K`) or from the verifier's own
    /// credits (`async`, and every quantum after a mismatch).
    pub check: Check,
    /// Nanoseconds its check took, of wall time and of the checking thread's CPU time
    /// (without the time it waited for a core).
    pub verify_ns: u64,
    pub cpu_ns: u64,
    /// Whether it was recomputed (not a skipped quantum of `sample:K`).
    pub checked: bool,
}

/// What the verifier does with a job before any mismatch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Check {
    /// Nothing (an unsampled quantum of `sample:K`); kept for replay after a mismatch.
    #[default]
    Skip,
    /// Recompute from the verifier's own credits (`async`).
    Running,
    /// Recompute from the device's credits before the quantum (`sample:K`).
    Replay,
}

/// The first mismatch: at which quantum (quanta before it) and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Mismatch {
    pub quantum: u64,
    pub reason: String,
}

/// The software side of the checks, under the lock.
struct Checker {
    pool: Allocator,
    /// The demands in the pool's units (reused).
    demand: Vec<u64>,
    /// A mismatch was found: later quanta are only computed.
    mismatched: bool,
}

/// What the caller and the thread share.
struct Shared {
    /// The checker; the queue's head is taken only while it is held.
    checker: Mutex<Checker>,
    queue: Receiver<Job>,
    /// Jobs the thread checked, back to the caller.
    back: Sender<Job>,
    /// A mismatch was found (cheap to poll); the first one is in `first`.
    any: AtomicBool,
    first: Mutex<Option<Mismatch>>,
    /// The caller asks the thread to check what is queued now.
    urgent: AtomicBool,
    /// The thread is checking.
    working: AtomicBool,
    /// Jobs checked so far (by either side).
    checked: AtomicU64,
    /// The thread is to end.
    stop: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Checker> {
        // A panic while checking is a bug that `finish` reports; the state is still the
        // pool's last one.
        self.checker.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Checks the queue's head under `checker`; `None` if the queue is empty.
    fn check_next(&self, checker: &mut Checker) -> Option<Job> {
        let mut job = match self.queue.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => return None,
        };
        check(checker, &mut job, self);
        self.checked.fetch_add(1, Ordering::Release);
        Some(job)
    }
}

/// The checks of an offloaded pool: its queue, the thread, and the caller's share.
pub(super) struct Verifier {
    jobs: Sender<Job>,
    shared: Arc<Shared>,
    /// Jobs the thread has checked.
    done: Receiver<Job>,
    spare: Vec<Job>,
    /// Jobs queued and not yet back.
    outstanding: usize,
    thread: Option<JoinHandle<()>>,
    /// Nanoseconds of the last check that came back.
    pub last_ns: u64,
    /// A running average of the CPU nanoseconds of the caller's checks (0: none yet):
    /// what a check costs it. (The thread's checks do not count: on a core it shares,
    /// they run slower.)
    average_ns: u64,
    /// Calls of [`Verifier::help`] so far.
    helps: u64,
    /// Who checked the quanta so far.
    pub checks: super::Checks,
}

impl Verifier {
    /// Starts the thread with the verifier's own copy of `pool` (the state before the
    /// next quantum).
    pub fn start(pool: Allocator) -> std::io::Result<Verifier> {
        let (jobs, queue) = channel::bounded::<Job>(DEPTH);
        // Every job ever made is outstanding or spare, at most DEPTH + 2 of them: the
        // return channel never blocks the thread.
        let (back, done) = channel::bounded::<Job>(DEPTH + 4);
        let shared = Arc::new(Shared {
            checker: Mutex::new(Checker { pool, demand: Vec::new(), mismatched: false }),
            queue,
            back,
            any: AtomicBool::new(false),
            first: Mutex::new(None),
            urgent: AtomicBool::new(false),
            working: AtomicBool::new(false),
            checked: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let theirs = shared.clone();
        let thread = std::thread::Builder::new().name("fairshare-verifier".into()).spawn(move || {
            // Background work: the caller's thread and the device come first. Where
            // the priority cannot be lowered, it runs at the caller's.
            let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), BACKGROUND);
            run(&theirs)
        })?;
        Ok(Verifier {
            jobs,
            shared,
            done,
            spare: Vec::new(),
            outstanding: 0,
            thread: Some(thread),
            last_ns: 0,
            average_ns: 0,
            helps: 0,
            checks: super::Checks::default(),
        })
    }

    /// A job to fill: a returned one if any, else a new one.
    pub fn job(&mut self) -> Job {
        self.collect();
        self.spare.pop().unwrap_or_default()
    }

    /// Takes back the jobs the thread has finished.
    fn collect(&mut self) {
        while let Ok(job) = self.done.try_recv() {
            self.checks.by_thread += u64::from(job.checked);
            self.returned(job);
        }
    }

    fn returned(&mut self, job: Job) {
        self.outstanding -= 1;
        // Only quanta that were recomputed say what a check costs (not skipped ones).
        if job.checked {
            self.last_ns = job.verify_ns;
        }
        self.spare.push(job);
    }

    /// Counts a check the caller made, for the average.
    fn checked_here(&mut self, job: &Job) {
        if job.checked {
            let (average, now) = (self.average_ns, job.cpu_ns);
            self.average_ns = if average == 0 { now } else { (7 * average + now) / 8 };
        }
    }

    /// Checks the queue's head on the caller's thread, waiting for the lock if the
    /// thread holds it. False if nothing was queued.
    fn check_one_here(&mut self) -> bool {
        let shared = self.shared.clone();
        let mut checker = shared.lock();
        match shared.check_next(&mut checker) {
            Some(job) => {
                drop(checker);
                self.checked_here(&job);
                self.checks.on_demand += u64::from(job.checked);
                self.returned(job);
                true
            }
            None => false,
        }
    }

    /// Queues `job`. When [`DEPTH`] quanta are queued, the caller first checks one
    /// itself. False if the queue is gone (a bug).
    pub fn send(&mut self, mut job: Job) -> bool {
        loop {
            match self.jobs.try_send(job) {
                Ok(()) => {
                    self.outstanding += 1;
                    return true;
                }
                Err(TrySendError::Full(back)) => {
                    job = back;
                    self.check_one_here();
                }
                Err(TrySendError::Disconnected(_)) => return false,
            }
        }
    }

    /// The caller's share, while it waits for the device: checks queued quanta as long
    /// as the next one is expected to end within `budget` of `since` (by the average of
    /// the caller's checks so far) and the thread is not checking. One call in
    /// [`PROBE_EVERY`] checks one quantum whatever the average says, so that the average
    /// follows the cost of a check when it falls.
    pub fn help(&mut self, since: Instant, budget: Duration) {
        let shared = self.shared.clone();
        let mut probe = self.helps.is_multiple_of(PROBE_EVERY) && !budget.is_zero();
        self.helps += 1;
        while !shared.queue.is_empty() {
            let expected = Duration::from_nanos(self.average_ns);
            if !probe && since.elapsed() + expected > budget {
                break;
            }
            probe = false;
            // The thread holds the lock while it checks: leave it the work.
            let Ok(mut checker) = shared.checker.try_lock() else { break };
            let Some(job) = shared.check_next(&mut checker) else { break };
            drop(checker);
            self.checked_here(&job);
            self.checks.while_waiting += u64::from(job.checked);
            self.returned(job);
        }
    }

    /// Whether a check is expected to fit in a wait of `budget`: the caller's next wait
    /// will then take what is queued, otherwise the thread should.
    pub fn fits(&self, budget: Duration) -> bool {
        Duration::from_nanos(self.average_ns) <= budget
    }

    /// Asks the thread to check what is queued now.
    pub fn wake(&self) {
        self.shared.urgent.store(true, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// Whether the thread is checking now (it then needs the CPU the caller's waits
    /// could leave it).
    pub fn busy(&self) -> bool {
        self.shared.working.load(Ordering::Acquire)
    }

    /// Whether a mismatch has been found (cheap every quantum).
    pub fn mismatched(&self) -> bool {
        self.shared.any.load(Ordering::Acquire)
    }

    /// Checks everything queued (on the caller's thread, after the thread's current
    /// check) and takes every job back.
    pub fn drain(&mut self) {
        while self.check_one_here() {}
        // Whatever the thread checked went back before it let go of the lock.
        self.collect();
        debug_assert_eq!(self.outstanding, 0);
    }

    /// Checks everything queued and stops the thread. Returns the verifier's pool and
    /// the first mismatch, if any; `None` if a check panicked (a bug: its pool is not
    /// to be trusted).
    pub fn finish(mut self) -> Option<(Allocator, Option<Mismatch>)> {
        self.drain();
        let panicked = self.stop_thread() || self.shared.checker.is_poisoned();
        let first = self.shared.first.lock().map(|mut m| m.take()).unwrap_or(None);
        let pool = self.shared.lock().pool.clone();
        (!panicked).then_some((pool, first))
    }

    /// Ends the thread; true if it had panicked.
    fn stop_thread(&mut self) -> bool {
        let Some(t) = self.thread.take() else { return false };
        self.shared.stop.store(true, Ordering::Release);
        t.thread().unpark();
        t.join().is_err()
    }
}

impl Drop for Verifier {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// The thread: sleeps until woken ([`Verifier::wake`]) or [`LAG`] passes, then checks
/// what is queued if it was asked to, or if a job queued before its last wake-up is
/// still waiting; ends when told to.
fn run(shared: &Shared) {
    let mut seen_pushed = 0u64;
    let mut seen_checked = 0u64;
    loop {
        std::thread::park_timeout(LAG);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let urgent = shared.urgent.swap(false, Ordering::AcqRel);
        let checked = shared.checked.load(Ordering::Acquire);
        // Jobs that were queued at the last wake-up and are not all checked yet.
        let stale = checked < seen_checked + seen_pushed;
        seen_checked = checked;
        seen_pushed = shared.queue.len() as u64;
        if !(urgent || stale) {
            continue;
        }
        shared.working.store(true, Ordering::Release);
        let mut checker = shared.lock();
        while let Some(job) = shared.check_next(&mut checker) {
            if shared.back.send(job).is_err() {
                break;
            }
        }
        drop(checker);
        shared.working.store(false, Ordering::Release);
    }
}

/// Checks one job with the verifier's pool, recording the first mismatch.
fn check(checker: &mut Checker, job: &mut Job, shared: &Shared) {
    let start = Instant::now();
    let cpu_start = cpu_now();
    let check = if checker.mismatched { Check::Running } else { job.check };
    if check != Check::Skip {
        let pool = &mut checker.pool;
        if check == Check::Replay {
            pool.restore_words(job.quantum, &job.before);
        }
        checker.demand.clear();
        checker.demand.extend(job.demand.iter().map(|&d| d as u64));
        let wrong = match pool.allocate(&checker.demand) {
            Ok(_) if checker.mismatched => None,
            Ok(_) => super::differs(&job.alloc, &job.credits, pool.allocations(), pool.credits()),
            // The software refuses what the device computed (a credit overflow): its
            // balances stay, as a software run's would, and the quantum still counts,
            // since the device issued it.
            Err(e) => {
                pool.skip_quantum();
                Some(format!("the software refuses a quantum the device computed: {e}"))
            }
        };
        if let (Some(reason), false) = (wrong, checker.mismatched) {
            checker.mismatched = true;
            if let Ok(mut first) = shared.first.lock() {
                *first = Some(Mismatch { quantum: job.quantum, reason });
            }
            shared.any.store(true, Ordering::Release);
        }
    }
    job.verify_ns = start.elapsed().as_nanos() as u64;
    job.cpu_ns = cpu_now().saturating_sub(cpu_start);
    job.checked = check != Check::Skip;
}

/// The calling thread's CPU time, in nanoseconds.
fn cpu_now() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(t.tv_nsec as u64)
}
