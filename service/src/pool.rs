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
use crate::config::{check_name, DemandSource, Enforce, ServeConfig};
use crate::htb::{Counters, Estimator, Htb};
use crate::metrics::{Metrics, Phase};
use crate::publish::{Published, Status, View};
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

/// The live pool.
pub struct LivePool {
    config: ServeConfig,
    backend: Backend,
    options: DeviceOptions,
    offload: Offload,
    names: Arc<Vec<String>>,
    demand: Vec<u64>,
    weights: Vec<u64>,
    /// Token digests (hexadecimal) of the tenants who joined with one.
    tokens: BTreeMap<String, String>,
    ledger: Option<Ledger>,
    base: Base,
    /// The HTB tree it enforces with, and the classes' counters at the last committed
    /// quantum with the instant they were read.
    htb: Option<(Htb, Vec<Counters>, Instant)>,
    estimator: Estimator,
    published: Arc<Published>,
}

/// The pool's whole state, as the ledger keeps it.
fn saved<'a>(
    base: &Base,
    allocator: &Allocator,
    demand: &'a [u64],
    weights: &'a [u64],
    tokens: &'a BTreeMap<String, String>,
) -> SavedPool<'a> {
    SavedPool {
        format: saved::FORMAT,
        base: Some(base.clone()),
        pool: None,
        allocator: allocator.export_state(),
        demand: demand.into(),
        weights: weights.into(),
        tokens: std::borrow::Cow::Borrowed(tokens),
    }
}

