//! The live pool: declared demands (sticky until changed), one quantum at a time through
//! the offload backend, the credits committed to the ledger before the allocation is
//! published, tenants joining and leaving between quanta.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use fairshare::offload::Offload;
use fairshare::{Allocator, AllocatorState, PoolChange, UserConfig};
use fairshare_backends::{Backend, DeviceOptions};
use fairshare_ledger::Ledger;
use serde::{Deserialize, Serialize};

use crate::config::{DemandSource, Enforce, ServeConfig};
use crate::htb::{Counters, Estimator, Htb};
use crate::metrics::Metrics;
use crate::ServiceError;

/// One tenant in a published allocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantView {
    /// Its name.
    pub name: String,
    /// Its demand in the quantum, in slices.
    pub demand_slices: u64,
    /// Its allocation, in slices.
    pub alloc_slices: u64,
    /// Its allocation in bits per second (slices x the slice's rate).
    pub rate_bps: u64,
    /// Its credits after the quantum, as an exact decimal (Karma; `null` otherwise).
    pub credits: Option<String>,
}

/// The allocation of the last quantum, as published.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Quanta run so far (0 before the first).
    pub quantum: u64,
    /// Every tenant, in index order.
    pub tenants: Vec<TenantView>,
}

/// What the ledger keeps after every change (borrowed when written, owned when read).
#[derive(Serialize, Deserialize)]
struct Checkpoint<'a> {
    /// The configuration's slices and policy: a ledger of another pool is refused.
    pool: String,
    /// The allocator's state (tenants, shares, credits, last allocations, quanta run).
    allocator: AllocatorState,
    /// The declared demands, sticky until changed.
    demand: Cow<'a, [u64]>,
    /// Each tenant's weight.
    weights: Cow<'a, [u64]>,
}

/// A demand as posted: in bits per second or in slices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demand {
    /// Bits per second (rounded up to whole slices).
    Bps(u64),
    /// Slices.
    Slices(u64),
}

/// The live pool.
pub struct LivePool {
    config: ServeConfig,
    backend: Backend,
    options: DeviceOptions,
    pool: Offload,
    demand: Vec<u64>,
    weights: Vec<u64>,
    ledger: Option<Ledger>,
    /// The metrics it keeps up to date (shared: a scrape does not wait for a quantum).
    pub metrics: Arc<Metrics>,
    /// The HTB tree it enforces with, and the classes' counters at the last quantum.
    htb: Option<(Htb, Vec<Counters>)>,
    estimator: Estimator,
}

fn pool_id(config: &ServeConfig) -> String {
    format!("{} slices, policy {}", config.slices, config.policy)
}

impl LivePool {
    /// Starts the pool of `config` on `backend`; with a ledger folder, resumes from its
    /// last committed state.
    pub fn start(
        config: ServeConfig,
        backend: Backend,
        options: DeviceOptions,
        state: Option<&Path>,
    ) -> Result<Self, ServiceError> {
        let n = config.tenants.len();
        let mut allocator = Allocator::new(config.pool()?, config.policy)?;
        let mut demand = vec![0; n];
        let mut weights: Vec<u64> = config.tenants.iter().map(|t| t.weight).collect();
        let ledger = match state {
            None => None,
            Some(dir) => {
                let decode = |b: &[u8]| serde_json::from_slice::<Checkpoint>(b).map_err(|e| e.to_string());
                let (ledger, latest) = Ledger::open_run(dir, decode, |cp| &cp.pool, &pool_id(&config))?;
                if let Some(cp) = latest {
                    allocator = Allocator::from_state(cp.allocator)?;
                    demand = cp.demand.into_owned();
                    weights = cp.weights.into_owned();
                }
                Some(ledger)
            }
        };
        let pool = backend.pool_from(allocator, options)?;
        let metrics = Arc::new(Metrics::new(pool.label()));
        // A device refused at start (it does not fit, or its credits did not read back).
        if pool.fallback().is_some() {
            metrics.fallback();
        }
        let htb = match &config.enforce {
            Enforce::None => None,
            Enforce::Htb { dev } => {
                // The tree is built from the file's tenants: the ledger must have the same.
                let names: Vec<&str> = pool.pool().users().iter().map(|u| u.name.as_str()).collect();
                let file: Vec<&str> = config.tenants.iter().map(|t| t.name.as_str()).collect();
                if names != file {
                    return Err(ServiceError::Config(format!(
                        "the ledger's tenants ({}) differ from the configuration's ({}); with enforce = htb they must \
                         be the same",
                        names.join(", "),
                        file.join(", ")
                    )));
                }
                let htb =
                    Htb::install(dev, config.slices.saturating_mul(config.slice_bps), &config.tenants, config.quantum)?;
                let counters = htb.counters()?;
                Some((htb, counters))
            }
        };
        let mut live = LivePool {
            config,
            backend,
            options,
            pool,
            demand,
            weights,
            ledger,
            metrics,
            htb,
            estimator: Estimator::default(),
        };
        live.publish();
        live.enforce()?;
        Ok(live)
    }

