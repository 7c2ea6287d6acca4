//! `cargo run --release -p fairshare-bench --bin report`: offload vs software, measured
//! side by side in one run, written to `bench/REPORT.md` with a plot
//! (`bench/report_time.svg` and `.png`).
//!
//! Software: one Karma quantum (batched) for n = 10 .. 1,000,000 users, the literal loop
//! for small n, max-min; before (binary search) and after (radix selection) side by
//! side for two workloads. Engine: cycles per quantum from RustHDL simulation (every
//! quantum checked against the software) for N = 64 .. 4,096 and P = 1, 4, 16 lanes,
//! converted to time at the clock place-and-route measured and at a stated target
//! clock: projections, labelled so. The offload path through the emulator and rtl-sim,
//! measured part by part ([`fairshare_bench::offload`]). The ratio offload / software
//! per N.

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use fairshare::offload::Verify;
use fairshare::policy::karma;
use fairshare::{Implementation, Policy};
use fairshare_bench::karma_instance;
use fairshare_bench::offload::{self, OffloadReport, OffloadRun, Spread};
use fairshare_bench::placed::{self, Placed};
use fairshare_bench::software::{self as sw_bench, BenchWorkload};
use fairshare_report::chart::{Chart, LineChart, Marks, Scale, Series};

/// The clock nextpnr reported after routing the 1-lane, 64-user engine on an iCE40 HX8K
/// (`hdl/SYNTHESIS.md`).
const PNR_MHZ: f64 = 21.6;
/// A stated target clock for a mid-range FPGA part: an assumption, not a result.
const TARGET_MHZ: f64 = 250.0;
/// Users in the software measurements.
const SOFTWARE_N: [usize; 10] = [10, 64, 100, 256, 1_000, 1_024, 4_096, 10_000, 100_000, 1_000_000];
/// Users in the literal loop's measurements (it is quadratic-ish in slices).
const LITERAL_N: [usize; 3] = [10, 100, 1_000];
/// Engine shapes.
const ENGINE_N: [usize; 4] = [64, 256, 1_024, 4_096];
const ENGINE_P: [usize; 4] = [1, 4, 8, 16];
/// The speed grade whose placed clocks the report uses (6, the slowest ECP5 grade).
const PLACED_SPEED: u32 = 6;
/// Quanta simulated per engine shape.
const ENGINE_QUANTA: usize = 6;

/// Median time of one call of `f`, in nanoseconds: 7 batches of enough calls to last
/// about 30 ms each (at least one call per batch).
fn median_ns(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    f();
    let once = start.elapsed().max(Duration::from_nanos(20));
    let calls = (Duration::from_millis(30).as_nanos() / once.as_nanos()).clamp(1, 1_000_000) as u32;
    let mut per_call: Vec<f64> = (0..7)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..calls {
                f();
            }
            start.elapsed().as_nanos() as f64 / f64::from(calls)
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[3]
}

