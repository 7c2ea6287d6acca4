//! Every flag of every command, as clap types: values are parsed by clap (each type's
//! own `FromStr` or `ValueEnum`), so a bad value is refused before a command runs. The
//! command modules take these structs and nothing else from the command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use fairshare::offload::Verify;
use fairshare::{Alpha, Credits, Policy};
use fairshare_backends::{Backend, DeviceOptions};

/// What drives `serve`'s quanta.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Clock {
    /// One quantum per period of the configuration.
    Wall,
    /// One quantum per `POST /v1/quantum`.
    Manual,
}

impl From<Clock> for fairshare_service::http::Clock {
    fn from(c: Clock) -> Self {
        match c {
            Clock::Wall => fairshare_service::http::Clock::Wall,
            Clock::Manual => fairshare_service::http::Clock::Manual,
        }
    }
}

/// Which top level `hdl verilog` exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Top {
    /// The device: engine behind AXI4-Lite registers and AXI-Stream ports (shell
    /// module `fairshare_device`), what a PCIe shell instantiates.
    Device,
    /// The bare engine with its own ports (shell module `engine_shell`).
    Engine,
    /// Not a top level of the engine: the weighted count block, what a weighted lane
    /// would add per probe (shell module `weighted_shell`), exported to be measured.
    /// `--users` and `--lanes` are not checked and do not change it.
    WeightedCount,
}

/// The command line.
#[derive(Parser)]
#[command(
    name = "fairshare",
    version,
    about = "Fair allocation of a shared pool every quantum: Karma, max-min, strict partitioning"
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Every command.
#[derive(Subcommand)]
pub enum Command {
    /// Compare Karma, max-min and strict partitioning on a built-in bursty workload, and
    /// show the paper's worked example.
    Demo(DemoArgs),
    /// Run several policies (and backends) on one workload side by side and write a report
    /// folder: summary.md, CSV files, and plots as SVG and PNG.
    Compare(CompareArgs),
    /// Run a demand trace (CSV `quantum,user,demand`) through a policy and write
    /// per-quantum results (CSV `quantum,user,demand,alloc,credits`).
    Replay(ReplayArgs),
    /// Run a multi-resource policy (DRF, DRFH, PS-DSF...) on a JSON instance: servers with
    /// capacities, users with per-task demands; prints tasks and dominant share per user.
    Multi(MultiArgs),
    /// Quick measurements: time per quantum of the software policies.
    Bench(BenchArgs),
    /// The hardware engine: Verilog export, cycles per quantum and waveforms in
    /// simulation.
    Hdl(HdlArgs),
    /// Check a backend against a golden-vector file; exit status 1 on any mismatch.
    Selftest(SelftestArgs),
    /// Run a pool live: quanta on a clock, demands over an HTTP JSON API, credits in a
    /// durable ledger (--state), Prometheus metrics on /metrics (docs/serve.md).
    Serve(ServeArgs),
    /// Run one replica of a pool kept in etcd (2 or 3 replicas make it survive its
    /// host): the API of serve; the leader, elected on etcd, runs quanta and commits
    /// each to etcd exactly once (docs/controller.md). Built with `--features cluster`.
    #[cfg(feature = "cluster")]
    Controller(ControllerArgs),
    /// Run a pool's agent on this host (one per host, needs CAP_NET_ADMIN): it shapes
    /// the host's traffic to its part of each quantum (watched in etcd), publishes the
    /// tenants' demands measured here, and holds the last allocation when the leader
    /// is silent (docs/agents.md). Built with `--features cluster`.
    #[cfg(feature = "cluster")]
    Agent(AgentArgs),
    /// Serve an emulated device over a shared-memory file (the backend
    /// `emulator:PATH`) until killed: the register map of abi/REGISTERS.md, each
    /// quantum computed by the RustHDL engine or its software model.
    DeviceSim(DeviceSimArgs),
}

