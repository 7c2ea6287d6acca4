//! `fairshare bench`: quick measurements from the command line (the criterion benches
//! and the bench report in `bench/` are the thorough ones). The measuring itself lives
//! in `fairshare-bench`; this module parses nothing and prints the result.

use fairshare::{Implementation, Policy};
use fairshare_bench::software::{self, BenchWorkload};

use crate::output::table;
use crate::CliError;

/// `fairshare bench software`: the median and p99 time per quantum of one policy.
pub fn software(
    users: usize,
    quanta: usize,
    policy: Policy,
    implementation: Implementation,
    workload: BenchWorkload,
    seed: u64,
    json: bool,
) -> Result<(), CliError> {
    if users == 0 || quanta == 0 {
        return Err(CliError::Usage(format!("--users {users} --quanta {quanta}: both must be at least 1")));
    }
    let r = software::measure(users, quanta, policy, implementation, workload, seed)?;
    if json {
        let text = serde_json::to_string_pretty(&r).map_err(|e| CliError::Io(e.to_string()))?;
        println!("{text}");
        return Ok(());
    }
    let row = vec![
        r.policy.to_string(),
        r.implementation.to_string(),
        r.workload.to_string(),
        r.users.to_string(),
        r.quanta.to_string(),
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