/// A duration for tables.
fn show(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// One pool size, bursty workload (f = 10): the batched Karma and max-min (radix
/// selection), and the literal loop for small n.
struct Software {
    n: usize,
    karma: f64,
    maxmin: f64,
    literal: Option<f64>,
}

/// Before and after the radix selection, same run: median per quantum of the binary
/// search (`Implementation::Search`) and of the radix selection (`Batched`), as an
/// `Allocator` runs them, per workload and n.
struct BeforeAfter {
    workload: BenchWorkload,
    n: usize,
    karma_search: f64,
    karma_radix: f64,
    maxmin_search: f64,
    maxmin_radix: f64,
}

/// Users in the before/after table.
const BEFORE_AFTER_N: [usize; 5] = [10, 1_000, 10_000, 100_000, 1_000_000];

fn before_after() -> Result<Vec<BeforeAfter>, String> {
    let mut out = Vec::new();
    for workload in BenchWorkload::ALL {
        for &n in &BEFORE_AFTER_N {
            eprintln!("report: before/after, {workload}, n = {n}");
            let quanta = if n >= 100_000 { 30 } else { 200 };
            let run = |policy, imp| {
                let run = sw_bench::SoftwareRun { users: n, quanta, policy, implementation: imp, workload, seed: 42 };
                sw_bench::measure(run).map(|r| r.median_ns).map_err(|e| e.to_string())
            };
            out.push(BeforeAfter {
                workload,
                n,
                karma_search: run(Policy::Karma, Implementation::Search)?,
                karma_radix: run(Policy::Karma, Implementation::Batched)?,
                maxmin_search: run(Policy::MaxMin, Implementation::Search)?,
                maxmin_radix: run(Policy::MaxMin, Implementation::Batched)?,
            });
        }
    }
    Ok(out)
}

struct Engine {
    n: usize,
    p: usize,
    min: u32,
    median: u32,
    max: u32,
}

fn software() -> Vec<Software> {
    SOFTWARE_N
        .iter()
        .map(|&n| {
            eprintln!("report: software, n = {n}");
            let (params, demand, credits) = karma_instance(n, 10, 42);
            let karma = median_ns(|| {
                black_box(karma::batched(&params, &demand, &credits).expect("a valid instance"));
            });
            let maxmin = median_ns(|| {
                black_box(fairshare::policy::maxmin::batched(&params.fair_share, params.capacity, &demand));
            });
            let literal = LITERAL_N.contains(&n).then(|| {
                median_ns(|| {
                    black_box(karma::literal(&params, &demand, &credits).expect("a valid instance"));
                })
            });
            Software { n, karma, maxmin, literal }
        })
        .collect()
}

fn engines() -> Result<Vec<Engine>, String> {
    let mut out = Vec::new();
    for &n in &ENGINE_N {
        for &p in &ENGINE_P {
            eprintln!("report: engine simulation, N = {n}, P = {p}");
            let demands = fairshare_sim::workload::bursty(n, ENGINE_QUANTA, 10, 42);
            let mut cycles =
                fairshare_hdl::catalog::karma_cycles(p, 10, 5, 1_000, &demands).map_err(|e| e.to_string())?;
            cycles.sort_unstable();
            out.push(Engine { n, p, min: cycles[0], median: cycles[cycles.len() / 2], max: cycles[cycles.len() - 1] });
        }
    }
    Ok(out)
}

/// The device of the offload measurements' main rows.
const EMULATOR: offload::Device = offload::Device::Emulator(fairshare_emulator::Model::Software);

/// Users in the offload measurements.
const OFFLOAD_N: [usize; 6] = [64, 256, 1_024, 4_096, 16_384, 65_536];
/// Users of the rtl-sim offload rows (the RTL simulates cycle by cycle).
const OFFLOAD_RTL_N: [usize; 2] = [64, 256];

/// One offload measurement ([`fairshare_bench::offload`]).
fn offload_run(n: usize, backend: &str, verify: Verify, quanta: usize) -> Result<OffloadReport, String> {
    eprintln!("report: offload, N = {n}, {backend}, --verify {verify}");
    let run =
        OffloadRun { users: n, quanta, backend: backend.parse()?, verify, workload: BenchWorkload::Bursty, seed: 42 };
    offload::measure(&run).map_err(|e| e.to_string())
}

/// The offload path per N: the emulator (software model) with async and sync
/// verification, and the in-process RTL for small N.
fn offloads() -> Result<Vec<OffloadReport>, String> {
    let mut out = Vec::new();
    for &n in &OFFLOAD_N {
        let quanta = if n >= 16_384 { 200 } else { 1_000 };
        for verify in [Verify::Async, Verify::Sync] {
            out.push(offload_run(n, "emulator", verify, quanta)?);
        }
    }
    for &n in &OFFLOAD_RTL_N {
        out.push(offload_run(n, "rtl-sim", Verify::Async, 10)?);
    }
    Ok(out)
}

/// The emulator's round trip per N with async verification (for the summary table).
fn round_trips(off: &[OffloadReport]) -> Vec<(usize, f64)> {
    off.iter()
        .filter(|r| r.run.verify == Verify::Async && r.run.backend == EMULATOR)
        .map(|r| (r.run.users, r.round_trip_ns.median))
        .collect()
}

fn plot_offload(dir: &Path, off: &[OffloadReport]) -> Result<(), String> {
    let us = |ns: f64| ns / 1e3;
    let pick = |verify: Verify| off.iter().filter(move |r| r.run.verify == verify && r.run.backend == EMULATOR);
    let line = |name: &str, rgb, value: &dyn Fn(&OffloadReport) -> f64, verify: Verify| Series {
        name: name.into(),
        points: pick(verify).map(|r| (r.run.users as f64, us(value(r)))).collect(),
        rgb,
        marks: Marks::LineAndPoints,
    };
    let series = vec![
        line("software alone (batched)", (0, 0, 255), &|r| r.software_ns.median, Verify::Async),
        line("device (emulator, software model)", (0, 0, 0), &|r| r.device_ns.median, Verify::Async),
        line("host overhead (round trip - device)", (255, 127, 14), &|r| r.host_overhead_ns.median, Verify::Async),
        line("critical path, --verify async", (0, 160, 0), &|r| r.critical_path_ns.median, Verify::Async),
        line("critical path, --verify sync", (255, 0, 0), &|r| r.critical_path_ns.median, Verify::Sync),
        line("verifier thread, one quantum", (148, 103, 189), &|r| r.verifier_ns.median, Verify::Async),
    ];
    let chart = LineChart {
        title: "Offloaded Karma quantum through the emulator: where the time goes (measured)".into(),
        x: ("users".into(), 40.0..1e5),
        y: ("µs per quantum (median)".into(), 1e-1..1e5),
        scale: Scale::LogLog,
        series,
    };
    chart.write(dir, "report_offload").map_err(|e| e.to_string())?;
    Ok(())
}

/// The offload section of the report.
fn offload_markdown(md: &mut String, off: &[OffloadReport]) {
    let cores = off.first().map_or(0, |r| r.cores);
    let block = offload::BLOCK;
    let _ = writeln!(
        md,
        "\n## The offload path, measured\n\n`fairshare_bench::offload` (what `fairshare bench offload` prints): a Karma pool \
         (bursty workload, f = 10) on a device through `Offload`, quantum after quantum as a caller runs it, and the batched \
         software alone on the same demands in the same run, in alternating blocks of {block} quanta (the verifier \
         settled between blocks), each after an untimed warm-up (20 quanta and at least 300 ms); \
         medians (p99 in brackets) per quantum, 1,000 quanta (200 from N = 16,384). `emulator`: the \
         emulated device with the engine's software model on a thread of this process, over the shared-memory protocol \
         (futex signalling, bulk copies); `rtl-sim`: the RustHDL engine in process (its device time is simulation time). \
         Round trip: the device call, demands written to results read; device: what the device reported (the \
         emulator's clock, doorbell to last result); host overhead: round trip minus device; critical path: everything \
         the caller of `allocate` waited for, checks included; beyond device: each quantum's critical path minus its \
         own device time (protocol, admission, checks), per quantum, and the ratio is its median over the software's \
         median; verifier: the exact software check of one quantum, inline \
         with `sync`, on the verifier thread with `async`. {cores} cores: the emulator, the caller and (async) the \
         verifier share them.\n"
    );
    let _ = writeln!(
        md,
        "| N | backend | verify | software | round trip | device | host overhead | critical path | beyond device | verifier | beyond device / software | mismatches |\n\
         |---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let cell = |s: Spread| format!("{} ({})", show(s.median), show(s.p99));
    for r in off {
        let ratio = r.beyond_device_ns.median / r.software_ns.median;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {ratio:.2} | {}{} |",
            r.run.users,
            r.run.backend,
            r.run.verify,
            cell(r.software_ns),
            cell(r.round_trip_ns),
            cell(r.device_ns),
            cell(r.host_overhead_ns),
            cell(r.critical_path_ns),
            cell(r.beyond_device_ns),
            cell(r.verifier_ns),
            r.mismatches,
            r.fallback.as_deref().map(|f| format!(" (fallback: {f})")).unwrap_or_default(),
        );
    }
    let _ = writeln!(md, "\n![offload](report_offload.svg)");
}

fn plot(dir: &Path, sw: &[Software], hw: &[Engine], emu: &[(usize, f64)]) -> Result<(), String> {
    let us = |ns: f64| ns / 1e3;
    let line = |name: &str, points: Vec<(f64, f64)>, rgb| Series {
        name: name.into(),
        points,
        rgb,
        marks: Marks::LineAndPoints,
    };
    let mut series = vec![
        line("software Karma (batched)", sw.iter().map(|s| (s.n as f64, us(s.karma))).collect(), (0, 0, 255)),
        line(
            "software Karma (literal loop)",
            sw.iter().filter_map(|s| s.literal.map(|l| (s.n as f64, us(l)))).collect(),
            (148, 103, 189),
        ),
        line("software max-min", sw.iter().map(|s| (s.n as f64, us(s.maxmin))).collect(), (0, 255, 0)),
        line("emulator round trip (shared memory)", emu.iter().map(|&(n, t)| (n as f64, us(t))).collect(), (0, 0, 0)),
    ];
    for (mhz, rgb) in [(PNR_MHZ, (255, 127, 14)), (TARGET_MHZ, (255, 0, 0))] {
        let points = hw.iter().filter(|e| e.p == 16).map(|e| (e.n as f64, f64::from(e.median) / mhz)).collect();
        series.push(line(&format!("engine, 16 lanes, at {mhz} MHz (projection)"), points, rgb));
    }
    let chart = LineChart {
        title: "Time per Karma quantum (engine: projections from simulated cycles)".into(),
        x: ("users".into(), 5.0..2e6),
        y: ("µs per quantum".into(), 1e-2..1e6),
        scale: Scale::LogLog,
        series,
    };
    chart.write(dir, "report_time").map_err(|e| e.to_string())?;
    Ok(())
}

/// The report, all but its offload section ([`offload_markdown`]), section by section.
fn markdown(sw: &[Software], ba: &[BeforeAfter], hw: &[Engine], placed: &[Placed], emu: &[(usize, f64)]) -> String {
    let mut md = String::new();
    intro_markdown(&mut md);
    software_markdown(&mut md, sw);
    before_after_markdown(&mut md, ba);
    engine_markdown(&mut md, hw, placed, sw);
    ratio_markdown(&mut md, sw, hw, emu);
    caveats_markdown(&mut md, sw, hw);
    md
}

/// The CPU's model name as `/proc/cpuinfo` gives it (for the report's first line).
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// The report's title, the machine and the conditions of every measurement, the plot.
fn intro_markdown(md: &mut String) {
    let cpu = cpu_model();
    let _ = writeln!(
        md,
        "# Offload vs software\n\nWritten by `cargo run --release -p fairshare-bench --bin report` on {} cores of {cpu}. \
         All numbers come from this one run. Software times are medians of 7 batches (wall clock). Every instance is \
         an equal-share pool with f = 10 and alpha = 1/2, after 20 warm-up quanta of the bursty workload (seed 42).\n",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let _ = writeln!(md, "![time per quantum](report_time.svg)\n");
}

/// The software section: the batched Karma and max-min, the literal loop, per n.
fn software_markdown(md: &mut String, sw: &[Software]) {
    let _ = writeln!(md, "## Software, per quantum (measured)\n");
    let _ = writeln!(
        md,
        "| n users | Karma batched | per user | Karma literal loop | max-min batched |\n|---:|---:|---:|---:|---:|"
    );
    for s in sw {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} ns | {} | {} |",
            s.n,
            show(s.karma),
            s.karma / s.n as f64,
            s.literal.map_or("-".into(), show),
            show(s.maxmin)
        );
    }
}

