//! # fairshare-ledger: credits that survive kill -9 and a full disk
//!
//! Credits are the users' money. A [`Ledger`] is a folder holding the latest committed
//! state of a run as opaque bytes (the caller chooses the encoding), and the changes
//! made since that state. [`Ledger::commit`] appends a whole state to `log`,
//! [`Ledger::append`] a change (a small record, e.g. one tenant's new demand, that the
//! caller applies on top of the last state); both fsync before returning, so a record
//! that returned survives a crash of the process or the machine. When the log grows past
//! a threshold, the next state is written to `snapshot` instead (temporary file, fsync,
//! rename, fsync of the folder) and the log is emptied. [`Ledger::open`] reads the
//! snapshot, then the log, and returns the latest state with the changes after it.
//!
//! A record is `length (u32 LE) | CRC-32 of the payload (u32 LE) | payload`, and a
//! payload is `word (u64 LE) | bytes`: the word's low 63 bits are the commit number, its
//! top bit marks a change (clear: a whole state). The state of the highest commit number
//! wins, so a crash between writing the snapshot and emptying the log cannot bring an
//! older state back. A process killed in the middle of an append leaves an incomplete
//! or mismatching last record: it is dropped (the log is cut back to its last whole
//! record), and the state is the one of the last commit that returned. A record that
//! fails its checksum but is followed by more data, or a damaged snapshot, is not a
//! crash's trace but damage: it is an error, and nothing is changed.
//!
//! A failed write (a full disk, an I/O error) changes nothing either: the record is not
//! counted, the torn bytes it may have left are cut before the next write, and once the
//! disk has room again the next commit succeeds, with no restart.
//!
//! Truncation is refused, not mistaken for a new run: the file `head` holds the highest
//! commit number that returned (two checksummed slots, written in turn after each commit,
//! so a torn write leaves the other). If the log and snapshot end before it, the log was
//! cut or replaced after the fact (not by a crash, which only loses a record that never
//! returned): [`Ledger::open`] fails with [`LedgerError::Truncated`]. `head` is written
//! without its own fsync: after a power loss it may lag (a weaker check), never lead.
//!
//! Why a log of our own rather than an embedded database: a run's state is one value
//! replaced every quantum, so the only operations are "append the new value durably"
//! and "read the last one"; a 4-byte checksum per record and fsync give that in a few
//! hundred lines that are easy to fuzz ([`records`] is the reader the fuzz test drives),
//! with no file format we do not control.
//!
//! Callers keep typed values: [`Ledger::open_json`], [`Ledger::commit_json`] and
//! [`Ledger::append_json`] encode states and changes as JSON (replay's run and the live
//! service's pool both use them).
//!
//! One writer at a time: the folder's `lock` file is held with `flock` while the
//! ledger is open; a second writer is refused. This crate depends on no other fairshare
//! crate.

use serde::de::DeserializeOwned;
use serde::Serialize;
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
    /// A state or change is not the JSON of its type.
    #[error("{}: the ledger's {what} is unreadable: {source}", path.display())]
    Unreadable {
        /// The ledger's folder.
        path: PathBuf,
        /// `state` or `change`.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// A state or change could not be encoded; nothing was written.
    #[error("{}: encoding a {what}: {source}", path.display())]
    Encode {
        /// The ledger's folder.
        path: PathBuf,
        /// `state` or `change`.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// The ledger's records read, but do not fit together or the run that reads them.
    #[error("{}: {reason}", path.display())]
    Inconsistent {
        /// The ledger's folder.
        path: PathBuf,
        /// What does not fit.
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
    /// The log and snapshot end before the last commit that returned (`head`): they were
    /// cut, emptied or replaced after the fact.
    #[error(
        "{}: the ledger ends at commit {found}, but commit {acknowledged} was acknowledged (its file `head` says so): \
         the log was truncated, emptied or replaced; restore the folder from a backup, or remove its `head` to accept \
         the loss",
        path.display()
    )]
    Truncated {
        /// The ledger's folder.
        path: PathBuf,
        /// The last commit the log and snapshot hold.
        found: u64,
        /// The last commit that returned.
        acknowledged: u64,
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

/// The top bit of a payload's word: the record is a change, not a whole state.
const CHANGE: u64 = 1 << 63;

/// What [`Ledger::open`] found: the latest whole state and the changes committed after
/// it, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// The latest state (`None` for a new ledger).
    pub state: Option<Vec<u8>>,
    /// The changes appended after that state, in the order they were committed.
    pub changes: Vec<Vec<u8>>,
}

/// An open ledger: the folder, its lock, and the log appended to.
#[derive(Debug)]
pub struct Ledger {
    dir: PathBuf,
    log: File,
    /// Bytes of whole, committed records in the log: where the next append goes.
    log_len: u64,
    /// The last commit number that returned.
    seq: u64,
    /// A write failed after it may have reached the file: cut the log back to
    /// `log_len` before the next one.
    torn: bool,
    head: Head,
    _lock: File,
}

/// The commit number and bytes of a payload, or `None` when it is too short.
fn numbered(payload: &[u8]) -> Option<(u64, &[u8])> {
    let (word, bytes) = payload.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*word), bytes))
}

