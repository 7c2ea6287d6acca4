//! The offload path as its caller sees it, quantum by quantum: what
//! `fairshare bench offload` prints and the bench report's offload table.
//!
//! A run puts an equal-share pool (alpha = 1/2, [`crate::INITIAL_CREDITS`] each) on a
//! device through [`Offload`] with a [`Verify`] mode and runs the quanta as a caller
//! would and, in the same run, the same demands through a software [`Allocator`] alone
//! (the device idle, the verifier settled), the two taking turns in blocks of [`BLOCK`]
//! quanta so that both see the machine in the same state. After an untimed warm-up
//! ([`crate::WARM_UP_QUANTA`] quanta and at least [`WARM_UP`]) it records per quantum:
//! - `software_ns`: the batched software alone (the reference pool's `allocate`);
//! - `round_trip_ns`: the device call, demands written to results read;
//! - `device_ns`: what the device reported for its own work;
//! - `host_overhead_ns`: round trip minus device time (the protocol's cost);
//! - `critical_path_ns`: the whole `Offload::allocate`, checks included;
//! - `beyond_device_ns`: each quantum's critical path minus its own device time (what
//!   the caller waited for beyond the device: protocol, admission, checks), taken per
//!   quantum, so that its median is not the difference of two medians;
//! - `verifier_ns`: the exact software check of one quantum (the software's own quantum
//!   with `sync`; otherwise a check, by the caller while it waited for the device or by
//!   the verifier thread: `checked_while_waiting`, `checked_by_thread` and
//!   `checked_on_demand` count which).
//!
//! Every quantum's allocations, the warm-up's too, are also compared with the software's
//! (through a 64-bit digest of each): `mismatches` counts the quanta where the allocation
//! the caller got differs (0 without faults).

use crate::software::{BenchWorkload, RING_VALUES};
use fairshare::offload::{Offload, Verify};
use fairshare::{Allocator, Alpha, Policy, PoolConfig};
use fairshare_backends::Backend;
use fairshare_emulator::{InProcess, Model};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

/// The least wall time of the untimed warm-up.
pub const WARM_UP: Duration = Duration::from_millis(300);

/// Quanta per block: the offloaded pool and the software alone take turns, a block each,
/// on the same demands (several times [`fairshare::offload::VERIFIER_DEPTH`], so that
/// the verifier, settled between blocks, reaches its steady state within one).
pub const BLOCK: usize = 250;

/// Lanes of the emulators a run starts itself.
pub const EMULATOR_LANES: usize = 16;

/// Where the quanta go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// An emulator the run starts on a thread of this process, with the engine's
    /// software model (`emulator`) or the RustHDL engine (`emulator-rtl`), shared memory
    /// and futex signalling exactly as with `fairshare device-sim`.
    Emulator(Model),
    /// A device backend of `--backend` (`rtl-sim`, `emulator:PATH`, `vfio:ADDRESS`).
    Backend(Backend),
}

impl FromStr for Device {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "emulator" => return Ok(Device::Emulator(Model::Software)),
            "emulator-rtl" => return Ok(Device::Emulator(Model::Rtl)),
            _ => {}
        }
        match s.parse::<Backend>().map_err(|e| e.0)? {
            Backend::Software | Backend::Literal => Err(format!(
                "backend `{s}`: the offload bench needs a device: emulator (started here), emulator-rtl, rtl-sim, emulator:PATH or vfio:ADDRESS"
            )),
            b => Ok(Device::Backend(b)),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Emulator(Model::Software) => f.write_str("emulator"),
            Device::Emulator(Model::Rtl) => f.write_str("emulator-rtl"),
            Device::Backend(b) => b.fmt(f),
        }
    }
}

