//! The device path end to end with real processes: `fairshare device-sim` serving the
//! shared-memory file, `fairshare replay --backend emulator:PATH` driving it. Results
//! must equal the software's byte for byte, also when the emulator injects a fault
//! (the host must switch to software cleanly, with no credit lost).

#![allow(clippy::unwrap_used)]

mod common;

use common::{device_sim, fairshare, root as nix_root};
use std::fmt::Write as _;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A bursty trace: `quanta` x `users` demands, CSV `quantum,user,demand`.
fn trace(dir: &Path, users: usize, quanta: usize, seed: u64) -> PathBuf {
    let mut s = String::from("quantum,user,demand\n");
    let mut x = seed | 1;
    for q in 0..quanta {
        for u in 0..users {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = match x % 8 {
                0..=2 => 0,
                3 | 4 => x % 12,
                5 | 6 => 10 + x % 30,
                _ => x % 200,
            };
            writeln!(s, "{q},u{u},{d}").unwrap();
        }
    }
    let path = dir.join(format!("trace_{users}_{quanta}.csv"));
    std::fs::write(&path, s).unwrap();
    path
}

/// Replays `trace` on `backend`; returns (CSV output, JSON summary).
fn replay(dir: &Path, trace: &Path, backend: &str, extra: &[&str]) -> (String, serde_json::Value) {
    let out = dir.join(format!("out_{}.csv", backend.replace(['/', ':'], "_")));
    let mut args = vec![
        "replay",
        trace.to_str().unwrap(),
        "--fair-share",
        "10",
        "--initial-credits",
        "100",
        "--backend",
        backend,
        "--out",
        out.to_str().unwrap(),
        "--json",
    ];
    args.extend(extra);
    let o = fairshare(&args);
    assert!(o.status.success(), "replay on {backend}: {}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let json = serde_json::from_str(stdout.trim()).unwrap();
    (std::fs::read_to_string(out).unwrap(), json)
}

/// `quanta` quanta of 50 users through a `device-sim` process computing with `model`
/// on `lanes` lanes: every quantum on the device, output byte-equal to the software's.
fn replay_through_device_sim(model: &str, lanes: &str, quanta: usize, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 50, quanta, seed);
    let (want, _) = replay(dir.path(), &t, "software", &[]);
    let shm = dir.path().join("dev.shm");
    let _sim = device_sim(&shm, &["--model", model, "--users", "50", "--lanes", lanes]);
    let backend = format!("emulator:{}", shm.display());
    let (got, json) = replay(dir.path(), &t, &backend, &[]);
    assert_eq!(json["fallback"], serde_json::Value::Null, "{json}");
    assert_eq!(json["device_quanta"], quanta, "{json}");
    assert!(got == want, "the {model} emulator's replay differs from the software's");
}

#[test]
fn ten_thousand_quanta_through_a_device_sim_process_equal_the_software() {
    replay_through_device_sim("software", "16", 10_000, 7);
}

/// The same path with the RustHDL engine computing in the emulator (cycle by cycle, so
/// fewer quanta).
#[test]
fn rtl_model_in_a_device_sim_process_equals_the_software() {
    replay_through_device_sim("rtl", "4", 400, 8);
}

#[test]
fn every_injected_fault_ends_in_a_clean_switch_to_software() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 40, 60, 11);
    let (want, _) = replay(dir.path(), &t, "software", &[]);
    for (fault, words) in [
        ("late@5", "no completion within"),
        ("wrong-seq@9", "sequence number"),
        ("corrupt@13", "differs from the software"),
        ("crash@17", "is gone"),
    ] {
        for verify in [&[][..], &["--verify", "sync"], &["--verify", "sample:4"], &["--no-verify"][..]] {
            let shm = dir.path().join(format!("{}.shm", fault.replace('@', "_")));
            let _sim = device_sim(&shm, &["--users", "40", "--lanes", "4", "--fault", fault, "--late-ms", "1500"]);
            let backend = format!("emulator:{}", shm.display());
            let mut extra = vec!["--timeout-ms", "300"];
            extra.extend(verify);
            let (got, json) = replay(dir.path(), &t, &backend, &extra);
            let at: u64 = fault.split('@').nth(1).unwrap().parse().unwrap();
            assert_eq!(json["fallback"]["after_quanta"], at - 1, "{fault} {verify:?}: {json}");
            assert_eq!(json["device_quanta"], at - 1, "{fault} {verify:?}: {json}");
            let reason = json["fallback"]["reason"].as_str().unwrap();
            // Before the software recomputes it (all but sync), a corrupted allocation is
            // caught by the invariants: above the demand, or credits that do not add up.
            let ok = if verify == ["--verify", "sync"] || fault != "corrupt@13" {
                reason.contains(words)
            } else {
                reason.contains("outside") || reason.contains("conservation")
            };
            assert!(ok, "{fault} {verify:?}: {reason}");
            assert!(got == want, "{fault} {verify:?}: the output differs from the software's");
        }
    }
}

