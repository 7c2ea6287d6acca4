//! Dynamic DRF (Kash, Procaccia and Shah; Li, Liu, Zhang and Zhang; spec
//! `docs/spec/ddrf_bbf.md` Part A): `n` users arrive one at a time into one pooled
//! system whose capacity is normalized to 1; at arrival `k`, `k/n` of every resource may
//! be handed out, and nothing handed out is taken back. At each arrival the lowest
//! dominant shares rise together until some resource reaches `k/n`.
//!
//! Two algorithms compute the same steps: [`scan`], the exact event-driven water-filling
//! (A.4.2, the reference), and [`li`], Li et al.'s binary search for the threshold with
//! the spec's errata fixed (A.4.3). Both are generic over [`Scalar`] so the tests run
//! them in exact rationals.

use num_rational::BigRational;

use super::{Allocation, Instance, MultiError};

/// The arithmetic the algorithms need: a field with an order. `f64` for use,
/// `BigRational` for exact tests.
pub trait Scalar: Clone + PartialOrd + num_traits::Num {
    /// The number `num / den`.
    fn ratio(num: usize, den: usize) -> Self;
}

impl Scalar for f64 {
    fn ratio(num: usize, den: usize) -> Self {
        num as f64 / den as f64
    }
}

impl Scalar for BigRational {
    fn ratio(num: usize, den: usize) -> Self {
        BigRational::new(num.into(), den.into())
    }
}

/// The outcome of one arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct Step<T> {
    /// The water level `M^k`: the new user's dominant share, and the least of all.
    pub level: T,
    /// Dominant shares `x_i^k` of the users present (`1..=k`), by Lemma 1:
    /// `max(M^k, x_i^(k-1))`.
    pub shares: Vec<T>,
}

/// `min` over resources with `beta_r > 0` of `(cap - alpha_r) / beta_r` (the `+infinity`
/// rule of A.4.6 skips the others; every user demands some resource).
fn level<T: Scalar>(cap: &T, alpha: &[T], beta: &[T]) -> T {
    let mut best: Option<T> = None;
    for (a, b) in alpha.iter().zip(beta) {
        if *b > T::zero() {
            let v = (cap.clone() - a.clone()) / b.clone();
            if best.as_ref().is_none_or(|m| v < *m) {
                best = Some(v);
            }
        }
    }
    best.unwrap_or_else(T::zero)
}

fn lemma_1<T: Scalar>(prev: &[T], m: T) -> Step<T> {
    let mut shares: Vec<T> = prev.iter().map(|x| if *x > m { x.clone() } else { m.clone() }).collect();
    shares.push(m.clone());
    Step { level: m, shares }
}

/// The exact event-driven water-filling (A.4.2): at each arrival, start with only the
/// newcomer rising and add users from the lowest share up while the level passes them.
/// `d[k][r]` are normalized demands (`max_r d[k][r] = 1`) in arrival order; `n >= d.len()`.
///
/// Every step holds the shares of every user present, so the steps of `N` arrivals take
/// `N^2 / 2` numbers; [`scan_each`] hands them out one at a time instead.
pub fn scan<T: Scalar>(d: &[Vec<T>], n: usize) -> Vec<Step<T>> {
    let mut steps: Vec<Step<T>> = Vec::with_capacity(d.len());
    for k in 1..=d.len() {
        let step = arrival(d, n, k, steps.last().map_or(&[], |s| &s.shares));
        steps.push(step);
    }
    steps
}

/// [`scan`] in memory linear in the users: `each` sees every step in arrival order, and
/// only the last one is kept (it is returned; `None` without arrivals).
pub fn scan_each<T: Scalar>(d: &[Vec<T>], n: usize, mut each: impl FnMut(&Step<T>)) -> Option<Step<T>> {
    let mut last: Option<Step<T>> = None;
    for k in 1..=d.len() {
        let step = arrival(d, n, k, last.as_ref().map_or(&[], |s| &s.shares));
        each(&step);
        last = Some(step);
    }
    last
}

/// The step of [`scan`] at the arrival of user `k` (1-based), from `prev`, the shares
/// of the `k - 1` users before it.
fn arrival<T: Scalar>(d: &[Vec<T>], n: usize, k: usize, prev: &[T]) -> Step<T> {
    let m = d[0].len();
    let cap = T::ratio(k, n);
    let mut alpha: Vec<T> =
        (0..m).map(|r| prev.iter().zip(d).fold(T::zero(), |acc, (x, di)| acc + di[r].clone() * x.clone())).collect();
    let mut beta: Vec<T> = d[k - 1].clone();
    let mut t = k - 1; // 0-based index of the first rising user
    let mut lvl = level(&cap, &alpha, &beta);
    while t > 0 && lvl > prev[t - 1] {
        for r in 0..m {
            alpha[r] = alpha[r].clone() - d[t - 1][r].clone() * prev[t - 1].clone();
            beta[r] = beta[r].clone() + d[t - 1][r].clone();
        }
        t -= 1;
        lvl = level(&cap, &alpha, &beta);
    }
    lemma_1(prev, lvl)
}

