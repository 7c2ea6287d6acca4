//! How a device's results are checked and what is said of them: the verification
//! modes ([`Verify`]), why and when a device was dropped ([`Fallback`]), where a
//! quantum's time went ([`Timing`]), who recomputed the quanta ([`Checks`]), and the
//! exact comparison of a device's result with the software's.

use super::admission::from_word;
use super::verifier;
use crate::Credits;
use fairshare_abi::DeviceError;

/// How a device's results are checked before and after they are used. The names are
/// those of `--verify`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// `sync`: the software computes every quantum before the result is used; any
    /// difference is a fault. The device saves no host time; it is checked at once.
    Sync,
    /// `async` (the default for device backends): the device's result is used at once
    /// after the cheap invariant check ([`crate::policy::invariants`]); the exact
    /// software recomputation runs on a verifier thread fed by a bounded channel
    /// ([`VERIFIER_DEPTH`] quanta). A mismatch at quantum `q` drops the device for good:
    /// the software's credits after `q` are the truth, and the quanta issued since are
    /// recomputed from them ([`Fallback::issued_after`] says how many).
    Async,
    /// `sample:K`: as `async`, but the verifier recomputes one quantum in `K` (the
    /// quanta `q` with `q % K == 0`), each from the device's own credits before it; for
    /// long runs where a core cannot be spared. A wrong quantum between samples is seen
    /// only by the invariants.
    Sample(u64),
    /// `invariants`: the invariant check only, no recomputation (`--no-verify`). Blind
    /// to a result that keeps every invariant but is still wrong (say, a slice lent by
    /// the wrong donor).
    Invariants,
}

/// Quanta a device may run ahead of the verifier in [`Verify::Async`] and
/// [`Verify::Sample`]; past that the caller waits for the verifier.
pub const VERIFIER_DEPTH: usize = verifier::DEPTH;

impl Verify {
    /// What device backends use unless told otherwise.
    pub const DEVICE_DEFAULT: Verify = Verify::Async;
}

impl std::fmt::Display for Verify {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verify::Sync => f.write_str("sync"),
            Verify::Async => f.write_str("async"),
            Verify::Sample(k) => write!(f, "sample:{k}"),
            Verify::Invariants => f.write_str("invariants"),
        }
    }
}

/// A `--verify` that does not parse, with what is expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadVerify(pub String);

impl std::str::FromStr for Verify {
    type Err = BadVerify;
    fn from_str(s: &str) -> std::result::Result<Self, BadVerify> {
        match s {
            "sync" => Ok(Verify::Sync),
            "async" => Ok(Verify::Async),
            "invariants" => Ok(Verify::Invariants),
            _ => match s.strip_prefix("sample:").map(str::parse::<u64>) {
                Some(Ok(k)) if k >= 1 => Ok(Verify::Sample(k)),
                Some(_) => Err(BadVerify(format!("verify mode `{s}`: K in sample:K is a whole number from 1"))),
                None => Err(BadVerify(format!(
                    "verify mode `{s}`: use sync, async, sample:K (e.g. sample:100) or invariants"
                ))),
            },
        }
    }
}

/// Why and when the device was dropped.
#[derive(Clone, Debug)]
pub struct Fallback {
    /// Quanta completed before the one that failed (it is the next one).
    pub quantum: u64,
    /// What went wrong.
    pub error: DeviceError,
    /// Quanta issued from the device after the failed one before the failure was seen
    /// (an `async` or `sample:K` mismatch, found by the verifier later); 0 when it was
    /// seen at once. Their allocations were the device's; the credits after them were
    /// recomputed by the software.
    pub issued_after: u64,
}

impl std::fmt::Display for Fallback {
    /// The one wording of a fallback, for every command and report.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dropped after {} quanta: {}", self.quantum, self.error)?;
        if self.issued_after > 0 {
            write!(
                f,
                " (found by the verifier after {} more device quanta; the credits since were recomputed by the software)",
                self.issued_after
            )?;
        }
        Ok(())
    }
}

/// A fallback as commands and APIs show it (JSON): when, what kind of failure
/// (`timeout`, `refused`, `gone`, `protocol`, `verification`, `unsupported`, `io`), and
/// [`Fallback`]'s one wording.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FallbackSummary {
    /// Quanta completed before the one that failed.
    pub after_quanta: u64,
    /// The kind of failure.
    pub kind: &'static str,
    /// What happened, as [`Fallback`] says it.
    pub reason: String,
}

impl Fallback {
    /// The fallback as commands and APIs show it.
    pub fn summary(&self) -> FallbackSummary {
        FallbackSummary { after_quanta: self.quantum, kind: self.error.kind(), reason: self.to_string() }
    }
}

/// Where the time of the last quantum went, in nanoseconds (0: not measured, e.g. on
/// software).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// The device call: demands written, doorbell, completion, results read.
    pub round_trip_ns: u64,
    /// What the device reported for its own work ([`fairshare_abi::QuantumOutput::device_ns`]).
    pub device_ns: u64,
    /// Everything the caller of [`super::Offload::allocate`] waited for, checks included.
    pub critical_path_ns: u64,
    /// The exact software check of one quantum: in `sync` the software's own quantum
    /// (overlapping the device's where the device computes apart from the caller),
    /// otherwise the last check that came back, by the caller or by the verifier thread.
    pub verifier_ns: u64,
}

/// Who recomputed the quanta of `async` and `sample:K` ([`super::Offload::checks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checks {
    /// The caller, while it waited for the device.
    pub while_waiting: u64,
    /// The verifier thread.
    pub by_thread: u64,
    /// The caller, when it needed them done: [`super::Offload::settle`], a fallback, or
    /// [`VERIFIER_DEPTH`] quanta queued.
    pub on_demand: u64,
}

impl Checks {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.while_waiting + self.by_thread + self.on_demand
    }
}

/// Where a device's result differs from the software's, or `None`.
pub(super) fn differs(alloc: &[u32], credits: &[u32], want_alloc: &[u64], want_credits: &[Credits]) -> Option<String> {
    if alloc.len() != want_alloc.len() || credits.len() != want_credits.len() {
        return Some(format!("the device returned {} results for {} users", alloc.len(), want_alloc.len()));
    }
    let same = alloc.iter().zip(want_alloc).all(|(&a, &w)| a as u64 == w)
        && credits.iter().zip(want_credits).all(|(&c, &w)| from_word(c) == w);
    if same {
        return None;
    }
    let u = (0..alloc.len()).find(|&u| alloc[u] as u64 != want_alloc[u] || from_word(credits[u]) != want_credits[u])?;
    Some(format!(
        "the device's result differs from the software's at user {u}: allocation {} vs {}, credits {} vs {}",
        alloc[u],
        want_alloc[u],
        from_word(credits[u]),
        want_credits[u]
    ))
}
