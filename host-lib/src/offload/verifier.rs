//! The verifier thread of [`super::Verify::Async`] and [`super::Verify::Sample`]: the
//! exact software recomputation of device quanta off the caller's critical path.
//!
//! The caller sends each quantum the device answered (its demands, and the device's
//! allocations and credits after; the credits before for a sampled quantum) over a
//! bounded channel of [`DEPTH`] quanta, and gets the buffers back on a second channel
//! to reuse them: the steady state allocates nothing. The thread keeps its own copy of
//! the pool, a software [`Allocator`]:
//! - `async`: it computes every quantum from its own credits and compares;
//! - `sample:K`: it replays one quantum in K from the device's credits before it, and
//!   skips the others;
//! - after the first mismatch (at quantum `q`) it stops comparing and computes every
//!   later quantum from the software's credits after `q`, so that when the caller
//!   stops it ([`Verifier::finish`]) its pool is exactly where a software run from the
//!   software's own credits after `q` would be.
//!
//! The thread runs at the lowest priority (nice 19): it uses the CPU time that the
//! caller and the device leave, and the bounded channel makes the caller wait when it
//! falls behind.

use crate::Allocator;
use crossbeam::channel::{self, Receiver, Sender};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Quanta the device may run ahead of verification: the job channel's depth. When it
/// is full the caller waits for the verifier (back-pressure, never a dropped check).
pub const DEPTH: usize = 64;

/// The verifier thread's nice value: the lowest priority, so that it takes the CPU
/// time the caller and the device leave (on few cores, a device emulated on the host
/// and the caller would otherwise wait for it); when it falls [`DEPTH`] quanta behind,
/// the caller waits for it anyway.
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
    /// Nanoseconds the verifier spent on it.
    pub verify_ns: u64,
    /// Whether the verifier recomputed it (not a skipped quantum of `sample:K`).
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

/// What the thread found, readable without waiting for it.
#[derive(Default)]
struct Found {
    any: AtomicBool,
    first: Mutex<Option<Mismatch>>,
}

/// The verifier thread and its channels, owned by the offloaded pool.
pub(super) struct Verifier {
    jobs: Option<Sender<Job>>,
    done: Receiver<Job>,
    spare: Vec<Job>,
    /// Jobs sent and not yet back.
    outstanding: usize,
    found: Arc<Found>,
    thread: Option<JoinHandle<Allocator>>,
    /// Nanoseconds of the last job that came back.
    pub last_ns: u64,
}

impl Verifier {
    /// Starts the thread with its own copy of `pool` (the state before the next quantum).
    pub fn start(pool: Allocator) -> std::io::Result<Verifier> {
        let (jobs, queue) = channel::bounded::<Job>(DEPTH);
        // Every job ever made is outstanding or spare, at most DEPTH + 2 of them: the
        // return channel never blocks the thread.
        let (back, done) = channel::bounded::<Job>(DEPTH + 4);
        let found = Arc::new(Found::default());
        let shared = found.clone();
        let thread = std::thread::Builder::new().name("fairshare-verifier".into()).spawn(move || {
            // Background work: the caller's thread and the device come first. Where
            // the priority cannot be lowered, it runs at the caller's.
            let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), BACKGROUND);
            run(pool, &queue, &back, &shared)
        })?;
        Ok(Verifier {
            jobs: Some(jobs),
            done,
            spare: Vec::new(),
            outstanding: 0,
            found,
            thread: Some(thread),
            last_ns: 0,
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

    /// Queues `job`; waits while [`DEPTH`] quanta are queued. False if the thread is gone.
    pub fn send(&mut self, job: Job) -> bool {
        match &self.jobs {
            Some(tx) if tx.send(job).is_ok() => {
                self.outstanding += 1;
                true
            }
            _ => false,
        }
    }

    /// Whether quanta sent are still being checked.
    pub fn busy(&mut self) -> bool {
        self.collect();
        self.outstanding > 0
    }

    /// Whether a mismatch has been found (a relaxed read: cheap every quantum).
    pub fn mismatched(&self) -> bool {
        self.found.any.load(Ordering::Acquire)
    }

    /// Waits until every queued quantum has been verified.
    pub fn drain(&mut self) {
        while self.outstanding > 0 {
            match self.done.recv() {
                Ok(job) => self.returned(job),
                Err(_) => break,
            }
        }
    }

    /// Stops the thread after it has verified everything queued. Returns its pool and
    /// the first mismatch, if any; `None` if the thread panicked (a bug: its pool is
    /// lost).
    pub fn finish(mut self) -> Option<(Allocator, Option<Mismatch>)> {
        self.jobs = None;
        let pool = self.thread.take()?.join().ok()?;
        let first = self.found.first.lock().map(|mut m| m.take()).unwrap_or(None);
        Some((pool, first))
    }
}

impl Drop for Verifier {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The thread: verify jobs until the caller hangs up; return the pool.
fn run(mut pool: Allocator, queue: &Receiver<Job>, back: &Sender<Job>, found: &Found) -> Allocator {
    let mut demand: Vec<u64> = Vec::new();
    let mut mismatched = false;
    for mut job in queue.iter() {
        let start = Instant::now();
        let check = if mismatched { Check::Running } else { job.check };
        if check != Check::Skip {
            if check == Check::Replay {
                pool.restore_words(job.quantum, &job.before);
            }
            demand.clear();
            demand.extend(job.demand.iter().map(|&d| d as u64));
            let wrong = match pool.allocate(&demand) {
                Ok(_) if mismatched => None,
                Ok(_) => super::differs(&job.alloc, &job.credits, pool.allocations(), pool.credits()),
                // The software refuses what the device computed (a credit overflow): its
                // balances stay, as a software run's would, and the quantum still counts,
                // since the device issued it.
                Err(e) => {
                    pool.skip_quantum();
                    Some(format!("the software refuses a quantum the device computed: {e}"))
                }
            };
            if let (Some(reason), false) = (wrong, mismatched) {
                mismatched = true;
                if let Ok(mut first) = found.first.lock() {
                    *first = Some(Mismatch { quantum: job.quantum, reason });
                }
                found.any.store(true, Ordering::Release);
            }
        }
        job.verify_ns = start.elapsed().as_nanos() as u64;
        job.checked = check != Check::Skip;
        if back.send(job).is_err() {
            break;
        }
    }
    pool
}