/// The software before and after the radix selection, per workload and n.
fn before_after_markdown(md: &mut String, ba: &[BeforeAfter]) {
    let _ = writeln!(
        md,
        "\n## Software before and after the radix selection (measured, same run)\n\n`fairshare bench software` in \
         one process: an `Allocator` (buffers reused) runs 20 warm-up quanta, then the median of 200 timed quanta \
         (30 from n = 100,000). Before: the binary search on the threshold, one counting pass per probe \
         (`--implementation search`). After: the radix selection (`batched`). Equal shares, alpha = 1/2; bursty at \
         f = 10, steady + on/off (alternate users) at f = 100.\n"
    );
    let _ = writeln!(
        md,
        "| workload | n users | Karma before | Karma after | per user after | speed-up | max-min before | max-min after | per user after |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for b in ba {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.1} ns | {:.1}x | {} | {} | {:.1} ns |",
            b.workload,
            b.n,
            show(b.karma_search),
            show(b.karma_radix),
            b.karma_radix / b.n as f64,
            b.karma_search / b.karma_radix,
            show(b.maxmin_search),
            show(b.maxmin_radix),
            b.maxmin_radix / b.n as f64
        );
    }
}

/// The batched software's median time per Karma quantum for `n` users in this run.
fn karma_time(sw: &[Software], n: usize) -> Option<f64> {
    sw.iter().find(|s| s.n == n).map(|s| s.karma)
}

