//! # Multi-resource fair allocation
//!
//! Several resources (CPU, memory, bandwidth...) on several servers, shared by users with
//! per-task demand vectors, following `docs/spec/psdsf_drfh.md` and
//! `docs/spec/ddrf_bbf.md` including their errata:
//!
//! - [`drf`]: Dominant Resource Fairness on one pooled server (progressive filling), the
//!   baseline the others are compared with.
//! - [`lexmaxmin`]: weighted lexicographic max-min under per-server capacities and
//!   placement constraints, behind C-DRFH, TSF and CDRF: one linear program per
//!   distinct level, solved by column generation (users stopped by task limits or held
//!   by their duals are frozen together), with the older one-program-per-user procedure
//!   kept as the tests' reference.
//! - [`drfh`]: DRFH on heterogeneous servers: the exact LP, weighted and with finite
//!   tasks, and the task-level First-Fit and Best-Fit heuristics.
//! - [`ddrf`]: dynamic DRF: users arrive one by one, allocations are irrevocable; the
//!   exact water-filling and Li et al.'s binary search, checked against each other; the
//!   per-arrival steps are optional ([`Options`]), the final allocation takes linear memory.
//! - [`bbf`]: bottleneck-based fairness ("no justified complaints"): the paper's ODE
//!   method, the equivalent convex program, and the exact method for two users.
//! - [`psdsf`]: PS-DSF in its RDM and TDM forms, with placement constraints and weights,
//!   by the per-server water-filling procedure, also as the distributed per-server form;
//!   [`market`] finishes the TDM sweeps with the exact equilibrium of their support, or
//!   computes it without sweeps (proportional response, then the Eisenberg-Gale program
//!   on the placements it singles out).
//!
//! Allocations are divisible (real task counts) unless a function says otherwise. All
//! numbers are `f64` with the spec's relative tolerance [`EPS`]; the linear and
//! exponential-cone programs go to Clarabel through [`solver`], which rescales each
//! program first (every variable in units of a bound on it) so that raw units from 1e-6
//! to 1e9 do not decide the answer.
//!
//! # Ranges of the numbers
//!
//! An instance is refused, with an error naming the user or server, the field and the
//! value, unless (the reasons are in the [`instance`] module's doc):
//!
//! - every capacity and demand is 0 or in [1e-6, 1e9]; per resource, the positive
//!   capacities are within a factor 1e6 of each other, so are the positive demands, no
//!   server holds more than 1e9 (= 1 / [`EPS`]) tasks of the smallest demand, and no
//!   task needs more than 1e3 times the smallest capacity;
//! - every weight is in [1e-6, 1e6] and every entitlement 0 or in [1e-6, 1e6], each
//!   within a factor 1e4 of the others; the users' weighted sizes (weight times the tasks
//!   the user could run on all servers pooled) are within a factor 1e9 of each other;
//! - every task limit is 0 or in [1e-6, 1e15];
//! - no number is negative, NaN or infinite.
//!
//! Within these ranges no policy answers a user that has a positive demand, weight and
//! task limit with 0 tasks (whole-task placement aside), which
//! `multi/tests/ranges.rs` checks on random instances at the bounds.
//!
//! This crate owns the multi-resource policies and their instances only. It depends on
//! no other fairshare crate (the single-resource core `fairshare` does not use it, and
//! it does not use the core), so the convex solver is compiled only where a
//! multi-resource policy is run: the CLI's `multi` command and these tests.

pub mod bbf;
pub mod ddrf;
pub mod drf;
pub mod drfh;
pub mod instance;
pub mod lexmaxmin;
pub mod market;
pub mod policy;
pub mod psdsf;
pub mod solver;

pub use instance::{Builder, Instance, InstanceSpec};
pub use policy::{run, run_with, MultiPolicy, Options, Report};

/// Relative tolerance for "saturated", "positive" and level comparisons (spec 0.4).
pub const EPS: f64 = 1e-9;

/// Why a multi-resource computation could not be done.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MultiError {
    /// The instance file is not valid JSON of the expected shape.
    #[error("line {line}, column {column}: {message}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the reader expected.
        message: String,
    },
    /// The instance is well-formed but not a valid instance; the text names the user,
    /// server or field.
    #[error("{0}")]
    Invalid(String),
    /// The policy cannot take this instance (outside its model); the text says why.
    #[error("{0}")]
    Unsupported(String),
    /// The convex solver did not return a solution.
    #[error("the convex solver failed: {0}")]
    Solver(String),
    /// An iterative method did not converge within its budget.
    #[error("{0}")]
    NoConvergence(String),
}

/// A divisible allocation: tasks per user, and where the policy places them, per server.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// Tasks of each user in total.
    pub totals: Vec<f64>,
    /// `per_server[n][i]`: tasks of user `n` on server `i`; `None` for policies that
    /// allocate from the pooled capacity and do not place tasks (DRF, dynamic DRF, BBF).
    pub per_server: Option<Vec<Vec<f64>>>,
}

impl Allocation {
    /// An allocation placed on servers; the totals are the row sums.
    pub fn placed(per_server: Vec<Vec<f64>>) -> Self {
        let totals = per_server.iter().map(|row| row.iter().sum()).collect();
        Allocation { totals, per_server: Some(per_server) }
    }

    /// An allocation from the pooled capacity.
    pub fn pooled(totals: Vec<f64>) -> Self {
        Allocation { totals, per_server: None }
    }
}

/// True if `a` and `b` are equal within [`EPS`]-style relative tolerance `tol`.
pub fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
}
