//! The multi-resource instance: servers with capacities, users with per-task demands,
//! weights, placement constraints, entitlements and task limits. Read from JSON,
//! validated once, then held as dense matrices every policy reads.

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

/// A validated instance: every number finite and non-negative, every name known.
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

fn check_number(owner: &str, field: &str, index: Option<&str>, value: f64) -> Result<(), MultiError> {
    let at = match index {
        Some(name) => format!("{field}[{name}]"),
        None => field.to_string(),
    };
    if !value.is_finite() {
        return Err(MultiError::Invalid(format!("{owner}: {at} = {value} is not a finite number")));
    }
    if value < 0.0 {
        return Err(MultiError::Invalid(format!("{owner}: {at} = {value} is negative")));
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
                check_number(&owner, "capacity", Some(&spec.resources[r]), c)?;
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
                check_number(&owner, "demand", Some(&spec.resources[r]), d)?;
            }
            if u.demand.iter().all(|&d| d == 0.0) {
                return Err(MultiError::Invalid(format!("{owner}: demand is zero for every resource")));
            }
            let w = u.weight.unwrap_or(1.0);
            check_number(&owner, "weight", None, w)?;
            if w == 0.0 {
                return Err(MultiError::Invalid(format!("{owner}: weight must be positive, got 0")));
            }
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
                check_number(&owner, "entitlement", None, e)?;
            }
            if let Some(t) = u.max_tasks {
                check_number(&owner, "max_tasks", None, t)?;
            }
            demand.push(u.demand.clone());
            weight.push(w);
            eligible.push(delta);
            entitlement.push(u.entitlement.unwrap_or(w));
            max_tasks.push(u.max_tasks);
        }
        let total: f64 = entitlement.iter().sum();
        if total <= 0.0 {
            return Err(MultiError::Invalid("entitlements sum to 0".into()));
        }
        let entitlement = entitlement.iter().map(|e| e / total).collect();
        let instance = Instance {
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
        Ok(instance)
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