/// The simulated pool and workload of `demo` and `compare`.
#[derive(clap::Args)]
pub struct PoolArgs {
    /// Users in the pool.
    #[arg(long, default_value_t = 100)]
    pub users: usize,
    /// Quanta to run.
    #[arg(long, default_value_t = 900)]
    pub quanta: usize,
    /// Fair share of every user, in slices.
    #[arg(long, default_value_t = 10)]
    pub fair_share: u64,
    /// Initial credits of every user.
    #[arg(long, default_value_t = 900_000, allow_negative_numbers = true)]
    pub initial_credits: i64,
    /// Workload seed (`compare` also draws its non-conformant half with it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// Where `demo` and `replay` run their quanta.
#[derive(clap::Args)]
pub struct DeviceArgs {
    /// Where quanta run: software, literal, rtl-sim, emulator:PATH or vfio:PCI-ADDRESS.
    /// Device backends are verified every quantum and fall back to software on a fault.
    #[arg(long, default_value = "software")]
    pub backend: Backend,
    #[command(flatten)]
    pub verify: VerifyArgs,
}

impl DeviceArgs {
    /// How the device backend is used.
    pub fn options(&self) -> DeviceOptions {
        self.verify.options()
    }
}

/// How a device backend's results are verified, and how long to wait for it.
#[derive(clap::Args)]
pub struct VerifyArgs {
    /// With a device backend: sync (the software recomputes every quantum before its
    /// result is used), async (the invariants are checked at once, the exact
    /// recomputation runs on a verifier thread), sample:K (one quantum in K is
    /// recomputed) or invariants (no recomputation). See docs/device.md.
    #[arg(long, default_value_t = Verify::DEVICE_DEFAULT)]
    pub verify: Verify,
    /// Same as --verify invariants.
    #[arg(long, conflicts_with = "verify")]
    pub no_verify: bool,
    /// With a device backend, how long to wait for a completion (milliseconds).
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
}

impl VerifyArgs {
    /// How the device backend is used.
    pub fn options(&self) -> DeviceOptions {
        let verify = if self.no_verify { Verify::Invariants } else { self.verify };
        DeviceOptions::new(verify, self.timeout_ms)
    }
}

/// The demands a bench runs.
#[derive(clap::Args)]
pub struct BenchDemands {
    /// Workload: bursty (fair share 10) or steady-on-off (fair share 100).
    #[arg(long, default_value = "bursty")]
    pub workload: fairshare_bench::software::BenchWorkload,
    /// Workload seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// `fairshare bench`'s commands.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Make two network namespaces joined by a veth pair, install N tenants' HTB tree
    /// and time it: install, one quantum's rate changes (netlink and tc -batch), one
    /// read of the counters, a live quantum's CPU, and a packet's classification at the
    /// first and the last tenant (needs root; docs/performance.md).
    Enforce(BenchEnforceArgs),
    /// Start `fairshare serve` (wall clock, random demands) and read it hard: threads
    /// reading /v1/allocations and /metrics on new connections; print the share of
    /// ticks that ran a quantum and the readers' latencies (docs/serve.md).
    Serve(BenchServeArgs),
    /// Time quanta of a software policy in an equal-share pool (alpha 1/2, after 20
    /// warm-up quanta) and print the median and p99 per quantum and per user.
    Software(BenchSoftwareArgs),
    /// Time Karma quanta offloaded to a device and the software alone on the same
    /// demands, in alternating blocks of 250 quanta, after a warm-up (20 quanta, at least 300 ms): median and p99 per quantum of the software alone, the
    /// round trip, the device's own time, the host's overhead, the caller's critical
    /// path and the verifier's time (docs/performance.md).
    Offload(BenchOffloadArgs),
    /// Run Q quanta of N tenants on a live pool that leads on the given etcd (a pool
    /// name of its own, deleted after) and time each quantum's commit: median and p99,
    /// bytes and shards per quantum (docs/performance.md). Built with `--features
    /// cluster`.
    #[cfg(feature = "cluster")]
    Controller(BenchControllerArgs),
    /// The leader of a pool against etcd with H simulated agents in this process:
    /// demand collection, allocation, commit, fan-out to the last agent, bytes per
    /// quantum (docs/performance.md#cluster).
    #[cfg(feature = "cluster")]
    Cluster(BenchClusterArgs),
}

/// `fairshare bench cluster`'s flags.
#[cfg(feature = "cluster")]
#[derive(clap::Args)]
pub struct BenchClusterArgs {
    /// etcd's client URLs, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub etcd: Vec<String>,
    /// Simulated hosts, each an agent with its lease and watch.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub hosts: u64,
    /// Tenants in the pool (each on 1 to 3 hosts).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub tenants: u64,
    /// Quanta to measure.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub quanta: u64,
    /// The quantum's period, milliseconds.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub quantum_ms: u64,
    /// Print JSON (collect_p99_ms, allocate_p99_ms, commit_p99_ms, fanout_p99_ms,
    /// quantum_p99_ms, bytes_per_quantum and the rest).
    #[arg(long)]
    pub json: bool,
}

/// `fairshare bench controller`'s flags.
#[cfg(feature = "cluster")]
#[derive(clap::Args)]
pub struct BenchControllerArgs {
    /// etcd's client URLs, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub etcd: Vec<String>,
    /// Tenants in the pool.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub tenants: u64,
    /// Quanta to commit.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub quanta: u64,
    /// Print JSON (tenants, quanta, commit_p50_ms, commit_p99_ms, bytes_per_quantum,
    /// shards_per_quantum, quantum_p50_ms).
    #[arg(long)]
    pub json: bool,
}

/// `fairshare hdl`'s commands.
#[derive(Subcommand)]
pub enum HdlCommand {
    /// Write the Verilog (module `top`, or `--module NAME`) of the device or the bare
    /// engine, and a shell with packed ports next to it.
    Verilog(HdlVerilogArgs),
    /// Print the device register map as markdown (`abi/REGISTERS.md`).
    Regs,
    /// Run Karma quanta through the simulated engine (each checked against the
    /// software) and print the cycles per quantum.
    Cycles(HdlCyclesArgs),
    /// Run Karma quanta through the simulated engine (each checked against the
    /// software) and write a waveform (VCD) of its signals, named as in the Verilog.
    Trace(HdlTraceArgs),
}

/// `fairshare demo`'s flags.
#[derive(clap::Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Guaranteed fraction of the fair share, in [0, 1].
    #[arg(long, default_value = "0.5")]
    pub alpha: Alpha,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Print JSON on stdout instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// `fairshare compare`'s flags.
#[derive(clap::Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub pool: PoolArgs,
    /// Karma's guaranteed fractions, comma-separated; the first is the one the
    /// per-user plots and the conformance experiment use.
    #[arg(long, default_value = "0.5,1,0.75,0.25,0", value_delimiter = ',')]
    pub alpha: Vec<Alpha>,
    /// Workload: bursty, steady, on-off, heavy-tailed, diurnal, production or figure-2.
    #[arg(long, default_value = "bursty")]
    pub workload: fairshare_sim::workload::Workload,
    /// Policies, comma-separated.
    #[arg(long, default_value = "karma,maxmin,strict", value_delimiter = ',')]
    pub policies: Vec<Policy>,
    /// Backends, comma-separated: software, literal, rtl-sim, emulator:PATH or
    /// vfio:PCI-ADDRESS. Each runs every policy; the first also runs the conformance
    /// experiment.
    #[arg(long, default_value = "software", value_delimiter = ',')]
    pub backend: Vec<Backend>,
    #[command(flatten)]
    pub device: VerifyArgs,
    /// The report folder (replaced only if it holds an earlier report).
    #[arg(long, default_value = "report")]
    pub out: PathBuf,
    /// Write the CSV files and summary only (the plots need a TrueType font).
    #[arg(long)]
    pub no_plots: bool,
    /// Print the summary as JSON on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Run every workload but figure-2 (bursty, steady, on-off, heavy-tailed, diurnal,
    /// production) with these policies and alphas on the software allocator, and write
    /// one table of them all (matrix.csv, summary.md, fairness_matrix.svg/png) instead
    /// of one workload's report.
    #[arg(long, conflicts_with_all = ["workload", "backend"])]
    pub matrix: bool,
}

