//! `fairshare agent`: one per host. It shapes the host's traffic with the service's HTB
//! enforcer to the host's part of each quantum (`alloc/{host}`, watched), measures each
//! tenant's demand from the classes' counters every period and publishes it
//! (`demand/{host}`, under a lease of its own: a dead host's demand goes with it), and
//! holds the last allocation when the leader is silent (docs/agents.md).
//!
//! - An allocation applies only if its quantum is newer than the last applied;
//!   decreases at once, increases at its `effective_at` (every host has its decreases
//!   before any raises, so the pool is not oversubscribed in the change).
//! - Fail-static: without a new quantum for `stale_after` the agent says it is stale
//!   and keeps the last allocation; after `fallback_after` it holds each tenant to its
//!   guaranteed share split as its last allocation was. It never lifts the limits.
//! - A watch that fails or is compacted is made again from a read.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use etcd_client::{Client, EventType, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions};
use fairshare_service::config::Tenant;
use fairshare_service::enforce::{Counters, EnforceError, Estimator, Htb};
use fairshare_service::metrics::escape;
use serde::Serialize;
use tokio::sync::{mpsc, watch};

use crate::layout::{AgentConfig, HostAlloc, HostDemand, Keys};

/// How an agent reaches etcd, which pool and host it is, what it shapes.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// etcd's client URLs.
    pub endpoints: Vec<String>,
    /// The pool's name (its keys under `/fairshare/{pool}/`).
    pub pool: String,
    /// This host's name (its keys `demand/{host}`, `alloc/{host}`).
    pub host: String,
    /// The network device whose egress is shaped.
    pub dev: String,
    /// The longest one call to etcd may take.
    pub timeout: Duration,
    /// Where `/healthz`, `/metrics` and `/v1/status` answer.
    pub listen: SocketAddr,
}

/// Why the agent could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Its runtime could not be made.
    #[error("starting the agent's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// etcd did not answer at start.
    #[error("etcd at {endpoints}: {reason}")]
    Unreachable {
        /// The URLs tried.
        endpoints: String,
        /// What went wrong.
        reason: String,
    },
    /// The host's name cannot be a key.
    #[error("--host: `{0}` is not a host name (1 to 64 of letters, digits, `.`, `_`, `-`)")]
    Host(String),
    /// The HTB tree could not be installed.
    #[error("enforcing on {dev}: {source}")]
    Enforce {
        /// The device.
        dev: String,
        /// The enforcer's error.
        #[source]
        source: EnforceError,
    },
    /// The status address could not be bound.
    #[error("--listen {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

/// What the agent does with its allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// No allocation yet: every tenant at the floor.
    Waiting,
    /// Quanta arrive.
    Fresh,
    /// No new quantum for `stale_after`: the last allocation is kept.
    Stale,
    /// No new quantum for `fallback_after`: guaranteed shares.
    Fallback,
}

/// One tenant on this host, as shown.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TenantStatus {
    /// Its name.
    pub name: String,
    /// Slices applied now.
    pub slices: u64,
    /// The rate applied now (the floor where it has no slices), bit/s.
    pub rate_bps: u64,
    /// Bytes its class sent.
    pub bytes: u64,
    /// Its demand as last measured, slices.
    pub demand: u64,
}

/// What `/v1/status` and `/metrics` show.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// This host.
    pub host: String,
    /// What it does.
    pub mode: Mode,
    /// The last quantum applied.
    pub quantum: u64,
    /// Seconds since the last new quantum (or the start).
    pub staleness_s: f64,
    /// Changes of the tree the kernel refused (or could not be made).
    pub enforce_errors: u64,
    /// Calls to etcd that failed.
    pub etcd_errors: u64,
    /// Watches made again after a failure or a compaction.
    pub watch_restarts: u64,
    /// The last error, if any.
    pub last_error: Option<String>,
    /// The tenants, in the pool's order.
    pub tenants: Vec<TenantStatus>,
    /// The last allocation taken: per tenant, its slices here and its allocation over
    /// all hosts (what a fallback splits by).
    pub last: BTreeMap<String, (u64, u64)>,
    #[serde(skip)]
    since: Option<Instant>,
}