/// A wrong result that keeps every invariant (`swap`): sync finds it before it is used
/// (the output equals the software's); async uses it and finds it on the verifier
/// thread, names the quantum it hit and how many device quanta followed, and the
/// replay's last credits are the software's; invariants alone never see it.
#[test]
fn a_swap_is_found_by_recomputation_at_the_quantum_it_hit() {
    let dir = tempfile::tempdir().unwrap();
    // More quanta after the swap than the verifier may lag (65): it is found before the
    // last quantum, whatever the scheduling.
    let t = trace(dir.path(), 40, 100, 12);
    let (want, want_json) = replay(dir.path(), &t, "software", &[]);
    // The rows of the last quantum (its label is the first field).
    let last_quantum = |csv: &str| -> Vec<String> {
        let label = csv.lines().last().and_then(|l| l.split(',').next()).unwrap_or("").to_string();
        csv.lines().filter(|l| l.split(',').next() == Some(label.as_str())).map(str::to_string).collect()
    };
    for (verify, found) in [("sync", true), ("async", true), ("invariants", false)] {
        let shm = dir.path().join(format!("swap-{verify}.shm"));
        let _sim = device_sim(&shm, &["--users", "40", "--lanes", "4", "--fault", "swap@6"]);
        let backend = format!("emulator:{}", shm.display());
        let (got, json) = replay(dir.path(), &t, &backend, &["--verify", verify]);
        assert_eq!(json["quanta"], want_json["quanta"]);
        if !found {
            assert!(json["fallback"].is_null(), "{verify}: {json}");
            continue;
        }
        assert_eq!(json["fallback"]["after_quanta"], 5, "{verify}: {json}");
        assert!(json["fallback"]["reason"].as_str().unwrap().contains("differs from the software"), "{json}");
        if verify == "sync" {
            assert!(got == want, "sync issues the software's result");
        } else {
            assert!(json["device_quanta"].as_u64().unwrap() >= 6, "async used the swapped result: {json}");
            assert_eq!(last_quantum(&got), last_quantum(&want), "the last quantum is the software's");
        }
    }
}

#[test]
fn selftest_and_demo_run_on_the_emulator() {
    let dir = tempfile::tempdir().unwrap();
    let shm = dir.path().join("dev.shm");
    let _sim = device_sim(&shm, &["--model", "rtl", "--users", "256", "--lanes", "8"]);
    let backend = format!("emulator:{}", shm.display());
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vectors/karma_random.json");
    let o = fairshare(&["selftest", "--vectors", vectors.to_str().unwrap(), "--backend", &backend]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}");
    assert!(stdout.contains("0 cases with mismatches") && !stdout.contains(" 0 quanta run"), "{stdout}");
    let demo = |backend: &str| {
        let o = fairshare(&["demo", "--users", "60", "--quanta", "40", "--json", "--backend", backend]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("dropped"), "{}", String::from_utf8_lossy(&o.stderr));
        let mut rows = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["policies"].clone();
        // Everything but the backend's name and its timing must be equal.
        for row in rows.as_array_mut().unwrap() {
            let row = row.as_object_mut().unwrap();
            assert!(row.remove("backend").is_some() && row.remove("quantum_time").is_some());
        }
        rows
    };
    assert_eq!(demo(&backend), demo("software"));
}

/// A case larger than the device is skipped with the reason, not reported as a
/// mismatch: 70 idle users (each keeps 0 slices and gains f - g = 1 free credit) on an
/// emulator that holds 64.
#[test]
fn selftest_skips_cases_larger_than_the_device() {
    let dir = tempfile::tempdir().unwrap();
    let n = 70;
    let case = serde_json::json!({ "cases": [{
        "name": "idle-70", "fair_share": vec![2; n], "guaranteed": vec![1; n], "initial_credits": 5,
        "quanta": [{ "demand": vec![0; n], "alloc": vec![0; n], "credits_after": vec!["6"; n] }],
    }]});
    let vectors = dir.path().join("idle.json");
    std::fs::write(&vectors, case.to_string()).unwrap();
    let shm = dir.path().join("small.shm");
    let _sim = device_sim(&shm, &["--users", "64", "--lanes", "4"]);
    // The only case is skipped on the device: nothing was tested there, exit status 3.
    for (backend, want, code) in [
        ("software".to_string(), "ok       idle-70", 0),
        (
            format!("emulator:{}", shm.display()),
            "skip     idle-70 (does not fit the device: 70 users; the device holds 1 to 64",
            3,
        ),
    ] {
        let o = fairshare(&["selftest", "--vectors", vectors.to_str().unwrap(), "--backend", &backend]);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(code), "{backend}: {stdout}");
        assert!(stdout.contains(want), "{backend}: {stdout}");
    }
}

