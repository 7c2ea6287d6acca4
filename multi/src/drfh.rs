//! DRFH, Dominant Resource Fairness with heterogeneous servers (Wang, Li, Liang; spec
//! Part B): max-min of global dominant shares under per-server capacities.
//!
//! - [`drfh_lp`]: the exact allocation, LP (7), weighted (B.2.2) and with finite task
//!   counts (B.2.3). The paper's model: every demand positive, no placement constraints.
//! - [`drfh`]: the policy: LP (7) inside the paper's model, and outside it (zero demands,
//!   placement constraints) the lexicographic relaxation C-DRFH that B.2.1 prescribes.
//! - [`place_tasks`]: the task-level First-Fit and Best-Fit heuristics (B.3): whole
//!   tasks, one at a time, to the user with the lowest weighted global dominant share.

use super::lexmaxmin::{baseline, Baseline};
use super::solver::{capacity_rows, Program};
use super::{Allocation, Instance, MultiError};

/// True if the instance is inside DRFH's model: positive demands, no placement constraints.
pub fn in_paper_model(inst: &Instance) -> bool {
    inst.unconstrained() && inst.demand.iter().all(|d| d.iter().all(|&v| v > 0.0))
}

/// LP (7) with weights and task limits: every user's weighted global dominant share
/// `x_n * task_share_n / phi_n` is the same `g`, as high as the servers allow; users that
/// reach `max_tasks` are fixed and the others keep rising (B.2.3, only totals of fixed
/// users are kept, their placement may move). Returns the level `g` the free users reach
/// (the largest task limit's level when every user is fixed) and the allocation. Ignores
/// placement constraints, as the paper's model does.
///
/// The level is found by bisection over the task limits' levels instead of one program
/// per limit reached: the set of per-user totals the servers can hold is closed
/// downwards, so "every user at `min(phi_n * l, its limit)`" is feasible for every `l` up
/// to the answer and for none above it. [`reaches`] tests one `l` with one program; the
/// last program fixes the users whose limits lie below the bracket found and raises the
/// others inside it. Same level and totals as raising it limit by limit (spec B.2.3), in
/// about `log2(limits) + 1` programs instead of one per distinct limit below the level
/// (at 1,000 users on 100 servers with limits on half of them: dozens).
pub fn drfh_lp(inst: &Instance) -> Result<(f64, Allocation), MultiError> {
    let n_users = inst.n_users();
    let share: Vec<f64> = (0..n_users).map(|n| inst.task_share(n)).collect();
    // The level at which each limited user reaches its limit.
    let limit: Vec<Option<f64>> =
        (0..n_users).map(|n| inst.max_tasks[n].map(|t| t * share[n] / inst.weight[n])).collect();
    let mut levels: Vec<f64> = limit.iter().flatten().copied().collect();
    levels.sort_by(f64::total_cmp);
    levels.dedup();
    let mut active = spread_columns(inst);
    // Largest `k` such that the level of the `k`-th limit (0 for `k = 0`) is reached.
    let (mut lo, mut hi) = (0, levels.len());
    let mut reached: Option<Vec<f64>> = None;
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        match reaches(inst, &share, &limit, levels[mid - 1], &mut active)? {
            Some(x) => (lo, reached) = (mid, Some(x)),
            None => hi = mid - 1,
        }
    }
    // Every user at its limit: the last reached program's placement is the answer.
    if let Some(x) = reached.filter(|_| lo == levels.len() && limit.iter().all(Option::is_some)) {
        return Ok((levels[lo - 1], placed(inst, &x)));
    }
    let below = if lo == 0 { f64::NEG_INFINITY } else { levels[lo - 1] };
    let fixed: Vec<Option<f64>> = limit.iter().map(|l| l.filter(|&l| l <= below)).collect();
    let x = raise(inst, &share, &fixed, levels.get(lo).copied(), &mut active)?;
    Ok((x[inst.n_users() * inst.n_servers()], placed(inst, &x)))
}

