//! Every worked example and test vector of `docs/spec/psdsf_drfh.md` (TV-PS-*, TV-DRFH-*)
//! for PS-DSF, DRFH, DRF and the lexicographic baselines, with values typed from the spec.
//! Known-false properties are documented counterexamples here: each asserts the failure.

use fairshare_multi::drf::drf;
use fairshare_multi::drfh::{drfh, drfh_lp, place_tasks, Fit};
use fairshare_multi::lexmaxmin::{baseline, Baseline};
use fairshare_multi::psdsf::{self, Servers, Sharing};
use fairshare_multi::{Builder, Instance};

const TOL: f64 = 1e-6;

/// Published values rounded to two decimals: within half a unit of the last digit.
fn assert_rounded(what: &str, got: &[f64], want: &[f64]) {
    for (n, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 0.005 + 1e-9, "{what}: user {} got {g}, want {w} (2 decimals)", n + 1);
    }
}

fn assert_totals(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (n, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * w.abs().max(1.0), "{what}: user {} got {g}, want {w} (all: {got:?})", n + 1);
    }
}

/// TV-PS-1 and TV-PS-2 share their servers: (CPU, RAM, BW) = (9, 12, 100) and (12, 12, 0).
const FIG1_SERVERS: [&[f64]; 2] = [&[9.0, 12.0, 100.0], &[12.0, 12.0, 0.0]];

fn tv_ps_1() -> Instance {
    Builder::new(&FIG1_SERVERS, &[&[1.0, 2.0, 10.0], &[1.0, 2.0, 1.0], &[1.0, 2.0, 0.0]])
        .weights(&[1.0, 1.0, 2.0])
        .build()
        .expect("valid")
}

#[test]
fn tv_ps_1_gamma_and_every_mechanism() {
    let inst = tv_ps_1();
    assert_eq!(inst.gamma(), vec![vec![6.0, 0.0], vec![6.0, 0.0], vec![6.0, 6.0]]);
    for sharing in [Sharing::Rdm, Sharing::Tdm] {
        let a = psdsf::solve(&inst, sharing).expect("converges");
        assert_totals("PS-DSF", &a.totals, &[3.0, 3.0, 6.0], TOL);
        let x = a.per_server.expect("placed");
        // The split is unique here: users 1, 2 on server 1, user 3 on server 2.
        assert_totals("split", &[x[0][0], x[1][0], x[2][0], x[2][1]], &[3.0, 3.0, 0.0, 6.0], TOL);
        let level = psdsf::levels(&inst, &x);
        for (n, i) in [(0, 0), (1, 0), (2, 0), (2, 1)] {
            assert!((level[n][i] - 0.5).abs() < TOL, "level of user {} at server {}", n + 1, i + 1);
        }
    }
    let cdrfh = baseline(&inst, Baseline::CDrfh).expect("solves");
    assert_totals("C-DRFH", &cdrfh.totals, &[60.0 / 23.0, 72.0 / 23.0, 144.0 / 23.0], TOL);
    let x = cdrfh.per_server.expect("placed");
    assert_totals("C-DRFH split", &[x[2][0], x[2][1]], &[6.0 / 23.0, 6.0], TOL);
    let tsf = baseline(&inst, Baseline::Tsf).expect("solves");
    assert_totals("TSF", &tsf.totals, &[2.0, 2.0, 8.0], TOL);
}

