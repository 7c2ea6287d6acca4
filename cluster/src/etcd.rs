//! The service's [`Replica`] on etcd: a campaign under a lease for leadership, the
//! committed state read back (sync), each quantum committed by one fenced transaction,
//! demands put by any replica.
//!
//! The calls the pool makes block on a runtime of this replica's own (one worker), which
//! also keeps the lease alive and campaigns in the background. Every call has a
//! deadline ([`EtcdOptions::timeout`]): an etcd that does not answer is an error the
//! pool shows, never a hang of the clock.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse,
};
use fairshare_service::replica::{Membership, Publication, Replica, ReplicaError, Role, Synced};

use crate::layout::{
    parse_quantum, quantum_bytes, shards, AgentConfig, AgentTenant, HostAlloc, HostDemand, Keys, Pointer, SHARD_BYTES,
};
use crate::split::split;

/// How a replica reaches etcd and campaigns.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// etcd's client URLs (`http://127.0.0.1:2379`).
    pub endpoints: Vec<String>,
    /// The pool's name: its keys are under `/fairshare/{pool}/`.
    pub pool: String,
    /// The longest one call to etcd may take.
    pub timeout: Duration,
}

/// Why the replica could not start.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// Its runtime could not be made.
    #[error("starting the etcd client's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// etcd did not answer.
    #[error("etcd at {endpoints}: {reason}")]
    Unreachable {
        /// The URLs tried.
        endpoints: String,
        /// What went wrong.
        reason: String,
    },
}

/// This replica's hold on the leadership, while it has one.
#[derive(Debug, Clone)]
struct Held {
    /// The election key it holds (deleted with its lease).
    key: Vec<u8>,
    /// The key's create revision: the fence of every commit, and the term's name.
    revision: i64,
    /// Told when a commit found this term over: the campaign gives it up. One per
    /// term, so that a late word about an old term cannot end a newer one.
    deposed: Arc<tokio::sync::Notify>,
}

/// What the background campaign and the pool's calls share.
#[derive(Default)]
struct Shared {
    held: Mutex<Option<Held>>,
}

impl Shared {
    fn held(&self) -> MutexGuard<'_, Option<Held>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A replica of a pool on etcd.
pub struct EtcdReplica {
    runtime: tokio::runtime::Runtime,
    client: Client,
    keys: Keys,
    options: EtcdOptions,
    shared: Arc<Shared>,
    /// The committed state this replica has (taken or committed), if any.
    seen: Option<Pointer>,
    /// The store's revision up to which demands were taken.
    demands_revision: i64,
    /// This replica's API address, as advertised.
    api: Option<String>,
    /// Commit attempts so far: each writes its shards under a generation of its own.
    attempts: u64,
    /// What each live host's agent measured, as the leader read it at its last sync.
    hosts: BTreeMap<String, HostDemand>,
    /// The hosts the last publication wrote an allocation for.
    published: BTreeSet<String>,
    /// The agents' configuration last written, and in which term.
    config: Option<(i64, Vec<u8>)>,
    /// Bytes of values moved by the last sync's read of the hosts' demands and by
    /// the last publication.
    traffic: Traffic,
}

/// Bytes of values a leader moved through etcd (keys and framing not counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// The hosts' demands read by the last sync.
    pub demands_read: usize,
    /// The allocations (and configuration) written by the last publication.
    pub published: usize,
}

