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

use super::market::{self, Stall};
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
/// undamped procedure cycles with period 2 forever (`multi/tests/vectors.rs`,
/// `undamped_server_procedure_can_cycle`), which a step of 1/2 resolves.
pub const SWEEPS_PER_STEP: usize = 5_000;

/// Sweeps between two tries of [`Servers::settle`] in [`Servers::converge`] (TDM): a
/// try, with its pivots, costs up to a few sweeps.
pub const SETTLE_EVERY: usize = 50;

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
///
/// A server update costs `O(u m + c log c)` for the `u` users eligible there, `c` of
/// which may start rising: each server keeps its column of the allocation (its eligible
/// users, their slopes and demands, contiguous), every user its total over all servers
/// (so the "tasks elsewhere" of a user is one subtraction, not a sum over servers), the
/// water-filling jumps from event to event (a user starting to rise, a resource
/// saturating) with running sums instead of recomputing every usage at every event, it
/// sorts only the users that start below about the server's last level, and its
/// buffers are kept from one update to the next.
/// Before (issue 17), an update looked up each user in the server's list and summed its
/// other servers, and the water-filling recomputed every usage at each of its up to `2u`
/// events: quadratic in the users per server update, 106 s for 2,000 users on 8 servers.
#[derive(Debug, Clone)]
pub struct Servers<'a> {
    inst: &'a Instance,
    columns: Vec<Column>,
    active: Vec<bool>,
    /// `total[n]`: user `n`'s tasks over all servers, kept up to date by every update
    /// and recomputed at the start of each sweep (so that rounding cannot build up).
    total: Vec<f64>,
    /// Step of each server update towards its water-filled column (1: the spec's procedure).
    step: f64,
    /// How the servers are shared (TDM: the sweeps are finished by [`Servers::settle`]).
    sharing: Sharing,
    /// The water-filling's work space, reused by every update.
    work: Work,
}

/// One server's part of the state: what its water-filling reads, and its column.
#[derive(Debug, Clone)]
struct Column {
    /// The users with `gamma[n][i] > 0`, in index order.
    users: Vec<usize>,
    /// `phi_n * gamma[n][i]` of each: tasks per unit of level.
    slope: Vec<f64>,
    /// The server's resources: its capacities (RDM), or one unit of time (TDM).
    caps: Vec<f64>,
    /// Per-task demands row by row, `caps.len()` per user: demands (RDM) or `1 / gamma`.
    dem: Vec<f64>,
    /// Per resource, the users (positions in `users`) that demand it.
    users_of: Vec<Vec<usize>>,
    /// `x[n][i]` of each user of `users`.
    x: Vec<f64>,
    /// The level at which the last update ended: users that start rising below about it
    /// are the next update's candidates, the only ones it sorts.
    level: f64,
    /// `gamma[n][i]` of each user of `users`.
    gamma: Vec<f64>,
}

impl<'a> Servers<'a> {
    /// Every user active, nothing allocated.
    pub fn new(inst: &'a Instance, sharing: Sharing) -> Self {
        let gamma = inst.gamma();
        let columns = (0..inst.n_servers())
            .map(|i| {
                let users: Vec<usize> = (0..inst.n_users()).filter(|&n| gamma[n][i] > 0.0).collect();
                let (caps, dem): (Vec<f64>, Vec<f64>) = match sharing {
                    Sharing::Rdm => {
                        (inst.capacity[i].clone(), users.iter().flat_map(|&n| inst.demand[n].iter().copied()).collect())
                    }
                    Sharing::Tdm => (vec![1.0], users.iter().map(|&n| 1.0 / gamma[n][i]).collect()),
                };
                let m = caps.len();
                let users_of = (0..m).map(|r| (0..users.len()).filter(|&u| dem[u * m + r] > 0.0).collect()).collect();
                Column {
                    users_of,
                    slope: users.iter().map(|&n| inst.weight[n] * gamma[n][i]).collect(),
                    x: vec![0.0; users.len()],
                    level: 0.0,
                    gamma: users.iter().map(|&n| gamma[n][i]).collect(),
                    users,
                    caps,
                    dem,
                }
            })
            .collect();
        Servers {
            inst,
            columns,
            active: vec![true; inst.n_users()],
            total: vec![0.0; inst.n_users()],
            step: 1.0,
            sharing,
            work: Work::default(),
        }
    }

