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
    /// Writes the `P` balances of row `row` (users `row * P ..`).
    fn write_row(&mut self, row: usize, words: &[u32]);
    /// Reads the `P` balances of row `row`.
    fn read_row(&mut self, row: usize) -> Vec<u32>;
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
        crate::engine::Engine::<P, A>::MAX_USERS
    }
    fn write_credits(&mut self, credits: &[u32]) {
        EngineSim::write_credits(self, credits)
    }
    fn read_credits(&mut self, n: usize) -> Vec<u32> {
        EngineSim::read_credits(self, n)
    }
    fn write_row(&mut self, row: usize, words: &[u32]) {
        EngineSim::write_row(self, row, words)
    }
    fn read_row(&mut self, row: usize) -> Vec<u32> {
        EngineSim::read_row(self, row)
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

/// The capacity of the smallest shape of `lanes` lanes that holds `users` users, or an
/// error that lists what this build offers.
pub fn engine_capacity(lanes: usize, users: usize) -> Result<usize, String> {
    let Some(&capacity) = CAPACITIES.iter().find(|&&c| c >= users && users > 0) else {
        return Err(format!("{users} users: this build's engines hold 1 to {} users", CAPACITIES[3]));
    };
    if !LANES.contains(&lanes) {
        return Err(format!("{lanes} lanes: this build's engines have {:?} lanes", LANES));
    }
    Ok(capacity)
}

/// Runs equal-share Karma quanta (fair share `f`, guaranteed `g`, every user starting
/// with `initial_credits`) through a fresh simulated engine of `lanes` lanes, checks every
/// quantum's allocations and credits against the software ([`crate::oracle`]), and
/// returns the engine's cycles (its `cycles` status register) for each quantum. Demands above the device's limit are
/// clipped to it. The error names the quantum that the engine refused or got wrong.
pub fn karma_cycles(
    lanes: usize,
    f: u32,
    g: u32,
    initial_credits: u32,
    demands: &[Vec<u64>],
) -> Result<Vec<u32>, String> {
    let users = demands.first().map_or(0, Vec::len);
    let mut engine = engine(lanes, users)?;
    const KARMA: u8 = fairshare_driver::abi::mode::KARMA as u8;
    let mut credits = vec![initial_credits; users];
    engine.write_credits(&credits);
    let mut cycles = Vec::with_capacity(demands.len());
    for (q, d) in demands.iter().enumerate() {
        let demand: Vec<u32> = d.iter().map(|&x| x.min(fairshare::offload::DEVICE_MAX) as u32).collect();
        let got = engine.quantum(KARMA, f, g, &demand).map_err(|e| {
            format!("quantum {q}: the engine refused it: {}", fairshare_driver::abi::status::describe(e.0))
        })?;
        let want = crate::oracle::expected(KARMA, f, g, &credits, &demand).map_err(|e| format!("quantum {q}: {e}"))?;
        if (&got.alloc, &got.credits) != (&want.0, &want.1) {
            return Err(format!("quantum {q}: the engine's result differs from the software"));
        }
        credits = got.credits;
        cycles.push(got.cycles);
    }
    Ok(cycles)
}

/// A fresh simulated engine with `lanes` lanes that holds `users` users, or an error
/// that lists what this build offers.
pub fn engine(lanes: usize, users: usize) -> Result<Box<dyn EngineDriver>, String> {
    let capacity = engine_capacity(lanes, users)?;
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

/// The software stand-in for an engine of `lanes` lanes and `capacity` users: the same
/// interface, the same status codes for bad configurations, results from
/// [`crate::oracle::expected`]. Used by the emulator when cycle accuracy is not wanted.
pub struct SoftwareEngine {
    lanes: usize,
    credits: Vec<u32>,
}

impl SoftwareEngine {
    /// All balances 0.
    pub fn new(lanes: usize, capacity: usize) -> Self {
        SoftwareEngine { lanes, credits: vec![0; capacity] }
    }
}

impl EngineDriver for SoftwareEngine {
    fn lanes(&self) -> usize {
        self.lanes
    }
    fn capacity(&self) -> usize {
        self.credits.len()
    }
    fn write_credits(&mut self, credits: &[u32]) {
        self.credits[..credits.len()].copy_from_slice(credits);
    }
    fn read_credits(&mut self, n: usize) -> Vec<u32> {
        self.credits[..n].to_vec()
    }
    fn write_row(&mut self, row: usize, words: &[u32]) {
        for (lane, &w) in words.iter().enumerate().take(self.lanes) {
            if let Some(c) = self.credits.get_mut(row * self.lanes + lane) {
                *c = w;
            }
        }
    }
    fn read_row(&mut self, row: usize) -> Vec<u32> {
        (0..self.lanes).map(|lane| self.credits.get(row * self.lanes + lane).copied().unwrap_or(0)).collect()
    }
    fn quantum(&mut self, mode: u8, fair: u32, guaranteed: u32, demand: &[u32]) -> Result<EngineResult, EngineError> {
        use fairshare_driver::abi::status;
        // The engine's checks, in the engine's order (see `engine.rs`, Idle and Plan).
        let n = demand.len();
        let limit = fairshare::offload::DEVICE_MAX + 1;
        let (f, g) = (fair as u64, guaranteed as u64);
        let early = if n == 0 || n > self.credits.len() {
            Some(status::USERS)
        } else if g > f {
            Some(status::GUARANTEED)
        } else if f == 0 || f >= limit {
            Some(status::CAPACITY)
        } else if mode > 2 {
            Some(status::MODE)
        } else {
            None
        };
        if let Some(code) = early {
            return Err(EngineError(code));
        }
        let karma = mode as u32 == fairshare_driver::abi::mode::KARMA;
        let credit_error = karma
            && demand.iter().zip(&self.credits[..n]).any(|(&d, &c)| {
                let (c, d, c1) = (c as u64, d as u64, c as u64 + f - g);
                c >= limit || c1 >= limit || (d < g && c1 + (g - d) >= limit)
            });
        let demand_error = demand.iter().any(|&d| d as u64 >= limit);
        let capacity_error = mode as u32 != fairshare_driver::abi::mode::STRICT && n as u64 * f >= limit;
        if credit_error {
            return Err(EngineError(status::CREDIT));
        } else if demand_error {
            return Err(EngineError(status::DEMAND));
        } else if capacity_error {
            return Err(EngineError(status::CAPACITY));
        }
        let before = &self.credits[..n];
        // Past the checks above the software accepts the quantum and its balances stay
        // below 2^31; were one not to fit a word after all, CREDIT is what it would be.
        let (alloc, credits) =
            crate::oracle::expected(mode, fair, guaranteed, before, demand).map_err(|_| EngineError(status::CREDIT))?;
        self.credits[..n].copy_from_slice(&credits);
        Ok(EngineResult { alloc, credits, cycles: 0 })
    }
    fn verilog(&self) -> Result<(String, String), String> {
        Err("the software model has no Verilog".into())
    }
    fn device_verilog(&self) -> Result<(String, String), String> {
        Err("the software model has no Verilog".into())
    }
}

/// A simulated engine as an offload device (the `rtl-sim` backend): every quantum is
/// computed cycle by cycle by the RustHDL model.
pub struct RtlAccelerator {
    engine: Box<dyn EngineDriver>,
}

impl RtlAccelerator {
    /// The smallest engine of `lanes` lanes that holds `users` users.
    pub fn new(lanes: usize, users: usize) -> Result<Self, String> {
        Ok(RtlAccelerator { engine: engine(lanes, users)? })
    }
}

impl fairshare::offload::Accelerator for RtlAccelerator {
    fn label(&self) -> String {
        format!("rtl-sim ({} lanes, {} users)", self.engine.lanes(), self.engine.capacity())
    }
    fn max_users(&self) -> usize {
        self.engine.capacity()
    }
    fn write_credits(&mut self, credits: &[u32]) -> Result<(), String> {
        self.engine.write_credits(credits);
        Ok(())
    }
    fn read_credits(&mut self, n: usize) -> Result<Vec<u32>, String> {
        Ok(self.engine.read_credits(n))
    }
    fn quantum(
        &mut self,
        policy: fairshare::Policy,
        fair: u32,
        guaranteed: u32,
        demand: &[u32],
    ) -> Result<(Vec<u32>, Vec<u32>), String> {
        let mode = fairshare_driver::device::mode_of(policy) as u8;
        let r = self.engine.quantum(mode, fair, guaranteed, demand).map_err(|e| {
            format!(
                "the engine refused the quantum: status code {} ({})",
                e.0,
                fairshare_driver::abi::status::describe(e.0)
            )
        })?;
        Ok((r.alloc, r.credits))
    }
}
