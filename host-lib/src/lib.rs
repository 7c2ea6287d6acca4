//! # fairshare: the host library
//!
//! Fair division of a shared pool (bandwidth, cache or memory slices) among many users,
//! re-done every quantum. This crate owns the policies' exact semantics
//! (`shared/spec/karma.md`): Karma (Algorithms 1 and 2 of the paper) and periodic
//! max-min fairness, each as a literal slice-by-slice oracle and a batched
//! implementation that agree bit for bit, and strict partitioning; the [`Allocator`]
//! API called once per quantum, with users joining and leaving and state export and
//! import; and the golden-vector runner that every backend (software, RTL simulation,
//! emulated device, VFIO in the later `hdl/` and `driver/` crates) is checked with.

pub mod allocator;
pub mod config;
pub mod credits;
pub mod error;
pub mod multi;
pub mod offload;
pub mod policy;
pub mod vectors;

pub use allocator::{Allocator, AllocatorState, PoolChange, UserState};
pub use config::{Alpha, KarmaParams, PoolConfig, UserConfig};
pub use credits::Credits;
pub use error::{Error, Result};
pub use policy::{Implementation, Outcome, Policy};
