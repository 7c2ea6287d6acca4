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

/// Placements per user that [`Filling::solve`]'s programs start from; the others join
/// as the duals ask for them (column generation).
const INITIAL_COLUMNS: usize = 2;

/// A rising user whose share of the dual of `t` (its level row's dual times its scale;
/// the shares of the rising users sum to 1) is at least this is stuck
/// ([`Filling::solve`]). The duals are accurate to about the solver's tolerance (1e-12 on
/// the rescaled program), far below it.
const STUCK_SHARE: f64 = 1e-7;

/// The placement variables of a filling: `var[n][i]` is the index of `x[n][i]` for the
/// allowed pairs, `count` of them; further variables (a level `t`) come after.
struct Vars {
    var: Vec<Vec<Option<usize>>>,
    count: usize,
    /// The user of each placement variable, then one group past the users for `t`.
    user: Vec<usize>,
}

impl Vars {
    fn new(allowed: &[Vec<bool>]) -> Self {
        let mut count = 0;
        let var = allowed
            .iter()
            .map(|row| {
                row.iter()
                    .map(|&a| {
                        a.then(|| {
                            count += 1;
                            count - 1
                        })
                    })
                    .collect()
            })
            .collect::<Vec<Vec<Option<usize>>>>();
        let mut user = vec![allowed.len(); count + 1];
        for (n, row) in var.iter().enumerate() {
            for &v in row.iter().flatten() {
                user[v] = n;
            }
        }
        Vars { var, count, user }
    }

    /// User `n`'s task total `sum_i x[n][i]` as terms.
    fn total(&self, n: usize) -> Vec<(usize, f64)> {
        self.var[n].iter().flatten().map(|&v| (v, 1.0)).collect()
    }

    /// The variables a column-generation sequence starts from ([`Program::solve_columns`]):
    /// [`INITIAL_COLUMNS`] placements of each user on servers spread evenly over its
    /// eligible ones (from an offset that differs between users, so that the users start
    /// spread over the servers), and every further variable (`extra` of them).
    fn initial_columns(&self, extra: usize) -> Vec<bool> {
        let mut active = vec![false; self.count + extra];
        active[self.count..].iter_mut().for_each(|a| *a = true);
        for (n, row) in self.var.iter().enumerate() {
            let own: Vec<usize> = row.iter().flatten().copied().collect();
            let k = own.len();
            for c in 0..INITIAL_COLUMNS.min(k) {
                // A fixed multiplicative hash of the user spreads the offsets.
                let offset = n.wrapping_mul(2_654_435_761) % k.max(1);
                active[own[(offset + c * k / INITIAL_COLUMNS) % k]] = true;
            }
        }
        active
    }