/// The engine's simulated cycles per shape, as times at the placed ECP5 clocks (the best
/// seed's, and the second-best seed's over the batched software of this run) and at the
/// projected clocks.
fn engine_markdown(md: &mut String, hw: &[Engine], placed: &[Placed], sw: &[Software]) {
    let _ = writeln!(
        md,
        "\n## Engine, cycles per quantum (RustHDL simulation) and time\n\n{ENGINE_QUANTA} Karma quanta \
         per shape, every one checked against the software. Time = median cycles / clock. **Measured clock**: for \
         the shapes placed and routed on an ECP5-85F (speed grade {PLACED_SPEED}, `hdl/SYNTHESIS.md`, best seed \
         listed there), the simulated cycles over nextpnr's post-route Fmax (measured clock x simulated cycles), \
         out of context (no I/O, no PCIe), nothing ran on an FPGA; and at the second-best seed's Fmax, which a \
         user can count on more than the best, over the batched software's time for the same N measured in this \
         run (below 1 the engine is faster). **Projections**: at the {PNR_MHZ} MHz that \
         place-and-route measured for the 1-lane, 64-user engine on an iCE40 HX8K, and at a stated target of \
         {TARGET_MHZ} MHz, for every shape.\n"
    );
    let _ = writeln!(
        md,
        "| N users | P lanes | cycles min / median / max | at the measured ECP5 clock | at the second-best seed's Fmax | / software (same run) | at {PNR_MHZ} MHz (projection) | at {TARGET_MHZ} MHz (projection) |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for e in hw {
        let clocks = placed::engine_clocks(placed, e.n, e.p, PLACED_SPEED);
        let at = |c: &Placed| f64::from(e.median) / c.mhz * 1e3;
        let measured = match clocks.first() {
            Some(c) => format!("{} ({:.2} MHz, seed {})", show(at(c)), c.mhz, c.seed),
            None => "not placed".to_string(),
        };
        let (second, over_software) = match (clocks.first(), clocks.get(1)) {
            (_, Some(c)) => {
                let soft = karma_time(sw, e.n).unwrap_or(f64::NAN);
                (format!("{} ({:.2} MHz, seed {})", show(at(c)), c.mhz, c.seed), format!("{:.2}", at(c) / soft))
            }
            (Some(_), None) => ("one seed routed".to_string(), "-".to_string()),
            (None, None) => ("not placed".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} / {} / {} | {measured} | {second} | {over_software} | {} | {} |",
            e.n,
            e.p,
            e.min,
            e.median,
            e.max,
            show(f64::from(e.median) / PNR_MHZ * 1e3),
            show(f64::from(e.median) / TARGET_MHZ * 1e3)
        );
    }
}

