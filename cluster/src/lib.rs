//! # fairshare-cluster: `fairshare controller`, a pool replicated on etcd
//!
//! Two or three replicas of one pool run the service's API; one leads (elected on
//! etcd under a lease) and runs quanta; each quantum is committed to etcd exactly once
//! by a transaction fenced with the leader key's revision and the stored quantum
//! number; a new leader resumes from etcd where the last commit left it. Demands are
//! written to etcd by any replica before they are acknowledged.
//!
//! Modules: [`layout`] (the keys under `/fairshare/{pool}/`, the fixed-width quantum,
//! the pointer to a committed state and its shards), [`etcd`] (the service's
//! [`fairshare_service::replica::Replica`] on an etcd client: election, sync, commit,
//! demands), [`bench`] (`fairshare bench controller`: a commit's cost at N tenants),
//! [`testing`] (a real one-member etcd for tests).
//!
//! This is the only crate that knows etcd. It depends on the service (whose pool, API
//! and trait it serves) and never on the CLI; nothing but the CLI depends on it.

pub mod agent;
pub mod bench;
pub mod etcd;
pub mod fleet;
pub mod layout;
pub mod split;
pub mod testing;

pub use etcd::{EtcdOptions, EtcdReplica};