/// The variables of DRFH's programs: user `n` on server `i` at `n * servers + i`, then the
/// level. Column generation starts each user on two servers spread over the cluster and
/// lets others join as the duals price them (`Program::solve_columns`), so that a program
/// holds a few placements per user instead of every one (100,000 at 1,000 users on 100
/// servers). Returns the active flags, the level's set.
fn spread_columns(inst: &Instance) -> Vec<bool> {
    let (n_users, n_servers) = (inst.n_users(), inst.n_servers());
    let mut active = vec![false; n_users * n_servers + 1];
    active[n_users * n_servers] = true;
    for n in 0..n_users {
        let offset = n.wrapping_mul(2_654_435_761) % n_servers;
        for c in 0..2.min(n_servers) {
            active[n * n_servers + (offset + c * n_servers / 2) % n_servers] = true;
        }
    }
    active
}

/// DRFH's programs over the placements of [`spread_columns`] and one more variable `v`
/// (the level, or a fraction of the targets): maximize `v` subject to the servers'
/// capacities, `v <= bound`, and for each user `n`, with `(per_v, fixed) = row(n)`, its
/// weighted global dominant share `share_n * sum_i x[n][i] = per_v * v + fixed`; solved
/// by column generation from `active`, each user's placements one group.
fn solve_level(
    inst: &Instance,
    share: &[f64],
    bound: Option<f64>,
    row: impl Fn(usize) -> (f64, f64),
    active: &mut [bool],
) -> Result<Vec<f64>, MultiError> {
    let (n_users, n_servers) = (inst.n_users(), inst.n_servers());
    let v = n_users * n_servers;
    let mut p = Program::new(v + 1);
    p.maximize(v, 1.0);
    if let Some(bound) = bound {
        p.le(vec![(v, 1.0)], bound);
    }
    capacity_rows(&mut p, &inst.capacity, &inst.demand, |n, i| Some(n * n_servers + i));
    for n in 0..n_users {
        let (per_v, fixed) = row(n);
        let mut terms: Vec<_> = (0..n_servers).map(|i| (n * n_servers + i, share[n])).collect();
        if per_v != 0.0 {
            terms.push((v, -per_v));
        }
        p.eq(terms, fixed);
    }
    let group: Vec<usize> = (0..=v).map(|j| if j == v { n_users } else { j / n_servers }).collect();
    Ok(p.solve_columns(active, &group)?.0)
}

/// Whether the servers hold every user at weighted global dominant share
/// `min(level, its limit's level)`: the largest fraction `mu <= 1` of those totals that
/// fits, reached if `mu` is 1 to the solver's tolerance (the placement then, `None` if
/// not). Always feasible (`mu = 0`), so column generation never meets an infeasible
/// restricted program.
fn reaches(
    inst: &Instance,
    share: &[f64],
    limit: &[Option<f64>],
    level: f64,
    active: &mut [bool],
) -> Result<Option<Vec<f64>>, MultiError> {
    let target = |n: usize| inst.weight[n] * limit[n].map_or(level, |l| l.min(level));
    let x = solve_level(inst, share, Some(1.0), |n| (target(n), 0.0), active)?;
    Ok((x[inst.n_users() * inst.n_servers()] >= 1.0 - LEVEL_TOL).then_some(x))
}

/// LP (7) with the users of `fixed` at their limits' levels and the others at one common
/// level `g`, as high as the servers allow and at most `ceiling`.
fn raise(
    inst: &Instance,
    share: &[f64],
    fixed: &[Option<f64>],
    ceiling: Option<f64>,
    active: &mut [bool],
) -> Result<Vec<f64>, MultiError> {
    let row = |n: usize| match fixed[n] {
        Some(level) => (0.0, inst.weight[n] * level),
        None => (inst.weight[n], 0.0),
    };
    solve_level(inst, share, ceiling, row, active)
}

/// How far below 1 [`reaches`]'s fraction may be and still count as reached: the
/// interior-point solution's relative accuracy (as the task-limit test of spec B.2.3).
const LEVEL_TOL: f64 = 1e-7;

/// The placements of a program's solution as an allocation.
fn placed(inst: &Instance, x: &[f64]) -> Allocation {
    let n_servers = inst.n_servers();
    Allocation::placed((0..inst.n_users()).map(|n| x[n * n_servers..(n + 1) * n_servers].to_vec()).collect())
}

/// DRFH: LP (7) inside the paper's model, C-DRFH (lexicographic max-min of global
/// dominant shares with placement constraints) outside it. Both honour task limits.
pub fn drfh(inst: &Instance) -> Result<Allocation, MultiError> {
    if in_paper_model(inst) {
        Ok(drfh_lp(inst)?.1)
    } else {
        baseline(inst, Baseline::CDrfh)
    }
}

