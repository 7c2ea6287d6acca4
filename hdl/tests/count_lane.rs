#![allow(clippy::unwrap_used, missing_docs)]
use fairshare_hdl::count_lane::{CountLane, PROBES};
use rust_hdl::prelude::*;

#[test]
fn lane_counts_keys_below_probes() {
    let mut lane = CountLane::new();
    lane.connect_all();
    for (start, run, probes, sums, want) in [
        (10u64, 5u64, [9u64, 12, 20], [0u64, 7, 1], [0u64, 9, 6]),
        (0, 0, [1, 100, 0xFFFF_FFFF], [3, 3, 3], [3, 3, 3]),
        (1, 4, [1, 2, 5], [0, 0, 0xFFFF_FFFE], [0, 1, 0xFFFF_FFFF]),
    ] {
        lane.start.next = start.into();
        lane.run.next = run.into();
        for j in 0..PROBES {
            lane.probe[j].next = probes[j].into();
            lane.sum_in[j].next = sums[j].into();
        }
        assert!(simulate(&mut lane, 100));
        for j in 0..PROBES {
            assert_eq!(lane.sum_out[j].val(), Bits::<32>::from(want[j]), "start {start} run {run} probe {}", probes[j]);
        }
    }
    check_all(&lane).unwrap();
    let v = generate_verilog(&lane);
    assert!(v.contains("module top"));
}
