//! Transactional changes, as a property: random sequences of demands, joins, leaves and
//! quanta on a pool whose ledger lives on a tmpfs of 512 KiB that the sequence fills and
//! frees at random points (a real full disk, mounted by this test as root). After every
//! refused change, the published view, the per-tenant metrics, the quanta counted and
//! the ledger's files are exactly as before it; every acknowledged change is made to a
//! model pool without a ledger too, and the two publish the same allocations and
//! credits throughout. Once the disk has room again the pool goes on without a restart,
//! and a restart from its ledger resumes at the last acknowledged state.
//! Without root (or tmpfs), the test says so on stderr and checks nothing.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use fairshare::offload::Verify;
use fairshare_backends::{Backend, DeviceOptions};
use fairshare_service::config::ServeConfig;
use fairshare_service::pool::{Demand, LivePool, StartOptions};
use fairshare_service::ServiceError;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

#[derive(Debug, Clone)]
enum Op {
    Demand(usize, u64),
    Join(u8, u64),
    Leave(usize),
    Quantum,
    Fill,
    Free,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..8usize, 0..9u64).prop_map(|(u, d)| Op::Demand(u, d)),
        1 => (0..6u8, 1..4u64).prop_map(|(k, w)| Op::Join(k, w)),
        1 => (0..8usize).prop_map(Op::Leave),
        4 => Just(Op::Quantum),
        1 => Just(Op::Fill),
        1 => Just(Op::Free),
    ]
}

const CONFIG: &str = r#"
[pool]
capacity = 12
quantum = "100ms"
alpha = 0.5
initial_credits = 5
[demand]
source = "declared"
[enforce]
kind = "none"
[[tenants]]
name = "A"
[[tenants]]
name = "B"
weight = 2
[[tenants]]
name = "C"
"#;

fn start(state: Option<&Path>) -> LivePool {
    let options = StartOptions {
        backend: Backend::Software,
        device: DeviceOptions::new(Verify::Async, 1_000),
        state: state.map(Path::to_path_buf),
        accept_config_changes: false,
    };
    LivePool::start(ServeConfig::parse("t.toml", CONFIG).unwrap(), options).unwrap()
}

/// What a reader sees: quantum, names, demands, allocations, credits.
type Seen = (u64, Vec<String>, Vec<u64>, Vec<u64>, Option<Vec<fairshare::Credits>>);

/// The same change, to be made to the model.
type Change = Box<dyn FnOnce(&mut LivePool) -> Result<(), ServiceError>>;

fn seen(pool: &LivePool) -> Seen {
    let v = pool.published().view.load_full();
    (v.quantum, v.names.to_vec(), v.demand.clone(), v.alloc.clone(), v.credits.clone())
}

/// Everything a refused change must leave as it was: what readers see, the per-tenant
/// series, the quanta counted, and the ledger's files byte for byte.
fn everything(pool: &LivePool, dir: &Path) -> (String, String, u64, Vec<Option<Vec<u8>>>) {
    let p = pool.published();
    let view = p.view.load_full();
    let files = ["log", "snapshot", "head"].iter().map(|f| std::fs::read(dir.join(f)).ok()).collect();
    (
        format!("{:?}", seen(pool)),
        String::from_utf8_lossy(&view.tenant_metrics()).into_owned(),
        p.metrics.quanta(),
        files,
    )
}

/// Fills the file system of `dir` with 4 KiB files until a write fails.
fn fill(dir: &Path, fillers: &mut Vec<PathBuf>) {
    loop {
        let p = dir.join(format!("filler-{}", fillers.len()));
        let full = std::fs::write(&p, [0u8; 4096]).is_err();
        fillers.push(p);
        if full {
            return;
        }
    }
}

/// Runs `ops`; returns how many changes the full disk refused.
/// A case's folder and the files filling the disk, removed when the case ends (also
/// when it fails: the next case, or the shrinking, starts on an empty disk).
struct Case {
    dir: PathBuf,
    fillers: Vec<PathBuf>,
}

