//! # fairshare-ledger: credits that survive kill -9
//!
//! Credits are the users' money. A [`Ledger`] is a folder holding the latest committed
//! state of a run as opaque bytes (the caller chooses the encoding; the CLI writes JSON
//! of the allocator's state). Each [`Ledger::commit`] appends one record to `log` and
//! fsyncs it before returning, so a commit that returned survives a crash of the
//! process or the machine. When the log grows past a threshold, the latest state is
//! written to `snapshot` (temporary file, fsync, rename, fsync of the folder) and the log
//! is emptied. [`Ledger::open`] reads the snapshot, then the log, and returns the
//! latest state.
//!
//! A record is `length (u32 LE) | CRC-32 of the payload (u32 LE) | payload`, and a
//! payload is `commit number (u64 LE) | state`: the state of the highest commit number
//! wins, so a crash between writing the snapshot and emptying the log cannot bring an
//! older state back. A process
//! killed in the middle of an append leaves an incomplete or mismatching last record:
//! it is dropped (the log is cut back to its last whole record), and the state is the
//! one of the last commit that returned. A record that fails its checksum but is
//! followed by more data, or a damaged snapshot, is not a crash's trace but damage: it
//! is an error, and nothing is changed.
//!
//! Why a log of our own rather than an embedded database: a run's state is one value
//! replaced every quantum, so the only operations are "append the new value durably"
//! and "read the last one"; a 4-byte checksum per record and fsync give that in ~200
//! lines that are easy to fuzz ([`records`] is the reader the fuzz test drives), with
//! no file format we do not control.
//!
//! One writer at a time: the folder's `lock` file is held with `flock` while the
//! ledger is open; a second writer is refused. This crate depends on no other fairshare
//! crate.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes of a record's header: length and checksum.
pub const HEADER: usize = 8;

/// The largest payload a record may hold (1 GiB): a length above it is damage.
pub const MAX_PAYLOAD: usize = 1 << 30;

/// The log is compacted into the snapshot once it holds more than this many bytes.
pub const COMPACT_AFTER: u64 = 8 << 20;

/// Why a ledger could not be opened, read or written. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The operating system refused an operation.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The folder is held by another process.
    #[error("{}: the ledger is in use by another process", path.display())]
    Busy {
        /// The folder.
        path: PathBuf,
    },
    /// A state too large to commit; nothing was written.
    #[error("{}: a state of {len} bytes is above the limit of {MAX_PAYLOAD}", path.display())]
    TooLarge {
        /// The ledger's folder.
        path: PathBuf,
        /// The state's size.
        len: usize,
    },
    /// The latest state could not be decoded by the caller's decoder.
    #[error("{}: the ledger's state is unreadable: {reason}", path.display())]
    Unreadable {
        /// The ledger's folder.
        path: PathBuf,
        /// The decoder's message.
        reason: String,
    },
    /// The ledger holds the state of another run (its identity differs).
    #[error("{}: the ledger belongs to another run ({found}); this run is {expected}: use another folder", path.display())]
    OtherRun {
        /// The ledger's folder.
        path: PathBuf,
        /// The identity the ledger's state names.
        found: String,
        /// The identity of this run.
        expected: String,
    },
    /// A file of the ledger is damaged (not by a crash, which only cuts the log's end).
    #[error("{}: damaged at byte {offset}: {reason}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Where the damage starts.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
}

fn io_error<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> LedgerError + 'a {
    move |source| LedgerError::Io { what, path: path.to_path_buf(), source }
}

/// How a byte string splits into records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records<'a> {
    /// The whole records, in order.
    pub payloads: Vec<&'a [u8]>,
    /// Bytes taken by the whole records (where the next append goes).
    pub valid_len: usize,
    /// What follows the whole records, if anything: `Ok(())` for the incomplete or
    /// mismatching last record a crash leaves, `Err(reason)` for damage (a bad record
    /// with more data after it, or a length above [`MAX_PAYLOAD`]).
    pub tail: Result<(), String>,
}

