//! `fairshare compare` end to end: the report folder, the JSON summary, agreement of
//! backends, and bad input that changes nothing.

mod common;

use std::path::Path;
use std::process::Output;

use common::fairshare;

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

const SMALL: [&str; 6] = ["--users", "20", "--quanta", "120", "--seed", "3"];

#[test]
fn writes_a_complete_report_and_a_json_summary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("rep");
    let out_s = out.to_str().expect("utf-8 path");
    let mut args = vec!["compare", "--out", out_s, "--json", "--alpha", "0.5,1,0"];
    args.extend(SMALL);
    let v = json(&fairshare(&args));
    let rows = v["policies"].as_array().expect("policies array");
    // Karma at three alphas, max-min and strict once each.
    assert_eq!(rows.len(), 5);
    for r in rows {
        for key in ["policy", "alpha", "utilization", "fairness", "disparity", "jain", "min_welfare", "max_welfare"] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        let fairness = r["fairness"].as_f64().expect("number");
        let (lo, hi) = (r["min_welfare"].as_f64().expect("n"), r["max_welfare"].as_f64().expect("n"));
        assert!((fairness - lo / hi).abs() < 1e-12, "fairness = min / max welfare");
        assert_eq!(r["alpha"].is_null(), r["policy"] != "karma");
    }
    assert_eq!(v["conformance"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["non_conformant_users"], 10);
    for file in ["summary.md", "runs.csv", "quanta.csv", "users.csv", "conformance.csv"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    for plot in ["cumulative", "fairness_alpha", "welfare_cdf", "conformance"] {
        let svg = std::fs::read_to_string(out.join(format!("{plot}.svg"))).expect("svg");
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{plot}.svg");
        let png = std::fs::read(out.join(format!("{plot}.png"))).expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{plot}.png");
    }
    // One line per run, per run and quantum, per run and user (plus headers).
    let lines = |f: &str| std::fs::read_to_string(out.join(f)).expect("csv").lines().count();
    assert_eq!(lines("runs.csv"), 1 + 5);
    assert_eq!(lines("quanta.csv"), 1 + 5 * 120);
    assert_eq!(lines("users.csv"), 1 + 5 * 20);
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    assert!(summary.contains("| karma | 0.5 | software |"), "{summary}");
    assert!(summary.contains("![cumulative](cumulative.svg)"));
    // No staging folders left beside the report.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").flatten().collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    // Running again replaces the earlier report.
    let again = fairshare(&["compare", "--out", out_s, "--users", "6", "--quanta", "10", "--no-plots"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(!out.join("cumulative.svg").exists(), "the old report's plots are gone");
    assert_eq!(lines("users.csv"), 1 + 7 * 6);
}

#[test]
fn the_table_matches_the_csv_and_the_literal_backend_agrees() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("rep");
    let mut args = vec![
        "compare",
        "--out",
        out.to_str().expect("utf-8"),
        "--backend",
        "software,literal",
        "--alpha",
        "0.5",
        "--no-plots",
        "--json",
    ];
    args.extend(SMALL);
    let v = json(&fairshare(&args));
    assert_eq!(v["backends_agree"], true);
    let rows = v["policies"].as_array().expect("rows");
    assert_eq!(rows.len(), 6);
    for (a, b) in rows[..3].iter().zip(&rows[3..]) {
        assert_eq!((a["backend"].as_str(), b["backend"].as_str()), (Some("software"), Some("literal")));
        for key in ["fairness", "utilization", "jain", "min_welfare"] {
            assert_eq!(a[key], b[key], "{key}: the oracle and the batched code allocate alike");
        }
    }
    let runs = std::fs::read_to_string(out.join("runs.csv")).expect("runs.csv");
    assert_eq!(runs.lines().count(), 7);
    assert!(std::fs::read_to_string(out.join("summary.md")).expect("md").contains("**yes**"));
}

#[test]
fn the_figure_2_workload_reproduces_the_papers_totals() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("fig2");
    let v = json(&fairshare(&[
        "compare",
        "--workload",
        "figure-2",
        "--quanta",
        "5",
        "--alpha",
        "0.5",
        "--initial-credits",
        "6",
        "--no-plots",
        "--json",
        "--out",
        out.to_str().expect("utf-8"),
    ]));
    assert_eq!(v["workload"]["users"], 3);
    let users = std::fs::read_to_string(out.join("users.csv")).expect("users.csv");
    // docs/spec/karma.md: Karma 8, 8, 8; max-min 10, 9, 5.
    let totals = |policy: &str| -> Vec<String> {
        users
            .lines()
            .filter(|l| l.starts_with(&format!("{policy},")))
            .map(|l| l.split(',').nth(6).expect("allocated").to_string())
            .collect()
    };
    assert_eq!(totals("karma"), ["8", "8", "8"]);
    assert_eq!(totals("maxmin"), ["10", "9", "5"]);
}

fn assert_refused(args: &[&str], message: &str, out: &Path) {
    let o = fairshare(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(message), "{args:?}: {err}");
    assert!(!out.join("summary.md").exists(), "{args:?}: no report was written");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let precious = dir.path().join("precious");
    std::fs::create_dir(&precious).expect("mkdir");
    std::fs::write(precious.join("keep.txt"), "mine").expect("write");
    let p = precious.to_str().expect("utf-8");
    assert_refused(&["compare", "--out", p, "--users", "5", "--quanta", "5"], "not an earlier report", &precious);
    assert_eq!(std::fs::read_to_string(precious.join("keep.txt")).expect("kept"), "mine");
    assert_eq!(std::fs::read_dir(&precious).expect("dir").count(), 1);
    let fresh = dir.path().join("fresh");
    let f = fresh.to_str().expect("utf-8");
    assert_refused(&["compare", "--out", f, "--alpha", "0.5,2"], "alpha", &fresh);
    assert_refused(&["compare", "--out", f, "--alpha", "0.5,0.5"], "given twice", &fresh);
    assert_refused(&["compare", "--out", f, "--users", "0"], "at least 1", &fresh);
    assert_refused(&["compare", "--out", f, "--workload", "spiky"], "unknown workload", &fresh);
    assert_refused(&["compare", "--out", f, "--policies", "karma,fifo"], "fifo", &fresh);
    assert_refused(&["compare", "--out", f, "--backend", "fpga"], "backend", &fresh);
    let nowhere = dir.path().join("no/such/dir/rep");
    assert_refused(&["compare", "--out", nowhere.to_str().expect("utf-8")], "does not exist", &nowhere);
    assert!(!fresh.exists(), "nothing was created");
}

/// The matrix holds every workload but figure-2 with every variant, each cell the
/// same run `compare --workload W` makes alone (fairness, Jain's index and
/// utilization equal to the digit); its files are written, a bad flag refuses it.
#[test]
fn the_matrix_is_every_workload_each_cell_its_own_comparison() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("matrix");
    let out_s = out.to_str().expect("utf-8 path");
    let mut args = vec!["compare", "--matrix", "--out", out_s, "--json", "--alpha", "0.5,0"];
    args.extend(SMALL);
    let v = json(&fairshare(&args));
    let cells = v["cells"].as_array().expect("cells array");
    let workloads = ["bursty", "steady", "on-off", "heavy-tailed", "diurnal", "production"];
    assert_eq!(cells.len(), workloads.len() * 4, "karma at two alphas, max-min, strict per workload");
    for w in workloads {
        let one = dir.path().join(format!("one-{w}"));
        let mut args = vec!["compare", "--workload", w, "--out", one.to_str().expect("utf-8"), "--json", "--no-plots"];
        args.extend(["--alpha", "0.5,0"]);
        args.extend(SMALL);
        let alone = json(&fairshare(&args));
        let runs = alone["policies"].as_array().expect("policies");
        let mine: Vec<&serde_json::Value> = cells.iter().filter(|c| c["workload"] == w).collect();
        assert_eq!(mine.len(), runs.len(), "{w}");
        for (c, r) in mine.iter().zip(runs) {
            for key in ["policy", "alpha", "fairness", "jain", "utilization", "min_welfare", "disparity"] {
                assert_eq!(c[key], r[key], "{w}: {key} of {c} vs {r}");
            }
            let spread = c["allocation_spread"].as_f64().expect("spread");
            assert!((0.0..10.0).contains(&spread), "{c}");
        }
    }
    let lines = std::fs::read_to_string(out.join("matrix.csv")).expect("csv").lines().count();
    assert_eq!(lines, 1 + workloads.len() * 4);
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary");
    for w in workloads {
        assert!(summary.contains(&format!("- {w}: ")), "a verdict for {w}: {summary}");
    }
    let svg = std::fs::read_to_string(out.join("fairness_matrix.svg")).expect("svg");
    assert!(svg.starts_with("<svg") && svg.contains("</svg>"));
    let fresh = dir.path().join("fresh");
    let f = fresh.to_str().expect("utf-8");
    assert_refused(&["compare", "--matrix", "--workload", "steady", "--out", f], "cannot be used with", &fresh);
    assert_refused(&["compare", "--matrix", "--out", f, "--users", "0"], "at least 1", &fresh);
}