/// The file `head`: the highest commit number that returned, in two slots of
/// `number (u64 LE) | CRC-32 of it (u32 LE) | 0 (u32)`, written in turn.
#[derive(Debug)]
struct Head {
    path: PathBuf,
    file: File,
}

const HEAD_SLOT: usize = 16;

impl Head {
    /// The highest valid slot of `bytes`, `None` if neither is valid.
    fn read(bytes: &[u8]) -> Option<u64> {
        bytes
            .chunks_exact(HEAD_SLOT)
            .take(2)
            .filter_map(|slot| {
                let seq = u64::from_le_bytes(slot[0..8].try_into().ok()?);
                let crc = u32::from_le_bytes(slot[8..12].try_into().ok()?);
                (crc32fast::hash(&slot[0..8]) == crc).then_some(seq)
            })
            .max()
    }

    /// Records `seq` in its slot (overwriting bytes already allocated: it needs no new
    /// space on a full disk).
    fn write(&mut self, seq: u64) -> io::Result<()> {
        self.write_slot(seq % 2, seq)
    }

    fn write_slot(&mut self, slot: u64, seq: u64) -> io::Result<()> {
        let mut bytes = [0u8; HEAD_SLOT];
        bytes[0..8].copy_from_slice(&seq.to_le_bytes());
        bytes[8..12].copy_from_slice(&crc32fast::hash(&seq.to_le_bytes()).to_le_bytes());
        self.file.seek(SeekFrom::Start(slot * HEAD_SLOT as u64))?;
        self.file.write_all(&bytes)
    }
}