/// Splits `bytes` into records (the reader of the log and the snapshot). Never panics,
/// whatever the bytes.
pub fn records(bytes: &[u8]) -> Records<'_> {
    let mut payloads = Vec::new();
    let mut at = 0;
    let tail = loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            break Ok(());
        }
        if rest.len() < HEADER {
            break Ok(()); // a header cut by a crash
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if len > MAX_PAYLOAD {
            break Err(format!("a record of {len} bytes, above the limit of {MAX_PAYLOAD}"));
        }
        let Some(payload) = rest.get(HEADER..HEADER + len) else {
            break Ok(()); // a payload cut by a crash
        };
        if crc32fast::hash(payload) != crc {
            break if rest.len() == HEADER + len {
                Ok(()) // the last record, written partly: a crash's trace
            } else {
                Err("a record fails its checksum and more data follows it".to_string())
            };
        }
        payloads.push(payload);
        at += HEADER + len;
    };
    Records { payloads, valid_len: at, tail }
}

/// `payload` framed as a record.
pub fn record(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// An open ledger: the folder, its lock, and the log appended to.
#[derive(Debug)]
pub struct Ledger {
    dir: PathBuf,
    log: File,
    log_len: u64,
    seq: u64,
    _lock: File,
}

/// The commit number and state of a payload, or `None` when it is too short.
fn numbered(payload: &[u8]) -> Option<(u64, &[u8])> {
    let (seq, state) = payload.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*seq), state))
}

impl Ledger {
    /// [`Ledger::open`] for the ledger of one run: the latest state is decoded with
    /// `decode` (the caller's encoding), and refused unless `identity` of it equals
    /// `expected` (a ledger of another run, e.g. another trace or pool).
    pub fn open_run<T>(
        dir: &Path,
        decode: impl FnOnce(&[u8]) -> Result<T, String>,
        identity: impl FnOnce(&T) -> &str,
        expected: &str,
    ) -> Result<(Ledger, Option<T>), LedgerError> {
        let (ledger, latest) = Ledger::open(dir)?;
        let Some(bytes) = latest else { return Ok((ledger, None)) };
        let state = decode(&bytes).map_err(|reason| LedgerError::Unreadable { path: dir.to_path_buf(), reason })?;
        let found = identity(&state);
        if found != expected {
            return Err(LedgerError::OtherRun {
                path: dir.to_path_buf(),
                found: found.to_string(),
                expected: expected.to_string(),
            });
        }
        Ok((ledger, Some(state)))
    }