/// `fairshare replay`'s flags.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// Policy to run.
    #[arg(long, default_value = "karma")]
    pub policy: Policy,
    /// Fair share of every user of the trace (instead of --users).
    #[arg(long, conflicts_with = "users", required_unless_present = "users")]
    pub fair_share: Option<u64>,
    /// Guaranteed fraction of the fair share, in [0, 1] (with --fair-share).
    #[arg(long, default_value = "0.5", conflicts_with = "users")]
    pub alpha: Alpha,
    /// Users file, CSV `user,fair_share,guaranteed` (instead of --fair-share/--alpha).
    #[arg(long)]
    pub users: Option<PathBuf>,
    /// Initial credits of every user (an integer, a decimal or a fraction).
    #[arg(long, default_value = "900000", allow_negative_numbers = true)]
    pub initial_credits: Credits,
    /// Output CSV file (written atomically); stdout when absent.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Print the summary as JSON on stdout (the rows then go only to --out).
    #[arg(long)]
    pub json: bool,
    /// A row for every user in every quantum; without it, a quantum has rows only for
    /// the users with a line in it, an allocation, or a change of credits.
    #[arg(long)]
    pub dense: bool,
    /// Keep the run's credits in a durable ledger in this folder, committed after every
    /// quantum; rerun with the same folder to resume after the last committed quantum.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
}

