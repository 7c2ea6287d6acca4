//! `fairshare demo`: the main job on the embedded default. A built-in bursty workload
//! through Karma, max-min and strict partitioning, compared side by side, and the
//! paper's worked example (Figures 2 and 3) computed live.

use std::process::ExitCode;

use crate::compare;
use crate::flags::{DemoArgs, PoolArgs};
use crate::output::{out, outln, table};
use crate::CliError;
use fairshare::{Allocator, Alpha, Policy, PoolConfig};
use fairshare_sim::compare::Setup;
use fairshare_sim::workload::Workload;
use serde::Serialize;

/// The demo's pool and workload.
struct DemoRequest {
    users: usize,
    quanta: usize,
    fair_share: u64,
    alpha: fairshare::Alpha,
    initial_credits: i64,
    seed: u64,
    json: bool,
}

#[derive(Serialize)]
struct ExampleRow {
    quantum: usize,
    demand: Vec<u64>,
    karma_alloc: Vec<u64>,
    karma_credits: Vec<String>,
    maxmin_alloc: Vec<u64>,
}

/// The paper's worked example (`docs/spec/karma.md`): 3 users, f = 2, alpha = 1/2,
/// 6 initial credits, five quanta.
const EXAMPLE_DEMANDS: [[u64; 3]; 5] = [[3, 2, 1], [3, 0, 0], [0, 3, 0], [2, 2, 4], [2, 3, 5]];

/// The worked example's rows and the Karma and max-min totals per user.
struct Example {
    rows: Vec<ExampleRow>,
    karma_totals: Vec<u64>,
    maxmin_totals: Vec<u64>,
}

fn paper_example() -> Result<Example, CliError> {
    let config = PoolConfig::equal(3, 2, Alpha::new(1, 2)?, 6)?;
    let mut karma = Allocator::new(config.clone(), Policy::Karma)?;
    let mut maxmin = Allocator::new(config, Policy::MaxMin)?;
    let (mut tk, mut tm) = (vec![0; 3], vec![0; 3]);
    let mut rows = Vec::new();
    for (q, d) in EXAMPLE_DEMANDS.iter().enumerate() {
        let k = karma.allocate(d)?.to_vec();
        let m = maxmin.allocate(d)?.to_vec();
        for u in 0..3 {
            tk[u] += k[u];
            tm[u] += m[u];
        }
        let karma_credits = karma.credits().iter().map(|c| c.to_string()).collect();
        rows.push(ExampleRow { quantum: q + 1, demand: d.to_vec(), karma_alloc: k, karma_credits, maxmin_alloc: m });
    }
    Ok(Example { rows, karma_totals: tk, maxmin_totals: tm })
}

fn join<T: ToString>(xs: &[T]) -> String {
    xs.iter().map(T::to_string).collect::<Vec<_>>().join(",")
}

/// Runs `fairshare demo` and prints it.
pub fn run(args: DemoArgs) -> Result<ExitCode, CliError> {
    let DemoArgs { pool: PoolArgs { users, quanta, fair_share, initial_credits, seed }, alpha, device, json } = args;
    let req = DemoRequest { users, quanta, fair_share, alpha, initial_credits, seed, json };
    let setup = Setup {
        users: req.users,
        quanta: req.quanta,
        fair_share: req.fair_share,
        alphas: vec![req.alpha],
        initial_credits: req.initial_credits,
        seed: req.seed,
        workload: Workload::Bursty,
        policies: Policy::ALL.to_vec(),
        conformance: false,
    };
    let c = compare::evaluate(&setup, std::slice::from_ref(&device.backend), device.options())?;
    let rows = fairshare_report::comparison::rows(&c);
    let config = PoolConfig::equal(req.users, req.fair_share, req.alpha, req.initial_credits)?;
    let Example { rows: example, karma_totals, maxmin_totals } = paper_example()?;
    if req.json {
        let json = serde_json::json!({
            "workload": {
                "kind": "bursty", "users": req.users, "quanta": req.quanta, "fair_share": req.fair_share,
                "alpha": req.alpha.to_f64(), "initial_credits": req.initial_credits, "seed": req.seed,
            },
            "policies": rows,
            "paper_example": { "quanta": example, "karma_totals": karma_totals, "maxmin_totals": maxmin_totals },
        });
        outln!("{json:#}")?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "fairshare demo: {} users, fair share {} (pool {}), alpha {}, {} quanta of the bursty workload (seed {})\n",
        req.users,
        req.fair_share,
        config.capacity(),
        req.alpha,
        req.quanta,
        req.seed
    )?;
    let (header, cells) = fairshare_report::comparison::cells(&rows, false);
    out!("{}", table(&header, &cells))?;
    outln!("\n{}\n", fairshare_report::comparison::DEFINITIONS)?;
    outln!("The paper's worked example (Figures 2 and 3): 3 users, fair share 2, alpha 0.5, 6 initial credits\n")?;
    let mut cells: Vec<Vec<String>> = example
        .iter()
        .map(|r| {
            vec![
                r.quantum.to_string(),
                join(&r.demand),
                join(&r.karma_alloc),
                join(&r.karma_credits),
                join(&r.maxmin_alloc),
            ]
        })
        .collect();
    cells.push(vec!["total".into(), String::new(), join(&karma_totals), String::new(), join(&maxmin_totals)]);
    out!("{}", table(&["quantum", "demands A,B,C", "karma alloc", "credits after", "max-min alloc"], &cells))?;
    Ok(ExitCode::SUCCESS)
}
