//! The single-resource policies. Karma and max-min each have a literal form (the
//! oracle: small, slice by slice, obviously right) and a batched form (threshold
//! search, what production and the hardware engine compute) that give the same result
//! bit for bit; strict partitioning is one line and has one form.

pub mod invariants;
pub mod karma;
pub mod maxmin;
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
    /// Threshold search: O(n log range), independent of the number of slices.
    #[default]
    Batched,
    /// The slice-by-slice loop of the paper: the oracle.
    Literal,
}

/// The result of one quantum: allocation and credits after it, per user.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Slices allocated to each user this quantum (`<= demand`).
    pub alloc: Vec<u64>,
    /// Credits after the quantum (unchanged by max-min and strict partitioning).
    pub credits: Vec<Credits>,
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
    check_lengths(params, demand, credits)?;
    match policy {
        Policy::Karma => match imp {
            Implementation::Batched => karma::batched(params, demand, credits),
            Implementation::Literal => karma::literal(params, demand, credits),
        },
        Policy::MaxMin => {
            let alloc = match imp {
                Implementation::Batched => maxmin::batched(&params.fair_share, params.capacity, demand),
                Implementation::Literal => maxmin::literal(&params.fair_share, params.capacity, demand),
            };
            Ok(Outcome { alloc, credits: credits.to_vec() })
        }
        Policy::Strict => {
            Ok(Outcome { alloc: strict::allocate(&params.fair_share, demand), credits: credits.to_vec() })
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
