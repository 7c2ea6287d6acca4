//! The replica on a real etcd (`fairshare_cluster::testing`: three members on loopback
//! for fencing, one for the others), driven in process: fencing, shards, demands,
//! read back by another replica, an etcd that does not answer.

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use fairshare_cluster::testing::Etcd;
use fairshare_cluster::{EtcdOptions, EtcdReplica};
use fairshare_service::replica::{Replica, ReplicaError};

fn replica(etcd: &Etcd, pool: &str) -> EtcdReplica {
    let options = EtcdOptions {
        endpoints: etcd.url.split(',').map(String::from).collect(),
        pool: pool.into(),
        timeout: Duration::from_secs(2),
    };
    EtcdReplica::connect(options).unwrap()
}

/// Starts `r` campaigning and waits until it leads.
fn lead(r: &mut EtcdReplica, api: &str) {
    r.start(api, Duration::from_secs(3));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !r.role().leader {
        assert!(Instant::now() < deadline, "the replica did not lead");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The keys under `prefix`.
fn keys(etcd: &Etcd, prefix: &str) -> Vec<String> {
    etcd.ctl(&["get", prefix, "--prefix", "--keys-only"]).lines().filter(|l| !l.is_empty()).map(String::from).collect()
}

#[test]
fn a_commit_after_the_lease_ended_or_from_another_quantum_is_fenced() {
    let etcd = Etcd::cluster(3);
    let mut a = replica(&etcd, "p");
    lead(&mut a, "http://a");
    assert_eq!(a.sync().unwrap().state, None, "a new pool has nothing committed");
    a.commit(0, b"state after 1").unwrap();
    assert_eq!(etcd.value("/fairshare/p/quantum").as_deref(), Some("00000000000000000001"));
    // From a quantum the store is not at: refused, named.
    let err = a.commit(0, b"again").unwrap_err();
    assert!(matches!(&err, ReplicaError::Fenced(m) if m.contains("ran quantum 0, the store is at 1")), "{err}");
    // The replica then reads the store again (as a pool does at each quantum).
    assert_eq!(a.sync().unwrap().state.as_deref(), Some(&b"state after 1"[..]));
    // The lease ends (as a leader's does when it is paused past its TTL) while the
    // replica still believes it leads (it renews every second): its commit is refused
    // by the leader key's revision, and nothing of it stays.
    let listed = etcd.ctl(&["lease", "list"]);
    for id in listed.lines().skip(1).filter(|l| !l.is_empty()) {
        etcd.ctl(&["lease", "revoke", id.trim()]);
    }
    let err = a.commit(1, b"state after 2").unwrap_err();
    assert!(matches!(&err, ReplicaError::Fenced(m) if m.contains("no longer leads")), "{err}");
    assert_eq!(etcd.value("/fairshare/p/quantum").as_deref(), Some("00000000000000000001"));
    let ledger = keys(&etcd, "/fairshare/p/ledger/");
    assert_eq!(ledger.len(), 2, "the pointer and the one shard of quantum 1: {ledger:?}");
    assert!(ledger.iter().any(|k| k.starts_with("/fairshare/p/ledger/00000000000000000001-")), "{ledger:?}");
    // It campaigns again and leads (alone), from where the store is.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !a.role().leader {
        assert!(Instant::now() < deadline, "the replica did not lead again");
        std::thread::sleep(Duration::from_millis(50));
    }
    a.commit(1, b"state after 2").unwrap();
    assert_eq!(etcd.value("/fairshare/p/quantum").as_deref(), Some("00000000000000000002"));
}

#[test]
fn a_state_beyond_one_request_commits_in_shards_and_another_replica_reads_it() {
    let etcd = Etcd::start();
    let mut a = replica(&etcd, "big");
    let mut b = replica(&etcd, "big");
    lead(&mut a, "http://a");
    // 5 MB: over etcd's 1.5 MiB per request, so in shards.
    let big: Vec<u8> = (0..5_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    a.sync().unwrap();
    a.commit(0, &big).unwrap();
    let first = keys(&etcd, "/fairshare/big/ledger/");
    assert_eq!(first.len(), 1 + 5, "the pointer and five shards of 1 MiB at most: {first:?}");
    let synced = b.sync().unwrap();
    assert_eq!(synced.state.as_deref(), Some(&big[..]), "the follower reads the state back whole");
    assert_eq!(b.sync().unwrap().state, None, "and only once");
    // The next commit replaces the shards; the follower takes the new state.
    let smaller = big[..1_500_000].to_vec();
    a.commit(1, &smaller).unwrap();
    let second = keys(&etcd, "/fairshare/big/ledger/");
    assert_eq!(second.len(), 1 + 2, "the old generation is deleted: {second:?}");
    assert_eq!(b.sync().unwrap().state, Some(smaller));
    // Only the leader commits: the follower is refused, naming the leader.
    let err = b.commit(2, b"x").unwrap_err();
    assert!(matches!(&err, ReplicaError::NotLeader { leader_api: Some(l) } if l == "http://a"), "{err}");
    // Demands put on any replica reach the others, once, in order.
    b.put_demand("A", 7).unwrap();
    b.put_demand("B", 1).unwrap();
    b.put_demand("A", 9).unwrap();
    assert_eq!(a.sync().unwrap().demands, [("B".to_string(), 1), ("A".to_string(), 9)]);
    assert!(a.sync().unwrap().demands.is_empty());
}

#[test]
fn an_unreachable_etcd_is_an_error_within_the_deadline() {
    let etcd = Etcd::start();
    let mut a = replica(&etcd, "gone");
    lead(&mut a, "http://a");
    a.sync().unwrap();
    etcd.signal("-STOP");
    let start = Instant::now();
    let err = a.commit(0, b"state").unwrap_err();
    let took = start.elapsed();
    etcd.signal("-CONT");
    // No answer within the deadline, or the connection's ping unanswered: etcd's, named.
    assert!(matches!(&err, ReplicaError::Store { store: "etcd", call, .. } if call == "writing the state"), "{err}");
    assert!(took < Duration::from_secs(10), "the commit gave up after {took:?}");
    // Whether it committed is read back once etcd answers: it did not.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match a.sync() {
            Ok(s) => {
                assert_eq!(s.state, None, "nothing was committed");
                break;
            }
            Err(e) => assert!(Instant::now() < deadline, "etcd did not come back: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(etcd.value("/fairshare/gone/quantum"), None);
}
