//! `fairshare multi`: one multi-resource policy on a JSON instance file; a table per user
//! (tasks, dominant share, tasks per server), or JSON for scripts.

use std::path::Path;
use std::process::ExitCode;

use fairshare_multi::{Allocation, Instance, Options, Report};
use serde_json::{json, Map, Value};

use crate::flags::MultiArgs;
use crate::output::{out, outln, table};
use crate::CliError;

/// Reads and validates the instance; errors name the file and the line or the field.
pub fn load(path: &Path) -> Result<Instance, CliError> {
    let text = std::fs::read_to_string(path).map_err(CliError::file("reading", path))?;
    Instance::from_json(&text).map_err(|source| CliError::Multi { path: path.to_path_buf(), source })
}

/// A task count as JSON: an integer for policies of whole tasks, else a real.
fn tasks_json(t: f64, whole: bool) -> Value {
    if whole {
        json!(t.round() as u64)
    } else {
        json!(t)
    }
}

/// A task count in a table: an integer for policies of whole tasks, else 6 decimals.
fn tasks_cell(t: f64, whole: bool) -> String {
    if whole {
        format!("{t:.0}")
    } else {
        format!("{t:.6}")
    }
}

fn users_json(inst: &Instance, a: &Allocation, whole: bool) -> Vec<Value> {
    (0..inst.n_users())
        .map(|n| {
            let per_server = a.per_server.as_ref().map(|x| {
                let map: Map<String, Value> =
                    inst.servers.iter().zip(&x[n]).map(|(s, &t)| (s.clone(), tasks_json(t, whole))).collect();
                Value::Object(map)
            });
            json!({
                "name": inst.users[n],
                "tasks": tasks_json(a.totals[n], whole),
                "dominant_share": inst.dominant_share(n, a.totals[n]),
                "per_server": per_server,
            })
        })
        .collect()
}

fn users_table(inst: &Instance, a: &Allocation, whole: bool) -> String {
    let mut header = vec!["user", "tasks", "dominant share"];
    if a.per_server.is_some() {
        header.extend(inst.servers.iter().map(String::as_str));
    }
    let rows: Vec<Vec<String>> = (0..inst.n_users())
        .map(|n| {
            let mut row = vec![
                inst.users[n].clone(),
                tasks_cell(a.totals[n], whole),
                format!("{:.6}", inst.dominant_share(n, a.totals[n])),
            ];
            if let Some(x) = &a.per_server {
                row.extend(x[n].iter().map(|&t| tasks_cell(t, whole)));
            }
            row
        })
        .collect();
    table(&header, &rows)
}

/// Prints the report as a table, or as JSON with `json`.
fn print(inst: &Instance, report: &Report, json: bool) -> Result<(), CliError> {
    let whole = report.policy.whole_tasks();
    if json {
        let steps: Vec<Value> = report
            .steps
            .iter()
            .enumerate()
            .map(|(k, a)| {
                let arrived = inst.subset(&(0..=k).collect::<Vec<_>>());
                json!({ "arrival": inst.users[k], "users": users_json(&arrived, a, whole) })
            })
            .collect();
        let mut out = json!({
            "policy": report.policy.name(),
            "method": report.method,
            "pooled": report.allocation.per_server.is_none(),
            "users": users_json(inst, &report.allocation, whole),
            "ignored": report.ignored,
        });
        if !steps.is_empty() {
            out["steps"] = Value::Array(steps);
        }
        return outln!("{out:#}");
    }
    outln!("policy {} ({})", report.policy, report.method)?;
    if report.allocation.per_server.is_none() {
        outln!("allocated from the pooled capacity; tasks are not placed on servers")?;
    }
    for (k, a) in report.steps.iter().enumerate() {
        let arrived = inst.subset(&(0..=k).collect::<Vec<_>>());
        outln!("\nafter arrival {} ({}):", k + 1, inst.users[k])?;
        out!("{}", users_table(&arrived, a, whole))?;
    }
    if report.steps.is_empty() {
        out!("{}", users_table(inst, &report.allocation, whole))?;
    }
    Ok(())
}

/// `fairshare multi --policy P --instance FILE [--json] [--steps]`: with `steps`, dynamic
/// policies (ddrf) also print the allocation after each arrival.
pub fn run(args: MultiArgs) -> Result<ExitCode, CliError> {
    let MultiArgs { policy, instance: path, json, steps } = args;
    let inst = load(&path)?;
    let report = fairshare_multi::run_with(policy, &inst, Options { steps })
        .map_err(|source| CliError::Multi { path: path.clone(), source })?;
    for field in &report.ignored {
        eprintln!("fairshare: note: {policy} ignores {field}");
    }
    print(&inst, &report, json)?;
    Ok(ExitCode::SUCCESS)
}
