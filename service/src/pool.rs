//! The live pool: declared demands (sticky until changed), one quantum at a time through
//! the offload backend, tenants joining and leaving between quanta, every change
//! transactional.
//!
//! A change is committed, then published, or refused with nothing visible changed. A
//! quantum: measure, allocate (on a savepoint of the pool), commit the whole pool to
//! the ledger, publish the view for readers, enforce the rates. If the commit fails,
//! the pool is rolled back to its savepoint (device credits included) and the quantum
//! is refused: its number, the published view, the metrics' per-tenant series and the
//! enforced rates stay as they were. A demand is acknowledged once its change record is
//! fsynced; a join or leave once the whole changed pool is. While commits fail, the
//! published [`Status`] says why (`/healthz` answers 503); the first commit that
//! succeeds clears it, with no restart.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use fairshare::offload::{Fallback, Offload};
use fairshare::{Allocator, PoolChange, UserConfig};
use fairshare_backends::{Backend, DeviceOptions};
use fairshare_ledger::{Ledger, LedgerError};

use crate::auth::{self, Digest};
use crate::config::{check_match, check_name, DemandSource, Enforce, Match, ServeConfig, Tenant};
use crate::enforce::{Counters, Estimator, Htb};
use crate::metrics::{Metrics, Phase};
use crate::publish::{Published, ReplicaStatus, Status, View};
use crate::replica::{Allotted, Membership, Publication, Replica, ReplicaError, Role};
use crate::saved::{self, Base, SavedChange, SavedPool};
use crate::ServiceError;

/// The pool as the clock and the API share it: a fair lock, so that a flood of changes
/// (each an fsync with a ledger) cannot keep the clock waiting behind more than those
/// already queued when it asks.
pub type SharedPool = std::sync::Arc<parking_lot::FairMutex<LivePool>>;

/// A demand as posted: in bits per second or in slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demand {
    /// Bits per second (rounded up to whole slices).
    Bps(u64),
    /// Slices.
    Slices(u64),
}

/// How a pool starts.
#[derive(Clone)]
pub struct StartOptions {
    /// Where quanta run.
    pub backend: Backend,
    /// How the backend is used.
    pub device: DeviceOptions,
    /// The ledger's folder (`--state`).
    pub state: Option<PathBuf>,
    /// Resume even if the file's configuration differs from the ledger's, applying the
    /// differences (logged): new shares, policy, tenants joining and leaving.
    pub accept_config_changes: bool,
}

/// The pool's tenants as the enforcer takes them: each with its weight and match.
fn enforced(names: &[String], matches: &BTreeMap<String, Match>, weights: &[u64]) -> Result<Vec<Tenant>, ServiceError> {
    names
        .iter()
        .zip(weights)
        .map(|(n, &weight)| match matches.get(n) {
            Some(m) => Ok(Tenant { name: n.clone(), weight, selector: Some(m.clone()), token_file: None }),
            None => Err(ServiceError::Conflict(format!(
                "tenant `{n}` has no match; enforce = htb needs one per tenant (in the file, or given when it joined)"
            ))),
        })
        .collect()
}

/// With `enforce = htb`, installs the HTB tree of the pool's tenants and reads its
/// classes' first counters.
fn install_htb(
    config: &ServeConfig,
    names: &[String],
    members: &Members,
) -> Result<Option<(Htb, Vec<Counters>, Instant)>, ServiceError> {
    match &config.enforce {
        Enforce::None => Ok(None),
        Enforce::Htb { dev, max_packet } => {
            let tenants = enforced(names, &members.matches, &members.weights)?;
            let link_bps = config.slices.saturating_mul(config.slice_bps);
            let mut htb = Htb::install(dev, link_bps, &tenants, config.quantum, *max_packet)?;
            let counters = htb.counters()?;
            Ok(Some((htb, counters, Instant::now())))
        }
    }
}

/// Refuses a pool (as the ledger left it) with more tenants than `pool.max_tenants`.
fn check_tenant_limit(config: &ServeConfig, allocator: &Allocator) -> Result<(), ServiceError> {
    if allocator.users().len() > config.max_tenants {
        return Err(ServiceError::Conflict(format!(
            "the ledger holds {} tenants, more than pool.max_tenants ({})",
            allocator.users().len(),
            config.max_tenants
        )));
    }
    Ok(())
}

/// The status a pool publishes before its first quantum.
fn first_status(config: &ServeConfig, offload: &Offload, ledger: bool, tenants: usize) -> Status {
    Status {
        backend: offload.label().to_string(),
        on_device: offload.on_device(),
        device_quanta: 0,
        fallback: None,
        quantum_period_ms: config.quantum.as_secs_f64() * 1e3,
        durable: ledger,
        ledger,
        ledger_error: None,
        enforcement_error: None,
        clock_error: None,
        tenants,
        replica: None,
    }
}

/// The live pool.
pub struct LivePool {
    config: ServeConfig,
    backend: Backend,
    options: DeviceOptions,
    offload: Offload,
    names: Arc<Vec<String>>,
    /// Demands, weights, joined tenants' tokens, every tenant's match.
    members: Members,
    ledger: Option<Ledger>,
    /// The store of a replicated pool (the controller), instead of a ledger.
    replica: Option<Box<dyn Replica>>,
    base: Base,
    /// The HTB tree it enforces with, and the classes' counters at the last committed
    /// quantum with the instant they were read.
    htb: Option<(Htb, Vec<Counters>, Instant)>,
    estimator: Estimator,
    published: Arc<Published>,
}

