//! Reading user files: demand traces (`quantum,user,demand`) and user configs
//! (`user,fair_share,guaranteed`). Every problem is reported with file, line, field and
//! value, and nothing is run or written before the whole input has been checked. A
//! trace is read twice, each time as a stream: once to check it and learn its users,
//! once quantum by quantum as it runs, so memory is O(users), not O(users x quanta).

use fairshare::{Alpha, Credits, PoolConfig, UserConfig};
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// A problem with what the user gave us. Exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A field of a CSV line is wrong.
    #[error("{file}:{line}: field `{field}`: {message}")]
    Field { file: String, line: u64, field: String, message: String },
    /// A line or a file as a whole is wrong.
    #[error("{file}:{line}: {message}")]
    Line { file: String, line: u64, message: String },
    /// A file cannot be used at all.
    #[error("{file}: {message}")]
    File { file: String, message: String },
    /// Flags that do not fit together.
    #[error("{0}")]
    Usage(String),
}

/// What a first pass over a demand trace learns, in memory O(users): the users in
/// order of first appearance, and how many quanta there are. The pass checks every line,
/// so nothing runs before the whole trace is known to be valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceIndex {
    /// The file it was read from (for messages).
    pub file: String,
    /// User names in order of first appearance.
    pub users: Vec<String>,
    /// Line of each user's first demand (for messages).
    pub first_line: Vec<u64>,
    /// Quanta in the trace.
    pub quanta: usize,
    /// The file's length and CRC-32, `LENGTH:CRC32` (what `replay --state` recognises a
    /// trace by).
    pub digest: String,
}

/// How the pool is configured: the same share for every user of the trace, or a file.
#[derive(Clone, Debug)]
pub enum UserSource<'a> {
    /// `--fair-share`, `--alpha` for every user seen in the trace.
    Uniform { fair_share: u64, alpha: Alpha },
    /// `--users FILE`.
    File(&'a Path),
}

fn open(path: &Path) -> Result<csv::Reader<Digesting>, InputError> {
    let file =
        File::open(path).map_err(|e| InputError::File { file: path.display().to_string(), message: e.to_string() })?;
    let file = Digesting { file, hasher: crc32fast::Hasher::new(), len: 0 };
    Ok(csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(file))
}

/// A file read through a CRC-32 of its bytes, so that the pass that checks a trace also
/// fingerprints it (for `replay --state`) instead of reading it once more.
pub struct Digesting {
    file: File,
    hasher: crc32fast::Hasher,
    len: u64,
}

impl Read for Digesting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// `LENGTH:CRC32` of a whole file (as [`TraceIndex::digest`]).
pub fn digest_file(path: &Path) -> Result<String, InputError> {
    let io = |e: std::io::Error| InputError::File { file: path.display().to_string(), message: e.to_string() };
    let file = File::open(path).map_err(io)?;
    let mut reader = Digesting { file, hasher: crc32fast::Hasher::new(), len: 0 };
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(io)?;
    Ok(reader.digest())
}

impl Digesting {
    /// `LENGTH:CRC32` of the bytes read so far.
    fn digest(&self) -> String {
        format!("{}:{:08x}", self.len, self.hasher.clone().finalize())
    }
}

/// Checks that the header has exactly the expected columns, and returns their positions.
fn columns<const N: usize>(
    reader: &mut csv::Reader<Digesting>,
    file: &str,
    expected: [&str; N],
) -> Result<[usize; N], InputError> {
    let header = reader.headers().map_err(|e| csv_error(file, e))?.clone();
    let want = expected.join(",");
    let bad = |message: String| InputError::Line { file: file.into(), line: 1, message };
    if header.iter().all(|h| h.is_empty()) {
        return Err(bad(format!("the file is empty; expected the header `{want}`")));
    }
    for (i, h) in header.iter().enumerate() {
        if header.iter().take(i).any(|earlier| earlier == h) {
            return Err(bad(format!("column `{h}` appears twice; expected the header `{want}`")));
        }
    }
    if let Some(extra) = header.iter().find(|h| !expected.contains(h)) {
        return Err(bad(format!("unknown column `{extra}`; expected the header `{want}`")));
    }
    let mut pos = [0; N];
    for (i, name) in expected.iter().enumerate() {
        pos[i] = header
            .iter()
            .position(|h| h == *name)
            .ok_or_else(|| bad(format!("missing column `{name}`; expected the header `{want}`")))?;
    }
    Ok(pos)
}

