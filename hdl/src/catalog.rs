//! The engine shapes this build provides, behind one object-safe interface, so that
//! the CLI and the host library can pick lanes and capacity at run time.
//!
//! Shapes: `P` in {1, 2, 4, 8, 16, 32} lanes and a capacity of 64, 256, 1,024 or
//! 4,096 users (`2^A` rows per lane bank). A pool of `n` users runs on the smallest
//! capacity that holds it; the engine's `n_users` register is set to `n`, so cycles
//! depend on `n`, not on the capacity.

use crate::testbench::{EngineError, EngineResult, EngineSim};
use crate::verilog::{device_shell, device_verilog, engine_shell, engine_verilog};

/// Capacities (users) of the shapes in this build.
pub const CAPACITIES: [usize; 4] = [64, 256, 1024, 4096];
/// Lane counts of the shapes in this build.
pub const LANES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// A simulated engine of some shape.
pub trait EngineDriver {
    /// Lanes `P`.
    fn lanes(&self) -> usize;
    /// Most users, `P x 2^A`.
    fn capacity(&self) -> usize;
    /// Writes the credits of users `0 .. credits.len()`.
    fn write_credits(&mut self, credits: &[u32]);
    /// Reads the credits of users `0 .. n`.
    fn read_credits(&mut self, n: usize) -> Vec<u32>;
    /// Runs one quantum (mode 0 Karma, 1 max-min, 2 strict).
    fn quantum(&mut self, mode: u8, fair: u32, guaranteed: u32, demand: &[u32]) -> Result<EngineResult, EngineError>;
    /// The Verilog of this shape's engine (module `top`) and its wide-port shell
    /// (`engine_shell`).
    fn verilog(&self) -> Result<(String, String), String>;
    /// The Verilog of this shape's device top level (engine, AXI4-Lite registers,
    /// AXI-Stream ports; module `top`) and its shell (`fairshare_device`).
    fn device_verilog(&self) -> Result<(String, String), String>;
}

impl<const P: usize, const A: usize> EngineDriver for EngineSim<P, A> {
    fn lanes(&self) -> usize {
        P
    }
    fn capacity(&self) -> usize {
        P << A
    }
    fn write_credits(&mut self, credits: &[u32]) {
        EngineSim::write_credits(self, credits)
    }
    fn read_credits(&mut self, n: usize) -> Vec<u32> {
        EngineSim::read_credits(self, n)
    }
    fn quantum(&mut self, mode: u8, fair: u32, guaranteed: u32, demand: &[u32]) -> Result<EngineResult, EngineError> {
        EngineSim::quantum(self, mode, fair, guaranteed, demand)
    }
    fn verilog(&self) -> Result<(String, String), String> {
        Ok((engine_verilog::<P, A>()?, engine_shell::<P, A>()))
    }
    fn device_verilog(&self) -> Result<(String, String), String> {
        Ok((device_verilog::<P, A>()?, device_shell::<P>()))
    }
}

/// A fresh simulated engine with `lanes` lanes that holds `users` users, or an error
/// that lists what this build offers.
pub fn engine(lanes: usize, users: usize) -> Result<Box<dyn EngineDriver>, String> {
    let Some(&capacity) = CAPACITIES.iter().find(|&&c| c >= users && users > 0) else {
        return Err(format!("{users} users: this build's engines hold 1 to {} users", CAPACITIES[3]));
    };
    macro_rules! shapes {
        ($(($p:literal, $cap:literal, $a:literal)),* $(,)?) => {
            match (lanes, capacity) {
                $(($p, $cap) => Ok(Box::new(EngineSim::<$p, $a>::new())),)*
                _ => Err(format!("{lanes} lanes: this build's engines have {:?} lanes", LANES)),
            }
        };
    }
    shapes!(
        (1, 64, 6),
        (1, 256, 8),
        (1, 1024, 10),
        (1, 4096, 12),
        (2, 64, 5),
        (2, 256, 7),
        (2, 1024, 9),
        (2, 4096, 11),
        (4, 64, 4),
        (4, 256, 6),
        (4, 1024, 8),
        (4, 4096, 10),
        (8, 64, 3),
        (8, 256, 5),
        (8, 1024, 7),
        (8, 4096, 9),
        (16, 64, 2),
        (16, 256, 4),
        (16, 1024, 6),
        (16, 4096, 8),
        (32, 64, 1),
        (32, 256, 3),
        (32, 1024, 5),
        (32, 4096, 7),
    )
}
