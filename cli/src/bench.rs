//! `fairshare bench`: quick measurements from the command line (the criterion benches
//! and the bench report in `bench/` are the thorough ones). The measuring itself lives
//! in `fairshare-bench`; this module parses nothing and prints the result.

use fairshare_bench::offload::{self, OffloadRun, Spread};
use fairshare_bench::software::{self, SoftwareRun};

use crate::output::table;
use crate::CliError;

/// `fairshare bench software`: the median and p99 time per quantum of one policy.
pub fn software(run: SoftwareRun, json: bool) -> Result<(), CliError> {
    if run.users == 0 || run.quanta == 0 {
        return Err(CliError::Usage(format!("--users {} --quanta {}: both must be at least 1", run.users, run.quanta)));
    }
    let r = software::measure(run)?;
    if json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| CliError::Io(e.to_string()))?;
        println!("{text}");
        return Ok(());
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
    print!(
        "{}",
        table(
            &["policy", "implementation", "workload", "users", "quanta", "median ns", "p99 ns", "ns per user"],
            &[row]
        )
    );
    Ok(())
}

/// `fairshare bench offload`: where the time of an offloaded quantum goes.
pub fn offload(run: &OffloadRun, json: bool) -> Result<(), CliError> {
    if run.users == 0 || run.quanta == 0 {
        return Err(CliError::Usage(format!("--users {} --quanta {}: both must be at least 1", run.users, run.quanta)));
    }
    let r = offload::measure(run).map_err(|e| CliError::Usage(format!("bench offload: {e}")))?;
    if json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| CliError::Io(e.to_string()))?;
        println!("{text}");
        return Ok(());
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
    println!(
        "{} users, {} quanta on {}, --verify {}, {} workload, {} cores",
        run.users, run.quanta, run.backend, run.verify, run.workload, r.cores
    );
    print!("{}", table(&["per quantum", "median us", "p99 us"], &rows));
    println!("beyond the device / software (medians): {:.3}", r.beyond_device_ns.median / r.software_ns.median);
    println!(
        "mismatches: {}; device quanta: {}; fallback: {}",
        r.mismatches,
        r.device_quanta,
        r.fallback.as_deref().unwrap_or("none")
    );
    if r.checked_while_waiting + r.checked_by_thread + r.checked_on_demand > 0 {
        println!(
            "quanta checked by the caller while it waited: {}; by the verifier thread: {}; on demand: {}",
            r.checked_while_waiting, r.checked_by_thread, r.checked_on_demand
        );
    }
    Ok(())
}

/// `fairshare bench serve`: a live pool's clock under readers.
pub fn serve(run: &fairshare_bench::serve::ServeRun, json: bool) -> Result<(), CliError> {
    if run.tenants == 0 || run.period.is_zero() || run.duration.is_zero() {
        return Err(CliError::Usage("--tenants, --period-ms and --secs must be at least 1".into()));
    }
    let bin = std::env::current_exe().map_err(|e| CliError::Io(format!("finding this binary: {e}")))?;
    let r = fairshare_bench::serve::measure(&bin, run).map_err(|e| CliError::Usage(format!("bench serve: {e}")))?;
    if json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| CliError::Io(e.to_string()))?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "{} tenants, a quantum every {} ms, {} readers of /v1/allocations and {} of /metrics for {:.1} s",
        r.tenants, r.period_ms, r.readers, r.metrics_readers, r.secs
    );
    println!("ticks: {}; with a quantum: {} ({:.2}%)", r.ticks, r.quanta, 100.0 * r.quanta_share);
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
    print!("{}", table(&["read", "reads", "p50 ms", "p99 ms", "bytes"], &rows));
    Ok(())
}
