//! The single-resource policies. Karma and max-min each have a literal form (the
//! oracle: small, slice by slice, obviously right) and a batched form (threshold
//! search, what production and the hardware engine compute) that give the same result
//! bit for bit; strict partitioning is one line and has one form.

pub mod invariants;
pub mod karma;
pub mod maxmin;
pub mod select;
pub mod strict;

use crate::config::KarmaParams;
use crate::error::{Error, Result};
use crate::Credits;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Which allocation policy a pool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Karma: guaranteed share plus credit-ordered borrowing of donated and shared slices.
    Karma,
    /// Periodic max-min fairness (water-filling every quantum, weighted by fair share).
    MaxMin,
    /// Strict partitioning: `min(demand, fair share)`.
    Strict,
}

impl Policy {
    /// All policies, in the order reports list them.
    pub const ALL: [Policy; 3] = [Policy::Karma, Policy::MaxMin, Policy::Strict];

    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Karma => "karma",
            Policy::MaxMin => "maxmin",
            Policy::Strict => "strict",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown policy `{s}` (expected karma, maxmin or strict)"))
    }
}

/// Which software implementation computes a quantum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Implementation {
    /// Radix selection of the threshold: O(n), independent of the number of slices
    /// and of the credit range.
    #[default]
    Batched,
    /// The slice-by-slice loop of the paper: the oracle.
    Literal,
    /// Binary search on the threshold with one counting pass per probe: O(n log range).
    /// The batched form before the radix selection, kept because it covers every quantum
    /// (weighted shares, fractional credits); the batched form uses it for those.
    Search,
}

impl Implementation {
    /// All implementations, in the order benches list them.
    pub const ALL: [Implementation; 3] = [Implementation::Batched, Implementation::Search, Implementation::Literal];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Implementation::Batched => "batched",
            Implementation::Literal => "literal",
            Implementation::Search => "search",
        }
    }
}

impl FromStr for Implementation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Implementation::ALL
            .into_iter()
            .find(|i| i.name() == s)
            .ok_or_else(|| format!("unknown implementation `{s}` (expected batched, search or literal)"))
    }
}

/// The result of one quantum: allocation and credits after it, per user.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Slices allocated to each user this quantum (`<= demand`).
    pub alloc: Vec<u64>,
    /// Credits after the quantum (unchanged by max-min and strict partitioning).
    pub credits: Vec<Credits>,
}

/// The buffers of the batched policies, kept between quanta (an [`crate::Allocator`]
/// holds one) so that a quantum in the steady state allocates nothing. Any workspace
/// gives the same results; a fresh one only costs the first quantum its allocations.
#[derive(Clone, Debug, Default)]
pub struct Workspace {
    pub(crate) borrowers: karma::Intervals,
    pub(crate) donors: karma::Intervals,
    pub(crate) select: select::Selector,
}

/// Runs one quantum of `policy` with implementation `imp`; `credits` are the balances
/// before the quantum. Never changes anything on error.
pub fn run(
    policy: Policy,
    imp: Implementation,
    params: &KarmaParams,
    demand: &[u64],
    credits: &[Credits],
) -> Result<Outcome> {
    let mut out = Outcome::default();
    run_into(policy, imp, params, demand, credits, &mut Workspace::default(), &mut out)?;
    Ok(out)
}

/// [`run`] into reusable buffers: `out` is overwritten; on error its contents are
/// unspecified (callers keep their state elsewhere until the quantum succeeds).
pub fn run_into(
    policy: Policy,
    imp: Implementation,
    params: &KarmaParams,
    demand: &[u64],
    credits: &[Credits],
    workspace: &mut Workspace,
    out: &mut Outcome,
) -> Result<()> {
    check_lengths(params, demand, credits)?;
    let copy_credits = |out: &mut Outcome| {
        out.credits.clear();
        out.credits.extend_from_slice(credits);
    };
    match policy {
        Policy::Karma => match imp {
            Implementation::Batched => karma::batched_into(workspace, params, demand, credits, out),
            Implementation::Search => karma::search(params, demand, credits).map(|o| *out = o),
            Implementation::Literal => karma::literal(params, demand, credits).map(|o| *out = o),
        },
        Policy::MaxMin => {
            match imp {
                Implementation::Batched => {
                    maxmin::batched_into(workspace, &params.fair_share, params.capacity, demand, &mut out.alloc)
                }
                Implementation::Search => out.alloc = maxmin::search(&params.fair_share, params.capacity, demand),
                Implementation::Literal => out.alloc = maxmin::literal(&params.fair_share, params.capacity, demand),
            }
            copy_credits(out);
            Ok(())
        }
        Policy::Strict => {
            strict::allocate_into(&params.fair_share, demand, &mut out.alloc);
            copy_credits(out);
            Ok(())
        }
    }
}

/// One demand and one credit balance per user, or a typed error.
pub(crate) fn check_lengths(params: &KarmaParams, demand: &[u64], credits: &[Credits]) -> Result<()> {
    for got in [demand.len(), credits.len()] {
        if got != params.len() {
            return Err(Error::DemandLength { expected: params.len(), got });
        }
    }
    Ok(())
}
