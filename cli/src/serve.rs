//! `fairshare serve`: the live pool; everything is `fairshare-service`'s, this module
//! turns the flags into its options and prints the "listening" line.

use std::process::ExitCode;

use fairshare_service::server::{serve, ServeOptions};

use crate::flags::ServeArgs;
use crate::output::outln;
use crate::CliError;

/// Runs `fairshare serve` until SIGTERM or SIGINT.
pub fn run(args: ServeArgs) -> Result<ExitCode, CliError> {
    let options = ServeOptions {
        config: args.config,
        listen: args.listen,
        state: args.state,
        backend: args.device.backend.clone(),
        device: args.device.options(),
        clock: args.clock.into(),
        insecure: args.insecure,
        accept_config_changes: args.accept_config_changes,
        replica: None,
    };
    // A closed stdout after the line is no reason to stop serving.
    serve(options, |addr| {
        let _ = outln!("fairshare serve: listening on {addr}");
    })?;
    Ok(ExitCode::SUCCESS)
}
