//! The seam between the host and anything that computes quanta in device words: the
//! [`Accelerator`] trait, implemented directly by the RustHDL engine in process, the
//! emulator's shared-memory device and a device behind VFIO, and the one error type
//! they all return.

use crate::admission::{Limits, Refusal};
use crate::registers::{status, Mode};
use std::sync::Arc;
use std::time::Duration;

/// What every user of a quantum shares: the policy's mode, and the fair and guaranteed
/// shares (a device computes equal shares, Algorithm 1 for Karma).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantumSettings {
    /// The policy (`CONTROL.mode`).
    pub mode: Mode,
    /// The fair share of every user.
    pub fair: u32,
    /// The guaranteed share of every user.
    pub guaranteed: u32,
}

/// Results of one quantum, per user, in device words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuantumOutput {
    /// Allocations.
    pub alloc: Vec<u32>,
    /// Credits after the quantum.
    pub credits: Vec<u32>,
    /// Clock cycles the device reports for the quantum (0 where it counts none).
    pub cycles: u32,
    /// Nanoseconds the device reports it spent on the quantum, doorbell to last result
    /// (0 where it reports none): the emulator's clock, the in-process engine's
    /// simulation time. The host's round trip minus this is what the protocol costs.
    pub device_ns: u64,
}

/// Why a device did not give a usable answer. The host's offload backend stops using a
/// device after any of these and says which.
#[derive(Clone, Debug)]
pub enum DeviceError {
    /// No completion (or credit acknowledgement) within the timeout.
    Timeout {
        /// What was waited for (e.g. `sequence number 7`).
        what: String,
        /// How long.
        after: Duration,
    },
    /// The device refused the quantum with a status code (see [`status`]).
    Refused {
        /// `STATUS.error`.
        code: u32,
    },
    /// The device is gone: the process serving it ended, or the link to it closed. Said
    /// as soon as it is noticed, without waiting out a timeout.
    Gone(String),
    /// The device broke the protocol: a completion with another sequence number, a
    /// buffer address outside the mapping, a checkpoint that differs from what was
    /// written, a result of the wrong length.
    Protocol(String),
    /// The device's result failed the host's check: it differs from the software's, or
    /// breaks an invariant of the policy.
    Verification(String),
    /// The pool or quantum does not fit the device (the admission rule, equal shares,
    /// whole balances); nothing was sent.
    Unsupported(String),
    /// An operating-system error while talking to the device.
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: Arc<std::io::Error>,
    },
}

impl DeviceError {
    /// A one-word name of the kind, for metrics and JSON (`timeout`, `refused`, `gone`,
    /// `protocol`, `verification`, `unsupported`, `io`).
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceError::Timeout { .. } => "timeout",
            DeviceError::Refused { .. } => "refused",
            DeviceError::Gone(_) => "gone",
            DeviceError::Protocol(_) => "protocol",
            DeviceError::Verification(_) => "verification",
            DeviceError::Unsupported(_) => "unsupported",
            DeviceError::Io { .. } => "io",
        }
    }
}

