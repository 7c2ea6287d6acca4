//! `fairshare bench controller`: what committing a quantum to etcd costs at N tenants.
//! A live pool of N tenants (Karma, alpha 1/2, every tenant demanding, so credits move
//! every quantum) leads on the given etcd under a pool name of its own and runs Q
//! quanta; each commit (the state's shards and the fenced transaction) is timed and
//! its bytes counted. The pool's keys are deleted after.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fairshare_service::config::ServeConfig;
use fairshare_service::pool::{Demand, LivePool, StartOptions};
use fairshare_service::replica::{Membership, Publication, Replica, ReplicaError, Role, Synced};
use serde::{Deserialize, Serialize};

use crate::etcd::{EtcdOptions, EtcdReplica};

/// What was measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControllerReport {
    /// Tenants.
    pub tenants: usize,
    /// Quanta committed.
    pub quanta: usize,
    /// Median time of one commit, ms.
    pub commit_p50_ms: f64,
    /// 99th percentile, ms.
    pub commit_p99_ms: f64,
    /// Mean bytes of state written per quantum.
    pub bytes_per_quantum: f64,
    /// Shards per quantum (requests of at most 1 MiB before the transaction).
    pub shards_per_quantum: usize,
    /// Median time of a whole quantum on the leader (sync, allocate, commit,
    /// publish), ms.
    pub quantum_p50_ms: f64,
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum ControllerBenchError {
    /// etcd could not be reached.
    #[error(transparent)]
    Etcd(#[from] crate::etcd::EtcdError),
    /// The pool could not start or run.
    #[error(transparent)]
    Service(#[from] fairshare_service::ServiceError),
    /// The simulated agents could not start.
    #[error("the simulated agents: {0}")]
    Fleet(String),
    /// The replica did not come to lead.
    #[error("the bench's replica did not lead within {0:?} (another holds /fairshare/{1}/leader?)")]
    NotLeader(Duration, String),
}

/// The replica, each commit timed.
struct Timed {
    inner: EtcdReplica,
    commits: Arc<Mutex<Vec<(Duration, usize)>>>,
}

impl Replica for Timed {
    fn start(&mut self, api: &str, lease_ttl: Duration) {
        self.inner.start(api, lease_ttl);
    }
    fn role(&mut self) -> Role {
        self.inner.role()
    }
    fn sync(&mut self) -> Result<Synced, ReplicaError> {
        self.inner.sync()
    }
    fn reset(&mut self) {
        self.inner.reset();
    }
    fn commit(&mut self, from: u64, state: &[u8]) -> Result<(), ReplicaError> {
        let start = Instant::now();
        let result = self.inner.commit(from, state);
        if result.is_ok() {
            self.commits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((start.elapsed(), state.len()));
        }
        result
    }
    fn publish(&mut self, publication: &Publication) -> Result<(), ReplicaError> {
        self.inner.publish(publication)
    }
    fn put_demand(&mut self, tenant: &str, slices: u64) -> Result<(), ReplicaError> {
        self.inner.put_demand(tenant, slices)
    }
    fn put_member(&mut self, change: &Membership) -> Result<(), ReplicaError> {
        self.inner.put_member(change)
    }
}

/// A pool of `config` on the software backend, for a bench.
pub(crate) fn software_pool(config: ServeConfig) -> Result<LivePool, ControllerBenchError> {
    let start = StartOptions {
        backend: fairshare_backends::Backend::Software,
        device: fairshare_backends::DeviceOptions::new(fairshare::offload::Verify::Async, 1_000),
        state: None,
        accept_config_changes: false,
    };
    Ok(LivePool::start(config, start)?)
}

/// Makes `pool` a replica through `replica` and waits (at most 10 s) until it leads
/// (its first quantum runs then).
pub(crate) fn lead(pool: &mut LivePool, replica: Box<dyn Replica>, name: &str) -> Result<(), ControllerBenchError> {
    pool.set_replica(replica)?;
    pool.start_replica("bench");
    let wait = Duration::from_secs(10);
    let deadline = Instant::now() + wait;
    while !pool.tick().is_ok_and(|v| v.is_some()) {
        if Instant::now() > deadline {
            return Err(ControllerBenchError::NotLeader(wait, name.to_string()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted.get(((sorted.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(0.0)
}

/// Runs Q quanta of N tenants on the etcd at `endpoints`.
pub fn measure(
    endpoints: Vec<String>,
    tenants: usize,
    quanta: usize,
) -> Result<ControllerReport, ControllerBenchError> {
    let pool_name = format!("bench-{}-{tenants}", std::process::id());
    let mut text = format!(
        "[pool]\ncapacity = {}\nquantum = \"200ms\"\npolicy = \"karma\"\nalpha = 0.5\ninitial_credits = 100\n\
         max_tenants = {}\n[demand]\nsource = \"declared\"\n[enforce]\nkind = \"none\"\n",
        tenants * 4,
        tenants.max(1)
    );
    for t in 0..tenants {
        text += &format!("[[tenants]]\nname = \"t{t}\"\n");
    }
    let config = ServeConfig::parse("bench controller", &text).map_err(fairshare_service::ServiceError::from)?;
    let mut pool = software_pool(config)?;
    // Demands around the fair share (4 slices): some lend, some borrow, credits move.
    for t in 0..tenants {
        pool.set_demand(&format!("t{t}"), Demand::Slices((t as u64 * 7919) % 9))?;
    }
    let options = EtcdOptions { endpoints, pool: pool_name.clone(), timeout: Duration::from_secs(10) };
    let cleanup = EtcdReplica::connect(options.clone())?;
    let commits = Arc::new(Mutex::new(Vec::new()));
    lead(
        &mut pool,
        Box::new(Timed { inner: EtcdReplica::connect(options)?, commits: Arc::clone(&commits) }),
        &pool_name,
    )?;
    let mut quantum_ms = Vec::with_capacity(quanta);
    for _ in 0..quanta {
        let start = Instant::now();
        pool.run_quantum()?;
        quantum_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    drop(pool);
    cleanup.delete_pool();
    let commits = commits.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    // The first commit (the one that found the replica leading) is left out.
    let measured = &commits[commits.len().saturating_sub(quanta)..];
    let mut ms: Vec<f64> = measured.iter().map(|(d, _)| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    quantum_ms.sort_by(f64::total_cmp);
    let bytes = measured.iter().map(|(_, b)| *b as f64).sum::<f64>() / measured.len().max(1) as f64;
    Ok(ControllerReport {
        tenants,
        quanta: measured.len(),
        commit_p50_ms: percentile(&ms, 0.5),
        commit_p99_ms: percentile(&ms, 0.99),
        bytes_per_quantum: bytes,
        shards_per_quantum: (bytes as usize).div_ceil(crate::layout::SHARD_BYTES).max(1),
        quantum_p50_ms: percentile(&quantum_ms, 0.5),
    })
}
