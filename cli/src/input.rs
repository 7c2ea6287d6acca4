//! Reading user files: demand traces (`quantum,user,demand`) and user configs
//! (`user,fair_share,guaranteed`). Every problem is reported with file, line, field and
//! value, and nothing is run or written before the whole input has been read.

use fairshare::{Alpha, Credits, PoolConfig, UserConfig};
use std::collections::HashMap;
use std::fs::File;
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

/// A demand trace: users in order of first appearance, one demand vector per quantum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The file it was read from (for messages).
    pub file: String,
    /// User names; index = position in every demand vector.
    pub users: Vec<String>,
    /// Line of each user's first demand (for messages).
    pub first_line: Vec<u64>,
    /// Quantum labels as written in the file, in order.
    pub labels: Vec<u64>,
    /// `demands[q][u]`.
    pub demands: Vec<Vec<u64>>,
}

/// How the pool is configured: the same share for every user of the trace, or a file.
#[derive(Clone, Debug)]
pub enum UserSource<'a> {
    /// `--fair-share`, `--alpha` for every user seen in the trace.
    Uniform { fair_share: u64, alpha: Alpha },
    /// `--users FILE`.
    File(&'a Path),
}

fn open(path: &Path) -> Result<csv::Reader<File>, InputError> {
    let file =
        File::open(path).map_err(|e| InputError::File { file: path.display().to_string(), message: e.to_string() })?;
    Ok(csv::ReaderBuilder::new().trim(csv::Trim::All).from_reader(file))
}

/// Checks that the header has exactly the expected columns, and returns their positions.
fn columns<const N: usize>(
    reader: &mut csv::Reader<File>,
    file: &str,
    expected: [&str; N],
) -> Result<[usize; N], InputError> {
    let header = reader.headers().map_err(|e| csv_error(file, e))?.clone();
    let want = expected.join(",");
    let bad = |message: String| InputError::Line { file: file.into(), line: 1, message };
    if header.iter().all(|h| h.is_empty()) {
        return Err(bad(format!("the file is empty; expected the header `{want}`")));
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
        if text.parse::<f64>().is_ok() {
            err(format!("`{text}` is not a whole number"))
        } else {
            err(format!("`{text}` is not a number"))
        }
    })
}

/// Reads a trace CSV with header `quantum,user,demand`. Lines must be sorted by
/// quantum; each distinct quantum is one allocation round (no gaps are filled in);
/// users missing from a quantum demand 0 in it.
pub fn read_trace(path: &Path) -> Result<Trace, InputError> {
    let file = path.display().to_string();
    let mut reader = open(path)?;
    let [qc, uc, dc] = columns(&mut reader, &file, ["quantum", "user", "demand"])?;
    let mut trace = Trace {
        file: file.clone(),
        users: Vec::new(),
        first_line: Vec::new(),
        labels: Vec::new(),
        demands: Vec::new(),
    };
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut seen_in_quantum: HashMap<usize, u64> = HashMap::new(); // user -> line
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&file, e))?;
        let line = record.position().map_or(0, |p| p.line());
        let quantum = whole(&file, line, "quantum", &record[qc])?;
        let user = &record[uc];
        if user.is_empty() {
            return Err(InputError::Field { file, line, field: "user".into(), message: "is empty".into() });
        }
        let demand = whole(&file, line, "demand", &record[dc])?;
        match trace.labels.last() {
            Some(&last) if quantum < last => {
                return Err(InputError::Field {
                    file,
                    line,
                    field: "quantum".into(),
                    message: format!("{quantum} comes after quantum {last}; the trace must be sorted by quantum"),
                });
            }
            Some(&last) if quantum == last => {}
            _ => {
                trace.labels.push(quantum);
                trace.demands.push(vec![0; trace.users.len()]);
                seen_in_quantum.clear();
            }
        }
        let u = *index.entry(user.to_string()).or_insert_with(|| {
            trace.users.push(user.to_string());
            trace.first_line.push(line);
            for d in trace.demands.iter_mut() {
                d.push(0);
            }
            trace.users.len() - 1
        });
        if let Some(first) = seen_in_quantum.insert(u, line) {
            return Err(InputError::Line {
                file,
                line,
                message: format!("user `{user}` already has a demand in quantum {quantum} (line {first})"),
            });
        }
        if let Some(last) = trace.demands.last_mut() {
            last[u] = demand;
        }
    }
    if trace.labels.is_empty() {
        return Err(InputError::File { file, message: "the trace has a header but no demands".into() });
    }
    Ok(trace)
}

/// Builds the pool for `trace`. With a users file, the pool's users are the file's (in
/// its order) and every trace user must be among them; the trace's demand vectors are
/// rearranged to that order.
pub fn pool_for(trace: &mut Trace, source: &UserSource, initial_credits: Credits) -> Result<PoolConfig, InputError> {
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
            let order: HashMap<&str, usize> = users.iter().enumerate().map(|(i, u)| (u.name.as_str(), i)).collect();
            let mut positions = Vec::with_capacity(trace.users.len());
            for (t, name) in trace.users.iter().enumerate() {
                let &i = order.get(name.as_str()).ok_or_else(|| InputError::Field {
                    file: trace.file.clone(),
                    line: trace.first_line[t],
                    field: "user".into(),
                    message: format!("unknown user `{name}`: it is not in the users file {}", path.display()),
                })?;
                positions.push(i);
            }
            // Into the file's order; users of the file absent from the trace demand 0 and
            // have no line (0).
            let reorder = |v: &[u64]| {
                let mut by_file = vec![0; users.len()];
                for (t, &i) in positions.iter().enumerate() {
                    by_file[i] = v[t];
                }
                by_file
            };
            for d in trace.demands.iter_mut() {
                *d = reorder(d);
            }
            trace.first_line = reorder(&trace.first_line);
            trace.users = users.iter().map(|u| u.name.clone()).collect();
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
