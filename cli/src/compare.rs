//! `fairshare compare`: checks the flags, runs policies (and backends) side by side on
//! one workload with a progress bar, has `fairshare-report` write the report folder, and
//! prints the summary.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::backend::{Backend, DeviceOptions};
use crate::flags::{CompareArgs, PoolArgs};
use crate::output::{out, outln, progress, table};
use crate::CliError;
use fairshare_report::comparison::{cells, rows, Meta, DEFINITIONS};
use fairshare_report::folder::ReportFolder;
use fairshare_report::plots;
use fairshare_sim::compare::{compare, Comparison, Setup};

/// The most demands (users x quanta) a comparison generates: it holds them in memory.
pub const MAX_DEMANDS: usize = 50_000_000;

/// `fairshare compare`'s parameters, checked.
struct CompareRequest {
    /// What to run.
    pub setup: Setup,
    /// Where to run it; the first backend also runs the conformance experiment.
    pub backends: Vec<Backend>,
    /// How device backends are used.
    pub device: DeviceOptions,
    /// The report folder.
    pub out: PathBuf,
    /// Draw the plots (they need a TrueType font).
    pub plots: bool,
    /// The summary as JSON on stdout instead of a table.
    pub json: bool,
}

/// Checks the sizes before anything runs.
fn check(setup: &Setup) -> Result<(), CliError> {
    if setup.users == 0 || setup.quanta == 0 || setup.fair_share == 0 {
        return Err(CliError::Usage("--users, --quanta and --fair-share must be at least 1".into()));
    }
    if setup.users.saturating_mul(setup.quanta) > MAX_DEMANDS {
        return Err(CliError::Usage(format!(
            "--users {} x --quanta {} is more than {MAX_DEMANDS} demands (the workload is kept in memory)",
            setup.users, setup.quanta
        )));
    }
    if setup.alphas.is_empty() || setup.policies.is_empty() {
        return Err(CliError::Usage("--alpha and --policies need at least one value".into()));
    }
    for (i, a) in setup.alphas.iter().enumerate() {
        if setup.alphas[..i].contains(a) {
            return Err(CliError::Usage(format!("--alpha {a} is given twice")));
        }
    }
    for (i, p) in setup.policies.iter().enumerate() {
        if setup.policies[..i].contains(p) {
            return Err(CliError::Usage(format!("--policies {} is given twice", p.name())));
        }
    }
    Ok(())
}

/// Runs the comparison with a progress bar.
pub fn evaluate(setup: &Setup, backends: &[Backend], device: DeviceOptions) -> Result<Comparison, CliError> {
    check(setup)?;
    let bar = progress(setup.steps(backends.len()) as usize, "compare");
    let c = compare(setup, backends, |b, config, policy| b.offload(config, policy, device), || bar.inc(1))?;
    bar.finish_and_clear();
    for r in &c.runs {
        if let Some(fb) = &r.fallback {
            crate::backend::report_fallback(&format!("{} ({})", r.backend, plots::variant(r.policy, r.alpha)), fb);
        }
    }
    Ok(c)
}

/// Runs `fairshare compare`.
pub fn run(args: CompareArgs) -> Result<ExitCode, CliError> {
    let CompareArgs {
        pool: PoolArgs { users, quanta, fair_share, initial_credits, seed },
        alpha,
        workload,
        policies,
        backend,
        device,
        out,
        no_plots,
        json,
        matrix,
    } = args;
    let setup = Setup {
        users,
        quanta,
        fair_share,
        alphas: alpha,
        initial_credits,
        seed,
        workload,
        policies,
        conformance: true,
    };
    let req = CompareRequest { setup, backends: backend, device: device.options(), out, plots: !no_plots, json };
    if matrix {
        write_matrix(&req)?;
    } else {
        write_report(&req)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs every workload of the matrix with a progress bar, writes its folder, prints
/// the table and which policy is fairest on each workload.
fn write_matrix(req: &CompareRequest) -> Result<(), CliError> {
    check(&req.setup)?;
    let target = ReportFolder::new(&req.out)?;
    if req.plots {
        fairshare_report::font::register()?;
    }
    let workloads = fairshare_sim::matrix::workloads();
    let bar = progress(workloads.len() * req.setup.variants().len() * req.setup.quanta, "matrix");
    let cells = fairshare_sim::matrix::matrix(&req.setup, &workloads, || bar.inc(1))?;
    bar.finish_and_clear();
    target.write(|dir| fairshare_report::matrix::write(dir, &req.setup, &cells, req.plots))?;
    if req.json {
        outln!("{:#}", serde_json::json!({ "cells": cells, "report": req.out.display().to_string() }))?;
        return Ok(());
    }
    let (header, rows) = fairshare_report::matrix::cells(&cells);
    out!("{}", table(&header, &rows))?;
    outln!("\n{}\n", fairshare_report::matrix::DEFINITIONS)?;
    for v in fairshare_report::matrix::verdicts(&cells) {
        outln!("{v}")?;
    }
    outln!("\nReport written to {}", req.out.display())?;
    Ok(())
}

/// Runs the comparison, writes the report folder, prints the summary.
fn write_report(req: &CompareRequest) -> Result<(), CliError> {
    let target = ReportFolder::new(&req.out)?;
    if req.plots {
        fairshare_report::font::register()?;
    }
    let c = evaluate(&req.setup, &req.backends, req.device)?;
    let rows = rows(&c);
    let meta = Meta { backends: req.backends.iter().map(|b| b.to_string()).collect(), plots: req.plots };
    target.write(|dir| fairshare_report::comparison::write(dir, &c, &rows, &meta))?;
    if req.json {
        let (users, f) = c.setup.shape();
        let json = serde_json::json!({
            "workload": {
                "kind": c.setup.workload.name(), "users": users, "quanta": c.setup.quanta, "fair_share": f,
                "initial_credits": c.setup.initial_credits, "seed": c.setup.seed,
            },
            "policies": rows,
            "conformance": c.conformance,
            "non_conformant_users": c.non_conformant.len(),
            "backends_agree": c.backends_agree,
            "report": req.out.display().to_string(),
        });
        outln!("{json:#}")?;
        return Ok(());
    }
    let (header, cells) = cells(&rows, true);
    out!("{}", table(&header, &cells))?;
    outln!("\n{DEFINITIONS}")?;
    if !c.backends_agree {
        outln!("\nThe backends disagree: see runs.csv.")?;
    }
    outln!("\nReport written to {}", req.out.display())?;
    Ok(())
}