    /// Opens (creating if needed) the ledger in `dir` and returns it with the latest
    /// committed state, `None` for a new ledger. A log cut by a crash is repaired (cut
    /// back to its last whole record); damage is an error and changes nothing.
    pub fn open(dir: &Path) -> Result<(Ledger, Option<Vec<u8>>), LedgerError> {
        fs::create_dir_all(dir).map_err(io_error("creating the folder", dir))?;
        let lock_path = dir.join("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_error("opening", &lock_path))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|_| LedgerError::Busy { path: dir.to_path_buf() })?;
        let snapshot_path = dir.join("snapshot");
        let damaged = |path: &Path, offset: usize, reason: &str| LedgerError::Damaged {
            path: path.to_path_buf(),
            offset: offset as u64,
            reason: reason.to_string(),
        };
        let mut latest: Option<(u64, Vec<u8>)> = match fs::read(&snapshot_path) {
            Ok(bytes) => {
                let r = records(&bytes);
                match (r.payloads.as_slice(), r.valid_len == bytes.len()) {
                    ([one], true) => {
                        let (seq, state) =
                            numbered(one).ok_or_else(|| damaged(&snapshot_path, 0, "a record without its number"))?;
                        Some((seq, state.to_vec()))
                    }
                    _ => {
                        return Err(LedgerError::Damaged {
                            path: snapshot_path,
                            offset: r.valid_len as u64,
                            reason: "the snapshot is not exactly one whole record".into(),
                        })
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_error("reading", &snapshot_path)(e)),
        };
        let log_path = dir.join("log");
        let mut log = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&log_path)
            .map_err(io_error("opening", &log_path))?;
        let mut bytes = Vec::new();
        log.read_to_end(&mut bytes).map_err(io_error("reading", &log_path))?;
        let r = records(&bytes);
        if let Err(reason) = r.tail {
            return Err(LedgerError::Damaged { path: log_path, offset: r.valid_len as u64, reason });
        }
        let mut offset = 0;
        for payload in &r.payloads {
            let (seq, state) =
                numbered(payload).ok_or_else(|| damaged(&log_path, offset, "a record without its number"))?;
            if latest.as_ref().is_none_or(|(s, _)| seq > *s) {
                latest = Some((seq, state.to_vec()));
            }
            offset += HEADER + payload.len();
        }
        let log_len = r.valid_len as u64;
        if log_len < bytes.len() as u64 {
            log.set_len(log_len).map_err(io_error("cutting the torn end of", &log_path))?;
            log.sync_all().map_err(io_error("syncing", &log_path))?;
        }
        log.seek(SeekFrom::Start(log_len)).map_err(io_error("seeking in", &log_path))?;
        let seq = latest.as_ref().map_or(0, |(s, _)| *s);
        Ok((Ledger { dir: dir.to_path_buf(), log, log_len, seq, _lock: lock }, latest.map(|(_, state)| state)))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Commits `state` durably: when this returns `Ok`, a later [`Ledger::open`] returns
    /// `state` (or a later commit's), whatever happens to the process.
    pub fn commit(&mut self, state: &[u8]) -> Result<(), LedgerError> {
        if state.len() + 8 > MAX_PAYLOAD {
            return Err(LedgerError::TooLarge { path: self.dir.clone(), len: state.len() });
        }
        let mut payload = Vec::with_capacity(8 + state.len());
        payload.extend_from_slice(&(self.seq + 1).to_le_bytes());
        payload.extend_from_slice(state);
        if self.log_len > COMPACT_AFTER {
            self.snapshot(&payload)?;
            self.seq += 1;
            return Ok(());
        }
        let log_path = self.dir.join("log");
        let framed = record(&payload);
        self.log.write_all(&framed).map_err(io_error("appending to", &log_path))?;
        self.log.sync_data().map_err(io_error("syncing", &log_path))?;
        self.log_len += framed.len() as u64;
        self.seq += 1;
        Ok(())
    }

    /// Writes `payload` as the snapshot (atomically) and empties the log.
    fn snapshot(&mut self, payload: &[u8]) -> Result<(), LedgerError> {
        let path = self.dir.join("snapshot");
        let tmp = self.dir.join("snapshot.tmp");
        let mut file = File::create(&tmp).map_err(io_error("creating", &tmp))?;
        file.write_all(&record(payload)).map_err(io_error("writing", &tmp))?;
        file.sync_all().map_err(io_error("syncing", &tmp))?;
        fs::rename(&tmp, &path).map_err(io_error("renaming into place", &path))?;
        File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io_error("syncing", &self.dir))?;
        // The snapshot holds the latest state now; the log's records are older.
        let log_path = self.dir.join("log");
        self.log.set_len(0).map_err(io_error("emptying", &log_path))?;
        self.log.seek(SeekFrom::Start(0)).map_err(io_error("seeking in", &log_path))?;
        self.log.sync_all().map_err(io_error("syncing", &log_path))?;
        self.log_len = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Result = std::result::Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn commits_are_read_back_last_one_wins() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, latest) = Ledger::open(dir.path())?;
            assert_eq!(latest, None);
            l.commit(b"one")?;
            l.commit(b"two")?;
        }
        let (_, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.as_deref(), Some(&b"two"[..]));
        Ok(())
    }

    /// A state `RUN:VALUE`, its identity the part before the colon.
    fn decode(b: &[u8]) -> std::result::Result<(String, String), String> {
        let text = std::str::from_utf8(b).map_err(|e| e.to_string())?;
        let (run, value) = text.split_once(':').ok_or("no colon")?;
        Ok((run.to_string(), value.to_string()))
    }

