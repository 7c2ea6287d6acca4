//! `fairshare hdl`: the hardware engine from the command line: export its Verilog,
//! measure its cycles per quantum in simulation (every quantum checked against the
//! software), and record its waveforms.

use std::path::Path;
use std::process::ExitCode;

use crate::flags::{HdlArgs, HdlCommand, HdlCyclesArgs, HdlTraceArgs, HdlVerilogArgs, Top};
use crate::output::{out, outln, table, write_atomically, Output};
use crate::CliError;
use fairshare_hdl::catalog;

/// Runs `fairshare hdl`.
pub fn run(args: HdlArgs) -> Result<ExitCode, CliError> {
    match args.command {
        HdlCommand::Verilog(HdlVerilogArgs { users, lanes, top, module, out }) => {
            verilog(users, lanes, top, &module, &out)
        }
        HdlCommand::Regs => regs(),
        HdlCommand::Cycles(HdlCyclesArgs { users, lanes, quanta, seed, json }) => {
            cycles(users, lanes, quanta, seed, json)
        }
        HdlCommand::Trace(HdlTraceArgs { users, lanes, quanta, seed, out }) => trace(users, lanes, quanta, seed, &out),
    }?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the Verilog of the shape for `users` and `lanes` to `out` (top module
/// `module`, `top` by default), and its packed-port shell next to it (`<out
/// stem>_shell.v`). A bad module name writes nothing.
fn verilog(users: usize, lanes: usize, top: Top, module: &str, out: &Path) -> Result<(), CliError> {
    let (what, shell_module, verilog, shell) = match top {
        Top::Device | Top::Engine => {
            let engine = catalog::engine(lanes, users)?;
            let shape = format!("with {lanes} lanes for up to {} users", engine.capacity());
            if top == Top::Device {
                let (v, s) = engine.device_verilog()?;
                (format!("device {shape}"), "fairshare_device", v, s)
            } else {
                let (v, s) = engine.verilog()?;
                (format!("engine {shape}"), "engine_shell", v, s)
            }
        }
        Top::WeightedCount => (
            "weighted count block".to_string(),
            "weighted_shell",
            fairshare_hdl::verilog::weighted_count_verilog()?,
            fairshare_hdl::verilog::weighted_count_shell(),
        ),
    };
    let (verilog, shell) = fairshare_hdl::verilog::rename_top(&verilog, &shell, module)?;
    let shell_path = out.with_file_name(format!(
        "{}_shell.v",
        out.file_stem().map_or("engine".into(), |s| s.to_string_lossy().into_owned())
    ));
    for (path, text) in [(out, &verilog), (shell_path.as_path(), &shell)] {
        write_atomically(path, text.as_bytes())?;
    }
    eprintln!(
        "hdl verilog: {what} (module `{module}`) in {}, its shell (module `{shell_module}`) in {}",
        out.display(),
        shell_path.display()
    );
    Ok(())
}

/// Prints the device register map (the markdown of `abi/REGISTERS.md`).
fn regs() -> Result<(), CliError> {
    out!("{}", fairshare_abi::markdown())
}

/// Runs `quanta` quanta of Karma (bursty demands, fair share 10, alpha 1/2) through
/// the simulated engine, checks each against the software and prints the cycles.
fn cycles(users: usize, lanes: usize, quanta: usize, seed: u64, json: bool) -> Result<(), CliError> {
    if quanta == 0 {
        return Err(CliError::Usage("--quanta must be at least 1".into()));
    }
    let capacity = catalog::engine_capacity(lanes, users)?;
    let demands = fairshare_sim::workload::bursty(users, quanta, 10, seed);
    let mut cycles = catalog::karma_cycles(lanes, 10, 5, 1_000, &demands)?;
    cycles.sort_unstable();
    let (min, median, max) = (cycles[0], cycles[cycles.len() / 2], cycles[cycles.len() - 1]);
    if json {
        let out = serde_json::json!({
            "users": users, "lanes": lanes, "capacity": capacity, "quanta": quanta, "seed": seed,
            "cycles_per_quantum_min": min, "cycles_per_quantum_median": median, "cycles_per_quantum_max": max,
        });
        outln!("{out}")?;
    } else {
        outln!("engine: {lanes} lanes, {users} users (capacity {}), {quanta} Karma quanta of the bursty workload, every result checked against the software\n", capacity)?;
        out!(
            "{}",
            table(
                &["cycles per quantum", "min", "median", "max"],
                &[vec!["".into(), min.to_string(), median.to_string(), max.to_string()]]
            )
        )?;
    }
    Ok(())
}

/// Runs `quanta` quanta of Karma (the bursty workload of `cycles`, seed `seed`) through
/// the simulated engine, each checked against the software, and writes a waveform of
/// every signal of the engine (VCD, names as in the Verilog) to `out`: through a
/// temporary file renamed into place, so that an error leaves nothing behind.
fn trace(users: usize, lanes: usize, quanta: usize, seed: u64, out: &Path) -> Result<(), CliError> {
    if quanta == 0 {
        return Err(CliError::Usage("--quanta must be at least 1".into()));
    }
    let capacity = catalog::engine_capacity(lanes, users)?;
    let demands = fairshare_sim::workload::bursty(users, quanta, 10, seed);
    let mut file = Output::open(Some(out), &[])?;
    let cycles = catalog::karma_trace(lanes, 10, 5, 1_000, &demands, file.writer()).map_err(|e| match e {
        catalog::HdlError::Write(source) => CliError::File { what: "writing", path: out.to_path_buf(), source },
        e => CliError::Hdl(e),
    })?;
    file.commit()?;
    eprintln!(
        "hdl trace: {quanta} Karma quanta ({} cycles) of the engine with {lanes} lanes, {users} users (capacity {capacity}), every result checked against the software, in {} (open it with `gtkwave {}`)",
        cycles.iter().map(|&c| c as u64).sum::<u64>(),
        out.display(),
        out.display()
    );
    Ok(())
}
