//! Bottleneck-based fairness, "no justified complaints" (Dolev et al.; spec
//! `docs/spec/ddrf_bbf.md` Part B). Users ask for fractions `r[i][j]` of each resource in
//! total (finite demand), are entitled to `e[i]` of everything (`sum e = 1`), and get a
//! fraction `x[i]` of what they ask for. An allocation is BBF when every user either gets
//! all it asks for or gets at least its entitlement of some saturated resource.
//!
//! Three computations, checked against each other in the tests:
//! - [`ode`]: the paper's method, the limit of the curve `x_i g_i(x) = c e_i` from the
//!   origin, integrated with an adaptive Dormand-Prince 5(4) and stopping events (B.4.2,
//!   B.4.3 option 1), then made exact by a linear program if it stopped short;
//! - [`convex`]: the equivalent Eisenberg-Gale program `max sum e_i ln x_i` (B.4.6);
//! - [`two_users`]: the exact candidate method for two users (B.4.4).

use super::solver::{Program, Terms};
use super::{Allocation, Instance, MultiError};

/// A BBF problem: requests `r[i][j] >= 0` and entitlements `e[i] >= 0` summing to 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Requests {
    /// `r[i][j]`: the fraction of resource `j` user `i` asks for in total.
    pub r: Vec<Vec<f64>>,
    /// `e[i]`: user `i`'s entitlement.
    pub e: Vec<f64>,
}

impl Requests {
    /// Users.
    pub fn n(&self) -> usize {
        self.r.len()
    }

    /// Real resources (without the per-user dummies).
    pub fn m(&self) -> usize {
        self.r.first().map_or(0, Vec::len)
    }

    /// Usage `s_j = sum_i x_i r_ij` of each real resource.
    pub fn usage(&self, x: &[f64]) -> Vec<f64> {
        (0..self.m()).map(|j| (0..self.n()).map(|i| x[i] * self.r[i][j]).sum()).collect()
    }
}

/// BBF within `tol`: feasible, and each user has `x_i = 1` or a saturated resource `j`
/// with `x_i r_ij >= e_i` (eq. 2).
pub fn is_bbf(p: &Requests, x: &[f64], tol: f64) -> bool {
    let s = p.usage(x);
    let feasible = x.iter().all(|&v| v >= -tol && v <= 1.0 + tol) && s.iter().all(|&v| v <= 1.0 + tol);
    feasible
        && (0..p.n())
            .all(|i| x[i] >= 1.0 - tol || (0..p.m()).any(|j| s[j] >= 1.0 - tol && x[i] * p.r[i][j] >= p.e[i] - tol))
}

/// Sharing incentive (P-B5): `x_i >= min(1, min_{j: r_ij > 0} e_i / r_ij)`.
/// Checked as `x_i = 1` or `x_i max_j r_ij >= e_i`, in the units of [`is_bbf`].
pub fn sharing_incentive(p: &Requests, x: &[f64], tol: f64) -> bool {
    (0..p.n()).all(|i| {
        let largest = p.r[i].iter().cloned().fold(0.0, f64::max);
        x[i] >= 1.0 - tol || x[i] * largest >= p.e[i] - tol
    })
}

/// Pareto optimality (P-B4, exact for these utilities): every user has all it asks for or
/// uses a saturated resource.
pub fn pareto_optimal(p: &Requests, x: &[f64], tol: f64) -> bool {
    let s = p.usage(x);
    (0..p.n()).all(|i| x[i] >= 1.0 - tol || (0..p.m()).any(|j| s[j] >= 1.0 - tol && p.r[i][j] > 0.0))
}

/// Envy-freeness (P-B10): no user values another's bundle above its own,
/// `min(1, min_{j: r_ij > 0} x_k r_kj / r_ij) <= x_i`.
pub fn envy_free(p: &Requests, x: &[f64], tol: f64) -> bool {
    (0..p.n()).all(|i| {
        (0..p.n()).all(|k| {
            let worth =
                (0..p.m()).filter(|&j| p.r[i][j] > 0.0).map(|j| x[k] * p.r[k][j] / p.r[i][j]).fold(1.0, f64::min);
            worth <= x[i] + tol
        })
    })
}

