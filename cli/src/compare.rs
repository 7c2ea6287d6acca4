//! `fairshare compare`: policies (and backends) side by side on one workload, written
//! as a report folder: `summary.md`, CSV files of the per-run, per-quantum, per-user and
//! conformance results, and the plots (SVG and PNG). The folder is built next to its
//! destination and swapped in only when complete.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::backend::{Backend, DeviceOptions};
use crate::output::{progress, ratio, table};
use crate::{plots, CliError};
use fairshare_sim::compare::{compare, Comparison, Setup};
use fairshare_sim::metrics::QuantumTime;
use fairshare_sim::workload::{bursty_kind_name, Workload};
use serde::Serialize;

/// The most demands (users x quanta) a comparison generates: it holds them in memory.
pub const MAX_DEMANDS: usize = 50_000_000;

/// `fairshare compare`'s parameters.
pub struct CompareRequest {
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

/// One line of the summary: a policy at one alpha on one backend.
#[derive(Debug, Serialize)]
pub struct Row {
    /// Policy name.
    pub policy: &'static str,
    /// Karma's alpha (`null` where it does not apply).
    pub alpha: Option<f64>,
    /// Backend name.
    pub backend: String,
    /// Useful allocation / pool.
    pub utilization: f64,
    /// Useful allocation / min(demand, pool).
    pub utilization_of_demand: f64,
    /// Worst / best welfare.
    pub fairness: f64,
    /// Median / worst welfare (`null` when the worst is 0).
    pub disparity: Option<f64>,
    /// Jain's index of the users' totals.
    pub jain: f64,
    /// Worst welfare.
    pub min_welfare: f64,
    /// Best welfare.
    pub max_welfare: f64,
    /// Wall-clock time per quantum.
    pub quantum_time: Option<QuantumTime>,
}

/// The summary rows of a comparison, in run order.
pub fn rows(c: &Comparison) -> Vec<Row> {
    c.runs
        .iter()
        .map(|r| {
            let s = &r.summary;
            Row {
                policy: r.policy,
                alpha: r.alpha,
                backend: r.backend.clone(),
                utilization: s.utilization,
                utilization_of_demand: s.utilization_of_demand,
                fairness: s.fairness,
                disparity: s.disparity.is_finite().then_some(s.disparity),
                jain: s.jain,
                min_welfare: s.min_welfare,
                max_welfare: s.max_welfare,
                quantum_time: s.quantum_time.clone(),
            }
        })
        .collect()
}

/// The header and cells of the summary table; `full` adds alpha, backend and time.
pub fn cells(rows: &[Row], full: bool) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let mut header = vec!["policy"];
    if full {
        header.extend(["alpha", "backend"]);
    }
    header.extend(["utilization", "of demand", "fairness", "worst welfare", "best welfare", "disparity", "jain"]);
    if full {
        header.push("µs/quantum (median)");
    }
    let cells = rows
        .iter()
        .map(|r| {
            let mut row = vec![r.policy.to_string()];
            if full {
                row.push(r.alpha.map_or("-".into(), |a| a.to_string()));
                row.push(r.backend.clone());
            }
            row.extend([
                ratio(r.utilization),
                ratio(r.utilization_of_demand),
                ratio(r.fairness),
                ratio(r.min_welfare),
                ratio(r.max_welfare),
                r.disparity.map_or("inf".into(), ratio),
                ratio(r.jain),
            ]);
            if full {
                row.push(r.quantum_time.as_ref().map_or("-".into(), |t| format!("{:.2}", t.p50_us)));
            }
            row
        })
        .collect();
    (header, cells)
}

/// What every metric means, for the table's readers.
pub const DEFINITIONS: &str = "utilization = useful allocation / pool; of demand = useful allocation / min(demand, \
pool); welfare = useful allocation / demand per user; fairness = worst / best welfare; disparity = median / worst \
welfare; jain = Jain's index of the users' totals. Useful allocation counts a user's slices up to its true demand.";

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
    let c = compare(setup, backends, |b, config, policy| b.pool(config, policy, device), || bar.inc(1))?;
    bar.finish_and_clear();
    for r in &c.runs {
        if let Some(fb) = &r.fallback {
            crate::backend::report_fallback(&format!("{} ({})", r.backend, plots::variant(r.policy, r.alpha)), fb);
        }
    }
    Ok(c)
}

/// Runs `fairshare compare`.
pub fn run(req: &CompareRequest) -> Result<(), CliError> {
    let target = Target::new(&req.out)?;
    if req.plots {
        fairshare_sim::font::register().map_err(CliError::Usage)?;
    }
    let c = evaluate(&req.setup, &req.backends, req.device)?;
    let rows = rows(&c);
    target.write(|dir| write_report(dir, &c, &rows, req))?;
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
        println!("{json:#}");
        return Ok(());
    }
    let (header, cells) = cells(&rows, true);
    print!("{}", table(&header, &cells));
    println!("\n{DEFINITIONS}");
    if !c.backends_agree {
        println!("\nThe backends disagree: see runs.csv.");
    }
    println!("\nReport written to {}", req.out.display());
    Ok(())
}

