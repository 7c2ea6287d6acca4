//! Verilog export of the engine (the top module is `top`, or a name of the caller's
//! choice with [`rename_top`]).

use crate::catalog::HdlError;
use crate::engine::Engine;
use rust_hdl::prelude::*;

/// The Verilog of an engine with `P` lanes and `2^A` rows, after RustHDL's checks
/// (connectivity, logic loops, writes to inputs).
pub fn engine_verilog<const P: usize, const A: usize>() -> Result<String, HdlError> {
    let mut uut = crate::build::boxed(Engine::<P, A>::new);
    uut.connect_all();
    check_all(&*uut).map_err(|e| HdlError::Verilog(format!("the engine fails RustHDL's checks: {e:?}")))?;
    Ok(generate_verilog(&*uut))
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

/// The Verilog of the device top level ([`crate::axi_top::AxiTop`]: engine, AXI4-Lite
/// registers, AXI-Stream ports) with `P` lanes and `2^A` rows; the top module is `top`.
pub fn device_verilog<const P: usize, const A: usize>() -> Result<String, HdlError> {
    let mut uut = crate::build::boxed(crate::axi_top::AxiTop::<P, A>::new);
    uut.connect_all();
    check_all(&*uut).map_err(|e| HdlError::Verilog(format!("the AXI top level fails RustHDL's checks: {e:?}")))?;
    Ok(generate_verilog(&*uut))
}

/// The Verilog of the weighted count block ([`crate::weighted_count::WeightedCount`],
/// measured, not part of the engine); the top module is `top`.
pub fn weighted_count_verilog() -> Result<String, HdlError> {
    let mut uut = crate::weighted_count::WeightedCount::default();
    uut.connect_all();
    check_all(&uut)
        .map_err(|e| HdlError::Verilog(format!("the weighted count block fails RustHDL's checks: {e:?}")))?;
    Ok(generate_verilog(&uut))
}

/// A Verilog wrapper `weighted_shell` around the weighted count block's `top` (its
/// ports are plain already; the wrapper gives it the shell every export has).
pub fn weighted_count_shell() -> String {
    "module weighted_shell(\n  input wire clock, input wire [31:0] key, input wire [31:0] probe,\n  \
     input wire [31:0] price, input wire [31:0] reciprocal, input wire [31:0] run, output wire [31:0] count);\n  \
     top core(\n    .clock(clock), .key(key), .probe(probe), .price(price), .reciprocal(reciprocal), .run(run), .count(count)\n  );\nendmodule\n"
        .to_string()
}

/// A Verilog wrapper `fairshare_device` around the device's `top` with the port names
/// of AXI4-Lite and AXI-Stream and packed stream data: `s_axis_tdata[32P-1:0]` (lane
/// `i`'s demand in bits `32i ..`), `m_axis_tdata[64P-1:0]` (lane `i`'s allocation in
/// bits `64i ..`, its credits in bits `64i + 32 ..`).
pub fn device_shell<const P: usize>() -> String {
    let mut ports: Vec<String> = [
        "clock",
        "s_axil_awvalid",
        "s_axil_awready",
        "s_axil_awaddr",
        "s_axil_wvalid",
        "s_axil_wready",
        "s_axil_wdata",
        "s_axil_wstrb",
        "s_axil_bvalid",
        "s_axil_bready",
        "s_axil_bresp",
        "s_axil_arvalid",
        "s_axil_arready",
        "s_axil_araddr",
        "s_axil_rvalid",
        "s_axil_rready",
        "s_axil_rdata",
        "s_axil_rresp",
        "s_axis_tvalid",
        "s_axis_tready",
        "s_axis_tlast",
        "m_axis_tvalid",
        "m_axis_tready",
        "m_axis_tlast",
        "seq",
        "demand_addr",
        "result_addr",
        "completion_addr",
        "irq",
    ]
    .iter()
    .map(|p| format!(".{p}({p})"))
    .collect();
    for lane in 0..P {
        ports.push(format!(".\\s_axis_tdata${lane} (s_axis_tdata[{}:{}])", 32 * lane + 31, 32 * lane));
        ports.push(format!(".\\m_axis_alloc${lane} (m_axis_tdata[{}:{}])", 64 * lane + 31, 64 * lane));
        ports.push(format!(".\\m_axis_credit${lane} (m_axis_tdata[{}:{}])", 64 * lane + 63, 64 * lane + 32));
    }
    let a = crate::axi_top::ADDR_BITS - 1;
    format!(
        "module fairshare_device(\n  input wire clock,\n  \
         input wire s_axil_awvalid, output wire s_axil_awready, input wire [{a}:0] s_axil_awaddr,\n  \
         input wire s_axil_wvalid, output wire s_axil_wready, input wire [31:0] s_axil_wdata, input wire [3:0] s_axil_wstrb,\n  \
         output wire s_axil_bvalid, input wire s_axil_bready, output wire [1:0] s_axil_bresp,\n  \
         input wire s_axil_arvalid, output wire s_axil_arready, input wire [{a}:0] s_axil_araddr,\n  \
         output wire s_axil_rvalid, input wire s_axil_rready, output wire [31:0] s_axil_rdata, output wire [1:0] s_axil_rresp,\n  \
         input wire s_axis_tvalid, output wire s_axis_tready, input wire [{}:0] s_axis_tdata, input wire s_axis_tlast,\n  \
         output wire m_axis_tvalid, input wire m_axis_tready, output wire [{}:0] m_axis_tdata, output wire m_axis_tlast,\n  \
         output wire [31:0] seq, output wire [63:0] demand_addr, output wire [63:0] result_addr,\n  \
         output wire [63:0] completion_addr, output wire irq);\n  \
         top core(\n    {}\n  );\nendmodule\n",
        32 * P - 1,
        64 * P - 1,
        ports.join(",\n    ")
    )
}

/// The reserved words of Verilog-2005 (IEEE 1364-2005, annex B), which cannot name a
/// module.
const KEYWORDS: [&str; 124] = [
    "always",
    "and",
    "assign",
    "automatic",
    "begin",
    "buf",
    "bufif0",
    "bufif1",
    "case",
    "casex",
    "casez",
    "cell",
    "cmos",
    "config",
    "deassign",
    "default",
    "defparam",
    "design",
    "disable",
    "edge",
    "else",
    "end",
    "endcase",
    "endconfig",
    "endfunction",
    "endgenerate",
    "endmodule",
    "endprimitive",
    "endspecify",
    "endtable",
    "endtask",
    "event",
    "for",
    "force",
    "forever",
    "fork",
    "function",
    "generate",
    "genvar",
    "highz0",
    "highz1",
    "if",
    "ifnone",
    "incdir",
    "include",
    "initial",
    "inout",
    "input",
    "instance",
    "integer",
    "join",
    "large",
    "liblist",
    "library",
    "localparam",
    "macromodule",
    "medium",
    "module",
    "nand",
    "negedge",
    "nmos",
    "nor",
    "noshowcancelled",
    "not",
    "notif0",
    "notif1",
    "or",
    "output",
    "parameter",
    "pmos",
    "posedge",
    "primitive",
    "pull0",
    "pull1",
    "pulldown",
    "pullup",
    "pulsestyle_onevent",
    "pulsestyle_ondetect",
    "rcmos",
    "real",
    "realtime",
    "reg",
    "release",
    "repeat",
    "rnmos",
    "rpmos",
    "rtran",
    "rtranif0",
    "rtranif1",
    "scalared",
    "showcancelled",
    "signed",
    "small",
    "specify",
    "specparam",
    "strong0",
    "strong1",
    "supply0",
    "supply1",
    "table",
    "task",
    "time",
    "tran",
    "tranif0",
    "tranif1",
    "tri",
    "tri0",
    "tri1",
    "triand",
    "trior",
    "trireg",
    "unsigned",
    "use",
    "uwire",
    "vectored",
    "wait",
    "wand",
    "weak0",
    "weak1",
    "while",
    "wire",
    "wor",
    "xnor",
    "xor",
];

/// Whether `name` is a Verilog simple identifier (a letter or `_`, then letters,
/// digits, `_` or `$`) that is not a reserved word.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') && !KEYWORDS.contains(&name)
}