/// The Eisenberg-Gale program (B.4.6): maximize `sum_i e_i ln x_i` subject to
/// `sum_i x_i r_ij <= 1` and `0 <= x_i <= 1`; users with `e_i = 0` get 0 (as on the
/// paper's curve). Its optimum is BBF and is the limit of the paper's ODE.
pub fn convex(p: &Requests) -> Result<Vec<f64>, MultiError> {
    let mut prog = Program::new(p.n());
    for i in 0..p.n() {
        if p.e[i] > 0.0 {
            prog.maximize_log(p.e[i], vec![(i, 1.0)]);
            prog.le(vec![(i, 1.0)], 1.0);
        } else {
            prog.eq(vec![(i, 1.0)], 0.0);
        }
    }
    for j in 0..p.m() {
        let terms: Terms = (0..p.n()).filter(|&i| p.r[i][j] > 0.0).map(|i| (i, p.r[i][j])).collect();
        if !terms.is_empty() {
            prog.le(terms, 1.0);
        }
    }
    prog.solve()
}

/// Diagnostics of an [`ode`] run.
#[derive(Debug, Clone, PartialEq)]
pub struct OdeRun {
    /// The point: BBF (within 1e-6 after integration, or exact after the LP).
    pub x: Vec<f64>,
    /// The curve parameter `t = f(x)` reached.
    pub t: f64,
    /// Right-hand-side evaluations.
    pub evaluations: usize,
    /// Why the integration stopped.
    pub stop: Stop,
    /// True if the integrated point was not BBF within 1e-6 and was replaced by the
    /// nearest BBF point of its bottleneck pattern (exactification, B.4.3).
    pub exactified: bool,
}

/// Why [`ode`] stopped integrating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// E1: the smallest slack reached [`W_MIN`].
    Boundary,
    /// E2: `t` reached `30 m` (a safety net; E1 fires first on a regular curve).
    TimeLimit,
    /// The evaluation budget ran out.
    Budget,
}

/// Event E1: the integration stops when a slack is this close to 0.
pub const W_MIN: f64 = 1e-11;
const RTOL: f64 = 1e-10;
const ATOL: f64 = 1e-13;
const BUDGET: usize = 2_000_000;

/// The augmented system of B.4.2 for the users with `e_i > 0`: requests with the
/// dummy resources appended (`x_i <= 1` as a capacity).
struct Curve<'a> {
    p: &'a Requests,
    users: Vec<usize>,
    e: Vec<f64>,
}

impl Curve<'_> {
    /// Slacks `w_j = 1 - s_j` of the real resources and then each user's dummy.
    fn slacks(&self, x: &[f64]) -> Vec<f64> {
        let mut w: Vec<f64> = (0..self.p.m())
            .map(|j| 1.0 - self.users.iter().zip(x).map(|(&i, &xi)| xi * self.p.r[i][j]).sum::<f64>())
            .collect();
        w.extend(x.iter().map(|&xi| 1.0 - xi));
        w
    }

    /// Augmented request `R_kj` of the k-th curve user.
    fn req(&self, k: usize, j: usize) -> f64 {
        let m = self.p.m();
        if j < m {
            self.p.r[self.users[k]][j]
        } else if j - m == k {
            1.0
        } else {
            0.0
        }
    }

    /// `dx/dt = u / (g . u)` with `(diag(g) + diag(x) H) u = e`; `None` outside the
    /// interior of the feasible set.
    fn rhs(&self, x: &[f64]) -> Option<Vec<f64>> {
        if x.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return None;
        }
        let w = self.slacks(x);
        if w.iter().any(|&v| v <= 0.0) {
            return None;
        }
        let n = x.len();
        let cols = w.len();
        let b: Vec<Vec<f64>> = (0..n).map(|k| (0..cols).map(|j| self.req(k, j) / w[j]).collect()).collect();
        let g: Vec<f64> = b.iter().map(|row| row.iter().sum()).collect();
        let mut a = vec![vec![0.0; n]; n];
        for i in 0..n {
            for k in 0..n {
                let h: f64 = (0..cols).map(|j| b[i][j] * b[k][j]).sum();
                a[i][k] = x[i] * h + if i == k { g[i] } else { 0.0 };
            }
        }
        let u = solve_linear(a, self.e.clone())?;
        let gu: f64 = g.iter().zip(&u).map(|(a, b)| a * b).sum();
        (gu > 0.0 && gu.is_finite()).then(|| u.iter().map(|v| v / gu).collect())
    }
}

