//! # fairshare-hdl: the allocation engine
//!
//! The hardware block that computes one quantum of Karma (equal shares), periodic
//! max-min and strict partitioning, bit for bit as the software policies of
//! `host-lib` do: per-user state in on-chip RAM streamed through `P` parallel lanes,
//! radix searches for the borrower and donor thresholds, a final pass that writes
//! allocations and credits; written in RustHDL and exported as Verilog.

pub mod catalog;
pub mod device;
pub mod device_sim;
pub mod engine;
pub mod engine_lane;
pub mod lane;
pub mod oracle;
pub mod search;
pub mod testbench;
pub mod verilog;
