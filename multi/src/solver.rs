//! The one place that talks to the convex solver (Clarabel, a pure-Rust interior-point
//! method). Policies state linear programs, optionally with weighted-log terms in the
//! objective (the Eisenberg-Gale programs of PS-DSF TDM and bottleneck-based fairness), as
//! rows over non-negative variables; this module turns them into Clarabel's conic form.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};

use super::MultiError;

/// Rounds of bound propagation in [`Program::solve`]'s scaling (a level is bounded
/// through the tasks that bound it, a task limit through the level: a few rounds).
const BOUND_ROUNDS: usize = 8;

/// How far an "almost solved" point may miss a row of the program as stated, relative
/// to the row's size at the point ([`Program::solve`]).
const ALMOST_TOL: f64 = 1e-7;

/// [`Program::solve_columns`] stops when the variables left out could raise the objective
/// by at most this fraction of it, together (their reduced costs times their bounds).
const REDUCED_COST_TOL: f64 = 1e-7;

/// A variable left out whose reduced cost is at most this fraction of the terms it is
/// computed from (its objective coefficient and each row's dual times its entry, in
/// absolute value) is priced at the duals' noise, not at a gain
/// ([`Program::solve_columns`]): the interior-point duals carry errors of about 1e-10 of
/// their size, and summed over tens of thousands of such columns (times their bounds)
/// they kept the Lagrangian bound just above [`REDUCED_COST_TOL`] while the objective
/// stood still to 13 digits, so that every placement joined, 1,640 a round (the C-DRF
/// program of a 1,000-user instance with a task limit on every user: over 60 s instead
/// of about 2). Such columns do not count in the stopping rule's bound. The scale is the
/// column's own terms, not the largest dual: a row that no active variable can meet (a
/// server with none of a resource a user needs) takes an arbitrarily large dual, and
/// measured against it a placement that would lift a user from 0 looked like noise.
const NOISE_REDUCED_COST: f64 = 1e-9;

/// Variables of one group that join per round of [`Program::solve_columns`] (measured on
/// the 1,000-user bench instance: 1 took 5 to 7 programs, 2 took 4 to 5, 3 and more
/// made the programs larger for no fewer rounds).
const JOIN_PER_GROUP: usize = 2;

/// A sparse linear expression: `(variable, coefficient)` pairs.
pub type Terms = Vec<(usize, f64)>;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Sense {
    Le,
    Eq,
}

/// maximize `c·x + sum_k w_k ln(a_k·x)` subject to linear rows, `x >= 0`.
#[derive(Debug, Clone)]
pub struct Program {
    vars: usize,
    objective: Vec<f64>,
    rows: Vec<(Terms, Sense, f64)>,
    logs: Vec<(f64, Terms)>,
}

impl Program {
    /// The number of rows so far (the next row added is this one).
    pub fn n_rows(&self) -> usize {
        self.rows.len()
    }

    /// A program over `vars` non-negative variables with a zero objective.
    pub fn new(vars: usize) -> Self {
        Program { vars, objective: vec![0.0; vars], rows: Vec::new(), logs: Vec::new() }
    }

    /// Adds `coef * x[var]` to the objective.
    pub fn maximize(&mut self, var: usize, coef: f64) {
        self.objective[var] += coef;
    }

    /// Adds `weight * ln(terms·x)` to the objective (`weight > 0`).
    pub fn maximize_log(&mut self, weight: f64, terms: Terms) {
        self.logs.push((weight, terms));
    }

    /// `terms·x <= rhs`.
    pub fn le(&mut self, terms: Terms, rhs: f64) {
        self.rows.push((terms, Sense::Le, rhs));
    }

    /// `terms·x >= rhs`.
    pub fn ge(&mut self, terms: Terms, rhs: f64) {
        let negated = terms.into_iter().map(|(v, a)| (v, -a)).collect();
        self.rows.push((negated, Sense::Le, -rhs));
    }

    /// `terms·x == rhs`.
    pub fn eq(&mut self, terms: Terms, rhs: f64) {
        self.rows.push((terms, Sense::Eq, rhs));
    }

