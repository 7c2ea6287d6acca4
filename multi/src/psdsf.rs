//! PS-DSF, Per-Server Dominant-Share Fairness (Khamse-Ashari et al.; spec Part A), on
//! heterogeneous servers with placement constraints and weights.
//!
//! A user's level at server `i` is `L[n][i] = x_n / (phi_n * gamma[n][i])`, its total
//! tasks over its weighted monopoly count there. The allocation is PS-DSF when every
//! user has a bottleneck resource at every eligible server (Theorem 1, RDM) or every
//! server is time-shared among its lowest-level users (Theorem 2, TDM).
//!
//! The computation is the spec's recommended server procedure (A.5.4): each server, in
//! turn, recomputes its own column by exact water-filling while the other servers'
//! columns stay fixed, until a sweep changes nothing. [`Servers`] is that procedure
//! as the distributed form (Sec. III-D): servers update one at a time, users come and go.
//! The TDM allocation is cross-checked by the Eisenberg-Gale program ([`tdm_convex`]).

use super::solver::{capacity_rows, Program};
use super::{close, Allocation, Instance, MultiError, EPS};

/// How a server's resources are shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Resource division: every resource split arbitrarily (eq. 9).
    Rdm,
    /// Time division: the server only time-shared (eq. 10).
    Tdm,
}

/// Convergence of the sweeps: a full sweep moves no `x[n][i]` by more than this
/// (relative to the largest allocation).
pub const SWEEP_TOL: f64 = 1e-12;

/// Sweeps at each step size before [`Servers::converge`] halves the step. The spec saw
/// at most 1,278 undamped sweeps at 1e-12; our property tests found instances where the
/// undamped procedure cycles with period 2 forever (`multi_vectors.rs`,
/// `undamped_server_procedure_can_cycle`), which a step of 1/2 resolves.
pub const SWEEPS_PER_STEP: usize = 5_000;

/// Step sizes [`Servers::converge`] tries in turn, as fractions of the current step.
const STEP_SCHEDULE: [f64; 4] = [1.0, 0.5, 0.25, 0.125];

/// How the sweeps converged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Convergence {
    /// Sweeps in all, over every step size tried.
    pub sweeps: usize,
    /// The step size that converged (1: the spec's undamped procedure).
    pub step: f64,
}

/// The distributed PS-DSF state: the allocation `x[n][i]`, which users are active, and
/// the server procedure each server runs on its own column.
#[derive(Debug, Clone)]
pub struct Servers<'a> {
    inst: &'a Instance,
    sharing: Sharing,
    gamma: Vec<Vec<f64>>,
    active: Vec<bool>,
    /// `x[n][i]`: tasks of user `n` on server `i`.
    x: Vec<Vec<f64>>,
    /// Step of each server update towards its water-filled column (1: the spec's procedure).
    step: f64,
}

impl<'a> Servers<'a> {
    /// Every user active, nothing allocated.
    pub fn new(inst: &'a Instance, sharing: Sharing) -> Self {
        Servers {
            inst,
            sharing,
            gamma: inst.gamma(),
            active: vec![true; inst.n_users()],
            x: vec![vec![0.0; inst.n_servers()]; inst.n_users()],
            step: 1.0,
        }
    }

    /// The current allocation.
    pub fn allocation(&self) -> Allocation {
        Allocation::placed(self.x.clone())
    }

    /// Activates or deactivates a user; an inactive user holds nothing (A.5.6), and the
    /// next server updates redistribute.
    pub fn set_active(&mut self, n: usize, active: bool) {
        self.active[n] = active;
        if !active {
            self.x[n].iter_mut().for_each(|v| *v = 0.0);
        }
    }

