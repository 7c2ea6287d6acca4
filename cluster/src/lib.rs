//! # fairshare-cluster: one pool on etcd, its replicas and its hosts' agents
//!
//! `fairshare controller`: two or three replicas of one pool run the service's API; one
//! leads (elected on etcd under a lease) and runs quanta; each quantum is committed to
//! etcd exactly once by a transaction fenced with the leader key's revision and the
//! stored quantum number; a new leader resumes from etcd where the last commit left it.
//! Demands are written to etcd by any replica before they are acknowledged.
//! `fairshare agent`: one per host, it shapes the host's traffic to the host's part of
//! each quantum and publishes the demands it measures; the leader sums them per tenant
//! and splits each allocation among the tenant's hosts.
//!
//! Modules: [`layout`] (the keys under `/fairshare/{pool}/`, the fixed-width quantum,
//! the pointer to a committed state and its shards, the agents' records), [`etcd`] (the
//! service's [`fairshare_service::replica::Replica`] on an etcd client: election, sync,
//! commit, demands, publication to the agents), [`split`] (a tenant's allocation divided
//! among its hosts), [`agent`] (`fairshare agent`), [`bench`] (`fairshare bench
//! controller`: a commit's cost at N tenants), [`fleet`] (`fairshare bench cluster`: the
//! leader with H simulated agents), [`testing`] (a real etcd for tests).
//!
//! This is the only crate that knows etcd. It depends on the service (whose pool, API,
//! enforcer and trait it uses) and never on the CLI; nothing but the CLI depends on it.

pub mod agent;
pub mod bench;
pub mod etcd;
pub mod fleet;
pub mod layout;
pub mod split;
pub mod testing;

pub use etcd::{EtcdOptions, EtcdReplica};
