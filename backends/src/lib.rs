//! # fairshare-backends: where quanta are computed
//!
//! `--backend` names one of: `software` (the batched library), `literal` (the oracle),
//! `rtl-sim` (the RustHDL engine in process), `emulator:PATH` (a `fairshare device-sim
//! --shm PATH` process) and `vfio:ADDRESS` (a device bound to vfio-pci). This crate
//! parses that name ([`Backend`]), opens the device behind it as an
//! [`Accelerator`], puts a pool on it ([`Backend::pool`]: verified, with software
//! fallback, see `fairshare::offload`), and runs golden-vector cases on a device
//! itself, with no fallback ([`conformance`]), for `selftest`.
//!
//! The CLI and the benchmarks open devices only through here. Depends on the core
//! library, the ABI, the driver and the engines of `fairshare-hdl`; never on the CLI.

pub mod conformance;

use fairshare::offload::{Offload, Verify};
use fairshare::{Allocator, Policy, PoolConfig};
use fairshare_abi::Accelerator;
use fairshare_driver::OpenError;
use fairshare_hdl::catalog::HdlError;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Lanes of the `rtl-sim` engine.
pub const RTL_LANES: usize = 4;

/// Why a backend could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The RTL catalog has no engine of the shape the pool needs.
    #[error("rtl-sim: {0}")]
    NoEngine(#[from] HdlError),
    /// The device could not be opened.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// The pool's configuration is invalid.
    #[error(transparent)]
    Pool(#[from] fairshare::Error),
}

/// A `--backend` that does not parse, with what is expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadBackend(pub String);

/// A parsed `--backend`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The batched software.
    Software,
    /// The literal loop (the oracle).
    Literal,
    /// The RustHDL engine, in-process.
    RtlSim,
    /// The emulated device serving this file.
    Emulator(PathBuf),
    /// A VFIO device at this PCI address.
    Vfio(String),
}

impl FromStr for Backend {
    type Err = BadBackend;
    fn from_str(s: &str) -> Result<Self, BadBackend> {
        match s {
            "software" => return Ok(Backend::Software),
            "literal" => return Ok(Backend::Literal),
            "rtl-sim" => return Ok(Backend::RtlSim),
            _ => {}
        }
        match s.split_once(':') {
            Some(("emulator", path)) if !path.is_empty() => Ok(Backend::Emulator(PathBuf::from(path))),
            Some(("vfio", addr)) if !addr.is_empty() => Ok(Backend::Vfio(addr.to_string())),
            _ => Err(BadBackend(format!(
                "backend `{s}`: use software, literal, rtl-sim, emulator:PATH (a `fairshare device-sim --shm PATH`) or vfio:PCI-ADDRESS"
            ))),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Software => write!(f, "software"),
            Backend::Literal => write!(f, "literal"),
            Backend::RtlSim => write!(f, "rtl-sim"),
            Backend::Emulator(p) => write!(f, "emulator:{}", p.display()),
            Backend::Vfio(a) => write!(f, "vfio:{a}"),
        }
    }
}

/// How device backends are used.
#[derive(Clone, Copy, Debug)]
pub struct DeviceOptions {
    /// How results are verified (`--verify`; `async` unless told otherwise).
    pub verify: Verify,
    /// Completion timeout.
    pub timeout: Duration,
}

impl DeviceOptions {
    /// From the command line's `--verify` and `--timeout-ms`.
    pub fn new(verify: Verify, timeout_ms: u64) -> Self {
        DeviceOptions { verify, timeout: Duration::from_millis(timeout_ms) }
    }
}

impl Backend {
    /// The device behind this backend for a pool of `users` users; `None` for the
    /// software backends.
    pub fn accelerator(&self, users: usize, timeout: Duration) -> Result<Option<Box<dyn Accelerator>>, BackendError> {
        Ok(match self {
            Backend::Software | Backend::Literal => None,
            Backend::RtlSim => {
                let engine: Box<dyn Accelerator> = fairshare_hdl::catalog::engine(RTL_LANES, users)?;
                Some(engine)
            }
            Backend::Emulator(path) => {
                let mut dev = fairshare_driver::shm::open(path)?;
                dev.timeout = timeout;
                Some(Box::new(dev))
            }
            Backend::Vfio(addr) => {
                let mut dev = fairshare_driver::vfio::open(addr)?;
                dev.timeout = timeout;
                Some(Box::new(dev))
            }
        })
    }

    /// A pool of `config` under `policy`, offloaded to this backend.
    pub fn offload(&self, config: &PoolConfig, policy: Policy, opts: DeviceOptions) -> Result<Offload, BackendError> {
        self.offload_from(Allocator::new(config.clone(), policy)?, opts)
    }

    /// `pool` (new, or resumed from a checkpoint) on this backend; a device starts from
    /// the pool's credits.
    pub fn offload_from(&self, mut pool: Allocator, opts: DeviceOptions) -> Result<Offload, BackendError> {
        if *self == Backend::Literal {
            pool = pool.with_implementation(fairshare::Implementation::Literal);
        }
        Ok(match self.accelerator(pool.users().len(), opts.timeout)? {
            None => Offload::software(pool),
            Some(dev) => Offload::new(pool, dev, opts.verify),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_parse_and_print_back() {
        for s in ["software", "literal", "rtl-sim", "emulator:/tmp/x.shm", "vfio:0000:01:00.0"] {
            assert_eq!(s.parse::<Backend>().unwrap().to_string(), s);
        }
        for bad in ["", "gpu", "emulator:", "vfio:"] {
            assert!(bad.parse::<Backend>().unwrap_err().0.contains("use software"), "{bad}");
        }
    }

    #[test]
    fn rtl_sim_refuses_a_pool_no_engine_holds() {
        let e = Backend::RtlSim.accelerator(5_000, Duration::from_millis(1)).err().unwrap();
        assert!(matches!(e, BackendError::NoEngine(_)) && e.to_string().contains("5000 users"), "{e}");
    }
}
