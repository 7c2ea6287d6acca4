//! The Prometheus metrics: counters and histograms kept in atomics (a quantum never
//! waits for a scrape, nor a scrape for a quantum), and their exposition in the plain
//! text format (0.0.4, for a plain `Accept`, what `promtool check metrics` reads) or in
//! OpenMetrics (1.0.0, when the scraper asks for it). Per-tenant series come from the
//! published [`View`]; names are in Prometheus's base units (`_seconds`, `_bytes_per_second`).
//!
//! Written here rather than with a client crate: the crates at hand encode one format
//! each (prometheus-client OpenMetrics only), and per-tenant series that follow an
//! immutable published view are a loop over it, not a registry of gauges to keep in
//! step. Label values are escaped as both formats say, though tenant names are already
//! kept to a charset that needs none ([`crate::config::check_name`]).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::publish::{Status, View};

/// Which exposition format a scraper gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4.
    Text,
    /// OpenMetrics text, version 1.0.0.
    OpenMetrics,
}

impl Format {
    /// OpenMetrics if the `Accept` header names it, else the text format.
    pub fn from_accept(accept: Option<&str>) -> Format {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Format::OpenMetrics,
            _ => Format::Text,
        }
    }

    /// The response's content type.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The phases of a quantum, timed apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Demands read from the enforcer's counters (measured demand).
    Measure,
    /// The allocator's quantum, verified.
    Allocate,
    /// The ledger's commit.
    Commit,
    /// The view swapped in for readers.
    Publish,
    /// The rates applied on the device.
    Enforce,
}

impl Phase {
    /// Every phase, in the order a quantum runs them.
    pub const ALL: [Phase; 5] = [Phase::Measure, Phase::Allocate, Phase::Commit, Phase::Publish, Phase::Enforce];

    fn label(self) -> &'static str {
        match self {
            Phase::Measure => "measure",
            Phase::Allocate => "allocate",
            Phase::Commit => "commit",
            Phase::Publish => "publish",
            Phase::Enforce => "enforce",
        }
    }
}

/// Upper bounds of the duration histograms' buckets, in seconds: 1 us to 4.2 s, x4.
const BOUNDS: [f64; 12] =
    [1e-6, 4e-6, 1.6e-5, 6.4e-5, 2.56e-4, 1.024e-3, 4.096e-3, 1.6384e-2, 6.5536e-2, 0.262144, 1.048576, 4.194304];

/// A histogram of durations, in atomics.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BOUNDS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Histogram {
    /// Counts one observation.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(b) = BOUNDS.iter().position(|&le| secs <= le) {
            self.buckets[b].fetch_add(1, Ordering::Relaxed);
        }
        self.sum_ns.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Writes the `_bucket`, `_sum` and `_count` samples (cumulative buckets).
    fn samples(&self, out: &mut String, name: &str, labels: &str) {
        let count = self.count.load(Ordering::Relaxed);
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (le, b) in BOUNDS.iter().zip(&self.buckets) {
            cumulative += b.load(Ordering::Relaxed);
            // A bucket read after the count may run ahead of it by a racing observation.
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {}", cumulative.min(count));
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count}");
        let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_sum{braces} {sum}");
        let _ = writeln!(out, "{name}_count{braces} {count}");
    }
}

/// The service's counters and histograms.
#[derive(Debug)]
pub struct Metrics {
    backend: String,
    quanta: AtomicU64,
    missed: AtomicU64,
    fallbacks: AtomicU64,
    commit_errors: AtomicU64,
    enforcement_errors: AtomicU64,
    leader_changes: AtomicU64,
    store_errors: AtomicU64,
    duration: Histogram,
    phases: [Histogram; 5],
    lateness: Histogram,
}

impl Metrics {
    /// The metrics of a pool started on `backend`.
    pub fn new(backend: &str) -> Self {
        Metrics {
            backend: backend.to_string(),
            quanta: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            fallbacks: AtomicU64::new(0),
            commit_errors: AtomicU64::new(0),
            enforcement_errors: AtomicU64::new(0),
            leader_changes: AtomicU64::new(0),
            store_errors: AtomicU64::new(0),
            duration: Histogram::default(),
            phases: Default::default(),
            lateness: Histogram::default(),
        }
    }

    /// A quantum was committed and published; it took `took` in all.
    pub fn quantum_done(&self, took: Duration) {
        self.quanta.fetch_add(1, Ordering::Relaxed);
        self.duration.observe(took);
    }

