//! `fairshare device-sim`: serves an emulated device until killed. Creates the socket,
//! prints `ready` on stdout, serves; an injected crash ends the process with status 70.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::flags::DeviceSimArgs;
use crate::output::outln;
use crate::CliError;

/// Runs `fairshare device-sim`.
pub fn run(args: DeviceSimArgs) -> Result<ExitCode, CliError> {
    let DeviceSimArgs { shm, model, users, lanes, faults, late_ms } = args;
    let mut emu = fairshare_emulator::Emulator::create(&shm, users, lanes, model, faults)?;
    emu.late_by = Duration::from_millis(late_ms);
    eprintln!(
        "device-sim: {model:?} model, {lanes} lanes, up to {} users, serving the socket {} (stop with Ctrl-C or SIGTERM)",
        emu.max_users(),
        shm.display()
    );
    // SIGINT and SIGTERM stop serving; the emulator then removes its socket. Installed
    // before `ready`, so that a signal sent as soon as it is read ends it cleanly.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(|source| CliError::Signal { signal, source })?;
    }
    outln!("ready")?;
    if let Err(fairshare_emulator::Stopped::Crashed) = emu.serve(&stop) {
        // As a device that dies: no clean-up, the process ends at once.
        std::process::exit(70);
    }
    Ok(ExitCode::SUCCESS)
}
