//! The multi-resource instance: servers with capacities, users with per-task demands,
//! weights, placement constraints, entitlements and task limits. Read from JSON,
//! validated once, then held as dense matrices every policy reads.
//!
//! # Ranges
//!
//! Every number of an instance has a documented range, and an instance outside it is
//! refused by [`Instance::new`] (so by [`Instance::from_json`] and [`Builder::build`])
//! with a [`MultiError::Invalid`] that names the user or server, the field and the value,
//! e.g. `user "ann": weight 1e307 is outside [1e-6, 1e6]`. Before, such numbers were
//! solved into silent nonsense with exit status 0: with a weight of 1e307, `drf` and
//! `psdsf` gave the other user 4e-307 tasks (0 as printed), `drfh` failed in the solver,
//! and a demand of 1e300 or a capacity of 1e-300 was accepted as well.
//!
//! | field | allowed values | ratios, per resource for capacities and demands |
//! |---|---|---|
//! | `capacity` | 0 or [[`AMOUNT_MIN`], [`AMOUNT_MAX`]] = [1e-6, 1e9] | largest / smallest positive capacity at most [`CAPACITY_SPREAD`] = 1e6 |
//! | `demand` | 0 or [1e-6, 1e9], not all 0 | largest / smallest positive demand at most [`DEMAND_SPREAD`] = 1e6; largest capacity / smallest demand at most [`TASKS_PER_SERVER`] = 1e9; largest demand / smallest capacity at most [`TASK_SIZE`] = 1e3 |
//! | `weight` | [[`WEIGHT_MIN`], [`WEIGHT_MAX`]] = [1e-6, 1e6] | largest / smallest at most [`WEIGHT_SPREAD`] = 1e4; the users' weighted sizes (weight times the tasks the user could run on all servers pooled) at most [`USER_SPREAD`] = 1e9 apart |
//! | `entitlement` | 0 or [1e-6, 1e6] | largest / smallest positive at most 1e4 |
//! | `max_tasks` | 0 or [[`TASKS_MIN`], [`TASKS_MAX`]] = [1e-6, 1e15] | none |
//!
//! Negative and non-finite numbers are refused too (JSON cannot write NaN or infinity,
//! and a literal beyond `f64` such as `1e400` is a parse error; [`Builder`] can pass
//! them). A capacity of 0 (a server without the resource), a demand of 0 (a user that
//! does not use it), an entitlement of 0 and a task limit of 0 keep their meaning; a
//! weight must be positive. Across resources nothing is compared, since their units
//! differ, so nothing is bounded. Why these bounds:
//!
//! - **Magnitudes.** Within them every product and quotient the policies form (tasks
//!   times demands times weights, shares, levels) stays far inside the range of `f64`
//!   (1e+-308): nothing overflows to infinity or underflows to 0. Task counts stay below
//!   2^53 (a server holds at most 1e9 tasks of a user, limits stop at 1e15), so whole
//!   task counts are exact. An amount outside [1e-6, 1e9] of its unit, or a weight
//!   outside [1e-6, 1e6] around the default 1, is a unit mistake or garbage.
//! - **1e9 = 1 / [`EPS`](crate::EPS) tasks per server at most.** "Saturated" compares a
//!   resource's usage with its capacity at the relative tolerance `EPS`; one task of a
//!   demand below `EPS` times the capacity is below what that comparison resolves. This
//!   is also the CLI's "tiny tasks" case (1 unit per task on 1e9), which must stay
//!   accepted.
//! - **The users' weighted sizes within 1e9 = 1 / `EPS`.** The LP-based policies (`tsf`,
//!   `cdrf`, and `drfh` outside the paper's model) raise every user's level in one linear
//!   program per step, in which a user's tasks are its level times about its weight
//!   times the tasks it could run alone. When those products are more than 1 / `EPS`
//!   apart, the smaller user's whole allocation is below the tolerance at which the
//!   program is solved, and it came back as exactly 0 (found by the property test of
//!   `multi/tests/ranges.rs`, at sizes 3e15 apart).
//! - **Spreads within one field (capacities and demands 1e6, weights 1e4), and a task at
//!   most 1e3 times a server.** These bound what the sizes alone do not, and were chosen
//!   by measurement on random instances at the other bounds: at a weight spread of 1e5 the
//!   LP-based policies returned 0 tasks for a user, at 1e6 the solver gave up on about 5%
//!   of the instances, and a user whose task needed 1e9 servers' worth got 0. The
//!   closed-form and water-filling policies (`drf`, `psdsf-*`, `ddrf`) are exact far
//!   beyond these bounds.
//!
//! What the ranges buy is tested (`multi/tests/ranges.rs`): within them every
//! policy that returns an allocation gives every user with a positive demand, weight and
//! task limit a positive one (whole-task placement aside, by design); the lexicographic
//! programs refuse, with an error, an allocation that leaves a user below half its own
//! level. What they do not buy: on random instances drawn at the bounds, the LP-based
//! policies stop with a solver error on about 1 in 3,000, and about 2% of their answers
//! are off by more than 1e-3 relative from the exact one (measured against DRF's closed
//! form on one pooled server, 94% agree to 1e-6); on the instances of `ranges.rs`
//! (several servers, placement constraints) solver errors are more frequent (12 of
//! 1,000 instances in one fixed-seed run); with data of a few units they agree to 1e-6.

