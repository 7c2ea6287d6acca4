//! # fairshare: the command
//!
//! `fairshare demo` runs the built-in comparison, `fairshare replay` runs a demand
//! trace through a policy, `fairshare selftest` checks a backend against golden
//! vectors. Exit status: 0 success, 1 selftest mismatch, 2 bad input (the message
//! names the file, line, field and value; no partial output file is left behind).

mod demo;
mod hdl;
mod input;
mod output;
mod replay;
mod selftest;

use clap::{Parser, Subcommand};
use fairshare::{Alpha, Credits, Policy};
use std::path::PathBuf;
use std::process::ExitCode;

/// Everything that stops a command. All of these exit with status 2.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A problem in an input file or in the flags.
    #[error(transparent)]
    Input(#[from] input::InputError),
    /// The pool rejected the configuration or a quantum.
    #[error(transparent)]
    Pool(#[from] fairshare::Error),
    /// Flags that do not fit.
    #[error("{0}")]
    Usage(String),
    /// Reading or writing a file failed.
    #[error("{0}")]
    Io(String),
}

#[derive(Parser)]
#[command(
    name = "fairshare",
    version,
    about = "Fair allocation of a shared pool every quantum: Karma, max-min, strict partitioning"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compare Karma, max-min and strict partitioning on a built-in bursty workload, and
    /// show the paper's worked example.
    Demo {
        /// Users in the pool.
        #[arg(long, default_value_t = 100)]
        users: usize,
        /// Quanta to run.
        #[arg(long, default_value_t = 900)]
        quanta: usize,
        /// Fair share of every user, in slices.
        #[arg(long, default_value_t = 10)]
        fair_share: u64,
        /// Guaranteed fraction of the fair share, in [0, 1].
        #[arg(long, default_value = "0.5", value_parser = parse_alpha)]
        alpha: Alpha,
        /// Initial credits of every user.
        #[arg(long, default_value_t = 900_000)]
        initial_credits: i64,
        /// Workload seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print JSON on stdout instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Run a demand trace (CSV `quantum,user,demand`) through a policy and write
    /// per-quantum results (CSV `quantum,user,demand,alloc,credits`).
    Replay {
        /// The trace file.
        trace: PathBuf,
        /// Policy to run.
        #[arg(long, default_value = "karma", value_parser = parse_policy)]
        policy: Policy,
        /// Fair share of every user of the trace (instead of --users).
        #[arg(long, conflicts_with = "users", required_unless_present = "users")]
        fair_share: Option<u64>,
        /// Guaranteed fraction of the fair share, in [0, 1] (with --fair-share).
        #[arg(long, default_value = "0.5", value_parser = parse_alpha, conflicts_with = "users")]
        alpha: Alpha,
        /// Users file, CSV `user,fair_share,guaranteed` (instead of --fair-share/--alpha).
        #[arg(long)]
        users: Option<PathBuf>,
        /// Initial credits of every user (an integer, a decimal or a fraction).
        #[arg(long, default_value = "900000", value_parser = parse_credits, allow_negative_numbers = true)]
        initial_credits: Credits,
        /// Output CSV file (written atomically); stdout when absent.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the summary (on stderr) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The hardware engine: Verilog export and cycles per quantum in simulation.
    Hdl {
        #[command(subcommand)]
        command: HdlCommand,
    },
    /// Check a backend against a golden-vector file; exit status 1 on any mismatch.
    Selftest {
        /// Vector file in the schema of `vectors/karma_paper.json`.
        #[arg(long)]
        vectors: PathBuf,
        /// Backend to check.
        #[arg(long, value_enum, default_value = "software")]
        backend: selftest::Backend,
    },
}

#[derive(Subcommand)]
enum HdlCommand {
    /// Write the Verilog (module `top`) of the device or the bare engine, and a shell
    /// with packed ports next to it.
    Verilog {
        /// Users the engine must hold (rounded up to 64, 256, 1024 or 4096).
        #[arg(long)]
        users: usize,
        /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
        #[arg(long)]
        lanes: usize,
        /// Top level: the device (AXI4-Lite + AXI-Stream) or the bare engine.
        #[arg(long, value_enum, default_value = "device")]
        top: hdl::Top,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the device register map as markdown (`driver/REGISTERS.md`).
    Regs,
    /// Run Karma quanta through the simulated engine (each checked against the
    /// software) and print the cycles per quantum.
    Cycles {
        /// Users in the pool (1 to 4096).
        #[arg(long)]
        users: usize,
        /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
        #[arg(long)]
        lanes: usize,
        /// Quanta to run.
        #[arg(long, default_value_t = 20)]
        quanta: usize,
        /// Workload seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn parse_alpha(s: &str) -> Result<Alpha, String> {
    s.parse().map_err(|e: fairshare::Error| e.to_string())
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
}

fn parse_credits(s: &str) -> Result<Credits, String> {
    s.parse().map_err(|e: fairshare::credits::ParseCreditsError| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo { users, quanta, fair_share, alpha, initial_credits, seed, json } => {
            demo::run(&demo::DemoRequest { users, quanta, fair_share, alpha, initial_credits, seed, json })
                .map(|_| true)
        }
        Command::Replay { trace, policy, fair_share, alpha, users, initial_credits, out, json } => {
            let users = match (&users, fair_share) {
                (Some(path), _) => input::UserSource::File(path),
                (None, Some(fair_share)) => input::UserSource::Uniform { fair_share, alpha },
                (None, None) => unreachable!("clap requires --fair-share or --users"),
            };
            let req =
                replay::ReplayRequest { trace: &trace, users, initial_credits, policy, out: out.as_deref(), json };
            replay::run(&req).map(|_| true)
        }
        Command::Hdl { command: HdlCommand::Regs } => {
            hdl::regs();
            Ok(true)
        }
        Command::Hdl { command: HdlCommand::Verilog { users, lanes, top, out } } => {
            hdl::verilog(users, lanes, top, &out).map(|_| true)
        }
        Command::Hdl { command: HdlCommand::Cycles { users, lanes, quanta, seed, json } } => {
            hdl::cycles(users, lanes, quanta, seed, json).map(|_| true)
        }
        Command::Selftest { vectors, backend } => selftest::run(&vectors, backend),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::from(2)
        }
    }
}