impl LivePool {
    /// Starts the pool of `config`; with a ledger folder, resumes from its last
    /// committed state and the changes after it.
    pub fn start(config: ServeConfig, start: StartOptions) -> Result<Self, ServiceError> {
        let mut allocator = Allocator::new(config.pool_config()?, config.policy)?;
        let mut demand = vec![0; config.tenants.len()];
        let mut weights: Vec<u64> = config.tenants.iter().map(|t| t.weight).collect();
        let mut tokens = BTreeMap::new();
        let file_base = Base::of(&config);
        let mut base = file_base.clone();
        // Whether the ledger needs a whole state now (a new ledger, or accepted changes).
        let mut save_now = false;
        let ledger = match &start.state {
            None => None,
            Some(dir) => {
                let (ledger, state, changes) = Ledger::open_json::<SavedPool, SavedChange>(dir)?;
                let inconsistent =
                    |reason: String| ServiceError::Ledger(LedgerError::Inconsistent { path: dir.clone(), reason });
                match state {
                    None if !changes.is_empty() => {
                        return Err(inconsistent(format!("{} changes and no state they follow", changes.len())))
                    }
                    None => save_now = true,
                    Some(s) => {
                        if s.format > saved::FORMAT {
                            return Err(inconsistent(format!(
                                "its format {} is newer than this fairshare's ({})",
                                s.format,
                                saved::FORMAT
                            )));
                        }
                        base = match (s.base, s.pool) {
                            (Some(b), _) => b,
                            // A ledger of format 1 knew its slices and policy (its identity)
                            // and its tenants; alpha and the initial credits are the file's.
                            (None, Some(id)) if id == saved::format1_identity(&config) => Base {
                                tenants: s
                                    .allocator
                                    .users
                                    .iter()
                                    .map(|u| u.name.clone())
                                    .zip(s.weights.iter().copied())
                                    .collect(),
                                ..file_base.clone()
                            },
                            (None, found) => {
                                return Err(ServiceError::Ledger(LedgerError::OtherRun {
                                    path: dir.clone(),
                                    found: found.unwrap_or_default(),
                                    expected: saved::format1_identity(&config),
                                }))
                            }
                        };
                        allocator = Allocator::from_state(s.allocator)?;
                        demand = s.demand.into_owned();
                        weights = s.weights.into_owned();
                        tokens = s.tokens.into_owned();
                        for change in changes {
                            match change {
                                SavedChange::Demand { tenant, slices } => {
                                    let u = allocator.index_of(&tenant).ok_or_else(|| {
                                        inconsistent(format!("a demand of `{tenant}`, who is not in its state"))
                                    })?;
                                    demand[u] = slices;
                                }
                            }
                        }
                    }
                }
                Some(ledger)
            }
        };
        let differences = base.differences(&file_base);
        if !differences.is_empty() {
            if !start.accept_config_changes {
                return Err(ServiceError::ConfigChanged { differences });
            }
            for d in &differences {
                eprintln!("fairshare serve: accepting a configuration change: {d}");
            }
            Self::apply_config(&config, &base, &mut allocator, &mut demand, &mut weights)?;
            base = file_base;
            save_now = true;
        }
        if allocator.users().len() > config.max_tenants {
            return Err(ServiceError::Conflict(format!(
                "the ledger holds {} tenants, more than pool.max_tenants ({})",
                allocator.users().len(),
                config.max_tenants
            )));
        }
        let mut ledger = ledger;
        if let (Some(l), true) = (ledger.as_mut(), save_now) {
            l.commit_json(&saved(&base, &allocator, &demand, &weights, &tokens))?;
        }
        let offload = start.backend.offload_from(allocator, start.device)?;
        let metrics = Metrics::new(offload.label());
        // A device refused at start (it does not fit, or its credits did not read back).
        if offload.fallback().is_some() {
            metrics.fallback();
        }
        let htb = match &config.enforce {
            Enforce::None => None,
            Enforce::Htb { dev } => {
                // The tree is built from the file's tenants: the ledger must have the same.
                let names: Vec<&str> = offload.allocator().users().iter().map(|u| u.name.as_str()).collect();
                let file: Vec<&str> = config.tenants.iter().map(|t| t.name.as_str()).collect();
                if names != file {
                    return Err(ServiceError::Conflict(format!(
                        "the ledger's tenants ({}) differ from the configuration's ({}); with enforce = htb they must \
                         be the same",
                        names.join(", "),
                        file.join(", ")
                    )));
                }
                let htb =
                    Htb::install(dev, config.slices.saturating_mul(config.slice_bps), &config.tenants, config.quantum)?;
                let counters = htb.counters()?;
                Some((htb, counters, Instant::now()))
            }
        };
        let names = Arc::new(offload.allocator().users().iter().map(|u| u.name.clone()).collect::<Vec<_>>());
        let view = View::new(0, names.clone(), vec![], vec![], None, config.slice_bps);
        let status = Status {
            backend: offload.label().to_string(),
            on_device: offload.on_device(),
            device_quanta: 0,
            fallback: None,
            quantum_period_ms: config.quantum.as_secs_f64() * 1e3,
            durable: ledger.is_some(),
            ledger: ledger.is_some(),
            ledger_error: None,
            enforcement_error: None,
            clock_error: None,
            tenants: names.len(),
        };
        let published = Arc::new(Published::new(view, status, metrics));
        let live = LivePool {
            config,
            backend: start.backend,
            options: start.device,
            offload,
            names,
            demand,
            weights,
            tokens,
            ledger,
            base,
            htb,
            estimator: Estimator::default(),
            published,
        };
        live.publish();
        live.enforce();
        Ok(live)
    }