    /// Solves; returns `x` (clamped at 0) or an error naming the solver's status.
    ///
    /// The program is rescaled first (`Program::scaled`): the programs here state
    /// tasks, which run from 1e-6 to 1e9 depending on the units of the instance, and
    /// Clarabel measures its residuals against the largest right-hand side and bounds its
    /// own equilibration to factors in `[1e-4, 1e4]`. Unscaled, LP (7) on three servers
    /// of 1e6 units with tasks of 0.02 and 0.0016 units gave one user everything and the
    /// other 0 (`solver_scaling_does_not_starve_a_user` in `multi/tests/`).
    ///
    /// A point Clarabel reports only almost solved for a linear program is checked
    /// against every row of the program as stated, and not returned if it misses one by
    /// more than `ALMOST_TOL` (1e-7) of the row's size: the next settings are tried, and then
    /// the result is a [`MultiError::Solver`].
    pub fn solve(&self) -> Result<Vec<f64>, MultiError> {
        Ok(self.solve_with_duals()?.0)
    }

    /// As [`Program::solve`], with the dual value of every row (in the order the rows
    /// were added, in the program's own units): the rate at which the objective would
    /// rise if the row's right-hand side rose (`>= 0` for `le`, `<= 0` for `ge`; 0 for a
    /// row the scaling dropped because it cannot bind). Meaningful for linear programs.
    pub fn solve_with_duals(&self) -> Result<(Vec<f64>, Vec<f64>), MultiError> {
        let (scaled, col, rows, objective) = self.scaled();
        let unscale = |z: &[f64]| -> Vec<f64> { z.iter().zip(&col).map(|(z, d)| (z * d).max(0.0)).collect() };
        // Log programs keep an almost solved point: there it is a gap stalled at the flat
        // optimum, more accurate than the default tolerances' "solved" (B-Ex6: 1e-10
        // against 4e-6).
        let linear = self.logs.is_empty();
        let (z, y) = scaled.solve_as_given(&|z| !linear || self.violation(&unscale(z)) <= ALMOST_TOL)?;
        // A row of the scaled program is the row times `k`, its objective the objective
        // times `objective`: the dual of the row as stated is `y * k / objective`.
        let duals = rows.iter().map(|kept| kept.map_or(0.0, |(at, k)| y[at] * k / objective)).collect();
        Ok((unscale(&z), duals))
    }

