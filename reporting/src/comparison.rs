//! The evaluation as files: one summary row per run ([`rows`]), its table ([`cells`]),
//! and the report folder's contents ([`write`]): `runs.csv`, `quanta.csv`, `users.csv`,
//! `conformance.csv`, the plots, and `summary.md`, which says how to regenerate it.

use std::io::Write;
use std::path::Path;

use fairshare_sim::compare::Comparison;
use fairshare_sim::metrics::QuantumTime;
use fairshare_sim::workload::{bursty_kind_name, Workload};
use serde::Serialize;

use crate::table::{csv_file, markdown, ratio};
use crate::{plots, ReportError};

/// What the report says about how it was made, beyond the comparison itself.
#[derive(Clone, Debug)]
pub struct Meta {
    /// The backends the runs used, as `--backend` names them, in order.
    pub backends: Vec<String>,
    /// Whether to draw the plots (they need a TrueType font).
    pub plots: bool,
}

/// One line of the summary: a policy at one alpha on one backend.
#[derive(Debug, Clone, Serialize)]
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

fn alpha_cell(a: Option<f64>) -> String {
    a.map_or(String::new(), |a| a.to_string())
}

/// Writes the report's files into `dir` (a fresh folder, see [`crate::folder`]).
pub fn write(dir: &Path, c: &Comparison, rows: &[Row], meta: &Meta) -> Result<(), ReportError> {
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
    if meta.plots {
        plots::write_all(dir, c)?;
    }
    let path = dir.join(crate::folder::MARKER);
    let text = summary_markdown(c, rows, meta);
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| ReportError::io("writing", &path, e))
}

fn summary_markdown(c: &Comparison, rows: &[Row], meta: &Meta) -> String {
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
        meta.backends.join(","),
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
    if meta.backends.len() > 1 {
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
    if meta.plots {
        md += "\n## Plots\n\nThe per-user plots show the first alpha and the first backend.\n\n";
        for p in plots::Plot::ALL {
            md += &format!("{}\n\n![{}]({}.svg)\n\n", p.caption(), p.name(), p.name());
        }
    }
    md += "\nFiles: `runs.csv` (one line per run), `quanta.csv` (per quantum: total demand, useful allocation), \
           `users.csv` (per user: kind, total demand, useful allocation, welfare), `conformance.csv`";
    md += if meta.plots { "; each plot as SVG and PNG.\n" } else { ".\n" };
    md
}