#[test]
fn tv_ps_2_four_users_and_the_papers_misprinted_vds() {
    let inst = Builder::new(&FIG1_SERVERS, &[&[1.5, 1.0, 10.0], &[1.0, 2.0, 10.0], &[0.5, 1.0, 0.0], &[1.0, 0.5, 0.0]])
        .build()
        .expect("valid");
    assert_eq!(inst.gamma(), vec![vec![6.0, 0.0], vec![6.0, 0.0], vec![12.0, 12.0], vec![9.0, 12.0]]);
    let rdm = psdsf::solve(&inst, Sharing::Rdm).expect("converges");
    assert_totals("RDM", &rdm.totals, &[3.6, 3.6, 8.0, 8.0], TOL);
    let x = rdm.per_server.expect("placed");
    assert_totals(
        "RDM split",
        &[x[0][0], x[1][0], x[2][1], x[3][1], x[2][0], x[3][0]],
        &[3.6, 3.6, 8.0, 8.0, 0.0, 0.0],
        TOL,
    );
    let level = psdsf::levels(&inst, &x);
    // s4,1 = 8/9, not the paper's 12/12 (erratum 7).
    assert!((level[3][0] - 8.0 / 9.0).abs() < TOL, "s4,1 = {}", level[3][0]);
    let tdm = psdsf::solve(&inst, Sharing::Tdm).expect("converges");
    assert_totals("TDM", &tdm.totals, &[3.0, 3.0, 6.0, 6.0], TOL);
    let cdrfh = baseline(&inst, Baseline::CDrfh).expect("solves");
    assert_totals("C-DRFH", &cdrfh.totals, &[600.0 / 169.0, 600.0 / 169.0, 1440.0 / 169.0, 1260.0 / 169.0], TOL);
    let tsf = baseline(&inst, Baseline::Tsf).expect("solves");
    assert_totals("TSF", &tsf.totals, &[21.0 / 8.0, 21.0 / 8.0, 21.0 / 2.0, 147.0 / 16.0], TOL);
}

/// TV-PS-4 reconstruction: the four server classes aggregated, users 3 and 4 on C, D only.
fn tv_ps_4() -> Instance {
    Builder::new(
        &[&[8.0, 8.0], &[34.0, 34.0], &[16.5, 8.25], &[5.5, 8.25]],
        &[&[0.1, 0.1], &[0.1, 0.2], &[0.2, 0.1], &[0.1, 0.3]],
    )
    .weights(&[2.0, 2.0, 1.0, 1.0])
    .eligible(&[&[true; 4], &[true; 4], &[false, false, true, true], &[false, false, true, true]])
    .build()
    .expect("valid")
}

#[test]
fn tv_ps_4_table_iii_and_table_iv() {
    let inst = tv_ps_4();
    let table_iii =
        [[80.0, 340.0, 82.5, 55.0], [40.0, 170.0, 41.25, 41.25], [0.0, 0.0, 82.5, 27.5], [0.0, 0.0, 27.5, 27.5]];
    for (n, row) in table_iii.iter().enumerate() {
        assert_totals("Table III", &inst.gamma()[n], row, 1e-12);
    }
    let rdm = psdsf::solve(&inst, Sharing::Rdm).expect("converges");
    assert_totals("PS-DSF Table IV", &rdm.totals, &[210.0, 105.0, 82.5, 27.5], TOL);
    let x = rdm.per_server.expect("placed");
    assert_totals("users 3 and 4 by class", &[x[2][2], x[2][3], x[3][2], x[3][3]], &[82.5, 0.0, 0.0, 27.5], TOL);
    let tdm = psdsf::solve(&inst, Sharing::Tdm).expect("converges");
    assert_totals("TDM on Table III", &tdm.totals, &[210.0, 105.0, 82.5, 27.5], TOL);
    let tsf = baseline(&inst, Baseline::Tsf).expect("solves");
    assert_rounded("TSF Table IV", &tsf.totals, &[204.95, 107.53, 58.34, 35.55]);
    assert!((tsf.totals[2] - 5280.0 / 90.5).abs() < TOL, "the exact 58.3425, not the paper's 58.33");
    let cdrfh = baseline(&inst, Baseline::CDrfh).expect("solves");
    assert_rounded("C-DRFH", &cdrfh.totals, &[210.92, 105.46, 57.69, 35.15]);
}

