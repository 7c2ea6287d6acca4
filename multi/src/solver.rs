//! The one place that talks to the convex solver (Clarabel, a pure-Rust interior-point
//! method). Policies state linear programs, optionally with weighted-log terms in the
//! objective (the Eisenberg-Gale programs of PS-DSF TDM and bottleneck-based fairness), as
//! rows over non-negative variables; this module turns them into Clarabel's conic form.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};

use super::MultiError;

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
    pub fn solve(&self) -> Result<Vec<f64>, MultiError> {
        let n = self.vars + self.logs.len();
        // Clarabel: minimize q·z s.t. A z + s = b, s in cones (in row order).
        // Rows of A as sparse terms (the programs are sparse: a dense A of a few thousand
        // users would not fit in memory).
        let mut a: Vec<Terms> = Vec::new();
        let mut b = Vec::new();
        let mut cones = Vec::new();
        let row = |terms: &Terms, sign: f64| -> Terms { terms.iter().map(|&(v, c)| (v, sign * c)).collect() };
        let eqs: Vec<_> = self.rows.iter().filter(|r| r.1 == Sense::Eq).collect();
        if !eqs.is_empty() {
            for (terms, _, rhs) in &eqs {
                a.push(row(terms, 1.0));
                b.push(*rhs);
            }
            cones.push(SupportedConeT::ZeroConeT(eqs.len()));
        }
        let mut nonneg = 0;
        for (terms, _, rhs) in self.rows.iter().filter(|r| r.1 == Sense::Le) {
            a.push(row(terms, 1.0));
            b.push(*rhs);
            nonneg += 1;
        }
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
            match solver.solution.status {
                SolverStatus::Solved | SolverStatus::AlmostSolved => {
                    return Ok(solver.solution.x[..self.vars].iter().map(|&v| v.max(0.0)).collect());
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
    fn reports_infeasibility() {
        let mut p = Program::new(1);
        p.ge(vec![(0, 1.0)], 2.0);
        p.le(vec![(0, 1.0)], 1.0);
        assert!(matches!(p.solve(), Err(MultiError::Solver(_))));
    }
}
