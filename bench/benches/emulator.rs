//! One quantum's round trip through the emulated device, labelled as emulation: the
//! host writes the demands into the shared-memory DMA buffer, programs the registers,
//! rings the doorbell and polls the completion record; the emulator (software model,
//! on a thread of this process) polls the doorbell, computes and writes the results.
//! What this measures is the driver protocol over shared memory plus the software
//! model, for N = 16, 256 and 4,096 users; it says nothing about PCIe latency.
//! Next to it, the same quantum computed directly by the batched software, measured
//! in the same run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairshare::policy::karma;
use fairshare::{Alpha, Credits, KarmaParams, PoolConfig};
use fairshare_sim::device::{InProcess, Model};
use std::hint::black_box;
use std::time::Duration;

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("emulator_round_trip");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let dir = tempfile::tempdir().expect("temporary directory");
    for users in [16usize, 256, 4096] {
        let demand: Vec<u32> = fairshare_sim::workload::bursty(users, 1, 10, 7)[0].iter().map(|&d| d as u32).collect();
        group.throughput(Throughput::Elements(users as u64));
        let path = dir.path().join(format!("bench{users}.shm"));
        let emu = InProcess::start(&path, users, 16, Model::Software, vec![]).expect("emulator");
        let mut dev = fairshare_driver::shm::open(&path).expect("open the emulator");
        dev.write_credits(&vec![1_000; users]).expect("restore credits");
        group.bench_with_input(BenchmarkId::new("emulation (software model)", users), &demand, |b, d| {
            b.iter(|| black_box(dev.quantum(0, 10, 5, d).expect("quantum")))
        });
        drop(dev);
        drop(emu);
        let config = PoolConfig::equal(users, 10, Alpha::new(1, 2).expect("alpha"), 1_000).expect("pool");
        let params = KarmaParams::from_config(&config).expect("params");
        let credits = vec![Credits::from_raw(1_000 << 16); users];
        let d: Vec<u64> = demand.iter().map(|&x| x as u64).collect();
        group.bench_with_input(BenchmarkId::new("software (batched, in-process)", users), &d, |b, d| {
            b.iter(|| black_box(karma::batched(&params, d, &credits).expect("quantum")))
        });
    }
    group.finish();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
