//! One quantum of Karma and max-min, literal against batched, from 10 to three million users.
//!
//! Every instance comes from [`fairshare_bench::karma_instance`]: the bursty workload
//! after 20 warm-up quanta, so credits are diverse. The big sizes use few samples and
//! short measurement times so that `cargo bench -p fairshare-bench` stays around three
//! minutes on two cores.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use fairshare::policy::{karma, maxmin, Outcome, Workspace};
use fairshare::{Credits, Error, KarmaParams};
use fairshare_bench::software::BenchWorkload;
use fairshare_bench::{karma_instance, workload_instance};
use std::hint::black_box;
use std::time::Duration;

/// Seed of every instance (the same pool for every implementation).
const SEED: u64 = 42;

/// Few samples and short times for pools of 100,000 users and more (one iteration takes
/// milliseconds); the criterion defaults, shortened, for the small ones.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>, users: usize) {
    if users >= 100_000 {
        group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    } else {
        group.sample_size(50).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    }
}

/// A Karma quantum function: `karma::batched` or `karma::literal`.
type KarmaFn = fn(&KarmaParams, &[u64], &[Credits]) -> Result<Outcome, Error>;

/// One quantum of `quantum` per iteration on the bursty instance of `n` users, fair share 10.
fn karma_by_size(c: &mut Criterion, name: &str, quantum: KarmaFn, sizes: &[usize]) {
    let mut group = c.benchmark_group(name);
    for &n in sizes {
        let (params, demand, credits) = karma_instance(n, 10, SEED);
        configure(&mut group, n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| black_box(quantum(black_box(&params), black_box(&demand), black_box(&credits)).expect("quantum")))
        });
    }
    group.finish();
}

/// One quantum of batched Karma as the pool grows (fair share 10).
fn karma_batched(c: &mut Criterion) {
    karma_by_size(c, "karma_batched", karma::batched, &[10, 1_000, 10_000, 100_000, 1_000_000, 3_000_000]);
}

/// The oracle and the threshold search on the same pool: 10,000 users, fair share 100.
fn karma_literal_vs_batched(c: &mut Criterion) {
    let n = 10_000;
    let (params, demand, credits) = karma_instance(n, 100, SEED);
    let mut group = c.benchmark_group("karma_literal_vs_batched_n10000_f100");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(n as u64));
    for (name, quantum) in [("literal", karma::literal as KarmaFn), ("batched", karma::batched)] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(quantum(black_box(&params), black_box(&demand), black_box(&credits)).expect("quantum")))
        });
    }
    group.finish();
}

/// The literal slice-by-slice loop on small pools (fair share 10).
fn karma_literal(c: &mut Criterion) {
    karma_by_size(c, "karma_literal", karma::literal, &[10, 1_000]);
}

/// Weighted max-min water-filling by binary search on the level (fair share 10).
fn maxmin_batched(c: &mut Criterion) {
    let mut group = c.benchmark_group("maxmin_batched");
    for n in [1_000, 100_000, 1_000_000] {
        let (params, demand, _) = karma_instance(n, 10, SEED);
        configure(&mut group, n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                black_box(maxmin::batched(
                    black_box(&params.fair_share),
                    black_box(params.capacity),
                    black_box(&demand),
                ))
            })
        });
    }
    group.finish();
}

/// Before and after: the binary search (`karma::search`) and the radix selection
/// (`karma::batched_into` with a reused workspace, as an `Allocator` runs it), on both
/// benchmark workloads (bursty at f = 10, steady + on/off at f = 100).
fn karma_search_vs_radix(c: &mut Criterion) {
    for workload in BenchWorkload::ALL {
        let mut group = c.benchmark_group(format!("karma_search_vs_radix_{workload}"));
        for n in [10, 1_000, 1_000_000] {
            let (params, demand, credits) = workload_instance(workload, n, SEED);
            configure(&mut group, n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new("search", n), &n, |b, _| {
                b.iter(|| {
                    black_box(
                        karma::search(black_box(&params), black_box(&demand), black_box(&credits)).expect("quantum"),
                    )
                })
            });
            let (mut workspace, mut out) = (Workspace::default(), Outcome::default());
            group.bench_with_input(BenchmarkId::new("radix", n), &n, |b, _| {
                b.iter(|| {
                    karma::batched_into(
                        &mut workspace,
                        black_box(&params),
                        black_box(&demand),
                        black_box(&credits),
                        &mut out,
                    )
                    .expect("quantum");
                    black_box(&out);
                })
            });
        }
        group.finish();
    }
}

criterion_group!(
    benches,
    karma_batched,
    karma_literal_vs_batched,
    karma_literal,
    maxmin_batched,
    karma_search_vs_radix
);
criterion_main!(benches);