type Shared = Arc<Mutex<Status>>;

fn lock(s: &Shared) -> MutexGuard<'_, Status> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn fail(s: &Shared, etcd: bool, message: String) {
    let mut st = lock(s);
    if etcd {
        st.etcd_errors += 1;
    } else {
        st.enforce_errors += 1;
    }
    if st.last_error.as_deref() != Some(message.as_str()) {
        eprintln!("fairshare agent: {message}");
    }
    st.last_error = Some(message);
}

/// Runs the agent until SIGTERM or SIGINT; `ready` is called with the status address
/// once the tree is installed.
pub fn run(options: AgentOptions, ready: impl FnOnce(SocketAddr)) -> Result<(), AgentError> {
    let host_ok = !options.host.is_empty()
        && options.host.len() <= 64
        && options.host.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !host_ok {
        return Err(AgentError::Host(options.host));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fairshare-agent")
        .enable_all()
        .build()
        .map_err(AgentError::Runtime)?;
    runtime.block_on(agent(options, ready))
}

async fn connect(options: &AgentOptions) -> Result<Client, AgentError> {
    crate::etcd::connect(&options.endpoints, options.timeout, true)
        .await
        .map_err(|reason| AgentError::Unreachable { endpoints: options.endpoints.join(","), reason })
}

/// What the watch brings.
enum Event {
    /// A new part of a quantum for this host.
    Alloc(HostAlloc),
    /// The leader took this host out: nothing is allocated here now.
    Removed,
    /// Every host's part of quanta up to this one is in etcd.
    Published(u64),
    /// The pool's configuration.
    Config(AgentConfig),
}

async fn agent(options: AgentOptions, ready: impl FnOnce(SocketAddr)) -> Result<(), AgentError> {
    let client = connect(&options).await?;
    let keys = Keys::new(&options.pool);
    let status: Shared = Arc::new(Mutex::new(Status {
        host: options.host.clone(),
        mode: Mode::Waiting,
        quantum: 0,
        staleness_s: 0.0,
        enforce_errors: 0,
        etcd_errors: 0,
        watch_restarts: 0,
        last_error: None,
        tenants: Vec::new(),
        last: BTreeMap::new(),
        since: Some(Instant::now()),
    }));
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|source| AgentError::Listen { addr: options.listen, source })?;
    let addr = listener.local_addr().map_err(|source| AgentError::Listen { addr: options.listen, source })?;
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/v1/status", get(status_json))
        .with_state(Arc::clone(&status));
    let serving = Arc::clone(&status);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            fail(&serving, false, format!("serving /healthz and /metrics stopped: {e}"));
        }
    });
    let (events, mut received) = mpsc::channel(64);
    tokio::spawn(watch_host(
        client.clone(),
        keys.clone(),
        options.host.clone(),
        options.timeout,
        events,
        Arc::clone(&status),
    ));
    // The pool's configuration first (the leader writes it at its first quantum).
    let config = loop {
        match received.recv().await {
            Some(Event::Config(c)) => break c,
            Some(_) => continue,
            None => return Ok(()),
        }
    };
    let mut enforcer = Enforcer::install(&options.dev, config, Arc::clone(&status))?;
    let (demands, demand_rx) = watch::channel(None);
    let lease = Arc::new(Mutex::new(None));
    tokio::spawn(publish_demands(
        client.clone(),
        keys.host_demand(&options.host),
        enforcer.config.lease_ttl_s,
        options.timeout,
        demand_rx,
        Arc::clone(&lease),
        Arc::clone(&status),
    ));
    if let Some(d) = enforcer.measure() {
        let _ = demands.send(Some(d));
    }
    ready(addr);
    let mut term =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).map_err(AgentError::Runtime)?;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut next_measure = Instant::now() + enforcer.period();
    loop {
        tokio::select! {
            event = received.recv() => match event {
                Some(Event::Alloc(a)) => enforcer.take(a),
                Some(Event::Removed) => enforcer.removed(),
                Some(Event::Published(q)) => enforcer.published = enforcer.published.max(q),
                Some(Event::Config(c)) => enforcer.reconfigure(c),
                None => break,
            },
            _ = tick.tick() => {
                enforcer.on_time();
                if Instant::now() >= next_measure {
                    next_measure += enforcer.period();
                    if let Some(d) = enforcer.measure() {
                        let _ = demands.send(Some(d));
                    }
                }
            }
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    // The host's demand goes at once, not after the TTL.
    let held = *lease.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(id) = held {
        let mut c = client.clone();
        let _ = tokio::time::timeout(options.timeout, c.lease_revoke(id)).await;
    }
    Ok(())
}

/// Reads the host's allocation, the pool's configuration and the last quantum published
/// whole, then watches the three from there; a watch that fails, ends or is compacted is
/// made again from a read.
async fn watch_host(
    client: Client,
    keys: Keys,
    host: String,
    timeout: Duration,
    events: mpsc::Sender<Event>,
    status: Shared,
) {
    let watched = [keys.config(), keys.alloc(&host), keys.published()];
    let mut first = true;
    loop {
        if !first {
            lock(&status).watch_restarts += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        first = false;
        let mut c = client.clone();
        let read = Txn::new().and_then(watched.iter().map(|k| TxnOp::get(k.clone(), None)).collect::<Vec<_>>());
        let answer = match tokio::time::timeout(timeout, c.txn(read)).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                fail(&status, true, format!("etcd: reading this host's allocation: {e}"));
                continue;
            }
            Err(_) => {
                fail(&status, true, format!("etcd: reading this host's allocation: no answer within {timeout:?}"));
                continue;
            }
        };
        let revision = answer.header().map_or(0, |h| h.revision());
        let values = answer.op_responses().into_iter().map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.value().to_vec()),
            _ => None,
        });
        // The configuration first: the tenants must be known.
        for (key, value) in watched.iter().zip(values) {
            if let Some(e) = value.and_then(|v| parse_event(&watched, key.as_bytes(), &v, &status)) {
                if events.send(e).await.is_err() {
                    return;
                }
            }
        }
        // From the revision read: nothing put in between is missed.
        let from = WatchOptions::new().with_start_revision(revision + 1);
        let mut stream = match tokio::time::timeout(timeout, c.watch(watched[0].clone(), Some(from.clone()))).await {
            Ok(Ok(w)) => w,
            Ok(Err(e)) => {
                fail(&status, true, format!("etcd: watching the pool's configuration: {e}"));
                continue;
            }
            Err(_) => {
                fail(&status, true, format!("etcd: watching the pool's configuration: no answer within {timeout:?}"));
                continue;
            }
        };
        let mut watching = true;
        for key in &watched[1..] {
            match tokio::time::timeout(timeout, stream.watch(key.clone(), Some(from.clone()))).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    fail(&status, true, format!("etcd: watching {key}: {e}"));
                    watching = false;
                }
                Err(_) => {
                    fail(&status, true, format!("etcd: watching {key}: no answer within {timeout:?}"));
                    watching = false;
                }
            }
        }
        if !watching {
            continue;
        }
        loop {
            let message = match stream.message().await {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    fail(&status, true, format!("etcd: the watch failed: {e}"));
                    break;
                }
            };
            if message.canceled() || message.compact_revision() > 0 {
                break;
            }
            for event in message.events() {
                let Some(kv) = event.kv() else { continue };
                let e = match event.event_type() {
                    EventType::Put => parse_event(&watched, kv.key(), kv.value(), &status),
                    // The leader took this host out (its demand's lease ended): its part
                    // went to the other hosts.
                    EventType::Delete if kv.key() == watched[1].as_bytes() => Some(Event::Removed),
                    EventType::Delete => None,
                };
                if let Some(e) = e {
                    if events.send(e).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// The event a put of `key` (one of `watched`: config, alloc, published) brings.
fn parse_event(watched: &[String; 3], key: &[u8], value: &[u8], status: &Shared) -> Option<Event> {
    let (parsed, what) = if key == watched[0].as_bytes() {
        (serde_json::from_slice(value).map(Event::Config).map_err(|e| e.to_string()), "the pool's configuration")
    } else if key == watched[1].as_bytes() {
        (serde_json::from_slice(value).map(Event::Alloc).map_err(|e| e.to_string()), "this host's allocation")
    } else {
        let q = std::str::from_utf8(value).ok().and_then(|v| v.trim().parse().ok());
        (q.map(Event::Published).ok_or_else(|| "not a quantum number".to_string()), "the last quantum published")
    };
    match parsed {
        Ok(e) => Some(e),
        Err(e) => {
            fail(status, true, format!("etcd holds {what} that this agent cannot read: {e}"));
            None
        }
    }
}

/// Puts each measured demand under a lease of the agent's, renewed every third of its
/// TTL; a lease that is lost is granted again.
async fn publish_demands(
    client: Client,
    key: String,
    ttl: u64,
    timeout: Duration,
    mut demands: watch::Receiver<Option<HostDemand>>,
    lease: Arc<Mutex<Option<i64>>>,
    status: Shared,
) {
    let ttl = i64::try_from(ttl).unwrap_or(60).max(1);
    let renew_every = Duration::from_millis(ttl as u64 * 1000 / 3);
    loop {
        let mut c = client.clone();
        let id = match tokio::time::timeout(timeout, c.lease_grant(ttl, None)).await {
            Ok(Ok(l)) => l.id(),
            failed => {
                let why = failed.map_or_else(
                    |_| format!("no answer within {timeout:?}"),
                    |r| r.err().map(|e| e.to_string()).unwrap_or_default(),
                );
                fail(&status, true, format!("etcd: granting this host's lease: {why}"));
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        let (mut keeper, mut renewals) = match tokio::time::timeout(timeout, c.lease_keep_alive(id)).await {
            Ok(Ok(k)) => k,
            Ok(Err(e)) => {
                fail(&status, true, format!("etcd: keeping this host's lease: {e}"));
                let _ = tokio::time::timeout(timeout, c.lease_revoke(id)).await;
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
            Err(_) => {
                fail(&status, true, format!("etcd: keeping this host's lease: no answer within {timeout:?}"));
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        *lease.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(id);
        let mut renew = tokio::time::interval(renew_every);
        loop {
            tokio::select! {
                changed = demands.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let Some(d) = demands.borrow_and_update().clone() else { continue };
                    let value = serde_json::to_vec(&d).unwrap_or_default();
                    let put = tokio::time::timeout(timeout, c.put(key.clone(), value, Some(PutOptions::new().with_lease(id)))).await;
                    match put {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            fail(&status, true, format!("etcd: publishing this host's demand: {e}"));
                            break;
                        }
                        Err(_) => {
                            fail(&status, true, format!("etcd: publishing this host's demand: no answer within {timeout:?}"));
                            break;
                        }
                    }
                }
                _ = renew.tick() => {
                    let renewed = tokio::time::timeout(timeout, async {
                        keeper.keep_alive().await.ok()?;
                        renewals.message().await.ok().flatten().filter(|r| r.ttl() > 0)
                    })
                    .await;
                    if !matches!(renewed, Ok(Some(_))) {
                        fail(&status, true, format!("etcd: renewing this host's lease: no renewal within {timeout:?}"));
                        break;
                    }
                }
            }
        }
    }
}

/// The host's HTB tree and what is applied to it.
struct Enforcer {
    htb: Htb,
    dev: String,
    config: AgentConfig,
    /// The tenants in the tree's order.
    order: Vec<String>,
    /// Slices applied now, by tenant.
    applied: BTreeMap<String, u64>,
    /// The last allocation taken (the source of the fallback's split).
    last: Option<HostAlloc>,
    /// The allocation whose increases wait for their time: its quantum, slices, time.
    pending: Option<(u64, BTreeMap<String, u64>, Instant)>,
    /// The last quantum every host's part of which is in etcd (the leader's marker):
    /// increases wait for it too, so that no host raises while another may not have
    /// its decrease yet.
    published: u64,
    /// When the last new quantum arrived (or the agent started).
    last_new: Instant,
    mode: Mode,
    /// The counters at the last measurement, and when.
    counters: Option<(Vec<Counters>, Instant)>,
    estimator: Estimator,
    status: Shared,
}

impl Enforcer {
    fn tenants(config: &AgentConfig) -> Vec<Tenant> {
        config
            .tenants
            .iter()
            .map(|t| Tenant { name: t.name.clone(), weight: 1, selector: t.selector.clone(), token_file: None })
            .collect()
    }

    fn install(dev: &str, config: AgentConfig, status: Shared) -> Result<Enforcer, AgentError> {
        let period = Duration::from_millis(config.period_ms.max(1));
        let link = config.slices.saturating_mul(config.slice_bps);
        let htb = Htb::install(dev, link, &Self::tenants(&config), period, config.max_packet)
            .map_err(|source| AgentError::Enforce { dev: dev.to_string(), source })?;
        let order = config.tenants.iter().map(|t| t.name.clone()).collect();
        let e = Enforcer {
            htb,
            dev: dev.to_string(),
            config,
            order,
            applied: BTreeMap::new(),
            last: None,
            pending: None,
            published: 0,
            last_new: Instant::now(),
            mode: Mode::Waiting,
            counters: None,
            // No slice for a silent tenant: the floor lets it start, and a host that
            // measures nothing must not claim part of the pool. Busy from 97% of the
            // allocation: a tenant given its headroom (1.1 x what it sent, so 91% used)
            // is then not taken for held back, and its allocation settles.
            estimator: Estimator { floor_slices: 0, busy: 0.97, ..Estimator::default() },
            status,
        };
        e.show();
        Ok(e)
    }

    fn period(&self) -> Duration {
        Duration::from_millis(self.config.period_ms.max(1))
    }

    fn ms(&self, ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// A new allocation: applied if newer than the last, its decreases now, its
    /// increases once its time has come and the leader marked its quantum published.
    fn take(&mut self, a: HostAlloc) {
        if self.last.as_ref().is_some_and(|l| l.quantum >= a.quantum) {
            return;
        }
        let target: BTreeMap<String, u64> = a.tenants.iter().map(|(n, &(part, _))| (n.clone(), part)).collect();
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        // The leader's clock says when; this host's may be off: never more than half a
        // quantum from now (a host far behind would otherwise never raise).
        let wait = Duration::from_millis(a.effective_at_ms.saturating_sub(now_ms)).min(self.period() / 2);
        // A record read long after it was written (a restart on an old one) is as
        // stale as it is old.
        let age = Duration::from_millis(now_ms.saturating_sub(a.effective_at_ms));
        self.last_new = Instant::now().checked_sub(age).unwrap_or_else(Instant::now);
        self.mode = Mode::Fresh;
        let quantum = a.quantum;
        self.last = Some(a);
        let lower: BTreeMap<String, u64> = self
            .order
            .iter()
            .map(|n| {
                let (now, next) = (self.applied.get(n).copied().unwrap_or(0), target.get(n).copied().unwrap_or(0));
                (n.clone(), now.min(next))
            })
            .collect();
        self.set(lower);
        self.pending = Some((quantum, target, Instant::now() + wait));
        self.on_time();
    }

    /// The leader took this host out: every tenant to the floor, nothing pending.
    fn removed(&mut self) {
        self.pending = None;
        if let Some(l) = self.last.as_mut() {
            l.tenants.clear();
        }
        self.set(BTreeMap::new());
    }

    /// Raises that are due, the staleness, repairs.
    fn on_time(&mut self) {
        let now = Instant::now();
        if self.htb.broken() {
            match self.htb.repair(&Self::tenants(&self.config)) {
                Ok(true) => {
                    eprintln!("fairshare agent: the tree on {} is reinstalled", self.dev);
                    let applied = std::mem::take(&mut self.applied);
                    self.set(applied);
                }
                Ok(false) => {}
                Err(e) => fail(&self.status, false, format!("repairing the tree on {}: {e}", self.dev)),
            }
        }
        if let Some((quantum, target, at)) = self.pending.take() {
            if now >= at && self.published >= quantum {
                self.set(target);
            } else {
                self.pending = Some((quantum, target, at));
            }
        }
        let silent = now - self.last_new;
        if silent >= self.ms(self.config.fallback_after_ms) && self.mode != Mode::Fallback {
            self.mode = Mode::Fallback;
            self.pending = None;
            eprintln!("fairshare agent: no new quantum for {silent:?}: each tenant falls back to its guaranteed share");
            let fallback = self.fallback();
            self.set(fallback);
        } else if silent >= self.ms(self.config.stale_after_ms) && matches!(self.mode, Mode::Fresh | Mode::Waiting) {
            self.mode = Mode::Stale;
            eprintln!("fairshare agent: no new quantum for {silent:?}: the last allocation is kept");
        }
        let mut st = lock(&self.status);
        st.mode = self.mode;
        st.since = Some(self.last_new);
    }

    /// Each tenant's guaranteed share split as its last allocation was: this host's
    /// part of it is its part of the tenant's allocation (rounded down: the hosts
    /// together never exceed the guarantee).
    fn fallback(&self) -> BTreeMap<String, u64> {
        let Some(last) = &self.last else { return BTreeMap::new() };
        self.config
            .tenants
            .iter()
            .filter_map(|t| {
                let &(part, total) = last.tenants.get(&t.name)?;
                let share = u128::from(t.guaranteed) * u128::from(part) / u128::from(total.max(1));
                Some((t.name.clone(), share as u64))
            })
            .collect()
    }

    /// Applies these slices (tenants not named: none, held at the floor).
    fn set(&mut self, slices: BTreeMap<String, u64>) {
        let rates: Vec<u64> = self
            .order
            .iter()
            .map(|n| slices.get(n).copied().unwrap_or(0).saturating_mul(self.config.slice_bps))
            .collect();
        match self.htb.apply(&rates) {
            Ok(()) => self.applied = slices,
            Err(e) => {
                fail(&self.status, false, format!("applying the allocation on {}: {e}", self.dev));
                // What reached the kernel is not known: sent again after a repair.
                self.applied = slices;
            }
        }
        self.show();
    }

    /// The tenants' demands over the last period, from the counters.
    fn measure(&mut self) -> Option<HostDemand> {
        let now = Instant::now();
        let counters = match self.htb.counters() {
            Ok(c) => c,
            Err(e) => {
                fail(&self.status, false, format!("reading the counters on {}: {e}", self.dev));
                self.counters = None;
                return None;
            }
        };
        let mut demands = BTreeMap::new();
        if let Some((before, at)) = &self.counters {
            let secs = (now - *at).as_secs_f64();
            for ((name, b), a) in self.order.iter().zip(before).zip(&counters) {
                let alloc = self.applied.get(name).copied().unwrap_or(0);
                let d = self.estimator.demand(*b, *a, alloc, secs, self.config.slice_bps, self.config.slices);
                if d > 0 {
                    demands.insert(name.clone(), d);
                }
            }
        }
        {
            let mut st = lock(&self.status);
            for (t, c) in st.tenants.iter_mut().zip(&counters) {
                t.bytes = c.bytes;
                t.demand = demands.get(&t.name).copied().unwrap_or(0);
            }
        }
        // The first reading has nothing to compare with: it says the host is there
        // (the leader splits among the hosts it knows), with no demand yet.
        self.counters = Some((counters, now));
        let quantum = self.last.as_ref().map_or(0, |l| l.quantum);
        Some(HostDemand { quantum, demands })
    }

    /// A new configuration: tenants that left are removed from the tree, those that
    /// joined are added (at the floor).
    fn reconfigure(&mut self, config: AgentConfig) {
        let wanted: Vec<String> = config.tenants.iter().map(|t| t.name.clone()).collect();
        for gone in self.order.clone().iter().filter(|n| !wanted.contains(n)) {
            if let Err(e) = self.htb.leave(gone) {
                fail(&self.status, false, format!("removing `{gone}` from the tree on {}: {e}", self.dev));
            }
            self.order.retain(|n| n != gone);
            self.applied.remove(gone);
        }
        for t in Self::tenants(&config) {
            if self.order.contains(&t.name) {
                continue;
            }
            match self.htb.join(&t) {
                Ok(()) => self.order.push(t.name.clone()),
                Err(e) => fail(&self.status, false, format!("adding `{}` to the tree on {}: {e}", t.name, self.dev)),
            }
        }
        self.config = config;
        self.counters = None;
        self.show();
    }

    /// Publishes what is applied.
    fn show(&self) {
        let floor = self.htb.floor_bps();
        let mut st = lock(&self.status);
        let bytes: BTreeMap<String, (u64, u64)> =
            st.tenants.iter().map(|t| (t.name.clone(), (t.bytes, t.demand))).collect();
        st.quantum = self.last.as_ref().map_or(0, |l| l.quantum);
        st.last = self.last.as_ref().map(|l| l.tenants.clone()).unwrap_or_default();
        st.mode = self.mode;
        st.tenants = self
            .order
            .iter()
            .map(|n| {
                let slices = self.applied.get(n).copied().unwrap_or(0);
                let (bytes, demand) = bytes.get(n).copied().unwrap_or_default();
                TenantStatus {
                    name: n.clone(),
                    slices,
                    rate_bps: slices.saturating_mul(self.config.slice_bps).max(floor),
                    bytes,
                    demand,
                }
            })
            .collect();
    }
}

fn snapshot(s: &Shared) -> Status {
    let mut st = lock(s).clone();
    st.staleness_s = st.since.map_or(0.0, |t| t.elapsed().as_secs_f64());
    st
}

async fn healthz(State(s): State<Shared>) -> Response {
    let st = snapshot(&s);
    let (code, text) = match st.mode {
        Mode::Fresh => (StatusCode::OK, "ok\n".to_string()),
        m => (StatusCode::SERVICE_UNAVAILABLE, format!("{}\n", serde_json::to_value(m).unwrap_or_default())),
    };
    (code, text).into_response()
}

async fn status_json(State(s): State<Shared>) -> Response {
    let body = serde_json::to_vec(&snapshot(&s)).unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn metrics(State(s): State<Shared>) -> Response {
    let body = render(&snapshot(&s));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// The agent's metrics in Prometheus's text format.
pub fn render(st: &Status) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let mut one = |name: &str, kind: &str, help: &str, value: String| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
    };
    one("fairshare_agent_quantum", "gauge", "The last quantum this agent applied.", st.quantum.to_string());
    one(
        "fairshare_agent_staleness_seconds",
        "gauge",
        "Seconds since the last new quantum.",
        format!("{:.3}", st.staleness_s),
    );
    one(
        "fairshare_agent_stale",
        "gauge",
        "1 while the last allocation is kept for want of a new quantum.",
        u8::from(st.mode == Mode::Stale).to_string(),
    );
    one(
        "fairshare_agent_fallback",
        "gauge",
        "1 while the tenants are held to their guaranteed shares.",
        u8::from(st.mode == Mode::Fallback).to_string(),
    );
    one(
        "fairshare_agent_enforce_errors_total",
        "counter",
        "Changes of the HTB tree that failed.",
        st.enforce_errors.to_string(),
    );
    one("fairshare_agent_etcd_errors_total", "counter", "Calls to etcd that failed.", st.etcd_errors.to_string());
    one(
        "fairshare_agent_watch_restarts_total",
        "counter",
        "Watches made again from a read.",
        st.watch_restarts.to_string(),
    );
    let mut family = |name: &str, kind: &str, help: &str, value: &dyn Fn(&TenantStatus) -> u64| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for t in &st.tenants {
            let _ = writeln!(out, "{name}{{tenant=\"{}\"}} {}", escape(&t.name), value(t));
        }
    };
    family("fairshare_agent_tenant_bytes_total", "counter", "Bytes each tenant's class sent on this host.", &|t| {
        t.bytes
    });
    family("fairshare_agent_tenant_rate_bps", "gauge", "The rate each tenant is held to on this host, bit/s.", &|t| {
        t.rate_bps
    });
    family(
        "fairshare_agent_tenant_demand_slices",
        "gauge",
        "Each tenant's demand measured on this host, slices.",
        &|t| t.demand,
    );
    out
}
