//! Everything that stops a command, typed: each variant names what failed (a file, a
//! flag, a device, the JSON being written) and keeps the error underneath as its
//! source. All of them exit with status 2, but a closed stdout, which ends the command
//! quietly with status 0.

use std::io;
use std::path::PathBuf;

/// Everything that stops a command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A problem in an input file or in the flags.
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    /// The pool rejected the configuration or a quantum.
    #[error(transparent)]
    Pool(#[from] fairshare::Error),
    /// Flags that do not fit together, or a value out of its range: the message names
    /// the flag and the value.
    #[error("{0}")]
    Usage(String),
    /// An operation on a file failed.
    #[error("{what} {}: {source}", path.display())]
    File {
        /// What was being done (`reading`, `writing`, `cutting ... back`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A file whose content is not what it must be (the message says why).
    #[error("{}: {reason}", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Writing to standard output failed (other than its reader going away).
    #[error("writing stdout: {0}")]
    Stdout(#[source] io::Error),
    /// Encoding a result as JSON failed.
    #[error("encoding {what} as JSON: {source}")]
    Json {
        /// What was encoded.
        what: &'static str,
        /// serde_json's error.
        #[source]
        source: serde_json::Error,
    },
    /// A signal handler could not be installed.
    #[error("installing the handler of signal {signal}: {source}")]
    Signal {
        /// The signal's number.
        signal: i32,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The path of this program could not be found (a bench starts it again).
    #[error("finding this program's path: {0}")]
    OwnPath(#[source] io::Error),
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
    /// A multi-resource instance is not valid, or its policy failed.
    #[error("{}: {source}", path.display())]
    Multi {
        /// The instance file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: fairshare_multi::MultiError,
    },
    /// The live service could not start or failed.
    #[error(transparent)]
    Service(#[from] fairshare_service::ServiceError),
    /// The controller could not reach etcd at start.
    #[cfg(feature = "cluster")]
    #[error(transparent)]
    Etcd(#[from] fairshare_cluster::etcd::EtcdError),
    /// The agent could not start or stopped.
    #[cfg(feature = "cluster")]
    #[error("agent: {0}")]
    Agent(#[from] fairshare_cluster::agent::AgentError),
    /// The emulator could not start.
    #[error(transparent)]
    Emulator(#[from] fairshare_emulator::EmulatorError),
    /// `bench offload` could not run.
    #[error("bench offload: {0}")]
    BenchOffload(#[source] fairshare_bench::offload::OffloadBenchError),
    /// `bench enforce` could not run.
    #[error(transparent)]
    BenchEnforce(fairshare_bench::enforce::EnforceBenchError),
    /// `bench serve` could not run.
    #[error("bench serve: {0}")]
    BenchServe(#[source] fairshare_bench::serve::ServeBenchError),
    /// `bench controller` could not run.
    #[cfg(feature = "cluster")]
    #[error("bench controller: {0}")]
    BenchController(#[source] fairshare_cluster::bench::ControllerBenchError),
    /// `bench cluster` could not run.
    #[cfg(feature = "cluster")]
    #[error("bench cluster: {0}")]
    BenchCluster(#[source] fairshare_cluster::bench::ControllerBenchError),
    /// Standard output was closed by its reader (`fairshare replay t.csv | head`): the
    /// command ends quietly with status 0.
    #[error("standard output is closed")]
    ClosedStdout,
}

impl CliError {
    /// `source` while doing `what` to `path`.
    pub fn file(what: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> CliError {
        let path = path.into();
        move |source| CliError::File { what, path, source }
    }

    /// A JSON encoding of `what` failed.
    pub fn json(what: &'static str) -> impl FnOnce(serde_json::Error) -> CliError {
        move |source| CliError::Json { what, source }
    }
}
