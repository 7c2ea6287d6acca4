//! Dominant Resource Fairness on one pooled server (Ghodsi et al. 2011; spec A.4):
//! weighted max-min of dominant shares `x_n * max_r d[n][r] / C[r]`, by exact
//! event-driven progressive filling. Servers are pooled, so placement constraints do
//! not apply; task limits do.

use super::{Allocation, Instance, EPS};

/// DRF allocation (tasks per user) from the pooled capacity.
///
/// All unfrozen users' weighted dominant shares `s_n / phi_n` rise together as a level
/// `t`; a user freezes when a resource it demands saturates or it reaches `max_tasks`.
pub fn drf(inst: &Instance) -> Allocation {
    let pooled = inst.pooled();
    let n_users = inst.n_users();
    let m = inst.n_resources();
    // Tasks per unit of level: s_n = phi_n t  <=>  x_n = phi_n t / task_share_n.
    let rate: Vec<f64> = (0..n_users).map(|n| inst.weight[n] / inst.task_share(n)).collect();
    let mut x = vec![0.0; n_users];
    let mut active: Vec<bool> = rate.iter().map(|r| r.is_finite() && *r > 0.0).collect();
    for n in 0..n_users {
        if inst.max_tasks[n] == Some(0.0) {
            active[n] = false;
        }
    }
    while active.iter().any(|&a| a) {
        let mut fixed = vec![0.0; m];
        let mut slope = vec![0.0; m];
        for n in 0..n_users {
            for r in 0..m {
                if active[n] {
                    slope[r] += rate[n] * inst.demand[n][r];
                } else {
                    fixed[r] += x[n] * inst.demand[n][r];
                }
            }
        }
        let saturates = |r: usize| (slope[r] > 0.0).then(|| ((pooled[r] - fixed[r]) / slope[r]).max(0.0));
        let caps_at = |n: usize| inst.max_tasks[n].map(|c| c / rate[n]);
        let mut t = f64::INFINITY;
        for r in 0..m {
            if let Some(tr) = saturates(r) {
                t = t.min(tr);
            }
        }
        for n in (0..n_users).filter(|&n| active[n]) {
            if let Some(tc) = caps_at(n) {
                t = t.min(tc);
            }
        }
        let near = |v: f64| v <= t * (1.0 + EPS);
        let full: Vec<usize> = (0..m).filter(|&r| saturates(r).is_some_and(near)).collect();
        for n in 0..n_users {
            if !active[n] {
                continue;
            }
            if let Some(tc) = caps_at(n).filter(|&tc| near(tc)) {
                x[n] = inst.max_tasks[n].unwrap_or(rate[n] * tc);
                active[n] = false;
            } else if full.iter().any(|&r| inst.demand[n][r] > 0.0) {
                x[n] = rate[n] * t;
                active[n] = false;
            }
        }
    }
    Allocation::pooled(x)
}