    /// Solves a linear program by column generation: only the variables `active` marks
    /// are in the program solved; the others are held at 0 until their reduced cost (from
    /// the duals of the rows) says that one of them would raise the objective, and then
    /// they join and the program is solved again, until none would. The last point is
    /// then optimal for the whole program (LP duality: no column prices out), so the
    /// optimum is the same as [`Program::solve`]'s; the point may be another optimal one.
    /// `active` is left holding the variables used, for the next program of a sequence.
    /// Of the variables of one `group` (say, one user's placements), at most
    /// `JOIN_PER_GROUP` (2) join per round.
    ///
    /// Worth it where most variables are 0 at an optimum (placements: a user runs on a
    /// few of its servers): the interior-point method's factorisations grow with the
    /// variables and the rows they connect (issue 17). A restricted program that cannot
    /// be solved falls back to the whole program.
    pub fn solve_columns(&self, active: &mut [bool], group: &[usize]) -> Result<(Vec<f64>, Vec<f64>), MultiError> {
        debug_assert_eq!(active.len(), self.vars);
        debug_assert_eq!(group.len(), self.vars);
        if !self.logs.is_empty() {
            return self.solve_with_duals();
        }
        // Column j's entries (row, coefficient).
        let mut column: Vec<Terms> = vec![Vec::new(); self.vars];
        for (k, (terms, _, _)) in self.rows.iter().enumerate() {
            for &(v, a) in terms {
                column[v].push((k, a));
            }
        }
        // An upper bound on each variable from the packing rows it is in (a capacity:
        // `x <= rhs / a`); infinite if none bounds it.
        let mut upper = vec![f64::INFINITY; self.vars];
        for (terms, sense, rhs) in &self.rows {
            if *sense == Sense::Le && *rhs >= 0.0 && terms.iter().all(|t| t.1 >= 0.0) {
                for &(v, a) in terms.iter().filter(|t| t.1 > 0.0) {
                    upper[v] = upper[v].min(rhs / a);
                }
            }
        }
        loop {
            // A row that 0 would miss needs a variable of its own: all of them join.
            for (terms, sense, rhs) in &self.rows {
                let live = terms.iter().any(|&(v, a)| active[v] && a != 0.0);
                let zero_ok = match sense {
                    Sense::Le => *rhs >= 0.0,
                    Sense::Eq => *rhs == 0.0,
                };
                if !live && !zero_ok {
                    terms.iter().for_each(|&(v, _)| active[v] = true);
                }
            }
            if active.iter().all(|&a| a) {
                return self.solve_with_duals();
            }
            let index: Vec<Option<usize>> = {
                let mut next = 0;
                active.iter().map(|&a| a.then(|| (next, next += 1).0)).collect()
            };
            let count = index.iter().flatten().count();
            let mut sub = Program::new(count);
            for (j, &at) in index.iter().enumerate() {
                if let Some(at) = at {
                    sub.objective[at] = self.objective[j];
                }
            }
            for (terms, sense, rhs) in &self.rows {
                let terms: Terms = terms.iter().filter_map(|&(v, a)| index[v].map(|at| (at, a))).collect();
                sub.rows.push((terms, *sense, *rhs));
            }
            let Ok((z, y)) = sub.solve_with_duals() else {
                return self.solve_with_duals();
            };
            // Reduced cost of each variable left out: what one unit of it would add to
            // the objective at these duals; times the variable's bound, the most it could
            // add. Their sum bounds the whole program's optimum above this one's
            // (Lagrangian bound: the duals price every row, each variable alone can add
            // at most its reduced cost times its bound), so once it is below
            // REDUCED_COST_TOL of the objective, the point is optimal for the whole
            // program to that tolerance; reduced costs at the duals' noise
            // (NOISE_REDUCED_COST) do not count in it. Otherwise the largest gains join
            // (noise ones too: on the rack instances they were the placements the
            // next program needed, and leaving them out took three times the programs).
            let value: f64 = (0..self.vars).filter_map(|j| index[j].map(|at| self.objective[j] * z[at])).sum();
            let mut joining: Vec<(f64, usize)> = Vec::new();
            let mut gain = 0.0;
            for j in (0..self.vars).filter(|&j| !active[j]) {
                let priced = self.objective[j] - column[j].iter().map(|&(k, a)| y[k] * a).sum::<f64>();
                if priced > 0.0 {
                    let size = self.objective[j].abs() + column[j].iter().map(|&(k, a)| (y[k] * a).abs()).sum::<f64>();
                    if priced > NOISE_REDUCED_COST * size {
                        gain += priced * upper[j];
                    }
                    joining.push((priced, j));
                }
            }
            if gain <= REDUCED_COST_TOL * value.abs() {
                joining.clear();
            }
            if joining.is_empty() {
                let mut x = vec![0.0; self.vars];
                for (j, &at) in index.iter().enumerate() {
                    if let Some(at) = at {
                        x[j] = z[at];
                    }
                }
                return Ok((x, y));
            }
            // The most attractive variables of each group join, JOIN_PER_GROUP of them (a
            // user's placements: the first duals are poor, and would bring in most of a
            // user's servers at once).
            joining.sort_by(|a, b| b.0.total_cmp(&a.0));
            let mut taken: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
            for &(_, j) in &joining {
                let joined = taken.entry(group[j]).or_insert(0);
                if *joined < JOIN_PER_GROUP {
                    *joined += 1;
                    active[j] = true;
                }
            }
        }
    }

