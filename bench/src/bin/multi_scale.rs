//! Time and memory of the multi-resource policies against the number of users (issue 17,
//! "Multi-resource at cluster scale"):
//!
//! ```text
//! cargo run --release -p fairshare-bench --bin multi_scale [-- --cap SECONDS]
//! ```
//!
//! runs `drfh`, `tsf`, `cdrf`, `psdsf-rdm` and `psdsf-tdm` at 100, 300, 1,000 and 3,000
//! users (100 servers, 3 resources, the seeded instances of
//! [`fairshare_bench::multi_instance::cluster`]), and `ddrf` at 10,000 users without the
//! per-arrival steps. Each point runs in a child process (this binary with `--point`),
//! so that its peak resident memory (`VmHWM`) is its own; a point that runs longer than
//! the cap (default 60 s) is stopped and the larger ones of that policy are skipped.
//! The time is the policy's alone (the instance is generated before the clock starts),
//! as wall clock and, at 1,000 users, as the point's own CPU time (the machine is shared:
//! other load inflates the wall clock more); the memory includes the instance. The exponent is the least-squares slope of
//! `log t` against `log n` over the points measured. Writes `bench/MULTI_SCALE.md` and
//! prints it.

use std::io::Read;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use fairshare_bench::multi_instance::cluster;
use fairshare_multi::{run_with, MultiPolicy, Options};

const SERVERS: usize = 100;
const RESOURCES: usize = 3;
const SEED: u64 = 1;
const SIZES: [usize; 4] = [100, 300, 1_000, 3_000];
const DDRF_USERS: usize = 10_000;
const POLICIES: [&str; 5] = ["drfh", "tsf", "cdrf", "psdsf-rdm", "psdsf-tdm"];

/// Peak resident memory of this process in MB (`VmHWM`), 0 where unknown.
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time of this process so far in seconds (user and system, from `/proc/self/stat`
/// in ticks of 1/100 s, Linux's `USER_HZ`), 0 where unknown.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |k: usize| fields.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// The machine's 1-minute load average, NaN where unknown.
fn load_average() -> f64 {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN)
}

/// The child: one policy at one size; prints `seconds cpu_seconds rss_mb`.
fn point(policy: &str, users: usize) -> Result<(), String> {
    let policy: MultiPolicy = policy.parse()?;
    let inst = cluster(users, SERVERS, RESOURCES, SEED);
    let (clock, cpu) = (Instant::now(), cpu_seconds());
    run_with(policy, &inst, Options { steps: false }).map_err(|e| e.to_string())?;
    let seconds = clock.elapsed().as_secs_f64();
    println!("{seconds} {} {}", cpu_seconds() - cpu, peak_rss_mb());
    Ok(())
}

/// What one point measured.
enum Outcome {
    Done { seconds: f64, cpu: f64, rss_mb: f64 },
    OverCap,
    Failed(String),
}

/// Runs one point in a child process, stopped after `cap`.
fn measure(policy: &str, users: usize, cap: Duration) -> Outcome {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let child = Command::new(exe)
        .args(["--point", policy, &users.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let mut out = String::new();
                let mut err = String::new();
                child.stdout.take().map(|mut s| s.read_to_string(&mut out));
                child.stderr.take().map(|mut s| s.read_to_string(&mut err));
                if !status.success() {
                    return Outcome::Failed(err.trim().to_string());
                }
                let fields: Vec<f64> = out.split_whitespace().filter_map(|v| v.parse().ok()).collect();
                return match fields[..] {
                    [seconds, cpu, rss_mb] => Outcome::Done { seconds, cpu, rss_mb },
                    _ => Outcome::Failed(format!("unreadable child output {out:?}")),
                };
            }
            Ok(None) if start.elapsed() > cap => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::OverCap;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Outcome::Failed(e.to_string()),
        }
    }
}

