//! How a host and the emulator wait for each other over their shared memory: spin while
//! the other side is expected within microseconds ([`Spinner`]), then block on a futex
//! in the shared mapping, so that neither burns a core while idle and neither sleeps a
//! fixed time while the other is busy.
//!
//! Three words of the BAR window, beyond the register map, carry it (a real device has
//! none of them: its host polls the completion record, see [`crate::handle`]):
//! - [`KICK`]: the host adds one after every doorbell and credit command; the
//!   emulator, when idle, blocks on it ([`sleep_while`] its last value);
//! - [`DEVICE_ASLEEP`] and [`HOST_ASLEEP`]: set by a side while it blocks, so that the
//!   other makes the wake system call only when someone sleeps ([`wake`]).
//!
//! No wake-up is lost: the sleeper sets its flag before the futex compares the word,
//! the waker changes the word before it reads the flag (both sequentially consistent),
//! so either the waker sees the flag and wakes, or the futex sees the new word and does
//! not sleep. Every sleep also has a timeout, so a lost peer costs a timeout, never a
//! hang.

use crate::mmio::{OutOfBounds, Region};
use rustix::thread::futex;
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The host's command counter (BAR window offset).
pub const KICK: usize = 0x800;
/// Non-zero while the emulator blocks on [`KICK`].
pub const DEVICE_ASLEEP: usize = 0x804;
/// Non-zero while the host blocks on a completion record or a credit acknowledgement.
pub const HOST_ASLEEP: usize = 0x808;

/// How long the emulator spins, idle, before it blocks: longer than the host's time
/// between back-to-back quanta of a mid-sized pool, so that those never pay a wake-up.
pub const DEVICE_SPIN: Duration = Duration::from_micros(200);

/// How long a host spins for a completion before it blocks, when nothing else of its
/// needs the CPU: a quantum of up to some thousands of users is answered within it.
pub const HOST_SPIN: Duration = Duration::from_micros(100);

/// How long a host spins before it blocks when another of its threads needs the CPU
/// ([`fairshare_abi::Accelerator::set_blocking_wait`]): only what a small quantum takes.
pub const HOST_SPIN_SHARED: Duration = Duration::from_micros(30);

/// Blocks while `word` holds `value`, for at most `timeout`, with `asleep` set
/// meanwhile. Returns early on a wake, a change of `word`, or a signal.
pub fn sleep_while(asleep: &AtomicU32, word: &AtomicU32, value: u32, timeout: Duration) {
    asleep.store(1, Ordering::SeqCst);
    if word.load(Ordering::SeqCst) == value {
        let ts = futex::Timespec { tv_sec: timeout.as_secs() as i64, tv_nsec: timeout.subsec_nanos() as i64 };
        // A changed word (EAGAIN), a timeout or a signal all mean: look again.
        let _ = futex::wait(word, futex::Flags::empty(), value, Some(&ts));
    }
    asleep.store(0, Ordering::SeqCst);
}

/// Wakes the side blocked on `word` if `asleep` says one is (call after changing
/// `word`).
pub fn wake(asleep: &AtomicU32, word: &AtomicU32) {
    fence(Ordering::SeqCst);
    if asleep.load(Ordering::SeqCst) != 0 {
        let _ = futex::wake(word, futex::Flags::empty(), i32::MAX as u32);
    }
}

/// The host's side: a command was written (doorbell or credit command); count it and
/// wake the emulator if it sleeps.
pub fn kick(bar: &Region) -> Result<(), OutOfBounds> {
    let kick = bar.word(KICK)?;
    kick.fetch_add(1, Ordering::SeqCst);
    wake(bar.word(DEVICE_ASLEEP)?, kick);
    Ok(())
}

/// Spins (a pause instruction, with back-off) until `budget` has passed since the wait
/// began; then says it is time to block. Every [`YIELD_EVERY`] of spinning it yields
/// once: if the side it waits for was put on the same core (the scheduler places a
/// woken thread next to the one that woke it), the spin would otherwise keep it from
/// running for the whole budget. Yielding more often hands the core to whatever else
/// is runnable for a time slice, which costs a fast device's answer more than the spin.
/// One per wait.
pub struct Spinner {
    backoff: crossbeam::utils::Backoff,
    start: Instant,
    budget: Duration,
    yielded: Duration,
}

/// How often a [`Spinner`] yields.
pub const YIELD_EVERY: Duration = Duration::from_micros(20);

impl Spinner {
    /// A wait that begins now.
    pub fn new(budget: Duration) -> Self {
        Spinner { backoff: crossbeam::utils::Backoff::new(), start: Instant::now(), budget, yielded: Duration::ZERO }
    }

    /// Pauses briefly; false once the spinning budget is spent (block instead).
    pub fn spin(&mut self) -> bool {
        let spun = self.start.elapsed();
        if spun >= self.budget {
            return false;
        }
        if spun >= self.yielded + YIELD_EVERY {
            self.yielded = spun;
            std::thread::yield_now();
        } else {
            self.backoff.spin();
        }
        true
    }

    /// Starts over (the other side answered; the next wait begins now).
    pub fn reset(&mut self) {
        self.backoff.reset();
        self.start = Instant::now();
        self.yielded = Duration::ZERO;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_sleeper_wakes_on_a_change_and_times_out_without_one() {
        let region = Arc::new(Region::anonymous(4096).unwrap());
        // No change: the sleep lasts its timeout.
        let start = Instant::now();
        sleep_while(region.word(HOST_ASLEEP).unwrap(), region.word(0).unwrap(), 0, Duration::from_millis(30));
        assert!(start.elapsed() >= Duration::from_millis(25), "{:?}", start.elapsed());
        assert_eq!(region.word(HOST_ASLEEP).unwrap().load(Ordering::SeqCst), 0, "the flag is cleared after");
        // A change and a wake from another thread end a 10 s sleep at once.
        let other = region.clone();
        let waker = std::thread::spawn(move || {
            while other.word(HOST_ASLEEP).unwrap().load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            other.word(0).unwrap().store(7, Ordering::SeqCst);
            wake(other.word(HOST_ASLEEP).unwrap(), other.word(0).unwrap());
        });
        let start = Instant::now();
        while region.word(0).unwrap().load(Ordering::SeqCst) == 0 {
            sleep_while(region.word(HOST_ASLEEP).unwrap(), region.word(0).unwrap(), 0, Duration::from_secs(10));
        }
        assert!(start.elapsed() < Duration::from_secs(5), "woken, not timed out: {:?}", start.elapsed());
        waker.join().unwrap();
        // A kick counts and is seen by a sleeper on KICK.
        kick(&region).unwrap();
        assert_eq!(region.word(KICK).unwrap().load(Ordering::SeqCst), 1);
    }
}
