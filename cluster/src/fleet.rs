//! `fairshare bench cluster`: the leader of a pool of N tenants against a real etcd with
//! H simulated agents in this process (each with its own lease and its own watch of
//! `alloc/{host}`, spread over a few client connections, publishing its hosts' demands
//! every period at its own offset in it), Q quanta on the period's clock. Per quantum:
//! the leader's demand collection (its sync: the hosts' demands read at one revision),
//! allocation, commit, publication, the fan-out to the last agent (from the
//! publication's start until the last agent received its part), the whole quantum
//! (from its start until then), and the bytes of values through etcd. The pool's keys
//! are deleted after.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, EventType, PutOptions, WatchOptions};
use fairshare_service::config::ServeConfig;
use fairshare_service::pool::LivePool;
use fairshare_service::replica::{Membership, Publication, Replica, ReplicaError, Role, Synced};
use serde::{Deserialize, Serialize};

use crate::bench::{lead, percentile, software_pool, ControllerBenchError};
use crate::etcd::{EtcdOptions, EtcdReplica};
use crate::layout::{HostAlloc, HostDemand, Keys};

/// What `bench cluster` runs.
#[derive(Debug, Clone)]
pub struct FleetRun {
    /// etcd's client URLs.
    pub endpoints: Vec<String>,
    /// Simulated hosts (agents).
    pub hosts: usize,
    /// Tenants (each on 1 to 3 hosts).
    pub tenants: usize,
    /// Quanta measured.
    pub quanta: usize,
    /// The quantum's period.
    pub period: Duration,
}

/// What was measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetReport {
    /// Simulated hosts.
    pub hosts: usize,
    /// Tenants.
    pub tenants: usize,
    /// Quanta measured.
    pub quanta: usize,
    /// The period, ms.
    pub period_ms: f64,
    /// The leader's collection of the demands (its sync), ms.
    pub collect_p50_ms: f64,
    /// 99th percentile.
    pub collect_p99_ms: f64,
    /// The allocation (the quantum on the leader but its calls to etcd), ms.
    pub allocate_p50_ms: f64,
    /// 99th percentile.
    pub allocate_p99_ms: f64,
    /// The commit (the state's shards and the fenced transaction), ms.
    pub commit_p50_ms: f64,
    /// 99th percentile.
    pub commit_p99_ms: f64,
    /// The publication (every host's allocation written), ms.
    pub publish_p50_ms: f64,
    /// 99th percentile.
    pub publish_p99_ms: f64,
    /// From the publication's start until the last agent received its part, ms.
    pub fanout_p50_ms: f64,
    /// 99th percentile.
    pub fanout_p99_ms: f64,
    /// From the quantum's start until the last agent received its part, ms.
    pub quantum_p50_ms: f64,
    /// 99th percentile.
    pub quantum_p99_ms: f64,
    /// Bytes of values through etcd per quantum: the state, the demands the agents put
    /// and the leader read, the allocations written and delivered.
    pub bytes_per_quantum: f64,
    /// Of those, the state committed.
    pub state_bytes_per_quantum: f64,
    /// The fewest agents any measured quantum reached (of `hosts`).
    pub agents_reached_min: usize,
    /// Quanta whose whole time (to the last agent) was over the period.
    pub quanta_over_period: usize,
}

/// One quantum as the leader's replica saw it.
#[derive(Debug, Clone, Copy, Default)]
struct Phases {
    collect: Duration,
    commit: Duration,
    publish: Duration,
    publish_start: Option<Instant>,
    state_bytes: usize,
    demands_read: usize,
    published: usize,
}

/// The replica, each call timed.
struct Timed {
    inner: EtcdReplica,
    now: Arc<Mutex<Phases>>,
}

