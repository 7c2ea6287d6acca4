//! `fairshare controller` end to end: replicas of one pool on a real etcd (Debian's
//! `etcd-server`, started by the test on loopback ports in a temporary folder and
//! killed when the test ends, also when it fails: `fairshare_cluster::testing`),
//! killed and stopped as a host would.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{example, figure2_quantum, replay_rows, rows, Addr, Running};
use fairshare_cluster::testing::Etcd;
use serde_json::Value;

/// A replica of the example pool (`examples/serve.toml`) on `etcd`, manual clock,
/// its stderr in `log`.
fn replica(etcd: &Etcd, pool: &str, log: &Path) -> Running {
    let config = example();
    let args = ["controller", "--config", config.to_str().unwrap(), "--etcd", &etcd.url, "--pool", pool];
    let rest = ["--listen", "127.0.0.1:0", "--clock", "manual", "--lease-ttl", "3"];
    let all: Vec<&str> = args.iter().chain(&rest).copied().collect();
    let (child, line) = common::spawn_until_first_line(&all, Some(log));
    let addr = line.trim().strip_prefix("fairshare controller: listening on http://").unwrap_or_else(|| {
        panic!("the controller did not start: {line:?} {}", std::fs::read_to_string(log).unwrap_or_default())
    });
    Running { child, addr: Addr::Tcp(addr.to_string()), token: None }
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
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let a = replica(&etcd, "fig2", &dir.path().join("a.log"));
    let b = replica(&etcd, "fig2", &dir.path().join("b.log"));
    let (first, _) = leader(&[&a, &b], Duration::from_secs(10));
    let (mut lead, follow) = if first == 0 { (a, b) } else { (b, a) };
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
    let etcd = Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let a = replica(&etcd, "fence", &dir.path().join("a.log"));
    let b = replica(&etcd, "fence", &dir.path().join("b.log"));
    let (first, _) = leader(&[&a, &b], Duration::from_secs(10));
    let (old, new) = if first == 0 { (a, b) } else { (b, a) };
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