    /// The same program in scaled variables `x[j] = col[j] * z[j]`, each variable in
    /// units of an upper bound `u[j]` on it, so that `z` lies in `[0, 1]`:
    ///
    /// - `u` is propagated from the rows ([`BOUND_ROUNDS`] rounds): a capacity row
    ///   bounds the tasks in it, a level row bounds the level through those tasks, a
    ///   fixed total bounds its terms; a variable left unbounded gets the scale 1;
    /// - a variable pinned at 0 (`u = 0`: a server without a resource the user demands,
    ///   a placement the program excludes) is left out of every other row, the objective
    ///   and the result;
    /// - a packing row (`terms·x <= rhs`, `rhs > 0`, no negative coefficient) that cannot
    ///   bind (`sum a u < rhs / 2`; the margin keeps the row that sets a bound, whose
    ///   `a u` rounds to `rhs`) is dropped, so that a resource no user can exhaust does
    ///   not inflate the norms the solver measures its residuals by;
    /// - every row is divided by its largest scaled coefficient, and the objective of a
    ///   linear program by its largest coefficient (log terms are kept as they are, in
    ///   the scaled variables: Clarabel's exponential cones were measured less accurate
    ///   with their arguments or weights normalized).
    ///
    /// Every step is exact (the bounds are implied by the rows, a row times a positive
    /// number is the same constraint, a redundant row removes no point, `ln(k s) = ln k +
    /// ln s` moves no optimum, and an objective times a positive number has the same
    /// maximizers), so the scaled program has the same solutions, in `z`.
    #[allow(clippy::type_complexity)]
    fn scaled(&self) -> (Program, Vec<f64>, Vec<Option<(usize, f64)>>, f64) {
        let usable = |v: f64| v > 0.0 && v.is_finite();
        let packing = |row: &(Terms, Sense, f64)| row.1 == Sense::Le && row.2 > 0.0 && row.0.iter().all(|t| t.1 >= 0.0);
        // Implied upper bounds (every variable is at least 0), propagated row by row: in
        // `sum a x <= rhs` (or `==`), `a[j] x[j] <= rhs + sum over a[k] < 0 of |a[k]| u[k]`
        // for `a[j] > 0`, and in an equality the same with the signs swapped.
        let mut bound = vec![f64::INFINITY; self.vars];
        for _ in 0..BOUND_ROUNDS {
            let mut changed = false;
            for (terms, sense, rhs) in &self.rows {
                let reach = |sign: f64| -> f64 {
                    terms.iter().filter(|t| t.1 * sign > 0.0).map(|t| t.1.abs() * bound[t.0]).sum()
                };
                let (up, down) = (reach(1.0), reach(-1.0));
                let mut tighten = |v: usize, u: f64| {
                    if u.is_finite() && u.max(0.0) < bound[v] {
                        bound[v] = u.max(0.0);
                        changed = true;
                    }
                };
                for &(v, a) in terms.iter().filter(|t| t.1 > 0.0) {
                    tighten(v, (rhs + down) / a);
                }
                if *sense == Sense::Eq {
                    for &(v, a) in terms.iter().filter(|t| t.1 < 0.0) {
                        tighten(v, (up - rhs) / -a);
                    }
                }
            }
            if !changed {
                break;
            }
        }
        let col: Vec<f64> = bound.iter().map(|&u| if usable(u) { u } else { 1.0 }).collect();
        let pinned: Vec<bool> = bound.iter().map(|&u| u == 0.0).collect();
        // A pinned variable is 0: dropped from every row and log term but those that only pin.
        let unpinned = |terms: &Terms| -> Terms {
            let free: Terms = terms.iter().filter(|t| !pinned[t.0]).cloned().collect();
            if free.is_empty() {
                terms.clone()
            } else {
                free
            }
        };
        let largest = |terms: &Terms| terms.iter().map(|&(v, a)| a.abs() * col[v]).fold(0.0, f64::max);
        let unit = |m: f64| if usable(m) { 1.0 / m } else { 1.0 };
        // Each row kept: its place among the kept rows and the factor it was multiplied by.
        let mut kept = Vec::with_capacity(self.rows.len());
        let mut rows: Vec<(Terms, Sense, f64)> = Vec::with_capacity(self.rows.len());
        for row in &self.rows {
            let reach: f64 = row.0.iter().map(|&(v, a)| a * bound[v]).sum();
            if packing(row) && reach < 0.5 * row.2 {
                kept.push(None);
                continue;
            }
            let (terms, sense, rhs) = row;
            let terms = unpinned(terms);
            let k = unit(largest(&terms));
            kept.push(Some((rows.len(), k)));
            rows.push((terms.iter().map(|&(v, a)| (v, a * col[v] * k)).collect(), *sense, rhs * k));
        }
        let logs = self
            .logs
            .iter()
            .map(|(w, terms)| (*w, unpinned(terms).iter().map(|&(v, a)| (v, a * col[v])).collect()))
            .collect();
        let objective: Vec<f64> =
            self.objective.iter().zip(&col).zip(&pinned).map(|((c, d), &p)| if p { 0.0 } else { c * d }).collect();
        // Only a linear program's objective is divided by its largest coefficient. Log
        // programs keep their weights as given: their objective is already of order 1
        // (weights and entitlements are bounded) and Clarabel's exponential cones were
        // measured less accurate scaled (B-Ex10 moved from 5e-10 to 8e-7).
        let factor =
            if self.logs.is_empty() { unit(objective.iter().map(|c| c.abs()).fold(0.0, f64::max)) } else { 1.0 };
        let objective = objective.iter().map(|c| c * factor).collect();
        // A pinned variable is exactly 0, not the solver's residue in it.
        let col = col.iter().zip(&pinned).map(|(&c, &p)| if p { 0.0 } else { c }).collect();
        (Program { vars: self.vars, objective, rows, logs }, col, kept, factor)
    }