    /// User `n`'s task total in the solution `x`.
    fn value(&self, n: usize, x: &[f64]) -> f64 {
        self.var[n].iter().flatten().map(|&v| x[v]).sum()
    }
}

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
    ///
    /// Each round is one program for the highest common level `t` of the users still
    /// rising, in which their task limits do not count: every user whose limit is below
    /// that `t` stops at its limit, all of them at once, and the round is solved again.
    /// When no limit is below `t`, every user whose level row has a clearly positive dual
    /// in the program cannot rise above `t` (complementary slackness), and all of them
    /// are frozen at `t` together; at least one is, since the duals of the rising users'
    /// rows sum to 1. The programs are solved by column generation
    /// ([`Program::solve_columns`]): each user starts with two of its servers, and a
    /// server joins when the duals price it below what the user's level is worth, so
    /// that the programs hold a few placements per user instead of every allowed one.
    ///
    /// Issue 17: [`Filling::solve_reference`] froze one limit per round and asked one
    /// program per user and round (about a million programs at 1,000 users); the version
    /// before this one asked one program per distinct level for the users that could
    /// still rise, each over all placements (46,000 variables at 1,000 users on 100
    /// servers, 1.5 to 3 s each in the interior-point method). This is one program per
    /// distinct level, of a few thousand variables.
    pub fn solve(&self) -> Result<Allocation, MultiError> {
        let n_users = self.demand.len();
        let vars = Vars::new(&self.allowed);
        let mut level = self.initial_level(&vars);
        // The variables the programs use (column generation), shared along the sequence:
        // the placements, then `t`.
        let mut columns = vars.initial_columns(1);
        // The level at which a user's task limit stops it.
        let limit_level = |n: usize| self.cap[n].map_or(f64::INFINITY, |c| c / self.scale[n]);
        let mut last: Option<Vec<f64>> = None;
        while level.iter().any(Option::is_none) {
            // The highest common level of the unfrozen users, their limits aside.
            let (t_star, x, share) = self.common_level(&vars, &level, &|n| level[n].is_some(), Some(&mut columns))?;
            // Every user whose limit is at or below it stops there, all at once.
            let limited: Vec<usize> =
                (0..n_users).filter(|&n| level[n].is_none() && limit_level(n) <= t_star * (1.0 + 1e-7)).collect();
            if !limited.is_empty() {
                for n in limited {
                    level[n] = Some(limit_level(n));
                }
                last = None;
                continue;
            }
            last = Some(x[..vars.count].to_vec());
            // Who cannot rise above t_star: the users whose level row has a clearly
            // positive dual. Such a row is tight at every optimum of the program (complementary
            // slackness), so the user cannot exceed t_star while the others keep theirs;
            // and the duals of the users still rising sum to 1 (the dual row of `t`), so
            // at least one is frozen per round. A user that is stuck but whose dual here
            // is 0 is frozen in the next round, which then finds the same level again.
            let top = share.iter().cloned().fold(0.0, f64::max);
            for n in 0..n_users {
                if level[n].is_none() && (share[n] >= STUCK_SHARE || share[n] >= top) {
                    level[n] = Some(t_star);
                }
            }
        }
        let last = match last {
            Some(x) => x,
            None => {
                // The last round stopped users at their limits: place everyone at its level.
                let mut p = self.base(&vars, 0, &|_| true);
                for n in 0..n_users {
                    p.ge(vars.total(n), self.floor(n, level[n].unwrap_or(0.0)));
                    for (v, _) in vars.total(n) {
                        p.maximize(v, 1.0 / self.scale[n]);
                    }
                }
                p.solve_columns(&mut columns[..vars.count], &vars.user[..vars.count])?.0
            }
        };
        self.finish(&vars, &level, &last)
    }

    /// The setup every filling starts from: users that can run nothing (no eligible
    /// server, or a task limit of 0) sit at level 0 from the start (they would pin the
    /// common level to 0); the others are unfrozen.
    fn initial_level(&self, vars: &Vars) -> Vec<Option<f64>> {
        (0..self.demand.len())
            .map(|n| (self.cap[n] == Some(0.0) || vars.var[n].iter().all(Option::is_none)).then_some(0.0))
            .collect()
    }

    /// A program over the placement variables and `extra` more: the capacity rows, and
    /// the task-limit rows of the users `limited` selects.
    fn base(&self, vars: &Vars, extra: usize, limited: &dyn Fn(usize) -> bool) -> Program {
        let mut p = Program::new(vars.count + extra);
        capacity_rows(&mut p, self.capacity, self.demand, |n, i| vars.var[n][i]);
        for n in 0..self.demand.len() {
            if let Some(c) = self.cap[n].filter(|_| limited(n)) {
                p.le(vars.total(n), c);
            }
        }
        p
    }

    /// The highest common level `t` of the unfrozen users, frozen users held at their
    /// levels, with the task limits of the users `limited` selects: `t` and the
    /// solution (placement variables, then `t`).
    fn common_level(
        &self,
        vars: &Vars,
        level: &[Option<f64>],
        limited: &dyn Fn(usize) -> bool,
        columns: Option<&mut [bool]>,
    ) -> Result<(f64, Vec<f64>, Vec<f64>), MultiError> {
        let t = vars.count;
        let mut p = self.base(vars, 1, limited);
        p.maximize(t, 1.0);
        let first = p.n_rows();
        for (n, l) in level.iter().enumerate() {
            let mut terms = vars.total(n);
            match *l {
                Some(l) => p.ge(terms, self.floor(n, l)),
                None => {
                    terms.push((t, -self.scale[n]));
                    p.ge(terms, 0.0);
                }
            }
        }
        let (x, y) = match columns {
            Some(columns) => p.solve_columns(columns, &vars.user[..columns.len()])?,
            None => p.solve_with_duals()?,
        };
        // The row of user n is `first + n`; only the rising users' rows hold `t`.
        let share =
            (0..level.len()).map(|n| if level[n].is_none() { y[first + n] * self.scale[n] } else { 0.0 }).collect();
        Ok((x[t], x, share))
    }

    /// The floor that keeps user `n` at level `l` in a later program (less
    /// [`FLOOR_SLACK`]).
    fn floor(&self, n: usize, l: f64) -> f64 {
        self.scale[n] * l * (1.0 - FLOOR_SLACK)
    }

    /// Whether `v` tasks put user `n` clearly above level `t_star` (by more than the
    /// programs' rounding).
    fn exceeds(&self, n: usize, v: f64, t_star: f64) -> bool {
        v > self.scale[n] * t_star * (1.0 + 1e-7) + 1e-9
    }

    /// The users of `candidates` that cannot rise above `t_star` alone while every other
    /// user keeps its level (the rest at `t_star`): one program each.
    fn stuck_one_by_one(
        &self,
        vars: &Vars,
        candidates: &[usize],
        level: &[Option<f64>],
        t_star: f64,
    ) -> Result<Vec<usize>, MultiError> {
        let mut stuck = Vec::new();
        for &n in candidates {
            let mut p = self.base(vars, 0, &|_| true);
            for (v, c) in vars.total(n) {
                p.maximize(v, c);
            }
            for m in 0..self.demand.len() {
                let l = match level[m] {
                    Some(l) => l,
                    None if m != n => t_star,
                    None => continue,
                };
                p.ge(vars.total(m), self.floor(m, l));
            }
            let y = p.solve()?;
            if !self.exceeds(n, vars.value(n, &y), t_star) {
                stuck.push(n);
            }
        }
        Ok(stuck)
    }

    /// The allocation `last` (over the placement variables), refused if a user came back
    /// far below its level.
    fn finish(&self, vars: &Vars, level: &[Option<f64>], last: &[f64]) -> Result<Allocation, MultiError> {
        debug_assert_eq!(last.len(), vars.count);
        let n_users = self.demand.len();
        let n_servers = self.capacity.len();
        // Every program of the sequence kept the frozen users at their levels; a user the
        // last one left far below its own (the solver's tolerance, measured against the
        // largest numbers of the program, swallowed a user of 1e-6 tasks next to
        // resources of 1e3 units) is an error, not an allocation.
        for n in 0..n_users {
            let got = vars.value(n, last);
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
            (0..n_users).map(|n| (0..n_servers).map(|i| vars.var[n][i].map_or(0.0, |v| last[v])).collect()).collect();
        Ok(Allocation::placed(per_server))
    }

    /// The procedure [`Filling::solve`] replaced, kept as its reference in the tests:
    /// each round one program for the highest common level with every task limit in
    /// it, then one program per rising user to ask whether it can exceed that level.
    /// Programs in the thousands at a few hundred users; same allocation.
    pub fn solve_reference(&self) -> Result<Allocation, MultiError> {
        let vars = Vars::new(&self.allowed);
        let mut level = self.initial_level(&vars);
        let mut last = vec![0.0; vars.count];
        while level.iter().any(Option::is_none) {
            // The highest common level of the unfrozen users, every task limit in it.
            let (t_star, x, _) = self.common_level(&vars, &level, &|_| true, None)?;
            last = x[..vars.count].to_vec();
            // Which unfrozen users cannot exceed it alone? If none (rounding), all stop.
            let unfrozen: Vec<usize> = (0..level.len()).filter(|&n| level[n].is_none()).collect();
            let mut newly = self.stuck_one_by_one(&vars, &unfrozen, &level, t_star)?;
            if newly.is_empty() {
                newly = unfrozen;
            }
            for n in newly {
                level[n] = Some(t_star);
            }
        }
        self.finish(&vars, &level, &last)
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

impl Baseline {
    /// The scale `w_n` of each user's level on the instance.
    pub fn scale(self, inst: &Instance) -> Vec<f64> {
        (0..inst.n_users())
            .map(|n| {
                let phi = inst.weight[n];
                match self {
                    Baseline::CDrfh => phi / inst.task_share(n),
                    Baseline::Tsf => phi * (0..inst.n_servers()).map(|i| inst.monopoly(n, i, false)).sum::<f64>(),
                    Baseline::Cdrf => phi * (0..inst.n_servers()).map(|i| inst.monopoly(n, i, true)).sum::<f64>(),
                }
            })
            .collect()
    }
}

/// Runs a baseline on the instance (placement constraints and task limits honoured).
pub fn baseline(inst: &Instance, which: Baseline) -> Result<Allocation, MultiError> {
    Filling::new(inst, which.scale(inst)).solve()
}
