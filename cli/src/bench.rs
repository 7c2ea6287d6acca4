//! `fairshare bench`: quick measurements from the command line (the criterion benches
//! and the bench report in `bench/` are the thorough ones). The measuring itself lives
//! in `fairshare-bench`; this module parses nothing and prints the result.

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
