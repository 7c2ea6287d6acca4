//! The engine shapes this build provides, behind one object-safe interface, so that
//! the CLI, the emulator and the host library can pick lanes and capacity at run time.
//!
//! Shapes: `P` in {1, 2, 4, 8, 16, 32} lanes and a capacity of 64, 256, 1,024 or
//! 4,096 users (`2^A` rows per lane bank). A pool of `n` users runs on the smallest
//! capacity that holds it; the engine's `n_users` register is set to `n`, so cycles
//! depend on `n`, not on the capacity.
//!
//! Every shape is an [`Accelerator`] (the `rtl-sim` backend is one, in process), and so
//! is its software model, [`SoftwareEngine`]; [`SimulatedEngine`] adds what the
//! emulator and the Verilog export need.

use crate::engine_sim::EngineSim;
use crate::verilog::{device_shell, device_verilog, engine_shell, engine_verilog};
use fairshare::credits::FRAC_BITS;
use fairshare::policy::{run_into, Outcome, Workspace};
use fairshare::{Credits, Implementation, KarmaParams};
use fairshare_abi::{self as abi, Accelerator, DeviceError, Limits, Mode, QuantumOutput, QuantumSettings};

/// Capacities (users) of the shapes in this build.
pub const CAPACITIES: [usize; 4] = [64, 256, 1024, 4096];
/// Lane counts of the shapes in this build.
pub const LANES: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// What the engine catalog cannot do.
#[derive(Debug, thiserror::Error)]
pub enum HdlError {
    /// No engine of that shape in this build.
    #[error("{0}")]
    Shape(String),
    /// RustHDL's checks refused the design, so no Verilog was generated.
    #[error("{0}")]
    Verilog(String),
    /// A module name that Verilog, or the design, does not accept.
    #[error("{0}")]
    Name(String),
    /// Writing a waveform failed.
    #[error("writing the waveform: {0}")]
    Write(#[source] std::io::Error),
    /// A simulated quantum was refused by the engine or differs from the software.
    #[error("quantum {quantum}: {detail}")]
    Quantum {
        /// The quantum (from 0).
        quantum: usize,
        /// What happened.
        detail: String,
    },
}

/// A simulated engine of some shape: an [`Accelerator`] with rows, lanes and Verilog.
pub trait SimulatedEngine: Accelerator {
    /// Lanes `P`.
    fn lanes(&self) -> usize;
    /// Most users, `P x 2^A`.
    fn capacity(&self) -> usize;
    /// Writes the `P` balances of row `row` (users `row * P ..`).
    fn write_row(&mut self, row: usize, words: &[u32]);
    /// Reads the `P` balances of row `row`.
    fn read_row(&mut self, row: usize) -> Vec<u32>;
    /// The Verilog of this shape's engine (module `top`) and its wide-port shell
    /// (`engine_shell`).
    fn verilog(&self) -> Result<(String, String), HdlError>;
    /// The Verilog of this shape's AXI top level (engine, AXI4-Lite registers,
    /// AXI-Stream ports; module `top`) and its shell (`fairshare_device`).
    fn device_verilog(&self) -> Result<(String, String), HdlError>;
    /// Starts recording a waveform (VCD) of every signal, named as in the Verilog
    /// (see [`EngineSim::start_trace`]); the software model has no signals to record.
    fn start_trace(&mut self) -> Result<(), HdlError>;
    /// The waveform text recorded since the last call; all calls together make one
    /// VCD file.
    fn take_trace(&mut self) -> Vec<u8>;
}

fn too_many(n: usize, capacity: usize) -> DeviceError {
    DeviceError::Unsupported(format!("{n} users; the engine holds {capacity}"))
}

impl<const P: usize, const A: usize> Accelerator for EngineSim<P, A> {
    fn label(&self) -> String {
        format!("rtl-sim ({P} lanes, {} users)", crate::engine::Engine::<P, A>::MAX_USERS)
    }
    fn limits(&self) -> Limits {
        Limits { max_users: crate::engine::Engine::<P, A>::MAX_USERS, modes: abi::ALL_MODES }
    }
    fn write_credits(&mut self, credits: &[u32]) -> Result<(), DeviceError> {
        let capacity = crate::engine::Engine::<P, A>::MAX_USERS;
        if credits.len() > capacity {
            return Err(too_many(credits.len(), capacity));
        }
        EngineSim::write_credits(self, credits);
        Ok(())
    }
    fn read_credits(&mut self, n: usize) -> Result<Vec<u32>, DeviceError> {
        let capacity = crate::engine::Engine::<P, A>::MAX_USERS;
        if n > capacity {
            return Err(too_many(n, capacity));
        }
        Ok(EngineSim::read_credits(self, n))
    }
    fn quantum_into(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
    ) -> Result<(), DeviceError> {
        let start = std::time::Instant::now();
        let QuantumSettings { mode, fair, guaranteed } = settings;
        *out = EngineSim::quantum(self, mode.word() as u8, fair, guaranteed, demand)
            .map_err(|e| DeviceError::Refused { code: e.0 })?;
        // In process, the simulation is the device: its time is the device's.
        out.device_ns = start.elapsed().as_nanos() as u64;
        Ok(())
    }
}

impl<const P: usize, const A: usize> SimulatedEngine for EngineSim<P, A> {
    fn lanes(&self) -> usize {
        P
    }
    fn capacity(&self) -> usize {
        crate::engine::Engine::<P, A>::MAX_USERS
    }
    fn write_row(&mut self, row: usize, words: &[u32]) {
        EngineSim::write_row(self, row, words)
    }
    fn read_row(&mut self, row: usize) -> Vec<u32> {
        EngineSim::read_row(self, row)
    }
    fn verilog(&self) -> Result<(String, String), HdlError> {
        Ok((engine_verilog::<P, A>()?, engine_shell::<P, A>()))
    }
    fn device_verilog(&self) -> Result<(String, String), HdlError> {
        Ok((device_verilog::<P, A>()?, device_shell::<P>()))
    }
    fn start_trace(&mut self) -> Result<(), HdlError> {
        EngineSim::start_trace(self);
        Ok(())
    }
    fn take_trace(&mut self) -> Vec<u8> {
        EngineSim::take_trace(self)
    }
}

/// The capacity of the smallest shape of `lanes` lanes that holds `users` users, or an
/// error that lists what this build offers.
pub fn engine_capacity(lanes: usize, users: usize) -> Result<usize, HdlError> {
    let Some(&capacity) = CAPACITIES.iter().find(|&&c| c >= users && users > 0) else {
        return Err(HdlError::Shape(format!("{users} users: this build's engines hold 1 to {} users", CAPACITIES[3])));
    };
    if !LANES.contains(&lanes) {
        return Err(HdlError::Shape(format!("{lanes} lanes: this build's engines have {:?} lanes", LANES)));
    }
    Ok(capacity)
}

/// Runs equal-share Karma quanta (fair share `f`, guaranteed `g`, every user starting
/// with `initial_credits`) through a fresh simulated engine of `lanes` lanes, checks every
/// quantum's allocations and credits against the software ([`crate::oracle`]), and
/// returns the engine's cycles (its `cycles` status register) for each quantum. Demands
/// above the device's limit are clipped to it. The error names the quantum that the
/// engine refused or got wrong.
pub fn karma_cycles(
    lanes: usize,
    f: u32,
    g: u32,
    initial_credits: u32,
    demands: &[Vec<u64>],
) -> Result<Vec<u32>, HdlError> {
    let users = demands.first().map_or(0, Vec::len);
    karma_run(engine(lanes, users)?.as_mut(), f, g, initial_credits, demands, &mut |_| Ok(()))
}

/// As [`karma_cycles`], and writes a waveform (VCD) of the engine's signals to `out`
/// from the first quantum's `start` to the end of the last quantum (the credits are
/// loaded before the waveform begins). The text goes out after each quantum, so memory
/// stays at one quantum's worth. On an error, what was written is incomplete: write to
/// a temporary file.
pub fn karma_trace(
    lanes: usize,
    f: u32,
    g: u32,
    initial_credits: u32,
    demands: &[Vec<u64>],
    out: &mut dyn std::io::Write,
) -> Result<Vec<u32>, HdlError> {
    let users = demands.first().map_or(0, Vec::len);
    let mut engine = engine(lanes, users)?;
    let mut write = |engine: &mut dyn SimulatedEngine| out.write_all(&engine.take_trace()).map_err(HdlError::Write);
    let mut first = true;
    let cycles = karma_run(engine.as_mut(), f, g, initial_credits, demands, &mut |engine| {
        if std::mem::take(&mut first) {
            engine.start_trace()
        } else {
            write(engine)
        }
    })?;
    write(engine.as_mut())?;
    out.flush().map_err(HdlError::Write)?;
    Ok(cycles)
}

/// The loop of [`karma_cycles`] on `engine`; `before` runs before each quantum.
fn karma_run(
    engine: &mut dyn SimulatedEngine,
    f: u32,
    g: u32,
    initial_credits: u32,
    demands: &[Vec<u64>],
    before: &mut dyn FnMut(&mut dyn SimulatedEngine) -> Result<(), HdlError>,
) -> Result<Vec<u32>, HdlError> {
    let users = demands.first().map_or(0, Vec::len);
    let fail = |quantum: usize, detail: String| HdlError::Quantum { quantum, detail };
    let mut credits = vec![initial_credits; users];
    engine.write_credits(&credits).map_err(|e| fail(0, e.to_string()))?;
    let mut cycles = Vec::with_capacity(demands.len());
    for (q, d) in demands.iter().enumerate() {
        before(engine)?;
        let demand: Vec<u32> = d.iter().map(|&x| x.min(abi::WORD_MAX) as u32).collect();
        let got = engine
            .quantum(QuantumSettings { mode: Mode::Karma, fair: f, guaranteed: g }, &demand)
            .map_err(|e| fail(q, e.to_string()))?;
        let want = crate::oracle::expected(Mode::Karma, f, g, &credits, &demand).map_err(|e| fail(q, e))?;
        if (&got.alloc, &got.credits) != (&want.0, &want.1) {
            return Err(fail(q, "the engine's result differs from the software".into()));
        }
        credits = got.credits;
        cycles.push(got.cycles);
    }
    Ok(cycles)
}

/// A fresh simulated engine with `lanes` lanes that holds `users` users, or an error
/// that lists what this build offers.
pub fn engine(lanes: usize, users: usize) -> Result<Box<dyn SimulatedEngine>, HdlError> {
    let capacity = engine_capacity(lanes, users)?;
    macro_rules! shapes {
        ($(($p:literal, $cap:literal, $a:literal)),* $(,)?) => {
            match (lanes, capacity) {
                $(($p, $cap) => Ok(Box::new(EngineSim::<$p, $a>::new())),)*
                _ => Err(HdlError::Shape(format!("{lanes} lanes: this build's engines have {:?} lanes", LANES))),
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

/// Capacities (users) the software model [`SoftwareEngine`] comes in: those of the RTL
/// shapes and, beyond them, what no RTL shape of this build holds (the model is not
/// bound by what is synthesized).
pub const MODEL_CAPACITIES: [usize; 8] = [64, 256, 1024, 4096, 16_384, 65_536, 262_144, 1_048_576];

/// The capacity of the smallest software model of `lanes` lanes that holds `users`.
pub fn model_capacity(lanes: usize, users: usize) -> Result<usize, HdlError> {
    let Some(&capacity) = MODEL_CAPACITIES.iter().find(|&&c| c >= users && users > 0) else {
        return Err(HdlError::Shape(format!(
            "{users} users: the engine model holds 1 to {} users",
            MODEL_CAPACITIES[7]
        )));
    };
    if !LANES.contains(&lanes) {
        return Err(HdlError::Shape(format!("{lanes} lanes: this build's engines have {:?} lanes", LANES)));
    }
    Ok(capacity)
}

/// The software stand-in for an engine of `lanes` lanes and `capacity` users: the same
/// interface, the same status codes for what does not fit (the ABI's admission rule,
/// [`fairshare_abi::admit`], which the RTL implements in hardware), the results of the
/// software policies as [`crate::oracle::expected`] states them (the same parameters,
/// [`crate::oracle::params`], and the batched implementation), with the parameters and
/// buffers kept between quanta so that it is as fast as the host's software. Used by
/// the emulator when cycle accuracy is not wanted.
pub struct SoftwareEngine {
    lanes: usize,
    credits: Vec<u32>,
    /// The pool of the last quantum, `(users, fair, guaranteed)`, and its buffers.
    pool: Option<((usize, u32, u32), KarmaParams)>,
    workspace: Workspace,
    outcome: Outcome,
    demand: Vec<u64>,
    before: Vec<Credits>,
}

impl SoftwareEngine {
    /// All balances 0.
    pub fn new(lanes: usize, capacity: usize) -> Self {
        SoftwareEngine {
            lanes,
            credits: vec![0; capacity],
            pool: None,
            workspace: Workspace::default(),
            outcome: Outcome::default(),
            demand: Vec::new(),
            before: Vec::new(),
        }
    }

    /// One quantum with the mode as the register word holds it (any value, as the
    /// hardware sees it): refused with the admission rule's status code, or computed.
    pub fn quantum_word(
        &mut self,
        mode_word: u32,
        fair: u32,
        guaranteed: u32,
        demand: &[u32],
    ) -> Result<QuantumOutput, DeviceError> {
        let mut out = QuantumOutput::default();
        self.quantum_word_into(mode_word, fair, guaranteed, demand, &mut out)?;
        Ok(out)
    }

    /// [`SoftwareEngine::quantum_word`] into `out`, reusing its buffers.
    pub fn quantum_word_into(
        &mut self,
        mode_word: u32,
        fair: u32,
        guaranteed: u32,
        demand: &[u32],
        out: &mut QuantumOutput,
    ) -> Result<(), DeviceError> {
        let start = std::time::Instant::now();
        let n = demand.len();
        // More users than balances: the admission rule refuses before it reads any.
        let before = self.credits.get(..n).unwrap_or(&[]);
        abi::admit(&self.limits(), mode_word, fair as u64, guaranteed as u64, before, demand)
            .map_err(|r| DeviceError::Refused { code: r.code })?;
        let Some(mode) = Mode::from_word(mode_word) else {
            return Err(DeviceError::Refused { code: abi::status::MODE });
        };
        // Past admission the software accepts the quantum and its balances stay below
        // 2^31; were one not to fit a word after all, CREDIT is what it would be.
        let refused = DeviceError::Refused { code: abi::status::CREDIT };
        let key = (n, fair, guaranteed);
        if self.pool.as_ref().is_none_or(|(k, _)| *k != key) {
            let params = crate::oracle::params(n, fair, guaranteed).map_err(|_| refused.clone())?;
            self.pool = Some((key, params));
        }
        let Some((_, params)) = self.pool.as_ref() else { return Err(refused) };
        self.demand.clear();
        self.demand.extend(demand.iter().map(|&d| d as u64));
        self.before.clear();
        self.before.extend(self.credits[..n].iter().map(|&c| Credits::from_raw((c as i64) << FRAC_BITS)));
        let policy = crate::oracle::policy(mode);
        let (workspace, outcome) = (&mut self.workspace, &mut self.outcome);
        run_into(policy, Implementation::Batched, params, &self.demand, &self.before, workspace, outcome)
            .map_err(|_| refused.clone())?;
        let fits = outcome.alloc.iter().all(|&a| a <= u32::MAX as u64)
            && outcome.credits.iter().all(|c| c.is_integer() && (0..=u32::MAX as i64).contains(&c.floor_int()));
        if !fits {
            return Err(refused);
        }
        out.alloc.clear();
        out.alloc.extend(outcome.alloc.iter().map(|&a| a as u32));
        out.credits.clear();
        out.credits.extend(outcome.credits.iter().map(|c| c.floor_int() as u32));
        self.credits[..n].copy_from_slice(&out.credits);
        out.cycles = 0;
        out.device_ns = start.elapsed().as_nanos() as u64;
        Ok(())
    }
}

impl Accelerator for SoftwareEngine {
    fn label(&self) -> String {
        format!("engine model ({} lanes, {} users)", self.lanes, self.credits.len())
    }
    fn limits(&self) -> Limits {
        Limits { max_users: self.credits.len(), modes: abi::ALL_MODES }
    }
    fn write_credits(&mut self, credits: &[u32]) -> Result<(), DeviceError> {
        let capacity = self.credits.len();
        self.credits.get_mut(..credits.len()).ok_or(too_many(credits.len(), capacity))?.copy_from_slice(credits);
        Ok(())
    }
    fn read_credits(&mut self, n: usize) -> Result<Vec<u32>, DeviceError> {
        Ok(self.credits.get(..n).ok_or(too_many(n, self.credits.len()))?.to_vec())
    }
    fn quantum_into(
        &mut self,
        settings: QuantumSettings,
        demand: &[u32],
        out: &mut QuantumOutput,
    ) -> Result<(), DeviceError> {
        self.quantum_word_into(settings.mode.word(), settings.fair, settings.guaranteed, demand, out)
    }
}

impl SimulatedEngine for SoftwareEngine {
    fn lanes(&self) -> usize {
        self.lanes
    }
    fn capacity(&self) -> usize {
        self.credits.len()
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
    fn verilog(&self) -> Result<(String, String), HdlError> {
        Err(HdlError::Verilog("the software model has no Verilog".into()))
    }
    fn device_verilog(&self) -> Result<(String, String), HdlError> {
        Err(HdlError::Verilog("the software model has no Verilog".into()))
    }
    fn start_trace(&mut self) -> Result<(), HdlError> {
        Err(HdlError::Shape("the software model has no signals to trace".into()))
    }
    fn take_trace(&mut self) -> Vec<u8> {
        Vec::new()
    }
}
