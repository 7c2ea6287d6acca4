//! # fairshare: the host library
//!
//! Fair division of a shared pool (bandwidth, cache or memory slices) among many users,
//! re-done every quantum. This crate owns the policies' exact semantics
//! (`docs/spec/karma.md`): Karma (Algorithms 1 and 2 of the paper) and periodic
//! max-min fairness, each as a literal slice-by-slice oracle and a batched
//! implementation that agree bit for bit, and strict partitioning; the [`Allocator`]
//! API called once per quantum, with users joining and leaving and state export and
//! import; the offload backend ([`offload`]) that runs a pool on any device of the
//! ABI's `Accelerator` seam, verified, with the software as its fallback; the
//! invariants every quantum keeps ([`policy::invariants`]); and the golden-vector
//! runner that every backend is checked with.
//!
//! It depends on the device contract (`fairshare-abi`) only: never on a way to reach a
//! device (driver), the RTL (hdl), the emulator, the multi-resource policies or the
//! reports.

pub mod allocator;
pub mod config;
pub mod credits;
pub mod error;
pub mod offload;
pub mod policy;
pub mod vectors;

pub use allocator::{Allocator, AllocatorState, PoolChange, Savepoint, UserState};
pub use config::{Alpha, KarmaParams, PoolConfig, UserConfig};
pub use credits::Credits;
pub use error::{Error, Result};
pub use policy::{Implementation, Outcome, Policy};
