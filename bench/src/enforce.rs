//! `fairshare bench enforce`: what the HTB enforcer costs at N tenants, on a veth pair
//! between two network namespaces this bench makes (and removes, also on failure).
//!
//! Inside the sending namespace (a child process of the same binary): the tree is
//! installed for N tenants (destination ports 20000 + i, UDP), then timed: installing
//! it, one quantum's rate changes for all N (over netlink, and the same changes through
//! one `tc -batch` process for comparison), one read of all N counters, the CPU one
//! quantum of a live pool with measured demand costs the process (counters, estimate,
//! allocation, rate changes; 200 ms quanta, every rate changing), and the time to send
//! one small UDP packet to the first and to the last tenant (what the classification
//! adds, side by side in alternating blocks).

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fairshare_service::config::{Match, Tenant};
use fairshare_service::enforce::{Htb, DEFAULT_MAX_PACKET};
use serde::{Deserialize, Serialize};

/// What was measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EnforceReport {
    /// Tenants.
    pub tenants: usize,
    /// Installing the tree, ms.
    pub install_ms: f64,
    /// One quantum's rate changes for every tenant over netlink (median), ms.
    pub apply_ms: f64,
    /// The same changes through one `tc -batch` process (median), ms.
    pub apply_tc_batch_ms: f64,
    /// One read of every tenant's counters (median), ms.
    pub counters_ms: f64,
    /// CPU of the process per quantum of a live pool with measured demand and every
    /// rate changing (mean over the run), ms.
    pub quantum_cpu_ms: f64,
    /// Quanta of that run that ended before their period did, of all.
    pub quanta_on_time: f64,
    /// Sending one UDP packet that the first and the last tenant's filter classifies.
    pub classify_ns: Classify,
}

/// The time to send one packet classified to the first and to the last tenant
/// (median), ns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Classify {
    /// The first tenant's.
    pub first: f64,
    /// The last tenant's.
    pub last: f64,
}

/// Why the bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum EnforceBenchError {
    /// Not root, or no network namespaces.
    #[error("bench enforce makes network namespaces and an HTB tree: {0}")]
    Setup(String),
    /// The child measuring inside the namespace failed.
    #[error("bench enforce: the measurement inside the namespace failed: {0}")]
    Inside(String),
    /// The enforcer failed.
    #[error(transparent)]
    Enforce(#[from] fairshare_service::enforce::EnforceError),
    /// An operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The namespaces, removed when dropped.
struct Lab(String, String);

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in [&self.0, &self.1] {
            let _ = Command::new("ip").args(["netns", "del", ns]).stderr(Stdio::null()).status();
        }
    }
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