/// What a pool is made of, apart from its allocator: the parts the ledger keeps with it.
#[derive(Debug, Clone, Default)]
struct Members {
    demand: Vec<u64>,
    weights: Vec<u64>,
    tokens: BTreeMap<String, String>,
    matches: BTreeMap<String, Match>,
}

/// The pool's whole state, as the ledger keeps it.
fn saved<'a>(base: &Base, allocator: &Allocator, m: &'a Members) -> SavedPool<'a> {
    SavedPool {
        format: saved::FORMAT,
        base: Some(base.clone()),
        pool: None,
        allocator: allocator.export_state(),
        demand: (&m.demand[..]).into(),
        weights: (&m.weights[..]).into(),
        tokens: std::borrow::Cow::Borrowed(&m.tokens),
        matches: std::borrow::Cow::Borrowed(&m.matches),
    }
}

/// What a ledger held: the allocator, its members and the configuration it followed.
struct Resumed {
    allocator: Allocator,
    members: Members,
    base: Base,
}

impl Resumed {
    /// The pool of the file alone (no ledger, or a new one): every tenant at demand 0.
    fn of_file(config: &ServeConfig, base: Base) -> Result<Resumed, ServiceError> {
        Ok(Resumed {
            allocator: Allocator::new(config.pool_config()?, config.policy)?,
            members: Members {
                demand: vec![0; config.tenants.len()],
                weights: config.tenants.iter().map(|t| t.weight).collect(),
                ..Members::default()
            },
            base,
        })
    }
}

/// Reads the pool of the ledger in `dir` (its last state and the demands after it).
fn resume(dir: &std::path::Path, config: &ServeConfig) -> Result<(Ledger, Option<Resumed>), ServiceError> {
    let (ledger, state, changes) = Ledger::open_json::<SavedPool, SavedChange>(dir)?;
    let inconsistent =
        |reason: String| ServiceError::Ledger(LedgerError::Inconsistent { path: dir.to_path_buf(), reason });
    let Some(s) = state else {
        if !changes.is_empty() {
            return Err(inconsistent(format!("{} changes and no state they follow", changes.len())));
        }
        return Ok((ledger, None));
    };
    if s.format > saved::FORMAT {
        return Err(inconsistent(format!(
            "its format {} is newer than this fairshare's ({})",
            s.format,
            saved::FORMAT
        )));
    }
    let base = match (s.base, s.pool) {
        (Some(b), _) => b,
        // A ledger of format 1 knew its slices and policy (its identity) and its tenants;
        // alpha and the initial credits are the file's.
        (None, Some(id)) if id == saved::format1_identity(config) => Base {
            tenants: s.allocator.users.iter().map(|u| u.name.clone()).zip(s.weights.iter().copied()).collect(),
            ..Base::of(config)
        },
        (None, found) => {
            return Err(ServiceError::Ledger(LedgerError::OtherRun {
                path: dir.to_path_buf(),
                found: found.unwrap_or_default(),
                expected: saved::format1_identity(config),
            }))
        }
    };
    let allocator = Allocator::from_state(s.allocator)?;
    let mut members = Members {
        demand: s.demand.into_owned(),
        weights: s.weights.into_owned(),
        tokens: s.tokens.into_owned(),
        matches: s.matches.into_owned(),
    };
    for change in changes {
        match change {
            SavedChange::Demand { tenant, slices } => {
                let u = allocator
                    .index_of(&tenant)
                    .ok_or_else(|| inconsistent(format!("a demand of `{tenant}`, who is not in its state")))?;
                members.demand[u] = slices;
            }
        }
    }
    Ok((ledger, Some(Resumed { allocator, members, base })))
}

impl LivePool {
    /// Starts the pool of `config`; with a ledger folder, resumes from its last
    /// committed state and the changes after it. Tenants the file adds or removes
    /// relative to the ledger join or leave (logged); other changes of the pool's
    /// configuration need `accept_config_changes`.
    pub fn start(config: ServeConfig, start: StartOptions) -> Result<Self, ServiceError> {
        let file_base = Base::of(&config);
        let (mut ledger, resumed) = match &start.state {
            Some(dir) => {
                let (ledger, resumed) = resume(dir, &config)?;
                (Some(ledger), resumed)
            }
            None => (None, None),
        };
        // A new ledger gets its first state at once.
        let mut save_now = ledger.is_some() && resumed.is_none();
        let Resumed { mut allocator, mut members, base } = match resumed {
            Some(r) => r,
            None => Resumed::of_file(&config, file_base.clone())?,
        };
        // The file's tenants select their traffic as the file says.
        for t in &config.tenants {
            if let Some(m) = &t.selector {
                members.matches.insert(t.name.clone(), m.clone());
            }
        }
        let (base, changed) = Self::follow_file(&config, base, file_base, &mut allocator, &mut members, &start)?;
        save_now |= changed;
        check_tenant_limit(&config, &allocator)?;
        let names = Arc::new(allocator.users().iter().map(|u| u.name.clone()).collect::<Vec<_>>());
        if let (Some(l), true) = (ledger.as_mut(), save_now) {
            l.commit_json(&saved(&base, &allocator, &members))?;
        }
        let offload = start.backend.offload_from(allocator, start.device)?;
        let metrics = Metrics::new(offload.label());
        // A device refused at start (it does not fit, or its credits did not read back).
        if offload.fallback().is_some() {
            metrics.fallback();
        }
        let htb = install_htb(&config, &names, &members)?;
        let view = View::new(0, names.clone(), vec![], vec![], None, config.slice_bps);
        let status = first_status(&config, &offload, ledger.is_some(), names.len());
        let published = Arc::new(Published::new(view, status, metrics));
        let mut live = LivePool {
            config,
            backend: start.backend,
            options: start.device,
            offload,
            names,
            members,
            ledger,
            replica: None,
            base,
            htb,
            estimator: Estimator::default(),
            published,
        };
        live.publish();
        live.enforce();
        Ok(live)
    }

