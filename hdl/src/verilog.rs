//! Verilog export of the engine (the top module is `top`).

use crate::catalog::HdlError;
use crate::engine::Engine;
use rust_hdl::prelude::*;

/// The Verilog of an engine with `P` lanes and `2^A` rows, after RustHDL's checks
/// (connectivity, logic loops, writes to inputs).
pub fn engine_verilog<const P: usize, const A: usize>() -> Result<String, HdlError> {
    let mut uut = Engine::<P, A>::new();
    uut.connect_all();
    check_all(&uut).map_err(|e| HdlError::Verilog(format!("the engine fails RustHDL's checks: {e:?}")))?;
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

/// The Verilog of the device top level ([`crate::axi_top::AxiTop`]: engine, AXI4-Lite
/// registers, AXI-Stream ports) with `P` lanes and `2^A` rows; the top module is `top`.
pub fn device_verilog<const P: usize, const A: usize>() -> Result<String, HdlError> {
    let mut uut = crate::axi_top::AxiTop::<P, A>::new();
    uut.connect_all();
    check_all(&uut).map_err(|e| HdlError::Verilog(format!("the AXI top level fails RustHDL's checks: {e:?}")))?;
    Ok(generate_verilog(&uut))
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