impl Serialize for Device {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What to measure.
#[derive(Clone, Debug, Serialize)]
pub struct OffloadRun {
    /// Users in the pool.
    pub users: usize,
    /// Timed quanta.
    pub quanta: usize,
    /// The device.
    pub backend: Device,
    /// How results are verified.
    #[serde(serialize_with = "display")]
    pub verify: Verify,
    /// The workload (Karma, its fair share).
    pub workload: BenchWorkload,
    /// The workload's seed.
    pub seed: u64,
}

fn display<S: serde::Serializer>(v: &Verify, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Median and 99th percentile (nearest rank) of one quantity per quantum, in
/// nanoseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Spread {
    /// Of `values` (0 and 0 for none).
    pub fn of(mut values: Vec<f64>) -> Spread {
        if values.is_empty() {
            return Spread::default();
        }
        values.sort_by(f64::total_cmp);
        let p99 = values[(values.len() * 99).div_ceil(100).saturating_sub(1)];
        Spread { median: values[values.len() / 2], p99 }
    }
}

/// What one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct OffloadReport {
    /// What ran.
    #[serde(flatten)]
    pub run: OffloadRun,
    /// The batched software alone.
    pub software_ns: Spread,
    /// Doorbell to results usable.
    pub round_trip_ns: Spread,
    /// The device's own time.
    pub device_ns: Spread,
    /// Round trip minus device time.
    pub host_overhead_ns: Spread,
    /// Everything the caller waited for.
    pub critical_path_ns: Spread,
    /// Each quantum's critical path minus its device time.
    pub beyond_device_ns: Spread,
    /// The exact check of one quantum.
    pub verifier_ns: Spread,
    /// Timed quanta whose allocations differed from the software's.
    pub mismatches: u64,
    /// Why the pool left the device, if it did.
    pub fallback: Option<String>,
    /// Quanta the device answered.
    pub device_quanta: u64,
    /// Quanta recomputed by the caller while it waited for the device (the whole run,
    /// warm-up included).
    pub checked_while_waiting: u64,
    /// Quanta recomputed by the verifier thread.
    pub checked_by_thread: u64,
    /// Quanta recomputed by the caller when it had to wait for them (the queue full,
    /// the final settle).
    pub checked_on_demand: u64,
    /// CPU cores this process may use.
    pub cores: usize,
}

/// A 64-bit fingerprint of an allocation vector (FNV-1a over the values).
fn digest(alloc: &[u64]) -> u64 {
    alloc.iter().fold(0xcbf2_9ce4_8422_2325, |h, &a| (h ^ a).wrapping_mul(0x0100_0000_01b3))
}