    /// Brings a resumed pool (following `base`) to the file's configuration
    /// (`file_base`): differences in the pool itself need `accept_config_changes`,
    /// tenants joining or leaving do not; each change applied is logged. Returns the
    /// configuration the pool now follows, and whether anything changed (the pool is
    /// then committed at once).
    fn follow_file(
        config: &ServeConfig,
        base: Base,
        file_base: Base,
        allocator: &mut Allocator,
        members: &mut Members,
        start: &StartOptions,
    ) -> Result<(Base, bool), ServiceError> {
        let pool_differences = base.pool_differences(&file_base);
        if !pool_differences.is_empty() && !start.accept_config_changes {
            return Err(ServiceError::ConfigChanged { differences: pool_differences });
        }
        let changes: Vec<String> = pool_differences.into_iter().chain(base.tenant_changes(&file_base)).collect();
        if changes.is_empty() {
            return Ok((base, false));
        }
        for d in &changes {
            eprintln!("fairshare serve: applying a configuration change: {d}");
        }
        Self::apply_config(config, &base, allocator, members)?;
        Ok((file_base, true))
    }

    /// Applies the file's configuration to a resumed pool: the policy, tenants of the
    /// file joining or leaving, weights, then every share from the weights and the
    /// file's slices and alpha.
    fn apply_config(
        config: &ServeConfig,
        base: &Base,
        allocator: &mut Allocator,
        members: &mut Members,
    ) -> Result<(), ServiceError> {
        if allocator.policy() != config.policy {
            let mut state = allocator.export_state();
            state.policy = config.policy;
            *allocator = Allocator::from_state(state)?;
        }
        let file: std::collections::HashSet<&str> = config.tenants.iter().map(|t| t.name.as_str()).collect();
        for (name, _) in &base.tenants {
            if !file.contains(name.as_str()) {
                if let Some(u) = allocator.index_of(name) {
                    allocator.leave(name, PoolChange::Resize)?;
                    members.demand.remove(u);
                    members.weights.remove(u);
                    members.tokens.remove(name);
                    members.matches.remove(name);
                }
            }
        }
        for t in &config.tenants {
            match allocator.index_of(&t.name) {
                Some(u) => members.weights[u] = t.weight,
                None => {
                    let user = UserConfig::with_alpha(&t.name, 1, config.alpha, fairshare::Credits::ZERO);
                    allocator.join(user, PoolChange::Resize)?;
                    members.demand.push(0);
                    members.weights.push(t.weight);
                }
            }
        }
        allocator.set_shares(&config.shares(&members.weights))?;
        Ok(())
    }

    /// The configuration.
    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    /// What the pool publishes for readers.
    pub fn published(&self) -> Arc<Published> {
        Arc::clone(&self.published)
    }

    /// The tenants' names, in index order.
    pub fn members(&self) -> &[String] {
        &self.names
    }

    /// The token digests of the tenants who joined with one.
    pub fn joined_tokens(&self) -> BTreeMap<String, Digest> {
        self.members.tokens.iter().filter_map(|(n, hex)| auth::from_hex(hex).ok().map(|d| (n.clone(), d))).collect()
    }

    fn index(&self, name: &str) -> Result<usize, ServiceError> {
        self.offload.allocator().index_of(name).ok_or_else(|| ServiceError::UnknownTenant(name.to_string()))
    }

    /// The largest demand accepted, in slices.
    fn max_demand(&self) -> u64 {
        fairshare_abi::WORD_MAX.max(self.config.slices.saturating_mul(1_000))
    }

    /// Sets a tenant's demand from the next quantum on; acknowledged (returns) once the
    /// change is durable.
    pub fn set_demand(&mut self, name: &str, demand: Demand) -> Result<(), ServiceError> {
        let u = self.index(name)?;
        if self.config.demand == DemandSource::Agents {
            return Err(ServiceError::Conflict(
                "demand.source is `agents`: demands are measured by the hosts' agents, not declared".into(),
            ));
        }
        let slices = match demand {
            Demand::Slices(s) => s,
            Demand::Bps(b) => b.div_ceil(self.config.slice_bps),
        };
        if slices > self.max_demand() {
            return Err(ServiceError::BadRequest(format!(
                "demand: {slices} slices is above the largest accepted ({})",
                self.max_demand()
            )));
        }
        if let Some(ledger) = self.ledger.as_mut() {
            let committed = ledger.append_json(&SavedChange::Demand { tenant: name.to_string(), slices });
            self.committed("the demand", false, committed)?;
        }
        if let Some(replica) = self.replica.as_mut() {
            let put = replica.put_demand(name, slices);
            self.replica_result(false, put)?;
        }
        self.members.demand[u] = slices;
        Ok(())
    }