/// Gaussian elimination with partial pivoting; `None` if singular.
fn solve_linear(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..n {
            let f = a[row][col] / a[col][col];
            for k in col..n {
                a[row][k] -= f * a[col][k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

/// Dormand-Prince 5(4) tableau (the curve is autonomous, so the nodes are not needed).
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0.0, 0.0],
    [9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0, 0.0],
    [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0],
];
/// Fifth-order weights minus fourth-order weights: the error estimate.
const E: [f64; 7] = [
    35.0 / 384.0 - 5179.0 / 57600.0,
    0.0,
    500.0 / 1113.0 - 7571.0 / 16695.0,
    125.0 / 192.0 - 393.0 / 640.0,
    -2187.0 / 6784.0 + 92097.0 / 339200.0,
    11.0 / 84.0 - 187.0 / 2100.0,
    -1.0 / 40.0,
];

/// Integrates the paper's curve from the origin, reporting `x` at each of the increasing
/// `times` it reaches, until event E1 or E2. Returns the samples and the final state.
pub fn trajectory(p: &Requests, times: &[f64]) -> (Vec<Vec<f64>>, OdeRun) {
    let users: Vec<usize> = (0..p.n()).filter(|&i| p.e[i] > 0.0).collect();
    let curve = Curve { p, e: users.iter().map(|&i| p.e[i]).collect(), users };
    let t_max = 30.0 * (p.m() + p.n()) as f64;
    let mut x = vec![0.0; curve.users.len()];
    let mut t = 0.0;
    let mut h: f64 = 1e-3;
    let mut evaluations = 0;
    let mut samples = Vec::new();
    let mut next = 0;
    let widen = |y: &[f64]| {
        let mut full = vec![0.0; p.n()];
        for (k, &i) in curve.users.iter().enumerate() {
            full[i] = y[k];
        }
        full
    };
    let mut k1 = curve.rhs(&x).unwrap_or_else(|| vec![0.0; x.len()]);
    evaluations += 1;
    let stop = loop {
        while next < times.len() && times[next] <= t {
            samples.push(widen(&x));
            next += 1;
        }
        if curve.slacks(&x).iter().cloned().fold(f64::INFINITY, f64::min) <= W_MIN {
            break Stop::Boundary;
        }
        if t >= t_max {
            break Stop::TimeLimit;
        }
        if evaluations >= BUDGET {
            break Stop::Budget;
        }
        let mut step = h.min(t_max - t);
        if next < times.len() {
            step = step.min(times[next] - t);
        }
        // The stages; any stage outside the interior rejects the step.
        let mut k = vec![k1.clone()];
        let mut ok = true;
        for s in 1..7 {
            let y: Vec<f64> =
                (0..x.len()).map(|c| x[c] + step * (0..s).map(|q| A[s][q] * k[q][c]).sum::<f64>()).collect();
            evaluations += 1;
            match curve.rhs(&y) {
                Some(v) => k.push(v),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            h = step * 0.25;
            continue;
        }
        let y: Vec<f64> = (0..x.len()).map(|c| x[c] + step * (0..6).map(|q| A[6][q] * k[q][c]).sum::<f64>()).collect();
        let err: f64 = ((0..x.len())
            .map(|c| {
                let e = step * (0..7).map(|q| E[q] * k[q][c]).sum::<f64>();
                let scale = ATOL + RTOL * x[c].abs().max(y[c].abs());
                (e / scale).powi(2)
            })
            .sum::<f64>()
            / x.len().max(1) as f64)
            .sqrt();
        if err <= 1.0 {
            t += step;
            x = y;
            k1 = k[6].clone();
        }
        let factor = if err == 0.0 { 5.0 } else { (0.9 * err.powf(-0.2)).clamp(0.2, 5.0) };
        h = step * factor;
    };
    let x = widen(&x);
    (samples, OdeRun { x, t, evaluations, stop, exactified: false })
}

/// The paper's ODE method: integrate to event E1 (or E2), check BBF within 1e-6, and if
/// that fails replace the point by the nearest BBF point of its bottleneck pattern.
pub fn ode(p: &Requests) -> Result<OdeRun, MultiError> {
    let (_, mut run) = trajectory(p, &[]);
    if !is_bbf(p, &run.x, 1e-6) {
        run.x = exactify(p, &run.x)?;
        run.exactified = true;
    }
    Ok(run)
}

/// Exactification (B.4.3): for each user a justifying index (satisfied, or the resource
/// near saturation where it holds the most relative to its entitlement), then the
/// point of that bottleneck pattern nearest to `x` in L1, by a linear program; stricter
/// near-saturation thresholds are tried if the pattern is infeasible.
pub fn exactify(p: &Requests, x: &[f64]) -> Result<Vec<f64>, MultiError> {
    let (n, m) = (p.n(), p.m());
    let s = p.usage(x);
    for threshold in [1e-4, 1e-6, 1e-8] {
        // Variables: y (n), then plus and minus deviations (n each): y = x + p - q.
        let mut prog = Program::new(3 * n);
        for i in 0..n {
            prog.eq(vec![(i, 1.0), (n + i, -1.0), (2 * n + i, 1.0)], x[i]);
            prog.maximize(n + i, -1.0);
            prog.maximize(2 * n + i, -1.0);
            prog.le(vec![(i, 1.0)], 1.0);
        }
        let resource = |j: usize| -> Terms { (0..n).filter(|&i| p.r[i][j] > 0.0).map(|i| (i, p.r[i][j])).collect() };
        for j in 0..m {
            let terms = resource(j);
            if !terms.is_empty() {
                prog.le(terms, 1.0);
            }
        }
        for i in 0..n {
            if x[i] > 1.0 - 1e-6 {
                prog.eq(vec![(i, 1.0)], 1.0);
                continue;
            }
            let justifying = (0..m)
                .filter(|&j| 1.0 - s[j] <= threshold && p.r[i][j] > 0.0)
                .max_by(|&a, &b| (x[i] * p.r[i][a]).total_cmp(&(x[i] * p.r[i][b])));
            if let Some(j) = justifying {
                prog.eq(resource(j), 1.0);
                prog.ge(vec![(i, p.r[i][j])], p.e[i]);
            }
        }
        if let Ok(sol) = prog.solve() {
            let y = sol[..n].to_vec();
            if is_bbf(p, &y, 1e-8) {
                return Ok(y);
            }
        }
    }
    Err(MultiError::NoConvergence(
        "bottleneck-based fairness: the ODE stopped at a point that is not BBF, and no nearby bottleneck pattern is"
            .into(),
    ))
}

/// The exact method for two users with positive entitlements (B.4.4): the BBF point is
/// unique and is either on one constraint line at `(e_1 / R_1j, e_2 / R_2j)` or a vertex
/// where two constraint lines meet.
pub fn two_users(p: &Requests) -> Result<Vec<f64>, MultiError> {
    if p.n() != 2 || p.e.iter().any(|&e| e <= 0.0) {
        return Err(MultiError::Unsupported("the exact method needs two users with positive entitlements".into()));
    }
    let m = p.m();
    // Augmented constraint lines R_1j x_1 + R_2j x_2 = 1, dummies last.
    let mut lines: Vec<[f64; 2]> = (0..m).map(|j| [p.r[0][j], p.r[1][j]]).collect();
    lines.push([1.0, 0.0]);
    lines.push([0.0, 1.0]);
    let mut candidates = Vec::new();
    for l in &lines {
        if l[0] > 0.0 && l[1] > 0.0 {
            candidates.push(vec![p.e[0] / l[0], p.e[1] / l[1]]);
        }
    }
    for (a, la) in lines.iter().enumerate() {
        for lb in &lines[a + 1..] {
            let det = la[0] * lb[1] - la[1] * lb[0];
            if det.abs() > 1e-15 {
                candidates.push(vec![(lb[1] - la[1]) / det, (la[0] - lb[0]) / det]);
            }
        }
    }
    candidates
        .into_iter()
        .find(|x| x.iter().all(|&v| v >= -1e-12) && is_bbf(p, x, 1e-10))
        .map(|x| x.into_iter().map(|v| v.clamp(0.0, 1.0)).collect())
        .ok_or_else(|| MultiError::NoConvergence("no candidate point is BBF".into()))
}

/// The BBF problem of an instance: one pooled system (capacities summed over servers),
/// user `i` asks for `max_tasks_i` tasks in total, so `r_ij = demand_ij * max_tasks_i /
/// C_j`; entitlements as given (normalized). Every user needs `max_tasks`.
pub fn requests(inst: &Instance) -> Result<Requests, MultiError> {
    let pooled = inst.pooled();
    let mut r = Vec::new();
    for n in 0..inst.n_users() {
        let Some(tasks) = inst.max_tasks[n] else {
            return Err(MultiError::Unsupported(format!(
                "bbf: user {:?} has no max_tasks; bottleneck-based fairness divides finite requests",
                inst.users[n]
            )));
        };
        r.push(
            (0..inst.n_resources())
                .map(|j| if pooled[j] > 0.0 { inst.demand[n][j] * tasks / pooled[j] } else { 0.0 })
                .collect(),
        );
    }
    Ok(Requests { r, e: inst.entitlement.clone() })
}

/// The Eisenberg-Gale point made exact: the interior-point solution is accurate to about
/// 1e-6, so unless it is BBF within 1e-8 it is replaced by the nearest point of its
/// bottleneck pattern ([`exactify`]; kept as is if no pattern fits but it is BBF within
/// 1e-6).
pub fn solve(p: &Requests) -> Result<Vec<f64>, MultiError> {
    let x = convex(p)?;
    if is_bbf(p, &x, 1e-8) {
        return Ok(x);
    }
    match exactify(p, &x) {
        Ok(y) => Ok(y),
        Err(_) if is_bbf(p, &x, 1e-6) => Ok(x),
        Err(e) => Err(e),
    }
}

/// Users up to which [`bbf`] follows the paper's curve; beyond, each right-hand side
/// (`O(N^3)`) costs more than the convex program.
pub const ODE_USERS: usize = 64;

/// BBF on an instance: the paper's ODE ([`ode`], the more accurate point) for up to
/// [`ODE_USERS`] users, the convex program made exact ([`solve`]) beyond. Returns the
/// method used and the allocation, tasks = `x_i * max_tasks_i`.
pub fn bbf(inst: &Instance) -> Result<(String, Allocation), MultiError> {
    let p = requests(inst)?;
    let (method, x) = if p.n() <= ODE_USERS {
        let run = ode(&p)?;
        let how = if run.exactified { ", then made exact" } else { "" };
        (format!("the paper's ODE to t = {:.1}, {} evaluations{how}", run.t, run.evaluations), run.x)
    } else {
        ("the Eisenberg-Gale program".to_string(), solve(&p)?)
    };
    let tasks = (0..inst.n_users()).map(|n| x[n] * inst.max_tasks[n].unwrap_or(0.0)).collect();
    Ok((method, Allocation::pooled(tasks)))
}
