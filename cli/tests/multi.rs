//! `fairshare multi` end to end: the example instances of `examples/`, the JSON shape
//! scripts rely on, and every kind of invalid instance (exit status 2, a message naming
//! the user, server or field). Expected numbers are the spec's (`psdsf_drfh.md` TV-PS-4).

#![allow(clippy::unwrap_used)]

mod common;

use common::fairshare;
use std::fs;
use std::path::{Path, PathBuf};

fn example(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples").join(file).to_str().unwrap().to_string()
}

fn multi_json(policy: &str, instance: &str) -> serde_json::Value {
    let out = fairshare(&["multi", "--policy", policy, "--instance", instance, "--json"]);
    assert!(out.status.success(), "{policy}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn psdsf_on_the_example_cluster_gives_table_iv() {
    let json = multi_json("psdsf-rdm", &example("cluster.json"));
    assert_eq!(json["policy"], "psdsf-rdm");
    let users = json["users"].as_array().unwrap();
    let names: Vec<&str> = users.iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["web", "cache", "batch", "ml"]);
    // Table IV of the PS-DSF paper (the example is the spec's reconstruction of it).
    let want = [210.0, 105.0, 82.5, 27.5];
    // Dominant share: tasks times the user's largest demand over the pooled capacity
    // (CPU 64, memory 58.5).
    let share = [0.1 / 58.5, 0.2 / 58.5, 0.2 / 64.0, 0.3 / 58.5];
    for (n, u) in users.iter().enumerate() {
        let tasks = u["tasks"].as_f64().unwrap();
        assert!((tasks - want[n]).abs() < 1e-6, "{}: {tasks}", names[n]);
        assert!((u["dominant_share"].as_f64().unwrap() - want[n] * share[n]).abs() < 1e-8);
        let per_server = u["per_server"].as_object().unwrap();
        let sum: f64 = per_server.values().map(|v| v.as_f64().unwrap()).sum();
        assert!((sum - tasks).abs() < 1e-6);
    }
    assert_eq!(users[2]["per_server"]["class-a"], 0.0, "batch may only run on classes c and d");
    let table = fairshare(&["multi", "--policy", "psdsf-rdm", "--instance", &example("cluster.json")]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("class-a") && text.contains("82.500000"), "{text}");
}

#[test]
fn every_policy_runs_on_the_example_and_pooled_ones_say_so() {
    for policy in ["drf", "drfh", "drfh-firstfit", "drfh-bestfit", "psdsf-rdm", "psdsf-tdm", "tsf", "cdrf", "ddrf"] {
        let json = multi_json(policy, &example("cluster.json"));
        let users = json["users"].as_array().unwrap();
        assert_eq!(users.len(), 4, "{policy}");
        assert!(users.iter().all(|u| u["tasks"].as_f64().unwrap() > 0.0), "{policy}: {json}");
        let pooled = policy == "drf" || policy == "ddrf";
        assert_eq!(json["pooled"], pooled, "{policy}");
        assert_eq!(users[0]["per_server"].is_null(), pooled, "{policy}");
    }
    let out = fairshare(&["multi", "--policy", "drf", "--instance", &example("cluster.json")]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("ignores eligible"));
}

