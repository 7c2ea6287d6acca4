//! `fairshare controller` end to end: replicas of one pool on a real etcd (Debian's
//! `etcd-server`, started by the test on loopback ports in a temporary folder and
//! killed when the test ends, also when it fails: `fairshare_cluster::testing`; three
//! members for the tests of elections, one for the others), killed and stopped as a
//! host would.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{example, figure2_quantum, replay_rows, rows, Addr, Running};
use fairshare_cluster::testing::Etcd;
use serde_json::Value;

/// A replica of the example pool (`examples/serve.toml`) on `etcd`, manual clock, a
/// lease of 3 s, its stderr in `log`.
fn replica(etcd: &Etcd, pool: &str, log: &Path) -> Running {
    replica_with(etcd, pool, log, "manual", "3")
}

/// As [`replica`], with this clock and lease TTL (`controller.lease_ttl`, seconds).
fn replica_with(etcd: &Etcd, pool: &str, log: &Path, clock: &str, ttl: &str) -> Running {
    let text = std::fs::read_to_string(example()).unwrap() + &format!("\n[controller]\nlease_ttl = \"{ttl}s\"\n");
    let config = log.with_extension("toml");
    std::fs::write(&config, text).unwrap();
    let args = ["controller", "--config", config.to_str().unwrap(), "--etcd", &etcd.url, "--pool", pool];
    let rest = ["--listen", "127.0.0.1:0", "--clock", clock];
    let all: Vec<&str> = args.iter().chain(&rest).copied().collect();
    let (child, line) = common::spawn_until_first_line(&all, Some(log));
    let addr = line.trim().strip_prefix("fairshare controller: listening on http://").unwrap_or_else(|| {
        panic!("the controller did not start: {line:?} {}", std::fs::read_to_string(log).unwrap_or_default())
    });
    Running { child, addr: Addr::Tcp(addr.to_string()), token: None }
}

/// Two replicas of `pool` (logs in `dir`), once one leads: (the leader, the other).
fn two_replicas(etcd: &Etcd, pool: &str, dir: &Path) -> (Running, Running) {
    let a = replica(etcd, pool, &dir.join("a.log"));
    let b = replica(etcd, pool, &dir.join("b.log"));
    let (first, _) = leader(&[&a, &b], Duration::from_secs(10));
    if first == 0 {
        (a, b)
    } else {
        (b, a)
    }
}

fn status(r: &Running) -> Value {
    r.json("GET", "/v1/status", "")
}

