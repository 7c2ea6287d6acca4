//! `fairshare controller`: one replica of a pool kept in etcd; the service's API and
//! pool with `fairshare-cluster`'s replica as its store. This module turns the flags
//! into their options and prints the "listening" line.

use std::process::ExitCode;
use std::time::Duration;

use fairshare_cluster::{EtcdOptions, EtcdReplica};
use fairshare_service::server::{serve, ServeOptions};

use crate::flags::ControllerArgs;
use crate::output::outln;
use crate::CliError;

/// Runs `fairshare controller` until SIGTERM or SIGINT.
pub fn run(args: ControllerArgs) -> Result<ExitCode, CliError> {
    let replica = EtcdReplica::connect(EtcdOptions {
        endpoints: args.etcd,
        pool: args.pool,
        timeout: Duration::from_millis(args.etcd_timeout_ms),
    })?;
    let options = ServeOptions {
        config: args.config,
        listen: args.listen,
        state: None,
        backend: args.device.backend.clone(),
        device: args.device.options(),
        clock: args.clock.into(),
        insecure: args.insecure,
        accept_config_changes: false,
        replica: Some(Box::new(replica)),
    };
    serve(options, |addr| {
        let _ = outln!("fairshare controller: listening on {addr}");
    })?;
    Ok(ExitCode::SUCCESS)
}