use serde::Deserialize;

use super::MultiError;

/// One server of the JSON instance file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// Unique name.
    pub name: String,
    /// Capacity per resource, in the order of `resources`, raw units.
    pub capacity: Vec<f64>,
}

/// One user of the JSON instance file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserSpec {
    /// Unique name.
    pub name: String,
    /// Demand of one task per resource, in the order of `resources`, raw units.
    pub demand: Vec<f64>,
    /// Weight (priority); only ratios matter. Default 1.
    #[serde(default)]
    pub weight: Option<f64>,
    /// Servers the user's tasks may run on. Default: all.
    #[serde(default)]
    pub eligible: Option<Vec<String>>,
    /// Entitlement for bottleneck-based fairness. Default: the weight. Normalized to sum 1.
    #[serde(default)]
    pub entitlement: Option<f64>,
    /// The most tasks the user can run. Default: unbounded.
    #[serde(default)]
    pub max_tasks: Option<f64>,
}

/// The JSON instance file as written (`fairshare multi --instance FILE`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceSpec {
    /// Resource names (CPU, memory, bandwidth...).
    pub resources: Vec<String>,
    /// Servers.
    pub servers: Vec<ServerSpec>,
    /// Users; for dynamic DRF the array order is the arrival order.
    pub users: Vec<UserSpec>,
}

/// A validated instance: every number within its range (module doc), every name known.
///
/// Indices follow the PS-DSF spec: users `n`, servers `i`, resources `r`.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Resource names.
    pub resources: Vec<String>,
    /// Server names.
    pub servers: Vec<String>,
    /// User names.
    pub users: Vec<String>,
    /// `capacity[i][r]`, raw units.
    pub capacity: Vec<Vec<f64>>,
    /// `demand[n][r]` per task, raw units; every user demands some resource.
    pub demand: Vec<Vec<f64>>,
    /// `weight[n] > 0`.
    pub weight: Vec<f64>,
    /// `eligible[n][i]`: the explicit placement constraint (delta of the spec).
    pub eligible: Vec<Vec<bool>>,
    /// Entitlements, normalized to sum 1.
    pub entitlement: Vec<f64>,
    /// Task limit per user (`None`: unbounded).
    pub max_tasks: Vec<Option<f64>>,
}

/// Smallest positive capacity or demand (raw units).
pub const AMOUNT_MIN: f64 = 1e-6;
/// Largest capacity or demand (raw units).
pub const AMOUNT_MAX: f64 = 1e9;
/// Smallest weight or positive entitlement.
pub const WEIGHT_MIN: f64 = 1e-6;
/// Largest weight or entitlement.
pub const WEIGHT_MAX: f64 = 1e6;
/// Smallest positive task limit.
pub const TASKS_MIN: f64 = 1e-6;
/// Largest task limit: "practically unbounded", still an exact integer in `f64`.
pub const TASKS_MAX: f64 = 1e15;
/// Largest ratio of the largest to the smallest weight, and of the largest to the
/// smallest positive entitlement (module doc: measured on the LP-based policies).
pub const WEIGHT_SPREAD: f64 = 1e4;
/// Largest ratio between two users' weighted sizes, `weight / task_share`.
pub const USER_SPREAD: f64 = 1e9;
/// Largest ratio of the largest to the smallest positive capacity of one resource.
pub const CAPACITY_SPREAD: f64 = 1e6;
/// Largest ratio of the largest to the smallest positive demand of one resource.
pub const DEMAND_SPREAD: f64 = 1e6;
/// Largest ratio of a capacity to a positive demand of the same resource: the most tasks
/// a server holds, 1e9 = 1 / [`EPS`](crate::EPS) (module doc).
pub const TASKS_PER_SERVER: f64 = 1e9;
/// Largest ratio of a demand to a positive capacity of the same resource: one task needs
/// at most this many times what a server holds (module doc).
pub const TASK_SIZE: f64 = 1e3;