#[test]
fn device_backends_that_are_not_there_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 3, 2, 1);
    // A replay on `backend` must stop with exit status 2; its message is returned.
    let refused = |backend: &str| {
        let o = fairshare(&["replay", t.to_str().unwrap(), "--fair-share", "2", "--backend", backend]);
        assert_eq!(o.status.code(), Some(2), "{backend}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = refused(&format!("emulator:{}", dir.path().join("nobody.shm").display()));
    assert!(err.contains("start `fairshare device-sim --shm"), "{err}");
    let err = refused("vfio:0000:ff:1f.7");
    assert!(err.contains("vfio-pci") || err.contains("lspci"), "{err}");
    let junk = dir.path().join("junk.shm");
    std::fs::write(&junk, vec![0u8; 8192]).unwrap();
    let err = refused(&format!("emulator:{}", junk.display()));
    assert!(err.contains("no emulator is serving"), "{err}");
    let err = refused("fpga");
    assert!(err.contains("emulator:PATH"), "{err}");
}

/// Nobody can resize the emulator's memory under a mapping. The
/// path is a socket (truncate(1) fails on it), and the memory itself, a sealed memfd,
/// refuses every resize even to root reaching it through /proc; the run goes on, equal
/// to the software.
#[test]
fn truncating_the_device_memory_cannot_crash_either_process() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 30, 200, 3);
    let (want, _) = replay(dir.path(), &t, "software", &[]);
    let shm = dir.path().join("dev.shm");
    let sim = device_sim(&shm, &["--users", "30", "--lanes", "4"]);
    let status = Command::new("truncate").args(["-s", "4096", shm.to_str().unwrap()]).stderr(Stdio::null()).status();
    assert!(!status.unwrap().success(), "truncate on the socket fails");
    let mut memfds = 0;
    for fd in std::fs::read_dir(format!("/proc/{}/fd", sim.0.id())).unwrap() {
        let fd = fd.unwrap().path();
        if std::fs::read_link(&fd).is_ok_and(|l| l.to_string_lossy().contains("memfd:fairshare-device")) {
            match std::fs::OpenOptions::new().write(true).open(&fd) {
                Ok(f) => {
                    memfds += 1;
                    for size in [0, 4096, 1 << 30] {
                        assert!(f.set_len(size).is_err(), "resizing the device memory to {size} is refused");
                    }
                }
                // Without the right to reach another process's descriptors there is
                // nothing to resize with either.
                Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied, "{e}"),
            }
        }
    }
    if nix_root() {
        assert!(memfds > 0, "root reaches the emulator's memfd through /proc");
    }
    let (got, json) = replay(dir.path(), &t, &format!("emulator:{}", shm.display()), &[]);
    assert_eq!(json["fallback"], serde_json::Value::Null, "{json}");
    assert!(got == want, "the replay after the attempts equals the software's");
}

/// `device-sim` never replaces what is not a dead emulator's
/// socket, removes its socket on SIGTERM, a host finds a dead emulator at once, and
/// two hosts never share one emulator.
#[test]
fn device_sim_never_clobbers_leaks_or_collides() {
    let dir = tempfile::tempdir().unwrap();
    let t = trace(dir.path(), 5, 4, 9);
    let path = dir.path().join("dev.shm");
    let shown = path.to_str().unwrap();
    // A user's file at the path: refused with exit 2, left as it was.
    std::fs::write(&path, "precious").unwrap();
    let o = fairshare(&["device-sim", "--shm", shown]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an emulator socket"), "{o:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    // Nothing else was left in the folder (only the trace and the user's file).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    std::fs::remove_file(&path).unwrap();
    // SIGTERM: the socket goes with the process.
    let mut sim = device_sim(&path, &["--users", "5", "--lanes", "4"]);
    assert!(Command::new("kill").args(["-TERM", &sim.0.id().to_string()]).status().unwrap().success());
    assert!(sim.0.wait().unwrap().success(), "SIGTERM ends device-sim cleanly");
    assert!(!path.exists(), "device-sim removes its socket on SIGTERM");
    // kill -9 leaves the socket behind: a host says at once that nobody serves it, and
    // a new emulator takes the path over.
    let mut sim = device_sim(&path, &["--users", "5", "--lanes", "4"]);
    sim.0.kill().unwrap();
    sim.0.wait().unwrap();
    assert!(path.exists());
    let backend = format!("emulator:{shown}");
    let o = fairshare(&["replay", t.to_str().unwrap(), "--fair-share", "2", "--backend", &backend]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no emulator is serving"), "{o:?}");
    let _sim = device_sim(&path, &["--users", "5", "--lanes", "4"]);
    // A second host while one is attached is refused; once it leaves, the next is served.
    let mut first = std::os::unix::net::UnixStream::connect(&path).unwrap();
    let mut byte = [0u8; 1];
    std::io::Read::read_exact(&mut first, &mut byte).unwrap();
    assert_eq!(&byte, b"F", "the first host gets the device");
    let o = fairshare(&["replay", t.to_str().unwrap(), "--fair-share", "2", "--backend", &backend]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another host is attached"), "{o:?}");
    drop(first);
    let (_, json) = replay(dir.path(), &t, &backend, &[]);
    assert_eq!(json["device_quanta"], 4, "{json}");
}