    /// The largest amount by which `x` misses a row, relative to the row's size at `x`
    /// (the larger of `|rhs|` and `sum |a x|`): a floor of 1e-8 missed entirely counts 1.
    fn violation(&self, x: &[f64]) -> f64 {
        self.rows
            .iter()
            .map(|(terms, sense, rhs)| {
                let lhs: f64 = terms.iter().map(|&(v, a)| a * x[v]).sum();
                let size = terms.iter().map(|&(v, a)| (a * x[v]).abs()).sum::<f64>().max(rhs.abs());
                let miss = match sense {
                    Sense::Le => lhs - rhs,
                    Sense::Eq => (lhs - rhs).abs(),
                };
                if miss <= 0.0 {
                    0.0
                } else {
                    miss / size
                }
            })
            .fold(0.0, f64::max)
    }

    /// Solves the program as stated (no scaling of ours); `accept` decides whether a
    /// point the solver reports almost solved is kept.
    /// The duals are those of the rows, in the order of `self.rows`.
    fn solve_as_given(&self, accept: &dyn Fn(&[f64]) -> bool) -> Result<(Vec<f64>, Vec<f64>), MultiError> {
        let n = self.vars + self.logs.len();
        // Clarabel: minimize q·z s.t. A z + s = b, s in cones (in row order).
        // Rows of A as sparse terms (the programs are sparse: a dense A of a few thousand
        // users would not fit in memory).
        let mut a: Vec<Terms> = Vec::new();
        let mut b = Vec::new();
        let mut cones = Vec::new();
        let row = |terms: &Terms, sign: f64| -> Terms { terms.iter().map(|&(v, c)| (v, sign * c)).collect() };
        // Where each row of `self.rows` sits among Clarabel's (equalities first).
        let mut place = vec![0; self.rows.len()];
        for sense in [Sense::Eq, Sense::Le] {
            for (k, (terms, _, rhs)) in self.rows.iter().enumerate().filter(|r| r.1 .1 == sense) {
                place[k] = a.len();
                a.push(row(terms, 1.0));
                b.push(*rhs);
            }
            if sense == Sense::Eq && !a.is_empty() {
                cones.push(SupportedConeT::ZeroConeT(a.len()));
            }
        }
        let mut nonneg = a.len() - self.rows.iter().filter(|r| r.1 == Sense::Eq).count();
        for v in 0..self.vars {
            a.push(row(&vec![(v, -1.0)], 1.0));
            b.push(0.0);
            nonneg += 1;
        }
        cones.push(SupportedConeT::NonnegativeConeT(nonneg));
        let mut q: Vec<f64> = self.objective.iter().map(|c| -c).collect();
        for (k, (weight, terms)) in self.logs.iter().enumerate() {
            // (t_k, 1, a_k·x) in the exponential cone  <=>  t_k <= ln(a_k·x).
            let t = self.vars + k;
            q.push(-weight);
            a.push(row(&vec![(t, -1.0)], 1.0));
            b.push(0.0);
            a.push(Terms::new());
            b.push(1.0);
            a.push(row(terms, -1.0));
            b.push(0.0);
            cones.push(SupportedConeT::ExponentialConeT());
        }
        let p = CscMatrix::zeros((n, n));
        let a = csc(&a, n);
        // Tight tolerances first (the flat optimum of a log program needs them for
        // 1e-10 accuracy); degenerate programs can stall there, so then Clarabel's own.
        let mut last = String::new();
        // "Almost solved" means Clarabel met only its reduced tolerances (1e-4 on the
        // residuals): often a stalled gap at a good point (log programs), sometimes a point
        // that misses a floor of 1e-8 of a task by all of it. Kept only if `accept` (every
        // constraint met to ALMOST_TOL of its own size); otherwise the next settings are
        // tried, and then the program is refused with an error.
        for tight in [true, false] {
            let mut settings = DefaultSettings { verbose: false, max_iter: 400, ..DefaultSettings::default() };
            if tight {
                settings.tol_gap_abs = 1e-14;
                settings.tol_gap_rel = 1e-14;
                settings.tol_feas = 1e-12;
            }
            let mut solver = DefaultSolver::new(&p, &q, &a, &b, &cones, settings)
                .map_err(|e| MultiError::Solver(format!("{e:?}")))?;
            solver.solve();
            let x: Vec<f64> = solver.solution.x[..self.vars].iter().map(|&v| v.max(0.0)).collect();
            let y = || place.iter().map(|&at| solver.solution.z[at]).collect();
            match solver.solution.status {
                SolverStatus::Solved => return Ok((x, y())),
                SolverStatus::AlmostSolved if accept(&x) => return Ok((x, y())),
                SolverStatus::AlmostSolved => {
                    last = format!("AlmostSolved, but its point misses a constraint by over {ALMOST_TOL:e} of it");
                }
                // At tight tolerances a feasible but degenerate program (a server with
                // none of a resource) can be misjudged; only the default settings decide.
                SolverStatus::PrimalInfeasible | SolverStatus::AlmostPrimalInfeasible if !tight => {
                    return Err(MultiError::Solver("the program is infeasible".into()));
                }
                status => last = format!("{status:?}"),
            }
        }
        Err(MultiError::Solver(last))
    }
}