/// Which server a task-level heuristic picks among those the task fits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// The first server in index order.
    First,
    /// The server whose free-capacity shape is closest (L1) to the task's (eq. 9).
    Best,
}

/// Tolerance of the fit test on normalized shares: repeated subtraction of shares like
/// 1/70 leaves residues like -6e-16 that must not reject the last task (spec B.3).
const FIT_EPS: f64 = 1e-12;

/// Most whole tasks [`place_tasks`] places before it refuses the instance (one decision
/// per task: an instance of tiny tasks on big servers would run for hours).
pub const MAX_PLACED: u64 = 10_000_000;

/// Task-level progressive filling (B.3): while some user has pending tasks (up to
/// `max_tasks`, unbounded otherwise) and fits somewhere, place one whole task of the user
/// with the lowest weighted global dominant share (ties: lowest index) on the server
/// chosen by `fit` (ties: lowest index) among its eligible servers. A user that fits
/// nowhere is skipped from then on. Returns whole task counts per server; refuses
/// instances that would place more than [`MAX_PLACED`] tasks.
pub fn place_tasks(inst: &Instance, fit: Fit) -> Result<Allocation, MultiError> {
    let (n_users, n_servers, m) = (inst.n_users(), inst.n_servers(), inst.n_resources());
    let pooled = inst.pooled();
    let norm =
        |v: &[f64]| -> Vec<f64> { (0..m).map(|r| if pooled[r] > 0.0 { v[r] / pooled[r] } else { 0.0 }).collect() };
    let demand: Vec<Vec<f64>> = inst.demand.iter().map(|d| norm(d)).collect();
    let mut avail: Vec<Vec<f64>> = inst.capacity.iter().map(|c| norm(c)).collect();
    let share: Vec<f64> = demand.iter().map(|d| d.iter().cloned().fold(0.0, f64::max)).collect();
    let mut run = vec![0u64; n_users];
    let mut per_server = vec![vec![0u64; n_servers]; n_users];
    let mut blocked = vec![false; n_users];
    let mut placed = 0u64;
    loop {
        let pending = |n: usize| inst.max_tasks[n].is_none_or(|t| (run[n] as f64) < t.floor());
        let pick = (0..n_users).filter(|&n| !blocked[n] && pending(n)).min_by(|&a, &b| {
            let ga = run[a] as f64 * share[a] / inst.weight[a];
            let gb = run[b] as f64 * share[b] / inst.weight[b];
            ga.total_cmp(&gb).then(a.cmp(&b))
        });
        let Some(n) = pick else { break };
        let fits = |l: usize| inst.eligible[n][l] && (0..m).all(|r| demand[n][r] <= avail[l][r] + FIT_EPS);
        let candidates = (0..n_servers).filter(|&l| fits(l));
        let chosen = match fit {
            Fit::First => candidates.into_iter().next(),
            Fit::Best => {
                // Normalize both shapes by the first resource the user demands (CPU in
                // the paper, where every demand is positive).
                let r0 = (0..m).find(|&r| demand[n][r] > 0.0).unwrap_or(0);
                let h = |l: usize| -> f64 {
                    if avail[l][r0] <= 0.0 {
                        return f64::INFINITY;
                    }
                    (0..m).map(|r| (demand[n][r] / demand[n][r0] - avail[l][r] / avail[l][r0]).abs()).sum()
                };
                candidates.min_by(|&a, &b| h(a).total_cmp(&h(b)).then(a.cmp(&b)))
            }
        };
        match chosen {
            Some(l) => {
                for r in 0..m {
                    avail[l][r] -= demand[n][r];
                }
                run[n] += 1;
                per_server[n][l] += 1;
                placed += 1;
                if placed > MAX_PLACED {
                    return Err(MultiError::Unsupported(format!(
                        "more than {MAX_PLACED} whole tasks to place one by one; set max_tasks or use drfh"
                    )));
                }
            }
            None => blocked[n] = true,
        }
    }
    Ok(Allocation::placed(per_server.iter().map(|row| row.iter().map(|&t| t as f64).collect()).collect()))
}
