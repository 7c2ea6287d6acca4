//! The ledger reader on arbitrary bytes (proptest as
//! the fuzzer, on stable Rust). Whatever the bytes, [`records`] does not panic, its
//! whole records re-frame to exactly the bytes they came from, and a valid log with
//! any cut of its end reads as the commits before the cut.

use fairshare_ledger::{record, records, HEADER};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn the_ledger_reader_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let r = records(&bytes);
        prop_assert!(r.valid_len <= bytes.len());
        let reframed: Vec<u8> = r.payloads.iter().flat_map(|p| record(p)).collect();
        prop_assert_eq!(&reframed[..], &bytes[..r.valid_len]);
    }

    #[test]
    fn a_log_cut_anywhere_reads_as_the_commits_before_the_cut(
        states in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..8),
        cut in any::<prop::sample::Index>(),
        flip in any::<prop::sample::Index>(),
    ) {
        let log: Vec<u8> = states.iter().flat_map(|s| record(s)).collect();
        let at = cut.index(log.len() + 1);
        let r = records(&log[..at]);
        prop_assert!(r.tail.is_ok());
        let mut whole = 0;
        let mut ends = 0;
        for s in &states {
            ends += HEADER + s.len();
            if ends <= at { whole += 1; }
        }
        prop_assert_eq!(r.payloads.len(), whole);
        for (p, s) in r.payloads.iter().zip(&states) {
            prop_assert_eq!(*p, &s[..]);
        }
        // One flipped bit in a payload that is not the last record is damage, never a
        // silently different state.
        let mut damaged = log.clone();
        let i = flip.index(damaged.len());
        damaged[i] ^= 1;
        let d = records(&damaged);
        for (p, s) in d.payloads.iter().zip(&states) {
            prop_assert_eq!(*p, &s[..], "a record that reads back is the one written");
        }
    }
}