impl Timed {
    fn record(&self, f: impl FnOnce(&mut Phases)) {
        f(&mut self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    }
}

impl Replica for Timed {
    fn start(&mut self, api: &str, lease_ttl: Duration) {
        self.inner.start(api, lease_ttl);
    }
    fn role(&mut self) -> Role {
        self.inner.role()
    }
    fn sync(&mut self) -> Result<Synced, ReplicaError> {
        let start = Instant::now();
        let r = self.inner.sync();
        let read = self.inner.traffic().demands_read;
        self.record(|p| {
            p.collect = start.elapsed();
            p.demands_read = read;
        });
        r
    }
    fn reset(&mut self) {
        self.inner.reset();
    }
    fn commit(&mut self, from: u64, state: &[u8]) -> Result<(), ReplicaError> {
        let start = Instant::now();
        let r = self.inner.commit(from, state);
        self.record(|p| {
            p.commit = start.elapsed();
            p.state_bytes = state.len();
        });
        r
    }
    fn publish(&mut self, publication: &Publication) -> Result<(), ReplicaError> {
        let start = Instant::now();
        let r = self.inner.publish(publication);
        let published = self.inner.traffic().published;
        self.record(|p| {
            p.publish = start.elapsed();
            p.publish_start = Some(start);
            p.published = published;
        });
        r
    }
    fn put_demand(&mut self, tenant: &str, slices: u64) -> Result<(), ReplicaError> {
        self.inner.put_demand(tenant, slices)
    }
    fn put_member(&mut self, change: &Membership) -> Result<(), ReplicaError> {
        self.inner.put_member(change)
    }
}

/// The hosts tenant `t` sends from: 1 to 3, spread over the fleet.
fn hosts_of(t: usize, hosts: usize) -> Vec<usize> {
    let mut out: Vec<usize> = [t, t * 7 + 1, t * 13 + 2].iter().take(1 + t % 3).map(|h| h % hosts).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// A pseudo-random demand (0 to 11 slices) of a tenant on a host in a period.
fn demand(t: usize, host: usize, period: u64) -> u64 {
    // splitmix64 of the three.
    let mut z = ((t as u64) ^ ((host as u64) << 24) ^ (period << 44)).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % 12
}

/// When each quantum reached how many agents, the last one when.
type Reached = Arc<Mutex<HashMap<u64, (usize, Instant)>>>;

/// One simulated agent: a lease, a watch of its allocation, its demand put every period.
#[allow(clippy::too_many_arguments)]
async fn agent(
    mut client: Client,
    keys: Keys,
    host: usize,
    tenants: Vec<String>,
    period: Duration,
    offset: Duration,
    reached: Reached,
    written: Arc<AtomicUsize>,
    delivered: Arc<AtomicUsize>,
    ready: Arc<AtomicUsize>,
) -> Result<(), etcd_client::Error> {
    let name = format!("h{host}");
    let lease = client.lease_grant(300, None).await?.id();
    let mut stream = client.watch(keys.alloc(&name), Some(WatchOptions::new())).await?;
    ready.fetch_add(1, Ordering::Relaxed);
    let mut publisher = client.clone();
    let key = keys.host_demand(&name);
    tokio::spawn(async move {
        tokio::time::sleep(offset).await;
        let mut tick = tokio::time::interval(period);
        for n in 0u64.. {
            tick.tick().await;
            let demands = tenants
                .iter()
                .filter_map(|t| {
                    let index: usize = t[1..].parse().unwrap_or(0);
                    let d = demand(index, host, n);
                    (d > 0).then(|| (t.clone(), d))
                })
                .collect();
            let value = serde_json::to_vec(&HostDemand { quantum: 0, demands }).unwrap_or_default();
            written.fetch_add(value.len(), Ordering::Relaxed);
            if publisher.put(key.clone(), value, Some(PutOptions::new().with_lease(lease))).await.is_err() {
                return;
            }
        }
    });
    while let Some(message) = stream.message().await? {
        for event in message.events() {
            let Some(kv) = event.kv() else { continue };
            if event.event_type() != EventType::Put {
                continue;
            }
            let at = Instant::now();
            delivered.fetch_add(kv.value().len(), Ordering::Relaxed);
            if let Ok(a) = serde_json::from_slice::<HostAlloc>(kv.value()) {
                let mut r = reached.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let e = r.entry(a.quantum).or_insert((0, at));
                e.0 += 1;
                e.1 = e.1.max(at);
            }
        }
    }
    Ok(())
}

fn start_error(e: impl std::fmt::Display) -> ControllerBenchError {
    ControllerBenchError::Fleet(e.to_string())
}

/// Runs the leader and the fleet for Q quanta.
pub fn measure(run: &FleetRun) -> Result<FleetReport, ControllerBenchError> {
    let FleetRun { hosts, tenants, quanta, period, .. } = *run;
    if hosts == 0 || tenants == 0 || quanta == 0 {
        return Err(start_error("hosts, tenants and quanta must be at least 1"));
    }
    let pool_name = format!("fleet-{}-{hosts}-{tenants}", std::process::id());
    let mut pool = software_pool(fleet_config(tenants, period)?)?;
    let options =
        EtcdOptions { endpoints: run.endpoints.clone(), pool: pool_name.clone(), timeout: Duration::from_secs(10) };
    let cleanup = EtcdReplica::connect(options.clone())?;

    // The fleet, on a runtime of its own, over a few connections.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fairshare-fleet")
        .enable_all()
        .build()
        .map_err(start_error)?;
    let fleet = Fleet::spawn(&runtime, run, &pool_name)?;
    fleet.wait_ready(hosts)?;
    // A period for every agent's first demand.
    std::thread::sleep(period + Duration::from_millis(100));

    let phases = Arc::new(Mutex::new(Phases::default()));
    lead(&mut pool, Box::new(Timed { inner: EtcdReplica::connect(options)?, now: Arc::clone(&phases) }), &pool_name)?;
    let written_before = fleet.written.load(Ordering::Relaxed);
    let delivered_before = fleet.delivered.load(Ordering::Relaxed);
    let runs = run_quanta(&mut pool, &phases, quanta, period)?;
    // The last quantum's fan-out.
    std::thread::sleep(Duration::from_secs(2).max(period));
    let written_total = fleet.written.load(Ordering::Relaxed) - written_before;
    let delivered_total = fleet.delivered.load(Ordering::Relaxed) - delivered_before;
    drop(pool);
    drop(runtime);
    cleanup.delete_pool();
    if let Some(e) = fleet.failure() {
        return Err(start_error(e));
    }

    let reached = fleet.reached.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let samples = Samples::of(&runs, &reached, hosts);
    Ok(samples.report(run, written_total + delivered_total))
}

/// The configuration of the benchmark's pool: `tenants` tenants t0, t1, ... whose
/// demands the agents report, 10 slices each, no enforcement.
fn fleet_config(tenants: usize, period: Duration) -> Result<ServeConfig, ControllerBenchError> {
    let mut text = format!(
        "[pool]\ncapacity = {}\nquantum = \"{}ms\"\npolicy = \"karma\"\nalpha = 0.5\ninitial_credits = 1000\n\
         max_tenants = {tenants}\n[demand]\nsource = \"agents\"\n[enforce]\nkind = \"none\"\n",
        tenants * 10,
        period.as_millis()
    );
    for t in 0..tenants {
        text += &format!("[[tenants]]\nname = \"t{t}\"\nmatch = {{ fwmark = {} }}\n", t + 1);
    }
    Ok(ServeConfig::parse("bench cluster", &text).map_err(fairshare_service::ServiceError::from)?)
}

/// The simulated agents as the measurement sees them: when each quantum reached them,
/// the bytes they wrote and received, how many watch, and the first one's failure.
#[derive(Default)]
struct Fleet {
    reached: Reached,
    written: Arc<AtomicUsize>,
    delivered: Arc<AtomicUsize>,
    ready: Arc<AtomicUsize>,
    failed: Arc<Mutex<Option<String>>>,
}

impl Fleet {
    /// Starts an agent for every host of `run` on `runtime`, each publishing the
    /// demands of its tenants in the pool `pool_name`, at its own offset in the period.
    fn spawn(
        runtime: &tokio::runtime::Runtime,
        run: &FleetRun,
        pool_name: &str,
    ) -> Result<Fleet, ControllerBenchError> {
        let FleetRun { hosts, tenants, period, .. } = *run;
        // At most 100 agents' watches on one connection: etcd's gRPC server takes 250
        // streams on one (Go's HTTP/2 default), and each put is one more.
        let connections = hosts.div_ceil(100).max(1);
        let clients: Vec<Client> = runtime
            .block_on(async {
                let mut out = Vec::new();
                for _ in 0..connections {
                    out.push(crate::etcd::connect(&run.endpoints, Duration::from_secs(10), false).await?);
                }
                Ok::<_, String>(out)
            })
            .map_err(start_error)?;
        let keys = Keys::new(pool_name);
        let fleet = Fleet::default();
        for (h, names) in tenants_by_host(tenants, hosts).into_iter().enumerate() {
            let offset = period * h as u32 / hosts as u32;
            let failure = Arc::clone(&fleet.failed);
            let simulated = agent(
                clients[h % connections].clone(),
                keys.clone(),
                h,
                names,
                period,
                offset,
                Arc::clone(&fleet.reached),
                Arc::clone(&fleet.written),
                Arc::clone(&fleet.delivered),
                Arc::clone(&fleet.ready),
            );
            runtime.spawn(async move {
                if let Err(e) = simulated.await {
                    failure
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert(format!("agent h{h}: {e}"));
                }
            });
        }
        Ok(fleet)
    }

    /// The first agent's failure, if any.
    fn failure(&self) -> Option<String> {
        self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Waits until all `hosts` agents watch their allocations (at most 60 s); an agent's
    /// failure ends the wait.
    fn wait_ready(&self, hosts: usize) -> Result<(), ControllerBenchError> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.ready.load(Ordering::Relaxed) < hosts {
            if let Some(e) = self.failure() {
                return Err(start_error(e));
            }
            if Instant::now() > deadline {
                return Err(start_error(format!(
                    "{} of {hosts} agents watched within 60 s",
                    self.ready.load(Ordering::Relaxed)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// The tenants' names on each host ([`hosts_of`]).
fn tenants_by_host(tenants: usize, hosts: usize) -> Vec<Vec<String>> {
    let mut by_host: Vec<Vec<String>> = vec![Vec::new(); hosts];
    for t in 0..tenants {
        for h in hosts_of(t, hosts) {
            by_host[h].push(format!("t{t}"));
        }
    }
    by_host
}

/// One measured quantum: its number, its start, the leader's whole time, its phases.
type Run = (u64, Instant, Duration, Phases);

/// Runs `quanta` quanta on the leader, one every `period`, each with the phases its
/// replica timed.
fn run_quanta(
    pool: &mut LivePool,
    phases: &Mutex<Phases>,
    quanta: usize,
    period: Duration,
) -> Result<Vec<Run>, ControllerBenchError> {
    let mut runs = Vec::with_capacity(quanta);
    let mut next = Instant::now();
    for _ in 0..quanta {
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        next += period;
        let start = Instant::now();
        let view = pool.run_quantum()?;
        let took = start.elapsed();
        let p = *phases.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        runs.push((view.quantum, start, took, p));
    }
    Ok(runs)
}

/// The measured quanta's times per phase, ms, sorted, and what they add up to.
struct Samples {
    quanta: usize,
    collect: Vec<f64>,
    allocate: Vec<f64>,
    commit: Vec<f64>,
    publish: Vec<f64>,
    fanout: Vec<f64>,
    whole: Vec<f64>,
    /// The fewest agents any quantum reached.
    reached_min: usize,
    /// Bytes the leader read and wrote: states, demands read, allocations published.
    leader_bytes: usize,
    state_bytes: usize,
}

/// A duration in milliseconds.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Samples {
    /// The samples of `runs`, with when each quantum `reached` the agents (of `hosts`).
    fn of(runs: &[Run], reached: &HashMap<u64, (usize, Instant)>, hosts: usize) -> Samples {
        let mut s = Samples {
            quanta: runs.len(),
            collect: Vec::new(),
            allocate: Vec::new(),
            commit: Vec::new(),
            publish: Vec::new(),
            fanout: Vec::new(),
            whole: Vec::new(),
            reached_min: hosts,
            leader_bytes: 0,
            state_bytes: 0,
        };
        for (q, start, took, p) in runs {
            s.collect.push(ms(p.collect));
            s.commit.push(ms(p.commit));
            s.publish.push(ms(p.publish));
            s.allocate.push(ms(took.saturating_sub(p.collect + p.commit + p.publish)));
            s.leader_bytes += p.state_bytes + p.demands_read + p.published;
            s.state_bytes += p.state_bytes;
            let (count, last) = reached.get(q).copied().unwrap_or((0, *start));
            s.reached_min = s.reached_min.min(count);
            if let Some(ps) = p.publish_start {
                s.fanout.push(ms(last.saturating_duration_since(ps)));
            }
            s.whole.push(ms(last.saturating_duration_since(*start).max(*took)));
        }
        for v in [&mut s.collect, &mut s.allocate, &mut s.commit, &mut s.publish, &mut s.fanout, &mut s.whole] {
            v.sort_by(f64::total_cmp);
        }
        s
    }

    /// The report of `run`, with `agent_bytes` the agents wrote and received.
    fn report(self, run: &FleetRun, agent_bytes: usize) -> FleetReport {
        let n = self.quanta.max(1) as f64;
        let period_ms = ms(run.period);
        FleetReport {
            hosts: run.hosts,
            tenants: run.tenants,
            quanta: self.quanta,
            period_ms,
            collect_p50_ms: percentile(&self.collect, 0.5),
            collect_p99_ms: percentile(&self.collect, 0.99),
            allocate_p50_ms: percentile(&self.allocate, 0.5),
            allocate_p99_ms: percentile(&self.allocate, 0.99),
            commit_p50_ms: percentile(&self.commit, 0.5),
            commit_p99_ms: percentile(&self.commit, 0.99),
            publish_p50_ms: percentile(&self.publish, 0.5),
            publish_p99_ms: percentile(&self.publish, 0.99),
            fanout_p50_ms: percentile(&self.fanout, 0.5),
            fanout_p99_ms: percentile(&self.fanout, 0.99),
            quantum_p50_ms: percentile(&self.whole, 0.5),
            quantum_p99_ms: percentile(&self.whole, 0.99),
            bytes_per_quantum: (self.leader_bytes + agent_bytes) as f64 / n,
            state_bytes_per_quantum: self.state_bytes as f64 / n,
            agents_reached_min: self.reached_min,
            quanta_over_period: self.whole.iter().filter(|&&w| w > period_ms).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tenant_is_on_one_to_three_hosts_and_every_host_is_used() {
        let hosts = 1000;
        let mut used = vec![0; hosts];
        for t in 0..10_000 {
            let h = hosts_of(t, hosts);
            assert!((1..=3).contains(&h.len()), "{t}: {h:?}");
            for x in h {
                used[x] += 1;
            }
        }
        assert!(used.iter().all(|&u| u > 0));
        assert!((0..100).map(|p| demand(5, 3, p)).any(|d| d == 0) && (0..100).all(|p| demand(5, 3, p) < 12));
    }
}
