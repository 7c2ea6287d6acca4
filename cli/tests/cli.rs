//! The `fairshare` binary end to end: demo, replay, selftest, and every kind of bad
//! input (exit status 2, a message naming file, line and field, no partial output).
//! Expected values come from `vectors/karma_paper.json` and `docs/spec/karma.md`.

#![allow(clippy::unwrap_used)]

mod common;

use common::{fairshare, text, write};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn vectors(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors").join(file)
}

/// The paper case of the vector file: (demands, allocs, credits) per quantum.
fn paper_case() -> Vec<(Vec<u64>, Vec<u64>, Vec<String>)> {
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(vectors("karma_paper.json")).unwrap()).unwrap();
    let case = json["cases"].as_array().unwrap().iter().find(|c| c["name"] == "karma-paper-figure-3").unwrap();
    let nums = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect::<Vec<_>>();
    case["quanta"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let credits =
                q["credits_after"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect();
            (nums(&q["demand"]), nums(&q["alloc"]), credits)
        })
        .collect()
}

/// The paper's demands as a trace with users A, B, C.
fn paper_trace() -> String {
    let mut s = String::from("quantum,user,demand\n");
    for (q, (d, _, _)) in paper_case().iter().enumerate() {
        for (u, name) in ["A", "B", "C"].iter().enumerate() {
            s += &format!("{},{name},{}\n", q + 1, d[u]);
        }
    }
    s
}