    /// The current allocation.
    pub fn allocation(&self) -> Allocation {
        let mut x = vec![vec![0.0; self.inst.n_servers()]; self.inst.n_users()];
        for (i, column) in self.columns.iter().enumerate() {
            for (&n, &v) in column.users.iter().zip(&column.x) {
                x[n][i] = v;
            }
        }
        Allocation::placed(x)
    }

    /// Activates or deactivates a user; an inactive user holds nothing (A.5.6), and the
    /// next server updates redistribute.
    pub fn set_active(&mut self, n: usize, active: bool) {
        self.active[n] = active;
        if !active {
            for column in &mut self.columns {
                if let Ok(k) = column.users.binary_search(&n) {
                    column.x[k] = 0.0;
                }
            }
            self.total[n] = 0.0;
        }
    }

    /// The server procedure (A.5.4) at server `i`: water-fill its column so that every
    /// active eligible user has a bottleneck there, given the users' tasks elsewhere.
    /// Returns the largest change of an entry.
    pub fn update(&mut self, i: usize) -> f64 {
        let column = &mut self.columns[i];
        let work = &mut self.work;
        // Tasks elsewhere: the total without this server.
        work.base.clear();
        work.base.extend(column.users.iter().zip(&column.x).map(|(&n, &x)| (self.total[n] - x).max(0.0)));
        work.waiting.clear();
        work.waiting.extend(column.users.iter().map(|&n| self.active[n]));
        column.level = water_fill(&column.caps, &column.dem, &column.users_of, &column.slope, column.level, work);
        let mut change: f64 = 0.0;
        for (k, &n) in column.users.iter().enumerate() {
            let old = column.x[k];
            let new = old + self.step * (work.y[k] - old);
            change = change.max((new - old).abs());
            column.x[k] = new;
            self.total[n] += new - old;
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
        self.total.iter_mut().for_each(|t| *t = 0.0);
        for column in &self.columns {
            for (&n, &x) in column.users.iter().zip(&column.x) {
                self.total[n] += x;
            }
        }
        order.iter().map(|&i| self.update(i)).fold(0.0, f64::max)
    }

    /// TDM only: replaces the allocation by the exact equilibrium whose support is the
    /// current one's ([`market::equilibrium`]), if the current support is that of an
    /// equilibrium; returns whether it did. The result meets Theorem 2 (checked there);
    /// the totals are then the Eisenberg-Gale program's, which are unique, so they are
    /// the ones the sweeps converge to.
    pub fn settle(&mut self) -> bool {
        if self.sharing != Sharing::Tdm {
            return false;
        }
        let budget: Vec<f64> =
            (0..self.inst.n_users()).map(|n| if self.active[n] { self.inst.weight[n] } else { 0.0 }).collect();
        let stalls: Vec<Stall<'_>> =
            self.columns.iter().map(|c| Stall { users: &c.users, gamma: &c.gamma, x: &c.x }).collect();
        let Some(x) = market::equilibrium(&budget, &stalls) else {
            return false;
        };
        for (column, x) in self.columns.iter_mut().zip(x) {
            column.x = x;
        }
        self.total.iter_mut().for_each(|t| *t = 0.0);
        for column in &self.columns {
            for (&n, &x) in column.users.iter().zip(&column.x) {
                self.total[n] += x;
            }
        }
        true
    }

    /// Sweeps until a full sweep changes nothing (within [`SWEEP_TOL`]), each sweep in the
    /// server order `order(sweep)` (fixed, or a new permutation each time: the
    /// distributed form). If the sweeps do not settle within [`SWEEPS_PER_STEP`], the
    /// step is halved and the sweeps go on, down to 1/8 of the set step. With TDM,
    /// every [`SETTLE_EVERY`] sweeps the exact equilibrium of the current support is
    /// tried ([`Servers::settle`]) and ends the sweeps if it is one.
    pub fn converge(&mut self, mut order: impl FnMut(usize) -> Vec<usize>) -> Result<Convergence, MultiError> {
        let base = self.step;
        let mut sweeps = 0;
        for factor in STEP_SCHEDULE {
            self.step = base * factor;
            for _ in 0..SWEEPS_PER_STEP {
                let change = self.sweep(&order(sweeps));
                sweeps += 1;
                if sweeps % SETTLE_EVERY == 0 && self.settle() {
                    let step = self.step;
                    self.step = base;
                    return Ok(Convergence { sweeps, step });
                }
                let scale = self.columns.iter().flat_map(|c| c.x.iter()).cloned().fold(1.0, f64::max);
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

/// The work space of [`water_fill`]: its inputs `base` and `waiting` (filled by the
/// caller), its result `y`, and its buffers, kept from one server update to the next so
/// that an update allocates nothing.
#[derive(Debug, Clone, Default)]
struct Work {
    /// Tasks of each user elsewhere.
    base: Vec<f64>,
    /// Whether each user is active and not yet frozen (in: active).
    waiting: Vec<bool>,
    /// The water-filled column.
    y: Vec<f64>,
    /// Whether each user has started rising.
    rising: Vec<bool>,
    /// The level at which each user starts rising, `base / slope`.
    start: Vec<f64>,
    /// The users that may start rising, in the order they would.
    order: Vec<usize>,
    /// Per resource: usage of the frozen users, and over the rising users the sums of
    /// `slope * d` and `base * d`, and how many demand it.
    fixed: Vec<f64>,
    rate: Vec<f64>,
    offset: Vec<f64>,
    count: Vec<usize>,
    /// Per resource, the level at which it saturates if nothing else happens first.
    saturation: Vec<Option<f64>>,
}

/// Water-filling at one server (A.5.4). User `k` gets `y_k(L) = max(0, slope_k L - base_k)`
/// at the common level `L`; `L` rises until a resource saturates, which freezes every
/// still-rising user that demands it. `dem` holds the users' per-task demands row by row
/// (`caps.len()` per user), `users_of[r]` the users with a positive demand of `r`. The
/// bases are `work.base`; users with `work.waiting[u]` false take no part and get 0. The
/// result is `work.y`; returns the level at which the last user froze.
///
/// Event-driven: the users start rising in the order of `base / slope` (ties by index),
/// and the usage of each resource is kept as `fixed + L * rate - offset` over the users
/// that rise, so each event costs `O(m)` and each user is started and frozen once.
/// Only the users that start matter to the order, and they start below the final level,
/// which moves little from one update of a server to the next: so only the users that
/// start below `1 + `[`CANDIDATE_MARGIN`] times the last update's final level `last` are
/// sorted, and the others only if the level gets past them (they then join, sorted, after
/// the candidates: the order is the same as sorting them all). `O(u m + c log c)` for
/// `c` candidates, against `O(u log u + u m)` for sorting them all (on the 1,000-user
/// bench instance about a quarter of a server's users start).
fn water_fill(caps: &[f64], dem: &[f64], users_of: &[Vec<usize>], slope: &[f64], last: f64, work: &mut Work) -> f64 {
    let k = slope.len();
    let m = caps.len();
    let d = |u: usize, r: usize| dem[u * m + r];
    let Work { base, waiting, y, rising, start, order, fixed, rate, offset, count, saturation } = work;
    let base = &base[..k];
    let waiting = &mut waiting[..k];
    reset(y, k, 0.0);
    reset(rising, k, false);
    start.clear();
    start.extend((0..k).map(|u| base[u] / slope[u]));
    let by_start = |a: &usize, b: &usize| start[*a].total_cmp(&start[*b]).then(a.cmp(b));
    // The candidates, sorted; `later`: whether users above the bound are still to join.
    let bound = last * (1.0 + CANDIDATE_MARGIN);
    order.clear();
    order.extend((0..k).filter(|&u| waiting[u] && start[u] <= bound));
    let mut later = order.len() < waiting.iter().filter(|&&w| w).count();
    order.sort_unstable_by(by_start);
    reset(fixed, m, 0.0);
    reset(rate, m, 0.0);
    reset(offset, m, 0.0);
    reset(count, m, 0);
    reset(saturation, m, None);
    let mut left = waiting.iter().filter(|&&a| a).count();
    let mut next = 0;
    let mut level: f64 = 0.0;
    let started = |u: usize, level: f64| start[u] <= level * (1.0 + 1e-12);
    while left > 0 {
        let next_start = loop {
            if next == order.len() && later {
                // Past the candidates: the first waiting user above the bound.
                let first = (0..k).filter(|&u| waiting[u] && start[u] > bound).min_by(by_start);
                match first {
                    Some(u) if started(u, level) => {
                        // It starts: every user above the bound joins, sorted.
                        let from = order.len();
                        order.extend((0..k).filter(|&u| start[u] > bound));
                        order[from..].sort_unstable_by(by_start);
                        later = false;
                    }
                    Some(u) => break start[u],
                    None => later = false,
                }
            }
            if next == order.len() {
                break f64::INFINITY;
            }
            let u = order[next];
            if !waiting[u] {
                next += 1;
                continue;
            }
            if !started(u, level) {
                break start[u];
            }
            rising[u] = true;
            for r in 0..m {
                if d(u, r) > 0.0 {
                    rate[r] += slope[u] * d(u, r);
                    offset[r] += base[u] * d(u, r);
                    count[r] += 1;
                }
            }
            next += 1;
        };
        for r in 0..m {
            saturation[r] = (count[r] > 0 && rate[r] > 0.0).then(|| {
                let usage = fixed[r] + (level * rate[r] - offset[r]).max(0.0);
                level + ((caps[r] - usage) / rate[r]).max(0.0)
            });
        }
        let at = saturation.iter().flatten().cloned().fold(f64::INFINITY, f64::min);
        if at.is_infinite() && next_start.is_infinite() {
            break;
        }
        if at <= next_start {
            level = at;
            for r in 0..m {
                if !saturation[r].is_some_and(|l| l <= at * (1.0 + EPS)) {
                    continue;
                }
                for &u in &users_of[r] {
                    if !waiting[u] {
                        continue;
                    }
                    y[u] = (slope[u] * level - base[u]).max(0.0);
                    waiting[u] = false;
                    left -= 1;
                    if !rising[u] && y[u] == 0.0 {
                        // Nothing to account for (`fixed + 0` is `fixed`).
                        continue;
                    }
                    for s in 0..m {
                        if d(u, s) > 0.0 {
                            fixed[s] += y[u] * d(u, s);
                            if rising[u] {
                                rate[s] -= slope[u] * d(u, s);
                                offset[s] -= base[u] * d(u, s);
                                count[s] -= 1;
                                if count[s] == 0 {
                                    rate[s] = 0.0;
                                    offset[s] = 0.0;
                                }
                            }
                        }
                    }
                }
            }
        } else {
            level = next_start;
        }
    }
    level
}

/// How far above the last update's final level a server's next update takes users as
/// candidates to start rising ([`water_fill`]): a little room for the level to move.
const CANDIDATE_MARGIN: f64 = 0.05;

/// Sets `v` to `len` copies of `value`, keeping its allocation.
fn reset<T: Copy>(v: &mut Vec<T>, len: usize, value: T) {
    v.clear();
    v.resize(len, value);
}

/// PS-DSF by the server procedure, sweeping the servers in index order from nothing.
pub fn solve(inst: &Instance, sharing: Sharing) -> Result<Allocation, MultiError> {
    let order: Vec<usize> = (0..inst.n_servers()).collect();
    solve_in_order(inst, sharing, &order)
}

/// PS-DSF sweeping the servers in `order` (RDM results may depend on it: spec C8).
pub fn solve_in_order(inst: &Instance, sharing: Sharing, order: &[usize]) -> Result<Allocation, MultiError> {
    let mut servers = Servers::new(inst, sharing);
    servers.converge(sweep_order(sharing, order))?;
    Ok(servers.allocation())
}

/// The server order of each sweep for [`Servers::converge`]: `order` every sweep for
/// RDM, whose result depends on it; for TDM, `order` and its reverse in turn (symmetric
/// Gauss-Seidel). The TDM totals are unique, so the order only changes how fast the
/// sweeps get there: on the 1,000-user bench instance [`Servers::settle`] took after 750
/// alternating sweeps against 2,650 in one direction (1,100 in a random order per sweep).
pub fn sweep_order(sharing: Sharing, order: &[usize]) -> impl FnMut(usize) -> Vec<usize> + '_ {
    move |sweep| match sharing {
        Sharing::Tdm if sweep % 2 == 1 => order.iter().rev().copied().collect(),
        _ => order.to_vec(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The water-filling as it was before it sorted only the candidates (and before its
    /// buffers were kept): every user sorted by its starting level. The reference of the
    /// test below, which wants the same numbers to the bit.
    fn water_fill_sorting_all(
        caps: &[f64],
        dem: &[f64],
        users_of: &[Vec<usize>],
        slope: &[f64],
        base: &[f64],
        mut active: Vec<bool>,
    ) -> Vec<f64> {
        let k = slope.len();
        let m = caps.len();
        let d = |u: usize, r: usize| dem[u * m + r];
        let mut y = vec![0.0; k];
        let mut rising = vec![false; k];
        let start: Vec<f64> = (0..k).map(|u| base[u] / slope[u]).collect();
        let mut order: Vec<usize> = (0..k).collect();
        order.sort_by(|&a, &b| start[a].total_cmp(&start[b]).then(a.cmp(&b)));
        let mut fixed = vec![0.0; m];
        let mut rate = vec![0.0; m];
        let mut offset = vec![0.0; m];
        let mut count = vec![0usize; m];
        let mut left = active.iter().filter(|&&a| a).count();
        let mut next = 0;
        let mut level: f64 = 0.0;
        let started = |u: usize, level: f64| start[u] <= level * (1.0 + 1e-12);
        let mut saturation: Vec<Option<f64>> = vec![None; m];
        while left > 0 {
            while next < k && (!active[order[next]] || started(order[next], level)) {
                let u = order[next];
                if active[u] {
                    rising[u] = true;
                    for r in 0..m {
                        if d(u, r) > 0.0 {
                            rate[r] += slope[u] * d(u, r);
                            offset[r] += base[u] * d(u, r);
                            count[r] += 1;
                        }
                    }
                }
                next += 1;
            }
            let next_start = if next < k { start[order[next]] } else { f64::INFINITY };
            for r in 0..m {
                saturation[r] = (count[r] > 0 && rate[r] > 0.0).then(|| {
                    let usage = fixed[r] + (level * rate[r] - offset[r]).max(0.0);
                    level + ((caps[r] - usage) / rate[r]).max(0.0)
                });
            }
            let at = saturation.iter().flatten().cloned().fold(f64::INFINITY, f64::min);
            if at.is_infinite() && next_start.is_infinite() {
                break;
            }
            if at <= next_start {
                level = at;
                for r in (0..m).filter(|&r| saturation[r].is_some_and(|l| l <= at * (1.0 + EPS))) {
                    for &u in &users_of[r] {
                        if !active[u] {
                            continue;
                        }
                        y[u] = (slope[u] * level - base[u]).max(0.0);
                        active[u] = false;
                        left -= 1;
                        for s in 0..m {
                            if d(u, s) > 0.0 {
                                fixed[s] += y[u] * d(u, s);
                                if rising[u] {
                                    rate[s] -= slope[u] * d(u, s);
                                    offset[s] -= base[u] * d(u, s);
                                    count[s] -= 1;
                                    if count[s] == 0 {
                                        rate[s] = 0.0;
                                        offset[s] = 0.0;
                                    }
                                }
                            }
                        }
                    }
                }
            } else {
                level = next_start;
            }
        }
        y
    }

    /// One server's water-filling input: capacities, per-user demands (each user demands
    /// some resource the server has), slopes, bases (with ties and zeros), active flags.
    #[allow(clippy::type_complexity)]
    fn server() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<bool>)> {
        (1usize..=40, 1usize..=4).prop_flat_map(|(k, m)| {
            (
                prop::collection::vec(1u32..=50, m),
                prop::collection::vec(0u32..=4, k * m),
                prop::collection::vec(1u32..=6, k),
                prop::collection::vec(prop_oneof![Just(0u32), 0u32..=30], k),
                prop::collection::vec(prop::bool::weighted(0.9), k),
            )
                .prop_map(move |(caps, mut dem, slope, base, active)| {
                    for u in 0..k {
                        if dem[u * m..(u + 1) * m].iter().all(|&d| d == 0) {
                            dem[u * m] = 1;
                        }
                    }
                    let f = |v: Vec<u32>| v.into_iter().map(f64::from).collect::<Vec<f64>>();
                    (f(caps), f(dem), f(slope), base.into_iter().map(|b| f64::from(b) / 3.0).collect(), active)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

        #[test]
        fn candidate_sorting_gives_the_same_bits_as_sorting_every_user(
            (caps, dem, slope, base, active) in server(),
            last in prop_oneof![Just(0.0), Just(f64::INFINITY), 0.0..20.0f64],
        ) {
            let m = caps.len();
            let users_of: Vec<Vec<usize>> =
                (0..m).map(|r| (0..slope.len()).filter(|&u| dem[u * m + r] > 0.0).collect()).collect();
            let want = water_fill_sorting_all(&caps, &dem, &users_of, &slope, &base, active.clone());
            let mut work = Work { base: base.clone(), waiting: active, ..Work::default() };
            water_fill(&caps, &dem, &users_of, &slope, last, &mut work);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
            prop_assert_eq!(bits(&work.y), bits(&want), "last level {}", last);
        }
    }
}