/// Least-squares slope of `log t` against `log n` (None below two points).
fn exponent(points: &[(usize, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let xs: Vec<f64> = points.iter().map(|&(n, _)| (n as f64).ln()).collect();
    let ys: Vec<f64> = points.iter().map(|&(_, t)| t.max(1e-6).ln()).collect();
    let k = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / k, ys.iter().sum::<f64>() / k);
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    Some(sxy / sxx)
}

fn cell(outcome: &Outcome, cap: Duration) -> String {
    match outcome {
        Outcome::Done { seconds, .. } => format!("{seconds:.3} s"),
        Outcome::OverCap => format!("> {} s (stopped)", cap.as_secs()),
        Outcome::Failed(e) => format!("failed: {e}"),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, policy, users] = &args[..] {
        if flag == "--point" {
            let result = users.parse::<usize>().map_err(|e| e.to_string()).and_then(|n| point(policy, n));
            return match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("{e}");
                    ExitCode::FAILURE
                }
            };
        }
    }
    let cap = match &args[..] {
        [] => Duration::from_secs(60),
        [flag, secs] if flag == "--cap" => match secs.parse::<u64>() {
            Ok(s) => Duration::from_secs(s),
            Err(_) => {
                eprintln!("multi_scale: --cap takes whole seconds, got {secs:?}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: multi_scale [--cap SECONDS]");
            return ExitCode::from(2);
        }
    };
    let mut md = String::new();
    md.push_str("# Multi-resource policies at cluster scale\n\n");
    md.push_str(&format!(
        "Written by `cargo run --release -p fairshare-bench --bin multi_scale` (issue 17). One run on a \
         2-core machine shared with other developers (1-minute load average {:.1} at the start; the CPU \
         column is the point's own CPU time, which other load inflates less than the wall clock); the \
         numbers are that run's, not averages. Instances: \
         `fairshare_bench::multi_instance::cluster(n, {SERVERS}, {RESOURCES}, seed {SEED})`: {SERVERS} \
         heterogeneous servers in racks of 10, {RESOURCES} resources, weights 1/2/4, task limits on about half \
         the users, placement constraints (1-3 racks) on about two thirds. Time: the policy alone, wall clock; \
         RSS: the peak resident memory of the process running the point (instance included). A point over \
         {} s is stopped and the larger sizes of that policy are not run. Exponent: least-squares slope of \
         log t against log n over the measured points.\n\n",
        load_average(),
        cap.as_secs()
    ));
    md.push_str("| policy | n = 100 | n = 300 | n = 1,000 | n = 3,000 | exponent | CPU at 1,000 | RSS at 1,000 |\n");
    md.push_str("|---|---|---|---|---|---|---|---|\n");
    for policy in POLICIES {
        let mut cells = Vec::new();
        let mut points = Vec::new();
        let mut rss_1000 = None;
        let mut cpu_1000 = None;
        let mut stopped = false;
        for n in SIZES {
            if stopped {
                cells.push("not run".to_string());
                continue;
            }
            eprintln!("{policy} at {n} users...");
            let outcome = measure(policy, n, cap);
            if let Outcome::Done { seconds, cpu, rss_mb } = outcome {
                points.push((n, seconds));
                if n == 1_000 {
                    rss_1000 = Some(rss_mb);
                    cpu_1000 = Some(cpu);
                }
            } else {
                stopped = true;
            }
            cells.push(cell(&outcome, cap));
        }
        let slope = exponent(&points).map_or("-".to_string(), |e| format!("{e:.2}"));
        let rss = rss_1000.map_or("-".to_string(), |r| format!("{r:.0} MB"));
        let cpu = cpu_1000.map_or("-".to_string(), |c| format!("{c:.2} s"));
        md.push_str(&format!("| {policy} | {} | {slope} | {cpu} | {rss} |\n", cells.join(" | ")));
    }
    eprintln!("ddrf at {DDRF_USERS} users...");
    let ddrf = measure("ddrf", DDRF_USERS, cap);
    let ddrf_line = match &ddrf {
        Outcome::Done { seconds, cpu, rss_mb } => {
            format!("{seconds:.3} s ({cpu:.2} s of CPU), peak RSS {rss_mb:.0} MB (without the per-arrival steps)")
        }
        other => cell(other, cap),
    };
    md.push_str(&format!("\n`ddrf` at {DDRF_USERS} users, {SERVERS} servers: {ddrf_line}.\n"));
    md.push_str(
        "\nTargets (issue 17): each of the five at most 5 s and 2 GB at 1,000 users; `ddrf` at 10,000 users \
         within 10 s and 1 GB.\n",
    );
    print!("{md}");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("MULTI_SCALE.md");
    if let Err(e) = std::fs::write(&path, &md) {
        eprintln!("multi_scale: cannot write {}: {e}", path.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
