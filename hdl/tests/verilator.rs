//! The generated Verilog, compiled with Verilator, against the software policies: the
//! second simulator. A C++ testbench (`hdl/verilator/harness.cpp`) drives the block
//! through the same handshakes as the RustHDL testbench; this test writes the
//! commands, runs it and compares every allocation and credit with `host-lib`.
//! Needs `verilator` (./test.sh installs it).

#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use common::{passes_of, random_pool, random_quantum, software};
use fairshare_hdl::lane_banks::BANKS;
use fairshare_hdl::verilog::{engine_shell, engine_verilog};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Flags of the lint run, and why each warning class is off: WIDTH, RustHDL writes
/// every literal 32 bits wide; UNUSEDPARAM, it declares every constant as a localparam;
/// DECLFILENAME, all modules share one file; UNUSEDSIGNAL, each count lane computes
/// three per-probe counts and FINAL needs only the first.
pub const LINT_FLAGS: [&str; 5] = ["-Wall", "-Wno-WIDTH", "-Wno-UNUSEDPARAM", "-Wno-DECLFILENAME", "-Wno-UNUSEDSIGNAL"];

/// `hdl/verilator/<file>`: the testbenches and the primitives' models.
fn verilator_file(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("verilator").join(file).display().to_string()
}

fn verilator() -> &'static str {
    let ok = Command::new("verilator").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(ok, "verilator is not installed: run ./test.sh (it installs it) or apt-get install verilator");
    "verilator"
}

/// The form of the hard blocks (banks and multipliers: hdl/src/bank.rs,
/// hdl/src/multiplier.rs) the Verilog is built with.
#[derive(Clone, Copy, Debug)]
enum Blocks {
    /// Memories and products Verilator infers, with their registers beside them.
    Inferred,
    /// The ECP5 primitives synthesis maps (`FAIRSHARE_ECP5`: DP16KD and MULT18X18D with
    /// their registers on), under the models `hdl/verilator/dp16kd.v` and
    /// `hdl/verilator/mult18x18d.v`.
    Ecp5,
}

/// Writes `verilog` (module `top`) and its `shell` (module `shell_module`) into `dir`,
/// lints them with [`LINT_FLAGS`] and builds them, the hard blocks in the form `blocks`, with
/// the C++ testbench `hdl/verilator/<harness>` and `-D` flags `defines`; returns the
/// executable.
fn build(
    dir: &Path,
    verilog: String,
    shell: String,
    shell_module: &str,
    harness: &str,
    defines: &str,
    blocks: Blocks,
) -> PathBuf {
    std::fs::write(dir.join("top.v"), verilog).unwrap();
    std::fs::write(dir.join("shell.v"), shell).unwrap();
    let mut sources = vec!["shell.v".to_string(), "top.v".to_string()];
    if let Blocks::Ecp5 = blocks {
        sources.insert(0, "+define+FAIRSHARE_ECP5".to_string());
        for model in ["dp16kd.v", "mult18x18d.v"] {
            sources.push(verilator_file(model));
        }
    }
    let lint = Command::new(verilator())
        .args(["--lint-only", "--top-module", shell_module])
        .args(LINT_FLAGS)
        .args(&sources)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(lint.status.success(), "verilator lint:\n{}", String::from_utf8_lossy(&lint.stderr));
    let harness = verilator_file(harness);
    let out = Command::new(verilator())
        .args(["--cc", "--exe", "--build", "-j", "2", "-O2", "-Wno-WIDTH", "--top-module", shell_module])
        .args(["-CFLAGS", defines, "-Mdir", "obj"])
        .args(&sources)
        .arg(harness)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "verilator build:\n{}", String::from_utf8_lossy(&out.stderr));
    dir.join("obj").join(format!("V{shell_module}"))
}

/// The read of each RAM made undefined when the other port writes the same row in the
/// same cycle: such a read returns the complement of the stored word. ECP5 synthesis
/// marks the RAMs `no_rw_check` (hdl/synth.sh), so that Yosys maps them to block RAM
/// without the logic that would make such a read return the old word; this model makes
/// any result that depended on one differ from the software (the DP16KD model does the
/// same in the primitive's form). Checks that `rams` read ports were found: a RAM's
/// (`read_data`) and the inferred form of a bank's (`latched`).
fn undefined_collisions(verilog: String, rams: usize) -> String {
    let mut verilog = verilog;
    let mut found = 0;
    for register in ["read_data", "latched"] {
        let read = format!("{register} <= mem[read_address];");
        found += verilog.matches(&read).count();
        verilog = verilog.replace(
            &read,
            &format!("{register} <= (write_enable && write_address == read_address) ? ~mem[read_address] : mem[read_address];"),
        );
    }
    assert_eq!(found, rams, "RAM read ports in the Verilog");
    verilog
}

