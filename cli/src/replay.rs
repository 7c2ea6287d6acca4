//! `fairshare replay`: a demand trace through one policy, streamed quantum by quantum
//! (memory O(users)); per-quantum results as CSV (`quantum,user,demand,alloc,credits`)
//! and a summary on stderr. With `--state DIR`, every quantum's state is committed to a
//! durable ledger before its rows count as written, and a rerun resumes after the last
//! committed quantum (docs/reliability.md).

use crate::flags::ReplayArgs;
use crate::input::{digest_file, pool_for, scan_trace, QuantumReader, TraceIndex, UserSource};
use crate::output::{outln, progress, ratio, Output};
use crate::CliError;
use fairshare::{AllocatorState, Credits, Policy, PoolConfig};
use fairshare_ledger::Ledger;
use fairshare_sim::Recorder;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What `replay` needs.
struct ReplayRequest<'a> {
    /// Trace CSV.
    pub trace: &'a Path,
    /// Shares for every user, or a users file.
    pub users: UserSource<'a>,
    /// Initial credits of every user.
    pub initial_credits: Credits,
    /// Policy to run.
    pub policy: Policy,
    /// Output CSV (stdout when absent).
    pub out: Option<&'a Path>,
    /// Where the quanta run.
    pub backend: crate::backend::Backend,
    /// How device backends are used.
    pub device: crate::backend::DeviceOptions,
    /// Summary as JSON.
    pub json: bool,
    /// A row for every user in every quantum (else only users with a line in the
    /// quantum, an allocation, or a change of credits).
    pub dense: bool,
    /// The ledger folder (`--state`).
    pub state: Option<&'a Path>,
}

/// What the ledger holds after each quantum: everything a resumed run needs to continue
/// as if it had never stopped.
#[derive(Serialize, Deserialize)]
struct SavedRun<'a> {
    /// Which run this is (trace, users, policy, flags): a ledger of another run is refused.
    run: Cow<'a, str>,
    /// Quanta done.
    quanta: usize,
    /// Bytes of `rows.csv` written by those quanta.
    rows_len: u64,
    /// The pool's state (credits).
    pool: AllocatorState,
    /// The summary so far.
    recorder: Cow<'a, Recorder>,
}

/// A fingerprint of the inputs that decide the rows: the trace's and users file's bytes
/// (length and CRC-32; the trace's taken while it was checked), the pool and the policy.
fn run_id(req: &ReplayRequest, trace: &TraceIndex, config: &PoolConfig) -> Result<String, CliError> {
    let users = match req.users {
        UserSource::File(p) => digest_file(p)?,
        UserSource::Uniform { .. } => "-".into(),
    };
    let pool = serde_json::to_vec(config).map_err(CliError::json("the pool's configuration"))?;
    Ok(format!("trace {} users {users} policy {} pool {:08x}", trace.digest, req.policy, crc32fast::hash(&pool)))
}

/// Where the rows go while the run is on: straight to the output, or (with a ledger) to
/// the ledger folder's `rows.csv`, copied to the output once every quantum is done.
/// One CSV writer for the whole run (it quotes names with commas or quotes, and
/// buffers).
enum Rows {
    Direct(csv::Writer<Output>),
    Ledgered { ledger: Ledger, csv: csv::Writer<File>, path: PathBuf, len: u64, run: String },
}

