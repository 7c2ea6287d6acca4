//! # fairshare-service: `fairshare serve`
//!
//! One pool re-divided live every quantum, exposable to a network: a clock (wall, or
//! manual for tests and for controllers that own the clock) drives quanta; each
//! quantum takes the tenants' demands, runs the allocator through the chosen backend
//! (software, RTL simulation, emulator, VFIO: the offload path with verification and
//! fallback), commits the pool to the ledger (`--state`), then publishes the allocation
//! (the HTTP API, the Prometheus metrics) and enforces it (HTB). Every change is
//! committed before anything shows it, or refused with nothing changed.
//!
//! Modules, in the order a request meets them: [`server`] (listener, TLS, connection
//! limits and timeouts, signals, start and stop), [`http`] (routes), [`auth`] (who may
//! do what), [`pool`] (the live pool, transactional), [`saved`] (what the ledger keeps
//! of it), [`publish`] (the immutable values readers load), [`metrics`] (counters and
//! their exposition), [`clock`] (the wall clock's thread), [`config`] (the TOML file),
//! [`tls`], [`replica`] (what a pool replicated through a store elsewhere asks of it:
//! the controller's), [`enforce`] (enforcement as Linux HTB class rates over rtnetlink, and demands measured from
//! the classes' counters). It depends on the core library, the backends and the
//! ledger; never on the CLI.

pub mod auth;
pub mod clock;
pub mod config;
pub mod enforce;
pub mod http;
pub mod metrics;
pub mod pool;
pub mod publish;
pub mod replica;
pub mod saved;
pub mod server;
pub mod tls;

/// Why the service refused a request or could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The configuration file (or a file it names) is wrong.
    #[error(transparent)]
    ConfigFile(#[from] config::ConfigError),
    /// The ledger's pool was started from another configuration.
    #[error(
        "the ledger was made with another configuration; restart with the ledger's, or pass \
         --accept-config-changes to apply the file's (logged): {}",
        differences.join("; ")
    )]
    ConfigChanged {
        /// Each field that differs.
        differences: Vec<String>,
    },
    /// A request names no tenant of the pool.
    #[error("unknown tenant `{0}`")]
    UnknownTenant(String),
    /// A request is malformed; the message names the field.
    #[error("{0}")]
    BadRequest(String),
    /// A request does not fit the pool's state (a manual quantum under the wall clock,
    /// a join past the maximum).
    #[error("{0}")]
    Conflict(String),
    /// The caller may not do this, or did not say who it is.
    #[error(transparent)]
    Denied(#[from] auth::Denied),
    /// A change that could not be committed: refused, nothing changed.
    #[error("{what} was refused, nothing changed: the ledger could not commit it: {source}")]
    NotCommitted {
        /// What was refused.
        what: &'static str,
        /// The ledger's error.
        #[source]
        source: fairshare_ledger::LedgerError,
    },
    /// A body over the limit.
    #[error("the body is over {} bytes", http::MAX_BODY_BYTES)]
    BodyTooLarge,
    /// A body that did not arrive in time.
    #[error("the body did not arrive within {} s", http::BODY_TIMEOUT.as_secs())]
    BodyTimeout,
    /// No such route.
    #[error("no route {0}")]
    NoRoute(String),
    /// A route that does not take this method.
    #[error("this route does not take this method")]
    MethodNotAllowed,
    /// A listener that must not be exposed as configured, or a socket path in use.
    #[error("{0}")]
    Exposed(String),
    /// The listening socket could not be made.
    #[error("--listen {at}: {source}")]
    Listen {
        /// The address or path.
        at: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The pool refused a quantum or a change.
    #[error(transparent)]
    Pool(#[from] fairshare::Error),
    /// The backend could not be opened.
    #[error(transparent)]
    Backend(#[from] fairshare_backends::BackendError),
    /// The ledger could not be opened or written.
    #[error(transparent)]
    Ledger(#[from] fairshare_ledger::LedgerError),
    /// Enforcement (the HTB tree) failed.
    #[error(transparent)]
    Enforce(#[from] enforce::EnforceError),
    /// What the service runs on could not be started (its runtime, a thread, a signal
    /// handler).
    #[error("{what}: {source}")]
    Start {
        /// What.
        what: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The replicated pool's store refused or could not be reached (the controller).
    #[error(transparent)]
    Replica(#[from] replica::ReplicaError),
    /// A change of the pool stopped before it ended (its thread panicked).
    #[error("a change of the pool stopped: {0}")]
    ChangeStopped(#[source] tokio::task::JoinError),
}
