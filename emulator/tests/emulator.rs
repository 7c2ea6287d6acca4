//! The emulated device on a thread of the test process, driven through the
//! shared-memory driver: credits through the registers, quanta through the doorbell,
//! and an injected crash that the offload backend survives.

#![allow(clippy::unwrap_used, missing_docs)]

use fairshare::offload::{Offload, Verify};
use fairshare::{Allocator, Alpha, Policy, PoolConfig};
use fairshare_abi::{Accelerator, QuantumSettings};
use fairshare_emulator::{Fault, InProcess, Model, Stopped};

fn demands(users: usize, quanta: usize) -> Vec<Vec<u64>> {
    fairshare_sim::workload::bursty(users, quanta, 10, 5)
}

#[test]
fn quanta_and_credits_through_the_shared_memory_driver() {
    let dir = tempfile::tempdir().unwrap();
    for model in [Model::Rtl, Model::Software] {
        let path = dir.path().join(format!("{model:?}.shm"));
        let emu = InProcess::start(&path, 30, 8, model, vec![]).unwrap();
        let mut dev = fairshare_driver::shm::open(&path).unwrap();
        assert_eq!(dev.info().max_users, 64);
        assert_eq!(dev.info().lanes, 8);
        let credits: Vec<u32> = (0..30).map(|u| 7 * u + 1).collect();
        dev.write_credits(&credits).unwrap();
        assert_eq!(dev.read_credits(30).unwrap(), credits);
        let config = PoolConfig::equal(30, 10, Alpha::new(1, 2).unwrap(), 0).unwrap();
        let mut pool = Allocator::new(config.clone(), Policy::Karma).unwrap();
        let mut offload = Offload::new(Allocator::new(config, Policy::Karma).unwrap(), Box::new(dev), Verify::Sync);
        for d in demands(30, 200) {
            assert_eq!(offload.allocate(&d).unwrap(), pool.allocate(&d).unwrap());
        }
        assert!(offload.on_device(), "{:?}", offload.fallback());
        assert_eq!(offload.check_device_credits(), pool.credits());
        assert!(offload.on_device(), "checkpoint through the registers: {:?}", offload.fallback());
        assert_eq!(offload.device_quanta(), 200);
        emu.stop().unwrap();
        assert!(!path.exists(), "the emulator removes its file when it stops");
    }
}

#[test]
fn the_caller_works_while_the_device_computes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlap.shm");
    let emu = InProcess::start(&path, 30, 8, Model::Software, vec![]).unwrap();
    let mut dev = fairshare_driver::shm::open(&path).unwrap();
    let (mode, d) = (fairshare_abi::Mode::Karma, (0..30).map(|u| u % 13).collect::<Vec<u32>>());
    let credits: Vec<u32> = (0..30).map(|u| u % 4).collect();
    dev.write_credits(&credits).unwrap();
    let (mut calls, mut out) = (0, Default::default());
    let overlapped =
        dev.quantum_into_overlapped(QuantumSettings { mode, fair: 10, guaranteed: 5 }, &d, &mut out, &mut || {
            calls += 1
        });
    assert!(overlapped.is_ok() && calls == 1, "{overlapped:?}: called {calls} times");
    // The same quantum again from the same credits, without the overlap: the same answer.
    dev.write_credits(&credits).unwrap();
    let again = dev.quantum(QuantumSettings { mode, fair: 10, guaranteed: 5 }, &d).unwrap();
    assert_eq!((again.alloc, again.credits), (out.alloc, out.credits));
    // An async offload checks quanta while it waits for the emulator: the emulator
    // computes on another thread and reports its time.
    let config = PoolConfig::equal(30, 10, Alpha::new(1, 2).unwrap(), 0).unwrap();
    let mut pool = Allocator::new(config.clone(), Policy::Karma).unwrap();
    dev.write_credits(&[0; 30]).unwrap();
    let mut offload = Offload::new(Allocator::new(config, Policy::Karma).unwrap(), Box::new(dev), Verify::Async);
    for d in demands(30, 200) {
        assert_eq!(offload.allocate(&d).unwrap(), pool.allocate(&d).unwrap());
    }
    offload.settle();
    let checks = offload.checks();
    assert!(offload.on_device(), "{:?}", offload.fallback());
    assert_eq!(checks.total(), 200, "{checks:?}");
    assert!(checks.while_waiting > 0, "{checks:?}");
    emu.stop().unwrap();
}

#[test]
fn a_crash_mid_quantum_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.shm");
    let emu = InProcess::start(&path, 20, 4, Model::Software, vec!["crash@6".parse::<Fault>().unwrap()]).unwrap();
    let mut dev = fairshare_driver::shm::open(&path).unwrap();
    dev.timeout = std::time::Duration::from_millis(200);
    let config = PoolConfig::equal(20, 10, Alpha::new(1, 2).unwrap(), 50).unwrap();
    let mut pool = Allocator::new(config.clone(), Policy::Karma).unwrap();
    let mut offload = Offload::new(Allocator::new(config, Policy::Karma).unwrap(), Box::new(dev), Verify::Invariants);
    for d in demands(20, 30) {
        assert_eq!(offload.allocate(&d).unwrap(), pool.allocate(&d).unwrap());
        assert_eq!(offload.allocator().credits(), pool.credits());
    }
    let fb = offload.fallback().unwrap();
    assert_eq!(fb.quantum, 5);
    // The crashed emulator drops its end of the connection, so the handle sees it gone
    // within a millisecond instead of waiting out its 200 ms timeout.
    assert_eq!(fb.error.kind(), "gone", "{fb}");
    assert!(fb.to_string().contains("is gone"), "{fb}");
    assert_eq!(emu.stop(), Err(Stopped::Crashed), "the emulator thread reports the injected crash");
}

#[test]
fn bad_fault_specs_are_refused_with_the_reason() {
    for (spec, words) in
        [("late", "KIND@QUANTUM"), ("melt@3", "use late"), ("late@x", "not a quantum"), ("late@0", "from 1")]
    {
        let e = spec.parse::<Fault>().unwrap_err();
        assert!(e.0.contains(words), "{spec}: {e}");
    }
}
