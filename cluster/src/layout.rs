//! Where a pool lives in etcd, under `/fairshare/{pool}/`:
//!
//! - `leader`: the election (each candidate's key under it, held by its lease; the
//!   value is the candidate's API address);
//! - `quantum`: the number of the last committed quantum, 20 decimal digits (a
//!   transaction compares it as bytes, so the width is fixed);
//! - `ledger/current`: the [`Pointer`] to the committed state, put in the same
//!   transaction as `quantum`;
//! - `ledger/{generation}/{shard}`: the state's JSON in shards of at most
//!   [`SHARD_BYTES`] (one request each, under etcd's 1.5 MiB per request), written
//!   before the transaction that points to them, and so invisible until it commits;
//!   `generation` is the quantum, the leadership's revision and the attempt, so that no
//!   two attempts ever write the same keys;
//! - `declared/{tenant}`: each tenant's declared demand in slices (decimal), put by any
//!   replica before it acknowledges it;
//! - `demand/{host}`: what a host's agent measures ([`HostDemand`]), under the agent's
//!   lease (a dead host's demand goes with its lease);
//! - `alloc/{host}`: the host's part of the last published quantum ([`HostAlloc`]),
//!   put by the leader after each commit; each agent watches its own;
//! - `published`: the last quantum every host's part of which is written (after the
//!   last batch): agents raise only up to it;
//! - `config`: what the agents need of the pool ([`AgentConfig`]), put by the leader
//!   when it changes;
//! - `member/{tenant}/{change}`: each join or leave asked of any replica (JSON), applied
//!   by the leader at its next quantum and deleted once a committed state holds it.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The most bytes of state in one shard (etcd refuses requests over 1.5 MiB).
pub const SHARD_BYTES: usize = 1 << 20;

/// The keys of one pool.
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

impl Keys {
    /// The keys of the pool named `pool`.
    pub fn new(pool: &str) -> Keys {
        Keys { prefix: format!("/fairshare/{pool}/") }
    }

    /// The election's name.
    pub fn leader(&self) -> String {
        format!("{}leader", self.prefix)
    }

    /// The last committed quantum's number.
    pub fn quantum(&self) -> String {
        format!("{}quantum", self.prefix)
    }

    /// The pointer to the committed state.
    pub fn current(&self) -> String {
        format!("{}ledger/current", self.prefix)
    }

    /// The prefix of the pointer and every generation.
    pub fn ledger(&self) -> String {
        format!("{}ledger/", self.prefix)
    }

    /// The prefix of a generation's shards.
    pub fn generation(&self, generation: &str) -> String {
        format!("{}ledger/{generation}/", self.prefix)
    }

    /// A shard of a generation.
    pub fn shard(&self, generation: &str, i: usize) -> String {
        format!("{}ledger/{generation}/{i:06}", self.prefix)
    }

    /// The prefix of the declared demands.
    pub fn declared_demands(&self) -> String {
        format!("{}declared/", self.prefix)
    }

    /// A tenant's declared demand.
    pub fn declared(&self, tenant: &str) -> String {
        format!("{}declared/{tenant}", self.prefix)
    }

    /// The prefix of the hosts' measured demands.
    pub fn host_demands(&self) -> String {
        format!("{}demand/", self.prefix)
    }

    /// A host's measured demand.
    pub fn host_demand(&self, host: &str) -> String {
        format!("{}demand/{host}", self.prefix)
    }

    /// The prefix of the hosts' allocations.
    pub fn allocs(&self) -> String {
        format!("{}alloc/", self.prefix)
    }

    /// A host's allocation.
    pub fn alloc(&self, host: &str) -> String {
        format!("{}alloc/{host}", self.prefix)
    }

    /// The last quantum every host's part of which is written (decimal).
    pub fn published(&self) -> String {
        format!("{}published", self.prefix)
    }

    /// What the agents need of the pool.
    pub fn config(&self) -> String {
        format!("{}config", self.prefix)
    }

    /// Everything of the pool.
    pub fn pool(&self) -> String {
        self.prefix.clone()
    }

    /// The prefix of the joins and leaves.
    pub fn members(&self) -> String {
        format!("{}member/", self.prefix)
    }

    /// One join or leave of a tenant.
    pub fn member(&self, tenant: &str, change: &str) -> String {
        format!("{}member/{tenant}/{change}", self.prefix)
    }
}

/// `config`: what a host's agent needs of the pool: how to shape, how long to wait for
/// the leader, each tenant's match and guaranteed share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// Bits per second of a slice.
    pub slice_bps: u64,
    /// Slices in the pool (its budget; the link class's rate on each host).
    pub slices: u64,
    /// The quantum's period, ms: the agents measure on it.
    pub period_ms: u64,
    /// The TTL of each agent's lease on its demand, s.
    pub lease_ttl_s: u64,
    /// Without a new quantum for this long, an agent is stale (keeps the last allocation), ms.
    pub stale_after_ms: u64,
    /// Without a new quantum for this long, an agent falls back to guaranteed shares, ms.
    pub fallback_after_ms: u64,
    /// The largest packet HTB is charged for, bytes.
    pub max_packet: u32,
    /// The tenants, in the pool's order.
    pub tenants: Vec<AgentTenant>,
}

/// A tenant as the agents see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTenant {
    /// Its name.
    pub name: String,
    /// Its guaranteed share (alpha x fair share), slices over all hosts.
    pub guaranteed: u64,
    /// What selects its traffic.
    #[serde(rename = "match")]
    pub selector: Option<fairshare_service::config::Match>,
}