/// Why the offload bench could not run.
#[derive(Debug, thiserror::Error)]
pub enum OffloadBenchError {
    /// A size of zero.
    #[error("--users {users} --quanta {quanta}: both must be at least 1")]
    Size {
        /// Users asked for.
        users: usize,
        /// Quanta asked for.
        quanta: usize,
    },
    /// The pool could not be made, or the software refused a quantum.
    #[error("{what}: {source}")]
    Pool {
        /// The pool or the quantum.
        what: String,
        /// The library's error.
        #[source]
        source: fairshare::Error,
    },
    /// The emulator's folder could not be made.
    #[error("a temporary folder for the emulator: {0}")]
    Folder(#[source] std::io::Error),
    /// The emulator could not start.
    #[error(transparent)]
    Emulator(#[from] fairshare_emulator::EmulatorError),
    /// The backend could not be opened.
    #[error(transparent)]
    Backend(#[from] fairshare_backends::BackendError),
    /// The backend is the software.
    #[error("backend {0} is not a device")]
    NotADevice(Backend),
    /// The device refused the pool.
    #[error("backend {backend} does not take the pool: {fallback}")]
    Refused {
        /// The backend.
        backend: Backend,
        /// Why, as the offload recorded it.
        fallback: fairshare::offload::Fallback,
    },
}

fn pool_error(what: impl Into<String>) -> impl FnOnce(fairshare::Error) -> OffloadBenchError {
    let what = what.into();
    move |source| OffloadBenchError::Pool { what, source }
}

/// Runs the measurement. Errors name what could not be set up (the emulator, the
/// device, the pool) or a quantum the software refused.
pub fn measure(run: &OffloadRun) -> Result<OffloadReport, OffloadBenchError> {
    let users = run.users;
    if users == 0 || run.quanta == 0 {
        return Err(OffloadBenchError::Size { users, quanta: run.quanta });
    }
    let f = run.workload.fair_share();
    let config = Alpha::new(1, 2)
        .and_then(|alpha| PoolConfig::equal(users, f, alpha, crate::INITIAL_CREDITS))
        .map_err(pool_error("the pool"))?;
    let dir = tempfile::tempdir().map_err(OffloadBenchError::Folder)?;
    let (backend, _emulator) = match &run.backend {
        Device::Emulator(model) => {
            let path = dir.path().join("bench.shm");
            let emu = InProcess::start(&path, users, EMULATOR_LANES, *model, vec![])?;
            (Backend::Emulator(path), Some(emu))
        }
        Device::Backend(b) => (b.clone(), None),
    };
    let device = backend
        .accelerator(users, Duration::from_secs(30))?
        .ok_or_else(|| OffloadBenchError::NotADevice(backend.clone()))?;
    let mut reference = Allocator::new(config.clone(), Policy::Karma).map_err(pool_error("the pool"))?;
    let pool = Allocator::new(config, Policy::Karma).map_err(pool_error("the pool"))?;
    let mut offload = Offload::new(pool, device, run.verify);
    if let Some(fb) = offload.fallback() {
        return Err(OffloadBenchError::Refused { backend, fallback: fb.clone() });
    }
    let total = crate::WARM_UP_QUANTA + run.quanta;
    let ring = run.workload.demands(users, total.min((RING_VALUES / users).max(2)), run.seed);
    // The offloaded pool, quantum after quantum as a caller runs it, and the software
    // alone on the same demands (nothing else running: the device idle, the verifier
    // settled), in alternating blocks of BLOCK quanta, so that both see the machine in
    // the same state (on a shared machine its speed drifts by tens of percent within
    // seconds); each quantum's allocation is compared through its digest.
    let mut t: [Vec<f64>; 7] = Default::default();
    let mut digests = Vec::with_capacity(BLOCK);
    // Warm-up, untimed: the warm-up quanta of every bench, and at least WARM_UP of wall
    // time, because the scheduler first runs a new emulator thread on its creator's core
    // and takes a while to give each its own. The software follows it untimed.
    let begin = Instant::now();
    let mut warm = 0;
    while warm < crate::WARM_UP_QUANTA || begin.elapsed() < WARM_UP {
        let got = offload.allocate(&ring[warm % ring.len()]).map_err(pool_error(format!("warm-up quantum {warm}")))?;
        digests.push(digest(got));
        warm += 1;
    }
    // The software on the quanta `from..` whose digests the offload issued: their times
    // into `times`, their differences into `mismatches`.
    let mut mismatches = 0;
    let mut software = |from: usize, digests: &mut Vec<u64>, times: &mut Vec<f64>| {
        for (q, issued) in (from..).zip(digests.drain(..)) {
            let start = Instant::now();
            let want = reference.allocate(&ring[q % ring.len()]).map_err(pool_error(format!("quantum {q}")))?;
            times.push(start.elapsed().as_nanos() as f64);
            mismatches += u64::from(digest(want) != issued);
        }
        Ok::<(), OffloadBenchError>(())
    };
    offload.settle();
    software(0, &mut digests, &mut Vec::new())?;
    let end = warm + run.quanta;
    for block in (warm..end).step_by(BLOCK) {
        for q in block..(block + BLOCK).min(end) {
            let got = offload.allocate(&ring[q % ring.len()]).map_err(pool_error(format!("quantum {q}")))?;
            digests.push(digest(got));
            let timing = offload.timing();
            let device = timing.device_ns as f64;
            let round_trip = timing.round_trip_ns as f64;
            let on_device = timing.round_trip_ns > 0;
            let values = [
                (round_trip, on_device),
                (device, on_device),
                (round_trip - device, on_device),
                (timing.critical_path_ns as f64, on_device),
                (timing.critical_path_ns as f64 - device, on_device),
                (timing.verifier_ns as f64, timing.verifier_ns > 0),
            ];
            for (column, (v, keep)) in t[1..].iter_mut().zip(values) {
                if keep {
                    column.push(v);
                }
            }
        }
        offload.settle();
        software(block, &mut digests, &mut t[0])?;
    }
    let checks = offload.checks();
    let [software, round_trip, device, overhead, critical, beyond, verifier] = t.map(Spread::of);
    Ok(OffloadReport {
        run: run.clone(),
        software_ns: software,
        round_trip_ns: round_trip,
        device_ns: device,
        host_overhead_ns: overhead,
        critical_path_ns: critical,
        beyond_device_ns: beyond,
        verifier_ns: verifier,
        mismatches,
        fallback: offload.fallback().map(ToString::to_string),
        device_quanta: offload.device_quanta(),
        checked_while_waiting: checks.while_waiting,
        checked_by_thread: checks.by_thread,
        checked_on_demand: checks.on_demand,
        cores: std::thread::available_parallelism().map_or(1, usize::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_and_print_back() {
        for s in ["emulator", "emulator-rtl", "rtl-sim", "emulator:/tmp/x.shm", "vfio:0000:01:00.0"] {
            assert_eq!(s.parse::<Device>().unwrap().to_string(), s);
        }
        let e = "software".parse::<Device>().unwrap_err();
        assert!(e.contains("needs a device"), "{e}");
        assert!("gpu".parse::<Device>().unwrap_err().contains("use software"));
    }

    #[test]
    fn a_run_on_the_emulator_times_every_part_and_agrees_with_the_software() {
        // Async also over more than one block: the software's turns follow the offload's
        // quanta exactly, or the digests differ.
        let runs = [(Verify::Sync, 40), (Verify::Async, BLOCK + 40), (Verify::Sample(4), 40), (Verify::Invariants, 40)];
        for (verify, quanta) in runs {
            let run = OffloadRun {
                users: 300,
                quanta,
                backend: Device::Emulator(Model::Software),
                verify,
                workload: BenchWorkload::Bursty,
                seed: 3,
            };
            let r = measure(&run).unwrap();
            assert_eq!((r.mismatches, r.fallback.as_deref()), (0, None), "{verify}");
            assert!(r.device_quanta >= 60, "{verify}: {}", r.device_quanta);
            for (name, s) in [
                ("software", r.software_ns),
                ("round trip", r.round_trip_ns),
                ("device", r.device_ns),
                ("critical path", r.critical_path_ns),
            ] {
                assert!(s.median > 0.0 && s.p99 >= s.median, "{verify}: {name} {s:?}");
            }
            assert!(r.round_trip_ns.median >= r.device_ns.median, "{verify}: the round trip holds the device time");
            assert!(
                r.critical_path_ns.median >= r.round_trip_ns.median,
                "{verify}: the critical path holds the round trip"
            );
            // Per quantum the critical path holds the device time.
            assert!(r.beyond_device_ns.median > 0.0, "{verify}: {:?}", r.beyond_device_ns);
            assert!(r.beyond_device_ns.median < r.critical_path_ns.median, "{verify}: {:?}", r.beyond_device_ns);
            let verified = r.verifier_ns.median > 0.0;
            assert_eq!(verified, verify != Verify::Invariants, "{verify}: {:?}", r.verifier_ns);
            let json = serde_json::to_value(&r).unwrap();
            assert_eq!(json["verify"].as_str(), Some(verify.to_string().as_str()));
            assert_eq!(json["backend"].as_str(), Some("emulator"));
            assert!(json["host_overhead_ns"]["median"].is_number());
        }
        let zero = OffloadRun {
            users: 0,
            quanta: 1,
            backend: Device::Emulator(Model::Software),
            verify: Verify::Async,
            workload: BenchWorkload::Bursty,
            seed: 1,
        };
        assert!(measure(&zero).unwrap_err().to_string().contains("at least 1"));
    }
}
