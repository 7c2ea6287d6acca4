//! The instance reader is fed arbitrary bytes, arbitrary strings and
//! mutations of a valid instance (characters deleted or duplicated, huge and odd numbers,
//! nested values spliced in). It never panics: every input either parses into a valid
//! instance or is refused with a `MultiError`. Instances that parse also go through the
//! closed-form policies, which must not panic either.

use fairshare_multi::{run, Instance, MultiError, MultiPolicy};
use proptest::prelude::*;

/// A valid instance exercising every field (the example cluster, with task limits and
/// entitlements).
const VALID: &str = r#"{
  "resources": ["cpu", "memory"],
  "servers": [
    { "name": "class-a", "capacity": [8, 8] },
    { "name": "class-b", "capacity": [34, 34] },
    { "name": "class-c", "capacity": [16.5, 8.25] }
  ],
  "users": [
    { "name": "web", "demand": [0.1, 0.1], "weight": 2, "max_tasks": 100 },
    { "name": "batch", "demand": [0.2, 0.1], "eligible": ["class-c"], "entitlement": 0.5 },
    { "name": "ml", "demand": [0.1, 0.3], "weight": 1e-3 }
  ]
}"#;

/// Tokens spliced into the valid instance: numbers at and beyond every bound and beyond
/// f64, non-JSON numbers, nesting, broken syntax.
const TOKENS: &[&str] = &[
    "1e307",
    "1e308",
    "1e309",
    "-1e400",
    "1e-400",
    "4.9e-324",
    "-0",
    "0",
    "NaN",
    "Infinity",
    "-1",
    "99999999999999999999999999999",
    "0.000000000000000000000000001",
    "1e15",
    "1e16",
    "1e-6",
    "1e9",
    "null",
    "true",
    "\"x\"",
    "[]",
    "{}",
    "[[[[[[[[[[1]]]]]]]]]]",
    "{\"a\": {\"b\": [1, {\"c\": []}]}}",
    "[1, 2, 3, 4, 5, 6, 7, 8, 9]",
    ",",
    ":",
    "\"",
    "\\u0000",
    "\u{0}",
    "\u{feff}",
    "é",
    "\"name\": \"web\"",
    "\"weight\": 1e307",
    "\"eligible\": [\"nowhere\"]",
];

/// One edit of a text, at a position given as a fraction of its length.
#[derive(Debug, Clone)]
enum Edit {
    Delete(f64, usize),
    Duplicate(f64, usize),
    Insert(f64, usize),
    ReplaceNumber(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0.0..1.0f64, 1usize..8).prop_map(|(at, len)| Edit::Delete(at, len)),
        (0.0..1.0f64, 1usize..16).prop_map(|(at, len)| Edit::Duplicate(at, len)),
        (0.0..1.0f64, 0..TOKENS.len()).prop_map(|(at, t)| Edit::Insert(at, t)),
        (0usize..64, 0..TOKENS.len()).prop_map(|(k, t)| Edit::ReplaceNumber(k, t)),
    ]
}

/// The char boundary nearest below `at` (a fraction of the length).
fn boundary(text: &str, at: f64) -> usize {
    let mut i = ((text.len() as f64) * at) as usize;
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i.min(text.len())
}

fn apply(text: &mut String, edit: &Edit) {
    match *edit {
        Edit::Delete(at, len) => {
            let from = boundary(text, at);
            let to = text[from..].char_indices().nth(len).map_or(text.len(), |(i, _)| from + i);
            text.replace_range(from..to, "");
        }
        Edit::Duplicate(at, len) => {
            let from = boundary(text, at);
            let to = text[from..].char_indices().nth(len).map_or(text.len(), |(i, _)| from + i);
            let copy = text[from..to].to_string();
            text.insert_str(to, &copy);
        }
        Edit::Insert(at, t) => {
            let at = boundary(text, at);
            text.insert_str(at, TOKENS[t]);
        }
        Edit::ReplaceNumber(k, t) => {
            // The k-th number of the text (cyclically), replaced by a token.
            let bytes = text.as_bytes();
            let mut starts = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i].is_ascii_digit() {
                    let start = i;
                    while i < bytes.len() && (bytes[i].is_ascii_digit() || b".eE-+".contains(&bytes[i])) {
                        i += 1;
                    }
                    starts.push((start, i));
                } else {
                    i += 1;
                }
            }
            if let Some(&(from, to)) = starts.get(k % starts.len().max(1)) {
                text.replace_range(from..to, TOKENS[t]);
            }
        }
    }
}

/// Parses; if the instance is valid, runs the closed-form policies on it. Never panics
/// (a panic fails the property); returns the parse result.
fn exercise(text: &str) -> Result<Instance, MultiError> {
    let parsed = Instance::from_json(text);
    if let Ok(inst) = &parsed {
        for policy in [MultiPolicy::Drf, MultiPolicy::Ddrf, MultiPolicy::PsdsfRdm] {
            // An error is an answer too; only a panic is not.
            let _ = run(policy, inst);
        }
    }
    parsed
}

#[test]
fn the_valid_instance_is_valid() {
    // Otherwise the mutations below would start from an error.
    let inst = exercise(VALID).expect("valid");
    assert_eq!(inst.n_users(), 3);
}

#[test]
fn deeply_nested_json_is_an_error_not_a_stack_overflow() {
    for depth in [200, 10_000, 100_000] {
        let text = format!(r#"{{"resources": {}{}}}"#, "[".repeat(depth), "]".repeat(depth));
        assert!(matches!(exercise(&text), Err(MultiError::Parse { .. })), "depth {depth}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn instance_parser_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        text in "\\PC{0,256}",
        jsonish in "[\\[\\]{}\",:0-9eE.+\\- a-z]{0,256}",
        edits in prop::collection::vec(edit(), 1..6),
        numbers in prop::collection::vec((0usize..64, 0..TOKENS.len()), 1..4),
    ) {
        // Arbitrary bytes (lossily as UTF-8), arbitrary text, text made of JSON's own
        // characters, a valid instance mutated anyhow, and one with only numbers replaced
        // (which mostly gets past the syntax to the validation).
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        let mut mutated = VALID.to_string();
        for e in &edits {
            apply(&mut mutated, e);
        }
        let mut renumbered = VALID.to_string();
        for &(k, t) in &numbers {
            apply(&mut renumbered, &Edit::ReplaceNumber(k, t));
        }
        for input in [&lossy, &text, &jsonish, &mutated, &renumbered] {
            match exercise(input) {
                Ok(inst) => {
                    // A valid instance is valid through and through.
                    prop_assert!(inst.n_users() > 0 && inst.n_servers() > 0 && inst.n_resources() > 0);
                    prop_assert!(inst.weight.iter().all(|w| w.is_finite() && *w > 0.0));
                }
                Err(MultiError::Parse { line, column, .. }) => prop_assert!(line >= 1 && column <= input.len() + 1),
                Err(MultiError::Invalid(message)) => prop_assert!(!message.is_empty()),
                Err(other) => prop_assert!(false, "the reader returned {other:?}"),
            }
        }
    }
}