    /// The server procedure (A.5.4) at server `i`: water-fill its column so that every
    /// active eligible user has a bottleneck there, given the users' tasks elsewhere.
    /// Returns the largest change of an entry.
    pub fn update(&mut self, i: usize) -> f64 {
        let users: Vec<usize> =
            (0..self.inst.n_users()).filter(|&n| self.active[n] && self.gamma[n][i] > 0.0).collect();
        // Resource model of this server: (capacities, per-task demand of each user).
        let (caps, dem): (Vec<f64>, Vec<Vec<f64>>) = match self.sharing {
            Sharing::Rdm => {
                (self.inst.capacity[i].clone(), users.iter().map(|&n| self.inst.demand[n].clone()).collect())
            }
            Sharing::Tdm => (vec![1.0], users.iter().map(|&n| vec![1.0 / self.gamma[n][i]]).collect()),
        };
        let slope: Vec<f64> = users.iter().map(|&n| self.inst.weight[n] * self.gamma[n][i]).collect();
        let base: Vec<f64> =
            users.iter().map(|&n| (0..self.inst.n_servers()).filter(|&j| j != i).map(|j| self.x[n][j]).sum()).collect();
        let y = water_fill(&caps, &dem, &slope, &base);
        let mut change: f64 = 0.0;
        for n in 0..self.inst.n_users() {
            let target = users.iter().position(|&u| u == n).map_or(0.0, |k| y[k]);
            let new = self.x[n][i] + self.step * (target - self.x[n][i]);
            change = change.max((new - self.x[n][i]).abs());
            self.x[n][i] = new;
        }
        change
    }

    /// Moves each server's column only `step` of the way to its water-filled column
    /// (`0 < step <= 1`). A convex combination of two feasible columns is feasible.
    pub fn set_step(&mut self, step: f64) {
        self.step = step;
    }

    /// One sweep over the servers in `order`; returns the largest change.
    pub fn sweep(&mut self, order: &[usize]) -> f64 {
        order.iter().map(|&i| self.update(i)).fold(0.0, f64::max)
    }

    /// Sweeps until a full sweep changes nothing (within [`SWEEP_TOL`]), each sweep in the
    /// server order `order(sweep)` (fixed, or a new permutation each time: the
    /// distributed form). If the sweeps do not settle within [`SWEEPS_PER_STEP`], the
    /// step is halved and the sweeps go on, down to 1/8 of the set step.
    pub fn converge(&mut self, mut order: impl FnMut(usize) -> Vec<usize>) -> Result<Convergence, MultiError> {
        let base = self.step;
        let mut sweeps = 0;
        for factor in STEP_SCHEDULE {
            self.step = base * factor;
            for _ in 0..SWEEPS_PER_STEP {
                let change = self.sweep(&order(sweeps));
                sweeps += 1;
                let scale = self.x.iter().flatten().cloned().fold(1.0, f64::max);
                if change <= SWEEP_TOL * scale {
                    let step = self.step;
                    self.step = base;
                    return Ok(Convergence { sweeps, step });
                }
            }
        }
        self.step = base;
        Err(MultiError::NoConvergence(format!(
            "PS-DSF did not converge in {sweeps} sweeps of the servers, down to a step of {}",
            base * STEP_SCHEDULE[STEP_SCHEDULE.len() - 1]
        )))
    }
}

/// Water-filling at one server (A.5.4). User `k` gets `y_k(L) = max(0, slope_k L - base_k)`
/// at the common level `L`; `L` rises until a resource saturates, which freezes every
/// still-rising user that demands it. Returns `y`.
fn water_fill(caps: &[f64], dem: &[Vec<f64>], slope: &[f64], base: &[f64]) -> Vec<f64> {
    let k = dem.len();
    let m = caps.len();
    let mut y = vec![0.0; k];
    let mut active = vec![true; k];
    let start: Vec<f64> = (0..k).map(|u| base[u] / slope[u]).collect();
    let mut level: f64 = 0.0;
    let started = |u: usize, level: f64| start[u] <= level * (1.0 + 1e-12);
    while active.iter().any(|&a| a) {
        let mut usage = vec![0.0; m];
        let mut rate = vec![0.0; m];
        for u in 0..k {
            let amount = if active[u] { (slope[u] * level - base[u]).max(0.0) } else { y[u] };
            for r in 0..m {
                usage[r] += amount * dem[u][r];
                if active[u] && started(u, level) {
                    rate[r] += slope[u] * dem[u][r];
                }
            }
        }
        let next_start =
            (0..k).filter(|&u| active[u] && !started(u, level)).map(|u| start[u]).fold(f64::INFINITY, f64::min);
        let saturation: Vec<Option<f64>> =
            (0..m).map(|r| (rate[r] > 0.0).then(|| level + ((caps[r] - usage[r]) / rate[r]).max(0.0))).collect();
        let at = saturation.iter().flatten().cloned().fold(f64::INFINITY, f64::min);
        if at.is_infinite() && next_start.is_infinite() {
            break;
        }
        if at <= next_start {
            level = at;
            let full: Vec<usize> = (0..m).filter(|&r| saturation[r].is_some_and(|l| l <= at * (1.0 + EPS))).collect();
            for u in 0..k {
                if active[u] && full.iter().any(|&r| dem[u][r] > 0.0) {
                    y[u] = (slope[u] * level - base[u]).max(0.0);
                    active[u] = false;
                }
            }
        } else {
            level = next_start;
        }
    }
    y
}