impl std::fmt::Display for DeviceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceError::Timeout { what, after } => write!(f, "{what}: no completion within {after:?}"),
            DeviceError::Refused { code } => {
                write!(f, "the device refused the quantum: status code {code} ({})", status::describe(*code))
            }
            DeviceError::Gone(what) => f.write_str(what),
            DeviceError::Protocol(what) => write!(f, "protocol violation: {what}"),
            DeviceError::Verification(what) => write!(f, "wrong result: {what}"),
            DeviceError::Unsupported(what) => write!(f, "does not fit the device: {what}"),
            DeviceError::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for DeviceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DeviceError::Io { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

impl From<Refusal> for DeviceError {
    fn from(r: Refusal) -> Self {
        DeviceError::Unsupported(r.to_string())
    }
}

/// A device that computes quanta in its words: equal shares (Algorithm 1 for Karma),
/// whole credits below [`crate::WORD_LIMIT`], balances kept on the device from quantum
/// to quantum. `Send`: a pool and its device may be moved to the thread that runs its
/// quanta (the live service runs them off its HTTP threads).
pub trait Accelerator: Send {
    /// Where it is, for messages (`rtl-sim (4 lanes, 64 users)`, `emulator:PATH`,
    /// `vfio:ADDR`).
    fn label(&self) -> String;
    /// What it takes (see [`crate::admit`]).
    fn limits(&self) -> Limits;
    /// Restores the balances of users `0 .. credits.len()`.
    fn write_credits(&mut self, credits: &[u32]) -> Result<(), DeviceError>;
    /// Checkpoints the balances of users `0 .. n`.
    fn read_credits(&mut self, n: usize) -> Result<Vec<u32>, DeviceError>;
    /// One quantum of `settings` (mode, fair and guaranteed share of every user):
    /// allocations and credits after, into `out`, reusing its buffers (a device on the
    /// fast path allocates nothing per quantum). A quantum that [`crate::admit`] refuses
    /// is answered with [`DeviceError::Refused`] and changes nothing; on error `out`
    /// holds no result.
    fn quantum_into(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
    ) -> Result<(), DeviceError>;
    /// [`Accelerator::quantum_into`], with `meanwhile` run on the caller's thread while
    /// the device computes: after the demands are sent and the doorbell rung, before the
    /// wait for the answer. A device that computes apart from the caller (the emulator, a
    /// real device) calls it exactly once, so that the caller's work (the offload's exact
    /// check of earlier quanta, the software's own quantum in `sync`) overlaps the
    /// device's instead of following it; the work's time counts in the round trip only
    /// where it outlasts the device. The default never calls it: a device that computes
    /// on the caller's thread (the in-process engine) leaves nothing to overlap. On error
    /// `meanwhile` may or may not have run.
    fn quantum_into_overlapped(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(), DeviceError> {
        let _ = meanwhile;
        self.quantum_into(settings, demand, out)
    }
    /// [`Accelerator::quantum_into`] into a new output.
    fn quantum(&mut self, settings: QuantumSettings, demand: &[u32]) -> Result<QuantumOutput, DeviceError> {
        let mut out = QuantumOutput::default();
        self.quantum_into(settings, demand, &mut out)?;
        Ok(out)
    }
    /// A hint from the caller, for the waits that follow: `true` while another of its
    /// threads needs the CPU (the offload's verifier with quanta queued), so a device
    /// that spins while it waits should block soon instead; `false` when nothing else
    /// does, so spinning is the fastest wait. Changes no result.
    fn set_blocking_wait(&mut self, _block: bool) {}
}

impl<A: Accelerator + ?Sized> Accelerator for Box<A> {
    fn label(&self) -> String {
        (**self).label()
    }
    fn limits(&self) -> Limits {
        (**self).limits()
    }
    fn write_credits(&mut self, credits: &[u32]) -> Result<(), DeviceError> {
        (**self).write_credits(credits)
    }
    fn read_credits(&mut self, n: usize) -> Result<Vec<u32>, DeviceError> {
        (**self).read_credits(n)
    }
    fn quantum_into(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
    ) -> Result<(), DeviceError> {
        (**self).quantum_into(settings, demand, out)
    }
    fn quantum_into_overlapped(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(), DeviceError> {
        (**self).quantum_into_overlapped(settings, demand, out, meanwhile)
    }
    fn set_blocking_wait(&mut self, block: bool) {
        (**self).set_blocking_wait(block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_happened_and_keep_their_source() {
        let e = DeviceError::Refused { code: status::DEMAND };
        assert_eq!(e.to_string(), "the device refused the quantum: status code 3 (a demand is at or above 2^31)");
        let io = DeviceError::Io { what: "mapping BAR0".into(), source: Arc::new(std::io::Error::other("gone")) };
        assert_eq!(io.to_string(), "mapping BAR0: gone");
        assert!(std::error::Error::source(&io).is_some());
        let kinds: Vec<_> = [
            DeviceError::Timeout { what: "x".into(), after: Duration::from_millis(1) },
            e,
            DeviceError::Gone("g".into()),
            DeviceError::Protocol("p".into()),
            DeviceError::Verification("v".into()),
            DeviceError::Unsupported("u".into()),
            io,
        ]
        .iter()
        .map(DeviceError::kind)
        .collect();
        assert_eq!(kinds, ["timeout", "refused", "gone", "protocol", "verification", "unsupported", "io"]);
    }
}
