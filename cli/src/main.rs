//! # fairshare: the command
//!
//! `fairshare demo` runs the built-in comparison, `fairshare compare` writes the
//! evaluation report, `fairshare replay` runs a demand
//! trace through a policy, `fairshare selftest` checks a backend against golden
//! vectors, `fairshare multi` runs a multi-resource policy on an instance, `fairshare
//! serve` runs a pool live, `fairshare device-sim` serves an emulated device,
//! `fairshare hdl` exports and simulates the engine, `fairshare bench` times the
//! software. Exit status: 0 success, 1 selftest mismatch, 2 bad input or an unreachable backend (the message
//! names the file, line, field and value; no partial output file is left behind), 3 a selftest in which
//! every case was skipped (nothing was tested).

mod backend;
mod bench;
mod compare;
mod demo;
mod hdl;
mod input;
mod multi;
mod output;
mod replay;
mod selftest;

use clap::{Parser, Subcommand};
use fairshare::offload::Verify;
use fairshare::{Alpha, Credits, Policy};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    /// A device backend could not be opened.
    #[error(transparent)]
    Backend(#[from] fairshare_backends::BackendError),
    /// No engine of the asked shape, or no Verilog for it.
    #[error(transparent)]
    Hdl(#[from] fairshare_hdl::catalog::HdlError),
    /// A report could not be written, or its destination is not one to replace.
    #[error(transparent)]
    Report(#[from] fairshare_report::ReportError),
    /// The credit ledger (`--state`) could not be opened or written.
    #[error(transparent)]
    Ledger(#[from] fairshare_ledger::LedgerError),
    /// The live service could not start or failed.
    #[error(transparent)]
    Service(#[from] fairshare_service::ServiceError),
    /// The emulator could not start.
    #[error(transparent)]
    Emulator(#[from] fairshare_emulator::EmulatorError),
    /// Standard output was closed by its reader (`fairshare replay t.csv | head`): the
    /// command ends quietly with status 0.
    #[error("standard output is closed")]
    ClosedStdout,
}

/// A closed standard output (the reader of a pipe went away, as `head` does) ends the
/// command quietly with status 0, as it does for `cat` or `grep`. Rust ignores SIGPIPE,
/// so a write to the closed pipe fails with `BrokenPipe`, and `println!` panics with
/// "failed printing to stdout"; this hook turns exactly that panic into a quiet exit.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info)
    }));
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
        #[command(flatten)]
        pool: PoolArgs,
        /// Guaranteed fraction of the fair share, in [0, 1].
        #[arg(long, default_value = "0.5", value_parser = parse_alpha)]
        alpha: Alpha,
        #[command(flatten)]
        device: DeviceArgs,
        /// Print JSON on stdout instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Run several policies (and backends) on one workload side by side and write a report
    /// folder: summary.md, CSV files, and plots as SVG and PNG.
    Compare {
        #[command(flatten)]
        pool: PoolArgs,
        /// Karma's guaranteed fractions, comma-separated; the first is the one the
        /// per-user plots and the conformance experiment use.
        #[arg(long, default_value = "0.5,1,0.75,0.25,0", value_delimiter = ',', value_parser = parse_alpha)]
        alpha: Vec<Alpha>,
        /// Workload: bursty, steady, on-off, heavy-tailed, diurnal or figure-2.
        #[arg(long, default_value = "bursty", value_parser = parse_workload)]
        workload: fairshare_sim::workload::Workload,
        /// Policies, comma-separated.
        #[arg(long, default_value = "karma,maxmin,strict", value_delimiter = ',', value_parser = parse_policy)]
        policies: Vec<Policy>,
        /// Backends, comma-separated: software, literal, rtl-sim, emulator:PATH or
        /// vfio:PCI-ADDRESS. Each runs every policy; the first also runs the conformance
        /// experiment.
        #[arg(long, default_value = "software", value_delimiter = ',', value_parser = parse_backend)]
        backend: Vec<backend::Backend>,
        #[command(flatten)]
        device: VerifyArgs,
        /// The report folder (replaced only if it holds an earlier report).
        #[arg(long, default_value = "report")]
        out: PathBuf,
        /// Write the CSV files and summary only (the plots need a TrueType font).
        #[arg(long)]
        no_plots: bool,
        /// Print the summary as JSON on stdout instead of a table.
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
        #[command(flatten)]
        device: DeviceArgs,
        /// Print the summary as JSON on stdout (the rows then go only to --out).
        #[arg(long)]
        json: bool,
        /// A row for every user in every quantum; without it, a quantum has rows only for
        /// the users with a line in it, an allocation, or a change of credits.
        #[arg(long)]
        dense: bool,
        /// Keep the run's credits in a durable ledger in this folder, committed after every
        /// quantum; rerun with the same folder to resume after the last committed quantum.
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Run a multi-resource policy (DRF, DRFH, PS-DSF...) on a JSON instance: servers with
    /// capacities, users with per-task demands; prints tasks and dominant share per user.
    Multi {
        /// Policy: drf, drfh, drfh-firstfit, drfh-bestfit, psdsf-rdm, psdsf-tdm, tsf, cdrf, ddrf, bbf.
        #[arg(long, value_parser = parse_multi_policy)]
        policy: fairshare_multi::MultiPolicy,
        /// The instance file (JSON: resources, servers, users).
        #[arg(long)]
        instance: PathBuf,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// ddrf: also print the allocation after each arrival (output quadratic in the
        /// users; without it only the final allocation, in memory linear in the users).
        #[arg(long)]
        steps: bool,
    },
    /// Quick measurements: time per quantum of the software policies.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// The hardware engine: Verilog export, cycles per quantum and waveforms in
    /// simulation.
    Hdl {
        #[command(subcommand)]
        command: HdlCommand,
    },
    /// Check a backend against a golden-vector file; exit status 1 on any mismatch.
    Selftest {
        /// Vector file in the schema of `vectors/karma_paper.json` (default: the
        /// built-in `vectors/karma_paper.json` and `vectors/karma_random.json`).
        #[arg(long)]
        vectors: Option<PathBuf>,
        /// Backend to check: software, literal, rtl-sim, emulator:PATH or vfio:PCI-ADDRESS.
        #[arg(long, default_value = "software", value_parser = parse_backend)]
        backend: backend::Backend,
        /// With a device backend, how long to wait for a completion (milliseconds).
        #[arg(long, default_value_t = 2000)]
        timeout_ms: u64,
    },
    /// Run a pool live: quanta on a clock, demands over an HTTP JSON API, credits in a
    /// durable ledger (--state), Prometheus metrics on /metrics (docs/serve.md).
    Serve {
        /// The configuration file (TOML: pool, demand, enforce, tenants).
        #[arg(long)]
        config: PathBuf,
        /// Where the API listens: ADDRESS:PORT (loopback by default; port 0 picks a free
        /// port) or unix:PATH. An address beyond loopback needs [auth] and [tls] in the
        /// configuration, or --insecure.
        #[arg(long, default_value = "127.0.0.1:9464")]
        listen: fairshare_service::server::Listen,
        /// Keep the credits in a durable ledger in this folder; a restart resumes from it.
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// What drives quanta: the wall clock (one per period), or `manual` (one per
        /// POST /v1/quantum).
        #[arg(long, default_value = "wall", value_parser = ["wall", "manual"])]
        clock: String,
        /// Serve on an address beyond loopback without [auth] and [tls] (anyone who
        /// reaches the port may change the pool).
        #[arg(long)]
        insecure: bool,
        /// Resume a ledger (--state) made with another configuration, applying the
        /// file's: new shares, policy, tenants joining and leaving (each logged).
        #[arg(long)]
        accept_config_changes: bool,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Serve an emulated device over a shared-memory file (the backend
    /// `emulator:PATH`) until killed: the register map of abi/REGISTERS.md, each
    /// quantum computed by the RustHDL engine or its software model.
    DeviceSim {
        /// The Unix socket to serve the device's shared memory on. An existing path is
        /// replaced only if it is the socket of an emulator that is gone.
        #[arg(long)]
        shm: PathBuf,
        /// What computes the quanta.
        /// `rtl` or `software`.
        #[arg(long, default_value = "software", value_parser = parse_model)]
        model: fairshare_emulator::Model,
        /// Users the device must hold (rounded up to 64, 256, 1024 or 4096).
        #[arg(long, default_value_t = 4096)]
        users: usize,
        /// Engine lanes: 1, 2, 4, 8, 16 or 32.
        #[arg(long, default_value_t = 16)]
        lanes: usize,
        /// Inject a fault, KIND@QUANTUM with KIND late, wrong-seq, corrupt, swap or crash
        /// (repeatable; for testing the host's fallback).
        #[arg(long = "fault", value_parser = parse_fault)]
        faults: Vec<fairshare_emulator::Fault>,
        /// How late a `late` completion is (milliseconds).
        #[arg(long, default_value_t = 3000)]
        late_ms: u64,
    },
}

/// The simulated pool and workload of `demo` and `compare`.
#[derive(clap::Args)]
struct PoolArgs {
    /// Users in the pool.
    #[arg(long, default_value_t = 100)]
    users: usize,
    /// Quanta to run.
    #[arg(long, default_value_t = 900)]
    quanta: usize,
    /// Fair share of every user, in slices.
    #[arg(long, default_value_t = 10)]
    fair_share: u64,
    /// Initial credits of every user.
    #[arg(long, default_value_t = 900_000, allow_negative_numbers = true)]
    initial_credits: i64,
    /// Workload seed (`compare` also draws its non-conformant half with it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Where `demo` and `replay` run their quanta.
#[derive(clap::Args)]
struct DeviceArgs {
    /// Where quanta run: software, literal, rtl-sim, emulator:PATH or vfio:PCI-ADDRESS.
    /// Device backends are verified every quantum and fall back to software on a fault.
    #[arg(long, default_value = "software", value_parser = parse_backend)]
    backend: backend::Backend,
    #[command(flatten)]
    verify: VerifyArgs,
}

impl DeviceArgs {
    /// How the device backend is used.
    fn options(&self) -> backend::DeviceOptions {
        self.verify.options()
    }
}

/// How a device backend's results are verified, and how long to wait for it.
#[derive(clap::Args)]
struct VerifyArgs {
    /// With a device backend: sync (the software recomputes every quantum before its
    /// result is used), async (the invariants are checked at once, the exact
    /// recomputation runs on a verifier thread), sample:K (one quantum in K is
    /// recomputed) or invariants (no recomputation). See docs/device.md.
    #[arg(long, default_value_t = Verify::DEVICE_DEFAULT, value_parser = parse_verify)]
    verify: Verify,
    /// Same as --verify invariants.
    #[arg(long, conflicts_with = "verify")]
    no_verify: bool,
    /// With a device backend, how long to wait for a completion (milliseconds).
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
}

impl VerifyArgs {
    fn options(&self) -> backend::DeviceOptions {
        let verify = if self.no_verify { Verify::Invariants } else { self.verify };
        backend::DeviceOptions::new(verify, self.timeout_ms)
    }
}

fn parse_verify(s: &str) -> Result<Verify, String> {
    s.parse().map_err(|e: fairshare::offload::BadVerify| e.0)
}

/// The demands a bench runs.
#[derive(clap::Args)]
struct BenchDemands {
    /// Workload: bursty (fair share 10) or steady-on-off (fair share 100).
    #[arg(long, default_value = "bursty", value_parser = parse_bench_workload)]
    workload: fairshare_bench::software::BenchWorkload,
    /// Workload seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Start `fairshare serve` (wall clock, random demands) and read it hard: threads
    /// reading /v1/allocations and /metrics on new connections; print the share of
    /// ticks that ran a quantum and the readers' latencies (docs/serve.md).
    Serve {
        /// Tenants in the pool.
        #[arg(long, default_value_t = 10_000)]
        tenants: usize,
        /// The quantum's period in milliseconds.
        #[arg(long, default_value_t = 20)]
        period_ms: u64,
        /// Threads reading /v1/allocations.
        #[arg(long, default_value_t = 20)]
        readers: usize,
        /// Threads reading /metrics.
        #[arg(long, default_value_t = 4)]
        metrics_readers: usize,
        /// Seconds the readers read.
        #[arg(long, default_value_t = 30)]
        secs: u64,
        /// Print JSON (fields ticks, quanta, quanta_share, allocations_p99_ms...).
        #[arg(long)]
        json: bool,
    },
    /// Time quanta of a software policy in an equal-share pool (alpha 1/2, after 20
    /// warm-up quanta) and print the median and p99 per quantum and per user.
    Software {
        /// Users in the pool.
        #[arg(long)]
        users: usize,
        /// Timed quanta.
        #[arg(long, default_value_t = 100)]
        quanta: usize,
        /// Policy: karma, maxmin or strict.
        #[arg(long, default_value = "karma", value_parser = parse_policy)]
        policy: Policy,
        /// Implementation: batched (radix selection), search (binary search, the
        /// batched form before it) or literal (the slice-by-slice oracle).
        #[arg(long, default_value = "batched", value_parser = parse_implementation)]
        implementation: fairshare::Implementation,
        #[command(flatten)]
        demands: BenchDemands,
        /// Print JSON (fields median_ns, p99_ns, ns_per_user...).
        #[arg(long)]
        json: bool,
    },
    /// Time Karma quanta offloaded to a device and the software alone on the same
    /// demands, in alternating blocks of 250 quanta, after a warm-up (20 quanta, at least 300 ms): median and p99 per quantum of the software alone, the
    /// round trip, the device's own time, the host's overhead, the caller's critical
    /// path and the verifier's time (docs/performance.md).
    Offload {
        /// Users in the pool.
        #[arg(long)]
        users: usize,
        /// Timed quanta.
        #[arg(long, default_value_t = 1000)]
        quanta: usize,
        /// The device: emulator (an emulator with the engine's software model, started
        /// on a thread here), emulator-rtl (the same with the RustHDL engine), rtl-sim,
        /// emulator:PATH (a running `fairshare device-sim`) or vfio:PCI-ADDRESS.
        #[arg(long, default_value = "emulator", value_parser = parse_offload_device)]
        backend: fairshare_bench::offload::Device,
        /// sync, async, sample:K or invariants (see `--verify` of replay).
        #[arg(long, default_value_t = Verify::DEVICE_DEFAULT, value_parser = parse_verify)]
        verify: Verify,
        #[command(flatten)]
        demands: BenchDemands,
        /// Print JSON (fields software_ns, round_trip_ns, device_ns, host_overhead_ns,
        /// critical_path_ns, verifier_ns, each with median and p99; mismatches,
        /// fallback, cores).
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum HdlCommand {
    /// Write the Verilog (module `top`, or `--module NAME`) of the device or the bare
    /// engine, and a shell with packed ports next to it.
    Verilog {
        /// Users the engine must hold (rounded up to 64, 256, 1024 or 4096).
        #[arg(long)]
        users: usize,
        /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
        #[arg(long)]
        lanes: usize,
        /// Top level: the device (AXI4-Lite + AXI-Stream), the bare engine, or the
        /// weighted count block (what a weighted lane would add; measured, not in the engine).
        #[arg(long, value_enum, default_value = "device")]
        top: hdl::Top,
        /// Name of the exported top module (a Verilog identifier); the shell
        /// instantiates it under this name.
        #[arg(long, default_value = "top", value_name = "NAME")]
        module: String,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the device register map as markdown (`abi/REGISTERS.md`).
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
    /// Run Karma quanta through the simulated engine (each checked against the
    /// software) and write a waveform (VCD) of its signals, named as in the Verilog.
    Trace {
        /// Users in the pool (1 to 4096).
        #[arg(long)]
        users: usize,
        /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
        #[arg(long)]
        lanes: usize,
        /// Quanta to run.
        #[arg(long, default_value_t = 2)]
        quanta: usize,
        /// Workload seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The VCD file to write (replaced whole, or left as it was on an error).
        #[arg(long)]
        out: PathBuf,
    },
}

fn parse_backend(s: &str) -> Result<backend::Backend, String> {
    s.parse().map_err(|e: fairshare_backends::BadBackend| e.to_string())
}

fn parse_model(s: &str) -> Result<fairshare_emulator::Model, String> {
    s.parse().map_err(|e: fairshare_emulator::SpecError| e.to_string())
}

fn parse_fault(s: &str) -> Result<fairshare_emulator::Fault, String> {
    s.parse().map_err(|e: fairshare_emulator::SpecError| e.to_string())
}

fn parse_alpha(s: &str) -> Result<Alpha, String> {
    s.parse().map_err(|e: fairshare::Error| e.to_string())
}

fn parse_workload(s: &str) -> Result<fairshare_sim::workload::Workload, String> {
    s.parse()
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
}

fn parse_implementation(s: &str) -> Result<fairshare::Implementation, String> {
    s.parse()
}

fn parse_offload_device(s: &str) -> Result<fairshare_bench::offload::Device, String> {
    s.parse()
}

fn parse_bench_workload(s: &str) -> Result<fairshare_bench::software::BenchWorkload, String> {
    s.parse()
}

fn parse_multi_policy(s: &str) -> Result<fairshare_multi::MultiPolicy, String> {
    s.parse()
}

fn parse_credits(s: &str) -> Result<Credits, String> {
    s.parse().map_err(|e: fairshare::credits::ParseCreditsError| e.to_string())
}

/// `fairshare device-sim`: creates the file, prints `ready` on stdout, serves until
/// killed; an injected crash ends the process with status 70.
fn device_sim(
    shm: &std::path::Path,
    model: fairshare_emulator::Model,
    users: usize,
    lanes: usize,
    faults: Vec<fairshare_emulator::Fault>,
    late_ms: u64,
) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut emu = fairshare_emulator::Emulator::create(shm, users, lanes, model, faults)?;
    emu.late_by = Duration::from_millis(late_ms);
    eprintln!(
        "device-sim: {model:?} model, {lanes} lanes, up to {} users, serving the socket {} (stop with Ctrl-C or SIGTERM)",
        emu.max_users(),
        shm.display()
    );
    // SIGINT and SIGTERM stop serving; the emulator then removes its socket. Installed
    // before `ready`, so that a signal sent as soon as it is read ends it cleanly.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, std::sync::Arc::clone(&stop))
            .map_err(|e| CliError::Io(format!("installing the handler of signal {signal}: {e}")))?;
    }
    println!("ready");
    std::io::stdout().flush().map_err(|e| CliError::Io(e.to_string()))?;
    if let Err(fairshare_emulator::Stopped::Crashed) = emu.serve(&stop) {
        // As a device that dies: no clean-up, the process ends at once.
        std::process::exit(70);
    }
    Ok(())
}

fn main() -> ExitCode {
    quiet_on_closed_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo { pool: PoolArgs { users, quanta, fair_share, initial_credits, seed }, alpha, device, json } => {
            let (backend, device) = (device.backend.clone(), device.options());
            let req =
                demo::DemoRequest { users, quanta, fair_share, alpha, initial_credits, seed, backend, device, json };
            demo::run(&req).map(|_| ExitCode::SUCCESS)
        }
        Command::Compare {
            pool: PoolArgs { users, quanta, fair_share, initial_credits, seed },
            alpha,
            workload,
            policies,
            backend,
            device,
            out,
            no_plots,
            json,
        } => {
            let setup = fairshare_sim::compare::Setup {
                users,
                quanta,
                fair_share,
                alphas: alpha,
                initial_credits,
                seed,
                workload,
                policies,
                conformance: true,
            };
            let device = device.options();
            let req = compare::CompareRequest { setup, backends: backend, device, out, plots: !no_plots, json };
            compare::run(&req).map(|_| ExitCode::SUCCESS)
        }
        Command::Replay {
            trace,
            policy,
            fair_share,
            alpha,
            users,
            initial_credits,
            out,
            device,
            json,
            dense,
            state,
        } => {
            let users = match (&users, fair_share) {
                (Some(path), _) => input::UserSource::File(path),
                (None, Some(fair_share)) => input::UserSource::Uniform { fair_share, alpha },
                (None, None) => unreachable!("clap requires --fair-share or --users"),
            };
            let req = replay::ReplayRequest {
                trace: &trace,
                users,
                initial_credits,
                policy,
                out: out.as_deref(),
                backend: device.backend.clone(),
                device: device.options(),
                json,
                dense,
                state: state.as_deref(),
            };
            replay::run(&req).map(|_| ExitCode::SUCCESS)
        }
        Command::Serve { config, listen, state, clock, insecure, accept_config_changes, device } => {
            let clock = if clock == "manual" {
                fairshare_service::http::Clock::Manual
            } else {
                fairshare_service::http::Clock::Wall
            };
            let options = fairshare_service::server::ServeOptions {
                config,
                listen,
                state,
                backend: device.backend.clone(),
                device: device.options(),
                clock,
                insecure,
                accept_config_changes,
            };
            fairshare_service::server::serve(options, |addr| {
                println!("fairshare serve: listening on {addr}");
                let _ = std::io::Write::flush(&mut std::io::stdout());
            })
            .map(|_| ExitCode::SUCCESS)
            .map_err(CliError::from)
        }
        Command::DeviceSim { shm, model, users, lanes, faults, late_ms } => {
            device_sim(&shm, model, users, lanes, faults, late_ms).map(|_| ExitCode::SUCCESS)
        }
        Command::Multi { policy, instance, json, steps } => {
            multi::run(policy, &instance, json, steps).map(|_| ExitCode::SUCCESS)
        }
        Command::Bench {
            command:
                BenchCommand::Software {
                    users,
                    quanta,
                    policy,
                    implementation,
                    demands: BenchDemands { workload, seed },
                    json,
                },
        } => {
            let run = fairshare_bench::software::SoftwareRun { users, quanta, policy, implementation, workload, seed };
            bench::software(run, json).map(|_| ExitCode::SUCCESS)
        }
        Command::Bench {
            command:
                BenchCommand::Offload { users, quanta, backend, verify, demands: BenchDemands { workload, seed }, json },
        } => {
            let run = fairshare_bench::offload::OffloadRun { users, quanta, backend, verify, workload, seed };
            bench::offload(&run, json).map(|_| ExitCode::SUCCESS)
        }
        Command::Bench {
            command: BenchCommand::Serve { tenants, period_ms, readers, metrics_readers, secs, json },
        } => {
            let run = fairshare_bench::serve::ServeRun {
                tenants,
                period: Duration::from_millis(period_ms),
                readers,
                metrics_readers,
                duration: Duration::from_secs(secs),
            };
            bench::serve(&run, json).map(|_| ExitCode::SUCCESS)
        }
        Command::Hdl { command: HdlCommand::Regs } => {
            hdl::regs();
            Ok(ExitCode::SUCCESS)
        }
        Command::Hdl { command: HdlCommand::Verilog { users, lanes, top, module, out } } => {
            hdl::verilog(users, lanes, top, &module, &out).map(|_| ExitCode::SUCCESS)
        }
        Command::Hdl { command: HdlCommand::Cycles { users, lanes, quanta, seed, json } } => {
            hdl::cycles(users, lanes, quanta, seed, json).map(|_| ExitCode::SUCCESS)
        }
        Command::Hdl { command: HdlCommand::Trace { users, lanes, quanta, seed, out } } => {
            hdl::trace(users, lanes, quanta, seed, &out).map(|_| ExitCode::SUCCESS)
        }
        Command::Selftest { vectors, backend, timeout_ms } => {
            selftest::run(vectors.as_deref(), &backend, Duration::from_millis(timeout_ms))
                .map(selftest::Verdict::exit_code)
        }
    };
    match result {
        Ok(code) => code,
        Err(CliError::ClosedStdout) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fairshare: error: {e}");
            ExitCode::from(2)
        }
    }
}