/// Runs `fairshare replay`.
pub fn run(args: ReplayArgs) -> Result<ExitCode, CliError> {
    let users = match (&args.users, args.fair_share) {
        (Some(path), _) => UserSource::File(path),
        (None, Some(fair_share)) => UserSource::Uniform { fair_share, alpha: args.alpha },
        (None, None) => return Err(CliError::Usage("give --fair-share or --users".into())),
    };
    let req = ReplayRequest {
        trace: &args.trace,
        users,
        initial_credits: args.initial_credits,
        policy: args.policy,
        out: args.out.as_deref(),
        backend: args.device.backend.clone(),
        device: args.device.options(),
        json: args.json,
        dense: args.dense,
        state: args.state.as_deref(),
    };
    replay(&req)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs a replay. Every input is checked before anything runs; a regular output file
/// appears whole or not at all.
fn replay(req: &ReplayRequest) -> Result<(), CliError> {
    let trace = scan_trace(req.trace)?;
    let config = pool_for(&trace, &req.users, req.initial_credits)?;
    let names: Vec<String> = config.users.iter().map(|u| u.name.clone()).collect();
    let mut out = open_output(req)?;
    let mut start = Resume {
        allocator: fairshare::Allocator::new(config.clone(), req.policy)?,
        recorder: Recorder::new(names.len(), config.capacity()),
        done: 0,
    };
    let mut rows = match req.state {
        None => Rows::Direct(csv::Writer::from_writer(out.take().unwrap_or_else(Output::discard))),
        Some(dir) => open_ledgered_rows(req, dir, &trace, &config, &mut start)?,
    };
    let format = RowFormat {
        names: &names,
        dense: req.dense,
        credits_column: req.policy == Policy::Karma,
        // Rows nobody reads (--json without --out, no ledger) are not formatted.
        skip: matches!(rows, Rows::Direct(_)) && req.json && req.out.is_none(),
    };
    if start.done == 0 {
        write_record(&mut rows, format.header())?;
    }
    let mut pool = req.backend.offload_from(start.allocator, req.device)?;
    let mut recorder = start.recorder;
    run_quanta(req, &trace, &format, &mut pool, &mut rows, &mut recorder, start.done)?;
    pool.settle();
    crate::backend::report(&pool);
    finish_rows(req, rows, out)?;
    summarize(req, &config, &pool, recorder)
}

/// Opens the output for the rows, unless nobody would read them: with --json and no
/// --out, stdout holds the JSON summary and no rows.
fn open_output(req: &ReplayRequest) -> Result<Option<Output>, CliError> {
    let mut inputs = vec![req.trace];
    if let UserSource::File(p) = req.users {
        inputs.push(p);
    }
    Ok(if req.json && req.out.is_none() { None } else { Some(Output::open(req.out, &inputs)?) })
}

/// Where the run continues from: a fresh pool, or the ledger's last committed quantum.
struct Resume {
    allocator: fairshare::Allocator,
    recorder: Recorder,
    /// Quanta already done (and committed) by an earlier run.
    done: usize,
}

/// Opens the ledger in `dir` (refusing one of another run), resumes `start` from its
/// last committed quantum, and opens `rows.csv` cut back to that quantum's rows.
fn open_ledgered_rows(
    req: &ReplayRequest,
    dir: &Path,
    trace: &TraceIndex,
    config: &PoolConfig,
    start: &mut Resume,
) -> Result<Rows, CliError> {
    let run = run_id(req, trace, config)?;
    let (ledger, latest) = Ledger::open_run::<SavedRun>(dir, |cp| &cp.run, &run)?;
    let path = dir.join("rows.csv");
    let mut len = 0;
    if let Some(cp) = latest {
        start.allocator = fairshare::Allocator::from_state(cp.pool)?;
        start.recorder = cp.recorder.into_owned();
        start.done = cp.quanta;
        len = cp.rows_len;
    }
    let file = open_committed_rows(&path, len)?;
    Ok(Rows::Ledgered { ledger, csv: csv::Writer::from_writer(file), path, len, run })
}

/// Opens (or creates) the ledger's `rows.csv` positioned at the end of its `len`
/// committed bytes; a file shorter than that is damage.
fn open_committed_rows(path: &Path, len: u64) -> Result<File, CliError> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(CliError::file("opening", path))?;
    let have = file.metadata().map_err(CliError::file("reading the length of", path))?.len();
    if have < len {
        return Err(CliError::Damaged {
            path: path.to_path_buf(),
            reason: format!("holds {have} bytes where the ledger committed {len}: the folder is damaged"),
        });
    }
    // Rows written after the last commit belong to no committed quantum.
    file.set_len(len)
        .and_then(|_| file.seek(SeekFrom::Start(len)))
        .map_err(CliError::file("cutting back to its committed rows", path))?;
    Ok(file)
}