#[test]
fn ddrf_reports_the_allocation_after_each_arrival() {
    let out = fairshare(&["multi", "--policy", "ddrf", "--instance", &example("cluster.json"), "--json", "--steps"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = json["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    for (k, step) in steps.iter().enumerate() {
        assert_eq!(step["users"].as_array().unwrap().len(), k + 1, "step {k}");
    }
    assert_eq!(steps[0]["arrival"], "web");
    // n = 4: the first user alone gets 1/4 of its dominant resource (memory, 58.5 in all),
    // 0.25 * 58.5 / 0.1 tasks.
    let first = steps[0]["users"][0]["tasks"].as_f64().unwrap();
    assert!((first - 146.25).abs() < 1e-9, "{first}");
    // Irrevocable: no user's tasks ever go down.
    for k in 1..steps.len() {
        for n in 0..k {
            let before = steps[k - 1]["users"][n]["tasks"].as_f64().unwrap();
            let after = steps[k]["users"][n]["tasks"].as_f64().unwrap();
            assert!(after >= before - 1e-9, "user {n} lost tasks at arrival {k}");
        }
    }
    assert_eq!(json["users"], steps[3]["users"]);
    // Without --steps: the same final allocation, and no steps (they are quadratic).
    let plain = multi_json("ddrf", &example("cluster.json"));
    assert!(plain.get("steps").is_none(), "steps printed without --steps");
    assert_eq!(plain["users"], json["users"]);
    let table = fairshare(&["multi", "--policy", "ddrf", "--instance", &example("cluster.json")]);
    assert!(!String::from_utf8_lossy(&table.stdout).contains("after arrival"));
}

#[test]
fn bbf_on_the_example_and_without_task_limits() {
    // ddrf_bbf.md B-Ex1: the unique BBF point is (1/3, 1/3, 5/6) of each request.
    let json = multi_json("bbf", &example("bbf.json"));
    let tasks: Vec<f64> = json["users"].as_array().unwrap().iter().map(|u| u["tasks"].as_f64().unwrap()).collect();
    for (got, want) in tasks.iter().zip([1.0 / 3.0, 1.0 / 3.0, 5.0 / 6.0]) {
        assert!((got - want).abs() < 1e-6, "{tasks:?}");
    }
    assert_eq!(json["pooled"], true);
    let out = fairshare(&["multi", "--policy", "bbf", "--instance", &example("cluster.json")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("user \"web\" has no max_tasks"));
}

fn rejected(dir: &Path, name: &str, content: &str, expect: &[&str]) {
    let path: PathBuf = dir.join(name);
    fs::write(&path, content).unwrap();
    let out = fairshare(&["multi", "--policy", "drfh", "--instance", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(name), "{name}: the file is named: {stderr}");
    for e in expect {
        assert!(stderr.contains(e), "{name}: expected `{e}` in: {stderr}");
    }
    assert!(out.stdout.is_empty(), "nothing printed on a bad instance");
}

#[test]
fn invalid_instances_name_the_user_server_or_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let server = r#"{"name": "s1", "capacity": [4, 4]}"#;
    let inst = |servers: &str, users: &str| {
        format!(r#"{{"resources": ["cpu", "mem"], "servers": [{servers}], "users": [{users}]}}"#)
    };
    rejected(
        d,
        "short.json",
        &inst(server, r#"{"name": "ann", "demand": [1]}"#),
        &["user \"ann\"", "demand has 1 entries, expected 2"],
    );
    rejected(
        d,
        "negative.json",
        &inst(server, r#"{"name": "ann", "demand": [1, -2]}"#),
        &["user \"ann\"", "demand[mem] = -2", "negative"],
    );
    rejected(
        d,
        "cap.json",
        &inst(r#"{"name": "s1", "capacity": [4, -1]}"#, r#"{"name": "ann", "demand": [1, 1]}"#),
        &["server \"s1\"", "capacity[mem]"],
    );
    rejected(d, "nan.json", &inst(server, r#"{"name": "ann", "demand": [1, NaN]}"#), &["line 1, column"]);
    rejected(
        d,
        "unknown.json",
        &inst(server, r#"{"name": "ann", "demand": [1, 1], "eligible": ["s9"]}"#),
        &["user \"ann\"", "unknown server \"s9\""],
    );
    rejected(
        d,
        "nowhere.json",
        &inst(r#"{"name": "s1", "capacity": [4, 0]}"#, r#"{"name": "ann", "demand": [1, 1]}"#),
        &["user \"ann\" is eligible nowhere"],
    );
    rejected(d, "empty.json", &inst(server, ""), &["no users"]);
    rejected(d, "noservers.json", &inst("", r#"{"name": "ann", "demand": [1, 1]}"#), &["no servers"]);
    rejected(
        d,
        "zero.json",
        &inst(server, r#"{"name": "ann", "demand": [0, 0]}"#),
        &["user \"ann\"", "zero for every resource"],
    );
    rejected(
        d,
        "weight.json",
        &inst(server, r#"{"name": "ann", "demand": [1, 1], "weight": 0}"#),
        &["user \"ann\"", "weight"],
    );
    rejected(
        d,
        "twice.json",
        &inst(server, r#"{"name": "ann", "demand": [1, 1]}, {"name": "ann", "demand": [1, 1]}"#),
        &["user \"ann\" is named twice"],
    );
    rejected(
        d,
        "typo.json",
        &inst(server, r#"{"name": "ann", "demand": [1, 1], "wieght": 2}"#),
        &["unknown field `wieght`"],
    );
    rejected(d, "syntax.json", "{\n  \"resources\": [\"cpu\",\n}", &["line 3"]);
    // Tiny tasks on big servers: refused rather than placed one by one for hours.
    let path = d.join("tiny.json");
    fs::write(&path, inst(r#"{"name": "s1", "capacity": [1e9, 1e9]}"#, r#"{"name": "ann", "demand": [1, 1]}"#))
        .unwrap();
    let out = fairshare(&["multi", "--policy", "drfh-bestfit", "--instance", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("whole tasks"), "{}", String::from_utf8_lossy(&out.stderr));
    let missing = d.join("missing.json");
    let out = fairshare(&["multi", "--policy", "drf", "--instance", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.json"));
    let out = fairshare(&["multi", "--policy", "drx", "--instance", missing.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected one of drf, drfh"));
}

/// First-Fit and Best-Fit place whole tasks: their counts print as integers, in the table
/// and in JSON; divisible policies keep their decimals.
#[test]
fn whole_task_policies_print_integers() {
    for policy in ["drfh-firstfit", "drfh-bestfit"] {
        let json = multi_json(policy, &example("cluster.json"));
        for u in json["users"].as_array().unwrap() {
            assert!(u["tasks"].is_u64(), "{policy}: {u}");
            assert!(u["per_server"].as_object().unwrap().values().all(|v| v.is_u64()), "{policy}: {u}");
        }
        let table = fairshare(&["multi", "--policy", policy, "--instance", &example("cluster.json")]);
        let text = String::from_utf8_lossy(&table.stdout);
        let web = text.lines().find(|l| l.starts_with("web")).unwrap();
        let cells: Vec<&str> = web.split_whitespace().collect();
        // user, tasks, dominant share, then one cell per server: all integers but the share.
        assert!(cells.iter().enumerate().skip(1).all(|(i, c)| i == 2 || c.parse::<u64>().is_ok()), "{web}");
    }
    let json = multi_json("drfh", &example("cluster.json"));
    assert!(json["users"][0]["tasks"].is_f64(), "{json}");
}