    /// Records the outcome of a commit in the status and metrics; an error becomes the
    /// refusal of `what`. Only a whole state's commit (`whole`) clears an earlier
    /// failure: a small change record can fit where the pool no longer does, and the
    /// pool is not durable again until a quantum commits.
    fn committed(&self, what: &'static str, whole: bool, result: Result<(), LedgerError>) -> Result<(), ServiceError> {
        match result {
            Ok(()) => {
                if whole && self.published.status.load().ledger_error.is_some() {
                    eprintln!("fairshare serve: the ledger commits again");
                    self.published.update_status(|s| {
                        s.ledger_error = None;
                        s.durable = true;
                    });
                }
                Ok(())
            }
            Err(e) => {
                self.published.metrics.commit_failed();
                let message = e.to_string();
                if self.published.status.load().ledger_error.as_deref() != Some(message.as_str()) {
                    eprintln!(
                        "fairshare serve: the ledger cannot commit (changes are refused until it can): {message}"
                    );
                    self.published.update_status(|s| {
                        s.ledger_error = Some(message.clone());
                        s.durable = false;
                    });
                }
                Err(ServiceError::NotCommitted { what, source: e })
            }
        }
    }

    /// Runs one quantum: measure, allocate, commit to the ledger, publish, enforce. On
    /// an error nothing is published and the pool is where it was: any error after the
    /// allocation rolls it back (device credits included).
    pub fn run_quantum(&mut self) -> Result<Arc<View>, ServiceError> {
        let start = Instant::now();
        self.sync_replica(true)?;
        let from = self.offload.allocator().quantum();
        let (demand, counters) = self.measure()?;
        let measured = Instant::now();
        let savepoint = (self.ledger.is_some() || self.replica.is_some()).then(|| self.offload.savepoint());
        let on_device = self.offload.on_device();
        self.offload.allocate(&demand)?;
        // The ledger holds verified credits only: wait for the verifier (async) before
        // the commit. A mismatch found now puts the software's result in its place.
        self.offload.settle();
        let allocated = Instant::now();
        let committed = self.commit_quantum(from, &demand);
        // Counted when it happens, kept or not: a device that failed is gone either way.
        if on_device && !self.offload.on_device() {
            self.published.metrics.fallback();
        }
        if let Err(e) = committed {
            if let Some(sp) = savepoint {
                self.offload.roll_back(sp)?;
            }
            // The device may have been dropped on the way: the status says so.
            self.publish_status();
            return Err(e);
        }
        let done = Instant::now();
        self.members.demand = demand;
        self.publish_to_agents();
        if let (Some((_, last, at)), Some(now)) = (self.htb.as_mut(), counters) {
            (*last, *at) = (now, measured);
        }
        let view = self.publish();
        let published = Instant::now();
        self.enforce();
        let end = Instant::now();
        let metrics = &self.published.metrics;
        for (phase, took) in [
            (Phase::Measure, measured - start),
            (Phase::Allocate, allocated - measured),
            (Phase::Commit, done - allocated),
            (Phase::Publish, published - done),
            (Phase::Enforce, end - published),
        ] {
            metrics.phase(phase, took);
        }
        metrics.quantum_done(end - start);
        Ok(view)
    }

    /// Publishes the quantum just committed to the hosts' agents (a replica's leader).
    /// A failure is counted and shown, not the quantum's: it is committed, and the
    /// agents take the next one (they hold the last allocation meanwhile).
    fn publish_to_agents(&mut self) {
        if self.replica.is_none() {
            return;
        }
        let a = self.offload.allocator();
        let tenants = a
            .users()
            .iter()
            .zip(a.allocations())
            .map(|(user, &slices)| Allotted {
                name: user.name.clone(),
                slices,
                guaranteed: user.guaranteed,
                selector: self.members.matches.get(&user.name).cloned(),
            })
            .collect();
        let publication = Publication {
            quantum: a.quantum(),
            period: self.config.quantum,
            slice_bps: self.config.slice_bps,
            slices: self.config.slices,
            agents: self.config.agents,
            lease_ttl: self.config.lease_ttl,
            tenants,
        };
        let published = self.replica.as_mut().map_or(Ok(()), |r| r.publish(&publication));
        if let Err(e) = published {
            self.published.metrics.store_failed();
            eprintln!(
                "fairshare controller: quantum {} committed, not yet published to the agents: {e}",
                publication.quantum
            );
        }
    }

    /// Commits the pool after a quantum from quantum `from` on `demand` (nothing
    /// without a ledger or a replica's store).
    fn commit_quantum(&mut self, from: u64, demand: &[u64]) -> Result<(), ServiceError> {
        if self.replica.is_some() {
            let members = Members { demand: demand.to_vec(), ..self.members.clone() };
            let state = serde_json::to_vec(&saved(&self.base, self.offload.allocator(), &members))
                .map_err(|e| ServiceError::Replica(ReplicaError::Damaged(format!("a pool it cannot write: {e}"))))?;
            let committed = self.replica.as_mut().map_or(Ok(()), |r| r.commit(from, &state));
            return self.replica_result(true, committed);
        }
        let Some(ledger) = self.ledger.as_mut() else { return Ok(()) };
        let members = Members { demand: demand.to_vec(), ..self.members.clone() };
        let committed = ledger.commit_json(&saved(&self.base, self.offload.allocator(), &members));
        self.committed("the quantum", true, committed)
    }