    /// Applies the file's configuration to a resumed pool (accepted changes): the
    /// policy, tenants of the file joining or leaving, weights, then every share from
    /// the weights and the file's slices and alpha.
    fn apply_config(
        config: &ServeConfig,
        base: &Base,
        allocator: &mut Allocator,
        demand: &mut Vec<u64>,
        weights: &mut Vec<u64>,
    ) -> Result<(), ServiceError> {
        if allocator.policy() != config.policy {
            let mut state = allocator.export_state();
            state.policy = config.policy;
            *allocator = Allocator::from_state(state)?;
        }
        for (name, _) in &base.tenants {
            if !config.tenants.iter().any(|t| &t.name == name) {
                if let Some(u) = allocator.index_of(name) {
                    allocator.leave(name, PoolChange::Resize)?;
                    demand.remove(u);
                    weights.remove(u);
                }
            }
        }
        for t in &config.tenants {
            match allocator.index_of(&t.name) {
                Some(u) => weights[u] = t.weight,
                None => {
                    let user = UserConfig::with_alpha(&t.name, 1, config.alpha, fairshare::Credits::ZERO);
                    allocator.join(user, PoolChange::Resize)?;
                    demand.push(0);
                    weights.push(t.weight);
                }
            }
        }
        allocator.set_shares(&config.shares(weights))?;
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
        self.tokens.iter().filter_map(|(n, hex)| auth::from_hex(hex).ok().map(|d| (n.clone(), d))).collect()
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
        self.demand[u] = slices;
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
        let (demand, counters) = self.measure()?;
        let measured = Instant::now();
        let savepoint = self.ledger.is_some().then(|| self.offload.savepoint());
        let on_device = self.offload.on_device();
        self.offload.allocate(&demand)?;
        // The ledger holds verified credits only: wait for the verifier (async) before
        // the commit. A mismatch found now puts the software's result in its place.
        self.offload.settle();
        let allocated = Instant::now();
        let committed = self.commit_quantum(&demand);
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
        self.demand = demand;
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

    /// Commits the pool after a quantum on `demand` (nothing without a ledger).
    fn commit_quantum(&mut self, demand: &[u64]) -> Result<(), ServiceError> {
        let Some(ledger) = self.ledger.as_mut() else { return Ok(()) };
        let committed =
            ledger.commit_json(&saved(&self.base, self.offload.allocator(), demand, &self.weights, &self.tokens));
        self.committed("the quantum", true, committed)
    }

    /// The demands of the next quantum: declared, or (measured) from the classes'
    /// counters, with the counters read.
    fn measure(&self) -> Result<(Vec<u64>, Option<Vec<Counters>>), ServiceError> {
        if self.config.demand != DemandSource::Measured {
            return Ok((self.demand.clone(), None));
        }
        let Some((htb, last, at)) = self.htb.as_ref() else { return Ok((self.demand.clone(), None)) };
        let now = htb.counters()?;
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

    /// With HTB, the allocation as class rates, in one batch. A failure is counted,
    /// shown in the status and logged when it starts and ends; the quantum stands.
    fn enforce(&self) {
        let Some((htb, _, _)) = &self.htb else { return };
        let alloc = self.offload.allocator().allocations();
        let rates: Vec<u64> = alloc.iter().map(|&a| a.saturating_mul(self.config.slice_bps)).collect();
        let was = self.published.status.load().enforcement_error.clone();
        match htb.apply(&rates) {
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
            self.demand.clone(),
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
    /// the tenant's token, if it has one.
    pub fn join(&mut self, name: &str, weight: u64, token: Option<Digest>) -> Result<Arc<View>, ServiceError> {
        self.no_htb("join")?;
        check_name(name).map_err(|m| ServiceError::BadRequest(format!("name: {m}")))?;
        if weight == 0 || weight > 1_000_000 {
            return Err(ServiceError::BadRequest(format!("weight: {weight} is outside 1 to 1000000")));
        }
        if self.names.len() >= self.config.max_tenants {
            return Err(ServiceError::Conflict(format!(
                "the pool has {} tenants, its most (pool.max_tenants)",
                self.names.len()
            )));
        }
        let mut allocator = self.offload.allocator().clone();
        let mut weights = self.weights.clone();
        weights.push(weight);
        // Its share for now (the pool grows); then every share from the weights.
        let user = UserConfig::with_alpha(name, 1, self.config.alpha, fairshare::Credits::ZERO);
        allocator.join(user, PoolChange::Resize)?;
        allocator.set_shares(&self.config.shares(&weights))?;
        let mut demand = self.demand.clone();
        demand.push(0);
        let mut tokens = self.tokens.clone();
        if let Some(d) = token {
            tokens.insert(name.to_string(), auth::to_hex(&d));
        }
        self.replace("the join", allocator, demand, weights, tokens)
    }

    /// A tenant leaves between quanta; its credits are dropped, and the others' fair
    /// shares follow their weights over the pool's slices.
    pub fn leave(&mut self, name: &str) -> Result<Arc<View>, ServiceError> {
        self.no_htb("leave")?;
        let u = self.index(name)?;
        let mut allocator = self.offload.allocator().clone();
        allocator.leave(name, PoolChange::Resize)?;
        let mut weights = self.weights.clone();
        weights.remove(u);
        allocator.set_shares(&self.config.shares(&weights))?;
        let mut demand = self.demand.clone();
        demand.remove(u);
        let mut tokens = self.tokens.clone();
        tokens.remove(name);
        self.replace("the leave", allocator, demand, weights, tokens)
    }

    /// Tenants joining or leaving would change the HTB tree: not in this build.
    fn no_htb(&self, what: &str) -> Result<(), ServiceError> {
        match self.htb {
            Some(_) => Err(ServiceError::Conflict(format!(
                "tenants cannot {what} while enforce = htb (the tree is made at start); restart with the new tenants"
            ))),
            None => Ok(()),
        }
    }

    /// Commits a changed pool, then installs it: the device (if any) is put back from
    /// its credits. Refused with nothing changed if the commit fails.
    fn replace(
        &mut self,
        what: &'static str,
        allocator: Allocator,
        demand: Vec<u64>,
        weights: Vec<u64>,
        tokens: BTreeMap<String, String>,
    ) -> Result<Arc<View>, ServiceError> {
        if let Some(ledger) = self.ledger.as_mut() {
            let committed = ledger.commit_json(&saved(&self.base, &allocator, &demand, &weights, &tokens));
            self.committed(what, true, committed)?;
        }
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
        (self.demand, self.weights, self.tokens) = (demand, weights, tokens);
        Ok(self.publish())
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
        pool.join("D", 2, None).expect("joins");
        assert_eq!(fair_shares(&pool), [2, 2, 2, 4]);
        assert_eq!(pool.offload.allocator().params().capacity, 10);
        // B leaves: 1, 1, 2 over 10 are quotas 2.5, 2.5, 5, the extra slice to A.
        pool.leave("B").expect("leaves");
        assert_eq!(fair_shares(&pool), [3, 2, 5]);
        // A weight whose share would round to 0 is refused, and nothing changes.
        assert!(pool.join("E", 1_000_000, None).is_err());
        assert_eq!(fair_shares(&pool), [3, 2, 5]);
        // A name outside the safe charset is refused.
        let e = pool.join("x\"} 1\nfake 9", 1, None).unwrap_err();
        assert!(e.to_string().contains("name: `x\\\"} 1\\nfake 9` has the character"), "{e}");
    }

    #[test]
    fn joins_stop_at_max_tenants() {
        let text = include_str!("../../examples/serve.toml")
            .replace("initial_credits = 6", "initial_credits = 6\nmax_tenants = 4");
        let config = ServeConfig::parse("serve.toml", &text).unwrap();
        let mut pool = LivePool::start(config, options()).unwrap();
        pool.join("D", 1, None).unwrap();
        let e = pool.join("E", 1, None).unwrap_err();
        assert!(matches!(&e, ServiceError::Conflict(m) if m.contains("4 tenants, its most")), "{e}");
        assert_eq!(pool.published().view.load().names.len(), 4);
        // A file with more tenants than its maximum is refused naming the field.
        let text = include_str!("../../examples/serve.toml")
            .replace("initial_credits = 6", "initial_credits = 6\nmax_tenants = 2");
        let e = ServeConfig::parse("serve.toml", &text).unwrap_err();
        assert!(e.to_string().contains("3 tenants, more than pool.max_tenants (2)"), "{e}");
    }
}
