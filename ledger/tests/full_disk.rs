//! The ledger on a real full disk: a tmpfs of 256 KiB mounted by this test (as root),
//! filled until a commit fails. A failed commit changes nothing (the log holds exactly
//! the commits that returned), and once space is freed the next commit succeeds in the
//! same process, with no restart; a reopen finds exactly the commits that returned.
//! Without root (or tmpfs), the test says so on stderr and checks nothing.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use fairshare_ledger::{Ledger, LedgerError};

/// A tmpfs mounted on a temporary folder, unmounted when dropped (also on panic).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
            return Err("not root".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err("mount -t tmpfs failed".into());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Fills the file system of `dir` with files of 16 KiB, until it refuses a write.
fn fill(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    loop {
        let path = dir.join(format!("filler-{}", files.len()));
        let full = std::fs::write(&path, [0u8; 16 << 10]).is_err();
        files.push(path);
        if full {
            return files;
        }
        assert!(files.len() < 100_000, "the file system never filled");
    }
}

#[test]
fn a_full_disk_refuses_commits_without_damage_and_they_resume_when_space_returns() {
    let fs = match Tmpfs::mount("256k") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("a_full_disk_refuses_commits...: not run here ({why}); it needs root to mount a tmpfs");
            return;
        }
    };
    let dir = fs.path().join("ledger");
    let state = |i: u32| format!("state {i:06} {}", "x".repeat(1500)).into_bytes();
    let mut committed = 0u32;
    {
        let (mut ledger, _) = Ledger::open(&dir).unwrap();
        // The disk full but for 48 KiB, which the ledger's log fills.
        let fillers = fill(fs.path());
        for f in &fillers[..4] {
            std::fs::remove_file(f).unwrap();
        }
        let mut i = 0;
        // Commits until the disk is full: the first refusal ends the loop.
        let error = loop {
            i += 1;
            match ledger.commit(&state(i)) {
                Ok(()) => committed = i,
                Err(e) => break e,
            }
            assert!(i < 10_000, "a 256 KiB file system never filled");
        };
        assert!(matches!(&error, LedgerError::Io { .. }), "{error}");
        assert!(error.to_string().contains("No space left"), "{error}");
        assert!(committed > 10, "the log held {committed} commits in 48 KiB");
        assert_eq!(ledger.commits(), u64::from(committed), "the refused commit is not counted");
        let log_len = std::fs::metadata(dir.join("log")).unwrap().len();
        assert_eq!(log_len % (8 + 8 + state(1).len() as u64), 0, "the torn bytes of the failed write are cut");
        // A change is refused the same way while the disk is full.
        assert!(ledger.append(&[7u8; 4000]).is_err());
        // Room again: the next commits succeed without a restart.
        for f in &fillers[4..] {
            let _ = std::fs::remove_file(f);
        }
        for _ in 0..3 {
            i += 1;
            ledger.commit(&state(i)).unwrap();
            committed = i;
        }
        ledger.append(b"a change after the recovery").unwrap();
    }
    let (ledger, latest) = Ledger::open(&dir).unwrap();
    assert_eq!(latest.state, Some(state(committed)), "the last commit that returned");
    assert_eq!(latest.changes, [b"a change after the recovery".to_vec()]);
    // The refused commit took no number: state `i` of the run went in as commit `i - 1`,
    // and the change after it is commit `i`.
    assert_eq!(ledger.commits(), u64::from(committed));
}

/// Compaction on a full disk: the snapshot cannot be written, the commit is refused and
/// the log kept whole (no temporary file left); with room again, the next commit
/// compacts and a reopen finds it.
#[test]
fn a_compaction_that_finds_the_disk_full_keeps_the_log_and_succeeds_later() {
    let fs = match Tmpfs::mount("24m") {
        Ok(fs) => fs,
        Err(why) => {
            eprintln!("a_compaction_that_finds_the_disk_full...: not run here ({why}); it needs root to mount a tmpfs");
            return;
        }
    };
    let dir = fs.path().join("ledger");
    let state = |i: u8| vec![i; 3 << 20];
    let (mut ledger, _) = Ledger::open(&dir).unwrap();
    for i in 0..3 {
        ledger.commit(&state(i)).unwrap();
    }
    // The log is past its threshold: the next state goes to a snapshot, which no longer fits.
    let fillers = fill(fs.path());
    let log_before = std::fs::read(dir.join("log")).unwrap();
    assert!(ledger.commit(&state(3)).is_err(), "a snapshot was written on a full disk");
    assert_eq!(std::fs::read(dir.join("log")).unwrap(), log_before, "the log is kept whole");
    assert!(!dir.join("snapshot.tmp").exists(), "the temporary snapshot is removed");
    for f in &fillers {
        let _ = std::fs::remove_file(f);
    }
    ledger.commit(&state(4)).unwrap();
    assert!(dir.join("snapshot").exists());
    drop(ledger);
    let (ledger, latest) = Ledger::open(&dir).unwrap();
    assert_eq!(latest.state, Some(state(4)));
    assert_eq!(ledger.commits(), 4, "the refused commit took no number");
}