/// A number as an error message shows it: plain from 1e-4 to below 1e5, in exponent
/// notation outside (`1e307`, not 308 digits).
fn show(value: f64) -> String {
    let size = value.abs();
    if value == 0.0 || (1e-4..1e5).contains(&size) || !value.is_finite() {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// Where a number sits: `capacity[cpu]`, `weight`.
fn place(field: &str, index: Option<&str>) -> String {
    match index {
        Some(name) => format!("{field}[{name}]"),
        None => field.to_string(),
    }
}

fn check_number(owner: &str, field: &str, index: Option<&str>, value: f64) -> Result<(), MultiError> {
    let at = place(field, index);
    if !value.is_finite() {
        return Err(MultiError::Invalid(format!("{owner}: {at} = {value} is not a finite number")));
    }
    if value < 0.0 {
        return Err(MultiError::Invalid(format!("{owner}: {at} = {} is negative", show(value))));
    }
    Ok(())
}

/// A finite, non-negative number that is 0 (if `zero`) or within `[lo, hi]`.
fn check_range(
    owner: &str,
    field: &str,
    index: Option<&str>,
    value: f64,
    (lo, hi): (f64, f64),
    zero: bool,
) -> Result<(), MultiError> {
    check_number(owner, field, index, value)?;
    if (zero && value == 0.0) || (lo..=hi).contains(&value) {
        return Ok(());
    }
    let or_zero = if zero { " (or 0)" } else { "" };
    Err(MultiError::Invalid(format!(
        "{owner}: {} {} is outside [{lo:e}, {hi:e}]{or_zero}",
        place(field, index),
        show(value)
    )))
}

/// The smallest and the largest positive value, with their owners.
#[allow(clippy::type_complexity)]
fn extremes(values: impl Iterator<Item = (String, f64)>) -> Option<((String, f64), (String, f64))> {
    let mut out: Option<((String, f64), (String, f64))> = None;
    for (owner, v) in values.filter(|(_, v)| *v > 0.0) {
        match &mut out {
            None => out = Some(((owner.clone(), v), (owner, v))),
            Some((lo, hi)) => {
                if v < lo.1 {
                    *lo = (owner.clone(), v);
                }
                if v > hi.1 {
                    *hi = (owner, v);
                }
            }
        }
    }
    out
}

/// The spread of the positive values of one field: `values` are `(owner, value)`.
fn check_spread(what: &str, values: impl Iterator<Item = (String, f64)>, spread: f64) -> Result<(), MultiError> {
    if let Some(((lo_owner, lo), (hi_owner, hi))) = extremes(values) {
        if hi > lo * spread {
            return Err(MultiError::Invalid(format!(
                "{what} range from {} ({lo_owner}) to {} ({hi_owner}), a ratio of {} above {spread:e}: \
                 values this far apart are not resolved at the solvers' tolerance",
                show(lo),
                show(hi),
                // Three digits: 1e5, not 99999.99999999999.
                show(format!("{:.2e}", hi / lo).parse().unwrap_or(hi / lo))
            )));
        }
    }
    Ok(())
}

fn check_unique(kind: &str, names: &[String]) -> Result<(), MultiError> {
    for (k, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(MultiError::Invalid(format!("{kind} #{} has an empty name", k + 1)));
        }
        if names[..k].contains(name) {
            return Err(MultiError::Invalid(format!("{kind} {name:?} is named twice")));
        }
    }
    Ok(())
}

impl Instance {
    /// Parses and validates a JSON instance. Errors name the user, server or field.
    pub fn from_json(text: &str) -> Result<Self, MultiError> {
        let spec: InstanceSpec = serde_json::from_str(text).map_err(|e| {
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = e.to_string();
            let message = message.strip_suffix(&suffix).unwrap_or(&message).to_string();
            MultiError::Parse { line: e.line(), column: e.column(), message }
        })?;
        Self::new(spec)
    }

    /// Validates a parsed instance.
    pub fn new(spec: InstanceSpec) -> Result<Self, MultiError> {
        let m = spec.resources.len();
        if m == 0 {
            return Err(MultiError::Invalid("the instance has no resources".into()));
        }
        if spec.servers.is_empty() {
            return Err(MultiError::Invalid("the instance has no servers".into()));
        }
        if spec.users.is_empty() {
            return Err(MultiError::Invalid("the instance has no users".into()));
        }
        check_unique("resource", &spec.resources)?;
        let servers: Vec<String> = spec.servers.iter().map(|s| s.name.clone()).collect();
        let users: Vec<String> = spec.users.iter().map(|u| u.name.clone()).collect();
        check_unique("server", &servers)?;
        check_unique("user", &users)?;
        let mut capacity = Vec::with_capacity(servers.len());
        for s in &spec.servers {
            let owner = format!("server {:?}", s.name);
            if s.capacity.len() != m {
                return Err(MultiError::Invalid(format!(
                    "{owner}: capacity has {} entries, expected {m} (one per resource)",
                    s.capacity.len()
                )));
            }
            for (r, &c) in s.capacity.iter().enumerate() {
                check_range(&owner, "capacity", Some(&spec.resources[r]), c, (AMOUNT_MIN, AMOUNT_MAX), true)?;
            }
            capacity.push(s.capacity.clone());
        }
        let mut demand = Vec::new();
        let mut weight = Vec::new();
        let mut eligible = Vec::new();
        let mut entitlement = Vec::new();
        let mut max_tasks = Vec::new();
        for u in &spec.users {
            let owner = format!("user {:?}", u.name);
            if u.demand.len() != m {
                return Err(MultiError::Invalid(format!(
                    "{owner}: demand has {} entries, expected {m} (one per resource)",
                    u.demand.len()
                )));
            }
            for (r, &d) in u.demand.iter().enumerate() {
                check_range(&owner, "demand", Some(&spec.resources[r]), d, (AMOUNT_MIN, AMOUNT_MAX), true)?;
            }
            if u.demand.iter().all(|&d| d == 0.0) {
                return Err(MultiError::Invalid(format!("{owner}: demand is zero for every resource")));
            }
            let w = u.weight.unwrap_or(1.0);
            check_number(&owner, "weight", None, w)?;
            if w == 0.0 {
                return Err(MultiError::Invalid(format!("{owner}: weight must be positive, got 0")));
            }
            check_range(&owner, "weight", None, w, (WEIGHT_MIN, WEIGHT_MAX), false)?;
            let mut delta = vec![u.eligible.is_none(); servers.len()];
            for name in u.eligible.iter().flatten() {
                match servers.iter().position(|s| s == name) {
                    Some(i) => delta[i] = true,
                    None => {
                        return Err(MultiError::Invalid(format!("{owner}: eligible names unknown server {name:?}")))
                    }
                }
            }
            if let Some(e) = u.entitlement {
                check_range(&owner, "entitlement", None, e, (WEIGHT_MIN, WEIGHT_MAX), true)?;
            }
            if let Some(t) = u.max_tasks {
                check_range(&owner, "max_tasks", None, t, (TASKS_MIN, TASKS_MAX), true)?;
            }
            demand.push(u.demand.clone());
            weight.push(w);
            eligible.push(delta);
            entitlement.push(u.entitlement.unwrap_or(w));
            max_tasks.push(u.max_tasks);
        }
        let mut instance = Instance {
            resources: spec.resources,
            servers,
            users,
            capacity,
            demand,
            weight,
            eligible,
            entitlement,
            max_tasks,
        };
        let gamma = instance.gamma();
        for (n, row) in gamma.iter().enumerate() {
            if row.iter().all(|&g| g == 0.0) {
                return Err(MultiError::Invalid(format!(
                    "user {:?} is eligible nowhere: no server it may use has every resource it demands",
                    instance.users[n]
                )));
            }
        }
        instance.check_ratios()?;
        let total: f64 = instance.entitlement.iter().sum();
        if total <= 0.0 {
            return Err(MultiError::Invalid("entitlements sum to 0".into()));
        }
        instance.entitlement.iter_mut().for_each(|e| *e /= total);
        Ok(instance)
    }

    /// The ratios of the module doc: per resource, the positive capacities within
    /// [`CAPACITY_SPREAD`] of each other and the positive demands within
    /// [`DEMAND_SPREAD`], no capacity above [`TASKS_PER_SERVER`] times the smallest
    /// demand and no demand above [`TASK_SIZE`] times the smallest capacity; weights and
    /// entitlements (as given) within [`WEIGHT_SPREAD`], the users' weighted sizes within
    /// [`USER_SPREAD`].
    fn check_ratios(&self) -> Result<(), MultiError> {
        for (r, resource) in self.resources.iter().enumerate() {
            let capacities = || self.servers.iter().zip(&self.capacity).map(|(s, c)| (format!("server {s:?}"), c[r]));
            let demands = || self.users.iter().zip(&self.demand).map(|(u, d)| (format!("user {u:?}"), d[r]));
            check_spread(&format!("capacities of {resource:?}"), capacities(), CAPACITY_SPREAD)?;
            check_spread(&format!("demands of {resource:?}"), demands(), DEMAND_SPREAD)?;
            let (Some((c_lo, c_hi)), Some((d_lo, d_hi))) = (extremes(capacities()), extremes(demands())) else {
                continue;
            };
            if c_hi.1 > d_lo.1 * TASKS_PER_SERVER {
                return Err(MultiError::Invalid(format!(
                    "{}: capacity[{resource}] {} is more than {TASKS_PER_SERVER:e} times {}'s demand[{resource}] {}: \
                     over {TASKS_PER_SERVER:e} tasks on one server are not resolved",
                    c_hi.0,
                    show(c_hi.1),
                    d_lo.0,
                    show(d_lo.1)
                )));
            }
            if d_hi.1 > c_lo.1 * TASK_SIZE {
                return Err(MultiError::Invalid(format!(
                    "{}: demand[{resource}] {} is more than {TASK_SIZE:e} times {}'s capacity[{resource}] {}: \
                     a task that large next to a server that small is not resolved",
                    d_hi.0,
                    show(d_hi.1),
                    c_lo.0,
                    show(c_lo.1)
                )));
            }
        }
        let users = || self.users.iter().map(|u| format!("user {u:?}"));
        check_spread("weights", users().zip(self.weight.iter().copied()), WEIGHT_SPREAD)?;
        // Weight times the tasks the user could run with all servers pooled to itself.
        let sizes = (0..self.n_users()).map(|n| self.weight[n] / self.task_share(n));
        check_spread(
            "the users' weighted sizes (weight times tasks on the pooled servers alone)",
            users().zip(sizes),
            USER_SPREAD,
        )?;
        check_spread("entitlements", users().zip(self.entitlement.iter().copied()), WEIGHT_SPREAD)
    }

    /// Number of users.
    pub fn n_users(&self) -> usize {
        self.users.len()
    }

    /// Number of servers.
    pub fn n_servers(&self) -> usize {
        self.servers.len()
    }

    /// Number of resources.
    pub fn n_resources(&self) -> usize {
        self.resources.len()
    }

    /// `gamma[n][i]`: the tasks user `n` could run with server `i` to itself (PS-DSF eq. 7),
    /// 0 where the user is not eligible or the server lacks a resource it demands.
    pub fn gamma(&self) -> Vec<Vec<f64>> {
        (0..self.n_users()).map(|n| (0..self.n_servers()).map(|i| self.monopoly(n, i, true)).collect()).collect()
    }

    /// Tasks user `n` could run alone on server `i`, honouring the explicit placement
    /// constraint only if `placement` (TSF's gamma ignores it).
    pub fn monopoly(&self, n: usize, i: usize, placement: bool) -> f64 {
        if placement && !self.eligible[n][i] {
            return 0.0;
        }
        let mut best = f64::INFINITY;
        for r in 0..self.n_resources() {
            let d = self.demand[n][r];
            if d > 0.0 {
                best = best.min(self.capacity[i][r] / d);
            }
        }
        best
    }

    /// Capacity of each resource summed over all servers.
    pub fn pooled(&self) -> Vec<f64> {
        (0..self.n_resources()).map(|r| self.capacity.iter().map(|c| c[r]).sum()).collect()
    }

    /// Dominant share of one task of user `n` in the pooled system: `max_r d[n][r] / C[r]`
    /// (DRF eq. 3, DRFH's global dominant share per task). Infinite if the pool lacks a
    /// resource the user demands.
    pub fn task_share(&self, n: usize) -> f64 {
        let pooled = self.pooled();
        (0..self.n_resources())
            .filter(|&r| self.demand[n][r] > 0.0)
            .map(|r| self.demand[n][r] / pooled[r])
            .fold(0.0, f64::max)
    }

    /// Global dominant share of `tasks` tasks of user `n`: the fraction of the pooled
    /// capacity of its dominant resource they take.
    pub fn dominant_share(&self, n: usize, tasks: f64) -> f64 {
        tasks * self.task_share(n)
    }

    /// Amount of resource `r` that the placed tasks `x[n][i]` use on server `i`.
    pub fn usage(&self, x: &[Vec<f64>], i: usize, r: usize) -> f64 {
        (0..self.n_users()).map(|n| x[n][i] * self.demand[n][r]).sum()
    }

    /// True if no user has an explicit placement constraint.
    pub fn unconstrained(&self) -> bool {
        self.eligible.iter().all(|row| row.iter().all(|&e| e))
    }

    /// A copy with only the users in `keep` (in that order).
    pub fn subset(&self, keep: &[usize]) -> Instance {
        let mut out = self.clone();
        out.users = keep.iter().map(|&n| self.users[n].clone()).collect();
        out.demand = keep.iter().map(|&n| self.demand[n].clone()).collect();
        out.weight = keep.iter().map(|&n| self.weight[n]).collect();
        out.eligible = keep.iter().map(|&n| self.eligible[n].clone()).collect();
        out.max_tasks = keep.iter().map(|&n| self.max_tasks[n]).collect();
        let total: f64 = keep.iter().map(|&n| self.entitlement[n]).sum();
        out.entitlement = keep.iter().map(|&n| if total > 0.0 { self.entitlement[n] / total } else { 0.0 }).collect();
        out
    }
}

/// Builds instances in code (tests, examples, benchmarks) through the same validation
/// as the JSON reader. Names are `r1..`, `s1..`, `u1..`.
#[derive(Debug, Clone)]
pub struct Builder {
    spec: InstanceSpec,
}

impl Builder {
    /// Servers' capacities `capacity[i][r]` and users' per-task demands `demand[n][r]`.
    pub fn new(capacity: &[&[f64]], demand: &[&[f64]]) -> Self {
        let m = capacity.first().map_or(0, |c| c.len());
        Builder {
            spec: InstanceSpec {
                resources: (1..=m).map(|r| format!("r{r}")).collect(),
                servers: capacity
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ServerSpec { name: format!("s{}", i + 1), capacity: c.to_vec() })
                    .collect(),
                users: demand
                    .iter()
                    .enumerate()
                    .map(|(n, d)| UserSpec {
                        name: format!("u{}", n + 1),
                        demand: d.to_vec(),
                        weight: None,
                        eligible: None,
                        entitlement: None,
                        max_tasks: None,
                    })
                    .collect(),
            },
        }
    }

    /// Sets every user's weight.
    pub fn weights(mut self, w: &[f64]) -> Self {
        for (u, &w) in self.spec.users.iter_mut().zip(w) {
            u.weight = Some(w);
        }
        self
    }

    /// Sets every user's entitlement.
    pub fn entitlements(mut self, e: &[f64]) -> Self {
        for (u, &e) in self.spec.users.iter_mut().zip(e) {
            u.entitlement = Some(e);
        }
        self
    }

    /// Sets every user's task limit.
    pub fn max_tasks(mut self, t: &[f64]) -> Self {
        for (u, &t) in self.spec.users.iter_mut().zip(t) {
            u.max_tasks = Some(t);
        }
        self
    }

    /// Sets the placement constraint `delta[n][i]`.
    pub fn eligible(mut self, delta: &[&[bool]]) -> Self {
        let names: Vec<String> = self.spec.servers.iter().map(|s| s.name.clone()).collect();
        for (u, row) in self.spec.users.iter_mut().zip(delta) {
            u.eligible = Some(row.iter().zip(&names).filter(|(&ok, _)| ok).map(|(_, s)| s.clone()).collect());
        }
        self
    }

    /// Validates and returns the instance.
    pub fn build(self) -> Result<Instance, MultiError> {
        Instance::new(self.spec)
    }
}