/// PS-DSF by the server procedure, sweeping the servers in index order from nothing.
pub fn solve(inst: &Instance, sharing: Sharing) -> Result<Allocation, MultiError> {
    let order: Vec<usize> = (0..inst.n_servers()).collect();
    solve_in_order(inst, sharing, &order)
}

/// PS-DSF sweeping the servers in `order` (RDM results may depend on it: spec C8).
pub fn solve_in_order(inst: &Instance, sharing: Sharing, order: &[usize]) -> Result<Allocation, MultiError> {
    let mut servers = Servers::new(inst, sharing);
    servers.converge(|_| order.to_vec())?;
    Ok(servers.allocation())
}

/// The TDM allocation as the weighted Eisenberg-Gale program (A.3.4): maximize
/// `sum_n phi_n ln(sum_i gamma[n][i] t[n][i])` with each server's time shares summing to
/// at most 1. Its per-user totals are unique; used to check [`solve`] with [`Sharing::Tdm`].
pub fn tdm_convex(inst: &Instance) -> Result<Allocation, MultiError> {
    let gamma = inst.gamma();
    let (n_users, n_servers) = (inst.n_users(), inst.n_servers());
    let var = |n: usize, i: usize| n * n_servers + i;
    let mut p = Program::new(n_users * n_servers);
    for n in 0..n_users {
        let terms = (0..n_servers).filter(|&i| gamma[n][i] > 0.0).map(|i| (var(n, i), gamma[n][i])).collect();
        p.maximize_log(inst.weight[n], terms);
        for i in (0..n_servers).filter(|&i| gamma[n][i] == 0.0) {
            p.eq(vec![(var(n, i), 1.0)], 0.0);
        }
    }
    for i in 0..n_servers {
        p.le((0..n_users).map(|n| (var(n, i), 1.0)).collect(), 1.0);
    }
    let t = p.solve()?;
    Ok(Allocation::placed((0..n_users).map(|n| (0..n_servers).map(|i| t[var(n, i)] * gamma[n][i]).collect()).collect()))
}

/// Levels `L[n][i] = x_n / (phi_n gamma[n][i])` (infinite where `gamma = 0`).
pub fn levels(inst: &Instance, x: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let gamma = inst.gamma();
    (0..inst.n_users())
        .map(|n| {
            let total: f64 = x[n].iter().sum();
            gamma[n].iter().map(|&g| if g > 0.0 { total / (inst.weight[n] * g) } else { f64::INFINITY }).collect()
        })
        .collect()
}

/// RDM feasibility (eq. 9) within `tol`, and nothing where `gamma = 0`.
pub fn feasible_rdm(inst: &Instance, x: &[Vec<f64>], tol: f64) -> bool {
    let gamma = inst.gamma();
    let placed_ok = (0..inst.n_users()).all(|n| (0..inst.n_servers()).all(|i| gamma[n][i] > 0.0 || x[n][i] <= tol));
    placed_ok
        && (0..inst.n_servers()).all(|i| {
            (0..inst.n_resources()).all(|r| {
                let used = inst.usage(x, i, r);
                used <= inst.capacity[i][r] + tol * 1f64.max(inst.capacity[i][r])
            })
        })
}

/// Theorem 1: RDM-feasible, and every user has a bottleneck at every eligible server
/// (a saturated resource it demands on which no user holding it has a higher level).
pub fn is_psdsf_rdm(inst: &Instance, x: &[Vec<f64>], tol: f64) -> bool {
    if !feasible_rdm(inst, x, tol) {
        return false;
    }
    let gamma = inst.gamma();
    let level = levels(inst, x);
    (0..inst.n_users()).all(|n| {
        (0..inst.n_servers()).filter(|&i| gamma[n][i] > 0.0).all(|i| {
            (0..inst.n_resources()).any(|r| {
                let used = inst.usage(x, i, r);
                inst.demand[n][r] > 0.0
                    && used >= inst.capacity[i][r] - tol * 1f64.max(inst.capacity[i][r])
                    && (0..inst.n_users())
                        .all(|m| x[m][i] * inst.demand[m][r] <= tol || level[n][i] >= level[m][i] * (1.0 - tol) - tol)
            })
        })
    })
}