/// Waits (at most `limit`) until one of `replicas` leads; its index and the time it took.
fn leader(replicas: &[&Running], limit: Duration) -> (usize, Duration) {
    let start = Instant::now();
    while start.elapsed() < limit {
        for (i, r) in replicas.iter().enumerate() {
            if r.request("GET", "/v1/status", &[], "").json()["leader"] == true {
                return (i, start.elapsed());
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no replica led within {limit:?}");
}

/// Two replicas; Figure 2's first two quanta on the leader (demands put on the
/// follower), the leader killed with kill -9, the other leads within the lease's TTL
/// and 2 s and runs the last three: every allocation and credit as `fairshare replay`
/// computes them on the same demands.
#[test]
fn a_replica_takes_over_after_kill_9_and_the_pool_goes_on_exactly() {
    let etcd = Etcd::cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (mut lead, follow) = two_replicas(&etcd, "fig2", dir.path());
    // Only the leader runs quanta; the follower names it.
    let refused = follow.request("POST", "/v1/quantum", &[], "");
    assert_eq!(refused.status, 409, "{}", refused.body);
    let Addr::Tcp(lead_addr) = &lead.addr else { unreachable!() };
    assert!(refused.body.contains(lead_addr.as_str()), "the refusal names the leader: {}", refused.body);
    assert_eq!(status(&follow)["leader_api"], format!("http://{lead_addr}"));
    let mut answers = vec![figure2_quantum(&follow, &lead, 0), figure2_quantum(&follow, &lead, 1)];
    assert_eq!(etcd.value("/fairshare/fig2/quantum").as_deref(), Some("00000000000000000002"));
    let _ = lead.child.kill();
    let _ = lead.child.wait();
    let (_, took) = leader(&[&follow], Duration::from_secs(15));
    assert!(took <= Duration::from_secs(3 + 2), "the follower led after {took:?}");
    for q in 2..5 {
        answers.push(figure2_quantum(&follow, &follow, q));
    }
    let got = rows(&answers);
    let totals: Vec<u64> =
        ["A", "B", "C"].iter().map(|n| got.iter().filter(|r| r.1 == *n).map(|r| r.2).sum()).collect();
    assert_eq!(totals, [8, 8, 8], "the paper's totals");
    assert_eq!(got, replay_rows(), "every allocation and credit as replay's");
    assert_eq!(etcd.value("/fairshare/fig2/quantum").as_deref(), Some("00000000000000000005"));
    eprintln!("controller: a follower led {took:?} after the leader's kill -9");
}

/// A leader stopped (SIGSTOP) past its lease while another is elected: continued, it
/// still believes it leads, and its quantum (from the quantum the store is at) is
/// refused by the transaction's fence; the new leader commits; the old one steps down
/// and shows the new leader's quanta; no quantum is in the store twice.
#[test]
fn a_deposed_leader_is_fenced() {
    let etcd = Etcd::cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = two_replicas(&etcd, "fence", dir.path());
    let mut answers = vec![figure2_quantum(&old, &old, 0)];
    let signal = |sig: &str| {
        assert!(Command::new("kill").args([sig, &old.child.id().to_string()]).status().unwrap().success());
    };
    signal("-STOP");
    let elected = std::panic::catch_unwind(|| leader(&[&new], Duration::from_secs(15)));
    signal("-CONT");
    elected.unwrap();
    let refused = old.request("POST", "/v1/quantum", &[], "");
    assert_eq!(refused.status, 409, "a deposed leader's quantum: {}", refused.body);
    assert_eq!(etcd.value("/fairshare/fence/quantum").as_deref(), Some("00000000000000000001"), "{}", refused.body);
    answers.push(figure2_quantum(&new, &new, 1));
    let deadline = Instant::now() + Duration::from_secs(10);
    while status(&old)["leader"] != false || status(&old)["quantum"] != 2 {
        assert!(Instant::now() < deadline, "the old leader did not step down: {}", status(&old));
        std::thread::sleep(Duration::from_millis(100));
    }
    // Demands through the old leader, now a follower.
    answers.push(figure2_quantum(&old, &new, 2));
    assert_eq!(etcd.value("/fairshare/fence/quantum").as_deref(), Some("00000000000000000003"));
    assert_eq!(rows(&answers), replay_rows()[..9].to_vec(), "quanta 1 to 3 as replay's: none ran twice");
    eprintln!("controller: the deposed leader's quantum was refused: {}", refused.body);
}

/// The value of the metric line `name` (its first sample) in a text exposition.
fn metric(text: &str, name: &str) -> f64 {
    let line = text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(' ')).unwrap();
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Waits (at most `limit`) until `check` holds.
fn until(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Under the wall clock (100 ms quanta), etcd stopped (SIGSTOP) for 10 s: the leader
/// commits nothing meanwhile and says so (`/healthz` 503, the status names etcd, the
/// error counter counts); once etcd is continued quanta resume at the next number, and
/// the quantum the leader shows is the one etcd holds: none lost, none doubled.
#[test]
fn etcd_stopped_for_10_s_commits_nothing_and_loses_no_quantum() {
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let r = replica_with(&etcd, "outage", &dir.path().join("r.log"), "wall", "3");
    leader(&[&r], Duration::from_secs(10));
    for (name, slices) in [("A", 3), ("B", 2), ("C", 1)] {
        assert_eq!(r.http("PUT", &format!("/v1/tenants/{name}/demand"), &format!("{{\"slices\": {slices}}}")).0, 204);
    }
    until(Duration::from_secs(10), "ten quanta", || status(&r)["quantum"].as_u64().unwrap() >= 10);
    etcd.signal("-STOP");
    let stopped = Instant::now();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        until(Duration::from_secs(8), "/healthz 503", || r.http("GET", "/healthz", "").0 == 503);
        let frozen = status(&r)["quantum"].clone();
        while stopped.elapsed() < Duration::from_secs(10) {
            assert_eq!(status(&r)["quantum"], frozen, "a quantum was published while etcd was stopped");
            assert_eq!(r.http("GET", "/healthz", "").0, 503);
            std::thread::sleep(Duration::from_millis(200));
        }
        let during = status(&r);
        assert!(during["ledger_error"].as_str().unwrap().contains("etcd: "), "{during}");
        frozen.as_u64().unwrap()
    }));
    etcd.signal("-CONT");
    let frozen = result.unwrap();
    until(Duration::from_secs(15), "quanta after etcd returned", || {
        r.http("GET", "/healthz", "").0 == 200 && status(&r)["quantum"].as_u64().unwrap() > frozen + 5
    });
    let text = r.request("GET", "/metrics", &[], "").body;
    common::promtool(&text).unwrap();
    assert_eq!(metric(&text, "fairshare_leader"), 1.0, "{text}");
    assert!(metric(&text, "fairshare_etcd_errors_total") >= 1.0, "{text}");
    assert!(metric(&text, "fairshare_leader_changes_total") >= 1.0, "{text}");
    assert!(metric(&text, "fairshare_commit_duration_seconds_count") >= 10.0, "{text}");
    // The leader's quantum against etcd's, read between two equal readings of etcd's. The
    // leader commits a quantum to etcd before it shows it, so it may show the one before
    // for a moment; it never shows one etcd does not hold (that would be published
    // without a commit) nor lags by more (a quantum lost), and most readings are equal.
    let mut equal = false;
    for _ in 0..100 {
        let stored = etcd.value("/fairshare/outage/quantum").unwrap();
        let shown = status(&r)["quantum"].as_u64().unwrap();
        if etcd.value("/fairshare/outage/quantum").unwrap() == stored {
            let held: u64 = stored.parse().unwrap();
            assert!(
                shown == held || shown + 1 == held,
                "the leader shows quantum {shown}, etcd holds {stored} before and after"
            );
            if shown == held {
                equal = true;
                break;
            }
        }
    }
    assert!(equal, "the leader never showed the quantum etcd held, in 100 tries");
}

/// Demands of 200 quanta (pseudo-random, fixed), the leader killed with kill -9 at 20
/// points and a new replica started in its place each time: every quantum's answer
/// equals an uninterrupted `serve`'s on the same demands.
#[test]
fn kill_9_of_leaders_at_20_points_of_200_quanta_equals_an_uninterrupted_run() {
    const QUANTA: usize = 200;
    let demands: Vec<[u64; 3]> = (0..QUANTA as u64).map(|q| [(q * 7) % 5, (q * 3) % 6, (q * 11) % 4]).collect();
    let step = |put: &Running, run: &Running, d: &[u64; 3]| {
        for (name, slices) in ["A", "B", "C"].iter().zip(d) {
            let (code, body) =
                put.http("PUT", &format!("/v1/tenants/{name}/demand"), &format!("{{\"slices\": {slices}}}"));
            assert_eq!(code, 204, "{body}");
        }
        run.json("POST", "/v1/quantum", "")
    };
    let reference: Vec<Value> = {
        let s = common::serve(&example(), &["--clock", "manual"]);
        demands.iter().map(|d| step(&s, &s, d)).collect()
    };
    let etcd = Etcd::cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let mut started = 0;
    let mut start = || {
        started += 1;
        replica_with(&etcd, "kills", &dir.path().join(format!("r{started}.log")), "manual", "1")
    };
    let mut replicas = [start(), start()];
    // 20 distinct points in 1..200 (a fixed pseudo-random draw).
    let mut x: u64 = 2024;
    let mut points = std::collections::BTreeSet::new();
    while points.len() < 20 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        points.insert(1 + (x >> 33) as usize % (QUANTA - 1));
    }
    let mut got = Vec::new();
    let mut failover = Duration::ZERO;
    for (q, d) in demands.iter().enumerate() {
        let (lead, took) = leader(&[&replicas[0], &replicas[1]], Duration::from_secs(15));
        failover = failover.max(took);
        // Demands through the other replica: any replica takes them.
        got.push(step(&replicas[1 - lead], &replicas[lead], d));
        if points.contains(&(q + 1)) {
            let _ = replicas[lead].child.kill();
            let _ = replicas[lead].child.wait();
            replicas[lead] = start();
        }
    }
    assert_eq!(started, 22);
    for (q, (g, r)) in got.iter().zip(&reference).enumerate() {
        assert_eq!(g, r, "quantum {}: the replicated pool differs from the uninterrupted one", q + 1);
    }
    assert_eq!(etcd.value("/fairshare/kills/quantum").as_deref(), Some("00000000000000000200"));
    eprintln!("controller: 20 kills -9 in 200 quanta, the longest wait for a new leader {failover:?}");
}

