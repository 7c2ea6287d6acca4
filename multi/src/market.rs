//! The exact PS-DSF TDM allocation: from a guess of who runs where (issue 17), and
//! without one (issue 39).
//!
//! TDM PS-DSF is the equilibrium of a linear Fisher market (spec A.3.4): users are
//! buyers with budgets `phi_n`, servers are goods (one unit of time each) with prices
//! `p_i = 1 / S_i`, where `S_i` is the server's level, and user `n` values a unit of
//! server `i`'s time at `gamma[n][i]` tasks. At the equilibrium every user with time on
//! server `i` has level `L[n][i] = x_n / (phi_n gamma[n][i]) = S_i`, no user has a level
//! below `S_i` anywhere (Theorem 2), and each server's time is all sold.
//!
//! The server sweeps ([`Servers`](crate::psdsf::Servers)) approach that point only
//! linearly, and on the 1,000-user bench instance so slowly (plateaus of thousands of
//! sweeps while the splits drift) that they did not settle in 20,000 sweeps. But once
//! the sweeps have found which users run on which servers, the equilibrium follows in
//! closed form: along a spanning forest of that support, each edge fixes the ratio of
//! its server's level to its user's total (`x_n = phi_n gamma[n][i] S_i`), each
//! component's money balances (`sum phi_n = sum 1 / S_i`), and a maximum flow
//! distributes the budgets over the edges that are at the level. [`equilibrium`] does
//! that and checks Theorem 2 on the result; a wrong guess returns `None`, and the sweeps
//! go on.
//!
//! At 3,000 users the sweeps found no such support on one bench family (they cycled for
//! 20,000 sweeps), so [`solve`] makes the guess without them: proportional response
//! for the prices, the Eisenberg-Gale program on the placements near each user's best
//! at those prices (column generation adds any it left out), and [`equilibrium`] on
//! the placements at the program's levels. `psdsf::solve_described` tries it first.

use super::solver::Program;

/// Relative tolerance of the equilibrium's checks: a level within it of the server's is
/// at the level, and the flow must carry every budget to within it.
const TOL: f64 = 1e-9;

/// One server's part of a market: its eligible users, their `gamma` on it, and their
/// current tasks on it (the guess).
#[derive(Debug, Clone, Copy)]
pub struct Stall<'s> {
    /// The users that may buy here (indices into the budgets).
    pub users: &'s [usize],
    /// `gamma[n][i]` of each: tasks per unit of time.
    pub gamma: &'s [f64],
    /// Current tasks of each on this server, or any non-negative weight: the guess is
    /// the positive entries, and the spanning forest takes the largest first.
    pub x: &'s [f64],
}

