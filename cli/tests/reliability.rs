//! What survives bad input, signals and kill -9, end to end on the `fairshare` binary:
//! outputs that never clobber, temporary files that never outlive their run, memory
//! linear in the users, self-tests that cannot pass without testing, numbers out of
//! range named, credits across kill -9, and the parsers fuzzed (the device's memory and
//! socket are in cli/tests/device.rs; docs/reliability.md lists every guarantee).

#![allow(clippy::unwrap_used)]

mod common;

use common::{fairshare, text, write};
use std::fs;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PAPER: &str =
    "quantum,user,demand\n1,A,3\n1,B,2\n1,C,1\n2,A,3\n3,B,3\n4,A,2\n4,B,2\n4,C,4\n5,A,2\n5,B,3\n5,C,5\n";

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// A trace of `users` users over `quanta` quanta with varied demands.
fn trace(users: usize, quanta: usize) -> String {
    let mut s = String::from("quantum,user,demand\n");
    for q in 1..=quanta {
        for u in 0..users {
            s += &format!("{q},u{u},{}\n", (q * 7 + u * 13) % 11);
        }
    }
    s
}

#[test]
fn out_never_clobbers_what_it_must_not() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = write(d, "paper.csv", PAPER);
    let reference = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2"]);
    assert!(reference.status.success());
    let rows = text(&reference.stdout);

    // The output is the input: refused, exit 2, the input untouched.
    let out = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--out", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is the input"), "{}", text(&out.stderr));
    assert_eq!(fs::read_to_string(&input).unwrap(), PAPER);
    // Also through a symlink to the input.
    let alias = d.join("alias.csv");
    std::os::unix::fs::symlink(&input, &alias).unwrap();
    let out = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--out", alias.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(fs::read_to_string(&input).unwrap(), PAPER);

    // A symlink is written through: the link stays, its target gets the rows.
    let target = write(d, "target.csv", "old\n");
    let link = d.join("link.csv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--out", link.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(&target).unwrap(), rows);

    // A FIFO is written directly, not replaced.
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            fs::File::open(&fifo).unwrap().read_to_string(&mut s).unwrap();
            s
        })
    };
    let out = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--out", fifo.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(reader.join().unwrap(), rows);
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());

    // A character device (/dev/null) stays one.
    let out = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--out", "/dev/null"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(fs::metadata("/dev/null").unwrap().file_type().is_char_device());

    // A stale temporary of a dead process is removed by the next run; one of a live
    // process (this test's) is left alone.
    let stale = write(d, ".rows.csv.fairshare-999999999.tmp", "stale");
    let live = write(d, &format!(".rows.csv.fairshare-{}.tmp", std::process::id()), "live");
    let rows_path = d.join("rows.csv");
    let out =
        fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--out", rows_path.to_str().unwrap()]);
    assert!(out.status.success());
    assert!(!stale.exists(), "the stale temporary is removed");
    assert!(live.exists(), "a live process's temporary is kept");
    fs::remove_file(live).unwrap();
    assert_eq!(
        names(d),
        ["alias.csv", "fifo", "link.csv", "paper.csv", "rows.csv", "target.csv"],
        "no temporary file is left"
    );
}

/// SIGINT and SIGTERM in the middle of a run remove the temporary file, and the earlier
/// output stays as it was.
#[test]
fn a_signal_mid_run_removes_the_temporary_and_keeps_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = write(d, "big.csv", &trace(400, 400));
    for signal in ["TERM", "INT"] {
        let out = write(d, "out.csv", "earlier output\n");
        let mut child = Command::new(env!("CARGO_BIN_EXE_fairshare"))
            .args(["replay", input.to_str().unwrap(), "--fair-share", "5", "--dense", "--out", out.to_str().unwrap()])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let tmp = d.join(format!(".out.csv.fairshare-{}.tmp", child.id()));
        let start = Instant::now();
        while !tmp.exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(tmp.exists(), "the run writes through {}", tmp.display());
        Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "SIG{signal}: {status}");
        assert!(!tmp.exists(), "SIG{signal} removes the temporary");
        assert_eq!(fs::read_to_string(&out).unwrap(), "earlier output\n");
    }
    assert_eq!(names(d), ["big.csv", "out.csv"]);
}

/// Peak resident memory of a child, sampled from /proc while it runs.
fn peak_rss_kb(mut cmd: Command) -> (u64, Output) {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let sampler = std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            let Ok(s) = fs::read_to_string(&status) else { break };
            if let Some(kb) = s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)) {
                peak = peak.max(kb.parse().unwrap_or(0));
            }
            if s.contains("State:\tZ") {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        peak
    });
    let out = child.wait_with_output().unwrap();
    (sampler.join().unwrap(), out)
}