/// Compressed sparse columns of the matrix whose rows are `rows` (duplicate entries summed).
fn csc(rows: &[Terms], cols: usize) -> CscMatrix<f64> {
    let mut by_col: Vec<Vec<(usize, f64)>> = vec![Vec::new(); cols];
    for (r, terms) in rows.iter().enumerate() {
        for &(c, v) in terms {
            match by_col[c].last_mut() {
                Some((last, sum)) if *last == r => *sum += v,
                _ => by_col[c].push((r, v)),
            }
        }
    }
    let mut colptr = vec![0];
    let (mut rowval, mut nzval) = (Vec::new(), Vec::new());
    for col in by_col {
        for (r, v) in col {
            rowval.push(r);
            nzval.push(v);
        }
        colptr.push(rowval.len());
    }
    CscMatrix::new(rows.len(), cols, colptr, rowval, nzval)
}

/// Adds the resource-division capacity rows `sum_n x[n][i] d[n][r] <= c[i][r]` of every
/// server `i` and resource `r`; `var(n, i)` is the variable of `x[n][i]`, `None` where user
/// `n` cannot run on server `i`.
pub fn capacity_rows(
    p: &mut Program,
    capacity: &[Vec<f64>],
    demand: &[Vec<f64>],
    var: impl Fn(usize, usize) -> Option<usize>,
) {
    for (i, caps) in capacity.iter().enumerate() {
        for (r, &c) in caps.iter().enumerate() {
            let terms: Terms = (0..demand.len())
                .filter(|&n| demand[n][r] > 0.0)
                .filter_map(|n| var(n, i).map(|v| (v, demand[n][r])))
                .collect();
            if !terms.is_empty() {
                p.le(terms, c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_small_lp_at_its_vertex() {
        // max x + y s.t. x + 2y <= 4, 3x + y <= 6  ->  (8/5, 6/5)
        let mut p = Program::new(2);
        p.maximize(0, 1.0);
        p.maximize(1, 1.0);
        p.le(vec![(0, 1.0), (1, 2.0)], 4.0);
        p.le(vec![(0, 3.0), (1, 1.0)], 6.0);
        let x = p.solve().expect("solvable");
        assert!((x[0] - 1.6).abs() < 1e-7 && (x[1] - 1.2).abs() < 1e-7, "{x:?}");
    }

    #[test]
    fn solves_a_log_program() {
        // max ln x + 2 ln y s.t. x + y <= 3  ->  (1, 2)
        let mut p = Program::new(2);
        p.maximize_log(1.0, vec![(0, 1.0)]);
        p.maximize_log(2.0, vec![(1, 1.0)]);
        p.le(vec![(0, 1.0), (1, 1.0)], 3.0);
        let x = p.solve().expect("solvable");
        assert!((x[0] - 1.0).abs() < 1e-6 && (x[1] - 2.0).abs() < 1e-6, "{x:?}");
    }

    #[test]
    fn column_generation_reaches_the_whole_programs_optimum() {
        // A placement program: 6 users on 5 servers of 2 resources, each user's level
        // x_n >= t, maximize t; every user starts with one server, the duals bring in more.
        let caps = [[4.0, 9.0], [7.0, 2.0], [5.0, 5.0], [1.0, 8.0], [6.0, 3.0]];
        let demand = [[1.0, 2.0], [2.0, 1.0], [1.0, 1.0], [3.0, 1.0], [1.0, 3.0], [2.0, 2.0]];
        let var = |n: usize, i: usize| n * 5 + i;
        let t = 30;
        let mut p = Program::new(31);
        p.maximize(t, 1.0);
        for (i, c) in caps.iter().enumerate() {
            for r in 0..2 {
                p.le((0..6).map(|n| (var(n, i), demand[n][r])).collect(), c[r]);
            }
        }
        for n in 0..6 {
            let mut terms: Terms = (0..5).map(|i| (var(n, i), 1.0)).collect();
            terms.push((t, -(n as f64 + 1.0)));
            p.ge(terms, 0.0);
        }
        let whole = p.solve().expect("solvable");
        let mut active: Vec<bool> = (0..31).map(|j| j == t || j % 5 == (j / 5) % 5).collect();
        let group: Vec<usize> = (0..31).map(|j| j / 5).collect();
        let (x, y) = p.solve_columns(&mut active, &group).expect("solvable");
        assert!((x[t] - whole[t]).abs() <= 1e-9 * whole[t], "{} vs {}", x[t], whole[t]);
        assert!(active.iter().filter(|&&a| a).count() > 7, "no variable joined: the test would not test");
        // Dual feasibility for t: the level rows' duals times the scales sum to 1.
        let rows = p.n_rows();
        let sum: f64 = (0..6).map(|n| y[rows - 6 + n] * (n as f64 + 1.0)).sum();
        assert!((sum - 1.0).abs() < 1e-6, "{sum}");
    }

    #[test]
    fn reports_infeasibility() {
        let mut p = Program::new(1);
        p.ge(vec![(0, 1.0)], 2.0);
        p.le(vec![(0, 1.0)], 1.0);
        assert!(matches!(p.solve(), Err(MultiError::Solver(_))));
    }
}