/// Which rows a quantum writes, and with which columns.
struct RowFormat<'a> {
    /// The users' names, in the pool's order.
    names: &'a [String],
    /// A row for every user, not only those with a line, an allocation or a change of
    /// credits.
    dense: bool,
    /// The `credits` column (Karma only).
    credits_column: bool,
    /// No rows at all: nobody would read them.
    skip: bool,
}

impl RowFormat<'_> {
    /// The CSV header.
    fn header(&self) -> &'static [&'static str] {
        if self.credits_column {
            &["quantum", "user", "demand", "alloc", "credits"]
        } else {
            &["quantum", "user", "demand", "alloc"]
        }
    }

    /// Writes one quantum's rows.
    fn write_quantum(&self, rows: &mut Rows, quantum: &QuantumRows) -> Result<(), CliError> {
        if self.skip {
            return Ok(());
        }
        let QuantumRows { label, demand, present, alloc, before, after } = *quantum;
        for u in 0..self.names.len() {
            if !(self.dense || present[u] || alloc[u] > 0 || before[u] != after[u]) {
                continue;
            }
            let (d, a, c) = (demand[u].to_string(), alloc[u].to_string(), after[u].to_string());
            let mut row = vec![label, self.names[u].as_str(), d.as_str(), a.as_str()];
            if self.credits_column {
                row.push(c.as_str());
            }
            write_record(rows, &row)?;
        }
        Ok(())
    }
}

/// One quantum's results, as its rows show them.
#[derive(Clone, Copy)]
struct QuantumRows<'a> {
    /// The trace's label of the quantum.
    label: &'a str,
    demand: &'a [u64],
    /// Which users have a line in the quantum.
    present: &'a [bool],
    alloc: &'a [u64],
    /// Credits before the quantum (empty when dense: every row is written anyway).
    before: &'a [Credits],
    after: &'a [Credits],
}

