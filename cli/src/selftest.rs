//! `fairshare selftest`: runs every case of a golden-vector file through a backend and
//! reports each mismatch (case, quantum, user, expected, got). This is the conformance
//! test a user runs on a new backend or new hardware.

use crate::backend::Backend;
use crate::CliError;
use fairshare::offload::{device_shape, DeviceShape, DEVICE_MAX};
use fairshare::policy::karma;
use fairshare::vectors::{VectorCase, VectorFile};
use fairshare::{Allocator, Credits, Outcome, Policy};
use std::path::Path;
use std::time::Duration;

/// A case in device words for a device of `max_users` users, or why it cannot run there
/// (the offload backend's rule, `fairshare::offload::device_shape`).
fn device_case(case: &VectorCase, max_users: usize) -> Result<DeviceShape, String> {
    let pool = case.config().and_then(|c| Allocator::new(c, Policy::Karma).map_err(|e| e.to_string()))?;
    let shape = device_shape(&pool, max_users)?;
    if case.quanta.iter().flat_map(|q| &q.demand).any(|&d| d > DEVICE_MAX) {
        return Err(format!("a demand above {DEVICE_MAX}"));
    }
    Ok(shape)
}

/// Runs a case on a device (the RustHDL engine, the emulator, a VFIO device): credits
/// are restored once, then carried by the device from quantum to quantum. Faults are
/// reported as mismatches; there is no fallback here, this checks the device itself.
/// `Err` is why the case does not fit the device (it is skipped).
fn check_on_device(
    case: &VectorCase,
    backend: &Backend,
    timeout: Duration,
) -> Result<Vec<fairshare::vectors::Mismatch>, String> {
    let mut device = match backend.accelerator(case.fair_share.len(), timeout) {
        Ok(Some(d)) => d,
        Ok(None) => return Ok(vec![case_error(case, "not a device backend".into())]),
        // The RustHDL catalog has no engine that large.
        Err(CliError::Usage(why)) => return Err(why),
        Err(e) => return Ok(vec![case_error(case, e.to_string())]),
    };
    let shape = device_case(case, device.max_users())?;
    if let Err(e) = device.write_credits(&shape.credits) {
        return Ok(vec![case_error(case, format!("restoring credits: {e}"))]);
    }
    Ok(case.check(|_, demand, _| {
        let d: Vec<u32> = demand.iter().map(|&x| x as u32).collect();
        let (alloc, credits) = device.quantum(Policy::Karma, shape.fair, shape.guaranteed, &d)?;
        let credits = credits.iter().map(|&c| Credits::from_int(c as i64).unwrap_or_default()).collect();
        Ok::<_, String>(Outcome { alloc: alloc.iter().map(|&a| a as u64).collect(), credits })
    }))
}

fn case_error(case: &VectorCase, e: String) -> fairshare::vectors::Mismatch {
    fairshare::vectors::Mismatch {
        case: case.name.clone(),
        quantum: 0,
        user: None,
        field: "error",
        expected: "a result".into(),
        got: e,
    }
}

/// Runs the file; `Ok(true)` when every case matched.
pub fn run(path: &Path, backend: &Backend, timeout: Duration) -> Result<bool, CliError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{file}: {e}")))?;
    let vectors = VectorFile::parse(&text).map_err(|e| CliError::Io(format!("{file}: not a vector file: {e}")))?;
    if vectors.cases.is_empty() {
        return Err(CliError::Io(format!("{file}: the file has no cases")));
    }
    for case in &vectors.cases {
        case.config().map_err(|e| CliError::Io(format!("{file}: case `{}` is not a valid pool: {e}", case.name)))?;
    }
    let (mut quanta, mut failed, mut skipped) = (0, 0, 0);
    for case in &vectors.cases {
        let mismatches = match backend {
            Backend::Software => case.check(karma::batched),
            Backend::Literal => case.check(karma::literal),
            device => match check_on_device(case, device, timeout) {
                Err(why) => {
                    println!("skip     {} ({why})", case.name);
                    skipped += 1;
                    continue;
                }
                Ok(mismatches) => mismatches,
            },
        };
        quanta += case.quanta.len();
        if mismatches.is_empty() {
            println!("ok       {} ({} quanta, {} users)", case.name, case.quanta.len(), case.fair_share.len());
        } else {
            failed += 1;
            println!("MISMATCH {} ({} mismatches)", case.name, mismatches.len());
            for m in &mismatches {
                println!("    {m}");
            }
        }
    }
    println!(
        "selftest {file} on backend {}: {} cases, {skipped} skipped, {quanta} quanta run, {failed} cases with mismatches",
        backend,
        vectors.cases.len()
    );
    Ok(failed == 0)
}