    #[test]
    fn a_run_reads_its_own_state_and_refuses_another_runs() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, latest) = Ledger::open_run(dir.path(), decode, |s| &s.0, "a")?;
            assert_eq!(latest, None, "a new ledger has no state");
            l.commit(b"a:7")?;
        }
        let (_, latest) = Ledger::open_run(dir.path(), decode, |s| &s.0, "a")?;
        assert_eq!(latest, Some(("a".to_string(), "7".to_string())));
        let other = Ledger::open_run(dir.path(), decode, |s| &s.0, "b").err().ok_or("run b was let in")?;
        assert!(matches!(&other, LedgerError::OtherRun { found, expected, .. } if found == "a" && expected == "b"));
        assert!(other.to_string().contains("belongs to another run (a); this run is b"), "{other}");
        let refuse = |_: &[u8]| -> std::result::Result<(String, String), String> { Err("bad bytes".into()) };
        let bad = Ledger::open_run(dir.path(), refuse, |s| &s.0, "a").err().ok_or("undecodable state accepted")?;
        assert!(bad.to_string().contains("unreadable: bad bytes"), "{bad}");
        // Refusals change nothing: the run's state is still there.
        assert_eq!(Ledger::open(dir.path())?.1.as_deref(), Some(&b"a:7"[..]));
        Ok(())
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_cut() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            l.commit(b"kept")?;
        }
        let log = dir.path().join("log");
        let whole = fs::metadata(&log)?.len();
        let mut torn = record(b"\x09\0\0\0\0\0\0\0lost in the crash");
        torn.truncate(torn.len() - 3);
        OpenOptions::new().append(true).open(&log)?.write_all(&torn)?;
        let (mut l, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.as_deref(), Some(&b"kept"[..]));
        assert_eq!(fs::metadata(&log)?.len(), whole, "the torn end is cut");
        l.commit(b"next")?;
        drop(l);
        assert_eq!(Ledger::open(dir.path())?.1.as_deref(), Some(&b"next"[..]));
        Ok(())
    }

    #[test]
    fn damage_in_the_middle_is_an_error_that_changes_nothing() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            l.commit(b"first")?;
            l.commit(b"second")?;
        }
        let log = dir.path().join("log");
        let mut bytes = fs::read(&log)?;
        bytes[HEADER + 9] ^= 0x20; // a bit of the first state
        fs::write(&log, &bytes)?;
        let e = Ledger::open(dir.path()).expect_err("damaged");
        assert!(e.to_string().contains("checksum") && e.to_string().contains("byte 0"), "{e}");
        assert_eq!(fs::read(&log)?, bytes, "nothing changed");
        Ok(())
    }

    #[test]
    fn a_second_writer_is_refused() -> Result {
        let dir = tempfile::tempdir()?;
        let (_first, _) = Ledger::open(dir.path())?;
        let e = Ledger::open(dir.path()).expect_err("busy");
        assert!(matches!(e, LedgerError::Busy { .. }), "{e}");
        Ok(())
    }

    #[test]
    fn a_long_log_is_compacted_into_the_snapshot() -> Result {
        let dir = tempfile::tempdir()?;
        let big = vec![7u8; 1 << 20];
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            for i in 0..12u8 {
                let mut state = big.clone();
                state[0] = i;
                l.commit(&state)?;
            }
        }
        assert!(dir.path().join("snapshot").exists());
        assert!(fs::metadata(dir.path().join("log"))?.len() <= COMPACT_AFTER + (1 << 20) + HEADER as u64);
        let (_, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.map(|s| s[0]), Some(11));
        Ok(())
    }

    #[test]
    fn a_crash_between_snapshot_and_emptying_the_log_keeps_the_newest_state() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            l.commit(b"old")?;
            l.commit(b"older log record")?;
        }
        let log = fs::read(dir.path().join("log"))?;
        // As if compaction wrote the snapshot of commit 3 and died before emptying the log.
        let mut payload = 3u64.to_le_bytes().to_vec();
        payload.extend_from_slice(b"newest");
        fs::write(dir.path().join("snapshot"), record(&payload))?;
        assert_eq!(fs::read(dir.path().join("log"))?, log);
        let (mut l, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.as_deref(), Some(&b"newest"[..]));
        l.commit(b"fourth")?;
        drop(l);
        assert_eq!(Ledger::open(dir.path())?.1.as_deref(), Some(&b"fourth"[..]));
        Ok(())
    }

    #[test]
    fn a_damaged_snapshot_is_an_error() -> Result {
        let dir = tempfile::tempdir()?;
        fs::write(dir.path().join("snapshot"), b"not a record at all")?;
        let e = Ledger::open(dir.path()).expect_err("damaged");
        assert!(e.to_string().contains("snapshot"), "{e}");
        Ok(())
    }
}