/// The report folder: refuses to replace anything that is not an earlier report.
struct Target {
    out: PathBuf,
    parent: PathBuf,
    name: String,
}

impl Target {
    fn new(out: &Path) -> Result<Self, CliError> {
        let name = out
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| CliError::Usage(format!("--out {}: not a folder name", out.display())))?
            .to_string();
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            return Err(CliError::Usage(format!(
                "--out {}: folder {} does not exist",
                out.display(),
                parent.display()
            )));
        }
        if out.exists() {
            let earlier_report = out.join("summary.md").is_file();
            let empty = fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(false);
            if !out.is_dir() || !(earlier_report || empty) {
                return Err(CliError::Usage(format!(
                    "--out {}: exists and is not an earlier report (no summary.md); refusing to replace it",
                    out.display()
                )));
            }
        }
        Ok(Target { out: out.to_path_buf(), parent, name })
    }

    /// Builds the folder with `fill` beside the destination, then swaps it in.
    fn write(&self, fill: impl FnOnce(&Path) -> Result<(), CliError>) -> Result<(), CliError> {
        let io = |what: &str, p: &Path, e: io::Error| CliError::Io(format!("{what} {}: {e}", p.display()));
        let stage = self.parent.join(format!(".{}.new-{}", self.name, std::process::id()));
        let old = self.parent.join(format!(".{}.old-{}", self.name, std::process::id()));
        let _ = fs::remove_dir_all(&stage);
        fs::create_dir(&stage).map_err(|e| io("creating", &stage, e))?;
        if let Err(e) = fill(&stage) {
            let _ = fs::remove_dir_all(&stage);
            return Err(e);
        }
        let replacing = self.out.exists();
        if replacing {
            if let Err(e) = fs::rename(&self.out, &old) {
                let _ = fs::remove_dir_all(&stage);
                return Err(io("moving aside", &self.out, e));
            }
        }
        if let Err(e) = fs::rename(&stage, &self.out) {
            // Put the earlier report back: a failed run changes nothing.
            if replacing {
                let _ = fs::rename(&old, &self.out);
            }
            let _ = fs::remove_dir_all(&stage);
            return Err(io("renaming into place", &self.out, e));
        }
        let _ = fs::remove_dir_all(&old);
        Ok(())
    }
}

fn alpha_cell(a: Option<f64>) -> String {
    a.map_or(String::new(), |a| a.to_string())
}

fn csv_file(dir: &Path, name: &str, header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<(), CliError> {
    let path = dir.join(name);
    let fail = |e: csv::Error| CliError::Io(format!("writing {}: {e}", path.display()));
    let mut w = csv::Writer::from_path(&path).map_err(fail)?;
    w.write_record(header).map_err(fail)?;
    for row in rows {
        w.write_record(&row).map_err(fail)?;
    }
    w.flush().map_err(|e| CliError::Io(format!("writing {}: {e}", path.display())))
}

fn write_report(dir: &Path, c: &Comparison, rows: &[Row], req: &CompareRequest) -> Result<(), CliError> {
    let (users, f) = c.setup.shape();
    let capacity = users as u128 * f as u128;
    let kind =
        |u: usize| if c.setup.workload == Workload::Bursty { bursty_kind_name(u) } else { c.setup.workload.name() };
    csv_file(
        dir,
        "runs.csv",
        &[
            "policy",
            "alpha",
            "backend",
            "utilization",
            "utilization_of_demand",
            "fairness",
            "disparity",
            "jain",
            "min_welfare",
            "max_welfare",
            "mean_us",
            "p50_us",
            "p99_us",
            "max_us",
        ],
        rows.iter().map(|r| {
            let t = r.quantum_time.clone().unwrap_or_default();
            vec![
                r.policy.into(),
                alpha_cell(r.alpha),
                r.backend.clone(),
                r.utilization.to_string(),
                r.utilization_of_demand.to_string(),
                r.fairness.to_string(),
                r.disparity.map_or("inf".into(), |d| d.to_string()),
                r.jain.to_string(),
                r.min_welfare.to_string(),
                r.max_welfare.to_string(),
                format!("{:.3}", t.mean_us),
                format!("{:.3}", t.p50_us),
                format!("{:.3}", t.p99_us),
                format!("{:.3}", t.max_us),
            ]
        }),
    )?;
    csv_file(
        dir,
        "quanta.csv",
        &["policy", "alpha", "backend", "quantum", "demand", "allocated", "utilization"],
        c.runs.iter().flat_map(|r| {
            r.per_quantum.iter().enumerate().map(move |(q, &(d, a))| {
                vec![
                    r.policy.into(),
                    alpha_cell(r.alpha),
                    r.backend.clone(),
                    (q + 1).to_string(),
                    d.to_string(),
                    a.to_string(),
                    (a as f64 / capacity as f64).to_string(),
                ]
            })
        }),
    )?;
    csv_file(
        dir,
        "users.csv",
        &["policy", "alpha", "backend", "user", "kind", "demand", "allocated", "welfare"],
        c.runs.iter().flat_map(|r| {
            (0..users).map(move |u| {
                vec![
                    r.policy.into(),
                    alpha_cell(r.alpha),
                    r.backend.clone(),
                    u.to_string(),
                    kind(u).into(),
                    r.summary.total_demand[u].to_string(),
                    r.summary.total_alloc[u].to_string(),
                    r.summary.welfare[u].map_or(String::new(), |w| w.to_string()),
                ]
            })
        }),
    )?;
    csv_file(
        dir,
        "conformance.csv",
        &["policy", "alpha", "welfare_lying", "welfare_truthful", "others_welfare_lied_to", "others_welfare_truthful"],
        c.conformance.iter().map(|x| {
            vec![
                x.policy.into(),
                alpha_cell(x.alpha),
                x.welfare_non_conformant.to_string(),
                x.welfare_conformant.to_string(),
                x.others_welfare_when_lied_to.to_string(),
                x.others_welfare_truthful.to_string(),
            ]
        }),
    )?;
    if req.plots {
        plots::write_all(dir, c).map_err(CliError::Io)?;
    }
    let path = dir.join("summary.md");
    let text = summary_markdown(c, rows, req);
    fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CliError::Io(format!("writing {}: {e}", path.display())))
}

