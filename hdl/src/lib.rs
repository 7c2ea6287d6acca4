//! # fairshare-hdl: the allocation engine
//!
//! The hardware block that computes one quantum of Karma (equal shares), periodic
//! max-min and strict partitioning, bit for bit as the software policies of the host
//! library do: per-user state in on-chip RAM streamed through `P` parallel lanes, radix
//! searches for the borrower and donor thresholds, a final pass that writes allocations
//! and credits; written in RustHDL and exported as Verilog.
//!
//! Blocks (each a struct of signals with one `update`, its test beside it): [`engine`]
//! (the engine) with its [`settings`] (taken, checked, multiplied by [`multiplier`]s, which
//! register both ends in the hard block), [`sequencer`] (its
//! FSM), [`search`] (the radix threshold search), [`reduce`] (accumulators and the end
//! of the lanes' chain) and [`grant`] (FINAL's tie-break across the lanes); [`lane`] (one
//! engine lane) with its [`lane_banks`] (RAM; the 32-bit ones are
//! [`bank`]s, read through the block RAM's own output register), [`count_lane`] (counting keys below a
//! probe), [`run_rule`] (a user's kind and run), [`key_range`] (a search's key range),
//! [`tie_break`] (a user's result) and [`result_queue`] (the results out); [`axi_top`]
//! (the engine behind AXI4-Lite registers and AXI-Stream ports). Drivers: [`engine_sim`]
//! (the engine cycle by cycle, an `Accelerator`), [`bus_testbench`] (an AXI master and
//! stream agents for the top level). [`catalog`] picks a shape at run time;
//! [`verilog`] exports it; [`oracle`] is what the engine must compute.
//! [`weighted_count`] is what a weighted lane would add (measured, not in the engine).
//!
//! Takes its constants (register map, modes, status codes, word limit, admission) from
//! `fairshare-abi` and its expected results from the host library's policies; must not
//! depend on the driver, the emulator or anything above them.

pub mod axi_lite;
pub mod axi_top;
pub mod bank;
pub mod build;
pub mod bus_testbench;
pub mod catalog;
pub mod count_lane;
pub mod engine;
pub mod engine_sim;
pub mod grant;
pub mod key_range;
pub mod lane;
pub mod lane_banks;
pub mod multiplier;
pub mod oracle;
pub mod plan;
pub mod reduce;
pub mod result_queue;
pub mod run_rule;
pub mod search;
pub mod sequencer;
pub mod settings;
pub mod tie_break;
pub mod verilog;
pub mod weighted_count;