    /// The demands of the next quantum: declared, or (measured) from the classes'
    /// counters, with the counters read. Counters that cannot be read (a lost tree) are
    /// an enforcement fault: the demands stay as they were, and the quantum runs.
    fn measure(&mut self) -> Result<(Vec<u64>, Option<Vec<Counters>>), ServiceError> {
        if self.config.demand != DemandSource::Measured {
            return Ok((self.members.demand.clone(), None));
        }
        let Some((htb, last, at)) = self.htb.as_mut() else { return Ok((self.members.demand.clone(), None)) };
        let now = match htb.counters() {
            Ok(now) => now,
            Err(e) => {
                self.enforcement_result(Err(e));
                return Ok((self.members.demand.clone(), None));
            }
        };
        // Over the time since the counters kept were read: a period, or more after a
        // quantum that was missed or refused.
        let secs = at.elapsed().as_secs_f64().max(self.config.quantum.as_secs_f64() / 2.0);
        let alloc = self.offload.allocator().allocations();
        let demand = last
            .iter()
            .zip(&now)
            .zip(alloc)
            .map(|((before, after), &a)| {
                self.estimator.demand(*before, *after, a, secs, self.config.slice_bps, self.config.slices)
            })
            .collect();
        Ok((demand, Some(now)))
    }

    /// The tenants as the enforcer takes them.
    fn enforced(&self) -> Result<Vec<Tenant>, ServiceError> {
        enforced(&self.names, &self.members.matches, &self.members.weights)
    }

    /// With HTB, the allocation as class rates, the changed ones in one batch; after a
    /// fault, the tree is first repaired (reinstalled in place) if its device is there.
    /// A failure is counted, shown in the status and logged when it starts and ends;
    /// the quantum stands.
    fn enforce(&mut self) {
        if self.htb.is_none() {
            return;
        }
        let rates: Vec<u64> =
            self.offload.allocator().allocations().iter().map(|&a| a.saturating_mul(self.config.slice_bps)).collect();
        let tenants = match self.enforced() {
            Ok(t) => t,
            Err(e) => {
                return self.enforcement_result(Err(crate::enforce::EnforceError::Tenant {
                    tenant: String::new(),
                    reason: e.to_string(),
                }))
            }
        };
        let Some((htb, last, _)) = self.htb.as_mut() else { return };
        let result = (|| {
            if htb.broken() {
                if !htb.repair(&tenants)? {
                    return Err(crate::enforce::EnforceError::NoDevice { dev: htb.dev().to_string() });
                }
                eprintln!("fairshare serve: the tree on {} is back", htb.dev());
                // The counters started again with the classes.
                *last = htb.counters()?;
            }
            htb.apply(&rates)
        })();
        self.enforcement_result(result);
    }

    /// Records the outcome of enforcement in the status and metrics.
    fn enforcement_result(&self, result: Result<(), crate::enforce::EnforceError>) {
        let was = self.published.status.load().enforcement_error.clone();
        match result {
            Ok(()) if was.is_some() => {
                eprintln!("fairshare serve: enforcement works again");
                self.published.update_status(|s| s.enforcement_error = None);
            }
            Ok(()) => {}
            Err(e) => {
                self.published.metrics.enforcement_failed();
                let message = e.to_string();
                if was.as_deref() != Some(message.as_str()) {
                    eprintln!("fairshare serve: enforcement failed: {message}");
                    self.published.update_status(|s| s.enforcement_error = Some(message.clone()));
                }
            }
        }
    }

    /// Publishes the pool as it is (committed) for readers, and returns it.
    fn publish(&self) -> Arc<View> {
        let a = self.offload.allocator();
        let karma = a.policy() == fairshare::Policy::Karma;
        let view = Arc::new(View::new(
            a.quantum(),
            Arc::clone(&self.names),
            self.members.demand.clone(),
            a.allocations().to_vec(),
            karma.then(|| a.credits().to_vec()),
            self.config.slice_bps,
        ));
        self.published.view.store(Arc::clone(&view));
        self.publish_status();
        view
    }

    /// Publishes where the pool runs (device, fallback) and its tenants' count.
    fn publish_status(&self) {
        let o = &self.offload;
        let fallback = o.fallback().map(Fallback::summary);
        let changed = {
            let s = self.published.status.load();
            s.on_device != o.on_device() || s.fallback != fallback || s.tenants != self.names.len()
        };
        if changed || o.on_device() {
            let (on_device, device_quanta, tenants) = (o.on_device(), o.device_quanta(), self.names.len());
            self.published.update_status(|s| {
                s.on_device = on_device;
                s.device_quanta = device_quanta;
                s.fallback = fallback.clone();
                s.tenants = tenants;
            });
        }
    }

    /// A tenant joins between quanta (paper section 3.4: it starts with the floor of
    /// the mean of the others' credits); the pool keeps its slices, and every fair share
    /// follows the weights as at start ([`ServeConfig::shares`]). `token`: the digest of
    /// the tenant's token, if it has one; `selector`: what selects its traffic (needed
    /// with `enforce = htb`: its class and filter are made before the join commits, and
    /// removed if it does not).
    ///
    /// On a replica (the controller) the join is made durable in the store and applied
    /// by the leader at its next quantum; the current view is returned.
    pub fn join(
        &mut self,
        name: &str,
        weight: u64,
        token: Option<Digest>,
        selector: Option<Match>,
    ) -> Result<Arc<View>, ServiceError> {
        self.check_join(name, weight, &selector)?;
        if self.replica.is_some() {
            if token.is_some() {
                return Err(ServiceError::BadRequest(
                    "token_sha256: a controller's tenants take their tokens from the file; joined tenants have none \
                     (not replicated yet)"
                        .into(),
                ));
            }
            let change = Membership::Join { name: name.to_string(), weight, selector };
            let put = self.replica.as_mut().map_or(Ok(()), |r| r.put_member(&change));
            self.replica_result(false, put)?;
            return Ok(self.published.view.load_full());
        }
        self.join_now(name, weight, token, selector)
    }

