//! `fairshare serve` end to end: the binary started on a free port, driven over HTTP
//! with the minimal client of `common`. Access control, exposure, TLS, signals, sockets
//! and the ledger's refusals are in cli/tests/exposed.rs.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{example, Running as Server};
use serde_json::Value;

fn serve(config: &Path, extra: &[&str]) -> Server {
    common::serve(config, extra)
}

fn http(s: &Server, method: &str, path: &str, body: &str) -> (u16, String) {
    s.http(method, path, body)
}

fn json(s: &Server, method: &str, path: &str, body: &str) -> Value {
    s.json(method, path, body)
}

fn run_figure2(s: &Server) -> Vec<Value> {
    common::run_figure2(s, s)
}

fn replay_rows() -> Vec<(u64, String, u64, String)> {
    common::replay_rows()
}

#[test]
fn manual_clock_equals_replay_and_the_paper() {
    let s = serve(&example(), &["--clock", "manual"]);
    let results = run_figure2(&s);
    let mut got = Vec::new();
    let mut totals = [0u64; 3];
    for r in &results {
        for (u, t) in r["tenants"].as_array().unwrap().iter().enumerate() {
            let alloc = t["alloc_slices"].as_u64().unwrap();
            totals[u] += alloc;
            got.push((
                r["quantum"].as_u64().unwrap(),
                t["name"].as_str().unwrap().to_string(),
                alloc,
                t["credits"].as_str().unwrap().to_string(),
            ));
            assert_eq!(t["rate_bps"].as_u64().unwrap(), alloc, "a pool in bare slices: 1 bit/s per slice");
        }
    }
    assert_eq!(totals, [8, 8, 8], "the paper's totals");
    assert_eq!(got, replay_rows(), "the service and replay agree on every allocation and credit");
    assert_eq!(json(&s, "GET", "/v1/allocations", ""), results[4]);
}

#[test]
fn bad_requests_name_the_field_and_change_nothing() {
    let s = serve(&example(), &["--clock", "manual"]);
    for (method, path, body, status, expect) in [
        ("PUT", "/v1/tenants/A/demand", "{\"slice\": 3}", 400, "slice: unknown field"),
        ("PUT", "/v1/tenants/A/demand", "{\"slices\": -3}", 400, "slices: -3 is not a whole number"),
        ("PUT", "/v1/tenants/A/demand", "{\"slices\": 1, \"bps\": 5}", 400, "exactly one"),
        ("PUT", "/v1/tenants/A/demand", "[1]", 400, "JSON object"),
        ("PUT", "/v1/tenants/Z/demand", "{\"slices\": 1}", 404, "unknown tenant `Z`"),
        ("POST", "/v1/tenants", "{\"name\": \"A\"}", 400, "appears twice"),
        ("POST", "/v1/tenants", "{\"weight\": 2}", 400, "name: missing"),
        ("DELETE", "/v1/tenants/Z", "", 404, "unknown tenant `Z`"),
        ("GET", "/v1/nothing", "", 404, "no route GET /v1/nothing"),
        ("DELETE", "/v1/allocations", "", 405, "does not take this method"),
        ("PUT", "/v1/tenants/A/demand", &"x".repeat(70_000), 413, "the body is over 65536 bytes"),
        ("PUT", "/v1/tenants/A/demand", "{\"slices\": 1", 400, "the body is not JSON"),
        ("POST", "/v1/tenants", "{\"name\": \"\"}", 400, "name: is empty"),
        ("POST", "/v1/tenants", &format!("{{\"name\": \"{}\"}}", "n".repeat(65)), 400, "at most 64"),
        ("POST", "/v1/tenants", "{\"name\": \"a b\"}", 400, "has the character ' '"),
    ] {
        let (got, body_text) = http(&s, method, path, body);
        assert_eq!(got, status, "{method} {path} {body}: {body_text}");
        let v: Value = serde_json::from_str(&body_text).unwrap();
        assert!(v["error"].as_str().unwrap().contains(expect), "{method} {path} {body}: {body_text}");
    }
    let after = json(&s, "POST", "/v1/quantum", "");
    for t in after["tenants"].as_array().unwrap() {
        assert_eq!(t["demand_slices"], 0, "no bad request changed a demand: {after}");
    }
}

