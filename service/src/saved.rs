//! What the pool keeps in its ledger (`--state`): after every quantum, join and leave
//! the whole pool ([`SavedPool`], a ledger state), after every acknowledged demand a
//! [`SavedChange`] (a ledger change, small: a `PUT` costs one short fsynced record, not
//! the whole pool). On resume, the last state with the changes after it is the pool as
//! it was acknowledged.
//!
//! A state also carries the configuration the pool was started from ([`Base`]): a
//! resume whose file changes the slices, the slice's rate, the policy, alpha or the
//! initial credits is refused naming the field, unless the operator accepts the change
//! (`--accept-config-changes`); tenants the file adds or removes, or whose weight it
//! changes, are joins, leaves and new shares, applied and logged (see
//! [`crate::pool::LivePool::start`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use fairshare::AllocatorState;
use serde::{Deserialize, Serialize};

use crate::config::ServeConfig;

/// The version of [`SavedPool`]'s encoding.
pub const FORMAT: u32 = 2;

/// The configuration a pool's state follows (the fields a resume compares).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Base {
    /// `pool.capacity` in slices.
    pub slices: u64,
    /// `pool.slice` in bits per second.
    pub slice_bps: u64,
    /// `pool.policy`.
    pub policy: String,
    /// `pool.alpha`.
    pub alpha: String,
    /// `pool.initial_credits`.
    pub initial_credits: i64,
    /// The file's tenants, with their weights, in order.
    pub tenants: Vec<(String, u64)>,
}

impl Base {
    /// The base of `config`.
    pub fn of(config: &ServeConfig) -> Base {
        Base {
            slices: config.slices,
            slice_bps: config.slice_bps,
            policy: config.policy.to_string(),
            alpha: config.alpha.to_string(),
            initial_credits: config.initial_credits,
            tenants: config.tenants.iter().map(|t| (t.name.clone(), t.weight)).collect(),
        }
    }

    /// Every field of the pool (not its tenants) where `self` (the ledger's) and `file`
    /// differ, as `field: ledger -> file`: a resume with any is refused unless accepted.
    pub fn pool_differences(&self, file: &Base) -> Vec<String> {
        let mut out = Vec::new();
        let mut field = |name: &str, was: String, now: String| {
            if was != now {
                out.push(format!("{name}: {was} in the ledger, {now} in the file"));
            }
        };
        field("pool.capacity (slices)", self.slices.to_string(), file.slices.to_string());
        field("pool.slice (bit/s)", self.slice_bps.to_string(), file.slice_bps.to_string());
        field("pool.policy", self.policy.clone(), file.policy.clone());
        field("pool.alpha", self.alpha.clone(), file.alpha.clone());
        field("pool.initial_credits", self.initial_credits.to_string(), file.initial_credits.to_string());
        out
    }

    /// How the file's tenants differ from the ledger's base: who joins, who leaves, whose
    /// weight changes. A resume applies them (as joins, leaves and new shares) and logs them.
    pub fn tenant_changes(&self, file: &Base) -> Vec<String> {
        let mut out = Vec::new();
        let was: std::collections::HashMap<&str, u64> = self.tenants.iter().map(|(n, w)| (n.as_str(), *w)).collect();
        let now: std::collections::HashSet<&str> = file.tenants.iter().map(|(n, _)| n.as_str()).collect();
        let added: Vec<&str> = file.tenants.iter().map(|(n, _)| n.as_str()).filter(|n| !was.contains_key(n)).collect();
        let removed: Vec<&str> = self.tenants.iter().map(|(n, _)| n.as_str()).filter(|n| !now.contains(n)).collect();
        if !added.is_empty() || !removed.is_empty() {
            out.push(format!("tenants: the file adds {added:?} and removes {removed:?}"));
        }
        for (name, w) in &file.tenants {
            if let Some(old) = was.get(name.as_str()).filter(|o| *o != w) {
                out.push(format!("tenants.{name}.weight: {old} in the ledger, {w} in the file"));
            }
        }
        out
    }
}

/// The whole pool, as the ledger keeps it after a quantum, a join or a leave.
/// (`matches`: what selects each tenant's traffic, for the enforcer.)
#[derive(Debug, Serialize, Deserialize)]
pub struct SavedPool<'a> {
    /// [`FORMAT`] (absent in ledgers written before it: format 1).
    #[serde(default)]
    pub format: u32,
    /// The configuration followed (format 2 on).
    #[serde(default)]
    pub base: Option<Base>,
    /// Format 1's identity of the pool: "N slices, policy P".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// The allocator's state (tenants, shares, credits, last allocations, quanta run).
    pub allocator: AllocatorState,
    /// The declared demands, sticky until changed.
    pub demand: Cow<'a, [u64]>,
    /// Each tenant's weight.
    pub weights: Cow<'a, [u64]>,
    /// The token digests (hexadecimal) of tenants who joined with one.
    #[serde(default)]
    pub tokens: Cow<'a, BTreeMap<String, String>>,
    /// What selects each tenant's traffic (those of the file are the file's at start).
    #[serde(default)]
    pub matches: Cow<'a, BTreeMap<String, crate::config::Match>>,
}

/// A change acknowledged between two whole states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SavedChange {
    /// A tenant's declared demand, in slices.
    Demand {
        /// The tenant.
        tenant: String,
        /// Its demand from the next quantum on.
        slices: u64,
    },
}

/// Format 1's identity of a pool of `config`.
pub fn format1_identity(config: &ServeConfig) -> String {
    format!("{} slices, policy {}", config.slices, config.policy)
}
