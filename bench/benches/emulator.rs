//! One quantum's round trip through the emulated device, labelled as emulation: the
//! host writes the demands into the shared-memory DMA buffer, programs the registers,
//! rings the doorbell and polls the completion record; the emulator (software model,
//! on a thread of this process) polls the doorbell, computes and writes the results.
//! What this measures is the driver protocol over shared memory plus the software
//! model, for N = 16, 256 and 4,096 users; it says nothing about PCIe latency.
//! Next to it, the same quantum computed directly by the batched software, measured
//! in the same run. Both sides start every iteration from the same instance,
//! [`fairshare_bench::karma_instance`] (the device's credits are restored before each
//! iteration, outside the measurement).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fairshare::policy::karma;
use fairshare_abi::{Mode, QuantumSettings};
use fairshare_backends::Backend;
use fairshare_bench::{device_instance, karma_instance};
use fairshare_emulator::{InProcess, Model};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn round_trip(c: &mut Criterion) {
    let mut group = c.benchmark_group("emulator_round_trip");
    group.sample_size(30).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let dir = tempfile::tempdir().expect("temporary directory");
    for users in [16usize, 256, 4096] {
        let (params, demand, credits) = karma_instance(users, 10, 42);
        let dev_in = device_instance(users, 10, 42);
        group.throughput(Throughput::Elements(users as u64));
        let path = dir.path().join(format!("bench{users}.shm"));
        let emu = InProcess::start(&path, users, 16, Model::Software, vec![]).expect("emulator");
        let mut dev = Backend::Emulator(path.clone())
            .accelerator(users, Duration::from_secs(2))
            .expect("open the emulator")
            .expect("a device backend");
        group.bench_with_input(BenchmarkId::new("emulation (software model)", users), &dev_in.demand, |b, d| {
            b.iter_custom(|iters| {
                let mut measured = Duration::ZERO;
                for _ in 0..iters {
                    dev.write_credits(&dev_in.credits).expect("restore credits");
                    let start = Instant::now();
                    black_box(
                        dev.quantum(
                            QuantumSettings { mode: Mode::Karma, fair: dev_in.fair, guaranteed: dev_in.guaranteed },
                            d,
                        )
                        .expect("quantum"),
                    );
                    measured += start.elapsed();
                }
                measured
            })
        });
        drop(dev);
        drop(emu);
        group.bench_with_input(BenchmarkId::new("software (batched, in-process)", users), &demand, |b, d| {
            b.iter(|| black_box(karma::batched(&params, d, &credits).expect("quantum")))
        });
    }
    group.finish();
}

criterion_group!(benches, round_trip);
criterion_main!(benches);
