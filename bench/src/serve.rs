//! `fairshare bench serve`: does a live pool keep its clock while it is read hard?
//!
//! Starts `fairshare serve` (the binary given, as a process of its own, wall clock,
//! no ledger) with N tenants whose demands are set at random, then runs R threads
//! reading `GET /v1/allocations` and M reading `GET /metrics` as fast as they can, each
//! request on a new connection, for the given seconds. Counts, from the service's own
//! `/v1/status` before and after: the ticks that passed (quanta + missed ticks) and the
//! share of them that ran a quantum; and per kind of read: how many, their p50 and p99
//! latency, and the bytes of one answer. Everything is measured in the one run.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use serde::Serialize;

/// What to run.
#[derive(Debug, Clone)]
pub struct ServeRun {
    /// Tenants in the pool.
    pub tenants: usize,
    /// The quantum's period.
    pub period: Duration,
    /// Threads reading `/v1/allocations`.
    pub readers: usize,
    /// Threads reading `/metrics`.
    pub metrics_readers: usize,
    /// How long the readers read.
    pub duration: Duration,
}

/// What was measured.
#[derive(Debug, Clone, Serialize)]
pub struct ServeReport {
    /// Tenants in the pool.
    pub tenants: usize,
    /// The quantum's period, milliseconds.
    pub period_ms: f64,
    /// Threads reading `/v1/allocations` and `/metrics`.
    pub readers: usize,
    /// Threads reading `/metrics`.
    pub metrics_readers: usize,
    /// Seconds the readers read.
    pub secs: f64,
    /// Ticks that passed while they read (quanta + missed ticks, from the service).
    pub ticks: u64,
    /// Of those, the ticks that ran a quantum.
    pub quanta: u64,
    /// `quanta / ticks`.
    pub quanta_share: f64,
    /// Reads of `/v1/allocations` done, p50 and p99 latency (ms), bytes of one answer.
    pub allocations_reads: u64,
    /// p50 latency of a `/v1/allocations` read, ms.
    pub allocations_p50_ms: f64,
    /// p99 latency of a `/v1/allocations` read, ms.
    pub allocations_p99_ms: f64,
    /// Bytes of one `/v1/allocations` answer.
    pub allocations_bytes: usize,
    /// Reads of `/metrics` done.
    pub metrics_reads: u64,
    /// p50 latency of a `/metrics` read, ms.
    pub metrics_p50_ms: f64,
    /// p99 latency of a `/metrics` read, ms.
    pub metrics_p99_ms: f64,
    /// Bytes of one `/metrics` answer.
    pub metrics_bytes: usize,
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeBenchError {
    /// The service could not be started, or said nothing.
    #[error("starting `{bin} serve`: {reason}")]
    Start {
        /// The binary.
        bin: String,
        /// What went wrong.
        reason: String,
    },
    /// A request failed.
    #[error("{request}: {source}")]
    Request {
        /// The request.
        request: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The service answered something unexpected.
    #[error("{request}: {answer}")]
    Answer {
        /// The request.
        request: String,
        /// What it answered.
        answer: String,
    },
    /// A file of the run could not be written.
    #[error("writing {what}: {source}")]
    Write {
        /// The file.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The service, stopped when dropped.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One request on a new connection: the status code and the body.
fn request(addr: &str, method: &str, path: &str, body: &str) -> Result<(u16, Vec<u8>), ServeBenchError> {
    let what = || format!("{method} {path}");
    let io = |source| ServeBenchError::Request { request: what(), source };
    let mut s = TcpStream::connect(addr).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(io)?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .map_err(io)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(io)?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or(raw.len());
    let status = std::str::from_utf8(&raw[..split.min(12)])
        .ok()
        .and_then(|h| h.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| ServeBenchError::Answer { request: what(), answer: String::from_utf8_lossy(&raw).into() })?;
    Ok((status, raw.get(split + 4..).unwrap_or_default().to_vec()))
}

/// The service's ticks so far: (quanta, missed).
fn ticks(addr: &str) -> Result<(u64, u64), ServeBenchError> {
    let (_, body) = request(addr, "GET", "/v1/status", "")?;
    let text = String::from_utf8_lossy(&body);
    let field = |name: &str| -> Option<u64> {
        let at = text.find(&format!("\"{name}\":"))? + name.len() + 3;
        text[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    match (field("quantum"), field("missed_ticks")) {
        (Some(q), Some(m)) => Ok((q, m)),
        _ => Err(ServeBenchError::Answer { request: "GET /v1/status".into(), answer: text.into_owned() }),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Runs `run` against `bin serve`.
pub fn measure(bin: &Path, run: &ServeRun) -> Result<ServeReport, ServeBenchError> {
    let dir =
        tempfile::tempdir().map_err(|e| ServeBenchError::Write { what: "a temporary folder".into(), source: e })?;
    let config = dir.path().join("bench.toml");
    let mut text = format!(
        "[pool]\ncapacity = {}\nquantum = \"{}us\"\n[demand]\nsource = \"declared\"\n[enforce]\nkind = \"none\"\n",
        run.tenants * 10,
        run.period.as_micros()
    );
    for t in 0..run.tenants {
        text += &format!("[[tenants]]\nname = \"t{t}\"\n");
    }
    std::fs::write(&config, text)
        .map_err(|e| ServeBenchError::Write { what: config.display().to_string(), source: e })?;
    let start = |reason: String| ServeBenchError::Start { bin: bin.display().to_string(), reason };
    let mut child = Command::new(bin)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| start(e.to_string()))?;
    let stdout = child.stdout.take();
    let service = Service(child);
    let mut line = String::new();
    if let Some(out) = stdout {
        std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line).map_err(|e| start(e.to_string()))?;
    }
    let addr = line.trim().rsplit("http://").next().unwrap_or_default().to_string();
    if !addr.contains(':') {
        return Err(start(format!("it printed {line:?}")));
    }
    // Demands at random, up to three fair shares: quanta with work to do.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for t in 0..run.tenants {
        let body = format!("{{\"slices\": {}}}", rng.gen_range(0..30));
        let (status, answer) = request(&addr, "PUT", &format!("/v1/tenants/t{t}/demand"), &body)?;
        if status != 204 {
            return Err(ServeBenchError::Answer {
                request: format!("PUT t{t}"),
                answer: String::from_utf8_lossy(&answer).into(),
            });
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let stop = Arc::new(AtomicBool::new(false));
    let before = ticks(&addr)?;
    let began = Instant::now();
    let readers: Vec<_> = (0..run.readers + run.metrics_readers)
        .map(|i| {
            let (addr, stop) = (addr.clone(), Arc::clone(&stop));
            let allocations = i < run.readers;
            let path = if allocations { "/v1/allocations" } else { "/metrics" };
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                let mut bytes = 0;
                while !stop.load(Ordering::Relaxed) {
                    let at = Instant::now();
                    if let Ok((200, body)) = request(&addr, "GET", path, "") {
                        latencies.push(at.elapsed().as_secs_f64() * 1e3);
                        bytes = body.len();
                    }
                }
                (allocations, latencies, bytes)
            })
        })
        .collect();
    std::thread::sleep(run.duration);
    stop.store(true, Ordering::Relaxed);
    let after = ticks(&addr)?;
    let secs = began.elapsed().as_secs_f64();
    let (mut alloc, mut metrics) = ((Vec::new(), 0), (Vec::new(), 0));
    for r in readers {
        if let Ok((is_alloc, lat, bytes)) = r.join() {
            let into = if is_alloc { &mut alloc } else { &mut metrics };
            into.0.extend(lat);
            into.1 = into.1.max(bytes);
        }
    }
    drop(service);
    for v in [&mut alloc.0, &mut metrics.0] {
        v.sort_by(f64::total_cmp);
    }
    let quanta = after.0.saturating_sub(before.0);
    let ticks = quanta + after.1.saturating_sub(before.1);
    Ok(ServeReport {
        tenants: run.tenants,
        period_ms: run.period.as_secs_f64() * 1e3,
        readers: run.readers,
        metrics_readers: run.metrics_readers,
        secs,
        ticks,
        quanta,
        quanta_share: quanta as f64 / ticks.max(1) as f64,
        allocations_reads: alloc.0.len() as u64,
        allocations_p50_ms: percentile(&alloc.0, 0.5),
        allocations_p99_ms: percentile(&alloc.0, 0.99),
        allocations_bytes: alloc.1,
        metrics_reads: metrics.0.len() as u64,
        metrics_p50_ms: percentile(&metrics.0, 0.5),
        metrics_p99_ms: percentile(&metrics.0, 0.99),
        metrics_bytes: metrics.1,
    })
}
