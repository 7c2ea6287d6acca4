//! The Prometheus metrics (prometheus-client): per tenant its demand, allocation, rate
//! and credits; quanta run, how long each took, missed clock ticks, fallbacks from the
//! device to software, and the backend in use.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use fairshare::Credits;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::pool::Snapshot;

/// The label of per-tenant series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabel {
    tenant: String,
}

/// Every metric of the service, registered once.
pub struct Metrics {
    registry: Registry,
    demand: Family<TenantLabel, Gauge>,
    allocation: Family<TenantLabel, Gauge>,
    rate: Family<TenantLabel, Gauge>,
    credits: Family<TenantLabel, Gauge<f64, AtomicU64>>,
    quanta: Counter,
    duration: Histogram,
    fallbacks: Counter,
    missed: Counter,
}

impl Metrics {
    /// The metrics of a pool on `backend`.
    pub fn new(backend: &str) -> Self {
        let (demand, allocation, rate, credits) = (
            Family::default(),
            Family::default(),
            Family::default(),
            Family::<TenantLabel, Gauge<f64, AtomicU64>>::default(),
        );
        let (quanta, fallbacks, missed) = (Counter::default(), Counter::default(), Counter::default());
        let duration = Histogram::new(exponential_buckets(1e-6, 4.0, 12));
        let mut registry = Registry::default();
        registry.register("fairshare_tenant_demand_slices", "Demand of the tenant in the last quantum", demand.clone());
        registry.register("fairshare_tenant_allocation_slices", "Slices allocated to the tenant", allocation.clone());
        registry.register("fairshare_tenant_rate_bps", "Rate allocated to the tenant, bits per second", rate.clone());
        registry.register("fairshare_tenant_credits", "Karma credits of the tenant", credits.clone());
        registry.register("fairshare_quanta", "Quanta run", quanta.clone());
        registry.register("fairshare_quantum_duration_seconds", "Time to run one quantum", duration.clone());
        registry.register("fairshare_backend_fallbacks", "Switches from the device to software", fallbacks.clone());
        registry.register("fairshare_missed_ticks", "Clock ticks skipped because a quantum overran", missed.clone());
        registry.register(
            "fairshare_backend",
            "The backend the pool was started on",
            Info::new(vec![("backend", backend.to_string())]),
        );
        Metrics { registry, demand, allocation, rate, credits, quanta, duration, fallbacks, missed }
    }

    /// A quantum ran and took `took`.
    pub fn quantum_done(&self, took: Duration) {
        self.quanta.inc();
        self.duration.observe(took.as_secs_f64());
    }

    /// The pool left its device.
    pub fn fallback(&self) {
        self.fallbacks.inc();
    }

    /// Ticks were skipped.
    pub fn missed(&self, ticks: u64) {
        self.missed.inc_by(ticks);
    }

    /// Ticks skipped so far.
    pub fn missed_ticks(&self) -> u64 {
        self.missed.get()
    }

    /// Sets the per-tenant series from a published allocation.
    pub fn publish(&self, s: &Snapshot, credits: &[Credits]) {
        for (t, c) in s.tenants.iter().zip(credits) {
            let label = TenantLabel { tenant: t.name.clone() };
            let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            self.demand.get_or_create(&label).set(gauge(t.demand_slices));
            self.allocation.get_or_create(&label).set(gauge(t.alloc_slices));
            self.rate.get_or_create(&label).set(gauge(t.rate_bps));
            if t.credits.is_some() {
                self.credits.get_or_create(&label).set(c.to_f64());
            }
        }
    }

    /// Drops the series of a tenant that left.
    pub fn forget(&self, tenant: &str) {
        let label = TenantLabel { tenant: tenant.to_string() };
        self.demand.remove(&label);
        self.allocation.remove(&label);
        self.rate.remove(&label);
        self.credits.remove(&label);
    }

    /// The Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
