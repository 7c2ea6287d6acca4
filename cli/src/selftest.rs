//! `fairshare selftest`: runs every case of a golden-vector file through a backend and
//! reports each mismatch (case, quantum, user, expected, got). This is the conformance
//! test a user runs on a new backend or new hardware.

use crate::backend::Backend;
use crate::CliError;
use fairshare::policy::karma;
use fairshare::vectors::{VectorCase, VectorFile};
use fairshare::{Credits, Outcome, Policy};
use std::path::Path;
use std::time::Duration;

/// Why a vector case cannot run on the engine, if it cannot.
fn engine_misfit(case: &VectorCase) -> Option<String> {
    let (f, g) = (case.fair_share.first()?, case.guaranteed.first()?);
    if case.fair_share.iter().any(|x| x != f) || case.guaranteed.iter().any(|x| x != g) {
        return Some("weighted or unequal shares (the engine runs Algorithm 1)".into());
    }
    if !(0..1 << 31).contains(&case.initial_credits) {
        return Some(format!("initial credits {} are outside the engine's [0, 2^31)", case.initial_credits));
    }
    if case.fair_share.len() > 4096 {
        return Some(format!("{} users, more than the engine's 4,096", case.fair_share.len()));
    }
    if case.quanta.iter().flat_map(|q| &q.demand).any(|&d| d >= 1 << 31) {
        return Some("a demand at or above 2^31".into());
    }
    None
}

/// Runs a case on a device (the RustHDL engine, the emulator, a VFIO device): credits
/// are restored once, then carried by the device from quantum to quantum. Faults are
/// reported as mismatches; there is no fallback here, this checks the device itself.
fn check_on_device(case: &VectorCase, backend: &Backend, timeout: Duration) -> Vec<fairshare::vectors::Mismatch> {
    let n = case.fair_share.len();
    let mut device = match backend.accelerator(n, timeout) {
        Ok(Some(d)) => d,
        Ok(None) => return vec![case_error(case, "not a device backend".into())],
        Err(e) => return vec![case_error(case, e.to_string())],
    };
    if let Err(e) = device.write_credits(&vec![case.initial_credits as u32; n]) {
        return vec![case_error(case, format!("restoring credits: {e}"))];
    }
    let (f, g) = (case.fair_share[0] as u32, case.guaranteed[0] as u32);
    case.check(|_, demand, _| {
        let d: Vec<u32> = demand.iter().map(|&x| x as u32).collect();
        let (alloc, credits) = device.quantum(Policy::Karma, f, g, &d)?;
        let credits = credits.iter().map(|&c| Credits::from_int(c as i64).unwrap_or_default()).collect();
        Ok::<_, String>(Outcome { alloc: alloc.iter().map(|&a| a as u64).collect(), credits })
    })
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
            device => match engine_misfit(case) {
                Some(why) => {
                    println!("skip     {} ({why})", case.name);
                    skipped += 1;
                    continue;
                }
                None => check_on_device(case, device, timeout),
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