/// Runs the testbench `exe` on `script` and returns its answers, one per command that
/// answers; `expected` answers are required.
fn run(dir: &Path, exe: &Path, script: &str, expected: usize) -> Vec<String> {
    // The commands go in from a file: a pipe written up front would deadlock once the
    // answers fill the other pipe.
    let commands = dir.join("commands.txt");
    std::fs::write(&commands, script).unwrap();
    let out = Command::new(exe).stdin(Stdio::from(std::fs::File::open(&commands).unwrap())).output().unwrap();
    assert!(out.status.success(), "testbench exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    let lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    assert_eq!(lines.len(), expected, "testbench answered {} of {expected} commands", lines.len());
    lines
}

/// Random sequences on the Verilator model of an engine with `P` lanes and `2^A` rows,
/// its hard blocks in the form `blocks`, every other sequence with random stalls (the RustHDL
/// testbench's xorshift sequence); returns how many unstalled quanta ran a threshold
/// search, and how many of those took their first pass from LOAD's counts.
fn cosimulate<const P: usize, const A: usize>(
    seed: u64,
    sequences: usize,
    quanta: usize,
    blocks: Blocks,
) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (verilog, shell) = (engine_verilog::<P, A>().unwrap(), engine_shell::<P, A>());
    // BANKS per lane (credits, starts, runs, base allocations, kinds, the two result banks).
    let verilog = undefined_collisions(verilog, BANKS * P);
    let exe = build(dir.path(), verilog, shell, "engine_shell", "harness.cpp", &format!("-DLANES={P}"), blocks);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut script, mut expected, mut timed) = (String::new(), Vec::new(), Vec::new());
    for s in 0..sequences {
        let (n, f, g, start) = random_pool(&mut rng, P << A);
        let mut credits = vec![start; n];
        write!(script, "credits {n}").unwrap();
        credits.iter().for_each(|c| write!(script, " {c}").unwrap());
        script.push('\n');
        expected.push("ok".to_string());
        for _ in 0..quanta {
            let (mode, demand) = random_quantum(&mut rng, n, f);
            let stall_seed = if s % 2 == 1 { seed * 1_000_003 + s as u64 } else { 0 };
            write!(script, "quantum {mode} {f} {g} {stall_seed} {n}").unwrap();
            demand.iter().for_each(|d| write!(script, " {d}").unwrap());
            script.push('\n');
            let (alloc, after) = software(mode, f, g, &credits, &demand);
            let pairs: Vec<String> = alloc.iter().zip(&after).map(|(a, c)| format!("{a} {c}")).collect();
            expected.push(format!("result 0 {}", pairs.join(" ")));
            if stall_seed == 0 {
                timed.push((expected.len() - 1, n));
            }
            credits = after;
        }
        writeln!(script, "read {n}").unwrap();
        expected.push(format!("credits {}", credits.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")));
    }
    let lines = run(dir.path(), &exe, &script, expected.len());
    let (mut searched, mut loaded) = (0, 0);
    for &(line, n) in &timed {
        let cycles: usize = lines[line].split(' ').nth(2).and_then(|c| c.parse().ok()).unwrap_or(0);
        // The formula of docs/engine.md, exactly, for some number of passes.
        let passes = passes_of(n, P, cycles);
        let (k, first_loaded) = passes.unwrap_or_else(|| {
            panic!("line {line}: {cycles} cycles fit no pass count of engine::cycles (n = {n}, P = {P})")
        });
        searched += usize::from(k > 0);
        loaded += usize::from(first_loaded);
    }
    for (i, (got, want)) in lines.iter().zip(&expected).enumerate() {
        // `result ERR CYCLES a0 c0 ...`: compare all but the cycle count.
        let got_fields: Vec<&str> = got.split(' ').collect();
        let got_cmp = if got.starts_with("result") {
            [&got_fields[..2], &got_fields[3..]].concat().join(" ")
        } else {
            got.to_string()
        };
        assert_eq!(&got_cmp, want, "line {i} of the Verilator run (P = {P}, A = {A}, {blocks:?} blocks)");
    }
    (searched, loaded)
}

#[test]
fn verilog_matches_software_n64_and_n1024() {
    // 700 x 10 + 300 x 10 + 100 x 30 = 13,000 quanta, every one compared: the small shape
    // with both forms of the hard blocks, the large one with the primitives ECP5 maps.
    // Up to 64 users (twice), up to 1,024.
    let (small_searched, small_loaded) = cosimulate::<4, 4>(11, 700, 10, Blocks::Inferred);
    let (primitive_searched, primitive_loaded) = cosimulate::<4, 4>(13, 300, 10, Blocks::Ecp5);
    let (large_searched, large_loaded) = cosimulate::<16, 6>(12, 100, 30, Blocks::Ecp5);
    // Coverage: the search path ran in every run, and its first pass from LOAD's counts.
    assert!(
        small_searched >= 200 && primitive_searched >= 80 && large_searched >= 100,
        "searched: {small_searched}, {primitive_searched}, {large_searched}"
    );
    // 1,802, 639 and 852 in this run.
    assert!(
        small_loaded >= 500 && primitive_loaded >= 150 && large_loaded >= 200,
        "first passes from LOAD's counts: {small_loaded}, {primitive_loaded}, {large_loaded}"
    );
}

/// The device top level (AXI4-Lite and AXI-Stream) under Verilator, driven by
/// `hdl/verilator/device_harness.cpp` with random stalls: every offset of the BAR
/// window against `abi::decode`, the identification registers, then random quanta
/// with credits restored (each row read back right after its write command) and
/// checkpointed through the registers, against the software.
#[test]
fn device_verilog_matches_the_register_map_and_software() {
    use fairshare_abi::{self as abi, Decoded};
    use fairshare_hdl::verilog::{device_shell, device_verilog};
    const P: usize = 4;
    const A: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let defines = format!(
        "-DLANES={P} -DDOORBELL_OFFSET={} -DSTATUS_OFFSET={} -DBUSY_BIT={} -DDONE_BIT={}",
        abi::DOORBELL.offset,
        abi::STATUS.offset,
        abi::STATUS_BUSY.set(0, 1),
        abi::STATUS_DONE.set(0, 1)
    );
    let (verilog, shell) = (device_verilog::<P, A>().unwrap(), device_shell::<P>());
    let verilog = undefined_collisions(verilog, BANKS * P);
    let exe = build(d, verilog, shell, "fairshare_device", "device_harness.cpp", &defines, Blocks::Ecp5);

    let (mut script, mut expected) = (String::new(), Vec::<String>::new());
    let w = |script: &mut String, expected: &mut Vec<String>, off: u32, data: u32, resp: u32| {
        writeln!(script, "w {off} {data} 15").unwrap();
        expected.push(format!("b {resp}"));
    };
    let caps = abi::CAPS_MODES.set(abi::CAPS_CREDIT_BITS.set(abi::CAPS_LANES.set(0, P as u32), 32), 0b111);
    // The decoder, read side, with stalls.
    script.push_str("seed 77\n");
    for off in (0..0x200u32).step_by(4).chain([0x002, 0x201, 0xFFC]) {
        writeln!(script, "r {off}").unwrap();
        let want = match abi::decode(off, P) {
            Decoded::Unmapped => "r 0 2".to_string(),
            Decoded::Register(r) if r.name == "MAX_USERS" => format!("r {} 0", P << A),
            Decoded::Register(r) if r.name == "CAPS" => format!("r {caps} 0"),
            Decoded::Register(r) => format!("r {} 0", r.reset.unwrap()),
            Decoded::CreditData(_) => "r 0 0".to_string(),
        };
        expected.push(want);
    }
    // Writes to read-only and unmapped offsets are refused.
    for off in [abi::MAGIC.offset, abi::STATUS.offset, abi::CREDIT_ACK.offset, 0x034, 0x1FC, 0x003] {
        w(&mut script, &mut expected, off, 0xDEAD_BEEF, 2);
    }
    // Random quanta with credits through the registers.
    let mut rng = ChaCha8Rng::seed_from_u64(78);
    let mut seq = 0;
    for s in 0..40u64 {
        writeln!(script, "seed {}", if s % 2 == 0 { 0 } else { 1000 + s }).unwrap();
        let (n, f, g, start) = random_pool(&mut rng, P << A);
        let mut credits = vec![start; n];
        for row in 0..n.div_ceil(P) {
            w(&mut script, &mut expected, abi::CREDIT_ROW.offset, row as u32, 0);
            for lane in 0..P {
                w(
                    &mut script,
                    &mut expected,
                    abi::credit_data(lane),
                    credits.get(row * P + lane).copied().unwrap_or(0),
                    0,
                );
            }
            // The write command and a read command right behind it (offered before the
            // write's response, as close as the channels allow): the row the read
            // command takes must be the one just written, landed in the banks before it
            // is read (a read of a row as it lands returns its complement here).
            let cmd = abi::CREDIT_CMD.offset;
            writeln!(script, "w2 {cmd} {} {cmd} 0", abi::CREDIT_CMD_WRITE.set(0, 1)).unwrap();
            expected.push("b 0 0".to_string());
            for lane in 0..P.min(n - row * P) {
                writeln!(script, "r {}", abi::credit_data(lane)).unwrap();
                expected.push(format!("r {} 0", credits[row * P + lane]));
            }
        }
        for _ in 0..6 {
            let (mode, demand) = random_quantum(&mut rng, n, f);
            w(&mut script, &mut expected, abi::CONTROL.offset, mode as u32, 0);
            w(&mut script, &mut expected, abi::N_USERS.offset, n as u32, 0);
            w(&mut script, &mut expected, abi::FAIR_SHARE.offset, f, 0);
            w(&mut script, &mut expected, abi::GUARANTEED.offset, g, 0);
            seq += 1;
            write!(script, "q {seq} {n}").unwrap();
            demand.iter().for_each(|x| write!(script, " {x}").unwrap());
            script.push('\n');
            let (alloc, after) = software(mode, f, g, &credits, &demand);
            let status = abi::STATUS_DONE.set(0, 1);
            let pairs: Vec<String> = alloc.iter().zip(&after).map(|(a, c)| format!("{a} {c}")).collect();
            expected.push(format!("q {status} {}", pairs.join(" ")));
            credits = after;
        }
        writeln!(script, "r {}", abi::SEQ_DONE.offset).unwrap();
        expected.push(format!("r {seq} 0"));
        for row in 0..n.div_ceil(P) {
            w(&mut script, &mut expected, abi::CREDIT_ROW.offset, row as u32, 0);
            w(&mut script, &mut expected, abi::CREDIT_CMD.offset, 0, 0);
            for lane in 0..P.min(n - row * P) {
                writeln!(script, "r {}", abi::credit_data(lane)).unwrap();
                expected.push(format!("r {} 0", credits[row * P + lane]));
            }
        }
    }
    let lines = run(d, &exe, &script, expected.len());
    for (i, (got, want)) in lines.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "answer {i} of the Verilator device run");
    }
}

