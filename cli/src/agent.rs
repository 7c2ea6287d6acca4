//! `fairshare agent`: a pool's agent on this host (`fairshare-cluster`'s); this module
//! turns the flags into its options and prints the "listening" line.

use std::process::ExitCode;
use std::time::Duration;

use fairshare_cluster::agent::{self, AgentOptions};

use crate::flags::AgentArgs;
use crate::output::outln;
use crate::CliError;

/// Runs `fairshare agent` until SIGTERM or SIGINT.
pub fn run(args: AgentArgs) -> Result<ExitCode, CliError> {
    let options = AgentOptions {
        endpoints: args.etcd,
        pool: args.pool,
        host: args.host,
        dev: args.dev,
        timeout: Duration::from_millis(args.etcd_timeout_ms),
        listen: args.listen,
    };
    agent::run(options, |addr| {
        let _ = outln!("fairshare agent: listening on {addr}");
    })?;
    Ok(ExitCode::SUCCESS)
}