impl EtcdReplica {
    /// Connects to etcd (it must answer now; later outages are the pool's to show).
    pub fn connect(options: EtcdOptions) -> Result<EtcdReplica, EtcdError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fairshare-etcd")
            .enable_all()
            .build()
            .map_err(EtcdError::Runtime)?;
        let unreachable = |reason: String| EtcdError::Unreachable { endpoints: options.endpoints.join(","), reason };
        let client = runtime.block_on(connect(&options.endpoints, options.timeout, false)).map_err(unreachable)?;
        Ok(EtcdReplica {
            runtime,
            client,
            keys: Keys::new(&options.pool),
            options,
            shared: Arc::new(Shared::default()),
            seen: None,
            demands_revision: 0,
            api: None,
            attempts: 0,
            hosts: BTreeMap::new(),
            published: BTreeSet::new(),
            config: None,
            traffic: Traffic::default(),
        })
    }

    /// Runs one call to etcd within the deadline.
    fn call<T>(&self, what: &str, f: impl Future<Output = Result<T, etcd_client::Error>>) -> Result<T, ReplicaError> {
        let timeout = self.options.timeout;
        self.runtime.block_on(async {
            match tokio::time::timeout(timeout, f).await {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(store(what, e)),
                Err(_) => Err(store(what, NoAnswer(timeout))),
            }
        })
    }

    /// Gives up the term of `revision` (a commit found it over), if it is still the
    /// current one: the campaign starts again.
    fn step_down(&self, revision: i64) {
        let mut held = self.shared.held();
        if let Some(h) = held.as_ref().filter(|h| h.revision == revision) {
            h.deposed.notify_one();
            *held = None;
        }
    }

    /// Deletes the generations that can no longer be pointed to once quantum `q` is
    /// committed with generation `keep` (each would need the store at an older
    /// quantum): those of quanta up to `q`, failed attempts included. Newer ones (a
    /// successor's, being written) are left alone.
    fn forget_older(&self, q: u64, keep: &str) {
        let mut client = self.client.clone();
        let prefix = self.keys.ledger();
        let Ok(got) = self.call(
            "listing old shards",
            client.get(prefix.clone(), Some(GetOptions::new().with_prefix().with_keys_only())),
        ) else {
            return;
        };
        let mut old = std::collections::BTreeSet::new();
        for kv in got.kvs() {
            let rest = &kv.key()[prefix.len().min(kv.key().len())..];
            let Some(generation) = std::str::from_utf8(rest).ok().and_then(|r| r.split('/').next()) else { continue };
            let Some(number) = generation.get(..20).and_then(|n| parse_quantum(n.as_bytes()).ok()) else { continue };
            if number <= q && generation != keep && rest.len() > generation.len() {
                old.insert(generation.to_string());
            }
        }
        for generation in old {
            self.forget(&generation);
        }
    }

    /// Deletes the joins and leaves that a committed state took (put up to `revision`).
    fn forget_members(&self, revision: i64) {
        let mut client = self.client.clone();
        let options = GetOptions::new().with_prefix().with_keys_only().with_max_mod_revision(revision);
        let Ok(got) = self.call("listing applied joins and leaves", client.get(self.keys.members(), Some(options)))
        else {
            return;
        };
        for kv in got.kvs() {
            let _ = self.call("deleting an applied join or leave", client.delete(kv.key().to_vec(), None));
        }
    }

    /// Deletes a generation's shards (one that did not commit, or was replaced).
    fn forget(&self, generation: &str) {
        let mut client = self.client.clone();
        let prefix = self.keys.generation(generation);
        let _ = self.call("deleting old shards", client.delete(prefix, Some(DeleteOptions::new().with_prefix())));
    }

    /// Bytes of values the last sync and publication moved.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// Deletes every key of this replica's pool (a bench's, after it ran).
    pub fn delete_pool(&self) {
        let mut client = self.client.clone();
        let prefix = self.keys.leader().trim_end_matches("leader").to_string();
        let _ = self.call("deleting the pool", client.delete(prefix, Some(DeleteOptions::new().with_prefix())));
    }

    /// Takes `pointer` as committed by this replica: what it replaced, and the joins
    /// and leaves it took, are deleted.
    fn committed(&mut self, pointer: Pointer) {
        let (q, keep, revision) = (pointer.quantum, pointer.generation.clone(), pointer.demands_revision);
        self.seen = Some(pointer);
        self.forget_older(q, &keep);
        self.forget_members(revision);
    }

    /// The pointer stored now, if any.
    fn current(&self) -> Result<Option<Pointer>, ReplicaError> {
        let mut client = self.client.clone();
        let got = self.call("reading the committed pointer", client.get(self.keys.current(), None))?;
        got.kvs().first().map(|kv| pointer(kv.value())).transpose()
    }
}