#[test]
fn tv_ps_4_user_4_leaves_and_returns_in_the_distributed_form() {
    let inst = tv_ps_4();
    let order: Vec<usize> = (0..4).collect();
    let mut servers = Servers::new(&inst, Sharing::Rdm);
    servers.converge(|_| order.clone()).expect("converges");
    assert_totals("all four", &servers.allocation().totals, &[210.0, 105.0, 82.5, 27.5], TOL);
    servers.set_active(3, false);
    let sweeps = servers.converge(|_| order.clone()).expect("converges").sweeps;
    assert_totals("user 4 inactive", &servers.allocation().totals, &[251.25, 125.625, 82.5, 0.0], TOL);
    let x = servers.allocation().per_server.expect("placed");
    assert!((x[1][3] - 41.25).abs() < TOL, "class D goes to user 2: {:?}", x[1]);
    servers.set_active(3, true);
    servers.converge(|_| order.clone()).expect("converges");
    assert_totals("user 4 back", &servers.allocation().totals, &[210.0, 105.0, 82.5, 27.5], TOL);
    assert!(sweeps < 50, "re-converged in {sweeps} sweeps");
    let without = inst.subset(&[0, 1, 2]);
    let tsf = baseline(&without, Baseline::Tsf).expect("solves");
    assert_rounded("TSF without user 4", &tsf.totals, &[250.39, 131.37, 71.86]);
    let cdrfh = baseline(&without, Baseline::CDrfh).expect("solves");
    assert_rounded("C-DRFH without user 4", &cdrfh.totals, &[257.31, 128.66, 70.38]);
}

fn tv_ps_5() -> Instance {
    Builder::new(&[&[2.0, 2.0], &[1.0, 1.0], &[6.0, 1.0]], &[&[2.0, 3.0], &[2.0, 1.0]]).build().expect("valid")
}

#[test]
fn tv_ps_5_rdm_is_not_unique_and_one_allocation_dominates_the_other() {
    let inst = tv_ps_5();
    let a = vec![vec![2.0 / 3.0, 1.0 / 5.0, 0.0], vec![0.0, 3.0 / 10.0, 1.0]];
    let b = vec![vec![5.0 / 9.0, 1.0 / 3.0, 0.0], vec![1.0 / 3.0, 0.0, 1.0]];
    assert!(psdsf::is_psdsf_rdm(&inst, &a, 1e-9), "A satisfies Theorem 1");
    assert!(psdsf::is_psdsf_rdm(&inst, &b, 1e-9), "B satisfies Theorem 1");
    let gain_a = psdsf::pareto_gain(&inst, &[13.0 / 15.0, 13.0 / 10.0], Sharing::Rdm).expect("solves");
    let gain_b = psdsf::pareto_gain(&inst, &[8.0 / 9.0, 4.0 / 3.0], Sharing::Rdm).expect("solves");
    assert!((gain_a - 0.1).abs() < 1e-6, "A is not Pareto optimal: gain {gain_a}");
    assert!(gain_b.abs() < 1e-6, "B is: gain {gain_b}");
    for order in [[0, 1, 2], [2, 1, 0]] {
        let x = psdsf::solve_in_order(&inst, Sharing::Rdm, &order).expect("converges");
        assert!(psdsf::is_psdsf_rdm(&inst, x.per_server.as_ref().expect("placed"), 1e-7), "order {order:?}");
    }
    let tdm = psdsf::solve(&inst, Sharing::Tdm).expect("converges");
    assert_totals("TDM", &tdm.totals, &[5.0 / 6.0, 5.0 / 4.0], TOL);
}

#[test]
fn tv_ps_6_rdm_psdsf_is_not_pareto_optimal() {
    let inst = Builder::new(&[&[3.0, 3.0], &[5.0, 6.0]], &[&[1.0, 4.0], &[3.0, 2.0]]).build().expect("valid");
    let x = psdsf::solve(&inst, Sharing::Rdm).expect("converges");
    assert_totals("PS-DSF", &x.totals, &[9.0 / 7.0, 10.0 / 7.0], TOL);
    let gain = psdsf::pareto_gain(&inst, &x.totals, Sharing::Rdm).expect("solves");
    assert!((gain - 0.5).abs() < 1e-6, "Pareto gain {gain}, the spec's LP gives 0.5");
}