/// Makes the namespaces and runs `bin bench enforce --tenants N --inside` in the
/// sending one; its report.
pub fn measure(bin: &Path, tenants: usize) -> Result<EnforceReport, EnforceBenchError> {
    let pid = std::process::id();
    let lab = Lab(format!("fsbench-a-{pid}"), format!("fsbench-b-{pid}"));
    let (a, b) = (lab.0.as_str(), lab.1.as_str());
    let ok = ip(&["netns", "add", a])
        && ip(&["netns", "add", b])
        && ip(&["-n", a, "link", "add", "name", "ba", "type", "veth", "peer", "name", "bb", "netns", b])
        && ip(&["-n", a, "addr", "add", "10.78.0.1/24", "dev", "ba"])
        && ip(&["-n", b, "addr", "add", "10.78.0.2/24", "dev", "bb"])
        && ip(&["-n", a, "link", "set", "dev", "ba", "up"])
        && ip(&["-n", b, "link", "set", "dev", "bb", "up"])
        && ip(&["-n", a, "link", "set", "dev", "lo", "up"]);
    if !ok {
        return Err(EnforceBenchError::Setup("`ip netns add` or the veth pair failed (it needs root)".into()));
    }
    let out = Command::new("ip")
        .args(["netns", "exec", a])
        .arg(bin)
        .args(["bench", "enforce", "--tenants", &tenants.to_string(), "--inside"])
        .output()
        .map_err(|source| EnforceBenchError::Io { what: "running the measurement", source })?;
    if !out.status.success() {
        return Err(EnforceBenchError::Inside(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| EnforceBenchError::Inside(e.to_string()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// CPU time of every thread of this process so far (scheduler statistics), ns.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()))
        .sum()
}

/// The measurement itself, inside the sending namespace (device `ba`).
pub fn inside(tenants: usize) -> Result<EnforceReport, EnforceBenchError> {
    let io = |what| move |source| EnforceBenchError::Io { what, source };
    let list: Vec<Tenant> = (0..tenants)
        .map(|i| Tenant {
            name: format!("t{i}"),
            weight: 1,
            selector: Some(Match {
                dport: Some(u16::try_from(20_000 + i).unwrap_or(u16::MAX)),
                src: None,
                fwmark: None,
                protocol: Some("udp".into()),
            }),
            token_file: None,
        })
        .collect();
    let link_bps = 10_000_000_000u64;
    let quantum = Duration::from_millis(200);
    let started = Instant::now();
    let mut htb = Htb::install("ba", link_bps, &list, quantum, DEFAULT_MAX_PACKET)?;
    let install_ms = started.elapsed().as_secs_f64() * 1e3;
    // Every rate changes every round: two alternating allocations.
    let rates =
        |round: usize| -> Vec<u64> { (0..tenants).map(|i| 1_000_000 * (1 + ((i + round) % 7) as u64)).collect() };
    let mut apply = Vec::new();
    let mut counters = Vec::new();
    for round in 0..9 {
        let r = rates(round);
        let t = Instant::now();
        htb.apply(&r)?;
        apply.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let c = htb.counters()?;
        counters.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(c.len(), tenants);
    }
    // The same rate changes through one tc process reading a batch.
    let mut tc_batch = Vec::new();
    for round in 0..3 {
        let mut batch = String::new();
        for (i, r) in rates(round + 20).iter().enumerate() {
            batch +=
                &format!("class change dev ba parent fa17:1 classid fa17:{:x} htb rate {r}bit ceil {r}bit\n", 0x10 + i);
        }
        let t = Instant::now();
        let mut child = Command::new("tc")
            .args(["-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io("running tc"))?;
        if let Some(mut stdin) = child.stdin.take() {
            std::io::Write::write_all(&mut stdin, batch.as_bytes()).map_err(io("writing to tc"))?;
        }
        child.wait().map_err(io("running tc"))?;
        tc_batch.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // A live pool's quanta with measured demand: counters, estimate, allocation (the
    // batched software), rate changes, every 200 ms.
    let (quantum_cpu_ms, quanta_on_time) = live_quanta(&mut htb, tenants, quantum)?;
    // Classification: the first and the last tenant at the link's rate, packets sent to
    // each in alternating blocks.
    let mut r = vec![1_000_000; tenants];
    r[0] = link_bps;
    r[tenants - 1] = link_bps;
    htb.apply(&r)?;
    let socket = UdpSocket::bind("10.78.0.1:0").map_err(io("binding a UDP socket"))?;
    let payload = [0u8; 32];
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for block in 0..12 {
        for (port, into) in [(20_000, &mut first), (20_000 + tenants - 1, &mut last)] {
            let to = format!("10.78.0.2:{port}");
            let t = Instant::now();
            for _ in 0..2_000 {
                socket.send_to(&payload, &to).map_err(io("sending a packet"))?;
            }
            if block > 1 {
                into.push(t.elapsed().as_nanos() as f64 / 2_000.0);
            }
        }
    }
    Ok(EnforceReport {
        tenants,
        install_ms,
        apply_ms: median(apply),
        apply_tc_batch_ms: median(tc_batch),
        counters_ms: median(counters),
        quantum_cpu_ms,
        quanta_on_time,
        classify_ns: Classify { first: median(first), last: median(last) },
    })
}

/// Runs 25 quanta of a pool of `tenants` (equal shares of a 10 Gbit/s link in 1 Mbit/s
/// slices, Karma) with measured demand on `htb`, one per `quantum`; the process's CPU
/// per quantum (ms) and the share of quanta that ended within their period.
fn live_quanta(htb: &mut Htb, tenants: usize, quantum: Duration) -> Result<(f64, f64), EnforceBenchError> {
    use fairshare::{Allocator, Alpha, Policy, PoolConfig};
    use fairshare_service::enforce::Estimator;
    let slices = 10_000u64;
    let f = (slices / tenants as u64).max(1);
    let config = Alpha::new(1, 2)
        .and_then(|alpha| PoolConfig::equal(tenants, f, alpha, 1 << 30))
        .map_err(|e| EnforceBenchError::Inside(e.to_string()))?;
    let mut pool = Allocator::new(config, Policy::Karma).map_err(|e| EnforceBenchError::Inside(e.to_string()))?;
    let estimator = Estimator::default();
    let mut last = htb.counters()?;
    let (quanta, mut on_time) = (25usize, 0usize);
    let start_cpu = cpu_ns();
    let start = Instant::now();
    for q in 0..quanta {
        let due = start + quantum * q as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let now = htb.counters()?;
        let alloc = pool.allocations().to_vec();
        let demand: Vec<u64> = last
            .iter()
            .zip(&now)
            .zip(&alloc)
            .enumerate()
            // No traffic flows here: every tenant asks for a different amount each
            // quantum, so that every rate changes.
            .map(|(i, ((b, a), &al))| estimator.demand(*b, *a, al, 0.2, 1_000_000, slices) + ((i + q) % 5) as u64)
            .collect();
        last = now;
        let got = pool.allocate(&demand).map_err(|e| EnforceBenchError::Inside(e.to_string()))?.to_vec();
        let rates: Vec<u64> = got.iter().map(|&a| a * 1_000_000).collect();
        htb.apply(&rates)?;
        if Instant::now() < due + quantum {
            on_time += 1;
        }
    }
    let cpu = (cpu_ns() - start_cpu) as f64 / 1e6 / quanta as f64;
    Ok((cpu, on_time as f64 / quanta as f64))
}
