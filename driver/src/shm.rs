//! The shared-memory "device": one file, mapped by the emulator (`fairshare
//! device-sim`) and by the host. Bytes `0 .. BAR_WINDOW` are BAR0 (the register map of
//! [`fairshare_abi`]); the DMA region follows, laid out by [`DmaLayout`], and bus addresses
//! are offsets into it. The host code above [`DeviceHandle`] cannot tell this from VFIO.

use crate::handle::{DeviceHandle, DmaLayout, OpenError};
use crate::mmio::Region;
use fairshare_abi as abi;
use std::fs::{File, OpenOptions};
use std::path::Path;

/// Bytes of the BAR0 window at the start of the file (one page).
pub const BAR_WINDOW: usize = 4096;

/// File size for a device that holds `max_users` users.
pub fn file_len(max_users: usize) -> usize {
    BAR_WINDOW + DmaLayout::for_users(max_users).total
}

/// Maps the BAR window and the DMA region of an open emulator file.
pub fn map(file: &File, max_users: usize) -> std::io::Result<(Region, Region)> {
    let bar = Region::map_file(file, 0, BAR_WINDOW)?;
    let dma = Region::map_file(file, BAR_WINDOW as u64, DmaLayout::for_users(max_users).total)?;
    Ok((bar, dma))
}

/// Creates a zeroed emulator file for `max_users` users at `path` (replacing any) and
/// maps it. The emulator fills in the identification registers, `MAGIC` last.
pub fn create(path: &Path, max_users: usize) -> std::io::Result<(File, Region, Region)> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
    file.set_len(file_len(max_users) as u64)?;
    let (bar, dma) = map(&file, max_users)?;
    Ok((file, bar, dma))
}

/// Opens the device served by `fairshare device-sim --shm PATH`.
pub fn open(path: &Path) -> Result<DeviceHandle, OpenError> {
    let shown = path.display().to_string();
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => OpenError::NotFound(format!(
            "no emulator file at {shown}: start `fairshare device-sim --shm {shown}` first"
        )),
        std::io::ErrorKind::PermissionDenied => OpenError::Permission { path: shown.clone() },
        _ => OpenError::Io { what: format!("opening {shown}"), source: e },
    })?;
    let len =
        file.metadata().map_err(|e| OpenError::Io { what: format!("reading {shown}"), source: e })?.len() as usize;
    if len < BAR_WINDOW {
        return Err(OpenError::Bar(format!("{shown} has {len} bytes, not even the {BAR_WINDOW}-byte register window")));
    }
    let bar = Region::map_file(&file, 0, BAR_WINDOW)
        .map_err(|e| OpenError::Io { what: format!("mapping {shown}"), source: e })?;
    let max_users = bar.read32(abi::MAX_USERS.offset as usize).map_err(|e| OpenError::Bar(e.to_string()))? as usize;
    if len < file_len(max_users) {
        return Err(OpenError::Bar(format!(
            "{shown} has {len} bytes; a device of {max_users} users needs {}",
            file_len(max_users)
        )));
    }
    let dma = Region::map_file(&file, BAR_WINDOW as u64, DmaLayout::for_users(max_users).total)
        .map_err(|e| OpenError::Io { what: format!("mapping {shown}"), source: e })?;
    DeviceHandle::attach(bar, dma, 0, format!("emulator:{shown}"), None)
}
