//! # fairshare-service: `fairshare serve`
//!
//! One pool re-divided live every quantum: a clock (wall, or manual for tests and for
//! controllers that own the clock) drives quanta; each quantum takes the tenants'
//! declared demands, runs the allocator through the chosen backend (software, RTL
//! simulation, emulator, VFIO: the offload path with verification and fallback),
//! commits the credits to the ledger (`--state`), then publishes the allocation (the
//! HTTP API, the Prometheus metrics). Commit comes before publish, so a restart after
//! kill -9 continues from exactly the committed credits. A quantum never overlaps the
//! next; ticks missed while one overran are counted, not queued.
//!
//! Modules: [`config`] (the TOML file), [`pool`] (the live pool), [`metrics`],
//! [`http`] (the API and the clock), [`htb`] (enforcement as Linux HTB class rates, and
//! demands measured from the classes' counters). It depends on the core library, the
//! backends and the ledger; never on the CLI.

pub mod config;
pub mod htb;
pub mod http;
pub mod metrics;
pub mod pool;

/// Why the service refused a request or could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The configuration or the ledger folder does not fit.
    #[error("{0}")]
    Config(String),
    /// The configuration file is wrong.
    #[error(transparent)]
    ConfigFile(#[from] config::ConfigError),
    /// A request names no tenant of the pool.
    #[error("unknown tenant `{0}`")]
    UnknownTenant(String),
    /// A request is malformed; the message names the field.
    #[error("{0}")]
    BadRequest(String),
    /// A request does not fit the clock (a manual quantum under the wall clock).
    #[error("{0}")]
    Conflict(String),
    /// The pool refused a quantum or a change.
    #[error(transparent)]
    Pool(#[from] fairshare::Error),
    /// The backend could not be opened.
    #[error(transparent)]
    Backend(#[from] fairshare_backends::BackendError),
    /// The ledger could not be opened or written.
    #[error(transparent)]
    Ledger(#[from] fairshare_ledger::LedgerError),
    /// The listening socket or the runtime failed.
    #[error("{0}")]
    Io(String),
}