/// `fairshare multi`'s flags.
#[derive(clap::Args)]
pub struct MultiArgs {
    /// Policy: drf, drfh, drfh-firstfit, drfh-bestfit, psdsf-rdm, psdsf-tdm, tsf, cdrf, ddrf, bbf.
    #[arg(long)]
    pub policy: fairshare_multi::MultiPolicy,
    /// The instance file (JSON: resources, servers, users).
    #[arg(long)]
    pub instance: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// ddrf: also print the allocation after each arrival (output quadratic in the
    /// users; without it only the final allocation, in memory linear in the users).
    #[arg(long)]
    pub steps: bool,
}

/// `fairshare bench`'s flags.
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// `fairshare hdl`'s flags.
#[derive(clap::Args)]
pub struct HdlArgs {
    #[command(subcommand)]
    pub command: HdlCommand,
}

/// `fairshare selftest`'s flags.
#[derive(clap::Args)]
pub struct SelftestArgs {
    /// Vector file in the schema of `vectors/karma_paper.json` (default: the
    /// built-in `vectors/karma_paper.json` and `vectors/karma_random.json`).
    #[arg(long)]
    pub vectors: Option<PathBuf>,
    /// Backend to check: software, literal, rtl-sim, emulator:PATH or vfio:PCI-ADDRESS.
    #[arg(long, default_value = "software")]
    pub backend: Backend,
    /// With a device backend, how long to wait for a completion (milliseconds).
    #[arg(long, default_value_t = 2000)]
    pub timeout_ms: u64,
}

/// `fairshare serve`'s flags.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The configuration file (TOML: pool, demand, enforce, tenants).
    #[arg(long)]
    pub config: PathBuf,
    /// Where the API listens: ADDRESS:PORT (loopback by default; port 0 picks a free
    /// port) or unix:PATH. An address beyond loopback needs [auth] and [tls] in the
    /// configuration, or --insecure.
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub listen: fairshare_service::server::Listen,
    /// Keep the credits in a durable ledger in this folder; a restart resumes from it.
    #[arg(long, value_name = "DIR")]
    pub state: Option<PathBuf>,
    /// What drives quanta: the wall clock (one per period), or `manual` (one per
    /// POST /v1/quantum).
    #[arg(long, value_enum, default_value_t = Clock::Wall)]
    pub clock: Clock,
    /// Serve on an address beyond loopback without [auth] and [tls] (anyone who
    /// reaches the port may change the pool).
    #[arg(long)]
    pub insecure: bool,
    /// Resume a ledger (--state) made with another configuration, applying the
    /// file's: new shares, policy, tenants joining and leaving (each logged).
    #[arg(long)]
    pub accept_config_changes: bool,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `fairshare controller`'s flags.