impl Ledger {
    /// [`Ledger::open_json`] for the ledger of one run that keeps whole states only: the
    /// state is refused unless `identity` of it equals `expected` (a ledger of another
    /// run, e.g. another trace or pool), and a ledger holding changes is not one of these
    /// runs'.
    pub fn open_run<T: DeserializeOwned>(
        dir: &Path,
        identity: impl FnOnce(&T) -> &str,
        expected: &str,
    ) -> Result<(Ledger, Option<T>), LedgerError> {
        let (ledger, state, changes) = Ledger::open_json::<T, serde::de::IgnoredAny>(dir)?;
        if !changes.is_empty() {
            return Err(LedgerError::Inconsistent {
                path: dir.to_path_buf(),
                reason: format!("it holds {} change records, which this run does not keep", changes.len()),
            });
        }
        let Some(state) = state else { return Ok((ledger, None)) };
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

    /// [`Ledger::open`] with the state and the changes decoded from JSON as `S` and `C`:
    /// the one way the commands keep typed values in a ledger.
    pub fn open_json<S: DeserializeOwned, C: DeserializeOwned>(
        dir: &Path,
    ) -> Result<(Ledger, Option<S>, Vec<C>), LedgerError> {
        let (ledger, latest) = Ledger::open(dir)?;
        let unreadable = |what| move |source| LedgerError::Unreadable { path: dir.to_path_buf(), what, source };
        let state = latest.state.map(|b| serde_json::from_slice(&b)).transpose().map_err(unreadable("state"))?;
        let changes = latest
            .changes
            .iter()
            .map(|b| serde_json::from_slice(b))
            .collect::<Result<_, _>>()
            .map_err(unreadable("change"))?;
        Ok((ledger, state, changes))
    }

    /// [`Ledger::commit`] of `state` as JSON.
    pub fn commit_json(&mut self, state: &impl Serialize) -> Result<(), LedgerError> {
        let bytes = serde_json::to_vec(state).map_err(|source| LedgerError::Encode {
            path: self.dir.clone(),
            what: "state",
            source,
        })?;
        self.commit(&bytes)
    }

    /// [`Ledger::append`] of `change` as JSON.
    pub fn append_json(&mut self, change: &impl Serialize) -> Result<(), LedgerError> {
        let bytes = serde_json::to_vec(change).map_err(|source| LedgerError::Encode {
            path: self.dir.clone(),
            what: "change",
            source,
        })?;
        self.append(&bytes)
    }

    /// Opens (creating if needed) the ledger in `dir` and returns it with the latest
    /// committed state and the changes after it (nothing for a new ledger). A log cut by
    /// a crash is repaired (cut back to its last whole record); damage, or a log that
    /// ends before the last commit that returned, is an error and changes nothing.
    pub fn open(dir: &Path) -> Result<(Ledger, Recovered), LedgerError> {
        fs::create_dir_all(dir).map_err(io_error("creating the folder", dir))?;
        let lock = lock_folder(dir)?;
        let snapshot_path = dir.join("snapshot");
        let snapshot = read_snapshot(&snapshot_path)?;
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
        let Applied { latest, changes, last } = apply_log(snapshot, &r.payloads, &snapshot_path, &log_path)?;
        // The last commit that returned, as `head` remembers it.
        let head_path = dir.join("head");
        let head_bytes = read_head(dir, &head_path, last)?;
        let log_len = r.valid_len as u64;
        if log_len < bytes.len() as u64 {
            log.set_len(log_len).map_err(io_error("cutting the torn end of", &log_path))?;
            log.sync_all().map_err(io_error("syncing", &log_path))?;
        }
        log.seek(SeekFrom::Start(log_len)).map_err(io_error("seeking in", &log_path))?;
        let head = open_head(dir, head_path, head_bytes.as_deref(), last)?;
        let recovered = Recovered { state: latest.map(|(_, state)| state), changes };
        let ledger = Ledger { dir: dir.to_path_buf(), log, log_len, seq: last, torn: false, head, _lock: lock };
        Ok((ledger, recovered))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The number of the last commit that returned (0 for a new ledger).
    pub fn commits(&self) -> u64 {
        self.seq
    }

    /// Commits a whole `state` durably: when this returns `Ok`, a later [`Ledger::open`]
    /// returns `state` (or a later commit's), whatever happens to the process. On an
    /// error nothing is committed, and the ledger is fit for the next try.
    pub fn commit(&mut self, state: &[u8]) -> Result<(), LedgerError> {
        self.write(state, false)
    }

    /// Commits a change on top of the last state durably (as [`Ledger::commit`]); a later
    /// [`Ledger::open`] returns it among [`Recovered::changes`] until the next state.
    pub fn append(&mut self, change: &[u8]) -> Result<(), LedgerError> {
        self.write(change, true)
    }

    fn write(&mut self, bytes: &[u8], change: bool) -> Result<(), LedgerError> {
        if bytes.len() + 8 > MAX_PAYLOAD {
            return Err(LedgerError::TooLarge { path: self.dir.clone(), len: bytes.len() });
        }
        let log_path = self.dir.join("log");
        self.cut_failed_write().map_err(io_error("cutting a failed write from", &log_path))?;
        let seq = self.seq + 1;
        let word = if change { seq | CHANGE } else { seq };
        let mut payload = Vec::with_capacity(8 + bytes.len());
        payload.extend_from_slice(&word.to_le_bytes());
        payload.extend_from_slice(bytes);
        if !change && self.log_len > COMPACT_AFTER {
            self.snapshot(&payload)?;
        } else {
            let framed = record(&payload);
            self.torn = true;
            let written = self.log.write_all(&framed).map_err(io_error("appending to", &log_path));
            let synced = written.and_then(|()| self.log.sync_data().map_err(io_error("syncing", &log_path)));
            if let Err(e) = synced {
                // Cut now if the file lets us (else before the next write): a record whose
                // fsync failed may be whole, and must not come back at the next open.
                let _ = self.cut_failed_write();
                return Err(e);
            }
            self.torn = false;
            self.log_len += framed.len() as u64;
        }
        self.seq = seq;
        // Durable now. `head` only bounds truncation from below: if it cannot be written
        // it lags (and the next commit writes it), which weakens the check, not the commit.
        let _ = self.head.write(seq);
        Ok(())
    }

    /// Cuts the log back to its committed records after a failed write.
    fn cut_failed_write(&mut self) -> io::Result<()> {
        if self.torn {
            self.log.set_len(self.log_len)?;
            self.log.seek(SeekFrom::Start(self.log_len))?;
            // Made durable: a whole record whose fsync failed must not come back after a
            // crash.
            self.log.sync_all()?;
            self.torn = false;
        }
        Ok(())
    }

    /// Writes `payload` (a whole state) as the snapshot (atomically) and empties the
    /// log. Committed once the rename is done; a failure before leaves everything as it
    /// was, one after only leaves the older records in the log.
    fn snapshot(&mut self, payload: &[u8]) -> Result<(), LedgerError> {
        let path = self.dir.join("snapshot");
        let tmp = self.dir.join("snapshot.tmp");
        let written = (|| {
            let mut file = File::create(&tmp).map_err(io_error("creating", &tmp))?;
            file.write_all(&record(payload)).map_err(io_error("writing", &tmp))?;
            file.sync_all().map_err(io_error("syncing", &tmp))?;
            fs::rename(&tmp, &path).map_err(io_error("renaming into place", &path))
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        // The rename is the commit; the folder's fsync makes it survive a power loss. If
        // that fsync fails, the log is kept: a power loss that undoes the rename then
        // leaves the log's states (and `head` refuses what is missing), not nothing.
        if File::open(&self.dir).and_then(|d| d.sync_all()).is_err() {
            return Ok(());
        }
        // The snapshot holds the latest state now; the log's records are older.
        if self.log.set_len(0).is_ok() && self.log.seek(SeekFrom::Start(0)).is_ok() {
            let _ = self.log.sync_all();
            self.log_len = 0;
        } else {
            // Still whole: the next write cuts it back to its records and goes on.
            self.torn = true;
        }
        Ok(())
    }
}

/// A [`LedgerError::Damaged`] of `path` at `offset`.
fn damaged(path: &Path, offset: usize, reason: &str) -> LedgerError {
    LedgerError::Damaged { path: path.to_path_buf(), offset: offset as u64, reason: reason.to_string() }
}

/// Opens the folder's `lock` file and holds it exclusively: a second writer is refused.
fn lock_folder(dir: &Path) -> Result<File, LedgerError> {
    let lock_path = dir.join("lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_error("opening", &lock_path))?;
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(|_| LedgerError::Busy { path: dir.to_path_buf() })?;
    Ok(lock)
}

/// The snapshot's whole state with its commit number, `None` without a snapshot. A
/// snapshot that is not exactly one whole state is damage.
fn read_snapshot(snapshot_path: &Path) -> Result<Option<(u64, Vec<u8>)>, LedgerError> {
    let bytes = match fs::read(snapshot_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error("reading", snapshot_path)(e)),
    };
    let r = records(&bytes);
    match (r.payloads.as_slice(), r.valid_len == bytes.len()) {
        ([one], true) => match numbered(one) {
            Some((word, state)) if word & CHANGE == 0 => Ok(Some((word, state.to_vec()))),
            _ => Err(damaged(snapshot_path, 0, "the snapshot's record is not a whole state")),
        },
        _ => Err(LedgerError::Damaged {
            path: snapshot_path.to_path_buf(),
            offset: r.valid_len as u64,
            reason: "the snapshot is not exactly one whole record".into(),
        }),
    }
}

/// What the snapshot and the log hold together.
struct Applied {
    /// The latest whole state: (commit number, bytes).
    latest: Option<(u64, Vec<u8>)>,
    /// The changes committed after that state, oldest first.
    changes: Vec<Vec<u8>>,
    /// The highest commit number of the snapshot and the log.
    last: u64,
}

/// Reads the log's records (`payloads`) on top of the snapshot's state `latest`: the
/// state of the highest commit number wins, and the changes after it must be every
/// commit after it, none missing.
fn apply_log(
    mut latest: Option<(u64, Vec<u8>)>,
    payloads: &[&[u8]],
    snapshot_path: &Path,
    log_path: &Path,
) -> Result<Applied, LedgerError> {
    // Every record of the log with its number: the changes after the latest state count.
    let mut offset = 0;
    let mut changes: Vec<(u64, &[u8])> = Vec::new();
    let mut last = latest.as_ref().map_or(0, |(s, _)| *s);
    for payload in payloads {
        let (word, body) = numbered(payload).ok_or_else(|| damaged(log_path, offset, "a record without its number"))?;
        let seq = word & !CHANGE;
        last = last.max(seq);
        if word & CHANGE != 0 {
            changes.push((seq, body));
        } else if latest.as_ref().is_none_or(|(s, _)| seq > *s) {
            latest = Some((seq, body.to_vec()));
        }
        offset += HEADER + payload.len();
    }
    let since = latest.as_ref().map_or(0, |(s, _)| *s);
    let changes: Vec<(u64, &[u8])> = changes.into_iter().filter(|(s, _)| *s > since).collect();
    // The changes after the state are every commit after it, none missing: a gap is
    // a lost state (a snapshot gone, the log's older part lost), not a crash's trace.
    if let Some(k) = changes.iter().zip(since + 1..).position(|((s, _), want)| *s != want) {
        let (found, want) = (changes[k].0, since + 1 + k as u64);
        let path = if since == 0 { snapshot_path } else { log_path };
        return Err(damaged(
            path,
            0,
            &format!(
                "commit {found} follows commit {} directly: commits {want} to {} are missing",
                want - 1,
                found - 1
            ),
        ));
    }
    let changes: Vec<Vec<u8>> = changes.into_iter().map(|(_, b)| b.to_vec()).collect();
    Ok(Applied { latest, changes, last })
}

/// The bytes of `head` (`None` if it is absent or was never written whole), checked
/// against `last`, the highest commit the log and snapshot hold: a log that ends before
/// the commit `head` acknowledged was truncated.
fn read_head(dir: &Path, head_path: &Path, last: u64) -> Result<Option<Vec<u8>>, LedgerError> {
    let head_bytes = match fs::read(head_path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_error("reading", head_path)(e)),
    };
    // A head shorter than a slot was never written whole (its creation was cut): as absent.
    let head_bytes = head_bytes.filter(|b| b.len() >= HEAD_SLOT);
    if let Some(b) = &head_bytes {
        let Some(acknowledged) = Head::read(b) else {
            return Err(damaged(head_path, 0, "neither slot of the head file is valid"));
        };
        if acknowledged > last {
            return Err(LedgerError::Truncated { path: dir.to_path_buf(), found: last, acknowledged });
        }
    }
    Ok(head_bytes)
}

/// Opens `head` for the commits to come; one missing or with fewer than two slots
/// (`head_bytes`) gets both, recording `last`.
fn open_head(dir: &Path, head_path: PathBuf, head_bytes: Option<&[u8]>, last: u64) -> Result<Head, LedgerError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&head_path)
        .map_err(io_error("opening", &head_path))?;
    let mut head = Head { path: head_path, file };
    if head_bytes.is_none_or(|b| b.len() < 2 * HEAD_SLOT) {
        // A new ledger, or one written before `head` existed: both slots, made durable
        // (and allocated, so that later writes need no space).
        for slot in [0, 1] {
            head.write_slot(slot, last).map_err(io_error("writing", &head.path))?;
        }
        head.file.sync_all().map_err(io_error("syncing", &head.path))?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(io_error("syncing", dir))?;
    }
    Ok(head)
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
            assert_eq!(latest, Recovered::default());
            l.commit(b"one")?;
            l.commit(b"two")?;
        }
        let (_, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.state.as_deref(), Some(&b"two"[..]));
        Ok(())
    }

    /// A run's state: its identity and a value.
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Run {
        id: String,
        value: u32,
    }

    #[test]
    fn a_run_reads_its_own_state_and_refuses_another_runs() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, latest) = Ledger::open_run::<Run>(dir.path(), |s| &s.id, "a")?;
            assert_eq!(latest, None, "a new ledger has no state");
            l.commit_json(&Run { id: "a".into(), value: 7 })?;
        }
        let (_, latest) = Ledger::open_run::<Run>(dir.path(), |s| &s.id, "a")?;
        assert_eq!(latest, Some(Run { id: "a".into(), value: 7 }));
        let other = Ledger::open_run::<Run>(dir.path(), |s| &s.id, "b").err().ok_or("run b was let in")?;
        assert!(matches!(&other, LedgerError::OtherRun { found, expected, .. } if found == "a" && expected == "b"));
        assert!(other.to_string().contains("belongs to another run (a); this run is b"), "{other}");
        // A state that is not the JSON of the type: an error with serde's reason as source.
        let bad = Ledger::open_run::<u64>(dir.path(), |_| "a", "a").err().ok_or("undecodable state accepted")?;
        assert!(matches!(&bad, LedgerError::Unreadable { what: "state", .. }), "{bad}");
        assert!(std::error::Error::source(&bad).is_some());
        // Refusals change nothing: the run's state is still there.
        let (_, state, changes) = Ledger::open_json::<Run, Run>(dir.path())?;
        assert_eq!((state, changes), (Some(Run { id: "a".into(), value: 7 }), vec![]));
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
        assert_eq!(latest.state.as_deref(), Some(&b"kept"[..]));
        assert_eq!(fs::metadata(&log)?.len(), whole, "the torn end is cut");
        l.commit(b"next")?;
        drop(l);
        assert_eq!(Ledger::open(dir.path())?.1.state.as_deref(), Some(&b"next"[..]));
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
        assert_eq!(latest.state.map(|s| s[0]), Some(11));
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
        assert_eq!(latest.state.as_deref(), Some(&b"newest"[..]));
        l.commit(b"fourth")?;
        drop(l);
        assert_eq!(Ledger::open(dir.path())?.1.state.as_deref(), Some(&b"fourth"[..]));
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

    #[test]
    fn changes_follow_their_state_until_the_next_state() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            l.append(b"before any state")?;
            l.commit(b"s1")?;
            l.append(b"c1")?;
            l.append(b"c2")?;
            assert_eq!(l.commits(), 4);
        }
        let (mut l, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.state.as_deref(), Some(&b"s1"[..]));
        assert_eq!(latest.changes, [b"c1".to_vec(), b"c2".to_vec()], "in order, only those after the state");
        l.commit(b"s2")?;
        drop(l);
        let (_, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest, Recovered { state: Some(b"s2".to_vec()), changes: vec![] });
        // A run that keeps whole states only refuses a ledger with changes.
        let dir = tempfile::tempdir()?;
        Ledger::open(dir.path())?.0.append(b"7")?;
        let e = Ledger::open_run::<Run>(dir.path(), |s| &s.id, "a").err().ok_or("changes accepted")?;
        assert!(e.to_string().contains("1 change records"), "{e}");
        Ok(())
    }

    #[test]
    fn a_changes_record_survives_compaction_of_its_state() -> Result {
        let dir = tempfile::tempdir()?;
        let big = vec![1u8; 3 << 20];
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            for _ in 0..3 {
                l.commit(&big)?;
            }
            // The log is past the threshold: this state goes to the snapshot.
            l.commit(b"small")?;
            assert_eq!(fs::metadata(dir.path().join("log"))?.len(), 0);
            l.append(b"after the snapshot")?;
        }
        let (_, latest) = Ledger::open(dir.path())?;
        assert_eq!(latest.state.as_deref(), Some(&b"small"[..]));
        assert_eq!(latest.changes, [b"after the snapshot".to_vec()]);
        Ok(())
    }

    #[test]
    fn a_truncated_or_emptied_log_is_refused_not_restarted() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            for i in 0..5u8 {
                l.commit(&[i; 10])?;
            }
        }
        let log = dir.path().join("log");
        let bytes = fs::read(&log)?;
        let record_len = (HEADER + 8 + 10) as u64;
        // Cut after three whole records: not a crash's trace (commits 4 and 5 returned).
        OpenOptions::new().write(true).open(&log)?.set_len(3 * record_len)?;
        let e = Ledger::open(dir.path()).expect_err("a cut log opened");
        assert!(matches!(e, LedgerError::Truncated { found: 3, acknowledged: 5, .. }), "{e}");
        assert!(e.to_string().contains("ends at commit 3, but commit 5 was acknowledged"), "{e}");
        // Emptied: refused too, and nothing changed.
        fs::write(&log, b"")?;
        let e = Ledger::open(dir.path()).expect_err("an empty log opened");
        assert!(matches!(e, LedgerError::Truncated { found: 0, acknowledged: 5, .. }), "{e}");
        assert_eq!(fs::metadata(&log)?.len(), 0);
        // Put back whole, it opens at commit 5.
        fs::write(&log, &bytes)?;
        let (l, latest) = Ledger::open(dir.path())?;
        assert_eq!((l.commits(), latest.state), (5, Some(vec![4; 10])));
        drop(l);
        // The operator's way to accept a loss: remove `head`.
        fs::write(&log, b"")?;
        fs::remove_file(dir.path().join("head"))?;
        let (l, latest) = Ledger::open(dir.path())?;
        assert_eq!((l.commits(), latest.state), (0, None));
        Ok(())
    }

    #[test]
    fn a_ledger_without_head_gets_one_and_a_torn_slot_leaves_the_other() -> Result {
        let dir = tempfile::tempdir()?;
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            for i in 0..4u8 {
                l.commit(&[i])?;
            }
        }
        // As a ledger written before `head` existed.
        fs::remove_file(dir.path().join("head"))?;
        assert_eq!(Ledger::open(dir.path())?.0.commits(), 4);
        let head = dir.path().join("head");
        assert_eq!(Head::read(&fs::read(&head)?), Some(4));
        // Commit 5 goes to slot 1; a torn slot 1 leaves slot 0's 4, still a lower bound.
        Ledger::open(dir.path())?.0.commit(b"five")?;
        let mut bytes = fs::read(&head)?;
        assert_eq!(Head::read(&bytes), Some(5));
        bytes[HEAD_SLOT] ^= 0xff;
        fs::write(&head, &bytes)?;
        assert_eq!(Ledger::open(dir.path())?.1.state.as_deref(), Some(&b"five"[..]));
        // Both slots damaged: an error naming the file.
        fs::write(&head, [0xffu8; 2 * HEAD_SLOT])?;
        let e = Ledger::open(dir.path()).expect_err("damaged head");
        assert!(e.to_string().contains("head") && e.to_string().contains("neither slot"), "{e}");
        Ok(())
    }

    #[test]
    fn a_lost_snapshot_under_later_changes_is_damage_not_a_fresh_start() -> Result {
        let dir = tempfile::tempdir()?;
        let big = vec![1u8; 3 << 20];
        {
            let (mut l, _) = Ledger::open(dir.path())?;
            for _ in 0..3 {
                l.commit(&big)?;
            }
            l.commit(b"in the snapshot")?;
            l.append(b"change 5")?;
            l.append(b"change 6")?;
        }
        fs::remove_file(dir.path().join("snapshot"))?;
        let e = Ledger::open(dir.path()).expect_err("changes without their state");
        assert!(e.to_string().contains("commits 1 to 4 are missing"), "{e}");
        Ok(())
    }

    #[test]
    fn a_head_cut_at_its_creation_is_made_again() -> Result {
        let dir = tempfile::tempdir()?;
        Ledger::open(dir.path())?.0.commit(b"one")?;
        fs::write(dir.path().join("head"), b"")?;
        let (l, latest) = Ledger::open(dir.path())?;
        assert_eq!((l.commits(), latest.state.as_deref()), (1, Some(&b"one"[..])));
        Ok(())
    }
}