/// The weighted count block (measured for Algorithm 2, not in the engine) under
/// Verilator at one case per cycle: edge cases and random keys, probes, prices and
/// runs, every count against the host library's rule.
#[test]
fn weighted_count_verilog_matches_the_host_rule() {
    use fairshare_hdl::verilog::{weighted_count_shell, weighted_count_verilog};
    use fairshare_hdl::weighted_count::{expected_count, reciprocal, WEIGHTED_LATENCY};
    use rand::Rng;
    let dir = tempfile::tempdir().unwrap();
    let exe = build(
        dir.path(),
        weighted_count_verilog().unwrap(),
        weighted_count_shell(),
        "weighted_shell",
        "weighted_harness.cpp",
        &format!("-DLATENCY={WEIGHTED_LATENCY}"),
        Blocks::Inferred,
    );
    let mut cases: Vec<(u32, u32, u32, u32)> = vec![
        (u32::MAX, 0, 1, u32::MAX),
        (u32::MAX, 0, 3, 7),
        (u32::MAX, 1, 1 << 31, 9),
        (101, 0, 10, 1000),
        (5, 5, 2, 3),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    for i in 0..20_000 {
        let key: u32 = if i % 2 == 0 { rng.gen() } else { rng.gen_range(0..1 << 20) };
        let probe: u32 = if rng.gen_bool(0.1) { key.wrapping_add(rng.gen_range(0..3)) } else { rng.gen_range(0..=key) };
        let price: u32 = match rng.gen_range(0..3) {
            0 => 1,
            1 => rng.gen_range(2..1 << 16),
            _ => rng.gen_range(2..=u32::MAX),
        };
        let run: u32 = if rng.gen_bool(0.5) { rng.gen() } else { rng.gen_range(0..64) };
        cases.push((key, probe, price, run));
    }
    let mut script = String::new();
    for &(key, probe, price, run) in &cases {
        writeln!(script, "{key} {probe} {price} {} {run}", reciprocal(price)).unwrap();
    }
    let answers = run(dir.path(), &exe, &script, cases.len());
    for (&(key, probe, price, run), answer) in cases.iter().zip(&answers) {
        let want = expected_count(key, probe, price, run);
        assert_eq!(answer, &want.to_string(), "key {key} probe {probe} price {price} run {run}");
    }
}
