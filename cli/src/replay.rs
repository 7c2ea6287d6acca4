//! `fairshare replay`: a demand trace through one policy; per-quantum results as CSV
//! (`quantum,user,demand,alloc,credits`) and a summary on stderr.

use crate::input::{pool_for, read_trace, UserSource};
use crate::output::{progress, ratio, write_output};
use crate::CliError;
use fairshare::{Credits, Policy};
use std::path::Path;

/// What `replay` needs.
pub struct ReplayRequest<'a> {
    /// Trace CSV.
    pub trace: &'a Path,
    /// Shares for every user, or a users file.
    pub users: UserSource<'a>,
    /// Initial credits of every user.
    pub initial_credits: Credits,
    /// Policy to run.
    pub policy: Policy,
    /// Output CSV (stdout when absent).
    pub out: Option<&'a Path>,
    /// Where the quanta run.
    pub backend: crate::backend::Backend,
    /// How device backends are used.
    pub device: crate::backend::DeviceOptions,
    /// Summary as JSON.
    pub json: bool,
}

/// Runs a replay; nothing is written unless the whole run succeeded.
pub fn run(req: &ReplayRequest) -> Result<(), CliError> {
    let mut trace = read_trace(req.trace)?;
    let config = pool_for(&mut trace, &req.users, req.initial_credits)?;
    let n = trace.users.len();
    let bar = progress(trace.demands.len(), "replay");
    let mut rows: Vec<(Vec<u64>, Vec<Credits>)> = Vec::with_capacity(trace.demands.len());
    let mut pool = req.backend.pool(&config, req.policy, req.device)?;
    let summary = fairshare_sim::run_pool(&mut pool, &trace.demands, |_, _, pool| {
        rows.push((pool.allocations().to_vec(), pool.credits().to_vec()));
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    crate::backend::report(&pool);
    // Only Karma has credits; the other policies' rows have no credits column.
    let credits = req.policy == fairshare::Policy::Karma;
    // With --json, stdout holds the JSON summary; the rows go only to --out.
    let write_rows = !(req.json && req.out.is_none());
    if write_rows {
        write_output(req.out, |out| {
            // A CSV writer, so that user names with commas or quotes come out quoted.
            let mut csv = csv::Writer::from_writer(out);
            let header = ["quantum", "user", "demand", "alloc", "credits"];
            csv.write_record(if credits { &header[..] } else { &header[..4] })?;
            for (q, (alloc, balances)) in rows.iter().enumerate() {
                let label = trace.labels[q].to_string();
                for u in 0..n {
                    let (demand, a) = (trace.demands[q][u].to_string(), alloc[u].to_string());
                    let mut row = vec![label.clone(), trace.users[u].clone(), demand, a];
                    if credits {
                        row.push(balances[u].to_string());
                    }
                    csv.write_record(&row)?;
                }
            }
            csv.flush()
        })
        .map_err(|e| match req.out {
            None if e.kind() == std::io::ErrorKind::BrokenPipe => CliError::ClosedStdout,
            None => CliError::Io(format!("writing stdout: {e}")),
            Some(p) => CliError::Io(format!("writing {}: {e}", p.display())),
        })?;
    }
    if req.json {
        let json = serde_json::json!({
            "policy": req.policy.name(),
            "backend": req.backend.to_string(),
            "device_quanta": pool.device_quanta(),
            "fallback": pool.fallback().map(crate::backend::fallback_json),
            "quanta": summary.quanta,
            "users": summary.users,
            "capacity": config.capacity(),
            "utilization": summary.utilization,
            "utilization_of_demand": summary.utilization_of_demand,
            "fairness": summary.fairness,
            "min_welfare": summary.min_welfare,
            "max_welfare": summary.max_welfare,
            "disparity": summary.disparity,
            "jain": summary.jain,
        });
        println!("{json}");
    } else {
        eprintln!(
            "replay: policy {}, {} quanta, {} users, pool {} slices: utilization {}, fairness {} (welfare min {}, max {}), disparity {}, Jain {}",
            req.policy,
            summary.quanta,
            summary.users,
            config.capacity(),
            ratio(summary.utilization),
            ratio(summary.fairness),
            ratio(summary.min_welfare),
            ratio(summary.max_welfare),
            ratio(summary.disparity),
            ratio(summary.jain)
        );
    }
    Ok(())
}