/// The equilibrium whose support is (a spanning forest of) the positive entries of the
/// stalls' `x`, if it is one: tasks per stall, in the stalls' user order. `budget[n]` is
/// `phi_n`, 0 for an inactive user (which must hold nothing). `None` when the guess is
/// not the support of an equilibrium (a level below a server's, or budgets that cannot
/// all be spent at the levels the forest gives).
pub fn equilibrium(budget: &[f64], stalls: &[Stall<'_>]) -> Option<Vec<Vec<f64>>> {
    // The support may lack edges: a user whose level at some server comes out below the
    // server's must buy there, so that edge joins the forest ahead of the support's (and
    // the smallest support edge on the cycle it closes leaves), and the forest is solved
    // again; a few such rounds, as the simplex method's pivots.
    // The support's edges (tasks, user, server, gamma), largest first: sorted once for
    // every round.
    let mut total = vec![0.0; budget.len()];
    for stall in stalls {
        for (&n, &x) in stall.users.iter().zip(stall.x) {
            total[n] += x;
        }
    }
    let mut support: Vec<(f64, usize, usize, f64)> = Vec::new();
    for (i, stall) in stalls.iter().enumerate() {
        for ((&n, &g), &x) in stall.users.iter().zip(stall.gamma).zip(stall.x) {
            if budget[n] > 0.0 && x > TOL * total[n] {
                support.push((x, n, i, g));
            }
        }
    }
    support.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut forced: Vec<(usize, usize)> = Vec::new();
    for _ in 0..PIVOTS {
        match attempt(budget, stalls, &support, &forced) {
            Ok(x) => return Some(x),
            Err(Some(edge)) if !forced.contains(&edge) => forced.push(edge),
            Err(_) => return None,
        }
    }
    None
}

/// Rounds of proportional response ([`solve`]) before the candidate placements are picked:
/// enough for the prices to single out, for each user, the servers near its best (on the
/// 3,000-user `limited-everyone` bench instance, 200 and 500 rounds both led to the
/// equilibrium; each round costs one pass over the placements).
const RESPONSE_ROUNDS: usize = 200;

/// A placement is a candidate of [`solve`]'s program if, at the response's prices, its
/// tasks per unit of money are within this fraction of the user's best (and each
/// server's best user is one). At 0.002 the 3,000-user `limited-everyone` instance
/// missed placements the equilibrium needs (they join, one program more each round);
/// at 0.01 none was missing; at 0.05 the program had a fifth more variables.
const CANDIDATE_GAP: f64 = 0.01;

/// Rounds of [`solve`]'s program, each adding the placements that price in, before it
/// gives up.
const JOIN_ROUNDS: usize = 8;

/// A placement whose user's level is below its server's by more than this (relative)
/// prices in: the interior-point solution's levels are good to about 1e-8.
const JOIN_TOL: f64 = 1e-6;

/// The closeness to their server's level (relative) within which [`solve`]'s finish
/// takes placements as its guess: the solver's levels are good to about 1e-8 on the
/// bench's instances (to 1e-5 only on some small degenerate ones, where the pivots of
/// [`equilibrium`] add what the guess misses).
const FINISH_GAP: f64 = 1e-6;

/// One server's side of a market with no guess of who buys there: its eligible users and
/// their `gamma` on it.
#[derive(Debug, Clone, Copy)]
pub struct Offer<'s> {
    /// The users that may buy here (indices into the budgets).
    pub users: &'s [usize],
    /// `gamma[n][i]` of each: tasks per unit of time.
    pub gamma: &'s [f64],
}