/// A markdown table.
fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}|\n", header.join(" | "), vec!["---"; header.len()].join("|"));
    for r in rows {
        out += &format!("| {} |\n", r.join(" | "));
    }
    out
}

fn summary_markdown(c: &Comparison, rows: &[Row], req: &CompareRequest) -> String {
    let s = &c.setup;
    let (users, f) = s.shape();
    let list = |xs: Vec<String>| xs.join(",");
    let command = format!(
        "fairshare compare --users {} --quanta {} --fair-share {} --alpha {} --initial-credits {} --seed {} \
         --workload {} --policies {} --backend {}",
        s.users,
        s.quanta,
        s.fair_share,
        list(s.alphas.iter().map(|a| a.to_string()).collect()),
        s.initial_credits,
        s.seed,
        s.workload,
        list(s.policies.iter().map(|p| p.name().to_string()).collect()),
        list(req.backends.iter().map(|b| b.to_string()).collect()),
    );
    let mut md = format!(
        "# fairshare compare: the {} workload\n\n{users} users, fair share {f} (pool {}), {} quanta, seed {}, \
         {} initial credits each.\nGenerated by `{command}`.\n\n",
        s.workload,
        users as u128 * f as u128,
        s.quanta,
        s.seed,
        s.initial_credits
    );
    let (header, cells) = cells(rows, true);
    md += &markdown(&header, &cells);
    md += &format!(
        "\n{DEFINITIONS}\n\nThe time column is the wall clock around each quantum on the machine that wrote this \
         report, median over the run: a rough guide, not a benchmark (see `bench/REPORT.md`).\n"
    );
    if req.backends.len() > 1 {
        md += &format!(
            "\nBackends agree on every user's total for every policy: **{}**.\n",
            if c.backends_agree { "yes" } else { "no" }
        );
    }
    if !c.conformance.is_empty() {
        md += &format!(
            "\n## Conformant vs non-conformant users (Karma paper, section 5.2)\n\n{} of the {users} users, drawn \
             with the seed, report `max(demand, f)` instead of their demand; the others are truthful. Welfare \
             counts only what a user needs.\n\n",
            c.non_conformant.len()
        );
        let cells: Vec<Vec<String>> = c
            .conformance
            .iter()
            .map(|x| {
                vec![
                    x.policy.to_string(),
                    x.alpha.map_or("-".into(), |a| a.to_string()),
                    ratio(x.welfare_non_conformant),
                    ratio(x.welfare_conformant),
                    ratio(x.others_welfare_when_lied_to),
                    ratio(x.others_welfare_truthful),
                ]
            })
            .collect();
        md += &markdown(
            &[
                "policy",
                "alpha",
                "their welfare, lying",
                "their welfare, truthful",
                "others, lied to",
                "others, all truthful",
            ],
            &cells,
        );
    }
    if req.plots {
        md += "\n## Plots\n\nThe per-user plots show the first alpha and the first backend.\n\n";
        for p in plots::Plot::ALL {
            md += &format!("{}\n\n![{}]({}.svg)\n\n", p.caption(), p.name(), p.name());
        }
    }
    md += "\nFiles: `runs.csv` (one line per run), `quanta.csv` (per quantum: total demand, useful allocation), \
           `users.csv` (per user: kind, total demand, useful allocation, welfare), `conformance.csv`";
    md += if req.plots { "; each plot as SVG and PNG.\n" } else { ".\n" };
    md
}