/// `demand/{host}`: what a host's agent measured over its last period, in slices, for
/// the tenants that sent anything there.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDemand {
    /// The last quantum the agent applied.
    pub quantum: u64,
    /// Each tenant's demand on this host, slices (tenants with none left out).
    pub demands: std::collections::BTreeMap<String, u64>,
}

/// `alloc/{host}`: the host's part of a quantum's allocations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostAlloc {
    /// The quantum.
    pub quantum: u64,
    /// When increases may be applied, ms since the Unix epoch (decreases apply at once:
    /// every host has its decreases before any host raises).
    pub effective_at_ms: u64,
    /// Each tenant's slices on this host and its allocation over all hosts (tenants
    /// with nothing here left out).
    pub tenants: std::collections::BTreeMap<String, (u64, u64)>,
}

/// A quantum number as stored: 20 digits, so that equal numbers are equal bytes.
pub fn quantum_bytes(q: u64) -> String {
    format!("{q:020}")
}

/// A stored quantum number, or why it is not one.
pub fn parse_quantum(bytes: &[u8]) -> Result<u64, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "a quantum number that is not text".to_string())?;
    if text.len() != 20 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("a quantum number `{text}` that is not 20 digits"));
    }
    text.parse().map_err(|_| format!("a quantum number `{text}` out of range"))
}

/// What `ledger/current` holds: where the committed state is and how to check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pointer {
    /// The quantum the state is after.
    pub quantum: u64,
    /// The shards' generation.
    pub generation: String,
    /// How many shards.
    pub shards: usize,
    /// The state's length in bytes.
    pub bytes: usize,
    /// Its SHA-256, hexadecimal.
    pub sha256: String,
    /// The store's revision up to which demands were taken into the state: demands put
    /// after it apply on top.
    pub demands_revision: i64,
}

impl Pointer {
    /// The pointer to `state`, after `quantum`, in `generation`.
    pub fn of(state: &[u8], quantum: u64, generation: String, demands_revision: i64) -> Pointer {
        Pointer {
            quantum,
            generation,
            shards: state.len().div_ceil(SHARD_BYTES).max(1),
            bytes: state.len(),
            sha256: sha256_hex(state),
            demands_revision,
        }
    }

    /// Checks the shards read back (in order) and joins them.
    pub fn join(&self, shards: Vec<Vec<u8>>) -> Result<Vec<u8>, String> {
        if shards.len() != self.shards {
            return Err(format!("{} of the {} shards of generation {}", shards.len(), self.shards, self.generation));
        }
        let state = shards.concat();
        if state.len() != self.bytes || sha256_hex(&state) != self.sha256 {
            return Err(format!(
                "a state of generation {} that does not match its pointer ({} bytes, {} expected, or another hash)",
                self.generation,
                state.len(),
                self.bytes
            ));
        }
        Ok(state)
    }
}

/// `state` cut into shards of at most [`SHARD_BYTES`] (one, empty, for an empty state).
pub fn shards(state: &[u8]) -> Vec<&[u8]> {
    if state.is_empty() {
        return vec![state];
    }
    state.chunks(SHARD_BYTES).collect()
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn quantum_numbers_are_fixed_width_and_read_back() {
        assert_eq!(quantum_bytes(7), "00000000000000000007");
        assert_eq!(quantum_bytes(u64::MAX).len(), 20);
        for q in [0, 1, 99, 1 << 40, u64::MAX] {
            assert_eq!(parse_quantum(quantum_bytes(q).as_bytes()), Ok(q));
        }
        assert!(parse_quantum(b"7").unwrap_err().contains("20 digits"));
        assert!(parse_quantum(b"0000000000000000000x").is_err());
        assert!(parse_quantum(b"99999999999999999999").unwrap_err().contains("out of range"));
    }

    #[test]
    fn a_state_is_cut_into_shards_and_checked_when_joined() {
        let state: Vec<u8> = (0..(2 * SHARD_BYTES + 5)).map(|i| (i % 251) as u8).collect();
        let pointer = Pointer::of(&state, 3, "g".into(), 9);
        assert_eq!(pointer.shards, 3);
        let cut: Vec<Vec<u8>> = shards(&state).into_iter().map(<[u8]>::to_vec).collect();
        assert_eq!(cut.len(), 3);
        assert!(cut.iter().all(|s| s.len() <= SHARD_BYTES));
        assert_eq!(pointer.join(cut.clone()).unwrap(), state);
        // A missing shard, or a changed byte, is refused, named.
        assert!(pointer.join(cut[..2].to_vec()).unwrap_err().contains("2 of the 3 shards"));
        let mut changed = cut;
        changed[1][0] ^= 1;
        assert!(pointer.join(changed).unwrap_err().contains("does not match"));
        let empty = Pointer::of(b"", 0, "e".into(), 0);
        assert_eq!(empty.join(shards(b"").into_iter().map(<[u8]>::to_vec).collect()).unwrap(), b"");
    }

    #[test]
    fn keys_stay_under_the_pool() {
        let k = Keys::new("p");
        for key in [
            k.leader(),
            k.quantum(),
            k.current(),
            k.shard("g", 2),
            k.declared("A"),
            k.host_demand("h"),
            k.alloc("h"),
            k.config(),
            k.member("A", "1"),
        ] {
            assert!(key.starts_with("/fairshare/p/"), "{key}");
        }
        assert_eq!(k.shard("g", 2), "/fairshare/p/ledger/g/000002");
        assert!(k.shard("g", 2).starts_with(&k.generation("g")));
    }
}
