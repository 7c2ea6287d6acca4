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
//! TDM is computed first as the market's equilibrium without sweeps ([`market::solve`],
//! [`solve_described`]), the sweeps being the fallback. The TDM allocation is
//! cross-checked by the Eisenberg-Gale program ([`tdm_convex`]).

use super::market::{self, Offer, Stall};
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

/// Changes that [`Servers::converge`]'s extrapolation (RDM) weighs at a time: the slow
/// modes it can remove at once. On the seven 1,000-user bench families (the worst
/// family's seconds, one run each): 4, 4.2 s; 8, 3.3 s; 12, 5.0 s.
const RRE_WINDOW: usize = 8;

/// Equal changes in a row that make a drift (see `Tail::drift`).
const DRIFT_SWEEPS: usize = 3;

/// How closely a drift's changes agree, relative to their length (squared). At 1e-6 the
/// 3,000-user `limited-everyone` family drifted for thousands of sweeps with changes equal
/// to 4 digits (cosine 1 to 6) and jumped once: no convergence within 60 s; at 1e-4 it
/// jumped 56 times and converged in 3,028 sweeps (36 s); the 1,000-user families stayed
/// within 0.8-3.4 s.
const DRIFT_TOL: f64 = 1e-4;

/// How much smaller than the sweep before it the sweep after an extrapolation must change
/// for [`Servers::converge`] to keep the jump: not larger. Jumps that helped cut the
/// change by 10 to 1,000 times. On the seven 1,000-user bench families (the worst
/// family's seconds, one run each, `unconstrained` the worst): 0.8, 5.3 s; 0.9, 4.7 s;
/// 0.95, 3.2 s; 1.0, 3.3 s.
const JUMP_GAIN: f64 = 1.0;

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
    /// Whether [`Servers::converge`] jumps ahead of its sweeps (RDM; on by default; see [`Tail`]).
    extrapolate: bool,
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
            extrapolate: true,
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

    /// Whether [`Servers::converge`] may jump ahead of its sweeps ([`Tail`]: RDM,
    /// on by default; off: the spec's plain sweeps, for comparison).
    pub fn set_extrapolation(&mut self, on: bool) {
        self.extrapolate = on;
    }

    /// Every column's entries, server by server.
    fn entries(&self) -> impl Iterator<Item = f64> + '_ {
        self.columns.iter().flat_map(|c| c.x.iter().copied())
    }

    /// [`Servers::entries`] in one vector.
    fn flat(&self) -> Vec<f64> {
        self.entries().collect()
    }

    /// Replaces every column's entries by `x` (as [`Servers::flat`] lays them out),
    /// clamped at 0, and the users' totals with them.
    fn set_flat(&mut self, x: &[f64]) {
        let mut at = 0;
        for column in &mut self.columns {
            for v in &mut column.x {
                *v = x[at].max(0.0);
                at += 1;
            }
        }
        self.recount_totals();
    }

    /// Every user's total summed afresh from the columns (so that rounding in the
    /// running totals cannot build up).
    fn recount_totals(&mut self) {
        self.total.iter_mut().for_each(|t| *t = 0.0);
        for column in &self.columns {
            for (&n, &x) in column.users.iter().zip(&column.x) {
                self.total[n] += x;
            }
        }
    }

    /// Moves each server's column only `step` of the way to its water-filled column
    /// (`0 < step <= 1`). A convex combination of two feasible columns is feasible.
    pub fn set_step(&mut self, step: f64) {
        self.step = step;
    }

    /// One sweep over the servers in `order`; returns the largest change.
    pub fn sweep(&mut self, order: &[usize]) -> f64 {
        self.recount_totals();
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
        let stalls: Vec<Stall<'_>> =
            self.columns.iter().map(|c| Stall { users: &c.users, gamma: &c.gamma, x: &c.x }).collect();
        let x = market::equilibrium(&self.budgets(), &stalls);
        self.take(x)
    }

    /// TDM only: replaces the allocation by the market's equilibrium computed without
    /// sweeps ([`market::solve`]: proportional response, the Eisenberg-Gale program on
    /// the placements it singles out, the exact finish), if that reaches one; returns
    /// whether it did. The result meets Theorem 2 (checked there) and has the unique
    /// totals the sweeps converge to.
    pub fn solve_market(&mut self) -> bool {
        if self.sharing != Sharing::Tdm {
            return false;
        }
        let offers: Vec<Offer<'_>> = self.columns.iter().map(|c| Offer { users: &c.users, gamma: &c.gamma }).collect();
        let x = market::solve(&self.budgets(), &offers);
        self.take(x)
    }

    /// Replaces every column by the market's, if it gave one (columns in the servers'
    /// user order, as [`market`] returns them); returns whether it did.
    fn take(&mut self, x: Option<Vec<Vec<f64>>>) -> bool {
        let Some(x) = x else {
            return false;
        };
        for (column, x) in self.columns.iter_mut().zip(x) {
            column.x = x;
        }
        self.recount_totals();
        true
    }

    /// Each user's budget in the TDM market: its weight if active, else 0.
    fn budgets(&self) -> Vec<f64> {
        (0..self.inst.n_users()).map(|n| if self.active[n] { self.inst.weight[n] } else { 0.0 }).collect()
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
        // The state and the sweep's change before the last jump, until a sweep judges it.
        let mut undo: Option<(Vec<f64>, f64)> = None;
        for factor in STEP_SCHEDULE {
            self.step = base * factor;
            let mut tail = Tail::default();
            // The last step size runs the spec's plain sweeps: should the jumps ever keep
            // the sweeps from settling, they end as they would have without them.
            let jumps =
                self.extrapolate && self.sharing == Sharing::Rdm && factor != STEP_SCHEDULE[STEP_SCHEDULE.len() - 1];
            for _ in 0..SWEEPS_PER_STEP {
                let change = self.sweep(&order(sweeps));
                sweeps += 1;
                if let Some((state, before)) = undo.take() {
                    if change > JUMP_GAIN * before {
                        self.set_flat(&state);
                        continue;
                    }
                }
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
                if jumps {
                    match tail.observe(self.entries()) {
                        Some(Jump::Extrapolated(x)) => {
                            undo = Some((self.flat(), change));
                            self.set_flat(&x);
                        }
                        Some(Jump::Drifted(x)) => self.set_flat(&x),
                        None => {}
                    }
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

/// Where [`Tail`] proposes the sweeps go on from.
#[derive(Debug)]
enum Jump {
    /// RRE's estimate of the fixed point: kept only if the next sweep changes at most
    /// [`JUMP_GAIN`] of the sweep before the jump.
    Extrapolated(Vec<f64>),
    /// Where a drift makes its first entry reach 0: where the sweeps would go if nothing
    /// else changed the piece first (a resource saturating, a user starting to rise), so
    /// it may overshoot; kept, as the sweeps correct it (the last step size makes no
    /// jumps, should they not).
    Drifted(Vec<f64>),
}

/// The last sweeps' states, and the jump to where they are heading: reduced rank
/// extrapolation (RRE). Once the support stops changing, RDM's sweeps apply the same
/// piecewise-linear map on the same piece, an affine map `x -> A x + b`, and the states
/// approach its fixed point by a few slow modes of `A`.
///
/// Measured on the 1,000-user bench families whose users may run on servers spread over
/// the whole cluster: each sweep shrank the change by 0.9966 (subsets) to 0.9982 (no
/// constraints), with several modes between 0.998 and 0.9999, so that 5,000 to 9,000
/// sweeps were needed to reach [`SWEEP_TOL`] (over 20,000, failing, once the step was
/// halved at 5,000). A jump along the slowest mode alone (Aitken) did not help: the next
/// modes were as slow.
///
/// RRE takes the last [`RRE_WINDOW`] changes `u_j = x_{j+1} - x_j`, the weights `g_j`
/// summing to 1 that make `sum g_j u_j` smallest, and proposes `sum g_j x_{j+1}`: for an
/// affine map whose slow modes number at most the window, the fixed point of the map; but
/// where that point lies off the current piece (an entry below 0), the jump stops at the
/// piece's edge, where the first positive entry reaches 0. It does so
/// only while each change is shorter than the one before (a contraction: sweeps that
/// cycle or cross pieces are left to run; jumps from them kept the 1,000-user
/// `unlimited` family cycling until it failed). Where the changes stand still instead
/// (a mode of 1: entries drifting at a constant pace until one reaches 0, for hundreds
/// of sweeps on the `subsets` and `limited-everyone` families), it jumps to the end of
/// the drift ([`Tail::drift`]). A jump is a new starting point only:
/// [`Servers::converge`] keeps an extrapolation if the next sweep changes at most
/// [`JUMP_GAIN`] of the sweep before it, goes back otherwise, and ends, as without it, when a
/// whole sweep changes nothing (so the allocation is a fixed point of the server
/// procedure, and feasible: every column is then its own water-filling, exactly at a
/// step of 1, to the tolerance at smaller steps). The last step size makes no jumps
/// (a safety net: the plain sweeps then end as they would have). RDM PS-DSF is
/// not unique (spec TV-PS-5): the fixed point reached may differ from the plain sweeps'
/// in the last digits or, where a continuum of them exists, by more; each is PS-DSF
/// (Theorem 1).
#[derive(Debug, Default)]
struct Tail {
    /// The states since the last jump, oldest first, at most `RRE_WINDOW + 1`.
    states: Vec<Vec<f64>>,
    /// `changes[j] = states[j + 1] - states[j]`, each computed once.
    changes: Vec<Vec<f64>>,
    /// Buffers of earlier windows, reused: a state is the whole allocation (150,000
    /// entries at 3,000 users), and allocating two a sweep cost a tenth of the time in
    /// page faults.
    spare: Vec<Vec<f64>>,
}

impl Tail {
    /// Takes the state after a sweep; once it holds [`RRE_WINDOW`] changes, returns the
    /// extrapolated state (if the weights can be solved for) and starts over.
    fn observe(&mut self, x: impl IntoIterator<Item = f64>) -> Option<Jump> {
        let mut state = self.spare.pop().unwrap_or_default();
        state.clear();
        state.extend(x);
        if let Some(last) = self.states.last() {
            let mut change = self.spare.pop().unwrap_or_default();
            change.clear();
            change.extend(state.iter().zip(last).map(|(a, b)| a - b));
            self.changes.push(change);
        }
        self.states.push(state);
        if let Some(drifted) = self.drift() {
            self.restart();
            return Some(Jump::Drifted(drifted));
        }
        if self.changes.len() < RRE_WINDOW {
            return None;
        }
        let jump = self.extrapolate();
        self.restart();
        jump.map(Jump::Extrapolated)
    }

    /// Empties the window, keeping its buffers.
    fn restart(&mut self) {
        self.spare.append(&mut self.states);
        self.spare.append(&mut self.changes);
    }

    /// RRE's estimate from the full window, stopped where the first entry reaches 0.
    fn extrapolate(&self) -> Option<Vec<f64>> {
        let (states, u) = (&self.states, &self.changes);
        let k = RRE_WINDOW;
        // Only a contraction is extrapolated: each change shorter than the one before
        // (sweeps that cycle, or change pieces, are left to run).
        if (1..k).any(|j| dot(&u[j], &u[j]) >= dot(&u[j - 1], &u[j - 1])) {
            return None;
        }
        // The weights: `g_last = 1 - sum g_j`, the others the least-squares solution of
        // `sum_j g_j (u_j - u_last) = -u_last`, by QR (modified Gram-Schmidt; the normal
        // equations square a condition number that slow modes already make large).
        let last = &u[k - 1];
        let columns: Vec<Vec<f64>> =
            u[..k - 1].iter().map(|uj| uj.iter().zip(last).map(|(p, q)| p - q).collect()).collect();
        let rhs: Vec<f64> = last.iter().map(|v| -v).collect();
        let weights = least_squares(columns, rhs)?;
        let mut g = weights.clone();
        g.push(1.0 - weights.iter().sum::<f64>());
        if g.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut next = vec![0.0; states[0].len()];
        for (j, &gj) in g.iter().enumerate() {
            for (v, s) in next.iter_mut().zip(&states[j + 1]) {
                *v += gj * s;
            }
        }
        // The estimate is the fixed point of the map on the current piece, which lies
        // past the piece's edge if an entry would have to go below 0 to reach it: the
        // sweeps change pieces where the first positive entry reaches 0, so the jump
        // stops there. (Cut at 0 entry by entry instead, the jumps were undone about
        // four times in five on the 3,000-user families, which took 12-32 s; stopped at
        // the edge, 7-18 s.)
        let x = &states[k];
        let zero = zero_below(x);
        let t =
            x.iter().zip(&next).filter(|&(&a, &b)| a > zero && b < 0.0).map(|(&a, &b)| a / (a - b)).fold(1.0, f64::min);
        if t < 1.0 {
            for (v, &a) in next.iter_mut().zip(x) {
                *v = a + t * (*v - a);
            }
        }
        Some(next)
    }

    /// If the last [`DRIFT_SWEEPS`] changes are one and the same (each within
    /// [`DRIFT_TOL`] of the one before, in direction and length), the state where that
    /// drift makes the first entry reach 0: the sweeps would walk there at that pace (an
    /// affine map with a mode of 1 has no fixed point on its piece, and RRE none to find).
    fn drift(&self) -> Option<Vec<f64>> {
        let n = self.changes.len();
        if n < DRIFT_SWEEPS {
            return None;
        }
        let last = &self.changes[n - 1];
        let ll = dot(last, last);
        if ll <= 0.0 {
            return None;
        }
        for d in &self.changes[n - DRIFT_SWEEPS..n - 1] {
            let (dd, dl) = (dot(d, d), dot(d, last));
            if (dd - ll).abs() > DRIFT_TOL * ll || dl < (1.0 - DRIFT_TOL) * (dd * ll).sqrt() {
                return None;
            }
        }
        let x = self.states.last()?;
        let zero = zero_below(x);
        let reach = x
            .iter()
            .zip(last)
            .filter(|&(&xj, &d)| d < 0.0 && xj > zero)
            .map(|(&xj, &d)| -xj / d)
            .fold(f64::INFINITY, f64::min);
        (reach.is_finite() && reach > 1.0).then(|| x.iter().zip(last).map(|(xj, d)| xj + reach * d).collect())
    }
}

/// The entries of `x` at most this are a 0 with rounding on it (a water-filling leaves
/// about 1e-17 where a user gets nothing): [`SWEEP_TOL`] of the largest entry. Taken for
/// entries reaching 0, they stopped every jump after a few sweeps' worth. A true entry
/// that small (tasks spanning 12 decades) is then jumped over and clamped at 0: the next
/// sweep judges the jump, so that costs time only.
fn zero_below(x: &[f64]) -> f64 {
    SWEEP_TOL * x.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
}

/// `a . b`.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(p, q)| p * q).sum()
}

/// The least-squares solution of `sum_j c_j columns[j] = rhs`, by modified Gram-Schmidt.
/// A column that is, to rounding, a combination of the ones before it gets weight 0.
/// `None` if no column is left.
fn least_squares(mut columns: Vec<Vec<f64>>, mut rhs: Vec<f64>) -> Option<Vec<f64>> {
    let k = columns.len();
    let largest = columns.iter().map(|c| dot(c, c).sqrt()).fold(0.0, f64::max);
    // r[i][j] for i <= j, and which columns stayed independent.
    let mut r = vec![vec![0.0; k]; k];
    let mut kept = vec![false; k];
    // `Q^T rhs`, entry by entry as the columns are made orthonormal.
    let mut projected = vec![0.0; k];
    for j in 0..k {
        for i in (0..j).filter(|&i| kept[i]) {
            let rij = dot(&columns[i], &columns[j]);
            r[i][j] = rij;
            let (head, tail) = columns.split_at_mut(j);
            for (v, q) in tail[0].iter_mut().zip(&head[i]) {
                *v -= rij * q;
            }
        }
        let norm = dot(&columns[j], &columns[j]).sqrt();
        if norm > 1e-12 * largest && norm.is_finite() {
            kept[j] = true;
            r[j][j] = norm;
            columns[j].iter_mut().for_each(|v| *v /= norm);
            projected[j] = dot(&columns[j], &rhs);
            for (v, q) in rhs.iter_mut().zip(&columns[j]) {
                *v -= projected[j] * q;
            }
        }
    }
    if !kept.iter().any(|&k| k) {
        return None;
    }
    let mut c = vec![0.0; k];
    for j in (0..k).rev().filter(|&j| kept[j]) {
        let rest: f64 = (j + 1..k).filter(|&i| kept[i]).map(|i| r[j][i] * c[i]).sum();
        c[j] = (projected[j] - rest) / r[j][j];
    }
    Some(c)
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

/// PS-DSF from nothing: RDM by the server procedure sweeping the servers in index order;
/// TDM as [`solve_described`] says.
pub fn solve(inst: &Instance, sharing: Sharing) -> Result<Allocation, MultiError> {
    let order: Vec<usize> = (0..inst.n_servers()).collect();
    solve_in_order(inst, sharing, &order)
}

/// PS-DSF sweeping the servers in `order` (RDM results may depend on it: spec C8; TDM
/// sweeps only if the market's equilibrium is not reached without them).
pub fn solve_in_order(inst: &Instance, sharing: Sharing, order: &[usize]) -> Result<Allocation, MultiError> {
    Ok(solve_described(inst, sharing, order)?.0)
}

/// As [`solve_in_order`], with how the allocation was reached. TDM first tries the
/// market's equilibrium without sweeps ([`Servers::solve_market`]): the totals are
/// unique, so they are the sweeps' (the split over the servers, where several give the
/// same totals, may differ: spec note 23), and it is faster (on the 3,000-user `limited-everyone` bench instance
/// the sweeps cycled for 20,000 sweeps, over 60 s, and the market took about 2 s); the
/// sweeps, with their exact finish, are the fallback.
pub fn solve_described(inst: &Instance, sharing: Sharing, order: &[usize]) -> Result<(Allocation, String), MultiError> {
    let mut servers = Servers::new(inst, sharing);
    if servers.solve_market() {
        let method = "market equilibrium: proportional response, Eisenberg-Gale on the placements it singles out, \
                      exact finish"
            .to_string();
        return Ok((servers.allocation(), method));
    }
    let done = servers.converge(sweep_order(sharing, order))?;
    Ok((servers.allocation(), format!("server procedure, {} sweeps (step {})", done.sweeps, done.step)))
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
    use crate::Builder;
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

    /// A deterministic stream of numbers in [0, 1) (xorshift), for instances made here.
    fn uniform(state: &mut u64) -> f64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The states `x_k` of `x -> A x + b` from 0, with `A = Q diag(modes) Q^T` for an
    /// orthogonal `Q` (Householder, from `seed`) and `b` chosen so that `fixed` is the
    /// fixed point.
    fn affine_states(fixed: &[f64], modes: &[f64], count: usize, seed: u64) -> Vec<Vec<f64>> {
        let n = fixed.len();
        let mut state = seed | 1;
        let v: Vec<f64> = (0..n).map(|_| uniform(&mut state) - 0.5).collect();
        let vv: f64 = v.iter().map(|x| x * x).sum();
        let q = |i: usize, j: usize| f64::from(u8::from(i == j)) - 2.0 * v[i] * v[j] / vv;
        let a: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                (0..n).map(|j| (0..n).map(|k| q(i, k) * modes.get(k).copied().unwrap_or(0.0) * q(j, k)).sum()).collect()
            })
            .collect();
        let apply = |x: &[f64]| -> Vec<f64> { (0..n).map(|i| (0..n).map(|j| a[i][j] * x[j]).sum()).collect() };
        let ax = apply(fixed);
        let b: Vec<f64> = fixed.iter().zip(&ax).map(|(f, g)| f - g).collect();
        let mut x = vec![0.0; n];
        let mut states = Vec::new();
        for _ in 0..count {
            x = apply(&x).iter().zip(&b).map(|(p, q)| p + q).collect();
            states.push(x.clone());
        }
        states
    }

    #[test]
    fn extrapolation_lands_on_the_fixed_point_of_an_affine_map_with_slow_modes() {
        let fixed: Vec<f64> = (0..30).map(|i| 1.0 + f64::from(i) / 7.0).collect();
        // Slow modes as RDM's sweeps show them (0.998 and slower), with faster ones, at
        // most RRE_WINDOW in all; the rest absent. (Modes closer together than this, as
        // 0.9999 beside 0.999, make the weights' system too ill-conditioned to resolve
        // them apart: the jump is then refused by the next sweep.)
        let modes = [0.999, 0.99, 0.95, 0.8, 0.5, 0.1];
        let states = affine_states(&fixed, &modes, 200 + RRE_WINDOW + 1, 7);
        let error = |x: &[f64]| x.iter().zip(&fixed).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
        let mut tail = Tail::default();
        let mut jump = None;
        for x in &states[200..] {
            jump = tail.observe(x.clone()).or(jump);
        }
        let Some(Jump::Extrapolated(x)) = jump else { panic!("no extrapolation: {jump:?}") };
        let before = error(&states[states.len() - 1]);
        assert!(before > 0.1, "the plain iteration is still far: {before}");
        assert!(error(&x) < 1e-6 * before, "extrapolated {} against {before}", error(&x));
    }

    #[test]
    fn a_drift_jumps_to_where_its_first_entry_reaches_zero_and_a_cycle_is_left_alone() {
        // Entries 2 and 4 fall at 0.5 and 0.25 a sweep from 10 and 4: entry 4 reaches 0
        // first, 16 sweeps after the start, 13 after the last state seen.
        let step = [0.0, 1.0, -0.5, 0.0, -0.25];
        let start = [3.0, 1.0, 10.0, 2.0, 4.0];
        let at = |k: f64| -> Vec<f64> { start.iter().zip(&step).map(|(s, d)| s + k * d).collect() };
        let mut tail = Tail::default();
        let jumps: Vec<Option<Jump>> = (0..=DRIFT_SWEEPS).map(|k| tail.observe(at(k as f64))).collect();
        assert!(jumps[..DRIFT_SWEEPS].iter().all(Option::is_none));
        let Some(Jump::Drifted(x)) = &jumps[DRIFT_SWEEPS] else { panic!("no drift: {jumps:?}") };
        for (got, want) in x.iter().zip(at(16.0)) {
            assert!((got - want).abs() < 1e-12, "{x:?}");
        }
        // Period 2: the changes alternate in sign, neither a drift nor a contraction.
        let mut tail = Tail::default();
        for k in 0..3 * RRE_WINDOW {
            let x = if k % 2 == 0 { start.to_vec() } else { at(1.0) };
            assert!(tail.observe(x).is_none(), "jumped at sweep {k}");
        }
    }

    #[test]
    fn a_jump_stops_where_the_first_positive_entry_reaches_zero_and_rounding_zeros_do_not_count() {
        // One mode of 0.9 towards a fixed point off the piece (entry 0 at -1); entry 2 is
        // a rounding zero (1e-19 at the last state) heading for -1e-16.
        let mode: f64 = 0.9;
        let last = 200 + RRE_WINDOW;
        let fixed = [-1.0, 5.0, -1e-16, 2.0];
        let lean = [4.0 / mode.powi(200), -3.0, (1e-16 + 1e-19) / mode.powi(last as i32), 0.0];
        let at = |k: usize| -> Vec<f64> { fixed.iter().zip(&lean).map(|(f, v)| f + mode.powi(k as i32) * v).collect() };
        let mut tail = Tail::default();
        let mut jump = None;
        for k in 200..=last {
            jump = tail.observe(at(k)).or(jump);
        }
        let Some(Jump::Extrapolated(x)) = jump else { panic!("no extrapolation: {jump:?}") };
        let seen = at(last);
        assert!(seen[0] > 0.5, "entry 0 is still well above 0: {seen:?}");
        // On the segment from the last state to the fixed point, where entry 0 is 0.
        let t = seen[0] / (seen[0] - fixed[0]);
        for (j, (&got, (&from, &to))) in x.iter().zip(seen.iter().zip(&fixed)).enumerate() {
            let want = from + t * (to - from);
            assert!((got - want).abs() < 1e-9 * (1.0 + want.abs()), "entry {j}: {got} against {want} in {x:?}");
        }
        // A drift through a rounding zero goes on to the first entry that is positive.
        let step = [-1e-19, -0.5, 0.0];
        let start = [1e-18, 10.0, 3.0];
        let at = |k: f64| -> Vec<f64> { start.iter().zip(&step).map(|(s, d)| s + k * d).collect() };
        let mut tail = Tail::default();
        let jumps: Vec<Option<Jump>> = (0..=DRIFT_SWEEPS).map(|k| tail.observe(at(k as f64))).collect();
        let Some(Jump::Drifted(x)) = &jumps[DRIFT_SWEEPS] else { panic!("no drift: {jumps:?}") };
        assert!((x[1] - 0.0).abs() < 1e-12 && (x[2] - 3.0).abs() < 1e-12, "{x:?}");
    }

    /// An instance where RDM's plain sweeps are slow: every user eligible on every server
    /// (as the bench's `unconstrained` family), 3 resources, demands with one dominant
    /// resource.
    fn spread_out(users: usize, servers: usize, seed: u64) -> Instance {
        let mut state = seed | 1;
        let capacity: Vec<Vec<f64>> =
            (0..servers).map(|_| (0..3).map(|_| 50.0 + 150.0 * uniform(&mut state)).collect()).collect();
        let demand: Vec<Vec<f64>> = (0..users)
            .map(|_| {
                let dominant = (uniform(&mut state) * 3.0) as usize;
                (0..3).map(|r| (1.0 + 4.0 * uniform(&mut state)) * if r == dominant { 1.0 } else { 0.3 }).collect()
            })
            .collect();
        let weight: Vec<f64> = (0..users).map(|_| [1.0, 2.0, 4.0][(uniform(&mut state) * 3.0) as usize]).collect();
        let c: Vec<&[f64]> = capacity.iter().map(Vec::as_slice).collect();
        let d: Vec<&[f64]> = demand.iter().map(Vec::as_slice).collect();
        Builder::new(&c, &d).weights(&weight).build().expect("valid")
    }

    #[test]
    fn extrapolated_sweeps_reach_a_psdsf_allocation_in_fewer_sweeps() {
        let inst = spread_out(120, 12, 3);
        let order: Vec<usize> = (0..inst.n_servers()).collect();
        let mut sweeps = Vec::new();
        for extrapolate in [false, true] {
            let mut servers = Servers::new(&inst, Sharing::Rdm);
            servers.set_extrapolation(extrapolate);
            let done = servers.converge(|_| order.clone()).expect("converges");
            let x = servers.allocation().per_server.expect("placed");
            assert!(is_psdsf_rdm(&inst, &x, 1e-6), "extrapolation {extrapolate}: not PS-DSF");
            sweeps.push(done.sweeps);
        }
        assert!(sweeps[0] > 250, "the plain sweeps were not slow here: {sweeps:?}");
        assert!(2 * sweeps[1] < sweeps[0], "plain, extrapolated: {sweeps:?}");
    }
}
