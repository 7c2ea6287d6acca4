//! # fairshare: the host library
//!
//! Fair division of a shared pool (bandwidth, cache or memory slices) among many users,
//! re-done every quantum. This crate owns the policies' exact semantics
//! (`shared/spec/karma.md`): Karma (credit-based, Algorithms 1 and 2 of the paper),
//! periodic max-min fairness and strict partitioning, each as a literal slice-by-slice
//! oracle and a fast batched implementation that agree bit for bit; the [`Allocator`]
//! API users call once per quantum; users joining and leaving; state export and
//! import; and the golden-vector runner every backend is checked with.
//!
//! The hardware engine (`hdl/`), the device access (`driver/`) and the offload backends
//! that verify the device against this software are built on top of it.

pub mod allocator;
pub mod config;
pub mod credits;
pub mod error;
pub mod policy;
pub mod vectors;

pub use allocator::{Allocator, AllocatorState, PoolChange, UserState};
pub use config::{Alpha, KarmaParams, PoolConfig, UserConfig};
pub use credits::Credits;
pub use error::{Error, Result};
pub use policy::{Implementation, Outcome, Policy};