/// The largest agents' configuration, bytes: it goes in one request, and etcd takes
/// requests of up to 1.5 MiB by default (about 57 bytes a tenant with a port or mark
/// match: some 25,000 tenants).
const CONFIG_BYTES: usize = 1_400_000;

/// The most operations of one publication's transaction (etcd takes 128 by default).
const PUBLISH_BATCH: usize = 100;

impl EtcdReplica {
    /// Reads what the hosts' agents measure (as of `revision`), keeps it for the
    /// publication, and sums it per tenant.
    fn read_hosts(&mut self, revision: i64) -> Result<Vec<(String, u64)>, ReplicaError> {
        let mut client = self.client.clone();
        let prefix = self.keys.host_demands();
        let at = GetOptions::new().with_prefix().with_revision(revision);
        let got = self.call("reading the hosts' demands", client.get(prefix.clone(), Some(at)))?;
        let mut hosts = BTreeMap::new();
        self.traffic.demands_read = got.kvs().iter().map(|kv| kv.value().len()).sum();
        for kv in got.kvs() {
            let host = String::from_utf8_lossy(&kv.key()[prefix.len().min(kv.key().len())..]).into_owned();
            // One agent's bad record is that host's problem, not the pool's: it is left out.
            match serde_json::from_slice::<HostDemand>(kv.value()) {
                Ok(d) => {
                    hosts.insert(host, d);
                }
                Err(e) => eprintln!("fairshare controller: the demand of host `{host}` cannot be read, left out: {e}"),
            }
        }
        let mut sums: BTreeMap<String, u64> = BTreeMap::new();
        for d in hosts.values() {
            for (tenant, &slices) in &d.demands {
                let sum = sums.entry(tenant.clone()).or_default();
                *sum = sum.saturating_add(slices);
            }
        }
        self.hosts = hosts;
        Ok(sums.into_iter().collect())
    }
}

/// What the agents need of the pool, from a publication.
pub fn agent_config(p: &Publication) -> AgentConfig {
    AgentConfig {
        slice_bps: p.slice_bps,
        slices: p.slices,
        period_ms: p.period.as_millis() as u64,
        lease_ttl_s: p.lease_ttl.as_secs().max(1),
        stale_after_ms: p.agents.stale_after.as_millis() as u64,
        fallback_after_ms: p.agents.fallback_after.as_millis() as u64,
        max_packet: p.agents.max_packet,
        tenants: p
            .tenants
            .iter()
            .map(|t| AgentTenant { name: t.name.clone(), guaranteed: t.guaranteed, selector: t.selector.clone() })
            .collect(),
    }
}

/// Each live host's part of a publication: every tenant's allocation split among the
/// hosts that measured a demand for it ([`split`], hosts by name). A tenant no host
/// measured is held at the floor everywhere.
pub fn host_allocs(
    p: &Publication,
    hosts: &BTreeMap<String, HostDemand>,
    effective_at_ms: u64,
) -> BTreeMap<String, HostAlloc> {
    let mut out: BTreeMap<String, HostAlloc> = hosts
        .keys()
        .map(|h| (h.clone(), HostAlloc { quantum: p.quantum, effective_at_ms, tenants: BTreeMap::new() }))
        .collect();
    // Each tenant's hosts (by name) with their demands, in one pass over the hosts'
    // records: linear in what the hosts measured, not in tenants x hosts.
    let mut wanting: HashMap<&str, Vec<(&String, u64)>> = HashMap::new();
    for (h, d) in hosts {
        for (tenant, &slices) in &d.demands {
            if slices > 0 {
                // A host's record is its own: no more than the pool counts from it.
                wanting.entry(tenant.as_str()).or_default().push((h, slices.min(p.slices)));
            }
        }
    }
    for t in &p.tenants {
        let Some(on) = wanting.get(t.name.as_str()) else { continue };
        let demands: Vec<u64> = on.iter().map(|&(_, s)| s).collect();
        for (&(host, _), part) in on.iter().zip(split(t.slices, &demands)) {
            if part > 0 {
                if let Some(a) = out.get_mut(host) {
                    a.tenants.insert(t.name.clone(), (part, t.slices));
                }
            }
        }
    }
    out
}