/// The engine's projected time (16 lanes) over the software's, and the emulator's round
/// trip, per N.
fn ratio_markdown(md: &mut String, sw: &[Software], hw: &[Engine], emu: &[(usize, f64)]) {
    let _ = writeln!(
        md,
        "\n## Offload / software, per N\n\nThe engine's projected time (16 lanes, median cycles) over the batched \
         software's measured time for the same N. Below 1 the engine would be faster. The emulator's round trip is measured: \
         the driver protocol over shared memory with the software model on a thread, no PCIe.\n"
    );
    let _ = writeln!(
        md,
        "| N users | software (measured) | emulator round trip (measured) | engine at {PNR_MHZ} MHz | ratio | engine at {TARGET_MHZ} MHz | ratio |\n|---:|---:|---:|---:|---:|---:|---:|"
    );
    for &n in &ENGINE_N {
        let soft = karma_time(sw, n).unwrap_or(f64::NAN);
        let Some(e) = hw.iter().find(|e| e.n == n && e.p == 16) else { continue };
        let (slow, fast) = (f64::from(e.median) / PNR_MHZ * 1e3, f64::from(e.median) / TARGET_MHZ * 1e3);
        let round = emu.iter().find(|x| x.0 == n).map_or(f64::NAN, |x| x.1);
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {} | {:.2} | {} | {:.2} |",
            show(soft),
            show(round),
            show(slow),
            slow / soft,
            show(fast),
            fast / soft
        );
    }
}

