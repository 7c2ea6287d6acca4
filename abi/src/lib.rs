//! # fairshare-abi: the device contract, once
//!
//! What a fairshare device is, for everything that builds one or talks to one:
//!
//! - the register map and buffer layouts ([`registers`], re-exported at the root;
//!   `abi/REGISTERS.md` is generated from it), the modes ([`Mode`]) and status codes
//!   ([`status`]);
//! - the word limit ([`WORD_LIMIT`]) and the one admission rule ([`admit`]) that decides
//!   whether a quantum fits a device, and which status code it refuses with otherwise:
//!   the RTL's constants, the engine's software model, the emulator, the host's offload
//!   backend and `selftest` all use it;
//! - the seam every device implements ([`Accelerator`]: the RTL engine in process, the
//!   emulator's shared-memory device, a device behind VFIO) and its typed error
//!   ([`DeviceError`]).
//!
//! It owns no semantics of the policies (the host library does) and no way to reach a
//! device (the driver does). It depends on nothing, in the workspace or outside it.

pub mod accelerator;
pub mod admission;
pub mod registers;

pub use accelerator::{Accelerator, DeviceError, QuantumOutput, QuantumSettings};
pub use admission::{admit, admit_config, admits, Limits, Refusal, WORD_LIMIT, WORD_MAX};
pub use registers::*;