/// 4,000 users, each with one line in its own quantum: before, the replay held
/// users x quanta demands and results (hundreds of MB); streaming, it holds O(users).
#[test]
fn replay_memory_is_linear_in_users_not_users_times_quanta() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = String::from("quantum,user,demand\n");
    for u in 0..4000 {
        s += &format!("{},u{u},5\n", u + 1);
    }
    let input = write(dir.path(), "wide.csv", &s);
    let out_path = dir.path().join("rows.csv");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fairshare"));
    cmd.args(["replay", input.to_str().unwrap(), "--fair-share", "2", "--policy", "strict"]);
    cmd.args(["--out", out_path.to_str().unwrap()]);
    let (peak, out) = peak_rss_kb(cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // 4,000 x 4,000 quanta of demand, allocation: 256 MB held before. Now a few MB.
    assert!(peak < 64 * 1024, "peak RSS {peak} kB");
    // Strict allocates only to users with demand: one row per trace line.
    let rows = fs::read_to_string(&out_path).unwrap();
    assert_eq!(rows.lines().count(), 4001);
    assert!(rows.contains("\n4000,u3999,5,2\n"), "{}", &rows[rows.len() - 40..]);
}

fn replay_state(input: &Path, out: &Path, state: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fairshare"));
    cmd.args(["replay", input.to_str().unwrap(), "--fair-share", "4", "--alpha", "0.5", "--initial-credits", "10"]);
    cmd.args(["--out", out.to_str().unwrap(), "--state", state.to_str().unwrap(), "--json"]);
    cmd
}

/// kill -9 at 30 random points of a 5,000-quantum replay with `--state`, resumed each
/// time: the final rows and summary equal an uninterrupted run's, byte for byte.
#[test]
fn credits_survive_kill_9_at_30_points() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = write(d, "trace.csv", &trace(6, 5000));
    let reference_out = d.join("reference.csv");
    let reference = replay_state(&input, &reference_out, &d.join("reference-state")).output().unwrap();
    assert!(reference.status.success(), "{}", text(&reference.stderr));
    let plain = d.join("plain.csv");
    let out = fairshare(&[
        "replay",
        input.to_str().unwrap(),
        "--fair-share",
        "4",
        "--alpha",
        "0.5",
        "--initial-credits",
        "10",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert_eq!(fs::read(&plain).unwrap(), fs::read(&reference_out).unwrap(), "--state changes no row");

    let out = d.join("out.csv");
    let state = d.join("state");
    // Deterministic "random" kill points: a fixed LCG, delays from 0 to ~40 ms.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut kills = 0;
    for _ in 0..30 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = Duration::from_micros((x >> 33) % 40_000);
        let mut child = replay_state(&input, &out, &state).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(delay);
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
    }
    assert!(kills >= 20, "only {kills} of 30 runs were killed mid-run");
    let last = replay_state(&input, &out, &state).output().unwrap();
    assert!(last.status.success(), "{}", text(&last.stderr));
    assert_eq!(fs::read(&out).unwrap(), fs::read(&reference_out).unwrap(), "rows after 30 kills");
    assert_eq!(last.stdout, reference.stdout, "the summary (JSON) after 30 kills");
}

/// A ledger of another run is refused, and nothing is changed.
#[test]
fn a_ledger_belongs_to_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = write(d, "a.csv", PAPER);
    let b = write(d, "b.csv", &trace(3, 4));
    let state = d.join("state");
    let out = replay_state(&a, &d.join("a.out"), &state).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = fs::read(state.join("log")).unwrap();
    let out = replay_state(&b, &d.join("b.out"), &state).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("belongs to another run"), "{}", text(&out.stderr));
    assert_eq!(fs::read(state.join("log")).unwrap(), log);
    assert!(!d.join("b.out").exists());
}