#[test]
fn tv_ps_7_rdm_psdsf_is_not_strategy_proof() {
    let servers: [&[f64]; 2] = [&[3.0, 2.0], &[5.0, 4.0]];
    let truthful = Builder::new(&servers, &[&[4.0, 1.0], &[2.0, 3.0], &[2.0, 4.0]]).build().expect("valid");
    let x = psdsf::solve(&truthful, Sharing::Rdm).expect("converges");
    assert_totals("truthful", &x.totals, &[3.0 / 4.0, 2.0 / 3.0, 1.0 / 2.0], TOL);
    let lying = Builder::new(&servers, &[&[4.0, 1.0], &[2.0, 3.0], &[6.0, 4.0]]).build().expect("valid");
    let y = psdsf::solve(&lying, Sharing::Rdm).expect("converges");
    assert_totals("misreport", &y.totals, &[3.0 / 8.0 + 42.0 / 103.0, 86.0 / 103.0, 1.0 / 4.0 + 28.0 / 103.0], TOL);
    // True tasks of user 3 with the bundle (6, 4) per reported task: min(6/2, 4/4) = 1 each.
    let true_tasks = y.totals[2] * f64::min(6.0 / 2.0, 4.0 / 4.0);
    assert!((true_tasks - 215.0 / 412.0).abs() < TOL && true_tasks > x.totals[2] + 0.02);
}

#[test]
fn tv_ps_8_tdm_is_manipulable_under_time_share_semantics_only() {
    let servers: [&[f64]; 2] = [&[4.0, 1.0], &[5.0, 5.0]];
    let truthful = Builder::new(&servers, &[&[4.0, 1.0], &[1.0, 4.0], &[1.0, 3.0]]).build().expect("valid");
    let x = psdsf::solve(&truthful, Sharing::Tdm).expect("converges");
    assert_totals("truthful", &x.totals, &[1.0, 5.0 / 8.0, 5.0 / 6.0], TOL);
    let lying = Builder::new(&servers, &[&[2.0, 1.0], &[1.0, 4.0], &[1.0, 3.0]]).build().expect("valid");
    let y = psdsf::solve(&lying, Sharing::Tdm).expect("converges");
    assert_totals("misreport", &y.totals, &[7.0 / 6.0, 7.0 / 12.0, 7.0 / 9.0], TOL);
    let split = y.per_server.expect("placed");
    let bundle = y.totals[0] * f64::min(2.0 / 4.0, 1.0 / 1.0);
    assert!((bundle - 7.0 / 12.0).abs() < TOL && bundle < 1.0, "no gain under eq. 46");
    let gamma_lie = lying.gamma();
    let gamma_true = truthful.gamma();
    let time_share =
        split[0][0] / gamma_lie[0][0] * gamma_true[0][0] + split[0][1] / gamma_lie[0][1] * gamma_true[0][1];
    assert!((time_share - 13.0 / 12.0).abs() < TOL && time_share > 1.0, "time-share utility {time_share}");
}

#[test]
fn tv_ps_9_lemma_1_fails_for_a_false_eligibility_claim() {
    let servers: [&[f64]; 2] = [&[1.0, 1.0], &[1.0, 3.0]];
    let demand: [&[f64]; 2] = [&[1.0, 2.0], &[1.0, 1.0]];
    let truthful = Builder::new(&servers, &demand).eligible(&[&[true, false], &[false, true]]).build().expect("valid");
    let lying = Builder::new(&servers, &demand).eligible(&[&[true, true], &[false, true]]).build().expect("valid");
    for sharing in [Sharing::Rdm, Sharing::Tdm] {
        let x = psdsf::solve(&truthful, sharing).expect("converges").per_server.expect("placed");
        assert_totals("truthful", &[x[0][0], x[0][1], x[1][1]], &[0.5, 0.0, 1.0], TOL);
        let y = psdsf::solve(&lying, sharing).expect("converges").per_server.expect("placed");
        assert_totals("false claim", &[y[0][0], y[0][1], y[1][1]], &[0.5, 0.25, 0.75], TOL);
        // User 1's real tasks are unchanged (its tasks on server 2 cannot run); user 2 lost 1/4.
        assert!((y[0][0] - x[0][0]).abs() < TOL && y[1][1] < x[1][1] - 0.2);
    }
}