/// The equilibrium computed without sweeps: tasks per server, in the offers' user order,
/// or `None` if the steps below do not reach one (the caller then sweeps). Errors of the
/// solver are `None` too.
///
/// 1. **Proportional response** ([`RESPONSE_ROUNDS`] rounds): every user splits its budget
///    over its servers in proportion to the tasks its last bids bought there; the prices
///    (each server's bids) approach the equilibrium's (Zhang 2011; Birnbaum, Devanur and
///    Xiao 2011), but the bids on the servers a user should leave shrink only
///    geometrically, by the ratio of their value to the best, so the support is far from
///    found (the sweeps, on the same instance, cycled for 20,000 sweeps).
/// 2. **The Eisenberg-Gale program on the candidates** (the placements within
///    [`CANDIDATE_GAP`] of the user's best at those prices), by the interior-point
///    solver; a placement left out whose level would be below its server's (it would
///    raise the objective: column generation) joins, and the program is solved again.
/// 3. **The exact finish**: the servers' levels from that solution (`S_i`, the lowest
///    level of a user there), the placements within [`FINISH_GAP`] of them (and each
///    user's closest) as the guess of
///    [`equilibrium`], which solves along a spanning forest of it and checks Theorem 2
///    on every placement, candidate or not.
pub fn solve(budget: &[f64], offers: &[Offer<'_>]) -> Option<Vec<Vec<f64>>> {
    if budget.iter().all(|&b| b <= 0.0) {
        // Nobody active: nothing to sell (and no program to solve).
        return Some(offers.iter().map(|offer| vec![0.0; offer.users.len()]).collect());
    }
    let prices = proportional_response(budget, offers, RESPONSE_ROUNDS);
    // Each user's best tasks per unit of money.
    let mut best = vec![0.0_f64; budget.len()];
    for (offer, &p) in offers.iter().zip(&prices) {
        for (&n, &g) in offer.users.iter().zip(offer.gamma) {
            if p > 0.0 {
                best[n] = best[n].max(g / p);
            }
        }
    }
    let candidate: Vec<Vec<bool>> = offers
        .iter()
        .zip(&prices)
        .map(|(offer, &p)| {
            let value: Vec<f64> = offer
                .users
                .iter()
                .zip(offer.gamma)
                .map(|(&n, &g)| if budget[n] > 0.0 && p > 0.0 { g / p / best[n] } else { 0.0 })
                .collect();
            let top = value.iter().copied().fold(0.0, f64::max);
            value.iter().map(|&v| v > 0.0 && (v >= 1.0 - CANDIDATE_GAP || v == top)).collect()
        })
        .collect();
    solve_from(budget, offers, candidate)
}

/// Steps 2 and 3 of [`solve`] from the given candidate placements (`candidate[i][k]`:
/// server `i`'s `k`-th user).
fn solve_from(budget: &[f64], offers: &[Offer<'_>], mut candidate: Vec<Vec<bool>>) -> Option<Vec<Vec<f64>>> {
    for _ in 0..JOIN_ROUNDS {
        let total = eisenberg_gale(budget, offers, &candidate)?;
        // Each user's level where it is eligible, and each server's: the lowest level of a
        // candidate there.
        let level_of = |offer: &Offer<'_>, k: usize| total[offer.users[k]] / (budget[offer.users[k]] * offer.gamma[k]);
        let levels: Vec<f64> = offers
            .iter()
            .zip(&candidate)
            .map(|(offer, cand)| {
                (0..offer.users.len()).filter(|&k| cand[k]).map(|k| level_of(offer, k)).fold(f64::INFINITY, f64::min)
            })
            .collect();
        let mut joined = false;
        for ((offer, cand), &s) in offers.iter().zip(&mut candidate).zip(&levels) {
            for k in 0..offer.users.len() {
                if !cand[k] && budget[offer.users[k]] > 0.0 && level_of(offer, k) < s * (1.0 - JOIN_TOL) {
                    cand[k] = true;
                    joined = true;
                }
            }
        }
        if joined {
            continue;
        }
        // The guess for the exact finish: the placements at their server's level, closest
        // first, and each user's closest (a user the guess leaves out cannot be placed).
        let closeness: Vec<Vec<f64>> = offers
            .iter()
            .zip(&levels)
            .map(|(offer, &s)| {
                (0..offer.users.len())
                    .map(|k| if budget[offer.users[k]] > 0.0 && s.is_finite() { s / level_of(offer, k) } else { 0.0 })
                    .collect()
            })
            .collect();
        let mut closest = vec![0.0_f64; budget.len()];
        for (offer, near) in offers.iter().zip(&closeness) {
            for (&n, &c) in offer.users.iter().zip(near) {
                closest[n] = closest[n].max(c);
            }
        }
        let guess: Vec<Vec<f64>> = offers
            .iter()
            .zip(&closeness)
            .map(|(offer, near)| {
                let taken = |(&n, &c): (&usize, &f64)| c > 0.0 && (c >= 1.0 - FINISH_GAP || c == closest[n]);
                offer.users.iter().zip(near).map(|p| if taken(p) { *p.1 } else { 0.0 }).collect()
            })
            .collect();
        let stalls: Vec<Stall<'_>> =
            offers.iter().zip(&guess).map(|(offer, x)| Stall { users: offer.users, gamma: offer.gamma, x }).collect();
        return equilibrium(budget, &stalls);
    }
    None
}

/// The servers' prices after `rounds` of proportional response from equal bids: each
/// user bids on each of its servers in proportion to the tasks its bid there bought in
/// the round before (`b_ni <- phi_n (gamma_ni b_ni / p_i) / sum_j gamma_nj b_nj / p_j`),
/// and a server's price is the sum of its bids. A bid far from its user's best can
/// underflow to 0 and stay there; the program's column generation brings such a
/// placement back if the equilibrium needs it.
fn proportional_response(budget: &[f64], offers: &[Offer<'_>], rounds: usize) -> Vec<f64> {
    let mut servers_of = vec![0usize; budget.len()];
    for offer in offers {
        for &n in offer.users {
            servers_of[n] += 1;
        }
    }
    let mut bids: Vec<Vec<f64>> =
        offers.iter().map(|offer| offer.users.iter().map(|&n| budget[n] / servers_of[n] as f64).collect()).collect();
    let mut prices: Vec<f64> = bids.iter().map(|b| b.iter().sum()).collect();
    let mut bought = vec![0.0; budget.len()];
    for _ in 0..rounds {
        bought.iter_mut().for_each(|v| *v = 0.0);
        for ((offer, b), &p) in offers.iter().zip(&bids).zip(&prices) {
            if p > 0.0 {
                for ((&n, &g), &bid) in offer.users.iter().zip(offer.gamma).zip(b) {
                    bought[n] += g * bid / p;
                }
            }
        }
        for ((offer, b), p) in offers.iter().zip(&mut bids).zip(&mut prices) {
            if *p > 0.0 {
                for ((&n, &g), bid) in offer.users.iter().zip(offer.gamma).zip(b.iter_mut()) {
                    if bought[n] > 0.0 {
                        *bid = budget[n] * g * *bid / *p / bought[n];
                    }
                }
            }
            *p = b.iter().sum();
        }
    }
    prices
}

/// The users' totals of the weighted Eisenberg-Gale program (A.3.4) with only the
/// `candidate` placements: maximize `sum phi_n ln(sum gamma t)` over time shares `t`,
/// each server's summing to at most 1. `None` if the solver fails.
fn eisenberg_gale(budget: &[f64], offers: &[Offer<'_>], candidate: &[Vec<bool>]) -> Option<Vec<f64>> {
    let placements: Vec<(usize, usize)> = candidate
        .iter()
        .enumerate()
        .flat_map(|(i, cand)| cand.iter().enumerate().filter(|&(_, &c)| c).map(move |(k, _)| (i, k)))
        .collect();
    let mut program = Program::new(placements.len());
    let mut terms_of: Vec<Vec<(usize, f64)>> = vec![Vec::new(); budget.len()];
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); offers.len()];
    for (v, &(i, k)) in placements.iter().enumerate() {
        terms_of[offers[i].users[k]].push((v, offers[i].gamma[k]));
        rows[i].push((v, 1.0));
    }
    for (n, terms) in terms_of.into_iter().enumerate() {
        if budget[n] > 0.0 {
            if terms.is_empty() {
                return None;
            }
            program.maximize_log(budget[n], terms);
        }
    }
    for row in rows.into_iter().filter(|r| !r.is_empty()) {
        program.le(row, 1.0);
    }
    let t = program.solve().ok()?;
    let mut total = vec![0.0; budget.len()];
    for (v, &(i, k)) in placements.iter().enumerate() {
        total[offers[i].users[k]] += t[v] * offers[i].gamma[k];
    }
    Some(total)
}

/// Rounds of [`equilibrium`]'s pivots before it gives up.
const PIVOTS: usize = 16;

/// One round of [`equilibrium`] with the edges `forced` (server, position in its stall)
/// in the forest first, then those of `support`: the allocation, or the edge that
/// should join (if a level came out below a server's), or `None` (the budgets cannot be
/// spent).
fn attempt(
    budget: &[f64],
    stalls: &[Stall<'_>],
    support: &[(f64, usize, usize, f64)],
    forced: &[(usize, usize)],
) -> Result<Vec<Vec<f64>>, Option<(usize, usize)>> {
    let n_users = budget.len();
    let n_servers = stalls.len();
    // Nodes: users 0..n_users, then servers.
    let node = |i: usize| n_users + i;
    // The forced edges, then the support's largest first, into a spanning forest (Kruskal).
    let edges = forced
        .iter()
        .map(|&(i, k)| (f64::INFINITY, stalls[i].users[k], i, stalls[i].gamma[k]))
        .chain(support.iter().copied());
    let mut parent: Vec<usize> = (0..n_users + n_servers).collect();
    fn root(parent: &mut [usize], mut v: usize) -> usize {
        while parent[v] != v {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        v
    }
    let mut adjacent: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n_users + n_servers];
    for (_, n, i, g) in edges {
        let (a, b) = (root(&mut parent, n), root(&mut parent, node(i)));
        if a != b {
            parent[a] = b;
            adjacent[n].push((node(i), g));
            adjacent[node(i)].push((n, g));
        }
    }
    // Levels relative to each tree's first server: `sigma` of servers (levels), `u` of
    // users (`x_n / phi_n`), then each tree scaled so that its money balances.
    let mut rel = vec![f64::NAN; n_users + n_servers];
    let mut level = vec![f64::NAN; n_servers];
    let mut per_unit = vec![f64::NAN; n_users];
    for start in 0..n_servers {
        if !rel[node(start)].is_nan() || stalls[start].users.iter().all(|&n| budget[n] == 0.0) {
            continue;
        }
        rel[node(start)] = 1.0;
        let mut tree = vec![node(start)];
        let mut k = 0;
        while k < tree.len() {
            let v = tree[k];
            k += 1;
            for &(w, g) in &adjacent[v] {
                if rel[w].is_nan() {
                    // user = gamma * server level; server level = user / gamma.
                    rel[w] = if v >= n_users { g * rel[v] } else { rel[v] / g };
                    tree.push(w);
                }
            }
        }
        let money: f64 = tree.iter().filter(|&&v| v < n_users).map(|&v| budget[v]).sum();
        let prices: f64 = tree.iter().filter(|&&v| v >= n_users).map(|&v| 1.0 / rel[v]).sum();
        if money <= 0.0 {
            return Err(None);
        }
        let scale = prices / money;
        for &v in &tree {
            if v < n_users {
                per_unit[v] = rel[v] * scale;
            } else {
                level[v - n_users] = rel[v] * scale;
            }
        }
    }
    // Every active user is in a tree; no user's level is below a server's, and the
    // edges at the level may carry money.
    if (0..n_users).any(|n| budget[n] > 0.0 && per_unit[n].is_nan()) {
        return Err(None);
    }
    let mut flow = Flow::new(n_users + n_servers + 2);
    let (source, sink) = (n_users + n_servers, n_users + n_servers + 1);
    let mut at_level = Vec::new();
    // The edge whose user's level is furthest below its server's.
    let mut worst: Option<(f64, (usize, usize))> = None;
    for (i, stall) in stalls.iter().enumerate() {
        if level[i].is_nan() {
            continue;
        }
        flow.edge(node(i), sink, 1.0 / level[i]);
        for (k, (&n, &g)) in stall.users.iter().zip(stall.gamma).enumerate() {
            if budget[n] == 0.0 {
                continue;
            }
            // L[n][i] / S_i = u_n / (gamma S_i).
            let ratio = per_unit[n] / (g * level[i]);
            if ratio < 1.0 - TOL && worst.is_none_or(|(r, _)| ratio < r) {
                worst = Some((ratio, (i, k)));
            }
            if ratio <= 1.0 + TOL {
                at_level.push((i, k, flow.edge(n, node(i), f64::INFINITY)));
            }
        }
    }
    if let Some((_, edge)) = worst {
        return Err(Some(edge));
    }
    for n in (0..n_users).filter(|&n| budget[n] > 0.0) {
        flow.edge(source, n, budget[n]);
    }
    let money: f64 = budget.iter().sum();
    if flow.max_flow(source, sink) < money * (1.0 - TOL) {
        return Err(None);
    }
    // Money b on an edge buys b / p_i = b S_i of the server's time: gamma b S_i tasks.
    let mut x: Vec<Vec<f64>> = stalls.iter().map(|s| vec![0.0; s.users.len()]).collect();
    for (i, k, e) in at_level {
        x[i][k] = stalls[i].gamma[k] * flow.carried(e) * level[i];
    }
    Ok(x)
}

/// A maximum flow by Dinic's method on `f64` capacities (amounts below [`TOL`] of the
/// largest capacity count as none).
struct Flow {
    /// Per edge: head, capacity left; edge `e ^ 1` is its reverse.
    head: Vec<usize>,
    left: Vec<f64>,
    /// Capacity as added (infinite for the user-server edges).
    given: Vec<f64>,
    out: Vec<Vec<usize>>,
}

impl Flow {
    fn new(nodes: usize) -> Self {
        Flow { head: Vec::new(), left: Vec::new(), given: Vec::new(), out: vec![Vec::new(); nodes] }
    }

    /// Adds an edge; returns its index.
    fn edge(&mut self, from: usize, to: usize, capacity: f64) -> usize {
        let e = self.head.len();
        self.head.extend([to, from]);
        self.left.extend([capacity, 0.0]);
        self.given.extend([capacity, 0.0]);
        self.out[from].push(e);
        self.out[to].push(e + 1);
        e
    }

    /// What edge `e` carries.
    fn carried(&self, e: usize) -> f64 {
        self.left[e ^ 1]
    }

    fn max_flow(&mut self, source: usize, sink: usize) -> f64 {
        let largest = self.given.iter().filter(|c| c.is_finite()).fold(0.0, |a: f64, &c| a.max(c));
        let eps = TOL * largest;
        let mut total = 0.0;
        loop {
            // Levels by breadth-first search over edges with capacity left.
            let mut depth = vec![usize::MAX; self.out.len()];
            depth[source] = 0;
            let mut queue = vec![source];
            let mut k = 0;
            while k < queue.len() {
                let v = queue[k];
                k += 1;
                for &e in &self.out[v] {
                    let w = self.head[e];
                    if self.left[e] > eps && depth[w] == usize::MAX {
                        depth[w] = depth[v] + 1;
                        queue.push(w);
                    }
                }
            }
            if depth[sink] == usize::MAX {
                return total;
            }
            let mut next = vec![0; self.out.len()];
            loop {
                let pushed = self.push(source, sink, f64::INFINITY, &depth, &mut next, eps);
                if pushed <= eps {
                    break;
                }
                total += pushed;
            }
        }
    }

    /// One augmenting path along increasing depth (iterative, with the current-edge
    /// pointers `next`); returns the amount pushed.
    fn push(&mut self, source: usize, sink: usize, limit: f64, depth: &[usize], next: &mut [usize], eps: f64) -> f64 {
        let mut path: Vec<usize> = Vec::new();
        let mut v = source;
        loop {
            if v == sink {
                let amount = path.iter().fold(limit, |a, &e| a.min(self.left[e]));
                for &e in &path {
                    self.left[e] -= amount;
                    self.left[e ^ 1] += amount;
                }
                return amount;
            }
            let mut advanced = false;
            while next[v] < self.out[v].len() {
                let e = self.out[v][next[v]];
                let w = self.head[e];
                if self.left[e] > eps && depth[w] == depth[v] + 1 {
                    path.push(e);
                    v = w;
                    advanced = true;
                    break;
                }
                next[v] += 1;
            }
            if !advanced {
                // Dead end: retreat, and skip the edge that led here.
                let Some(e) = path.pop() else { return 0.0 };
                v = self.head[e ^ 1];
                next[v] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Server A (users 0 and 1) and server B (user 0), one unit of time each, one task a
    /// unit for everyone: user 1 can only buy A.
    fn two_servers() -> (Vec<usize>, Vec<f64>, Vec<usize>, Vec<f64>) {
        (vec![0, 1], vec![1.0, 1.0], vec![0], vec![1.0])
    }

    #[test]
    fn proportional_response_approaches_the_equilibrium_prices() {
        // Budgets 2 and 1: at prices 1.5 and 1.5 user 1 spends 1 on A, user 0 spends 0.5
        // on A and 1.5 on B, and both servers sell out; the equal first bids give 2 and 1.
        let (ua, ga, ub, gb) = two_servers();
        let offers = [Offer { users: &ua, gamma: &ga }, Offer { users: &ub, gamma: &gb }];
        let first = proportional_response(&[2.0, 1.0], &offers, 0);
        assert_eq!(first, [2.0, 1.0]);
        let prices = proportional_response(&[2.0, 1.0], &offers, RESPONSE_ROUNDS);
        for p in prices {
            assert!((p - 1.5).abs() < 1e-6, "{p}");
        }
    }

    #[test]
    fn a_placement_the_candidates_miss_joins_and_the_finish_is_exact() {
        // Budgets 1 and 1: user 1 buys all of A, user 0 all of B. The candidates leave
        // B out: the program on them shares A, B's level is then below user 0's, and
        // the placement must join.
        let (ua, ga, ub, gb) = two_servers();
        let offers = [Offer { users: &ua, gamma: &ga }, Offer { users: &ub, gamma: &gb }];
        let x = solve_from(&[1.0, 1.0], &offers, vec![vec![true, true], vec![false]]).expect("solved");
        let want = [[0.0, 1.0].as_slice(), [1.0].as_slice()];
        for (got, want) in x.iter().zip(want) {
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-9, "{x:?}");
            }
        }
    }

    #[test]
    fn nobody_active_gets_nothing() {
        let (ua, ga, ub, gb) = two_servers();
        let offers = [Offer { users: &ua, gamma: &ga }, Offer { users: &ub, gamma: &gb }];
        assert_eq!(solve(&[0.0, 0.0], &offers), Some(vec![vec![0.0, 0.0], vec![0.0]]));
    }
}