/// Theorem 2: every server with an eligible user fully time-shared, only among users at
/// the server's lowest level.
pub fn is_psdsf_tdm(inst: &Instance, x: &[Vec<f64>], tol: f64) -> bool {
    let gamma = inst.gamma();
    let level = levels(inst, x);
    (0..inst.n_servers()).all(|i| {
        let users: Vec<usize> = (0..inst.n_users()).filter(|&n| gamma[n][i] > 0.0).collect();
        let time: f64 = users.iter().map(|&n| x[n][i] / gamma[n][i]).sum();
        let placed_ok = (0..inst.n_users()).all(|n| gamma[n][i] > 0.0 || x[n][i] <= tol);
        placed_ok
            && (users.is_empty() || close(time, 1.0, tol))
            && users
                .iter()
                .all(|&n| users.iter().all(|&m| x[m][i] <= tol || level[n][i] >= level[m][i] * (1.0 - tol) - tol))
    })
}

/// Sharing incentive: each user runs at least the tasks of its weighted fraction of every
/// server, `x_n >= phi_n / sum phi * sum_i gamma[n][i]`.
pub fn sharing_incentive(inst: &Instance, totals: &[f64], tol: f64) -> bool {
    let gamma = inst.gamma();
    let sum_w: f64 = inst.weight.iter().sum();
    (0..inst.n_users()).all(|n| {
        let bench = inst.weight[n] / sum_w * gamma[n].iter().sum::<f64>();
        totals[n] >= bench * (1.0 - tol) - tol
    })
}

/// Envy-freeness restricted to the envier's eligible servers (spec A.6 PRED_EF).
pub fn envy_free(inst: &Instance, x: &[Vec<f64>], tol: f64) -> bool {
    let gamma = inst.gamma();
    let n_users = inst.n_users();
    (0..n_users).all(|n| {
        let own: f64 = x[n].iter().sum();
        (0..n_users).filter(|&m| m != n).all(|m| {
            let theirs: f64 = (0..inst.n_servers()).filter(|&i| gamma[n][i] > 0.0).map(|i| x[m][i]).sum();
            let worth = (0..inst.n_resources())
                .filter(|&r| inst.demand[n][r] > 0.0)
                .map(|r| inst.demand[m][r] / inst.demand[n][r])
                .fold(f64::INFINITY, f64::min);
            inst.weight[n] / inst.weight[m] * theirs * worth <= own * (1.0 + tol) + tol
        })
    })
}

/// Pareto gain: the most total tasks any feasible allocation (RDM or TDM) can add while
/// giving every user at least its current total. 0 (within solver precision) means
/// Pareto optimal.
pub fn pareto_gain(inst: &Instance, totals: &[f64], sharing: Sharing) -> Result<f64, MultiError> {
    let gamma = inst.gamma();
    let (n_users, n_servers) = (inst.n_users(), inst.n_servers());
    let var = |n: usize, i: usize| n * n_servers + i;
    let mut p = Program::new(n_users * n_servers);
    for n in 0..n_users {
        for i in 0..n_servers {
            if gamma[n][i] > 0.0 {
                p.maximize(var(n, i), 1.0);
            } else {
                p.eq(vec![(var(n, i), 1.0)], 0.0);
            }
        }
        p.ge((0..n_servers).map(|i| (var(n, i), 1.0)).collect(), totals[n] * (1.0 - 1e-9));
    }
    match sharing {
        Sharing::Rdm => capacity_rows(&mut p, &inst.capacity, &inst.demand, |n, i| Some(var(n, i))),
        Sharing::Tdm => {
            for i in 0..n_servers {
                let terms: Vec<_> =
                    (0..n_users).filter(|&n| gamma[n][i] > 0.0).map(|n| (var(n, i), 1.0 / gamma[n][i])).collect();
                if !terms.is_empty() {
                    p.le(terms, 1.0);
                }
            }
        }
    }
    let y = p.solve()?;
    Ok(y.iter().sum::<f64>() - totals.iter().sum::<f64>())
}