fn csv_error(file: &str, e: csv::Error) -> InputError {
    let line = e.position().map_or(0, |p| p.line());
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("expected {expected_len} fields, found {len}")
        }
        csv::ErrorKind::Utf8 { .. } => "the line is not valid UTF-8".to_string(),
        _ => e.to_string(),
    };
    InputError::Line { file: file.into(), line, message }
}

/// Parses a whole number of slices (or quanta): no sign, no fraction, fits 64 bits.
fn whole(file: &str, line: u64, field: &str, text: &str) -> Result<u64, InputError> {
    let err = |message: String| InputError::Field { file: file.into(), line, field: field.into(), message };
    if text.is_empty() {
        return Err(err("is empty".into()));
    }
    if text.starts_with('-') && text[1..].parse::<f64>().is_ok() {
        return Err(err(format!("`{text}` is negative; expected a whole number >= 0")));
    }
    text.parse::<u64>().map_err(|_| {
        if text.bytes().all(|b| b.is_ascii_digit()) {
            err(format!("`{text}` is too large: the largest is {} (2^64 - 1)", u64::MAX))
        } else if text.parse::<f64>().is_ok() {
            err(format!("`{text}` is not a whole number"))
        } else {
            err(format!("`{text}` is not a number"))
        }
    })
}

/// One line of a trace, checked.
struct TraceLine {
    line: u64,
    quantum: u64,
    user: String,
    demand: u64,
}

/// The lines of a trace, each checked on its own (fields, numbers).
struct TraceLines {
    file: String,
    records: csv::StringRecordsIntoIter<Digesting>,
    columns: [usize; 3],
}

impl TraceLines {
    fn open(path: &Path) -> Result<Self, InputError> {
        let file = path.display().to_string();
        let mut reader = open(path)?;
        let columns = columns(&mut reader, &file, ["quantum", "user", "demand"])?;
        Ok(TraceLines { file, records: reader.into_records(), columns })
    }

    fn next(&mut self) -> Result<Option<TraceLine>, InputError> {
        let Some(record) = self.records.next() else { return Ok(None) };
        let file = &self.file;
        let record = record.map_err(|e| csv_error(file, e))?;
        let line = record.position().map_or(0, |p| p.line());
        let [qc, uc, dc] = self.columns;
        let quantum = whole(file, line, "quantum", &record[qc])?;
        let user = record[uc].to_string();
        if user.is_empty() {
            return Err(InputError::Field {
                file: file.clone(),
                line,
                field: "user".into(),
                message: "is empty".into(),
            });
        }
        let demand = whole(file, line, "demand", &record[dc])?;
        Ok(Some(TraceLine { line, quantum, user, demand }))
    }
}

/// Reads a trace CSV with header `quantum,user,demand` once, checking every line: lines
/// sorted by quantum, each distinct quantum one allocation round (no gaps are filled
/// in), one demand per user and quantum. Users missing from a quantum demand 0 in it.
pub fn scan_trace(path: &Path) -> Result<TraceIndex, InputError> {
    let mut lines = TraceLines::open(path)?;
    let file = lines.file.clone();
    let mut trace =
        TraceIndex { file: file.clone(), users: Vec::new(), first_line: Vec::new(), quanta: 0, digest: String::new() };
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut seen_in_quantum: HashMap<usize, u64> = HashMap::new(); // user -> line
    let mut last: Option<u64> = None;
    while let Some(TraceLine { line, quantum, user, .. }) = lines.next()? {
        match last {
            Some(last) if quantum < last => {
                return Err(InputError::Field {
                    file,
                    line,
                    field: "quantum".into(),
                    message: format!("{quantum} comes after quantum {last}; the trace must be sorted by quantum"),
                });
            }
            Some(last) if quantum == last => {}
            _ => {
                last = Some(quantum);
                trace.quanta += 1;
                seen_in_quantum.clear();
            }
        }
        let u = match index.get(&user) {
            Some(&u) => u,
            None => {
                trace.users.push(user.clone());
                trace.first_line.push(line);
                index.insert(user.clone(), trace.users.len() - 1);
                trace.users.len() - 1
            }
        };
        if let Some(first) = seen_in_quantum.insert(u, line) {
            return Err(InputError::Line {
                file,
                line,
                message: format!("user `{user}` already has a demand in quantum {quantum} (line {first})"),
            });
        }
    }
    if trace.quanta == 0 {
        return Err(InputError::File { file, message: "the trace has a header but no demands".into() });
    }
    trace.digest = lines.records.reader().get_ref().digest();
    Ok(trace)
}

