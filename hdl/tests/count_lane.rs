#![allow(clippy::unwrap_used, missing_docs)]
use fairshare_hdl::count_lane::CountLane;
use rust_hdl::prelude::*;

fn tick(lane: &mut CountLane) {
    lane.clock.next = true.into();
    assert!(simulate(lane, 100));
    lane.clock.next = false.into();
    assert!(simulate(lane, 100));
}

/// The two stages: `probe`, `start` and `run` in one cycle, the count and whether the
/// probe is a key after the second edge; a new user every cycle.
#[test]
fn lane_counts_keys_below_the_probe() {
    let mut lane = CountLane::new();
    lane.connect_all();
    // (probe, start, run, keys below the probe, probe is a key)
    let cases = [
        (9u64, 10u64, 5u64, 0u64, false),
        (12, 10, 5, 2, true),
        (20, 10, 5, 5, false),
        (10, 10, 5, 0, true),
        (14, 10, 5, 4, true),
        (15, 10, 5, 5, false),
        (100, 0, 0, 0, false),
        (0xFFFF_FFFF, 1, 0x7FFF_FFFF, 0x7FFF_FFFF, false),
        (0xFFFF_FFFF, 0x8000_0001, 0x7FFF_FFFF, 0x7FFF_FFFE, true),
        (0, 0xFFFF_FFFF, 1, 0, false),
    ];
    for c in 0..=cases.len() {
        if let Some(&(probe, start, run, ..)) = cases.get(c) {
            lane.probe.next = probe.into();
            lane.start.next = start.into();
            lane.run.next = run.into();
        }
        tick(&mut lane);
        if c >= 1 {
            // The user given one cycle before this edge's.
            let (probe, start, run, below, at) = cases[c - 1];
            assert_eq!(lane.count.val(), Bits::<32>::from(below), "probe {probe} start {start} run {run}");
            assert_eq!(lane.at.val(), at, "probe {probe} start {start} run {run}");
        }
    }
    check_all(&lane).unwrap();
    let v = generate_verilog(&lane);
    assert!(v.contains("module top"));
}
