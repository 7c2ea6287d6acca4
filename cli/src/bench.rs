//! `fairshare bench`: quick measurements from the command line (the criterion benches
//! and the bench report in `bench/` are the thorough ones). The measuring itself lives
//! in `fairshare-bench`; this module parses nothing and prints the result.

use std::process::ExitCode;
use std::time::Duration;

use fairshare_bench::offload::{self, OffloadRun, Spread};
use fairshare_bench::serve::ServeRun;
use fairshare_bench::software::{self, SoftwareRun};

use crate::flags::{
    BenchArgs, BenchCommand, BenchDemands, BenchEnforceArgs, BenchOffloadArgs, BenchServeArgs, BenchSoftwareArgs,
};
use crate::output::{out, outln, table};
use crate::CliError;

/// Runs `fairshare bench`.
pub fn run(args: BenchArgs) -> Result<ExitCode, CliError> {
    match args.command {
        BenchCommand::Software(BenchSoftwareArgs {
            users,
            quanta,
            policy,
            implementation,
            demands: BenchDemands { workload, seed },
            json,
        }) => software(SoftwareRun { users, quanta, policy, implementation, workload, seed }, json),
        BenchCommand::Offload(BenchOffloadArgs {
            users,
            quanta,
            backend,
            verify,
            demands: BenchDemands { workload, seed },
            json,
        }) => offload(&OffloadRun { users, quanta, backend, verify, workload, seed }, json),
        BenchCommand::Enforce(BenchEnforceArgs { tenants, json, inside }) => enforce(tenants, json, inside),
        BenchCommand::Serve(BenchServeArgs { tenants, period_ms, readers, metrics_readers, secs, json }) => {
            let period = Duration::from_millis(period_ms);
            serve(&ServeRun { tenants, period, readers, metrics_readers, duration: Duration::from_secs(secs) }, json)
        }
        #[cfg(feature = "cluster")]
        BenchCommand::Controller(crate::flags::BenchControllerArgs { etcd, tenants, quanta, json }) => {
            controller(etcd, tenants as usize, quanta as usize, json)
        }
        #[cfg(feature = "cluster")]
        BenchCommand::Cluster(crate::flags::BenchClusterArgs { etcd, hosts, tenants, quanta, quantum_ms, json }) => {
            let run = fairshare_cluster::fleet::FleetRun {
                endpoints: etcd,
                hosts: hosts as usize,
                tenants: tenants as usize,
                quanta: quanta as usize,
                period: Duration::from_millis(quantum_ms),
            };
            cluster(&run, json)
        }
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Prints `report` as pretty JSON.
fn print_json(report: &impl serde::Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(report).map_err(CliError::json("the bench's report"))?;
    outln!("{text}")
}

/// `fairshare bench software`: the median and p99 time per quantum of one policy.
fn software(run: SoftwareRun, json: bool) -> Result<(), CliError> {
    if run.users == 0 || run.quanta == 0 {
        return Err(CliError::Usage(format!("--users {} --quanta {}: both must be at least 1", run.users, run.quanta)));
    }
    let r = software::measure(run)?;
    if json {
        return print_json(&r);
    }
    let row = vec![
        run.policy.to_string(),
        run.implementation.name().to_string(),
        run.workload.to_string(),
        run.users.to_string(),
        run.quanta.to_string(),
        format!("{:.0}", r.median_ns),
        format!("{:.0}", r.p99_ns),
        format!("{:.2}", r.ns_per_user),
    ];
    out!(
        "{}",
        table(
            &["policy", "implementation", "workload", "users", "quanta", "median ns", "p99 ns", "ns per user"],
            &[row]
        )
    )?;
    Ok(())
}

/// `fairshare bench offload`: where the time of an offloaded quantum goes.
fn offload(run: &OffloadRun, json: bool) -> Result<(), CliError> {
    if run.users == 0 || run.quanta == 0 {
        return Err(CliError::Usage(format!("--users {} --quanta {}: both must be at least 1", run.users, run.quanta)));
    }
    let r = offload::measure(run).map_err(CliError::BenchOffload)?;
    if json {
        return print_json(&r);
    }
    let us = |x: f64| format!("{:.2}", x / 1e3);
    let rows: Vec<Vec<String>> = [
        ("software (batched, alone)", r.software_ns),
        ("round trip (doorbell to results)", r.round_trip_ns),
        ("device (its own report)", r.device_ns),
        ("host overhead (round trip - device)", r.host_overhead_ns),
        ("critical path (what the caller waits for)", r.critical_path_ns),
        ("beyond the device (critical path - device)", r.beyond_device_ns),
        ("verifier (one quantum's exact check)", r.verifier_ns),
    ]
    .into_iter()
    .map(|(what, s): (&str, Spread)| vec![what.to_string(), us(s.median), us(s.p99)])
    .collect();
    outln!(
        "{} users, {} quanta on {}, --verify {}, {} workload, {} cores",
        run.users,
        run.quanta,
        run.backend,
        run.verify,
        run.workload,
        r.cores
    )?;
    out!("{}", table(&["per quantum", "median us", "p99 us"], &rows))?;
    outln!("beyond the device / software (medians): {:.3}", r.beyond_device_ns.median / r.software_ns.median)?;
    outln!(
        "mismatches: {}; device quanta: {}; fallback: {}",
        r.mismatches,
        r.device_quanta,
        r.fallback.as_deref().unwrap_or("none")
    )?;
    if r.checked_while_waiting + r.checked_by_thread + r.checked_on_demand > 0 {
        outln!(
            "quanta checked by the caller while it waited: {}; by the verifier thread: {}; on demand: {}",
            r.checked_while_waiting,
            r.checked_by_thread,
            r.checked_on_demand
        )?;
    }
    Ok(())
}

/// `fairshare bench serve`: a live pool's clock under readers.
fn serve(run: &ServeRun, json: bool) -> Result<(), CliError> {
    if run.tenants == 0 || run.period.is_zero() || run.duration.is_zero() {
        return Err(CliError::Usage("--tenants, --period-ms and --secs must be at least 1".into()));
    }
    let bin = std::env::current_exe().map_err(CliError::OwnPath)?;
    let r = fairshare_bench::serve::measure(&bin, run).map_err(CliError::BenchServe)?;
    if json {
        return print_json(&r);
    }
    outln!(
        "{} tenants, a quantum every {} ms, {} readers of /v1/allocations and {} of /metrics for {:.1} s",
        r.tenants,
        r.period_ms,
        r.readers,
        r.metrics_readers,
        r.secs
    )?;
    outln!("ticks: {}; with a quantum: {} ({:.2}%)", r.ticks, r.quanta, 100.0 * r.quanta_share)?;
    let rows = vec![
        vec![
            "/v1/allocations".to_string(),
            r.allocations_reads.to_string(),
            format!("{:.2}", r.allocations_p50_ms),
            format!("{:.2}", r.allocations_p99_ms),
            r.allocations_bytes.to_string(),
        ],
        vec![
            "/metrics".to_string(),
            r.metrics_reads.to_string(),
            format!("{:.2}", r.metrics_p50_ms),
            format!("{:.2}", r.metrics_p99_ms),
            r.metrics_bytes.to_string(),
        ],
    ];
    out!("{}", table(&["read", "reads", "p50 ms", "p99 ms", "bytes"], &rows))?;
    Ok(())
}

/// `fairshare bench enforce`: the HTB enforcer's costs at N tenants.
/// `bench controller`: a quantum's commit to etcd at N tenants.
#[cfg(feature = "cluster")]
fn controller(etcd: Vec<String>, tenants: usize, quanta: usize, json: bool) -> Result<(), CliError> {
    let r = fairshare_cluster::bench::measure(etcd, tenants, quanta).map_err(CliError::BenchController)?;
    if json {
        return print_json(&r);
    }
    outln!("{} tenants, {} quanta committed to etcd", r.tenants, r.quanta)?;
    let rows = vec![
        vec!["commit p50".to_string(), format!("{:.2} ms", r.commit_p50_ms)],
        vec!["commit p99".to_string(), format!("{:.2} ms", r.commit_p99_ms)],
        vec!["bytes per quantum".to_string(), format!("{:.0}", r.bytes_per_quantum)],
        vec!["shards per quantum".to_string(), r.shards_per_quantum.to_string()],
        vec!["whole quantum p50".to_string(), format!("{:.2} ms", r.quantum_p50_ms)],
    ];
    out!("{}", table(&["what", "value"], &rows))
}

/// `bench cluster`: the leader and H simulated agents on one etcd.
#[cfg(feature = "cluster")]
fn cluster(run: &fairshare_cluster::fleet::FleetRun, json: bool) -> Result<(), CliError> {
    let r = fairshare_cluster::fleet::measure(run).map_err(CliError::BenchCluster)?;
    if json {
        return print_json(&r);
    }
    outln!(
        "{} hosts, {} tenants, {} quanta of {:.0} ms; every quantum reached at least {} agents",
        r.hosts,
        r.tenants,
        r.quanta,
        r.period_ms,
        r.agents_reached_min
    )?;
    let row = |what: &str, p50: f64, p99: f64| vec![what.to_string(), format!("{p50:.1}"), format!("{p99:.1}")];
    let rows = vec![
        row("collect the demands", r.collect_p50_ms, r.collect_p99_ms),
        row("allocate", r.allocate_p50_ms, r.allocate_p99_ms),
        row("commit", r.commit_p50_ms, r.commit_p99_ms),
        row("publish", r.publish_p50_ms, r.publish_p99_ms),
        row("fan-out to the last agent", r.fanout_p50_ms, r.fanout_p99_ms),
        row("whole quantum", r.quantum_p50_ms, r.quantum_p99_ms),
    ];
    out!("{}", table(&["phase", "p50 ms", "p99 ms"], &rows))?;
    outln!(
        "bytes through etcd per quantum: {:.0} (state {:.0}); quanta over the period: {}",
        r.bytes_per_quantum,
        r.state_bytes_per_quantum,
        r.quanta_over_period
    )
}

fn enforce(tenants: usize, json: bool, inside: bool) -> Result<(), CliError> {
    if !(1..=60_000).contains(&tenants) {
        return Err(CliError::Usage(format!("--tenants {tenants}: from 1 to 60000")));
    }
    if inside {
        let r = fairshare_bench::enforce::inside(tenants).map_err(CliError::BenchEnforce)?;
        return print_json(&r);
    }
    let bin = std::env::current_exe().map_err(CliError::OwnPath)?;
    let r = fairshare_bench::enforce::measure(&bin, tenants).map_err(CliError::BenchEnforce)?;
    if json {
        return print_json(&r);
    }
    outln!("{} tenants on a veth pair, HTB over netlink", r.tenants)?;
    let rows = vec![
        vec!["install the tree".to_string(), format!("{:.2} ms", r.install_ms)],
        vec!["one quantum's rate changes (netlink)".to_string(), format!("{:.2} ms", r.apply_ms)],
        vec!["the same through tc -batch".to_string(), format!("{:.2} ms", r.apply_tc_batch_ms)],
        vec!["read every counter".to_string(), format!("{:.2} ms", r.counters_ms)],
        vec!["CPU per live quantum (measured demand)".to_string(), format!("{:.2} ms", r.quantum_cpu_ms)],
        vec!["live quanta on time".to_string(), format!("{:.1}%", 100.0 * r.quanta_on_time)],
        vec!["send a packet: first tenant".to_string(), format!("{:.0} ns", r.classify_ns.first)],
        vec!["send a packet: last tenant".to_string(), format!("{:.0} ns", r.classify_ns.last)],
    ];
    out!("{}", table(&["what", "time"], &rows))
}
