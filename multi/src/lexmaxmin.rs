//! Weighted lexicographic max-min ("progressive filling with freezing") under per-server
//! capacities, placement constraints and task limits: the reference procedure of spec A.4,
//! by linear programs. C-DRFH, TSF, CDRF and DRFH with constraints or finite tasks are
//! this procedure with different scales; DRF's closed-form filling is checked against it.

use super::solver::{capacity_rows, Program};
use super::{Allocation, Instance, MultiError};

/// Relative slack of the floors that keep frozen users at their levels in the later
/// programs (so that rounding in one program cannot make the next infeasible).
///
/// It was [`EPS`](super::EPS) = 1e-9; but the slack of a large user's floor is room a small user
/// can take: with users 1e10 apart in size, 1e-9 of the large user's resource was six
/// times the small user's whole level, so the small user was not frozen where it
/// should have been and its allocation came out several times too large, or (the last
/// program then missing its floor) 0. The programs are rescaled and solved to 1e-12
/// ([`Program::solve`](super::solver::Program::solve)), so 1e-12 is enough slack; on
/// random instances at the bounds of the instance ranges it cut the allocations off by
/// more than 1e-3 from DRF's closed form from 6% to under 3%, with no more solver errors.
const FLOOR_SLACK: f64 = 1e-12;

/// A filling problem: the level of user `n` is `x_n / scale[n]`.
#[derive(Debug, Clone)]
pub struct Filling<'a> {
    /// Server capacities `capacity[i][r]`.
    pub capacity: &'a [Vec<f64>],
    /// Per-task demands `demand[n][r]`.
    pub demand: &'a [Vec<f64>],
    /// `allowed[n][i]`: may user `n` run on server `i`.
    pub allowed: Vec<Vec<bool>>,
    /// Scale `w_n > 0` of each user's level.
    pub scale: Vec<f64>,
    /// Task limit per user.
    pub cap: Vec<Option<f64>>,
}

impl<'a> Filling<'a> {
    /// The instance's servers and demands with its placement constraints and task limits.
    pub fn new(inst: &'a Instance, scale: Vec<f64>) -> Self {
        Filling {
            capacity: &inst.capacity,
            demand: &inst.demand,
            allowed: inst.eligible.clone(),
            scale,
            cap: inst.max_tasks.clone(),
        }
    }

    /// Solves the filling: every user's level is as high as possible, lexicographically
    /// from the lowest. The split across servers is one of possibly many.
    pub fn solve(&self) -> Result<Allocation, MultiError> {
        let n_users = self.demand.len();
        let n_servers = self.capacity.len();
        // Variable index of x[n][i], for allowed pairs; the level t comes last.
        let mut var = vec![vec![None; n_servers]; n_users];
        let mut vars = 0;
        for n in 0..n_users {
            for i in 0..n_servers {
                if self.allowed[n][i] {
                    var[n][i] = Some(vars);
                    vars += 1;
                }
            }
        }
        let t = vars;
        let total = |n: usize| -> Vec<(usize, f64)> { var[n].iter().flatten().map(|&v| (v, 1.0)).collect() };
        let base = |with_t: bool| {
            let mut p = Program::new(if with_t { vars + 1 } else { vars });
            capacity_rows(&mut p, self.capacity, self.demand, |n, i| var[n][i]);
            for n in 0..n_users {
                if let Some(c) = self.cap[n] {
                    p.le(total(n), c);
                }
            }
            p
        };
        // Users that can run nothing sit at level 0 from the start (they would pin t to 0).
        let mut level: Vec<Option<f64>> = (0..n_users)
            .map(|n| (self.cap[n] == Some(0.0) || var[n].iter().all(Option::is_none)).then_some(0.0))
            .collect();
        let mut last = vec![0.0; vars];
        while level.iter().any(Option::is_none) {
            // The highest common level of the unfrozen users.
            let mut p = base(true);
            p.maximize(t, 1.0);
            for n in 0..n_users {
                let mut terms = total(n);
                match level[n] {
                    Some(l) => p.ge(terms, self.scale[n] * l * (1.0 - FLOOR_SLACK)),
                    None => {
                        terms.push((t, -self.scale[n]));
                        p.ge(terms, 0.0);
                    }
                }
            }
            let x = p.solve()?;
            let t_star = x[t];
            last = x[..vars].to_vec();
            // Which unfrozen users cannot exceed it alone?
            let mut froze = false;
            let unfrozen: Vec<usize> = (0..n_users).filter(|&n| level[n].is_none()).collect();
            let mut newly = Vec::new();
            for &n in &unfrozen {
                let mut p = base(false);
                for (v, c) in total(n) {
                    p.maximize(v, c);
                }
                for m in 0..n_users {
                    let floor = match level[m] {
                        Some(l) => l,
                        None if m != n => t_star,
                        None => continue,
                    };
                    p.ge(total(m), self.scale[m] * floor * (1.0 - FLOOR_SLACK));
                }
                let y = p.solve()?;
                let v: f64 = total(n).iter().map(|&(k, _)| y[k]).sum();
                if v <= self.scale[n] * t_star * (1.0 + 1e-7) + 1e-9 {
                    newly.push(n);
                    froze = true;
                }
            }
            if !froze {
                newly = unfrozen;
            }
            for n in newly {
                level[n] = Some(t_star);
            }
        }
        // Every program of the sequence kept the frozen users at their levels; a user the
        // last one left far below its own (the solver's tolerance, measured against the
        // largest numbers of the program, swallowed a user of 1e-6 tasks next to
        // resources of 1e3 units) is an error, not an allocation.
        for n in 0..n_users {
            let got: f64 = total(n).iter().map(|&(v, _)| last[v]).sum();
            let want = level[n].map_or(0.0, |l| self.scale[n] * l);
            if got < 0.5 * want {
                return Err(MultiError::Solver(format!(
                    "user #{} came back with {got:e} tasks, below half of its level's {want:e}: \
                     the programs are not resolved at this instance's scale",
                    n + 1
                )));
            }
        }
        let per_server =
            (0..n_users).map(|n| (0..n_servers).map(|i| var[n][i].map_or(0.0, |v| last[v])).collect()).collect();
        Ok(Allocation::placed(per_server))
    }
}

/// The lexicographic max-min baselines of [PSDSF] (spec A.4), by their scale `w_n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// C-DRFH: global dominant share on pooled capacities, `w_n = phi_n / dsh_n`.
    CDrfh,
    /// TSF: `w_n = phi_n * sum_i gamma_nc[n][i]`, gamma ignoring explicit constraints.
    Tsf,
    /// CDRF: `w_n = phi_n * sum_i gamma[n][i]` (the weighting by phi as for TSF).
    Cdrf,
}

/// Runs a baseline on the instance (placement constraints and task limits honoured).
pub fn baseline(inst: &Instance, which: Baseline) -> Result<Allocation, MultiError> {
    let scale = (0..inst.n_users())
        .map(|n| {
            let phi = inst.weight[n];
            match which {
                Baseline::CDrfh => phi / inst.task_share(n),
                Baseline::Tsf => phi * (0..inst.n_servers()).map(|i| inst.monopoly(n, i, false)).sum::<f64>(),
                Baseline::Cdrf => phi * (0..inst.n_servers()).map(|i| inst.monopoly(n, i, true)).sum::<f64>(),
            }
        })
        .collect();
    Filling::new(inst, scale).solve()
}