    /// Refuses a join that cannot be: its name, weight, the pool's size, its match.
    fn check_join(&self, name: &str, weight: u64, selector: &Option<Match>) -> Result<(), ServiceError> {
        check_name(name).map_err(|m| ServiceError::BadRequest(format!("name: {m}")))?;
        if self.replica.is_some() && self.offload.allocator().index_of(name).is_some() {
            // Refused here as the allocator refuses it where the join is made at once.
            return Err(ServiceError::Pool(fairshare::Error::DuplicateUser(name.to_string())));
        }
        if weight == 0 || weight > 1_000_000 {
            return Err(ServiceError::BadRequest(format!("weight: {weight} is outside 1 to 1000000")));
        }
        if self.names.len() >= self.config.max_tenants {
            return Err(ServiceError::Conflict(format!(
                "the pool has {} tenants, its most (pool.max_tenants)",
                self.names.len()
            )));
        }
        if let Some(m) = &selector {
            check_match(m).map_err(|e| ServiceError::BadRequest(format!("match{e}")))?;
        }
        if self.htb.is_some() && selector.is_none() {
            return Err(ServiceError::BadRequest("match: missing; enforce = htb needs one per tenant".into()));
        }
        Ok(())
    }

    /// Joins a tenant now (checked by [`LivePool::check_join`]), committed before it shows.
    fn join_now(
        &mut self,
        name: &str,
        weight: u64,
        token: Option<Digest>,
        selector: Option<Match>,
    ) -> Result<Arc<View>, ServiceError> {
        let mut allocator = self.offload.allocator().clone();
        let mut members = self.members.clone();
        members.weights.push(weight);
        // Its share for now (the pool grows); then every share from the weights.
        let user = UserConfig::with_alpha(name, 1, self.config.alpha, fairshare::Credits::ZERO);
        allocator.join(user, PoolChange::Resize)?;
        allocator.set_shares(&self.config.shares(&members.weights))?;
        members.demand.push(0);
        if let Some(d) = token {
            members.tokens.insert(name.to_string(), auth::to_hex(&d));
        }
        if let Some(m) = &selector {
            members.matches.insert(name.to_string(), m.clone());
        }
        if let (Some((htb, last, _)), Some(m)) = (self.htb.as_mut(), &selector) {
            let t = Tenant { name: name.to_string(), weight, selector: Some(m.clone()), token_file: None };
            htb.join(&t)?;
            last.push(Counters::default());
        }
        match self.replace("the join", allocator, members) {
            Ok(view) => Ok(view),
            Err(e) => {
                if let Some((htb, last, _)) = self.htb.as_mut() {
                    let _ = htb.leave(name);
                    last.pop();
                }
                Err(e)
            }
        }
    }

    /// A tenant leaves between quanta; its credits are dropped, and the others' fair
    /// shares follow their weights over the pool's slices. With HTB its class and filter
    /// go once the leave is committed.
    ///
    /// On a replica the leave is made durable in the store and applied by the leader at
    /// its next quantum; the current view is returned.
    pub fn leave(&mut self, name: &str) -> Result<Arc<View>, ServiceError> {
        let u = self.index(name)?;
        if let Some(r) = self.replica.as_mut() {
            let put = r.put_member(&Membership::Leave { name: name.to_string() });
            self.replica_result(false, put)?;
            return Ok(self.published.view.load_full());
        }
        self.leave_now(name, u)
    }

    /// Removes tenant `name` (index `u`) now, committed before it shows.
    fn leave_now(&mut self, name: &str, u: usize) -> Result<Arc<View>, ServiceError> {
        let mut allocator = self.offload.allocator().clone();
        allocator.leave(name, PoolChange::Resize)?;
        let mut members = self.members.clone();
        members.weights.remove(u);
        allocator.set_shares(&self.config.shares(&members.weights))?;
        members.demand.remove(u);
        members.tokens.remove(name);
        members.matches.remove(name);
        let view = self.replace("the leave", allocator, members)?;
        if let Some((htb, last, _)) = self.htb.as_mut() {
            last.remove(u);
            let left = htb.leave(name);
            self.enforcement_result(left);
        }
        Ok(view)
    }

    /// Whether this pool is a replica (the controller's): its joins and leaves are
    /// applied at the leader's next quantum, not at once.
    pub fn is_replica(&self) -> bool {
        self.replica.is_some()
    }

    /// Commits a changed pool, then installs it: the device (if any) is put back from
    /// its credits. Refused with nothing changed if the commit fails.
    fn replace(
        &mut self,
        what: &'static str,
        allocator: Allocator,
        members: Members,
    ) -> Result<Arc<View>, ServiceError> {
        if let Some(ledger) = self.ledger.as_mut() {
            let committed = ledger.commit_json(&saved(&self.base, &allocator, &members));
            self.committed(what, true, committed)?;
        }
        Ok(self.install(what, allocator, members))
    }