/// Numbers beyond their range are named with the field, the line and the value.
#[test]
fn trace_numbers_out_of_range_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: [(&str, &str); 3] = [
        ("quantum,user,demand\n1,a,18446744073709551616\n", ":2: field `demand`: `18446744073709551616` is too large"),
        ("quantum,user,demand,demand\n1,a,1,2\n", "column `demand` appears twice"),
        ("quantum,user,demand\n99999999999999999999,a,1\n", "field `quantum`: `99999999999999999999` is too large"),
    ];
    for (i, (content, expect)) in cases.iter().enumerate() {
        let input = write(d, &format!("t{i}.csv"), content);
        let out = fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2"]);
        assert_eq!(out.status.code(), Some(2), "{content}");
        assert!(text(&out.stderr).contains(expect), "{content}: {}", text(&out.stderr));
    }
    // A multi-resource weight of 1e307 gave a user 0 tasks with exit 0; it is refused by name.
    let cluster: Value = serde_json::from_str(
        &fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/cluster.json")).unwrap(),
    )
    .unwrap();
    let mut heavy = cluster.clone();
    heavy["users"][0]["weight"] = serde_json::json!(1e307);
    let path = write(d, "heavy.json", &heavy.to_string());
    let out = fairshare(&["multi", "--policy", "drf", "--instance", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("user \"web\": weight 1e307 is outside"), "{}", text(&out.stderr));
    // A credit overflow names the user and the trace's quantum.
    let input = write(d, "rich.csv", "quantum,user,demand\n7,alice,0\n7,bob,0\n");
    let out =
        fairshare(&["replay", input.to_str().unwrap(), "--fair-share", "2", "--initial-credits", "140737488355327"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("quantum 7") && err.contains("user `alice`"), "{err}");
}

/// A self-test that tests nothing exits 3; an unreachable backend is an error (exit 2),
/// not a mismatch; vector files are parsed strictly.
#[test]
fn selftest_cannot_pass_without_testing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Only weighted cases: the device computes equal shares only, so every case is skipped.
    let weighted = r#"{"cases": [{"name": "w", "fair_share": [2, 1], "guaranteed": [1, 0], "initial_credits": 5,
        "quanta": [{"demand": [1, 1], "alloc": [1, 1], "credits_after": ["5", "5"]}]}]}"#;
    let path = write(d, "weighted.json", weighted);
    let out = fairshare(&["selftest", "--vectors", path.to_str().unwrap(), "--backend", "rtl-sim"]);
    assert_eq!(out.status.code(), Some(3), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("nothing was tested"), "{}", text(&out.stdout));

    let missing = d.join("none.shm");
    let out = fairshare(&["selftest", "--backend", &format!("emulator:{}", missing.display())]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("no emulator"), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("MISMATCH"), "{}", text(&out.stdout));

    let case = |name: &str, extra: &str, quanta: &str| {
        format!(
            r#"{{"name": "{name}", "fair_share": [2], "guaranteed": [1], "initial_credits": 5{extra}, "quanta": [{quanta}]}}"#
        )
    };
    let q = r#"{"demand": [1], "alloc": [1], "credits_after": ["5"]}"#;
    for (content, expect) in [
        (format!(r#"{{"cases": [{}]}}"#, case("a", r#", "fair_shares": [3]"#, q)), "unknown field `fair_shares`"),
        (format!(r#"{{"cases": [{}, {}]}}"#, case("a", "", q), case("a", "", q)), "case `a` appears twice"),
        (format!(r#"{{"cases": [{}]}}"#, case("a", "", "")), "case `a` has no quanta"),
        (r#"{"cases": []}"#.to_string(), "no cases"),
        (r#"{"cases": [], "about": "x", "extra": 1}"#.to_string(), "unknown field `extra`"),
    ] {
        let path = write(d, "v.json", &content);
        let out = fairshare(&["selftest", "--vectors", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{content}");
        assert!(text(&out.stderr).contains(expect), "{content}: {}", text(&out.stderr));
    }
}

/// Runs `replay` on `content` and checks the result is a clean success or a clean
/// refusal (exit 2 with a message naming the file), never a panic.
fn replay_is_clean(dir: &Path, content: &[u8]) -> Result<(), String> {
    let path = dir.join("fuzz.csv");
    fs::write(&path, content).unwrap();
    let out = fairshare(&["replay", path.to_str().unwrap(), "--fair-share", "3", "--dense"]);
    let err = text(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(()),
        Some(2) if err.contains("fuzz.csv") => Ok(()),
        code => Err(format!("exit {code:?}, stderr {err}, input {:?}", String::from_utf8_lossy(content))),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 150, ..Default::default() })]

    /// The trace parser fuzzed through the binary, on arbitrary bytes.
    #[test]
    fn the_trace_parser_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
        let dir = tempfile::tempdir().unwrap();
        let mut content = b"quantum,user,demand\n".to_vec();
        content.extend(bytes);
        proptest::prop_assert_eq!(replay_is_clean(dir.path(), &content), Ok(()));
    }

    /// The trace parser fuzzed through the binary, on mutations of a valid trace:
    /// numbers at their limits, signs, fractions, quotes, missing and extra fields.
    #[test]
    fn the_trace_parser_never_panics_on_mutated_traces(
        at in proptest::prelude::any::<proptest::sample::Index>(),
        cut in 0usize..12,
        insert in "(18446744073709551615|18446744073709551616|-1|0.5|1e3|\"|,|\n| |[0-9a-z]{0,6}){0,3}",
    ) {
        let dir = tempfile::tempdir().unwrap();
        let i = at.index(PAPER.len());
        let j = (i + cut).min(PAPER.len());
        let content = format!("{}{insert}{}", &PAPER[..i], &PAPER[j..]);
        proptest::prop_assert_eq!(replay_is_clean(dir.path(), content.as_bytes()), Ok(()));
    }
}