/// The names of the modules that `verilog` declares, in order.
fn module_names(verilog: &str) -> Vec<&str> {
    verilog
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("module "))
        .filter_map(|rest| rest.split(|c: char| c == '(' || c == ';' || c.is_whitespace()).next())
        .collect()
}

/// Renames the top module of an exported design: `verilog` declares `module top(`
/// (RustHDL's name) and `shell` instantiates it as `top core(`; both become `name`.
/// Refused, with the bad value in the message, unless `name` is a Verilog identifier
/// that no other module of the two files already uses.
pub fn rename_top(verilog: &str, shell: &str, name: &str) -> Result<(String, String), HdlError> {
    if !is_identifier(name) {
        return Err(HdlError::Name(format!(
            "--module {name:?}: not a Verilog module name (a letter or _, then letters, digits, _ or $; not a reserved word)"
        )));
    }
    if name != "top" {
        if let Some(taken) = module_names(verilog).into_iter().chain(module_names(shell)).find(|m| *m == name) {
            return Err(HdlError::Name(format!("--module {taken:?}: the design already has a module of that name")));
        }
    }
    let (decl, inst) = ("module top(", "  top core(");
    if verilog.matches(decl).count() != 1 || shell.matches(inst).count() != 1 {
        return Err(HdlError::Verilog(
            "the exported Verilog does not declare and instantiate `top` exactly once".into(),
        ));
    }
    Ok((verilog.replacen(decl, &format!("module {name}("), 1), shell.replacen(inst, &format!("  {name} core("), 1)))
}