impl Drop for Case {
    fn drop(&mut self) {
        for f in self.fillers.drain(..) {
            let _ = std::fs::remove_file(f);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(ops: &[Op], fs: &Path, case: usize) -> Result<usize, TestCaseError> {
    let dir = fs.join(format!("case-{case}"));
    let state = dir.join("state");
    std::fs::create_dir_all(&dir).unwrap();
    let mut guard = Case { dir: dir.clone(), fillers: Vec::new() };
    let fillers = &mut guard.fillers;
    let mut real = start(Some(&state));
    let mut model = start(None);
    let mut refused = 0;
    for op in ops {
        let before = everything(&real, &state);
        let names = real.published().view.load().names.clone();
        let name = |u: usize| names[u % names.len()].clone();
        let (got, want): (Result<(), ServiceError>, Change) = match op.clone() {
            Op::Fill => {
                fill(fs, fillers);
                continue;
            }
            Op::Free => {
                for f in fillers.drain(..) {
                    let _ = std::fs::remove_file(f);
                }
                continue;
            }
            Op::Demand(u, d) => {
                let n = name(u);
                (real.set_demand(&n, Demand::Slices(d)), Box::new(move |m| m.set_demand(&n, Demand::Slices(d))))
            }
            Op::Join(k, w) => {
                let n = format!("j{k}");
                (real.join(&n, w, None, None).map(|_| ()), Box::new(move |m| m.join(&n, w, None, None).map(|_| ())))
            }
            Op::Leave(u) => {
                let n = name(u);
                (real.leave(&n).map(|_| ()), Box::new(move |m| m.leave(&n).map(|_| ())))
            }
            Op::Quantum => (real.run_quantum().map(|_| ()), Box::new(|m| m.run_quantum().map(|_| ()))),
        };
        match got {
            Err(ServiceError::NotCommitted { .. }) => {
                refused += 1;
                prop_assert_eq!(&everything(&real, &state), &before, "{:?} was refused but something changed", op);
                prop_assert!(real.published().status.load().ledger_error.is_some());
            }
            Err(e) => {
                // Refused by the pool itself (a duplicate name, the last tenant): the
                // model refuses it too.
                prop_assert!(want(&mut model).is_err(), "{:?}: only the ledgered pool refused: {}", op, e);
                prop_assert_eq!(&everything(&real, &state), &before);
            }
            Ok(()) => {
                prop_assert!(want(&mut model).is_ok(), "{:?}: only the model refused", op);
                // A whole state committed: durable again. A demand's small record can
                // fit where the pool does not, so it says nothing of that.
                if !matches!(op, Op::Demand(..)) {
                    prop_assert!(real.published().status.load().ledger_error.is_none());
                }
            }
        }
        prop_assert_eq!(seen(&real), seen(&model), "after {:?}", op);
    }
    // Room again: the pool goes on with no restart.
    for f in fillers.drain(..) {
        let _ = std::fs::remove_file(f);
    }
    let (mut real, mut model) = (real, model);
    if ops.len().is_multiple_of(2) {
        real.run_quantum().unwrap();
        model.run_quantum().unwrap();
        prop_assert_eq!(seen(&real), seen(&model));
    }
    // A restart resumes at the last acknowledged state: the last whole state and the
    // demands acknowledged after it (half the cases end with some, replayed from change
    // records). The view of a resumed pool shows the demands it will run with; one more
    // quantum compares them too.
    drop(real);
    let mut resumed = start(Some(&state));
    let (a, b) = (seen(&resumed), seen(&model));
    prop_assert_eq!((a.0, &a.1, &a.3, &a.4), (b.0, &b.1, &b.3, &b.4));
    resumed.run_quantum().unwrap();
    model.run_quantum().unwrap();
    prop_assert_eq!(seen(&resumed), seen(&model));
    drop(resumed);
    drop(guard);
    Ok(refused)
}

/// A tmpfs mounted on a temporary folder, unmounted when dropped.
struct Tmpfs(tempfile::TempDir);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn refused_changes_change_nothing_and_acknowledged_ones_survive() {
    let is_root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let dir = tempfile::tempdir().unwrap();
    let mounted = is_root
        && Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=512k", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("refused_changes_change_nothing...: not run here: it needs root to mount a tmpfs");
        return;
    }
    let fs = Tmpfs(dir);
    let mut runner = TestRunner::new(Config { cases: 64, ..Config::default() });
    let (case, refusals) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    runner
        .run(&proptest::collection::vec(op(), 1..60), |ops| {
            case.set(case.get() + 1);
            refusals.set(refusals.get() + run(&ops, fs.0.path(), case.get())?);
            Ok(())
        })
        .unwrap();
    // The property is about refusals: there must have been many.
    assert!(refusals.get() > 100, "the full disk refused only {} changes", refusals.get());
}