#[test]
fn demo_prints_the_comparison_and_the_paper_example() {
    let out = fairshare(&["demo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for policy in ["karma", "maxmin", "strict"] {
        assert!(stdout.lines().any(|l| l.starts_with(policy)), "no row for {policy}:\n{stdout}");
    }
    // Totals of the worked example, as the spec's table states them.
    assert!(stdout.lines().any(|l| l.starts_with("total") && l.contains("8,8,8") && l.contains("10,9,5")), "{stdout}");
}

#[test]
fn demo_json_matches_the_vectors() {
    let out = fairshare(&["demo", "--json", "--users", "20", "--quanta", "50"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let policies = json["policies"].as_array().unwrap();
    assert_eq!(
        policies.iter().map(|p| p["policy"].as_str().unwrap()).collect::<Vec<_>>(),
        ["karma", "maxmin", "strict"]
    );
    for p in policies {
        for field in ["utilization", "fairness", "min_welfare", "max_welfare", "disparity", "jain"] {
            let x = p[field].as_f64().unwrap();
            assert!(x.is_finite() && x >= 0.0, "{field} = {x}");
        }
        assert!(p["fairness"].as_f64().unwrap() <= 1.0);
    }
    let example = json["paper_example"]["quanta"].as_array().unwrap();
    for (row, (demand, alloc, credits)) in example.iter().zip(paper_case()) {
        assert_eq!(row["demand"], serde_json::json!(demand));
        assert_eq!(row["karma_alloc"], serde_json::json!(alloc));
        assert_eq!(row["karma_credits"], serde_json::json!(credits));
    }
    assert_eq!(json["paper_example"]["maxmin_totals"], serde_json::json!([10, 9, 5]));
}

#[test]
fn replay_reproduces_the_paper_example() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "trace.csv", &paper_trace());
    let out_path = dir.path().join("out.csv");
    let out = fairshare(&[
        "replay",
        trace.to_str().unwrap(),
        "--fair-share",
        "2",
        "--alpha",
        "0.5",
        "--initial-credits",
        "6",
        "--out",
        out_path.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = fs::read_to_string(&out_path).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("quantum,user,demand,alloc,credits"));
    for (q, (d, a, c)) in paper_case().iter().enumerate() {
        for (u, name) in ["A", "B", "C"].iter().enumerate() {
            assert_eq!(lines.next().unwrap(), format!("{},{name},{},{},{}", q + 1, d[u], a[u], c[u]));
        }
    }
    assert_eq!(lines.next(), None);
    // With --json the summary is stdout (the rows went to --out).
    let summary: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(summary["policy"], "karma");
    assert_eq!(summary["quanta"], 5);
    // Karma totals 8, 8, 8 (spec table) of 10, 10, 10 demanded: welfare 0.8 each.
    assert_eq!(summary["min_welfare"], 0.8);
    assert_eq!(summary["max_welfare"], 0.8);
}

#[test]
fn replay_quotes_names_and_takes_negative_credits() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", "quantum,user,demand\n1,\"a,b\",3\n1,\"say \"\"hi\"\"\",1\n");
    let out =
        fairshare(&["replay", trace.to_str().unwrap(), "--fair-share", "2", "--alpha", "1", "--initial-credits", "-5"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // alpha = 1: no free credits; the first user borrows nothing with negative credits.
    assert_eq!(text(&out.stdout), "quantum,user,demand,alloc,credits\n1,\"a,b\",3,2,-5\n1,\"say \"\"hi\"\"\",1,1,-5\n");
}

#[test]
fn demo_refuses_runs_it_cannot_hold() {
    let out = fairshare(&["demo", "--users", "1000000", "--quanta", "18446744073709551615"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("more than 50000000 demands"), "{}", text(&out.stderr));
}

#[test]
fn replay_with_users_file_and_other_policies() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", "quantum,user,demand\n7,b,4\n7,a,1\n9,a,0\n9,c,5\n");
    let users = write(dir.path(), "u.csv", "user,fair_share,guaranteed\na,1,1\nb,3,0\nc,2,1\n");
    let run_with = |policy: &str, more: &[&str]| {
        let mut args = vec!["replay", trace.to_str().unwrap(), "--users", users.to_str().unwrap(), "--policy", policy];
        args.extend(more);
        let out = fairshare(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let run = |policy: &str| run_with(policy, &[]);
    // Strict: min(demand, share). Users in the users file's order; quanta labels kept;
    // no credits column (only Karma has credits). --dense: every user in every quantum.
    assert_eq!(
        run_with("strict", &["--dense"]),
        "quantum,user,demand,alloc\n7,a,1,1\n7,b,4,3\n7,c,0,0\n9,a,0,0\n9,b,0,0\n9,c,5,2\n"
    );
    // Without it, a user absent from a quantum's lines and given nothing has no row
    // (c in quantum 7, b in quantum 9); a present user with demand 0 keeps its row.
    assert_eq!(run("strict"), "quantum,user,demand,alloc\n7,a,1,1\n7,b,4,3\n9,a,0,0\n9,c,5,2\n");
    // Max-min over the pool of 6: quantum 7 gives a 1 and b 4; quantum 9 gives c 5.
    assert!(run("maxmin").starts_with("quantum,user,demand,alloc\n"));
    assert!(run("maxmin").contains("7,b,4,4\n"));
    assert!(run("maxmin").contains("9,c,5,5\n"));
}

/// Runs a replay that must fail: exit 2, the message contains `expect`, and a
/// pre-existing output file is untouched, with no temporary file left behind.
fn assert_rejected(dir: &Path, args: &[&str], expect: &[&str]) {
    let out_path = dir.join("result.csv");
    fs::write(&out_path, "previous content\n").unwrap();
    let mut all: Vec<&str> = args.to_vec();
    let out_str = out_path.to_str().unwrap().to_string();
    all.extend(["--out", &out_str]);
    let out = fairshare(&all);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "args {args:?}: {stderr}");
    for e in expect {
        assert!(stderr.contains(e), "args {args:?}: expected `{e}` in: {stderr}");
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(fs::read_to_string(&out_path).unwrap(), "previous content\n");
    let files: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(files.iter().all(|f| !f.starts_with(".tmp")), "temporary file left: {files:?}");
}

#[test]
fn bad_traces_are_rejected_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: &[(&str, &[&str])] = &[
        ("quantum,user,demand\n1,a,3\n1,b\n", &["bad.csv:3", "expected 3 fields, found 2"]),
        ("quantum,user,demand\n1,a,3\n1,b,-4\n", &["bad.csv:3", "field `demand`", "`-4` is negative"]),
        ("quantum,user,demand\n1,a,lots\n", &["bad.csv:2", "field `demand`", "`lots` is not a number"]),
        ("quantum,user,demand\n1,a,2.5\n", &["bad.csv:2", "field `demand`", "`2.5` is not a whole number"]),
        ("quantum,user,demand\n1,a,99999999999999999999999\n", &["bad.csv:2", "field `demand`"]),
        ("quantum,user,demand\nx,a,1\n", &["bad.csv:2", "field `quantum`", "`x` is not a number"]),
        ("quantum,user,demand\n1,,1\n", &["bad.csv:2", "field `user`", "is empty"]),
        ("quantum,user,demand\n2,a,1\n1,a,1\n", &["bad.csv:3", "field `quantum`", "sorted"]),
        ("quantum,user,demand\n1,a,1\n1,a,2\n", &["bad.csv:3", "`a` already has a demand in quantum 1 (line 2)"]),
        ("quantum,user,demand\n", &["bad.csv", "no demands"]),
        ("", &["bad.csv:1", "empty"]),
        ("quantum,tenant,demand\n1,a,1\n", &["bad.csv:1", "unknown column `tenant`"]),
    ];
    for (content, expect) in cases {
        let trace = write(d, "bad.csv", content);
        assert_rejected(d, &["replay", trace.to_str().unwrap(), "--fair-share", "4"], expect);
    }
    let missing = d.join("missing.csv");
    assert_rejected(d, &["replay", missing.to_str().unwrap(), "--fair-share", "4"], &["missing.csv", "No such file"]);
}

#[test]
fn bad_configs_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = write(d, "t.csv", "quantum,user,demand\n1,a,3\n1,zed,1\n");
    let t = trace.to_str().unwrap();
    assert_rejected(
        d,
        &["replay", t, "--fair-share", "4", "--alpha", "1.5"],
        &["--alpha", "`1.5` is not a number in [0, 1]"],
    );
    assert_rejected(d, &["replay", t, "--fair-share", "4", "--alpha=-0.1"], &["--alpha"]);
    assert_rejected(d, &["replay", t, "--fair-share", "0"], &["--fair-share must be at least 1"]);
    assert_rejected(d, &["replay", t, "--fair-share", "4", "--initial-credits", "1/3"], &["--initial-credits"]);
    assert_rejected(d, &["replay", t], &["--fair-share"]);
    let users = write(d, "users.csv", "user,fair_share,guaranteed\na,4,2\nb,3,5\n");
    assert_rejected(
        d,
        &["replay", t, "--users", users.to_str().unwrap()],
        &["users.csv:3", "field `guaranteed`", "5 is above the fair share 3"],
    );
    let users = write(d, "users.csv", "user,fair_share,guaranteed\na,4,2\nb,3,1\n");
    assert_rejected(
        d,
        &["replay", t, "--users", users.to_str().unwrap()],
        &["t.csv:3: field `user`: unknown user `zed`: it is not in the users file"],
    );
    let users = write(d, "users.csv", "user,fair_share,guaranteed\na,4,2\na,3,1\n");
    assert_rejected(
        d,
        &["replay", t, "--users", users.to_str().unwrap()],
        &["users.csv:3", "`a` is already defined on line 2"],
    );
    let users = write(d, "users.csv", "user,fair_share,guaranteed\na,0,0\n");
    assert_rejected(d, &["replay", t, "--users", users.to_str().unwrap()], &["users.csv:2", "field `fair_share`"]);
}

#[test]
fn selftest_passes_on_the_vectors_and_reports_each_mismatch() {
    for file in ["karma_paper.json", "karma_random.json"] {
        for backend in ["software", "literal"] {
            let out = fairshare(&["selftest", "--vectors", vectors(file).to_str().unwrap(), "--backend", backend]);
            assert!(out.status.success(), "{file} {backend}: {}", text(&out.stdout));
            assert!(text(&out.stdout).contains("0 cases with mismatches"));
        }
    }
    // Corrupt one expected allocation and one credit: exit 1, both reported precisely.
    let dir = tempfile::tempdir().unwrap();
    let mut json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(vectors("karma_paper.json")).unwrap()).unwrap();
    json["cases"][0]["quanta"][3]["alloc"][2] = serde_json::json!(3);
    json["cases"][1]["quanta"][0]["credits_after"][1] = serde_json::json!("999");
    let bad = write(dir.path(), "bad.json", &json.to_string());
    let out = fairshare(&["selftest", "--vectors", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("case `karma-paper-figure-3` quantum 3 user 2 alloc: expected 3, got 4"), "{stdout}");
    assert!(
        stdout.contains("case `reference-library-example` quantum 0 user 1 credits: expected 999, got 1000000000000"),
        "{stdout}"
    );
    let mut invalid = json.clone();
    invalid["cases"][1]["guaranteed"][0] = serde_json::json!(7);
    let invalid = write(dir.path(), "invalid.json", &invalid.to_string());
    let out = fairshare(&["selftest", "--vectors", invalid.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("case `reference-library-example` is not a valid pool"),
        "{}",
        text(&out.stderr)
    );
    let out = fairshare(&["selftest", "--vectors", dir.path().join("none.json").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let garbage = write(dir.path(), "garbage.json", "{\"cases\": [1,");
    let out = fairshare(&["selftest", "--vectors", garbage.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("garbage.json: not a vector file"), "{}", text(&out.stderr));
}

#[test]
fn selftest_on_the_rtl_model_runs_every_case_that_fits() {
    for file in ["karma_paper.json", "karma_random.json"] {
        // Cases that fit the engine: equal shares and initial credits below 2^31.
        let json: serde_json::Value = serde_json::from_str(&fs::read_to_string(vectors(file)).unwrap()).unwrap();
        let cases = json["cases"].as_array().unwrap();
        let all_equal = |v: &serde_json::Value| v.as_array().unwrap().windows(2).all(|w| w[0] == w[1]);
        let fits = cases
            .iter()
            .filter(|c| {
                all_equal(&c["fair_share"])
                    && all_equal(&c["guaranteed"])
                    && c["initial_credits"].as_i64().unwrap() < 1 << 31
            })
            .count();
        let out = fairshare(&["selftest", "--vectors", vectors(file).to_str().unwrap(), "--backend", "rtl-sim"]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert_eq!(stdout.lines().filter(|l| l.starts_with("ok ")).count(), fits, "{stdout}");
        assert!(stdout.contains(&format!("{} cases, {} skipped", cases.len(), cases.len() - fits)), "{stdout}");
    }
}

#[test]
fn hdl_cycles_and_verilog() {
    let out = fairshare(&["hdl", "cycles", "--users", "64", "--lanes", "4", "--quanta", "6", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // R = 16 rows, P = 4 lanes: no search costs 2R + P + 49 = 85 cycles; at most 18
    // search passes of R + P + 15 = 35, the first of them 8 when made of LOAD's counts.
    let (min, median, max) = (
        json["cycles_per_quantum_min"].as_u64().unwrap(),
        json["cycles_per_quantum_median"].as_u64().unwrap(),
        json["cycles_per_quantum_max"].as_u64().unwrap(),
    );
    assert!(85 <= min && min <= median && median <= max, "{json}");
    // The formula of docs/engine.md: 2R + P + 49 + k (R + P + 15) with k <= 18 search passes
    // (`fairshare_hdl::search::MAX_PASSES`), less R + P + 7 = 27 when the first pass is
    // LOAD's.
    for c in [min, median, max] {
        let streamed = (c - 85) % 35 == 0 && (c - 85) / 35 <= 18;
        let loaded = c >= 93 && (c - 93) % 35 == 0 && (c - 93) / 35 < 18;
        assert!(streamed || loaded, "{c} cycles do not fit the formula: {json}");
    }
    // The bursty workload's thresholds drift: after the first quantum, most first passes
    // start warm in both searches and are LOAD's (85 + 8 + 3 x 35 = 198 here).
    assert!(median >= 93 && (median - 93) % 35 == 0, "the median quantum's first pass is not LOAD's: {json}");
    let dir = tempfile::tempdir().unwrap();
    let v = dir.path().join("engine.v");
    let out = fairshare(&[
        "hdl",
        "verilog",
        "--users",
        "64",
        "--lanes",
        "4",
        "--top",
        "engine",
        "--out",
        v.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fs::read_to_string(&v).unwrap().contains("module top("));
    assert!(fs::read_to_string(dir.path().join("engine_shell.v")).unwrap().contains("module engine_shell("));
    let d = dir.path().join("device.v");
    let out = fairshare(&["hdl", "verilog", "--users", "64", "--lanes", "4", "--out", d.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fs::read_to_string(&d).unwrap().contains("s_axil_awready"));
    assert!(fs::read_to_string(dir.path().join("device_shell.v")).unwrap().contains("module fairshare_device("));
    let regs = fairshare(&["hdl", "regs"]);
    assert!(regs.status.success());
    assert_eq!(text(&regs.stdout), fs::read_to_string("../abi/REGISTERS.md").unwrap());
    for bad in
        [["--users", "64", "--lanes", "3"], ["--users", "5000", "--lanes", "4"], ["--users", "0", "--lanes", "4"]]
    {
        let out = fairshare(&["hdl", "cycles", bad[0], bad[1], bad[2], bad[3]]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(text(&out.stderr).contains("this build's engines"), "{}", text(&out.stderr));
    }
}

/// `hdl verilog --module NAME` names the top module NAME and the shell instantiates
/// it under that name; a name Verilog does not accept, or one the design already uses,
/// is refused with the bad value in the message and nothing is written.
#[test]
fn hdl_verilog_module_name() {
    let dir = tempfile::tempdir().unwrap();
    for (top, shell, shell_module) in [
        ("engine", "e_shell.v", "engine_shell"),
        ("device", "d_shell.v", "fairshare_device"),
        ("weighted-count", "w_shell.v", "weighted_shell"),
    ] {
        let v = dir.path().join(format!("{}.v", &shell[..1]));
        let args = ["hdl", "verilog", "--users", "64", "--lanes", "2", "--top", top, "--module", "fs_core$2", "--out"];
        let out = fairshare(&[&args[..], &[v.to_str().unwrap()]].concat());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let verilog = fs::read_to_string(&v).unwrap();
        assert!(verilog.contains("module fs_core$2("), "{top}");
        assert!(!verilog.contains("module top("), "{top}");
        let shell_text = fs::read_to_string(dir.path().join(shell)).unwrap();
        assert!(shell_text.contains(&format!("module {shell_module}(")), "{shell_text}");
        assert!(shell_text.contains("  fs_core$2 core("), "{shell_text}");
        assert!(!shell_text.contains(" top core("), "{shell_text}");
        assert!(text(&out.stderr).contains("(module `fs_core$2`)"), "{}", text(&out.stderr));
    }
    let bad_dir = dir.path().join("bad");
    fs::create_dir(&bad_dir).unwrap();
    let v = bad_dir.join("x.v");
    for bad in ["9lives", "wire", "a-b", "", "top core", "engine_shell"] {
        let args = ["hdl", "verilog", "--users", "64", "--lanes", "2", "--top", "engine", "--module", bad, "--out"];
        let out = fairshare(&[&args[..], &[v.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(text(&out.stderr).contains(&format!("--module {bad:?}")), "{bad:?}: {}", text(&out.stderr));
        assert_eq!(fs::read_dir(&bad_dir).unwrap().count(), 0, "{bad:?} wrote a file");
    }
}

/// The value changes of a VCD file: the top scope's signals by name, each with the
/// values it takes in time order (`0`/`1` for one bit, `bNNN` for vectors), and the
/// timestamps.
fn vcd_changes(text: &str) -> (std::collections::HashMap<String, Vec<String>>, Vec<u64>) {
    let (header, body) = text.split_once("$enddefinitions $end").expect("no $enddefinitions");
    let mut ids = std::collections::HashMap::new();
    let mut depth = 0;
    for line in header.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first() {
            Some(&"$scope") => depth += 1,
            Some(&"$upscope") => depth -= 1,
            // $var wire WIDTH ID NAME $end
            Some(&"$var") if depth == 1 => {
                assert_eq!(words.len(), 6, "{line}");
                ids.insert(words[3].to_string(), words[4].to_string());
            }
            _ => {}
        }
    }
    let mut changes: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    let mut times = Vec::new();
    let mut words = body.split_whitespace();
    while let Some(w) = words.next() {
        let (value, id) = if let Some(t) = w.strip_prefix('#') {
            times.push(t.parse().unwrap());
            continue;
        } else if w.starts_with('b') || w.starts_with('s') {
            (w.to_string(), words.next().unwrap().to_string())
        } else if w.starts_with('$') {
            continue;
        } else {
            (w[..1].to_string(), w[1..].to_string())
        };
        if let Some(name) = ids.get(&id) {
            changes.entry(name.clone()).or_default().push(value);
        }
    }
    (changes, times)
}

/// `hdl trace` writes a VCD of the engine: the clock and both stream handshakes are
/// signals of the top scope, named as in the Verilog, and they change.
#[test]
fn hdl_trace_writes_a_vcd() {
    let dir = tempfile::tempdir().unwrap();
    let vcd = dir.path().join("engine.vcd");
    let args = ["hdl", "trace", "--users", "16", "--lanes", "2", "--quanta", "2", "--seed", "3", "--out"];
    let out = fairshare(&[&args[..], &[vcd.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let body = fs::read_to_string(&vcd).unwrap();
    assert!(body.starts_with("$timescale"), "{}", &body[..200.min(body.len())]);
    assert!(body.contains("$scope module top $end"));
    let (changes, times) = vcd_changes(&body);
    for name in
        ["clock", "in_valid", "in_ready", "out_valid", "out_ready", "start", "busy", "done", "in_data$0", "out_alloc$1"]
    {
        assert!(changes.contains_key(name), "no signal {name} in the top scope: {:?}", changes.keys());
    }
    // The clock toggles once per half cycle; each handshake is high at some point.
    let clock = &changes["clock"];
    assert!(clock.len() > 100 && clock.windows(2).all(|w| w[0] != w[1]), "{clock:?}");
    for name in ["in_valid", "in_ready", "out_valid", "out_ready", "busy", "done"] {
        assert!(changes[name].iter().any(|v| v == "1"), "{name} is never 1: {:?}", changes[name]);
        assert!(changes[name].len() >= 2, "{name} never changes: {:?}", changes[name]);
    }
    assert!(times.len() > 100 && times.windows(2).all(|w| w[0] < w[1]), "timestamps do not increase");
    // No temporary file is left beside it.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// Bad input to `hdl trace` fails with status 2 and a message naming what is wrong,
/// and writes nothing: a file already at `--out` keeps its content.
#[test]
fn hdl_trace_refuses_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let vcd = dir.path().join("old.vcd");
    fs::write(&vcd, "old").unwrap();
    let missing = dir.path().join("no such folder").join("x.vcd");
    let cases: [(&[&str], &Path, &str); 5] = [
        (&["--users", "0", "--lanes", "2"], &vcd, "0 users"),
        (&["--users", "16", "--lanes", "3"], &vcd, "3 lanes"),
        (&["--users", "5000", "--lanes", "2"], &vcd, "5000 users"),
        (&["--users", "16", "--lanes", "2", "--quanta", "0"], &vcd, "--quanta"),
        (&["--users", "16", "--lanes", "2"], &missing, "no such folder"),
    ];
    for (flags, out_path, message) in cases {
        let out = fairshare(&[&["hdl", "trace"][..], flags, &["--out", out_path.to_str().unwrap()]].concat());
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(text(&out.stderr).contains(message), "{flags:?}: {}", text(&out.stderr));
        assert_eq!(fs::read_to_string(&vcd).unwrap(), "old", "{flags:?}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "{flags:?} left a file");
    }
}

/// A reader that goes away (`fairshare demo | head -1`) ends the command quietly with
/// status 0: no panic, no "Broken pipe" error. The pipe is closed before the command
/// writes its first byte, so every write it makes fails.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "trace.csv", &paper_trace());
    let trace = trace.to_str().unwrap();
    let commands: [&[&str]; 4] = [
        &["demo", "--users", "20", "--quanta", "50"],
        &["demo", "--json", "--users", "20", "--quanta", "50"],
        &["replay", trace, "--fair-share", "2"],
        &["selftest"],
    ];
    for args in commands {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fairshare"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        // The child may finish writing before the pipe closes (the output fits the pipe's
        // buffer); then replay's summary line on stderr is its normal output. Nothing
        // else may be there: no error, no panic.
        let stderr = text(&out.stderr);
        let unexpected: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("replay: policy ")).collect();
        assert!(unexpected.is_empty(), "{args:?}: nothing on stderr but the summary: {stderr}");
    }
}

/// Without `--vectors`, selftest runs the vector files built into the binary.
#[test]
fn selftest_without_vectors_runs_the_built_in_files() {
    let out = fairshare(&["selftest"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for file in ["karma_paper.json", "karma_random.json"] {
        let cases = serde_json::from_str::<serde_json::Value>(&fs::read_to_string(vectors(file)).unwrap()).unwrap()
            ["cases"]
            .as_array()
            .unwrap()
            .len();
        let line = format!("selftest vectors/{file} on backend software: {cases} cases, 0 skipped");
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
    assert!(!stdout.contains("MISMATCH"), "{stdout}");
}

/// `--out` files get the mode a new file gets under the caller's umask (0644 under 022,
/// 0600 under 077), not the temporary file's private 0600; no temporary file is left.
#[test]
fn replay_out_files_follow_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "trace.csv", &paper_trace());
    for (umask, mode) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let out_path = dir.path().join(format!("out-{umask}.csv"));
        let out = Command::new("sh")
            .args(["-c", &format!("umask {umask} && exec \"$0\" \"$@\""), env!("CARGO_BIN_EXE_fairshare")])
            .args(["replay", trace.to_str().unwrap(), "--fair-share", "2", "--out", out_path.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let got = fs::metadata(&out_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(got, mode, "umask {umask}: mode {got:o}, want {mode:o}");
    }
    let mut names: Vec<String> =
        fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["out-002.csv", "out-022.csv", "out-077.csv", "trace.csv"]);
}

/// `bench software` and `bench offload` print their JSON fields; a wrong `--verify` or
/// a backend that is not a device is named and refused (exit status 2).
#[test]
fn bench_commands_report_their_fields_and_refuse_bad_options() {
    let o = fairshare(&["bench", "software", "--users", "100", "--quanta", "20", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["users"], 100);
    assert!(j["ns_per_user"].as_f64().unwrap() > 0.0, "{j}");
    for verify in ["sync", "async", "sample:5", "invariants"] {
        let o = fairshare(&["bench", "offload", "--users", "100", "--quanta", "30", "--verify", verify, "--json"]);
        assert!(o.status.success(), "{verify}: {}", text(&o.stderr));
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!((j["verify"].as_str(), j["mismatches"].as_u64()), (Some(verify), Some(0)), "{j}");
        // 30 timed quanta after a warm-up of at least 20 quanta and 300 ms.
        assert!(j["device_quanta"].as_u64().unwrap() >= 50, "{j}");
        assert!(j["fallback"].is_null(), "{j}");
        for field in ["software_ns", "round_trip_ns", "device_ns", "host_overhead_ns", "critical_path_ns"] {
            assert!(j[field]["median"].as_f64().unwrap() > 0.0, "{verify}: {field}: {j}");
        }
        assert!(j["cores"].as_u64().unwrap() >= 1);
    }
    let o = fairshare(&["bench", "offload", "--users", "100", "--text-table"]);
    assert_eq!(o.status.code(), Some(2));
    for (args, words) in [
        (&["--verify", "sample:0"][..], "sample:0"),
        (&["--verify", "full"][..], "use sync, async"),
        (&["--backend", "software"][..], "needs a device"),
        (&["--quanta", "0"][..], "at least 1"),
    ] {
        let mut all = vec!["bench", "offload", "--users", "100"];
        all.extend(args);
        let o = fairshare(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).contains(words), "{args:?}: {}", text(&o.stderr));
    }
}
