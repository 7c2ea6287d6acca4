//! `fairshare selftest`: runs every case of golden-vector files through a backend and
//! reports each mismatch (case, quantum, user, expected, got). This is the conformance
//! test a user runs on a new backend or new hardware. Without `--vectors` it runs the
//! vector files built into the binary (`vectors/karma_paper.json` and
//! `vectors/karma_random.json`).

use std::process::ExitCode;

use crate::backend::Backend;
use crate::flags::SelftestArgs;
use crate::output::outln;
use crate::CliError;
use fairshare::policy::karma;
use fairshare::vectors::VectorFile;
use fairshare_backends::conformance::{check_on_device, NotRun};
use std::path::Path;
use std::time::Duration;

/// The vector files built into the binary, by the name they are reported with.
pub const BUILT_IN: [(&str, &str); 2] = [
    ("vectors/karma_paper.json", include_str!("../../vectors/karma_paper.json")),
    ("vectors/karma_random.json", include_str!("../../vectors/karma_random.json")),
];

/// How a self-test ended (exit status 0, 1 and 3; a backend that cannot be reached or
/// a bad file is an error, exit status 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every case that ran matched, and at least one quantum ran.
    Passed,
    /// At least one case differs from its vector.
    Mismatches,
    /// Every case was skipped: nothing was tested.
    NothingRan,
}

impl Verdict {
    /// The exit status: 0, 1 or 3.
    pub fn exit_code(self) -> std::process::ExitCode {
        std::process::ExitCode::from(match self {
            Verdict::Passed => 0,
            Verdict::Mismatches => 1,
            Verdict::NothingRan => 3,
        })
    }
}

/// Runs `fairshare selftest`.
pub fn run(args: SelftestArgs) -> Result<ExitCode, CliError> {
    let SelftestArgs { vectors, backend, timeout_ms } = args;
    selftest(vectors.as_deref(), &backend, Duration::from_millis(timeout_ms)).map(Verdict::exit_code)
}

/// Runs `path`, or the built-in files.
fn selftest(path: Option<&Path>, backend: &Backend, timeout: Duration) -> Result<Verdict, CliError> {
    let mut tally = Tally::default();
    match path {
        None => {
            for (name, text) in BUILT_IN {
                run_text(name, text, backend, timeout, &mut tally)?;
            }
        }
        Some(path) => {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path).map_err(CliError::file("reading", path))?;
            run_text(&file, &text, backend, timeout, &mut tally)?;
        }
    }
    Ok(if tally.failed > 0 {
        Verdict::Mismatches
    } else if tally.quanta == 0 {
        outln!("selftest: every case was skipped on backend {backend}: nothing was tested (exit status 3)")?;
        Verdict::NothingRan
    } else {
        Verdict::Passed
    })
}

/// Quanta run and cases failed, over every file.
#[derive(Default)]
struct Tally {
    quanta: usize,
    failed: usize,
}

/// Runs the vector file `text` (named `file` in messages).
fn run_text(file: &str, text: &str, backend: &Backend, timeout: Duration, tally: &mut Tally) -> Result<(), CliError> {
    let vectors = VectorFile::parse(text)
        .map_err(|e| CliError::Damaged { path: file.into(), reason: format!("not a vector file: {e}") })?;
    for case in &vectors.cases {
        case.config().map_err(|e| CliError::Damaged {
            path: file.into(),
            reason: format!("case `{}` is not a valid pool: {e}", case.name),
        })?;
    }
    let (mut quanta, mut failed, mut skipped) = (0, 0, 0);
    for case in &vectors.cases {
        let mismatches = match backend {
            Backend::Software => case.check(karma::batched),
            Backend::Literal => case.check(karma::literal),
            device => match check_on_device(case, device, timeout) {
                Err(NotRun::Unreachable(e)) => return Err(CliError::Backend(e)),
                Err(why @ NotRun::DoesNotFit(_)) => {
                    outln!("skip     {} ({why})", case.name)?;
                    skipped += 1;
                    continue;
                }
                Ok(mismatches) => mismatches,
            },
        };
        quanta += case.quanta.len();
        if mismatches.is_empty() {
            outln!("ok       {} ({} quanta, {} users)", case.name, case.quanta.len(), case.fair_share.len())?;
        } else {
            failed += 1;
            outln!("MISMATCH {} ({} mismatches)", case.name, mismatches.len())?;
            for m in &mismatches {
                outln!("    {m}")?;
            }
        }
    }
    outln!(
        "selftest {file} on backend {}: {} cases, {skipped} skipped, {quanta} quanta run, {failed} cases with mismatches",
        backend,
        vectors.cases.len()
    )?;
    tally.quanta += quanta;
    tally.failed += failed;
    Ok(())
}
