//! Verilog export of the engine (the top module is `top`).

use crate::engine::Engine;
use rust_hdl::prelude::*;

/// The Verilog of an engine with `P` lanes and `2^A` rows, after RustHDL's checks
/// (connectivity, logic loops, writes to inputs).
pub fn engine_verilog<const P: usize, const A: usize>() -> Result<String, String> {
    let mut uut = Engine::<P, A>::new();
    uut.connect_all();
    check_all(&uut).map_err(|e| format!("the engine fails RustHDL's checks: {e:?}"))?;
    Ok(generate_verilog(&uut))
}

/// A Verilog wrapper `engine_shell` around `top` that packs the per-lane ports into
/// wide vectors (`in_data[32*P-1:0]`, lane `i` in bits `32i .. 32i+31`), for
/// testbenches and shells that want plain port names (RustHDL names them `in_data$0`).
pub fn engine_shell<const P: usize, const A: usize>() -> String {
    let mut ports = vec![
        ".clock(clock)".to_string(),
        ".start(start)".into(),
        ".mode(mode)".into(),
        ".n_users(n_users)".into(),
        ".fair(fair)".into(),
        ".guaranteed(guaranteed)".into(),
        ".in_valid(in_valid)".into(),
        ".in_ready(in_ready)".into(),
        ".out_valid(out_valid)".into(),
        ".out_ready(out_ready)".into(),
        ".credit_row(credit_row)".into(),
        ".credit_write(credit_write)".into(),
        ".busy(busy)".into(),
        ".done(done)".into(),
        ".error(error)".into(),
        ".cycles(cycles)".into(),
    ];
    for lane in 0..P {
        let (lo, hi) = (32 * lane, 32 * lane + 31);
        for name in ["in_data", "out_alloc", "out_credit", "credit_wdata", "credit_rdata"] {
            ports.push(format!(".\\{name}${lane} ({name}[{hi}:{lo}])"));
        }
    }
    let w = 32 * P - 1;
    let a = A - 1;
    format!(
        "module engine_shell(\n  input wire clock, input wire start, input wire [1:0] mode,\n  \
         input wire [31:0] n_users, input wire [31:0] fair, input wire [31:0] guaranteed,\n  \
         input wire in_valid, output wire in_ready, input wire [{w}:0] in_data,\n  \
         output wire out_valid, input wire out_ready, output wire [{w}:0] out_alloc, output wire [{w}:0] out_credit,\n  \
         input wire [{a}:0] credit_row, input wire credit_write, input wire [{w}:0] credit_wdata, output wire [{w}:0] credit_rdata,\n  \
         output wire busy, output wire done, output wire [3:0] error, output wire [31:0] cycles);\n  \
         top core(\n    {}\n  );\nendmodule\n",
        ports.join(",\n    ")
    )
}
