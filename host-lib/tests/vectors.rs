//! Every case of the golden vectors (`vectors/`) through
//! both software implementations: allocations and credits exact.

#![allow(clippy::unwrap_used)]

use fairshare::policy::{karma, Outcome};
use fairshare::vectors::{Mismatch, VectorFile};
use fairshare::{Credits, Error, KarmaParams};

type QuantumFn = fn(&KarmaParams, &[u64], &[Credits]) -> Result<Outcome, Error>;

fn check_file(file: &str, quantum: QuantumFn) -> (usize, Vec<Mismatch>) {
    let path = format!("{}/../vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let vectors = VectorFile::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let quanta = vectors.cases.iter().map(|c| c.quanta.len()).sum();
    (quanta, vectors.cases.iter().flat_map(|c| c.check(quantum)).collect())
}

fn assert_all_match(file: &str, quantum: QuantumFn, min_quanta: usize) {
    let (quanta, mismatches) = check_file(file, quantum);
    assert!(quanta >= min_quanta, "{file}: only {quanta} quanta read");
    let report: Vec<String> = mismatches.iter().take(20).map(|m| m.to_string()).collect();
    assert!(mismatches.is_empty(), "{} mismatches in {file}:\n{}", mismatches.len(), report.join("\n"));
}

#[test]
fn paper_vectors_literal() {
    assert_all_match("karma_paper.json", karma::literal, 8);
}

#[test]
fn paper_vectors_batched() {
    assert_all_match("karma_paper.json", karma::batched, 8);
}

#[test]
fn random_vectors_literal() {
    assert_all_match("karma_random.json", karma::literal, 400);
}

#[test]
fn random_vectors_batched() {
    assert_all_match("karma_random.json", karma::batched, 400);
}

/// The runner must report a wrong result: a backend that gives one slice too few.
#[test]
fn runner_reports_mismatches() {
    fn off_by_one(p: &KarmaParams, d: &[u64], c: &[Credits]) -> Result<Outcome, Error> {
        let mut out = karma::batched(p, d, c)?;
        if let Some(a) = out.alloc.iter_mut().find(|a| **a > 0) {
            *a -= 1;
        }
        Ok(out)
    }
    let (_, mismatches) = check_file("karma_paper.json", off_by_one);
    assert!(mismatches
        .iter()
        .any(|m| m.field == "alloc" && m.case == "karma-paper-figure-3" && m.quantum == 0 && m.user == Some(0)));
    assert!(mismatches.iter().all(|m| m.field == "alloc"), "credits were not changed: {mismatches:?}");
}
