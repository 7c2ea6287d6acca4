//! `fairshare selftest`: runs every case of a golden-vector file through a backend and
//! reports each mismatch (case, quantum, user, expected, got). This is the conformance
//! test a user runs on a new backend or new hardware.

use crate::CliError;
use fairshare::policy::karma;
use fairshare::vectors::VectorFile;
use std::path::Path;

/// The backends `selftest` can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// The batched software implementation (what the library runs).
    Software,
    /// The literal slice-by-slice loop (the oracle itself).
    Literal,
}

/// Runs the file; `Ok(true)` when every case matched.
pub fn run(path: &Path, backend: Backend) -> Result<bool, CliError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{file}: {e}")))?;
    let vectors = VectorFile::parse(&text).map_err(|e| CliError::Io(format!("{file}: not a vector file: {e}")))?;
    if vectors.cases.is_empty() {
        return Err(CliError::Io(format!("{file}: the file has no cases")));
    }
    for case in &vectors.cases {
        case.config().map_err(|e| CliError::Io(format!("{file}: case `{}` is not a valid pool: {e}", case.name)))?;
    }
    let quantum = match backend {
        Backend::Software => karma::batched,
        Backend::Literal => karma::literal,
    };
    let (mut quanta, mut failed) = (0, 0);
    for case in &vectors.cases {
        let mismatches = case.check(quantum);
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
        "selftest {file} on backend {}: {} cases, {quanta} quanta, {failed} cases with mismatches",
        format!("{backend:?}").to_lowercase(),
        vectors.cases.len()
    );
    Ok(failed == 0)
}
