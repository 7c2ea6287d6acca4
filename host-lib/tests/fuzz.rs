//! The vector-file parser on arbitrary and mutated
//! input (proptest as the fuzzer, on stable Rust): it never panics, and whatever it
//! accepts is a valid vector file (cases, names unique, quanta present).

use fairshare::vectors::VectorFile;
use proptest::prelude::*;

const VALID: &str = include_str!("../../vectors/karma_paper.json");

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn the_vector_parser_never_panics_on_arbitrary_text(text in ".{0,300}") {
        let _ = VectorFile::parse(&text);
    }

    #[test]
    fn the_vector_parser_never_panics_on_mutated_files(
        at in any::<prop::sample::Index>(),
        cut in 0usize..40,
        insert in "[0-9e.\\-\\[\\]{}\",:a-z]{0,12}",
    ) {
        let i = at.index(VALID.len());
        let i = (0..=i).rev().find(|&k| VALID.is_char_boundary(k)).unwrap_or(0);
        let j = (i + cut).min(VALID.len());
        let j = (j..=VALID.len()).find(|&k| VALID.is_char_boundary(k)).unwrap_or(VALID.len());
        let text = format!("{}{insert}{}", &VALID[..i], &VALID[j..]);
        if let Ok(file) = VectorFile::parse(&text) {
            prop_assert!(!file.cases.is_empty());
            for case in &file.cases {
                prop_assert!(!case.quanta.is_empty());
                let _ = case.config();
                let _ = case.check(fairshare::policy::karma::batched);
            }
        }
    }
}