/// Li et al.'s Algorithm 1 (A.4.3) with the errata fixed: the first test is `probe(1)`
/// (line 6 as printed is always true and can be infeasible), each next probe is the
/// midpoint of the current bracket, and the threshold may be the newcomer itself.
pub fn li<T: Scalar>(d: &[Vec<T>], n: usize) -> Vec<Step<T>> {
    let mut steps: Vec<Step<T>> = Vec::with_capacity(d.len());
    let m = d.first().map_or(0, Vec::len);
    for k in 1..=d.len() {
        let cap = T::ratio(k, n);
        // xp[1..=k] (1-based), xp[k] = 0.
        let mut xp: Vec<T> = vec![T::zero()];
        if let Some(s) = steps.last() {
            xp.extend(s.shares.iter().cloned());
        }
        xp.push(T::zero());
        let row = |i: usize| &d[i - 1];
        let sum = |from: usize, to: usize, weighted: bool| -> Vec<T> {
            (0..m)
                .map(|r| {
                    (from..=to).fold(T::zero(), |acc, i| {
                        let v = row(i)[r].clone();
                        acc + if weighted { v * xp[i].clone() } else { v }
                    })
                })
                .collect()
        };
        let probe =
            |alpha: &[T], beta: &[T], x: &T| (0..m).all(|r| alpha[r].clone() + beta[r].clone() * x.clone() <= cap);
        let all = sum(1, k, false);
        let (alpha, beta) = if k == 1 || probe(&vec![T::zero(); m], &all, &xp[1]) {
            (vec![T::zero(); m], all)
        } else {
            let (mut lb, mut ub) = (1, k);
            let mut tau = (lb + ub).div_ceil(2);
            let mut alpha = sum(1, tau - 1, true);
            let mut beta = sum(tau, k, false);
            while ub - lb > 1 {
                if probe(&alpha, &beta, &xp[tau]) {
                    ub = tau;
                    tau = (lb + ub).div_ceil(2);
                    for i in tau..ub {
                        for r in 0..m {
                            alpha[r] = alpha[r].clone() - row(i)[r].clone() * xp[i].clone();
                            beta[r] = beta[r].clone() + row(i)[r].clone();
                        }
                    }
                } else {
                    lb = tau;
                    tau = (lb + ub).div_ceil(2);
                    for i in lb..tau {
                        for r in 0..m {
                            alpha[r] = alpha[r].clone() + row(i)[r].clone() * xp[i].clone();
                            beta[r] = beta[r].clone() - row(i)[r].clone();
                        }
                    }
                }
            }
            (alpha, beta)
        };
        let lvl = level(&cap, &alpha, &beta);
        steps.push(lemma_1(&xp[1..k], lvl));
    }
    steps
}

/// Normalized demands `d[k][r] = D[k][r] / max_r D[k][r]` with `D[k][r] = demand / pooled`.
pub fn normalized(inst: &Instance) -> Vec<Vec<f64>> {
    let pooled = inst.pooled();
    (0..inst.n_users())
        .map(|k| {
            let share = inst.task_share(k);
            (0..inst.n_resources())
                .map(|r| if pooled[r] > 0.0 { inst.demand[k][r] / pooled[r] / share } else { 0.0 })
                .collect()
        })
        .collect()
}

/// Dynamic DRF on the instance: users arrive in file order into the pooled capacity
/// (`n` = the number of users, known in advance). Returns the allocation in tasks after
/// each arrival (for the users present). Weights, placement constraints and task limits
/// are outside the model (P1: symmetric users, one pool, unbounded demand).
///
/// The steps take memory quadratic in the users (10,000 users: 50 million task counts);
/// [`ddrf_final`] returns the last one only, in linear memory.
pub fn ddrf(inst: &Instance) -> Result<Vec<Allocation>, MultiError> {
    let mut steps = Vec::with_capacity(inst.n_users());
    ddrf_each(inst, |a| steps.push(a));
    Ok(steps)
}

/// The allocation after the last arrival of [`ddrf`], without keeping the others: memory
/// linear in the users.
pub fn ddrf_final(inst: &Instance) -> Result<Allocation, MultiError> {
    let (d, allocation) = pooled(inst);
    let last = scan_each(&d, inst.n_users(), |_| {});
    Ok(last.map_or_else(|| Allocation::pooled(Vec::new()), |s| allocation(&s)))
}

/// Calls `each` with the allocation after every arrival of [`ddrf`], in arrival order.
fn ddrf_each(inst: &Instance, mut each: impl FnMut(Allocation)) {
    let (d, allocation) = pooled(inst);
    scan_each(&d, inst.n_users(), |s| each(allocation(s)));
}

/// The instance's [`normalized`] demands, and a step's allocation: the users present
/// get their dominant shares in tasks.
fn pooled(inst: &Instance) -> (Vec<Vec<f64>>, impl Fn(&Step<f64>) -> Allocation) {
    let share: Vec<f64> = (0..inst.n_users()).map(|k| inst.task_share(k)).collect();
    let allocation =
        move |step: &Step<f64>| Allocation::pooled(step.shares.iter().zip(&share).map(|(x, s)| x / s).collect());
    (normalized(inst), allocation)
}
