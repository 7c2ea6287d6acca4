//! # fairshare: the command
//!
//! `fairshare demo` runs the built-in comparison, `compare` writes the evaluation
//! report, `replay` runs a demand trace through a policy, `selftest` checks a backend
//! against golden vectors, `multi` runs a multi-resource policy on an instance, `serve`
//! runs a pool live, `controller` runs a replica of a pool kept in etcd and `agent`
//! its enforcer on each host (both with the `cluster` feature), `device-sim` serves an
//! emulated device, `hdl` exports and simulates the engine, `bench` measures. Exit status: 0 success, 1 selftest mismatch, 2 bad
//! input or an unreachable backend (the message names the file, line, field and value;
//! no partial output file is left behind), 3 a selftest in which every case was
//! skipped (nothing was tested).
//!
//! The flags are [`flags`]'s; each command is a module with `run(flags) ->
//! Result<ExitCode, CliError>`; `main` only parses, dispatches and maps errors to exit
//! statuses.

#[cfg(feature = "cluster")]
mod agent;
mod backend;
mod bench;
mod compare;
#[cfg(feature = "cluster")]
mod controller;
mod demo;
mod device_sim;
mod error;
mod flags;
mod hdl;
mod input;
mod multi;
mod output;
mod replay;
mod selftest;
mod serve;

use std::process::ExitCode;

use clap::Parser;
pub use error::CliError;
use flags::Command;

fn main() -> ExitCode {
    let result = match flags::Cli::parse().command {
        Command::Demo(args) => demo::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Multi(args) => multi::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Hdl(args) => hdl::run(args),
        Command::Selftest(args) => selftest::run(args),
        Command::Serve(args) => serve::run(args),
        #[cfg(feature = "cluster")]
        Command::Controller(args) => controller::run(args),
        #[cfg(feature = "cluster")]
        Command::Agent(args) => agent::run(args),
        Command::DeviceSim(args) => device_sim::run(args),
    };
    match result {
        Ok(code) => code,
        // The reader of a pipe went away (as `head` does): a quiet end, as for `cat`.
        Err(CliError::ClosedStdout) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::from(2)
        }
    }
}