/// A client of etcd at `endpoints` once the cluster answers a first read, each step
/// within `timeout`; or why not. HTTP/2 pings within `timeout` too: a connection that
/// went silent (a host or a route gone) is seen as dead then, not when TCP gives up.
/// With `require_leader`, a member cut off from the others answers nothing rather than
/// old news (the agents' watches need it).
pub(crate) async fn connect(endpoints: &[String], timeout: Duration, require_leader: bool) -> Result<Client, String> {
    let options = ConnectOptions::new()
        .with_connect_timeout(timeout)
        .with_keep_alive(timeout, timeout)
        .with_keep_alive_while_idle(true)
        .with_require_leader(require_leader);
    let late = |_| format!("no answer within {timeout:?}");
    let mut client = tokio::time::timeout(timeout, Client::connect(endpoints, Some(options)))
        .await
        .map_err(late)?
        .map_err(|e| e.to_string())?;
    tokio::time::timeout(timeout, client.get("/fairshare/", Some(GetOptions::new().with_limit(1))))
        .await
        .map_err(late)?
        .map_err(|e| e.to_string())?;
    Ok(client)
}

/// etcd did not answer a call within its deadline.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {0:?}")]
struct NoAnswer(Duration);

/// An error of etcd's on `call`.
fn store(call: &str, source: impl std::error::Error + Send + Sync + 'static) -> ReplicaError {
    ReplicaError::Store { store: "etcd", call: call.to_string(), source: Box::new(source) }
}

/// A stored pointer, or why it is not one.
fn pointer(bytes: &[u8]) -> Result<Pointer, ReplicaError> {
    serde_json::from_slice(bytes).map_err(|e| ReplicaError::Damaged(format!("a ledger pointer it cannot read: {e}")))
}

/// Holds a lease and campaigns with it, again whenever the lease is lost or a commit
/// found this replica deposed; records the leadership while it holds it.
async fn campaign(mut client: Client, keys: Keys, api: String, ttl: i64, shared: Arc<Shared>) {
    let pause = Duration::from_millis(500);
    let limit = Duration::from_secs(ttl.max(1) as u64);
    loop {
        let lease = match tokio::time::timeout(limit, client.lease_grant(ttl, None)).await {
            Ok(Ok(l)) => l.id(),
            _ => {
                tokio::time::sleep(pause).await;
                continue;
            }
        };
        let Ok(Ok((mut keeper, mut stream))) = tokio::time::timeout(limit, client.lease_keep_alive(lease)).await else {
            tokio::time::sleep(pause).await;
            continue;
        };
        // Renews the lease every third of its TTL; returns once a renewal is not
        // answered within the TTL (the lease may be gone: step down first).
        let period = limit / 3;
        let lost = async move {
            loop {
                let renewed = tokio::time::timeout(limit, async {
                    keeper.keep_alive().await.ok()?;
                    stream.message().await.ok().flatten().filter(|r| r.ttl() > 0)
                })
                .await;
                if !matches!(renewed, Ok(Some(_))) {
                    return;
                }
                tokio::time::sleep(period).await;
            }
        };
        tokio::pin!(lost);
        let mut elections = client.clone();
        let won = tokio::select! {
            won = elections.campaign(keys.leader(), api.clone(), lease) => won,
            () = &mut lost => continue,
        };
        let deposed = Arc::new(tokio::sync::Notify::new());
        let held = won.ok().and_then(|w| {
            w.leader().map(|k| Held { key: k.key().to_vec(), revision: k.rev(), deposed: Arc::clone(&deposed) })
        });
        if let Some(h) = held {
            let revision = h.revision;
            *shared.held() = Some(h);
            tokio::select! {
                () = &mut lost => {}
                () = deposed.notified() => {}
            }
            let mut held = shared.held();
            if held.as_ref().is_some_and(|h| h.revision == revision) {
                *held = None;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), client.lease_revoke(lease)).await;
        tokio::time::sleep(pause).await;
    }
}