/// The quanta of a trace (checked first by [`scan_trace`]), read one at a time: memory
/// O(users) whatever the trace's length.
pub struct QuantumReader {
    lines: TraceLines,
    positions: HashMap<String, usize>,
    pending: Option<TraceLine>,
}

impl QuantumReader {
    /// Reads `path` again, placing each user's demand at its position in `users` (the
    /// pool's order).
    pub fn open(path: &Path, users: &[String]) -> Result<Self, InputError> {
        let positions = users.iter().enumerate().map(|(i, u)| (u.clone(), i)).collect();
        Ok(QuantumReader { lines: TraceLines::open(path)?, positions, pending: None })
    }

    /// Fills `demand` (every user; 0 for those absent) and `present` (the users with a
    /// line in this quantum) with the next quantum and returns its label; `None` at the
    /// end of the trace.
    pub fn next(&mut self, demand: &mut [u64], present: &mut [bool]) -> Result<Option<u64>, InputError> {
        demand.fill(0);
        present.fill(false);
        let Some(first) = self.pending.take().map_or_else(|| self.lines.next(), |l| Ok(Some(l)))? else {
            return Ok(None);
        };
        let label = first.quantum;
        let mut line = Some(first);
        while let Some(l) = line {
            if l.quantum != label {
                self.pending = Some(l);
                break;
            }
            let &u = self.positions.get(&l.user).ok_or_else(|| InputError::Line {
                file: self.lines.file.clone(),
                line: l.line,
                message: format!("user `{}` was not in the trace when it was first read: the file changed", l.user),
            })?;
            demand[u] = l.demand;
            present[u] = true;
            line = self.lines.next()?;
        }
        Ok(Some(label))
    }
}

/// Builds the pool for a trace. With a users file, the pool's users are the file's (in
/// its order) and every trace user must be among them; otherwise the trace's users in
/// order of first appearance.
pub fn pool_for(trace: &TraceIndex, source: &UserSource, initial_credits: Credits) -> Result<PoolConfig, InputError> {
    let users = match source {
        UserSource::Uniform { fair_share, alpha } => {
            if *fair_share == 0 {
                return Err(InputError::Usage("--fair-share must be at least 1".into()));
            }
            trace
                .users
                .iter()
                .map(|name| UserConfig::with_alpha(name.clone(), *fair_share, *alpha, initial_credits))
                .collect()
        }
        UserSource::File(path) => {
            let users = read_users(path, initial_credits)?;
            let known: std::collections::HashSet<&str> = users.iter().map(|u| u.name.as_str()).collect();
            for (t, name) in trace.users.iter().enumerate() {
                if !known.contains(name.as_str()) {
                    return Err(InputError::Field {
                        file: trace.file.clone(),
                        line: trace.first_line[t],
                        field: "user".into(),
                        message: format!("unknown user `{name}`: it is not in the users file {}", path.display()),
                    });
                }
            }
            users
        }
    };
    let config = PoolConfig { users };
    config.validate().map_err(|e| InputError::Usage(e.to_string()))?;
    Ok(config)
}

/// Reads a users CSV with header `user,fair_share,guaranteed`.
pub fn read_users(path: &Path, initial_credits: Credits) -> Result<Vec<UserConfig>, InputError> {
    let file = path.display().to_string();
    let mut reader = open(path)?;
    let [uc, fc, gc] = columns(&mut reader, &file, ["user", "fair_share", "guaranteed"])?;
    let mut users: Vec<UserConfig> = Vec::new();
    let mut lines: HashMap<String, u64> = HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&file, e))?;
        let line = record.position().map_or(0, |p| p.line());
        let name = record[uc].to_string();
        if name.is_empty() {
            return Err(InputError::Field { file, line, field: "user".into(), message: "is empty".into() });
        }
        let fair_share = whole(&file, line, "fair_share", &record[fc])?;
        let guaranteed = whole(&file, line, "guaranteed", &record[gc])?;
        let field =
            |field: &str, message: String| InputError::Field { file: file.clone(), line, field: field.into(), message };
        if fair_share == 0 {
            return Err(field("fair_share", "is 0; a fair share is at least 1 slice".into()));
        }
        if guaranteed > fair_share {
            return Err(field("guaranteed", format!("{guaranteed} is above the fair share {fair_share}")));
        }
        if let Some(first) = lines.insert(name.clone(), line) {
            return Err(field("user", format!("`{name}` is already defined on line {first}")));
        }
        users.push(UserConfig { name, fair_share, guaranteed, initial_credits });
    }
    if users.is_empty() {
        return Err(InputError::File { file, message: "the users file has a header but no users".into() });
    }
    Ok(users)
}
