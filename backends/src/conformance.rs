//! Golden-vector cases run on a device itself (the RustHDL engine, the emulator, a VFIO
//! device): credits restored once, then carried by the device from quantum to quantum,
//! every result compared with the vector. There is no fallback here: this checks the
//! device, and a fault is a mismatch.

use crate::{Backend, BackendError};
use fairshare::offload::{device_shape, mode_of, DeviceShape};
use fairshare::vectors::{Mismatch, VectorCase};
use fairshare::{Allocator, Credits, Outcome, Policy};
use fairshare_abi::{self as abi, DeviceError, QuantumSettings};
use std::time::Duration;

/// Why a case did not run on a device.
#[derive(Debug, thiserror::Error)]
pub enum NotRun {
    /// The case's pool or demands do not fit the device (unequal shares, words beyond
    /// 2^31, more users than it holds), or no engine of the catalog holds it: the case
    /// is skipped.
    #[error("{0}")]
    DoesNotFit(String),
    /// The backend cannot be reached (no emulator at the path, no VFIO device): not a
    /// property of the case, and not a mismatch.
    #[error(transparent)]
    Unreachable(BackendError),
}

/// A case in device words for a device of `limits`, or why it cannot run there (the
/// offload backend's rule, `fairshare::offload::device_shape`, and the ABI's admission
/// rule for every demand).
fn device_case(case: &VectorCase, limits: &abi::Limits) -> Result<DeviceShape, NotRun> {
    let config = case.config().map_err(|e| NotRun::DoesNotFit(e.to_string()))?;
    let pool = Allocator::new(config, Policy::Karma).map_err(|e| NotRun::DoesNotFit(e.to_string()))?;
    let shape = device_shape(&pool, limits).map_err(|e| NotRun::DoesNotFit(e.to_string()))?;
    if let Some(d) = case.quanta.iter().flat_map(|q| &q.demand).find(|&&d| d > abi::WORD_MAX) {
        return Err(NotRun::DoesNotFit(format!("a demand of {d}, above the device's {}", abi::WORD_MAX)));
    }
    Ok(shape)
}

/// The case's mismatches on `backend` (a device backend), or why it did not run. Faults
/// during the case are mismatches; a backend that cannot be opened is [`NotRun::Unreachable`].
pub fn check_on_device(case: &VectorCase, backend: &Backend, timeout: Duration) -> Result<Vec<Mismatch>, NotRun> {
    let mut device = match backend.accelerator(case.fair_share.len(), timeout) {
        Ok(Some(d)) => d,
        Ok(None) => return Ok(vec![case_error(case, "not a device backend".into())]),
        Err(BackendError::NoEngine(e)) => return Err(NotRun::DoesNotFit(e.to_string())),
        Err(e) => return Err(NotRun::Unreachable(e)),
    };
    let shape = device_case(case, &device.limits())?;
    if let Err(e) = device.write_credits(&shape.credits) {
        return Ok(vec![case_error(case, format!("restoring credits: {e}"))]);
    }
    Ok(case.check(|_, demand, _| {
        let d: Vec<u32> = demand.iter().map(|&x| x as u32).collect();
        let out = device.quantum(
            QuantumSettings { mode: mode_of(Policy::Karma), fair: shape.fair, guaranteed: shape.guaranteed },
            &d,
        )?;
        let credits = out.credits.iter().map(|&c| Credits::from_int(c as i64).unwrap_or_default()).collect();
        Ok::<_, DeviceError>(Outcome { alloc: out.alloc.iter().map(|&a| a as u64).collect(), credits })
    }))
}

fn case_error(case: &VectorCase, e: String) -> Mismatch {
    Mismatch { case: case.name.clone(), quantum: 0, user: None, field: "error", expected: "a result".into(), got: e }
}