/// `fairshare bench controller` on a test etcd: every field present and plausible (as
/// many quanta as asked, a state that grows with the tenants), and nothing of its pool
/// left in etcd after.
#[test]
fn bench_controller_measures_commits_and_leaves_nothing() {
    let etcd = Etcd::start();
    let mut bytes = Vec::new();
    for tenants in ["10", "1000"] {
        let out = common::fairshare(&[
            "bench",
            "controller",
            "--etcd",
            &etcd.url,
            "--tenants",
            tenants,
            "--quanta",
            "20",
            "--json",
        ]);
        assert!(out.status.success(), "{}", common::text(&out.stderr));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["quanta"], 20, "{r}");
        let (p50, p99) = (r["commit_p50_ms"].as_f64().unwrap(), r["commit_p99_ms"].as_f64().unwrap());
        assert!(p50 > 0.0 && p99 >= p50, "{r}");
        assert_eq!(r["shards_per_quantum"], 1, "{r}");
        bytes.push(r["bytes_per_quantum"].as_f64().unwrap());
    }
    assert!(bytes[1] > 50.0 * bytes[0], "the state grows with the tenants: {bytes:?}");
    assert_eq!(etcd.ctl(&["get", "/fairshare/", "--prefix", "--keys-only"]).trim(), "", "the bench's keys are deleted");
    // A bad flag is named.
    let out = common::fairshare(&["bench", "controller", "--etcd", &etcd.url, "--tenants", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::text(&out.stderr).contains("--tenants"), "{}", common::text(&out.stderr));
}