impl Replica for EtcdReplica {
    fn start(&mut self, api: &str, lease_ttl: Duration) {
        self.api = Some(api.to_string());
        let (client, keys, shared) = (self.client.clone(), self.keys.clone(), Arc::clone(&self.shared));
        let ttl = i64::try_from(lease_ttl.as_secs()).unwrap_or(60).max(1);
        self.runtime.spawn(campaign(client, keys, api.to_string(), ttl, shared));
    }

    fn role(&mut self) -> Role {
        if self.shared.held().is_some() {
            return Role { leader: true, leader_api: self.api.clone() };
        }
        let mut client = self.client.clone();
        let leader_api = self
            .call("asking who leads", client.leader(self.keys.leader()))
            .ok()
            .and_then(|r| r.kv().map(|kv| String::from_utf8_lossy(kv.value()).into_owned()));
        Role { leader: false, leader_api }
    }

    fn sync(&mut self) -> Result<Synced, ReplicaError> {
        let mut client = self.client.clone();
        // The quantum and its pointer, read together.
        let read = Txn::new().and_then([TxnOp::get(self.keys.quantum(), None), TxnOp::get(self.keys.current(), None)]);
        let answer = self.call("reading the committed quantum", client.txn(read))?;
        let revision = answer.header().map_or(0, |h| h.revision());
        let mut found = answer.op_responses().into_iter().map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.value().to_vec()),
            _ => None,
        });
        let (quantum, current) = (found.next().flatten(), found.next().flatten());
        let current = current.as_deref().map(pointer).transpose()?;
        if let (Some(q), Some(p)) = (&quantum, &current) {
            let q = parse_quantum(q).map_err(ReplicaError::Damaged)?;
            if q != p.quantum {
                return Err(ReplicaError::Damaged(format!("quantum {q} with a pointer to quantum {}", p.quantum)));
            }
        }
        // Nothing is taken as seen until every read succeeded.
        let mut state = None;
        let mut since = self.demands_revision;
        let newer = current.filter(|p| self.seen.as_ref().map(|s| &s.generation) != Some(&p.generation));
        if let Some(p) = &newer {
            if p.shards != p.bytes.div_ceil(SHARD_BYTES).max(1) {
                return Err(ReplicaError::Damaged(format!(
                    "a pointer to {} shards for {} bytes (generation {})",
                    p.shards, p.bytes, p.generation
                )));
            }
            // A shard per request (an answer is limited to 4 MiB), all at one revision.
            let mut shards = Vec::with_capacity(p.shards);
            for i in 0..p.shards {
                let at = GetOptions::new().with_revision(revision);
                let got =
                    self.call("reading the committed state", client.get(self.keys.shard(&p.generation, i), Some(at)))?;
                if let Some(kv) = got.kvs().first() {
                    shards.push(kv.value().to_vec());
                }
            }
            state = Some(p.join(shards).map_err(ReplicaError::Damaged)?);
            since = p.demands_revision;
        }
        // The joins, leaves and demands put after those the state took, as of the same
        // revision.
        let after = || {
            GetOptions::new()
                .with_prefix()
                .with_revision(revision)
                .with_min_mod_revision(since + 1)
                .with_sort(SortTarget::Mod, SortOrder::Ascend)
        };
        let got = self.call("reading the joins and leaves", client.get(self.keys.members(), Some(after())))?;
        let members = got
            .kvs()
            .iter()
            .map(|kv| {
                serde_json::from_slice::<Membership>(kv.value()).map_err(|e| {
                    ReplicaError::Damaged(format!(
                        "a join or leave it cannot read ({}): {e}",
                        kv.key_str().unwrap_or("?")
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let got = self.call("reading the demands", client.get(self.keys.declared_demands(), Some(after())))?;
        let prefix = self.keys.declared_demands();
        let mut demands = Vec::new();
        for kv in got.kvs() {
            let tenant = String::from_utf8_lossy(&kv.key()[prefix.len().min(kv.key().len())..]).into_owned();
            let slices = std::str::from_utf8(kv.value()).ok().and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| {
                ReplicaError::Damaged(format!("a demand of `{tenant}` that is not a number of slices"))
            })?;
            demands.push((tenant, slices));
        }
        let measured = if self.shared.held().is_some() { Some(self.read_hosts(revision)?) } else { None };
        if let Some(p) = newer {
            self.seen = Some(p);
        }
        self.demands_revision = since.max(revision);
        Ok(Synced { state, members, demands, measured })
    }

    fn reset(&mut self) {
        self.seen = None;
        self.demands_revision = 0;
    }

    fn commit(&mut self, from: u64, state: &[u8]) -> Result<(), ReplicaError> {
        let Some(held) = self.shared.held().clone() else {
            let leader_api = self.role().leader_api;
            return Err(ReplicaError::NotLeader { leader_api });
        };
        let stored = self.seen.as_ref().map_or(0, |p| p.quantum);
        if from != stored {
            // The pool and what this replica took disagree: read the store again.
            self.reset();
            return Err(ReplicaError::Fenced(format!("this replica ran quantum {from}, the store is at {stored}")));
        }
        // The quantum, this leadership's revision and the attempt: no other attempt, of
        // this writer or another, ever writes these keys.
        self.attempts += 1;
        let generation = format!("{}-{:x}-{:x}", quantum_bytes(from + 1), held.revision, self.attempts);
        let mut client = self.client.clone();
        for (i, shard) in shards(state).into_iter().enumerate() {
            // On a failure nothing points to them: deleted with the next commit's older
            // generations.
            self.call("writing the state", client.put(self.keys.shard(&generation, i), shard, None))?;
        }
        let next = Pointer::of(state, from + 1, generation.clone(), self.demands_revision);
        let text = serde_json::to_vec(&next).map_err(|e| ReplicaError::Damaged(format!("a pointer: {e}")))?;
        let same_quantum = match &self.seen {
            None => Compare::version(self.keys.quantum(), CompareOp::Equal, 0),
            Some(_) => Compare::value(self.keys.quantum(), CompareOp::Equal, quantum_bytes(from)),
        };
        let txn = Txn::new()
            .when([Compare::create_revision(held.key.clone(), CompareOp::Equal, held.revision), same_quantum])
            .and_then([
                TxnOp::put(self.keys.quantum(), quantum_bytes(from + 1), None),
                TxnOp::put(self.keys.current(), text, None),
            ])
            .or_else([TxnOp::get(held.key.clone(), None), TxnOp::get(self.keys.quantum(), None)]);
        match self.call("committing the quantum", client.txn(txn)) {
            Ok(answer) if answer.succeeded() => {
                self.committed(next);
                Ok(())
            }
            Ok(answer) => {
                // Refused, and this attempt's keys are its own: they go.
                self.forget(&generation);
                let mut found = answer.op_responses().into_iter().map(|r| match r {
                    TxnOpResponse::Get(g) => g.kvs().first().map(|kv| (kv.create_revision(), kv.value().to_vec())),
                    _ => None,
                });
                let (key, quantum) = (found.next().flatten(), found.next().flatten());
                if key.map(|(rev, _)| rev) != Some(held.revision) {
                    self.step_down(held.revision);
                    return Err(ReplicaError::Fenced(
                        "this replica no longer leads (its lease ended; another may lead)".into(),
                    ));
                }
                self.reset();
                let at = quantum.map(|(_, q)| String::from_utf8_lossy(&q).into_owned()).unwrap_or_default();
                Err(ReplicaError::Fenced(format!("the store is at quantum {at}, this replica ran quantum {from}")))
            }
            Err(lost) => {
                // The answer was lost: the commit happened, or not, or may still. Read
                // it back; its keys stay either way (a transaction still on its way may
                // yet point to them), until a later commit makes them unreachable.
                match self.current() {
                    Ok(Some(p)) if p.generation == generation => {
                        self.committed(p);
                        Ok(())
                    }
                    Ok(_) => Err(store("committing the quantum (read back: not committed)", lost)),
                    Err(e) => Err(store(
                        "committing the quantum (whether it committed is not known yet: the next sync reads it)",
                        e,
                    )),
                }
            }
        }
    }

    fn publish(&mut self, publication: &Publication) -> Result<(), ReplicaError> {
        let Some(held) = self.shared.held().clone() else {
            let leader_api = self.role().leader_api;
            return Err(ReplicaError::NotLeader { leader_api });
        };
        let config = serde_json::to_vec(&agent_config(publication))
            .map_err(|e| ReplicaError::Damaged(format!("the agents' configuration: {e}")))?;
        let fence = || Compare::create_revision(held.key.clone(), CompareOp::Equal, held.revision);
        let mut client = self.client.clone();
        let mut bytes = 0;
        // Fenced as the commit is: a deposed leader publishes nothing. The
        // configuration first (alone: it must fit one request), then the hosts' parts.
        if self.config.as_ref().map(|c| c.0) != Some(held.revision) {
            // A new term: the hosts an earlier leader published for are known from etcd,
            // so that those gone since are taken out.
            let options = GetOptions::new().with_prefix().with_keys_only();
            let got = self.call("listing the hosts' allocations", client.get(self.keys.allocs(), Some(options)))?;
            let prefix = self.keys.allocs();
            self.published.extend(
                got.kvs()
                    .iter()
                    .map(|kv| String::from_utf8_lossy(&kv.key()[prefix.len().min(kv.key().len())..]).into_owned()),
            );
        }
        if self.config.as_ref() != Some(&(held.revision, config.clone())) {
            if config.len() > CONFIG_BYTES {
                return Err(ReplicaError::TooLarge {
                    what: "the agents' configuration",
                    bytes: config.len(),
                    limit: CONFIG_BYTES,
                });
            }
            bytes += config.len();
            let txn = Txn::new().when([fence()]).and_then([TxnOp::put(self.keys.config(), config.clone(), None)]);
            if !self.call("publishing the agents' configuration", client.txn(txn))?.succeeded() {
                self.step_down(held.revision);
                return Err(ReplicaError::Fenced(
                    "this replica no longer leads (its lease ended; another may lead)".into(),
                ));
            }
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let effective_at = now + publication.period / 4;
        let allocs = host_allocs(publication, &self.hosts, effective_at.as_millis() as u64);
        // Batches under etcd's 128 operations per transaction and its request size, one
        // after another: sent at once they took longer (bench cluster, 1,000 hosts:
        // etcd applies them in turn anyway).
        let mut batches: Vec<(Vec<TxnOp>, usize)> = vec![(Vec::new(), 0)];
        let mut add = |op: TxnOp, size: usize| {
            let full = batches.last().is_some_and(|(ops, b)| ops.len() >= PUBLISH_BATCH || b + size > SHARD_BYTES);
            if full {
                batches.push((Vec::new(), 0));
            }
            if let Some((ops, b)) = batches.last_mut() {
                ops.push(op);
                *b += size;
            }
        };
        for (host, alloc) in &allocs {
            let value = serde_json::to_vec(alloc).map_err(|e| ReplicaError::Damaged(format!("an allocation: {e}")))?;
            bytes += value.len();
            let size = value.len();
            add(TxnOp::put(self.keys.alloc(host), value, None), size);
        }
        for host in self.published.iter().filter(|h| !allocs.contains_key(*h)) {
            add(TxnOp::delete(self.keys.alloc(host), None), 0);
        }
        // Last, the marker: every host's part of this quantum is written (agents raise
        // only up to it; a leader that dies before it leaves every raise waiting).
        add(TxnOp::put(self.keys.published(), publication.quantum.to_string(), None), 0);
        let mut marker = batches.pop().map(|(ops, _)| ops).unwrap_or_default();
        if marker.len() > 1 {
            // The marker goes alone, after every batch.
            let last = marker.pop().into_iter().collect::<Vec<_>>();
            batches.push((marker, 0));
            marker = last;
        }
        batches.push((marker, 0));
        for (ops, _) in batches.into_iter().filter(|(ops, _)| !ops.is_empty()) {
            let txn = Txn::new().when([fence()]).and_then(ops);
            let answer = self.call("publishing the allocations", client.txn(txn))?;
            if !answer.succeeded() {
                self.step_down(held.revision);
                return Err(ReplicaError::Fenced(
                    "this replica no longer leads (its lease ended; another may lead)".into(),
                ));
            }
        }
        self.config = Some((held.revision, config));
        self.published = allocs.into_keys().collect();
        self.traffic.published = bytes;
        Ok(())
    }

    fn put_demand(&mut self, tenant: &str, slices: u64) -> Result<(), ReplicaError> {
        let mut client = self.client.clone();
        self.call("writing the demand", client.put(self.keys.declared(tenant), slices.to_string(), None)).map(|_| ())
    }

    fn put_member(&mut self, change: &Membership) -> Result<(), ReplicaError> {
        let text = serde_json::to_vec(change).map_err(|e| ReplicaError::Damaged(format!("a join or leave: {e}")))?;
        // A key per change (a leave then a join of one name are two): named by the time
        // and this process, ordered by etcd's revision when read.
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let key = self.keys.member(change.name(), &format!("{nanos:x}-{:x}", std::process::id()));
        let mut client = self.client.clone();
        self.call("writing the join or leave", client.put(key, text, None)).map(|_| ())
    }
}

impl Drop for EtcdReplica {
    /// A leader that stops resigns: its lease is revoked, so that another replica
    /// leads at once instead of after the TTL.
    fn drop(&mut self) {
        let held = self.shared.held().as_ref().map(|h| h.revision);
        if let Some(revision) = held {
            self.step_down(revision);
            // The campaign revokes the lease when told; give it a moment.
            self.runtime.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::time::Duration;

    use fairshare_service::config::AgentSettings;
    use fairshare_service::replica::Allotted;

    use super::*;

    #[test]
    fn each_host_gets_its_part_of_the_tenants_it_measured() {
        let tenant = |name: &str, slices| Allotted { name: name.into(), slices, guaranteed: 1, selector: None };
        let p = Publication {
            quantum: 9,
            period: Duration::from_millis(200),
            slice_bps: 1,
            slices: 20,
            agents: AgentSettings {
                stale_after: Duration::from_secs(4),
                fallback_after: Duration::from_secs(30),
                max_packet: 3028,
            },
            lease_ttl: Duration::from_secs(3),
            tenants: vec![tenant("A", 10), tenant("B", 4), tenant("C", 6)],
        };
        let host = |pairs: &[(&str, u64)]| HostDemand {
            quantum: 8,
            demands: pairs.iter().map(|&(t, s)| (t.to_string(), s)).collect(),
        };
        let hosts: BTreeMap<String, HostDemand> = [
            ("a".to_string(), host(&[("A", 2), ("B", 9)])),
            ("b".to_string(), host(&[("A", 6)])),
            ("c".to_string(), host(&[("A", 9), ("B", 0)])),
            ("idle".to_string(), host(&[])),
        ]
        .into_iter()
        .collect();
        let out = host_allocs(&p, &hosts, 1234);
        // Every live host has a record (the idle one too: it holds everything at the floor).
        assert_eq!(out.keys().collect::<Vec<_>>(), ["a", "b", "c", "idle"]);
        assert!(out.values().all(|a| a.quantum == 9 && a.effective_at_ms == 1234));
        // A's 10 over a, b, c by max-min on 2, 6, 9 (docs/agents.md's example); B only
        // where it was measured; C nowhere (no host measured it).
        let part = |h: &str, t: &str| out[h].tenants.get(t).copied();
        assert_eq!((part("a", "A"), part("b", "A"), part("c", "A")), (Some((2, 10)), Some((4, 10)), Some((4, 10))));
        assert_eq!((part("a", "B"), part("c", "B")), (Some((4, 4)), None));
        assert!(out.values().all(|a| !a.tenants.contains_key("C")));
        assert!(out["idle"].tenants.is_empty());
    }
}