#[test]
fn tenants_join_and_leave_and_metrics_parse() {
    let s = serve(&example(), &["--clock", "manual"]);
    let (status, body) = http(&s, "POST", "/v1/tenants", "{\"name\": \"D\", \"weight\": 1}");
    assert_eq!(status, 201, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["tenants"].as_array().unwrap().len(), 4);
    let (status, _) = http(&s, "PUT", "/v1/tenants/D/demand", "{\"bps\": 2}");
    assert_eq!(status, 204);
    let r = json(&s, "POST", "/v1/quantum", "");
    assert_eq!(r["tenants"][3]["alloc_slices"], 2, "{r}");
    let v = json(&s, "DELETE", "/v1/tenants/B", "");
    let names: Vec<&str> = v["tenants"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["A", "C", "D"]);
    let reply = s.request("GET", "/metrics", &[], "");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type").unwrap(), "text/plain; version=0.0.4; charset=utf-8");
    let text = reply.body;
    // Prometheus text: every line a comment or `name{labels} value`, the series named.
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && name.starts_with("fairshare_"),
            "{line}"
        );
    }
    assert!(text.contains("fairshare_tenant_allocation_slices{tenant=\"D\"} 2"), "{text}");
    assert!(!text.contains("tenant=\"B\""), "B left: {text}");
    assert!(text.contains("fairshare_quanta_total 1"), "{text}");
    assert!(text.contains("fairshare_backend_info{backend=\"software\"} 1"), "{text}");
    assert!(text.contains("fairshare_quantum_duration_seconds_count 1"), "{text}");
    assert!(text.contains("fairshare_tenant_rate_bytes_per_second{tenant=\"D\"} 0.25"), "{text}");
    assert!(!text.contains("# EOF"), "the text format has no EOF line: {text}");
    // OpenMetrics when asked for it.
    let om = s.request("GET", "/metrics", &[("Accept", "application/openmetrics-text; version=1.0.0")], "");
    assert!(om.header("content-type").unwrap().starts_with("application/openmetrics-text"), "{}", om.head);
    assert!(om.body.contains("# TYPE fairshare_quanta counter\nfairshare_quanta_total 1\n"), "{}", om.body);
    assert!(om.body.trim_end().ends_with("# EOF"), "{}", om.body);
    assert_eq!(http(&s, "GET", "/healthz", "").0, 200);
    let st = json(&s, "GET", "/v1/status", "");
    assert_eq!(st["backend"], "software");
    assert_eq!(http(&s, "POST", "/v1/quantum", "").0, 200);
}

#[test]
fn the_wall_clock_runs_quanta_and_manual_quanta_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("fast.toml");
    std::fs::write(&config, std::fs::read_to_string(example()).unwrap().replace("\"100ms\"", "\"20ms\"")).unwrap();
    let s = serve(&config, &[]);
    std::thread::sleep(Duration::from_millis(400));
    let q = json(&s, "GET", "/v1/allocations", "")["quantum"].as_u64().unwrap();
    assert!((5..=25).contains(&q), "{q} quanta in 400 ms at 20 ms each");
    assert_eq!(http(&s, "POST", "/v1/quantum", "").0, 409);
}

/// kill -9 at 20 points of a manual-clock run, restarted each time from the ledger: the
/// allocations and credits equal an uninterrupted run's.
#[test]
fn kill_9_at_20_points_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let demands: Vec<[u64; 3]> = (0..60u64).map(|q| [(q * 7) % 5, (q * 3) % 6, (q * 11) % 4]).collect();
    let step = |s: &Server, d: &[u64; 3]| {
        for (name, slices) in ["A", "B", "C"].iter().zip(d) {
            assert_eq!(
                http(s, "PUT", &format!("/v1/tenants/{name}/demand"), &format!("{{\"slices\": {slices}}}")).0,
                204
            );
        }
        json(s, "POST", "/v1/quantum", "")
    };
    let reference: Vec<Value> = {
        let s = serve(&example(), &["--clock", "manual"]);
        demands.iter().map(|d| step(&s, d)).collect()
    };
    let state = dir.path().join("state");
    let state_arg = state.to_str().unwrap();
    let mut x: u64 = 12345;
    let mut got: Vec<Value> = Vec::new();
    let mut kills = 0;
    while got.len() < demands.len() {
        let mut s = serve(&example(), &["--clock", "manual", "--state", state_arg]);
        // Resume: the service says where it is.
        let at = json(&s, "GET", "/v1/allocations", "")["quantum"].as_u64().unwrap() as usize;
        got.truncate(at);
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        // 1 or 2 quanta per life: 20 kills fit in the 60 quanta (at most 40).
        let run_for = if kills < 20 { 1 + (x >> 33) as usize % 2 } else { usize::MAX };
        for d in demands[at..].iter().take(run_for) {
            got.push(step(&s, d));
        }
        if got.len() < demands.len() {
            s.child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
    }
    assert_eq!(kills, 20);
    assert_eq!(got, reference);
}