/// A join and a leave asked of the follower: 202, applied by the leader at its next
/// quantum and committed with it; a new leader (after kill -9) has them too. A join
/// with a token is refused, named.
#[test]
fn joins_and_leaves_on_any_replica_take_effect_at_the_next_quantum() {
    let etcd = Etcd::cluster(3);
    let dir = tempfile::tempdir().unwrap();
    let (mut lead, follow) = two_replicas(&etcd, "members", dir.path());
    let names = |v: &Value| -> Vec<String> {
        v["tenants"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let (code, body) = follow.http("POST", "/v1/tenants", "{\"name\": \"D\", \"weight\": 2}");
    assert_eq!(code, 202, "{body}");
    let (code, body) = follow.http("POST", "/v1/tenants", "{\"name\": \"E\", \"token_sha256\": \"00\"}");
    assert_eq!(code, 400, "{body}");
    let (code, body) = follow.http("DELETE", "/v1/tenants/B", "");
    assert_eq!(code, 202, "{body}");
    let q1 = lead.json("POST", "/v1/quantum", "");
    assert_eq!(names(&q1), ["A", "C", "D"], "{q1}");
    // Demands for the new tenant, once the follower shows it.
    until(Duration::from_secs(5), "the follower shows D", || {
        names(&follow.json("GET", "/v1/allocations", "")).contains(&"D".to_string())
    });
    assert_eq!(follow.http("PUT", "/v1/tenants/D/demand", "{\"slices\": 4}").0, 204);
    assert_eq!(follow.http("PUT", "/v1/tenants/B/demand", "{\"slices\": 4}").0, 404);
    let _ = lead.child.kill();
    let _ = lead.child.wait();
    leader(&[&follow], Duration::from_secs(15));
    let q2 = follow.json("POST", "/v1/quantum", "");
    assert_eq!(q2["quantum"], 2);
    assert_eq!(names(&q2), ["A", "C", "D"], "{q2}");
    let d = &q2["tenants"][2];
    assert_eq!((d["demand_slices"].as_u64(), d["alloc_slices"].as_u64()), (Some(4), Some(4)), "{q2}");
    // A leave and a join of one name before the next quantum: both are applied, in order
    // (the tenant joins again, last, as a new one).
    let spare = replica(&etcd, "members", &dir.path().join("c.log"));
    until(Duration::from_secs(5), "the new replica shows quantum 2", || status(&spare)["quantum"] == 2);
    assert_eq!(spare.http("DELETE", "/v1/tenants/C", "").0, 202);
    until(Duration::from_secs(5), "the replica shows C gone", || {
        !names(&spare.json("GET", "/v1/allocations", "")).contains(&"C".to_string())
    });
    let (code, body) = spare.http("POST", "/v1/tenants", "{\"name\": \"C\", \"weight\": 3}");
    assert_eq!(code, 202, "{body}");
    let q3 = follow.json("POST", "/v1/quantum", "");
    assert_eq!(names(&q3), ["A", "D", "C"], "{q3}");
}