/// Runs the trace's quanta after the first `done` through the pool, writing each one's
/// rows and (with a ledger) committing it.
fn run_quanta(
    req: &ReplayRequest,
    trace: &TraceIndex,
    format: &RowFormat,
    pool: &mut fairshare::offload::Offload,
    rows: &mut Rows,
    recorder: &mut Recorder,
    done: usize,
) -> Result<(), CliError> {
    let names = format.names;
    let n = names.len();
    let mut reader = QuantumReader::open(req.trace, names)?;
    let (mut demand, mut present) = (vec![0u64; n], vec![false; n]);
    let mut before: Vec<Credits> = Vec::with_capacity(n);
    let bar = progress(trace.quanta, "replay");
    let mut q = 0;
    while let Some(label) = reader.next(&mut demand, &mut present)? {
        q += 1;
        if q <= done {
            continue;
        }
        if !req.dense {
            before.clear();
            before.extend_from_slice(pool.allocator().credits());
        }
        pool.allocate(&demand).map_err(|e| quantum_error(trace, label, names, e))?;
        if matches!(rows, Rows::Ledgered { .. }) {
            // The ledger and its rows hold verified results only: wait for the verifier
            // (async) before they are written; a mismatch puts the software's in place.
            pool.settle();
        }
        let (alloc, after) = (pool.allocator().allocations(), pool.allocator().credits());
        recorder.record(&demand, alloc);
        let label = label.to_string();
        let quantum = QuantumRows { label: &label, demand: &demand, present: &present, alloc, before: &before, after };
        format.write_quantum(rows, &quantum)?;
        commit_quantum(rows, q, pool, recorder)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

/// With a ledger, makes the quantum's rows durable and then commits the run's state
/// after `quanta` quanta; without one, does nothing.
fn commit_quantum(
    rows: &mut Rows,
    quanta: usize,
    pool: &fairshare::offload::Offload,
    recorder: &Recorder,
) -> Result<(), CliError> {
    if let Rows::Ledgered { ledger, csv, path, len, run } = rows {
        let io = |e: io::Error| CliError::File { what: "writing", path: path.clone(), source: e };
        csv.flush().map_err(io)?;
        csv.get_ref().sync_data().map_err(io)?;
        *len = (&mut csv.get_ref()).stream_position().map_err(io)?;
        let cp = SavedRun {
            run: Cow::Borrowed(run),
            quanta,
            rows_len: *len,
            pool: pool.allocator().export_state(),
            recorder: Cow::Borrowed(recorder),
        };
        ledger.commit_json(&cp)?;
    }
    Ok(())
}

/// Delivers the rows: flushes and commits the direct output, or copies the ledger's
/// `rows.csv` to the output (if any).
fn finish_rows(req: &ReplayRequest, rows: Rows, out: Option<Output>) -> Result<(), CliError> {
    match rows {
        Rows::Direct(mut csv) => {
            csv.flush().map_err(|e| csv.get_ref().error(e))?;
            // Flushed: nothing is left to fail here.
            let out = csv.into_inner().map_err(|e| CliError::Stdout(e.into_error()))?;
            out.commit()?
        }
        Rows::Ledgered { path, .. } => {
            if let Some(mut out) = out {
                let mut file = File::open(&path).map_err(CliError::file("reading", &path))?;
                io::copy(&mut file, out.writer()).map_err(|e| match req.out {
                    None => crate::output::stdout_error(e),
                    Some(p) => CliError::File { what: "writing", path: p.to_path_buf(), source: e },
                })?;
                out.commit()?;
            }
        }
    }
    Ok(())
}

/// Writes one CSV record.
fn write_record(rows: &mut Rows, fields: &[&str]) -> Result<(), CliError> {
    let result = match rows {
        Rows::Direct(csv) => csv.write_record(fields),
        Rows::Ledgered { csv, .. } => csv.write_record(fields),
    };
    result.map_err(|e| {
        let e = fairshare_report::table::csv_io_error(e);
        match rows {
            Rows::Direct(csv) => csv.get_ref().error(e),
            Rows::Ledgered { path, .. } => CliError::File { what: "writing", path: path.clone(), source: e },
        }
    })
}

/// A quantum the pool refused, named by the trace's quantum and the user.
fn quantum_error(trace: &TraceIndex, label: u64, names: &[String], e: fairshare::Error) -> CliError {
    match e {
        fairshare::Error::CreditOverflow { user, before } => CliError::Usage(format!(
            "{}: quantum {label}: user `{}`: credits would leave the representable range (64-bit, 16 fractional \
             bits; balance before this quantum: {before})",
            trace.file,
            names.get(user).map_or("?", String::as_str)
        )),
        e => CliError::Usage(format!("{}: quantum {label}: {e}", trace.file)),
    }
}

fn summarize(
    req: &ReplayRequest,
    config: &PoolConfig,
    pool: &fairshare::offload::Offload,
    recorder: Recorder,
) -> Result<(), CliError> {
    let summary = recorder.finish();
    if req.json {
        let json = serde_json::json!({
            "policy": req.policy.name(),
            "backend": req.backend.to_string(),
            "device_quanta": pool.device_quanta(),
            "fallback": pool.fallback().map(fairshare::offload::Fallback::summary),
            "quanta": summary.quanta,
            "users": summary.users,
            "capacity": config.capacity(),
            "utilization": summary.utilization,
            "utilization_of_demand": summary.utilization_of_demand,
            "fairness": summary.fairness,
            "min_welfare": summary.min_welfare,
            "max_welfare": summary.max_welfare,
            "disparity": summary.disparity,
            "jain": summary.jain,
        });
        outln!("{json}")?;
    } else {
        eprintln!(
            "replay: policy {}, {} quanta, {} users, pool {} slices: utilization {}, fairness {} (welfare min {}, max {}), disparity {}, Jain {}",
            req.policy,
            summary.quanta,
            summary.users,
            config.capacity(),
            ratio(summary.utilization),
            ratio(summary.fairness),
            ratio(summary.min_welfare),
            ratio(summary.max_welfare),
            ratio(summary.disparity),
            ratio(summary.jain)
        );
    }
    Ok(())
}