/// `fairshare device-sim` on `shm` with `faults`; killed when dropped.
fn device_sim(shm: &Path, faults: &str) -> common::DeviceSim {
    common::device_sim(shm, &["--fault", faults, "--late-ms", "600"])
}

/// On the emulated device, a crash in the third quantum: the pool goes on in software
/// with exactly the credits an all-software run has, and the switch shows in /v1/status
/// and in the fallback metric.
#[test]
fn a_device_fault_mid_run_falls_back_without_losing_a_credit() {
    let dir = tempfile::tempdir().unwrap();
    let shm = dir.path().join("dev.shm");
    let _sim = device_sim(&shm, "crash@3");
    let backend = format!("emulator:{}", shm.display());
    let on_device = serve(&example(), &["--clock", "manual", "--backend", &backend, "--timeout-ms", "300"]);
    let software = serve(&example(), &["--clock", "manual"]);
    for s in [&on_device, &software] {
        assert_eq!(http(s, "GET", "/v1/status", "").0, 200);
    }
    assert_eq!(json(&on_device, "GET", "/v1/status", "")["on_device"], true);
    assert_eq!(run_figure2(&on_device), run_figure2(&software), "every allocation and credit");
    let status = json(&on_device, "GET", "/v1/status", "");
    assert_eq!(status["on_device"], false, "{status}");
    assert_eq!(status["fallback"]["after_quanta"], 2, "{status}");
    assert_eq!(status["fallback"]["kind"], "gone", "{status}");
    let (_, metrics) = http(&on_device, "GET", "/metrics", "");
    assert!(metrics.contains("fairshare_backend_fallbacks_total 1"), "{metrics}");
}

/// Under the wall clock, a quantum that overruns (a device that answers late) does not
/// overlap the next: the ticks it covered are counted as missed.
#[test]
fn an_overrunning_quantum_counts_missed_ticks() {
    let dir = tempfile::tempdir().unwrap();
    let shm = dir.path().join("late.shm");
    let _sim = device_sim(&shm, "late@2");
    let config = dir.path().join("fast.toml");
    std::fs::write(&config, std::fs::read_to_string(example()).unwrap().replace("\"100ms\"", "\"50ms\"")).unwrap();
    let backend = format!("emulator:{}", shm.display());
    let s = serve(&config, &["--backend", &backend, "--timeout-ms", "2000"]);
    // Quantum 2 waits ~600 ms for its completion: about 11 ticks of 50 ms are missed.
    std::thread::sleep(Duration::from_millis(1200));
    let status = json(&s, "GET", "/v1/status", "");
    let missed = status["missed_ticks"].as_u64().unwrap();
    assert!((5..=20).contains(&missed), "{status}");
    let (_, metrics) = http(&s, "GET", "/metrics", "");
    assert!(metrics.contains(&format!("fairshare_missed_ticks_total {missed}")), "{metrics}");
}

/// A bad configuration: exit status 2, the file and the field named, nothing served.
#[test]
fn a_bad_configuration_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    std::fs::write(
        &config,
        std::fs::read_to_string(example()).unwrap().replace("capacity = 6 ", "capacity = \"6mbps\" "),
    )
    .unwrap();
    let err = refused(&config);
    assert!(err.contains("bad.toml: pool.capacity") && err.contains("`6mbps`"), "{err}");
}

/// Demands from the hosts' agents are a controller's: serve refuses them at start.
#[test]
fn serve_refuses_demands_from_agents() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agents.toml");
    let text = std::fs::read_to_string(example())
        .unwrap()
        .replace("source = \"declared\"", "source = \"agents\"")
        .replace("weight = 1\n", "weight = 1\nmatch = { fwmark = 1 }\n");
    std::fs::write(&config, text).unwrap();
    let err = refused(&config);
    assert!(err.contains("demand.source = \"agents\"") && err.contains("fairshare controller"), "{err}");
}

/// `fairshare serve --config CONFIG`, which must exit with status 2 having served
/// nothing: what it said.
fn refused(config: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fairshare"))
        .args(["serve", "--config", config.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    String::from_utf8_lossy(&out.stderr).into_owned()
}