    /// The configuration.
    pub fn config(&self) -> &ServeConfig {
        &self.config
    }

    fn index(&self, name: &str) -> Result<usize, ServiceError> {
        self.pool.pool().index_of(name).ok_or_else(|| ServiceError::UnknownTenant(name.to_string()))
    }

    /// Sets a tenant's demand from the next quantum on.
    pub fn set_demand(&mut self, name: &str, demand: Demand) -> Result<(), ServiceError> {
        let u = self.index(name)?;
        let slices = match demand {
            Demand::Slices(s) => s,
            Demand::Bps(b) => b.div_ceil(self.config.slice_bps),
        };
        if slices > fairshare_abi::WORD_MAX.max(self.config.slices.saturating_mul(1_000)) {
            return Err(ServiceError::BadRequest(format!(
                "demand: {slices} slices is above the largest accepted ({})",
                fairshare_abi::WORD_MAX.max(self.config.slices.saturating_mul(1_000))
            )));
        }
        self.demand[u] = slices;
        Ok(())
    }

    /// Runs one quantum: allocate, commit to the ledger, then publish.
    pub fn run_quantum(&mut self) -> Result<Snapshot, ServiceError> {
        let start = Instant::now();
        self.measure()?;
        let on_device = self.pool.on_device();
        self.pool.allocate(&self.demand)?;
        // The ledger holds verified credits only: wait for the verifier (async) before
        // the commit. A mismatch found now puts the software's result in its place.
        self.pool.settle();
        self.commit()?;
        self.metrics.quantum_done(start.elapsed());
        // Counted when it happens: a pool rebuilt by a join or leave may fall back again.
        if on_device && !self.pool.on_device() {
            self.metrics.fallback();
        }
        let snapshot = self.publish();
        self.enforce()?;
        Ok(snapshot)
    }

    /// With measured demand, each tenant's demand from its class's counters.
    fn measure(&mut self) -> Result<(), ServiceError> {
        if self.config.demand != DemandSource::Measured {
            return Ok(());
        }
        let Some((htb, last)) = self.htb.as_mut() else { return Ok(()) };
        let now = htb.counters()?;
        let secs = self.config.quantum.as_secs_f64();
        for (u, (before, after)) in last.iter().zip(&now).enumerate() {
            let alloc = self.pool.pool().allocations()[u];
            self.demand[u] =
                self.estimator.demand(*before, *after, alloc, secs, self.config.slice_bps, self.config.slices);
        }
        *last = now;
        Ok(())
    }

    /// With HTB, the allocation as class rates, in one batch.
    fn enforce(&self) -> Result<(), ServiceError> {
        let Some((htb, _)) = &self.htb else { return Ok(()) };
        let alloc = self.pool.pool().allocations();
        let rates: Vec<u64> = alloc.iter().map(|&a| a.saturating_mul(self.config.slice_bps)).collect();
        htb.apply(&rates)
    }

    fn commit(&mut self) -> Result<(), ServiceError> {
        let Some(ledger) = self.ledger.as_mut() else { return Ok(()) };
        let cp = Checkpoint {
            pool: pool_id(&self.config),
            allocator: self.pool.pool().export_state(),
            demand: Cow::Borrowed(&self.demand),
            weights: Cow::Borrowed(&self.weights),
        };
        let bytes = serde_json::to_vec(&cp).map_err(|e| ServiceError::Config(e.to_string()))?;
        ledger.commit(&bytes)?;
        Ok(())
    }

    /// The last published allocation.
    pub fn snapshot(&self) -> Snapshot {
        let a = self.pool.pool();
        let karma = a.policy() == fairshare::Policy::Karma;
        let tenants = a
            .users()
            .iter()
            .zip(a.allocations())
            .enumerate()
            .map(|(u, (user, &alloc))| TenantView {
                name: user.name.clone(),
                demand_slices: self.demand[u],
                alloc_slices: alloc,
                rate_bps: alloc.saturating_mul(self.config.slice_bps),
                credits: karma.then(|| a.credits()[u].to_string()),
            })
            .collect();
        Snapshot { quantum: a.quantum(), tenants }
    }

    /// Publishes the allocation to the metrics and returns it.
    fn publish(&mut self) -> Snapshot {
        let snapshot = self.snapshot();
        self.metrics.publish(&snapshot, self.pool.pool().credits());
        snapshot
    }