/// What the numbers show and do not show, with the ranges of the software's cost per
/// user and of the engine's ratios quoted from this run.
fn caveats_markdown(md: &mut String, sw: &[Software], hw: &[Engine]) {
    let ratios = |mhz: f64| -> (f64, f64) {
        let r: Vec<f64> = ENGINE_N
            .iter()
            .filter_map(|&n| {
                let soft = karma_time(sw, n)?;
                let e = hw.iter().find(|e| e.n == n && e.p == 16)?;
                Some(f64::from(e.median) / mhz * 1e3 / soft)
            })
            .collect();
        (r.iter().copied().fold(f64::INFINITY, f64::min), r.iter().copied().fold(0.0, f64::max))
    };
    let per_user: Vec<f64> = sw.iter().filter(|s| s.n >= 1_000).map(|s| s.karma / s.n as f64).collect();
    let (pu_lo, pu_hi) =
        (per_user.iter().copied().fold(f64::INFINITY, f64::min), per_user.iter().copied().fold(0.0, f64::max));
    let (fast_lo, fast_hi) = ratios(TARGET_MHZ);
    let (slow_lo, slow_hi) = ratios(PNR_MHZ);
    let _ = writeln!(
        md,
        "\n## What these numbers show and do not show\n\n\
         - The batched software costs {pu_lo:.0} to {pu_hi:.0} ns per user per quantum here from n = 1,000 up \
           (one call on fresh buffers), about linear in n.\n\
         - Projected from simulated cycles, a 16-lane engine would take {fast_lo:.2} to {fast_hi:.2} times the \
           software's time at {TARGET_MHZ} MHz for N = 64 to 4,096, and {slow_lo:.2} to {slow_hi:.2} times at \
           {PNR_MHZ} MHz. Its cycles grow as N / P plus a few passes, so more lanes buy time linearly.\n\
         - Not included in the engine's time: moving demands and results over PCIe, the doorbell and the \
           completion write; a real round trip adds microseconds that matter most at small N. The emulator's \
           round trip is the driver protocol over shared memory with the software model computing: it shows the \
           protocol's cost, not PCIe and not the engine.\n\
         - The cycle counts are exact for the simulated design (its Verilog is checked against the same software \
           under Verilator). The ECP5 clocks are measured by place and route (out of context, so without the \
           I/O and the PCIe shell) for the shapes placed; {PNR_MHZ} MHz is one placed-and-routed 1-lane shape on \
           a small, slow part, and {TARGET_MHZ} MHz is an assumption for a mid-range part. Nothing ran on an FPGA.\n\
         - The engine's other gains are not measured here: a host core freed, and a time that does not depend on \
           the host's load or caches.\n\
         - Machines are noisy (2 shared cores): compare the columns of one run, not runs."
    );
}

fn main() {
    if let Err(e) = run() {
        eprintln!("report: error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let out = Path::new(env!("CARGO_MANIFEST_DIR"));
    let sw = software();
    let ba = before_after()?;
    let hw = engines()?;
    let synthesis = out.join("../hdl/SYNTHESIS.md");
    let placed =
        placed::ecp5_rows(&std::fs::read_to_string(&synthesis).map_err(|e| format!("{}: {e}", synthesis.display()))?);
    let off = offloads()?;
    let emu = round_trips(&off);
    plot(out, &sw, &hw, &emu)?;
    plot_offload(out, &off)?;
    let mut md = markdown(&sw, &ba, &hw, &placed, &emu);
    offload_markdown(&mut md, &off);
    let path = out.join("REPORT.md");
    let staged = out.join(".REPORT.md.tmp");
    std::fs::write(&staged, &md).and_then(|_| std::fs::rename(&staged, &path)).map_err(|e| e.to_string())?;
    print!("{md}");
    eprintln!("report: wrote {}", path.display());
    Ok(())
}
