//! What the pool publishes for readers: the last committed quantum's allocation (a
//! [`View`]) and the pool's health (a [`Status`]), each an immutable value swapped in
//! whole (arc-swap) once it is committed. Readers (`GET /v1/allocations`, `/metrics`,
//! `/v1/status`, `/healthz`) load the current value and take no lock the clock takes,
//! so no number of readers can hold up a quantum; the JSON of a view is encoded once,
//! by the first reader that asks for it.

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;
use bytes::Bytes;
use fairshare::Credits;
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::metrics::Metrics;

/// The allocation of the last committed quantum.
#[derive(Debug)]
pub struct View {
    /// Quanta committed so far (0 before the first).
    pub quantum: u64,
    /// The tenants' names, in index order (shared by the views until a join or leave).
    pub names: Arc<Vec<String>>,
    /// Each tenant's demand in the quantum, in slices.
    pub demand: Vec<u64>,
    /// Each tenant's allocation, in slices.
    pub alloc: Vec<u64>,
    /// Each tenant's credits after the quantum (Karma only).
    pub credits: Option<Vec<Credits>>,
    /// Bits per second of a slice.
    pub slice_bps: u64,
    json: OnceLock<Bytes>,
    metrics: OnceLock<Bytes>,
}

impl View {
    /// A view of these vectors (all of the names' length).
    pub fn new(
        quantum: u64,
        names: Arc<Vec<String>>,
        demand: Vec<u64>,
        alloc: Vec<u64>,
        credits: Option<Vec<Credits>>,
        slice_bps: u64,
    ) -> View {
        View { quantum, names, demand, alloc, credits, slice_bps, json: OnceLock::new(), metrics: OnceLock::new() }
    }

    /// `GET /v1/allocations`' body: `{"quantum", "tenants": [{"name", "demand_slices",
    /// "alloc_slices", "rate_bps", "credits"}]}`, encoded once.
    pub fn json(&self) -> Bytes {
        self.json
            .get_or_init(|| {
                // Encoding numbers and strings into a Vec cannot fail.
                Bytes::from(serde_json::to_vec(self).unwrap_or_default())
            })
            .clone()
    }

    /// The per-tenant series of `/metrics` (the same in both formats), rendered once.
    pub fn tenant_metrics(&self) -> Bytes {
        self.metrics.get_or_init(|| Bytes::from(crate::metrics::render_tenants(self))).clone()
    }

    /// Tenant `u`'s rate in bits per second.
    pub fn rate_bps(&self, u: usize) -> u64 {
        self.alloc[u].saturating_mul(self.slice_bps)
    }
}

impl Serialize for View {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Tenants<'a>(&'a View);
        struct Tenant<'a>(&'a View, usize);
        impl Serialize for Tenants<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.names.len()))?;
                for u in 0..self.0.names.len() {
                    seq.serialize_element(&Tenant(self.0, u))?;
                }
                seq.end()
            }
        }
        impl Serialize for Tenant<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let (v, u) = (self.0, self.1);
                let mut t = s.serialize_struct("Tenant", 5)?;
                t.serialize_field("name", &v.names[u])?;
                t.serialize_field("demand_slices", &v.demand[u])?;
                t.serialize_field("alloc_slices", &v.alloc[u])?;
                t.serialize_field("rate_bps", &v.rate_bps(u))?;
                // Credits are exact decimals, as strings (`null` for max-min and strict).
                t.serialize_field("credits", &v.credits.as_ref().map(|c| c[u].to_string()))?;
                t.end()
            }
        }
        let mut st = s.serialize_struct("View", 2)?;
        st.serialize_field("quantum", &self.quantum)?;
        st.serialize_field("tenants", &Tenants(self))?;
        st.end()
    }
}

/// The pool's health, as `/v1/status` and `/healthz` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The backend the pool was started on.
    pub backend: String,
    /// Whether quanta still go to the device.
    pub on_device: bool,
    /// Quanta the device answered.
    pub device_quanta: u64,
    /// Why the pool left its device, if it did.
    pub fallback: Option<fairshare::offload::FallbackSummary>,
    /// The period of a quantum, in milliseconds.
    pub quantum_period_ms: f64,
    /// Whether the pool keeps a ledger (`--state`) and its last commit succeeded.
    pub durable: bool,
    /// Whether the pool keeps a ledger at all.
    pub ledger: bool,
    /// Why the last commit to the ledger failed, while it does (changes are refused).
    pub ledger_error: Option<String>,
    /// Why the last enforcement failed, while it does.
    pub enforcement_error: Option<String>,
    /// Why the wall clock stopped, if it did.
    pub clock_error: Option<String>,
    /// Tenants in the pool.
    pub tenants: usize,
    /// Of a replica (the controller): whether it leads, and where the leader answers.
    #[serde(skip_serializing_if = "Option::is_none", flatten)]
    pub replica: Option<ReplicaStatus>,
}

/// A replica's part of the status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaStatus {
    /// This replica leads (runs quanta).
    pub leader: bool,
    /// The leader's API address, when known.
    pub leader_api: Option<String>,
}

impl Status {
    /// What is wrong, if anything, in a few words (`/healthz` answers 503 with it; the
    /// details, which may name files, are `/v1/status`'s, behind the token).
    pub fn problem(&self) -> Option<&'static str> {
        if self.clock_error.is_some() {
            Some("the clock stopped (see /v1/status)")
        } else if self.ledger_error.is_some() {
            Some("the ledger cannot commit: changes are refused (see /v1/status)")
        } else if self.enforcement_error.is_some() {
            Some("enforcement failed (see /v1/status)")
        } else {
            None
        }
    }
}

/// The published values and the metrics, shared by the pool (the one writer) and the
/// readers.
pub struct Published {
    /// The last committed quantum's allocation.
    pub view: ArcSwap<View>,
    /// The pool's health.
    pub status: ArcSwap<Status>,
    /// Counters and histograms (atomic).
    pub metrics: Metrics,
}

impl Published {
    /// Values to start from.
    pub fn new(view: View, status: Status, metrics: Metrics) -> Published {
        Published { view: ArcSwap::from_pointee(view), status: ArcSwap::from_pointee(status), metrics }
    }

    /// The status with `change` made to it, swapped in.
    pub fn update_status(&self, change: impl Fn(&mut Status)) {
        self.status.rcu(|s| {
            let mut s = Status::clone(s);
            change(&mut s);
            s
        });
    }
}

/// Serializes a whole status (for `/v1/status`) with the counters that move between
/// quanta.
pub fn status_json(published: &Published) -> serde_json::Value {
    let status = published.status.load();
    let view = published.view.load();
    let mut v = serde_json::to_value(&**status).unwrap_or_default();
    if let Some(map) = v.as_object_mut() {
        map.insert("quantum".into(), view.quantum.into());
        map.insert("missed_ticks".into(), published.metrics.missed_ticks().into());
        map.insert("healthy".into(), status.problem().is_none().into());
    }
    v
}