    /// A tenant joins between quanta (paper section 3.4: it starts with the mean of the
    /// others' credits); the pool keeps its slices, and every fair share follows the
    /// weights as at start ([`ServeConfig::shares`]).
    pub fn join(&mut self, name: &str, weight: u64) -> Result<Snapshot, ServiceError> {
        self.no_htb("join")?;
        if name.is_empty() {
            return Err(ServiceError::BadRequest("name: is empty".into()));
        }
        if weight == 0 || weight > 1_000_000 {
            return Err(ServiceError::BadRequest(format!("weight: {weight} is outside 1 to 1000000")));
        }
        let mut allocator = self.pool.pool().clone();
        let mut weights = self.weights.clone();
        weights.push(weight);
        // Its share for now (the pool grows); then every share from the weights.
        let user = UserConfig::with_alpha(name, 1, self.config.alpha, fairshare::Credits::ZERO);
        allocator.join(user, PoolChange::Resize)?;
        allocator.set_shares(&self.config.shares(&weights))?;
        self.replace(allocator, weights, |v| v.push(0))
    }

    /// A tenant leaves between quanta; its credits are dropped, and the others' fair
    /// shares follow their weights over the pool's slices.
    pub fn leave(&mut self, name: &str) -> Result<Snapshot, ServiceError> {
        self.no_htb("leave")?;
        let u = self.index(name)?;
        let mut allocator = self.pool.pool().clone();
        allocator.leave(name, PoolChange::Resize)?;
        let mut weights = self.weights.clone();
        weights.remove(u);
        allocator.set_shares(&self.config.shares(&weights))?;
        self.metrics.forget(name);
        self.replace(allocator, weights, |v| {
            v.remove(u);
        })
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

    /// Installs a changed pool: the device (if any) is put back from its credits.
    fn replace(
        &mut self,
        allocator: Allocator,
        weights: Vec<u64>,
        edit: impl Fn(&mut Vec<u64>),
    ) -> Result<Snapshot, ServiceError> {
        // The old device handle is released first: a device serves one host at a time.
        self.pool = Offload::software(allocator.clone());
        self.pool = self.backend.pool_from(allocator, self.options)?;
        if self.pool.fallback().is_some() {
            self.metrics.fallback();
        }
        self.weights = weights;
        edit(&mut self.demand);
        self.commit()?;
        Ok(self.publish())
    }

    /// The backend and whether the pool is on its device, as `/v1/status` shows.
    pub fn status(&self) -> serde_json::Value {
        serde_json::json!({
            "backend": self.pool.label(),
            "on_device": self.pool.on_device(),
            "device_quanta": self.pool.device_quanta(),
            "fallback": self.pool.fallback().map(|fb| serde_json::json!({
                "after_quanta": fb.quantum, "kind": fb.error.kind(), "reason": fb.to_string(),
            })),
            "quantum": self.pool.pool().quantum(),
            "quantum_period_ms": self.config.quantum.as_secs_f64() * 1e3,
            "missed_ticks": self.metrics.missed_ticks(),
            "durable": self.ledger.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fair_shares(pool: &LivePool) -> Vec<u64> {
        pool.pool.pool().params().fair_share.clone()
    }

    #[test]
    fn shares_follow_the_weights_after_join_and_leave() {
        let text = include_str!("../../examples/serve.toml").replace("capacity = 6 ", "capacity = 10 ");
        let config = ServeConfig::parse("serve.toml", &text).expect("the example parses");
        let mut pool = LivePool::start(
            config,
            Backend::Software,
            DeviceOptions::new(fairshare::offload::Verify::Async, 1_000),
            None,
        )
        .expect("starts");
        // Weights 1, 1, 1 over 10 slices: quotas 3.33 each, the extra slice to the first.
        assert_eq!(fair_shares(&pool), [4, 3, 3]);
        // With D of weight 2 the quotas are 2, 2, 2, 4: exact.
        pool.join("D", 2).expect("joins");
        assert_eq!(fair_shares(&pool), [2, 2, 2, 4]);
        assert_eq!(pool.pool.pool().params().capacity, 10);
        // B leaves: 1, 1, 2 over 10 are quotas 2.5, 2.5, 5, the extra slice to A.
        pool.leave("B").expect("leaves");
        assert_eq!(fair_shares(&pool), [3, 2, 5]);
        // A weight whose share would round to 0 is refused, and nothing changes.
        assert!(pool.join("E", 1_000_000).is_err());
        assert_eq!(fair_shares(&pool), [3, 2, 5]);
    }
}