#[cfg(feature = "cluster")]
#[derive(clap::Args)]
pub struct ControllerArgs {
    /// The configuration file (as serve's; enforcement is the agents', not the
    /// controller's).
    #[arg(long)]
    pub config: PathBuf,
    /// etcd's client URLs, comma-separated (`http://10.0.0.1:2379,http://10.0.0.2:2379`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub etcd: Vec<String>,
    /// The pool's name: its keys in etcd are under /fairshare/NAME/.
    #[arg(long, default_value = "default")]
    pub pool: String,
    /// The longest one call to etcd may take, milliseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub etcd_timeout_ms: u64,
    /// Where the API listens (as serve's --listen); this address is what the other
    /// replicas name as the leader's.
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub listen: fairshare_service::server::Listen,
    /// What drives quanta on the leader: the wall clock, or `manual` (POST /v1/quantum
    /// to the leader).
    #[arg(long, value_enum, default_value_t = Clock::Wall)]
    pub clock: Clock,
    /// Serve on an address beyond loopback without [auth] and [tls].
    #[arg(long)]
    pub insecure: bool,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `fairshare agent`'s flags.
#[cfg(feature = "cluster")]
#[derive(clap::Args)]
pub struct AgentArgs {
    /// etcd's client URLs, comma-separated.
    #[arg(long, value_delimiter = ',', required = true)]
    pub etcd: Vec<String>,
    /// The pool's name (as the controller's --pool).
    #[arg(long, default_value = "default")]
    pub pool: String,
    /// This host's name in the pool (its keys demand/HOST and alloc/HOST).
    #[arg(long)]
    pub host: String,
    /// The network device whose egress is shaped.
    #[arg(long)]
    pub dev: String,
    /// Where /healthz, /metrics and /v1/status answer.
    #[arg(long, default_value = "127.0.0.1:9465")]
    pub listen: std::net::SocketAddr,
    /// The longest one call to etcd may take, milliseconds.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub etcd_timeout_ms: u64,
}

/// `fairshare device-sim`'s flags.
#[derive(clap::Args)]
pub struct DeviceSimArgs {
    /// The Unix socket to serve the device's shared memory on. An existing path is
    /// replaced only if it is the socket of an emulator that is gone.
    #[arg(long)]
    pub shm: PathBuf,
    /// What computes the quanta.
    /// `rtl` or `software`.
    #[arg(long, default_value = "software")]
    pub model: fairshare_emulator::Model,
    /// Users the device must hold (rounded up to 64, 256, 1024 or 4096).
    #[arg(long, default_value_t = 4096)]
    pub users: usize,
    /// Engine lanes: 1, 2, 4, 8, 16 or 32.
    #[arg(long, default_value_t = 16)]
    pub lanes: usize,
    /// Inject a fault, KIND@QUANTUM with KIND late, wrong-seq, corrupt, swap or crash
    /// (repeatable; for testing the host's fallback).
    #[arg(long = "fault")]
    pub faults: Vec<fairshare_emulator::Fault>,
    /// How late a `late` completion is (milliseconds).
    #[arg(long, default_value_t = 3000)]
    pub late_ms: u64,
}

/// `fairshare bench serve`'s flags.
#[derive(clap::Args)]
pub struct BenchServeArgs {
    /// Tenants in the pool.
    #[arg(long, default_value_t = 10_000)]
    pub tenants: usize,
    /// The quantum's period in milliseconds.
    #[arg(long, default_value_t = 20)]
    pub period_ms: u64,
    /// Threads reading /v1/allocations.
    #[arg(long, default_value_t = 20)]
    pub readers: usize,
    /// Threads reading /metrics.
    #[arg(long, default_value_t = 4)]
    pub metrics_readers: usize,
    /// Seconds the readers read.
    #[arg(long, default_value_t = 30)]
    pub secs: u64,
    /// Print JSON (fields ticks, quanta, quanta_share, allocations_p99_ms...).
    #[arg(long)]
    pub json: bool,
}

/// `fairshare bench software`'s flags.
#[derive(clap::Args)]
pub struct BenchSoftwareArgs {
    /// Users in the pool.
    #[arg(long)]
    pub users: usize,
    /// Timed quanta.
    #[arg(long, default_value_t = 100)]
    pub quanta: usize,
    /// Policy: karma, maxmin or strict.
    #[arg(long, default_value = "karma")]
    pub policy: Policy,
    /// Implementation: batched (radix selection), search (binary search, the
    /// batched form before it) or literal (the slice-by-slice oracle).
    #[arg(long, default_value = "batched")]
    pub implementation: fairshare::Implementation,
    #[command(flatten)]
    pub demands: BenchDemands,
    /// Print JSON (fields median_ns, p99_ns, ns_per_user...).
    #[arg(long)]
    pub json: bool,
}

/// `fairshare bench offload`'s flags.
#[derive(clap::Args)]
pub struct BenchOffloadArgs {
    /// Users in the pool.
    #[arg(long)]
    pub users: usize,
    /// Timed quanta.
    #[arg(long, default_value_t = 1000)]
    pub quanta: usize,
    /// The device: emulator (an emulator with the engine's software model, started
    /// on a thread here), emulator-rtl (the same with the RustHDL engine), rtl-sim,
    /// emulator:PATH (a running `fairshare device-sim`) or vfio:PCI-ADDRESS.
    #[arg(long, default_value = "emulator")]
    pub backend: fairshare_bench::offload::Device,
    /// sync, async, sample:K or invariants (see `--verify` of replay).
    #[arg(long, default_value_t = Verify::DEVICE_DEFAULT)]
    pub verify: Verify,
    #[command(flatten)]
    pub demands: BenchDemands,
    /// Print JSON (fields software_ns, round_trip_ns, device_ns, host_overhead_ns,
    /// critical_path_ns, verifier_ns, each with median and p99; mismatches,
    /// fallback, cores).
    #[arg(long)]
    pub json: bool,
}

/// `fairshare hdl verilog`'s flags.
#[derive(clap::Args)]
pub struct HdlVerilogArgs {
    /// Users the engine must hold (rounded up to 64, 256, 1024 or 4096).
    #[arg(long)]
    pub users: usize,
    /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
    #[arg(long)]
    pub lanes: usize,
    /// Top level: the device (AXI4-Lite + AXI-Stream), the bare engine, or the
    /// weighted count block (what a weighted lane would add; measured, not in the engine).
    #[arg(long, value_enum, default_value = "device")]
    pub top: Top,
    /// Name of the exported top module (a Verilog identifier); the shell
    /// instantiates it under this name.
    #[arg(long, default_value = "top", value_name = "NAME")]
    pub module: String,
    /// Output file.
    #[arg(long)]
    pub out: PathBuf,
}

/// `fairshare hdl cycles`'s flags.
#[derive(clap::Args)]
pub struct HdlCyclesArgs {
    /// Users in the pool (1 to 4096).
    #[arg(long)]
    pub users: usize,
    /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
    #[arg(long)]
    pub lanes: usize,
    /// Quanta to run.
    #[arg(long, default_value_t = 20)]
    pub quanta: usize,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `fairshare hdl trace`'s flags.
#[derive(clap::Args)]
pub struct HdlTraceArgs {
    /// Users in the pool (1 to 4096).
    #[arg(long)]
    pub users: usize,
    /// Parallel lanes: 1, 2, 4, 8, 16 or 32.
    #[arg(long)]
    pub lanes: usize,
    /// Quanta to run.
    #[arg(long, default_value_t = 2)]
    pub quanta: usize,
    /// Workload seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The VCD file to write (replaced whole, or left as it was on an error).
    #[arg(long)]
    pub out: PathBuf,
}

/// `fairshare bench enforce`'s flags.
#[derive(clap::Args)]
pub struct BenchEnforceArgs {
    /// Tenants in the tree.
    #[arg(long)]
    pub tenants: usize,
    /// Print JSON (install_ms, apply_ms, apply_tc_batch_ms, counters_ms, quantum_cpu_ms, quanta_on_time, classify_ns.first and .last).
    #[arg(long)]
    pub json: bool,
    /// Run the measurement here (inside the namespace the bench made).
    #[arg(long, hide = true)]
    pub inside: bool,
}