#[test]
fn tv_ps_10_pooled_envy_freeness_fails_restricted_holds() {
    let inst = Builder::new(&[&[1.0], &[10.0]], &[&[1.0], &[1.0]])
        .eligible(&[&[true, false], &[false, true]])
        .build()
        .expect("valid");
    let a = psdsf::solve(&inst, Sharing::Rdm).expect("converges");
    assert_totals("PS-DSF", &a.totals, &[1.0, 10.0], TOL);
    assert!(a.totals[1] > a.totals[0], "pooled: user 1 values user 2's bundle at 10 > 1");
    assert!(psdsf::envy_free(&inst, a.per_server.as_ref().expect("placed"), 1e-9), "restricted EF holds");
}

/// TV-DRFH-1: servers (2 CPU, 12 GB), (12 CPU, 2 GB); tasks (0.2, 1) and (1, 0.2).
fn tv_drfh_1() -> Builder {
    Builder::new(&[&[2.0, 12.0], &[12.0, 2.0]], &[&[0.2, 1.0], &[1.0, 0.2]])
}

#[test]
fn tv_drfh_1_lp_heuristics_and_the_cross_paper_vector() {
    let inst = tv_drfh_1().build().expect("valid");
    let (g, a) = drfh_lp(&inst).expect("solves");
    assert!((g - 5.0 / 7.0).abs() < TOL, "g = {g}");
    assert_totals("DRFH", &a.totals, &[10.0, 10.0], TOL);
    let x = a.per_server.expect("placed");
    assert_totals("unique split", &[x[0][0], x[0][1], x[1][0], x[1][1]], &[10.0, 0.0, 0.0, 10.0], TOL);
    let best = place_tasks(&inst, Fit::Best).expect("places").per_server.expect("placed");
    assert_eq!(best, vec![vec![10.0, 0.0], vec![0.0, 10.0]]);
    let first = place_tasks(&inst, Fit::First).expect("places").per_server.expect("placed");
    assert_eq!(first, vec![vec![5.0, 1.0], vec![1.0, 5.0]]);
    for (what, got) in [
        ("PS-DSF RDM", psdsf::solve(&inst, Sharing::Rdm).expect("converges")),
        ("PS-DSF TDM", psdsf::solve(&inst, Sharing::Tdm).expect("converges")),
        ("TSF", baseline(&inst, Baseline::Tsf).expect("solves")),
        ("C-DRFH", baseline(&inst, Baseline::CDrfh).expect("solves")),
    ] {
        assert_totals(what, &got.totals, &[10.0, 10.0], TOL);
    }
    // Naive per-server DRF, the PS-DSF initialization: one sweep of each server alone.
    let mut servers = Servers::new(&inst, Sharing::Rdm);
    let isolated: Vec<f64> = {
        let mut per_user = vec![0.0; 2];
        for i in 0..2 {
            let mut alone = Servers::new(&inst, Sharing::Rdm);
            alone.update(i);
            let x = alone.allocation().per_server.expect("placed");
            per_user[0] += x[0][i];
            per_user[1] += x[1][i];
        }
        per_user
    };
    assert_totals("naive per-server DRF", &isolated, &[6.0, 6.0], TOL);
    servers.converge(|_| vec![0, 1]).expect("converges");
    assert_totals("repaired", &servers.allocation().totals, &[10.0, 10.0], TOL);
}

#[test]
fn tv_drfh_1_pooled_drf_is_not_placeable() {
    // Pooled (14 CPU, 14 GB), DRF gives each user 35/3 tasks: more than any placement on
    // the two real servers allows (DRFH's 10 + 10 is Pareto optimal).
    let inst = tv_drfh_1().build().expect("valid");
    let pooled = drf(&inst);
    assert_totals("DRF", &pooled.totals, &[35.0 / 3.0, 35.0 / 3.0], 1e-12);
    assert!(pooled.per_server.is_none());
    assert!(psdsf::pareto_gain(&inst, &pooled.totals, Sharing::Rdm).is_err(), "no placement gives both 35/3");
    assert!(psdsf::pareto_gain(&inst, &[10.0, 10.0], Sharing::Rdm).expect("placeable").abs() < 1e-6);
}

#[test]
fn tv_drfh_1_weighted() {
    let inst = tv_drfh_1().weights(&[2.0, 1.0]).build().expect("valid");
    let (g, a) = drfh_lp(&inst).expect("solves");
    assert!((g - 30.0 / 77.0).abs() < TOL, "g = {g}");
    assert_totals("weighted DRFH", &a.totals, &[120.0 / 11.0, 60.0 / 11.0], TOL);
}

