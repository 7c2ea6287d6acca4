//! The multi-resource policies by name, as `fairshare multi --policy` offers them: one
//! table from name to computation, and the report every policy returns.

use std::fmt;
use std::str::FromStr;

use super::drfh::{drfh, in_paper_model, place_tasks, Fit};
use super::lexmaxmin::{baseline, Baseline};
use super::psdsf::{self, Sharing};
use super::{bbf, ddrf, drf, Allocation, Instance, MultiError};

/// A multi-resource policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MultiPolicy {
    /// DRF on the pooled capacity.
    Drf,
    /// DRFH (LP 7; C-DRFH outside the paper's model).
    Drfh,
    /// DRFH's task-level First-Fit heuristic (whole tasks).
    DrfhFirstFit,
    /// DRFH's task-level Best-Fit heuristic (whole tasks).
    DrfhBestFit,
    /// PS-DSF, resource division.
    PsdsfRdm,
    /// PS-DSF, time division.
    PsdsfTdm,
    /// TSF, the PS-DSF paper's baseline.
    Tsf,
    /// CDRF, containerized DRF.
    Cdrf,
    /// Dynamic DRF: users arrive in file order, allocations are irrevocable.
    Ddrf,
    /// Bottleneck-based fairness with finite requests and entitlements.
    Bbf,
}

impl MultiPolicy {
    /// Every policy, in the order of the CLI's help.
    pub const ALL: [MultiPolicy; 10] = [
        MultiPolicy::Drf,
        MultiPolicy::Drfh,
        MultiPolicy::DrfhFirstFit,
        MultiPolicy::DrfhBestFit,
        MultiPolicy::PsdsfRdm,
        MultiPolicy::PsdsfTdm,
        MultiPolicy::Tsf,
        MultiPolicy::Cdrf,
        MultiPolicy::Ddrf,
        MultiPolicy::Bbf,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            MultiPolicy::Drf => "drf",
            MultiPolicy::Drfh => "drfh",
            MultiPolicy::DrfhFirstFit => "drfh-firstfit",
            MultiPolicy::DrfhBestFit => "drfh-bestfit",
            MultiPolicy::PsdsfRdm => "psdsf-rdm",
            MultiPolicy::PsdsfTdm => "psdsf-tdm",
            MultiPolicy::Tsf => "tsf",
            MultiPolicy::Cdrf => "cdrf",
            MultiPolicy::Ddrf => "ddrf",
            MultiPolicy::Bbf => "bbf",
        }
    }

    /// Whether the policy allocates whole tasks (its task counts are integers).
    pub fn whole_tasks(self) -> bool {
        matches!(self, MultiPolicy::DrfhFirstFit | MultiPolicy::DrfhBestFit)
    }
}

impl fmt::Display for MultiPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MultiPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MultiPolicy::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<&str> = MultiPolicy::ALL.iter().map(|p| p.name()).collect();
            format!("unknown policy {s:?}; expected one of {}", names.join(", "))
        })
    }
}

/// What a policy computed.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The policy.
    pub policy: MultiPolicy,
    /// How it was computed (which form, how many sweeps).
    pub method: String,
    /// The allocation.
    pub allocation: Allocation,
    /// For dynamic policies: the allocation after each arrival, in arrival order, if
    /// [`Options::steps`] asked for it (else empty).
    pub steps: Vec<Allocation>,
    /// Fields of the instance the policy's model does not use.
    pub ignored: Vec<String>,
}

/// What [`run_with`] computes besides the allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Dynamic policies (`ddrf`): also the allocation after each arrival, in
    /// [`Report::steps`]. Memory quadratic in the users (10,000 users: 50 million task
    /// counts), so off unless asked for; without it memory is linear.
    pub steps: bool,
}

/// Runs `policy` on `inst`, with the per-arrival steps of dynamic policies
/// ([`run_with`] with `steps` on).
pub fn run(policy: MultiPolicy, inst: &Instance) -> Result<Report, MultiError> {
    run_with(policy, inst, Options { steps: true })
}

/// Runs `policy` on `inst`; [`Options`] say whether to keep the per-arrival steps.
pub fn run_with(policy: MultiPolicy, inst: &Instance, options: Options) -> Result<Report, MultiError> {
    let mut ignored = Vec::new();
    let pooled = |ignored: &mut Vec<String>| {
        if !inst.unconstrained() {
            ignored.push("eligible (servers are pooled)".to_string());
        }
    };
    let mut steps = Vec::new();
    let (method, allocation) = match policy {
        MultiPolicy::Drf => {
            pooled(&mut ignored);
            ("progressive filling on the pooled capacity".to_string(), drf::drf(inst))
        }
        MultiPolicy::Drfh => {
            let method = if in_paper_model(inst) {
                "LP (7), the paper's model: positive demands, no placement constraints"
            } else {
                "C-DRFH, lexicographic max-min of global dominant shares: zero demands or placement constraints"
            };
            (method.to_string(), drfh(inst)?)
        }
        MultiPolicy::DrfhFirstFit => ("First-Fit, whole tasks".to_string(), place_tasks(inst, Fit::First)?),
        MultiPolicy::DrfhBestFit => ("Best-Fit, whole tasks".to_string(), place_tasks(inst, Fit::Best)?),
        MultiPolicy::PsdsfRdm | MultiPolicy::PsdsfTdm => {
            if inst.max_tasks.iter().any(Option::is_some) {
                ignored.push("max_tasks (PS-DSF's users are always backlogged)".to_string());
            }
            let sharing = if policy == MultiPolicy::PsdsfRdm { Sharing::Rdm } else { Sharing::Tdm };
            let order: Vec<usize> = (0..inst.n_servers()).collect();
            let (allocation, method) = psdsf::solve_described(inst, sharing, &order)?;
            (method, allocation)
        }
        MultiPolicy::Tsf => ("lexicographic max-min (TSF)".to_string(), baseline(inst, Baseline::Tsf)?),
        MultiPolicy::Cdrf => ("lexicographic max-min (CDRF)".to_string(), baseline(inst, Baseline::Cdrf)?),
        MultiPolicy::Ddrf => {
            pooled(&mut ignored);
            if inst.weight.iter().any(|&w| w != 1.0) {
                ignored.push("weight (arriving users are symmetric)".to_string());
            }
            if inst.max_tasks.iter().any(Option::is_some) {
                ignored.push("max_tasks (demand is unbounded)".to_string());
            }
            let last = if options.steps {
                steps = ddrf::ddrf(inst)?;
                steps.last().cloned().unwrap_or_else(|| Allocation::pooled(Vec::new()))
            } else {
                ddrf::ddrf_final(inst)?
            };
            ("water-filling at each arrival, capacity k/n after k arrivals".to_string(), last)
        }
        MultiPolicy::Bbf => {
            pooled(&mut ignored);
            if inst.weight.iter().any(|&w| w != 1.0) {
                ignored.push("weight (entitlements divide the resources)".to_string());
            }
            bbf::bbf(inst)?
        }
    };
    if policy != MultiPolicy::Bbf
        && inst.entitlement.iter().zip(&inst.weight).any(|(e, w)| {
            let total: f64 = inst.weight.iter().sum();
            (e - w / total).abs() > 1e-12
        })
    {
        ignored.push("entitlement (used by bbf only)".to_string());
    }
    Ok(Report { policy, method, allocation, steps, ignored })
}