    /// A phase of a quantum took `took`.
    pub fn phase(&self, phase: Phase, took: Duration) {
        self.phases[phase as usize].observe(took);
    }

    /// A wall-clock quantum started `late` after its tick.
    pub fn late(&self, late: Duration) {
        self.lateness.observe(late);
    }

    /// The pool left its device.
    pub fn fallback(&self) {
        self.fallbacks.fetch_add(1, Ordering::Relaxed);
    }

    /// A commit to the ledger failed.
    pub fn commit_failed(&self) {
        self.commit_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Applying the rates failed.
    pub fn enforcement_failed(&self) {
        self.enforcement_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// This replica came to lead.
    pub fn leader_changed(&self) {
        self.leader_changes.fetch_add(1, Ordering::Relaxed);
    }

    /// A call to a replica's store (etcd) failed.
    pub fn store_failed(&self) {
        self.store_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Ticks passed with no quantum run for them.
    pub fn missed(&self, ticks: u64) {
        self.missed.fetch_add(ticks, Ordering::Relaxed);
    }

    /// Ticks missed so far.
    pub fn missed_ticks(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }

    /// Quanta committed so far by this process.
    pub fn quanta(&self) -> u64 {
        self.quanta.load(Ordering::Relaxed)
    }

    /// The exposition in `format` but for the per-tenant series, which come first
    /// ([`View::tenant_metrics`]).
    pub fn render(&self, view: &View, status: &Status, format: Format) -> String {
        let mut out = String::with_capacity(8192);
        let replica = status.replica.as_ref();
        let replica_counters = [
            ("fairshare_leader_changes", "Times this replica came to lead.", &self.leader_changes),
            ("fairshare_etcd_errors", "Calls to etcd that failed (unreachable, or an error).", &self.store_errors),
        ];
        let counters = [
            ("fairshare_quanta", "Quanta committed by this process.", &self.quanta),
            ("fairshare_missed_ticks", "Clock ticks that passed with no quantum run for them.", &self.missed),
            ("fairshare_backend_fallbacks", "Switches of the pool from its device to software.", &self.fallbacks),
            (
                "fairshare_ledger_commit_errors",
                "Commits to the ledger that failed (the change was refused).",
                &self.commit_errors,
            ),
            (
                "fairshare_enforcement_errors",
                "Applications of the rates to the device that failed.",
                &self.enforcement_errors,
            ),
        ];
        let replica_counters = if replica.is_some() { &replica_counters[..] } else { &[] };
        for &(name, help, value) in counters.iter().chain(replica_counters) {
            // OpenMetrics names the family without `_total`; the text format names it whole.
            let family = if format == Format::OpenMetrics { name.to_string() } else { format!("{name}_total") };
            let _ = writeln!(out, "# HELP {family} {help}\n# TYPE {family} counter");
            let _ = writeln!(out, "{name}_total {}", value.load(Ordering::Relaxed));
        }
        let gauges = [
            ("fairshare_quantum", "The last committed quantum's number.", view.quantum),
            ("fairshare_tenants", "Tenants in the pool.", view.names.len() as u64),
            (
                "fairshare_durable",
                "1 while the ledger commits (or there is none), 0 while its commits fail.",
                u64::from(status.ledger_error.is_none()),
            ),
            ("fairshare_on_device", "1 while quanta run on the device, 0 on software.", u64::from(status.on_device)),
        ];
        let leader = replica.map(|r| ("fairshare_leader", "1 while this replica leads, 0 else.", u64::from(r.leader)));
        for (name, help, value) in gauges.into_iter().chain(leader) {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}");
        }
        let histogram = |out: &mut String, name: &str, help: &str| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        };
        histogram(
            &mut out,
            "fairshare_quantum_duration_seconds",
            "Time of a whole quantum: measure, allocate, commit, publish and enforce.",
        );
        self.duration.samples(&mut out, "fairshare_quantum_duration_seconds", "");
        histogram(&mut out, "fairshare_quantum_phase_duration_seconds", "Time of each phase of a quantum.");
        for phase in Phase::ALL {
            let labels = format!("phase=\"{}\"", phase.label());
            self.phases[phase as usize].samples(&mut out, "fairshare_quantum_phase_duration_seconds", &labels);
        }
        if replica.is_some() {
            histogram(&mut out, "fairshare_commit_duration_seconds", "Time of a quantum's commit to etcd.");
            self.phases[Phase::Commit as usize].samples(&mut out, "fairshare_commit_duration_seconds", "");
        }
        histogram(&mut out, "fairshare_tick_lateness_seconds", "How late after its tick a wall-clock quantum started.");
        self.lateness.samples(&mut out, "fairshare_tick_lateness_seconds", "");
        let backend = escape(&self.backend);
        match format {
            Format::Text => {
                let _ = writeln!(
                    out,
                    "# HELP fairshare_backend_info The backend the pool was started on.\n\
                     # TYPE fairshare_backend_info gauge\nfairshare_backend_info{{backend=\"{backend}\"}} 1"
                );
            }
            Format::OpenMetrics => {
                let _ = writeln!(
                    out,
                    "# HELP fairshare_backend The backend the pool was started on.\n\
                     # TYPE fairshare_backend info\nfairshare_backend_info{{backend=\"{backend}\"}} 1\n# EOF"
                );
            }
        }
        out
    }
}

/// A label value escaped as both formats say (`\`, `"` and newline).
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The per-tenant series of `view` (the same in both formats).
pub fn render_tenants(view: &View) -> String {
    let mut out = String::with_capacity(view.names.len() * 300 + 1024);
    let labels: Vec<String> = view.names.iter().map(|n| escape(n)).collect();
    let family = |out: &mut String, name: &str, help: &str, value: &dyn Fn(usize) -> String| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (u, label) in labels.iter().enumerate() {
            let _ = writeln!(out, "{name}{{tenant=\"{label}\"}} {}", value(u));
        }
    };
    family(&mut out, "fairshare_tenant_demand_slices", "Demand of the tenant in the last quantum, in slices.", &|u| {
        view.demand[u].to_string()
    });
    family(
        &mut out,
        "fairshare_tenant_allocation_slices",
        "Slices allocated to the tenant in the last quantum.",
        &|u| view.alloc[u].to_string(),
    );
    // Bytes, not bits: Prometheus's base unit of information (promtool refuses bits).
    family(
        &mut out,
        "fairshare_tenant_rate_bytes_per_second",
        "Rate allocated to the tenant, in bytes per second.",
        &|u| (view.rate_bps(u) as f64 / 8.0).to_string(),
    );
    if let Some(credits) = &view.credits {
        family(&mut out, "fairshare_tenant_credits", "Karma credits of the tenant after the last quantum.", &|u| {
            credits[u].to_f64().to_string()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Arc;

    #[test]
    fn histograms_are_cumulative_and_count_everything() {
        let h = Histogram::default();
        for us in [0, 3, 3, 50, 5_000_000_000] {
            h.observe(Duration::from_micros(us));
        }
        let mut out = String::new();
        h.samples(&mut out, "x", "");
        assert!(out.contains("x_bucket{le=\"0.000001\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"0.000004\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"0.000064\"} 4\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"4.194304\"} 4\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"+Inf\"} 5\n") && out.contains("x_count 5\n"), "{out}");
        assert!(out.contains("x_sum 5000.000056\n"), "{out}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let view = View::new(3, Arc::new(vec!["x\"} 1\nfake 9".into()]), vec![1], vec![2], None, 1);
        let text = render_tenants(&view);
        assert!(text.contains("{tenant=\"x\\\"} 1\\nfake 9\"} 1\n"), "{text}");
        assert!(!text.lines().any(|l| l.starts_with("fake")), "{text}");
    }

    #[test]
    fn the_formats_differ_where_they_must() {
        let m = Metrics::new("software");
        let view = View::new(0, Arc::new(vec!["A".into()]), vec![0], vec![0], None, 1);
        let status = Status {
            backend: "software".into(),
            on_device: false,
            device_quanta: 0,
            fallback: None,
            quantum_period_ms: 1.0,
            durable: false,
            ledger: false,
            ledger_error: None,
            enforcement_error: None,
            clock_error: None,
            tenants: 1,
            replica: None,
        };
        let text = String::from_utf8(view.tenant_metrics().to_vec()).unwrap() + &m.render(&view, &status, Format::Text);
        assert!(text.contains("# TYPE fairshare_quanta_total counter\nfairshare_quanta_total 0\n"), "{text}");
        assert!(!text.contains("# EOF"));
        let om = m.render(&view, &status, Format::OpenMetrics);
        assert!(om.contains("# TYPE fairshare_quanta counter\nfairshare_quanta_total 0\n"), "{om}");
        assert!(om.contains("# TYPE fairshare_backend info\n") && om.ends_with("# EOF\n"), "{om}");
        assert_eq!(Format::from_accept(Some("application/openmetrics-text; version=1.0.0")), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("text/plain")), Format::Text);
        assert_eq!(Format::from_accept(None), Format::Text);
    }
}