#[test]
fn tv_drfh_2_equal_division_benchmarks() {
    // (a) half of each server: user 1 runs min(1/0.2, 6/1) + min(6/0.2, 1/1) tasks.
    let inst = tv_drfh_1().build().expect("valid");
    let half: Vec<f64> = (0..2)
        .map(|n| {
            (0..2)
                .map(|i| (0..2).map(|r| inst.capacity[i][r] / 2.0 / inst.demand[n][r]).fold(f64::INFINITY, f64::min))
                .sum()
        })
        .collect();
    assert_totals("equal division (a)", &half, &[6.0, 6.0], 1e-12);
}

#[test]
fn tv_drfh_3_single_server_is_drf() {
    let inst = Builder::new(&[&[9.0, 18.0]], &[&[1.0, 4.0], &[3.0, 1.0]]).build().expect("valid");
    let (g, a) = drfh_lp(&inst).expect("solves");
    assert!((g - 2.0 / 3.0).abs() < TOL, "g = {g}");
    assert_totals("DRFH", &a.totals, &[3.0, 2.0], TOL);
    assert_totals("DRF", &drf(&inst).totals, &[3.0, 2.0], 1e-12);
    assert_totals("drfh()", &drfh(&inst).expect("solves").totals, &[3.0, 2.0], TOL);
}

#[test]
fn tv_drfh_4_drfh_violates_equal_split_sharing_incentive() {
    let inst = Builder::new(&[&[2.0, 1.0], &[1.0, 3.0]], &[&[1.0, 1.0], &[2.0, 1.0]]).build().expect("valid");
    let (g, a) = drfh_lp(&inst).expect("solves");
    assert!((g - 4.0 / 9.0).abs() < TOL, "g = {g}");
    assert_totals("DRFH", &a.totals, &[4.0 / 3.0, 2.0 / 3.0], TOL);
    // Half of each server to user 2: min(1/2, 0.5/1) + min(0.5/2, 1.5/1) = 0.75 > 2/3.
    let equal_split: f64 = (0..2)
        .map(|i| (0..2).map(|r| inst.capacity[i][r] / 2.0 / inst.demand[1][r]).fold(f64::INFINITY, f64::min))
        .sum();
    assert!((equal_split - 0.75).abs() < 1e-12 && equal_split > a.totals[1] + 0.05);
}

#[test]
fn drf_on_the_bbf_papers_examples_with_task_limits() {
    // ddrf_bbf.md B-Ex1 and B-Ex2: DRF with finite requests (one "task" = the whole request).
    let ex1 = Builder::new(&[&[1.0, 1.0]], &[&[1.0, 0.2], &[1.0, 0.2], &[0.4, 0.8]])
        .max_tasks(&[1.0, 1.0, 1.0])
        .build()
        .expect("valid");
    assert_totals("B-Ex1 DRF", &drf(&ex1).totals, &[0.4, 0.4, 0.5], 1e-12);
    let ex2 = Builder::new(&[&[1.0, 1.0, 1.0, 1.0]], &[&[0.5, 0.0, 0.0, 1.0], &[1.0, 1.0, 1.0, 0.0]])
        .max_tasks(&[1.0, 1.0])
        .build()
        .expect("valid");
    assert_totals("B-Ex2 DRF", &drf(&ex2).totals, &[2.0 / 3.0, 2.0 / 3.0], 1e-12);
}

#[test]
fn drfh_finite_tasks_fix_users_and_the_others_keep_rising() {
    // TV-DRFH-1 with user 1 limited to 4 tasks: user 2 then takes what server 2 gives it
    // and what is left of server 1.
    let inst = tv_drfh_1().max_tasks(&[4.0, 1000.0]).build().expect("valid");
    let (_, a) = drfh_lp(&inst).expect("solves");
    // Server 2: 12 CPU, 2 GB -> 10 tasks of user 2; server 1 after 4 tasks of user 1
    // (0.8 CPU, 4 GB): 1.2 CPU, 8 GB -> 1.2 tasks of user 2.
    assert_totals("finite", &a.totals, &[4.0, 11.2], TOL);
    let lex = baseline(&inst, Baseline::CDrfh).expect("solves");
    assert_totals("C-DRFH agrees", &lex.totals, &[4.0, 11.2], TOL);
}