    /// Installs a pool: the device (if any) is put back from its credits; publishes it.
    fn install(&mut self, what: &'static str, allocator: Allocator, members: Members) -> Arc<View> {
        self.names = Arc::new(allocator.users().iter().map(|u| u.name.clone()).collect());
        // The old device handle is released first: a device serves one host at a time.
        self.offload = Offload::software(allocator.clone());
        self.offload = match self.backend.offload_from(allocator.clone(), self.options) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("fairshare serve: the device could not be opened again after {what}, on software now: {e}");
                self.published.metrics.fallback();
                Offload::software(allocator)
            }
        };
        if self.offload.fallback().is_some() {
            self.published.metrics.fallback();
        }
        self.members = members;
        self.publish()
    }

    /// Makes this pool a replica of a store elsewhere (the controller's), before it
    /// runs anything: quanta run only while it leads, commits and demands go to the
    /// store. Enforcement is the hosts' agents' then, not a replica's.
    pub fn set_replica(&mut self, replica: Box<dyn Replica>) -> Result<(), ServiceError> {
        if self.htb.is_some() || self.ledger.is_some() {
            return Err(ServiceError::Conflict(
                "a replicated pool keeps no local ledger (--state) and enforces nothing itself (enforce.kind)".into(),
            ));
        }
        self.replica = Some(replica);
        self.published.update_status(|s| s.replica = Some(ReplicaStatus { leader: false, leader_api: None }));
        Ok(())
    }

    /// Starts the replica's part (campaigning to lead, under the configuration's
    /// lease), advertising `api`.
    pub fn start_replica(&mut self, api: &str) {
        let ttl = self.config.lease_ttl;
        if let Some(r) = self.replica.as_mut() {
            r.start(api, ttl);
        }
    }

    /// One tick of the wall clock: a quantum, or on a replica that does not lead, the
    /// leader's last commit taken (`None`).
    pub fn tick(&mut self) -> Result<Option<Arc<View>>, ServiceError> {
        if let Some(r) = self.replica.as_mut() {
            let role = r.role();
            if !role.leader {
                return self.sync_as(role, false).map(|()| None);
            }
        }
        self.run_quantum().map(Some)
    }

    /// On a replica that does not lead, takes what the store committed and acknowledged
    /// since the last look (the leader's quanta show this way); the leader takes them at
    /// its next quantum instead.
    pub fn refresh(&mut self) -> Result<(), ServiceError> {
        let Some(r) = self.replica.as_mut() else { return Ok(()) };
        let role = r.role();
        if role.leader {
            self.publish_role(&role);
            return Ok(());
        }
        self.sync_as(role, false)
    }

    /// Brings a replica up to its store: the role published; with `lead`, refused
    /// unless it leads; a newer committed state installed, then the joins, leaves and
    /// demands after it.
    fn sync_replica(&mut self, lead: bool) -> Result<(), ServiceError> {
        let Some(r) = self.replica.as_mut() else { return Ok(()) };
        let role = r.role();
        self.sync_as(role, lead)
    }

    /// [`LivePool::sync_replica`] with the role already asked.
    fn sync_as(&mut self, role: Role, lead: bool) -> Result<(), ServiceError> {
        let Some(r) = self.replica.as_mut() else { return Ok(()) };
        let synced = if lead && !role.leader { None } else { Some(r.sync()) };
        self.publish_role(&role);
        let Some(synced) = synced else {
            return Err(ReplicaError::NotLeader { leader_api: role.leader_api }.into());
        };
        let synced = self.replica_result(false, synced)?;
        if let Some(state) = synced.state {
            if let Err(e) = self.restore(&state) {
                // Not installed: the store reads it again next time.
                if let Some(r) = self.replica.as_mut() {
                    r.reset();
                }
                self.published.metrics.store_failed();
                return Err(e);
            }
        }
        for change in synced.members {
            let name = change.name().to_string();
            let known = self.offload.allocator().index_of(&name);
            let applied = match (change, known) {
                (Membership::Join { weight, selector, .. }, None) => self
                    .check_join(&name, weight, &selector)
                    .and_then(|()| self.join_now(&name, weight, None, selector))
                    .map(|_| "joins"),
                (Membership::Leave { .. }, Some(u)) => self.leave_now(&name, u).map(|_| "leaves"),
                // Already done (a state committed after it), or undone since.
                _ => continue,
            };
            match applied {
                Ok(what) => eprintln!("fairshare controller: `{name}` {what}"),
                Err(e) => eprintln!("fairshare controller: the change of `{name}` could not be applied: {e}"),
            }
        }
        if let (Some(measured), DemandSource::Agents) = (synced.measured, self.config.demand) {
            // The agents' sums replace every demand: a tenant no host measures wants 0.
            let mut demand = vec![0; self.members.demand.len()];
            let index: std::collections::HashMap<&str, usize> =
                self.names.iter().enumerate().map(|(u, n)| (n.as_str(), u)).collect();
            for (tenant, slices) in &measured {
                if let Some(&u) = index.get(tenant.as_str()) {
                    demand[u] = (*slices).min(self.max_demand());
                }
            }
            self.members.demand = demand;
        }
        for (tenant, slices) in synced.demands {
            match self.offload.allocator().index_of(&tenant) {
                Some(u) => self.members.demand[u] = slices,
                None => eprintln!("fairshare controller: a demand of `{tenant}`, who is not in the pool, ignored"),
            }
        }
        Ok(())
    }

    /// Installs a state the store committed (the JSON a ledger keeps).
    fn restore(&mut self, state: &[u8]) -> Result<(), ServiceError> {
        let damaged = |m: String| ServiceError::Replica(ReplicaError::Damaged(m));
        let s: SavedPool = serde_json::from_slice(state).map_err(|e| damaged(format!("a pool it cannot read: {e}")))?;
        if s.format > saved::FORMAT {
            return Err(damaged(format!(
                "a pool of format {}, newer than this fairshare's ({})",
                s.format,
                saved::FORMAT
            )));
        }
        let users = s.allocator.users.len();
        if [s.demand.len(), s.weights.len()].iter().any(|&n| n != users) {
            return Err(damaged(format!(
                "a pool of {users} tenants with {} demands and {} weights",
                s.demand.len(),
                s.weights.len()
            )));
        }
        let base = s.base.ok_or_else(|| damaged("a pool without its configuration".into()))?;
        let differences = base.pool_differences(&Base::of(&self.config));
        if !differences.is_empty() {
            return Err(damaged(format!(
                "a pool of another configuration than this replica's file: {}",
                differences.join("; ")
            )));
        }
        let allocator = Allocator::from_state(s.allocator)?;
        let members = Members {
            demand: s.demand.into_owned(),
            weights: s.weights.into_owned(),
            tokens: s.tokens.into_owned(),
            matches: s.matches.into_owned(),
        };
        self.base = base;
        self.install("taking the leader's commit", allocator, members);
        Ok(())
    }

    /// Publishes who leads, when it changed.
    fn publish_role(&self, role: &Role) {
        let now = Some(ReplicaStatus { leader: role.leader, leader_api: role.leader_api.clone() });
        if self.published.status.load().replica != now {
            if role.leader {
                eprintln!("fairshare controller: this replica leads");
                self.published.metrics.leader_changed();
            }
            self.published.update_status(|s| s.replica = now.clone());
        }
    }

    /// Records the outcome of a call to the replica's store in the status and metrics
    /// (as [`LivePool::committed`] does for a ledger): an unreachable store makes the
    /// pool unhealthy until a call succeeds (a whole commit, or any call of a replica
    /// that does not lead); refusals (not the leader, fenced) are answers, not faults.
    fn replica_result<T>(&self, whole: bool, result: Result<T, ReplicaError>) -> Result<T, ServiceError> {
        match result {
            Ok(v) => {
                let leads = self.published.status.load().replica.as_ref().is_some_and(|r| r.leader);
                if (whole || !leads) && self.published.status.load().ledger_error.is_some() {
                    eprintln!("fairshare controller: the store answers again");
                    self.published.update_status(|s| {
                        s.ledger_error = None;
                        s.durable = true;
                    });
                }
                Ok(v)
            }
            Err(e @ (ReplicaError::NotLeader { .. } | ReplicaError::Fenced(_))) => {
                if matches!(e, ReplicaError::Fenced(_)) {
                    eprintln!("fairshare controller: {e}");
                }
                Err(e.into())
            }
            Err(e) => {
                self.published.metrics.store_failed();
                let message = e.to_string();
                if self.published.status.load().ledger_error.as_deref() != Some(message.as_str()) {
                    eprintln!("fairshare controller: {message} (no quantum commits until it answers)");
                    self.published.update_status(|s| {
                        s.ledger_error = Some(message.clone());
                        s.durable = false;
                    });
                }
                Err(e.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn fair_shares(pool: &LivePool) -> Vec<u64> {
        pool.offload.allocator().params().fair_share.clone()
    }

    fn options() -> StartOptions {
        StartOptions {
            backend: Backend::Software,
            device: DeviceOptions::new(fairshare::offload::Verify::Async, 1_000),
            state: None,
            accept_config_changes: false,
        }
    }

    #[test]
    fn shares_follow_the_weights_after_join_and_leave() {
        let text = include_str!("../../examples/serve.toml").replace("capacity = 6 ", "capacity = 10 ");
        let config = ServeConfig::parse("serve.toml", &text).expect("the example parses");
        let mut pool = LivePool::start(config, options()).expect("starts");
        // Weights 1, 1, 1 over 10 slices: quotas 3.33 each, the extra slice to the first.
        assert_eq!(fair_shares(&pool), [4, 3, 3]);
        // With D of weight 2 the quotas are 2, 2, 2, 4: exact.
        pool.join("D", 2, None, None).expect("joins");
        assert_eq!(fair_shares(&pool), [2, 2, 2, 4]);
        assert_eq!(pool.offload.allocator().params().capacity, 10);
        // B leaves: 1, 1, 2 over 10 are quotas 2.5, 2.5, 5, the extra slice to A.
        pool.leave("B").expect("leaves");
        assert_eq!(fair_shares(&pool), [3, 2, 5]);
        // A weight whose share would round to 0 is refused, and nothing changes.
        assert!(pool.join("E", 1_000_000, None, None).is_err());
        assert_eq!(fair_shares(&pool), [3, 2, 5]);
        // A name outside the safe charset is refused.
        let e = pool.join("x\"} 1\nfake 9", 1, None, None).unwrap_err();
        assert!(e.to_string().contains("name: `x\\\"} 1\\nfake 9` has the character"), "{e}");
    }

    #[test]
    fn joins_stop_at_max_tenants() {
        let text = include_str!("../../examples/serve.toml")
            .replace("initial_credits = 6", "initial_credits = 6\nmax_tenants = 4");
        let config = ServeConfig::parse("serve.toml", &text).unwrap();
        let mut pool = LivePool::start(config, options()).unwrap();
        pool.join("D", 1, None, None).unwrap();
        let e = pool.join("E", 1, None, None).unwrap_err();
        assert!(matches!(&e, ServiceError::Conflict(m) if m.contains("4 tenants, its most")), "{e}");
        assert_eq!(pool.published().view.load().names.len(), 4);
        // A file with more tenants than its maximum is refused naming the field.
        let text = include_str!("../../examples/serve.toml")
            .replace("initial_credits = 6", "initial_credits = 6\nmax_tenants = 2");
        let e = ServeConfig::parse("serve.toml", &text).unwrap_err();
        assert!(e.to_string().contains("3 tenants, more than pool.max_tenants (2)"), "{e}");
    }
}
