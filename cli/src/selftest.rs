//! `fairshare selftest`: runs every case of golden-vector files through a backend and
//! reports each mismatch (case, quantum, user, expected, got). This is the conformance
//! test a user runs on a new backend or new hardware. Without `--vectors` it runs the
//! vector files built into the binary (`vectors/karma_paper.json` and
//! `vectors/karma_random.json`).

use crate::backend::Backend;
use crate::CliError;
use fairshare::policy::karma;
use fairshare::vectors::VectorFile;
use fairshare_backends::conformance::check_on_device;
use std::path::Path;
use std::time::Duration;

/// The vector files built into the binary, by the name they are reported with.
pub const BUILT_IN: [(&str, &str); 2] = [
    ("vectors/karma_paper.json", include_str!("../../vectors/karma_paper.json")),
    ("vectors/karma_random.json", include_str!("../../vectors/karma_random.json")),
];

/// Runs `path`, or the built-in files; `Ok(true)` when every case matched.
pub fn run(path: Option<&Path>, backend: &Backend, timeout: Duration) -> Result<bool, CliError> {
    let Some(path) = path else {
        let mut all = true;
        for (name, text) in BUILT_IN {
            all &= run_text(name, text, backend, timeout)?;
        }
        return Ok(all);
    };
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{file}: {e}")))?;
    run_text(&file, &text, backend, timeout)
}

/// Runs the vector file `text` (named `file` in messages).
fn run_text(file: &str, text: &str, backend: &Backend, timeout: Duration) -> Result<bool, CliError> {
    let vectors = VectorFile::parse(text).map_err(|e| CliError::Io(format!("{file}: not a vector file: {e}")))?;
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