#[test]
fn undamped_server_procedure_can_cycle() {
    // Found by the property tests: sweeping servers 1..4 in order, the undamped server
    // procedure (A.5.4) alternates between two allocations forever (user 4 gets 25/21 and
    // 9/7 tasks on server 3 in turn), neither PS-DSF. Half steps converge.
    let inst = Builder::new(
        &[&[0.0, 0.0, 0.0], &[0.0, 2.0, 1.0], &[3.0, 6.0, 3.0], &[2.0, 7.0, 3.0]],
        &[&[1.0, 4.0, 0.0], &[4.0, 0.0, 3.0], &[2.0, 0.0, 0.0], &[0.0, 3.0, 1.0], &[1.0, 0.0, 4.0]],
    )
    .weights(&[3.0, 2.0, 1.0, 3.0, 2.0])
    .eligible(&[
        &[false, false, false, true],
        &[false, false, true, false],
        &[false, false, true, false],
        &[false, true, true, true],
        &[false, false, true, true],
    ])
    .build()
    .expect("valid");
    let order = [0, 1, 2, 3];
    let mut servers = Servers::new(&inst, Sharing::Rdm);
    for _ in 0..1000 {
        servers.sweep(&order);
    }
    let a = servers.allocation().per_server.expect("placed");
    servers.sweep(&order);
    let b = servers.allocation().per_server.expect("placed");
    servers.sweep(&order);
    let c = servers.allocation().per_server.expect("placed");
    let ab = (a[3][2] - b[3][2]).abs();
    assert!(ab > 0.09, "still moving after 1,000 sweeps: {} -> {}", a[3][2], b[3][2]);
    assert!((a[3][2] - c[3][2]).abs() < 1e-9, "period 2");
    let lo = a[3][2].min(b[3][2]);
    let hi = a[3][2].max(b[3][2]);
    assert!((lo - 25.0 / 21.0).abs() < 1e-9 && (hi - 9.0 / 7.0).abs() < 1e-9, "{lo} {hi}");
    assert!(!psdsf::is_psdsf_rdm(&inst, &a, 1e-7) && !psdsf::is_psdsf_rdm(&inst, &b, 1e-7));
    let mut servers = Servers::new(&inst, Sharing::Rdm);
    let done = servers.converge(|_| order.to_vec()).expect("converges with a smaller step");
    assert!(done.step < 1.0 && done.sweeps > psdsf::SWEEPS_PER_STEP, "{done:?}");
    let x = servers.allocation();
    assert!(psdsf::is_psdsf_rdm(&inst, x.per_server.as_ref().expect("placed"), 1e-7));
    assert_totals("damped", &x.totals, &[27.0 / 17.0, 58.0 / 119.0, 58.0 / 119.0, 36.0 / 17.0, 58.0 / 119.0], 1e-8);
}

/// A proptest find (CI, 2026-11-23): server s1 has none of resource r2, and the
/// baselines' lexicographic programs, with their earlier levels fixed, were declared
/// infeasible by the solver at tight tolerances.
#[test]
fn baselines_solve_with_a_server_missing_a_resource() {
    let inst =
        Builder::new(&[&[8.0, 0.0], &[1.0, 3.0]], &[&[0.0, 5.0], &[5.0, 4.0], &[2.0, 2.0], &[2.0, 3.0], &[5.0, 0.0]])
            .weights(&[2.0, 3.0, 2.0, 1.0, 2.0])
            .build()
            .expect("valid instance");
    for which in [Baseline::CDrfh, Baseline::Tsf, Baseline::Cdrf] {
        let a = baseline(&inst, which).unwrap_or_else(|e| panic!("{which:?}: {e}"));
        assert!(psdsf::feasible_rdm(&inst, a.per_server.as_ref().expect("placed"), 1e-6), "{which:?}");
    }
}
