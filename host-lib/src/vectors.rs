//! Golden test vectors (`vectors/*.json`): the schema, and a
//! runner that feeds each case through any quantum function and lists every mismatch.
//! `fairshare selftest` and the test suite both use it, so a new backend (RTL
//! simulation, emulated device, VFIO) is checked by the same code.

use crate::config::{KarmaParams, PoolConfig, UserConfig};
use crate::credits::{parse_fraction, Credits};
use crate::policy::Outcome;
use serde::Deserialize;
use std::fmt;

/// A vector file: `{"about": ..., "cases": [...]}`. Parsing is strict: an unknown
/// field, two cases of one name, a file without cases or a case without quanta is an
/// error (a typo must not turn a check into no check).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorFile {
    /// Where the vectors come from.
    #[serde(default)]
    pub about: String,
    /// The cases.
    pub cases: Vec<VectorCase>,
}

/// One Karma pool run over several quanta, with the expected results.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorCase {
    /// Case name, used in reports.
    pub name: String,
    /// Fair share per user.
    pub fair_share: Vec<u64>,
    /// Guaranteed share per user.
    pub guaranteed: Vec<u64>,
    /// Initial credits of every user (whole credits).
    pub initial_credits: i64,
    /// Quanta in order.
    pub quanta: Vec<VectorQuantum>,
}

/// One quantum of a case.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorQuantum {
    /// Demand per user.
    pub demand: Vec<u64>,
    /// Expected allocation per user.
    pub alloc: Vec<u64>,
    /// Expected credits after the quantum, exact rationals as strings (`"37/8"`).
    pub credits_after: Vec<String>,
}

/// One difference between a backend and a vector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// Case name.
    pub case: String,
    /// Quantum index within the case (0-based).
    pub quantum: usize,
    /// User index, when the mismatch is about one user.
    pub user: Option<usize>,
    /// `alloc`, `credits`, `config` or `error`.
    pub field: &'static str,
    /// What the vector says.
    pub expected: String,
    /// What the backend gave.
    pub got: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "case `{}` quantum {}", self.case, self.quantum)?;
        if let Some(u) = self.user {
            write!(f, " user {u}")?;
        }
        write!(f, " {}: expected {}, got {}", self.field, self.expected, self.got)
    }
}

/// Why a text is not a vector file.
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// Not JSON of the schema (the message has the line and column).
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The file has no cases.
    #[error("the file has no cases")]
    NoCases,
    /// Two cases share a name (mismatches are reported by name).
    #[error("case `{0}` appears twice")]
    DuplicateName(String),
    /// A case has no quanta: it would check nothing.
    #[error("case `{0}` has no quanta")]
    NoQuanta(String),
}

impl VectorFile {
    /// Parses a vector file's text strictly (see [`VectorFile`]).
    pub fn parse(text: &str) -> Result<Self, VectorError> {
        let file: VectorFile = serde_json::from_str(text)?;
        if file.cases.is_empty() {
            return Err(VectorError::NoCases);
        }
        let mut names = std::collections::HashSet::new();
        for case in &file.cases {
            if !names.insert(case.name.as_str()) {
                return Err(VectorError::DuplicateName(case.name.clone()));
            }
            if case.quanta.is_empty() {
                return Err(VectorError::NoQuanta(case.name.clone()));
            }
        }
        Ok(file)
    }
}

/// Why a vector case does not describe a valid pool.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CaseError {
    /// `fair_share` and `guaranteed` differ in length.
    #[error("fair_share has {fair_share} entries, guaranteed {guaranteed}")]
    Lengths {
        /// Entries of `fair_share`.
        fair_share: usize,
        /// Entries of `guaranteed`.
        guaranteed: usize,
    },
    /// `initial_credits` is outside the credits' range.
    #[error("initial_credits {0} out of range")]
    Credits(i64),
    /// The pool itself is invalid.
    #[error(transparent)]
    Pool(#[from] crate::Error),
}

impl VectorCase {
    /// The pool this case describes, or what is inconsistent in it.
    pub fn config(&self) -> Result<PoolConfig, CaseError> {
        if self.fair_share.len() != self.guaranteed.len() {
            return Err(CaseError::Lengths { fair_share: self.fair_share.len(), guaranteed: self.guaranteed.len() });
        }
        let credits = Credits::from_int(self.initial_credits).ok_or(CaseError::Credits(self.initial_credits))?;
        let users = (0..self.fair_share.len())
            .map(|i| UserConfig {
                name: format!("u{i}"),
                fair_share: self.fair_share[i],
                guaranteed: self.guaranteed[i],
                initial_credits: credits,
            })
            .collect();
        let config = PoolConfig { users };
        config.validate()?;
        Ok(config)
    }

    /// Runs every quantum through `quantum` (params, demand, credits before) and returns
    /// every mismatch; the backend's own credits are carried from quantum to quantum.
    pub fn check<E: fmt::Display>(
        &self,
        mut quantum: impl FnMut(&KarmaParams, &[u64], &[Credits]) -> Result<Outcome, E>,
    ) -> Vec<Mismatch> {
        let miss = |q: usize, user: Option<usize>, field: &'static str, expected: String, got: String| Mismatch {
            case: self.name.clone(),
            quantum: q,
            user,
            field,
            expected,
            got,
        };
        let params = match self.config().and_then(|c| Ok(KarmaParams::from_config(&c)?)) {
            Ok(p) => p,
            Err(e) => return vec![miss(0, None, "config", "a valid pool".into(), e.to_string())],
        };
        let mut credits = vec![Credits::from_int(self.initial_credits).unwrap_or_default(); params.len()];
        let mut out = Vec::new();
        for (q, step) in self.quanta.iter().enumerate() {
            let lengths = [step.demand.len(), step.alloc.len(), step.credits_after.len()];
            if lengths.iter().any(|&l| l != params.len()) {
                out.push(miss(
                    q,
                    None,
                    "config",
                    format!("{} users per vector", params.len()),
                    format!("demand/alloc/credits_after lengths {lengths:?}"),
                ));
                return out;
            }
            let result = match quantum(&params, &step.demand, &credits) {
                Ok(r) => r,
                Err(e) => {
                    out.push(miss(q, None, "error", "a result".into(), e.to_string()));
                    return out;
                }
            };
            for u in 0..params.len() {
                if result.alloc.get(u) != Some(&step.alloc[u]) {
                    out.push(miss(
                        q,
                        Some(u),
                        "alloc",
                        step.alloc[u].to_string(),
                        result.alloc.get(u).map_or("nothing".into(), u64::to_string),
                    ));
                }
                let got = result.credits.get(u).copied();
                let exact = parse_fraction(&step.credits_after[u])
                    .is_some_and(|(num, den)| got.is_some_and(|c| c.equals_fraction(num, den)));
                if !exact {
                    out.push(miss(
                        q,
                        Some(u),
                        "credits",
                        step.credits_after[u].clone(),
                        got.map_or("nothing".into(), |c| c.to_string()),
                    ));
                }
            }
            credits = result.credits;
        }
        out
    }
}
