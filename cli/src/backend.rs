//! `--backend`: where quanta are computed. `software` (the batched library),
//! `literal` (the oracle; selftest only), `rtl-sim` (the RustHDL engine in-process),
//! `emulator:PATH` (a `fairshare device-sim --shm PATH` process) and `vfio:ADDRESS`
//! (a device bound to vfio-pci). Device backends run verified and fall back to
//! software on any fault (see `fairshare::offload`).

use crate::CliError;
use fairshare::offload::{Accelerator, Offload, Verify};
use fairshare::{Allocator, Policy, PoolConfig};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Lanes of the `rtl-sim` engine.
pub const RTL_LANES: usize = 4;

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
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "software" => return Ok(Backend::Software),
            "literal" => return Ok(Backend::Literal),
            "rtl-sim" => return Ok(Backend::RtlSim),
            _ => {}
        }
        match s.split_once(':') {
            Some(("emulator", path)) if !path.is_empty() => Ok(Backend::Emulator(PathBuf::from(path))),
            Some(("vfio", addr)) if !addr.is_empty() => Ok(Backend::Vfio(addr.to_string())),
            _ => Err(format!(
                "backend `{s}`: use software, literal, rtl-sim, emulator:PATH (a `fairshare device-sim --shm PATH`) or vfio:PCI-ADDRESS"
            )),
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
    /// Full verification (the default) or invariant checks only.
    pub verify: Verify,
    /// Completion timeout.
    pub timeout: Duration,
}

impl DeviceOptions {
    /// From the command line's `--no-verify` and `--timeout-ms`.
    pub fn new(no_verify: bool, timeout_ms: u64) -> Self {
        let verify = if no_verify { Verify::Checks } else { Verify::Full };
        DeviceOptions { verify, timeout: Duration::from_millis(timeout_ms) }
    }
}

impl Backend {
    /// The device behind this backend for a pool of `users` users; `None` for the
    /// software backends.
    pub fn accelerator(&self, users: usize, timeout: Duration) -> Result<Option<Box<dyn Accelerator>>, CliError> {
        Ok(match self {
            Backend::Software | Backend::Literal => None,
            Backend::RtlSim => {
                Some(Box::new(fairshare_hdl::catalog::RtlAccelerator::new(RTL_LANES, users).map_err(CliError::Usage)?))
            }
            Backend::Emulator(path) => {
                let mut dev = fairshare_driver::shm::open(path).map_err(|e| CliError::Device(e.to_string()))?;
                dev.timeout = timeout;
                Some(Box::new(dev))
            }
            Backend::Vfio(addr) => {
                let mut dev = fairshare_driver::vfio::open(addr).map_err(|e| CliError::Device(e.to_string()))?;
                dev.timeout = timeout;
                Some(Box::new(dev))
            }
        })
    }

    /// A pool of `config` under `policy` on this backend.
    pub fn pool(&self, config: &PoolConfig, policy: Policy, opts: DeviceOptions) -> Result<Offload, CliError> {
        let mut pool = Allocator::new(config.clone(), policy)?;
        if *self == Backend::Literal {
            pool = pool.with_implementation(fairshare::Implementation::Literal);
        }
        Ok(match self.accelerator(config.users.len(), opts.timeout)? {
            None => Offload::software(pool),
            Some(dev) => Offload::new(pool, dev, opts.verify),
        })
    }
}

/// Says on stderr whether a pool left its device, and why.
pub fn report(pool: &Offload) {
    if let Some(fb) = pool.fallback() {
        report_fallback(pool.label(), fb);
    }
}

/// Says on stderr that the pool on `backend` left its device after `fb.quantum` quanta.
pub fn report_fallback(backend: &str, fb: &fairshare::offload::Fallback) {
    eprintln!(
        "fairshare: backend {backend} dropped after {} quanta: {}; the pool continues on software with the last good credits",
        fb.quantum, fb.reason
    );
}
