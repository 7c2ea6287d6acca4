//! The emulated device's shared memory, reached through a Unix socket.
//!
//! The emulator (`fairshare device-sim --shm PATH`) keeps the device's memory in a
//! sealed memfd: its size is fixed once created (`F_SEAL_SHRINK | F_SEAL_GROW`), so no
//! process, the emulator's, the host's or a third one, can truncate it under a mapping
//! and kill a process with `SIGBUS`. `PATH` is a Unix socket: a host connects, and the
//! emulator answers with one byte and, if it is free, the memfd (`SCM_RIGHTS`). Bytes
//! `0 .. BAR_WINDOW` of the memory are BAR0 (the register map of [`fairshare_abi`], then
//! the words of [`crate::signal`] by which host and emulator wake each other); the
//! DMA region follows, laid out by [`DmaLayout`], and bus addresses are offsets into
//! it. The host code above [`DeviceHandle`] cannot tell this from VFIO.
//!
//! The socket also carries liveness and ownership: one host at a time (a second is
//! refused, [`OpenError::Busy`]); a host waiting for a completion notices within a
//! millisecond or so that the emulator process is gone (its end of the socket closed)
//! instead of waiting out its timeout; a socket left behind by a dead emulator refuses
//! connections, so a host says "no emulator is serving PATH" at once.

use crate::handle::{DeviceHandle, DmaLayout, OpenError};
use crate::mmio::Region;
use fairshare_abi as abi;
use rustix::fs::{MemfdFlags, SealFlags};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};
use std::fs::File;
use std::io::{ErrorKind, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::Duration;

/// Bytes of the BAR0 window at the start of the memory (one page).
pub const BAR_WINDOW: usize = 4096;

/// The emulator's first byte to a host: here is the memory.
pub const GRANTED: u8 = b'F';
/// The emulator's first byte to a host: another host is attached.
pub const BUSY: u8 = b'B';

/// The seals a device memory must carry: its size can neither shrink nor grow.
fn fixed_size() -> SealFlags {
    SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL
}

/// Memory size for a device that holds `max_users` users.
pub fn memory_len(max_users: usize) -> usize {
    BAR_WINDOW + DmaLayout::for_users(max_users).total
}

/// Maps the BAR window and the DMA region of a device memory.
pub fn map(memory: &File, max_users: usize) -> std::io::Result<(Region, Region)> {
    let bar = Region::map_file(memory, 0, BAR_WINDOW)?;
    let dma = Region::map_file(memory, BAR_WINDOW as u64, DmaLayout::for_users(max_users).total)?;
    Ok((bar, dma))
}

/// Creates a zeroed, sealed device memory for `max_users` users and maps it. The
/// emulator fills in the identification registers, `MAGIC` last.
pub fn create_memory(max_users: usize) -> std::io::Result<(File, Region, Region)> {
    let fd = rustix::fs::memfd_create("fairshare-device", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    let file = File::from(fd);
    file.set_len(memory_len(max_users) as u64)?;
    rustix::fs::fcntl_add_seals(&file, fixed_size())?;
    let (bar, dma) = map(&file, max_users)?;
    Ok((file, bar, dma))
}

/// Why a path cannot be taken for a new emulator socket.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// Something that is not a socket is there (a user's file, a folder, a device).
    #[error("{path} exists and is not an emulator socket: it is left as it is; choose another --shm path")]
    NotASocket {
        /// The path.
        path: String,
    },
    /// A live emulator already serves the path.
    #[error("{path}: a live emulator is serving it already")]
    Served {
        /// The path.
        path: String,
    },
    /// The OS refused.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Binds the emulator's socket at `path`. An existing path is replaced only if it is
/// the socket of an emulator that is gone (it refuses connections); anything else
/// there is refused and left untouched.
pub fn claim(path: &Path) -> Result<UnixListener, ClaimError> {
    let shown = path.display().to_string();
    let io = |what: &str, source| ClaimError::Io { what: format!("{what} {shown}"), source };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("inspecting", e)),
        Ok(meta) if !meta.file_type().is_socket() => return Err(ClaimError::NotASocket { path: shown }),
        Ok(_) => match UnixStream::connect(path) {
            Ok(_) => return Err(ClaimError::Served { path: shown }),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path).map_err(|e| io("removing the stale socket", e))?
            }
            Err(e) => return Err(io("probing", e)),
        },
    }
    UnixListener::bind(path).map_err(|e| io("binding", e))
}

/// Sends the device memory to a host that connected (`GRANTED` and the memfd).
pub fn grant(stream: &UnixStream, memory: &File) -> std::io::Result<()> {
    let fds = [memory.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(std::io::Error::other("no room for the descriptor"));
    }
    rustix::net::sendmsg(stream, &[IoSlice::new(&[GRANTED])], &mut control, SendFlags::NOSIGNAL)?;
    Ok(())
}

/// Tells a host that connected that another host is attached (`BUSY`, no memory).
pub fn refuse(mut stream: UnixStream) {
    use std::io::Write as _;
    let _ = stream.write_all(&[BUSY]);
}

/// Whether the other end of `stream` is still there (false once it closed its end or
/// its process ended). Does not consume anything.
pub fn peer_alive(stream: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    match rustix::net::recv(stream, &mut byte, RecvFlags::PEEK | RecvFlags::DONTWAIT) {
        Ok((0, _)) => false,
        Ok(_) => true,
        Err(e) => e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::INTR,
    }
}

/// Receives the first byte and the memfd the emulator sends a connecting host.
fn receive(stream: &UnixStream, shown: &str) -> Result<(u8, Option<OwnedFd>), OpenError> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(stream, &mut [IoSliceMut::new(&mut byte)], &mut control, RecvFlags::CMSG_CLOEXEC)
        .map_err(|e| OpenError::Io { what: format!("waiting for the emulator at {shown}"), source: e.into() })?;
    let mut fd = None;
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(mut fds) = msg {
            fd = fds.next();
        }
    }
    if got.bytes == 0 {
        return Err(OpenError::NotFound(format!("the emulator at {shown} closed the connection before answering")));
    }
    Ok((byte[0], fd))
}

/// Opens the device served by `fairshare device-sim --shm PATH`.
pub fn open(path: &Path) -> Result<DeviceHandle, OpenError> {
    let shown = path.display().to_string();
    let start = format!("start `fairshare device-sim --shm {shown}` first");
    let stream = UnixStream::connect(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => OpenError::NotFound(format!("no emulator at {shown}: {start}")),
        ErrorKind::ConnectionRefused => OpenError::NotFound(format!(
            "no emulator is serving {shown} (what is there is not a live emulator's socket): {start}"
        )),
        ErrorKind::PermissionDenied => OpenError::Permission { path: shown.clone() },
        _ => OpenError::Io { what: format!("connecting to {shown}"), source: e },
    })?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| OpenError::Io { what: format!("connecting to {shown}"), source: e })?;
    let memory = match receive(&stream, &shown)? {
        (GRANTED, Some(fd)) => File::from(fd),
        (BUSY, _) => return Err(OpenError::Busy { path: shown }),
        (other, _) => {
            return Err(OpenError::Bar(format!(
                "{shown} answered 0x{other:02X} without a device memory: not an emulator"
            )))
        }
    };
    // The size can change no more: check the seals, then the size, then map.
    let seals = rustix::fs::fcntl_get_seals(&memory)
        .map_err(|e| OpenError::Bar(format!("{shown}: the device memory is not a sealed memfd ({e})")))?;
    if !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
        return Err(OpenError::Bar(format!(
            "{shown}: the device memory's size is not sealed; it could shrink under us"
        )));
    }
    let len =
        memory.metadata().map_err(|e| OpenError::Io { what: format!("reading {shown}"), source: e })?.len() as usize;
    if len < BAR_WINDOW {
        return Err(OpenError::Bar(format!("{shown} has {len} bytes, not even the {BAR_WINDOW}-byte register window")));
    }
    let bar = Region::map_file(&memory, 0, BAR_WINDOW)
        .map_err(|e| OpenError::Io { what: format!("mapping {shown}"), source: e })?;
    let max_users = bar.read32(abi::MAX_USERS.offset as usize).map_err(|e| OpenError::Bar(e.to_string()))? as usize;
    if len < memory_len(max_users) {
        return Err(OpenError::Bar(format!(
            "{shown} has {len} bytes; a device of {max_users} users needs {}",
            memory_len(max_users)
        )));
    }
    let dma = Region::map_file(&memory, BAR_WINDOW as u64, DmaLayout::for_users(max_users).total)
        .map_err(|e| OpenError::Io { what: format!("mapping {shown}"), source: e })?;
    // The handle owns the memory file; the liveness check owns the connection.
    let mut handle = DeviceHandle::attach(bar, dma, 0, format!("emulator:{shown}"), Some(Box::new(memory)))?;
    handle.set_liveness(
        Box::new(move || peer_alive(&stream)),
        format!("the emulator serving {shown} is gone (its process ended or closed the connection)"),
    );
    handle.set_shared_memory();
    Ok(handle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_memory_cannot_be_resized_by_anyone() {
        let (memory, bar, _dma) = create_memory(64).unwrap();
        let len = memory_len(64) as u64;
        assert_eq!(memory.metadata().unwrap().len(), len);
        // Shrinking (what would SIGBUS a process that maps it) and growing both fail.
        for size in [0, 4096, len - 1, len + 4096] {
            let e = memory.set_len(size).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(1), "set_len({size}) is refused with EPERM: {e}");
        }
        // The seals themselves are sealed: nobody can lift them.
        assert!(rustix::fs::fcntl_add_seals(&memory, SealFlags::WRITE).is_err());
        bar.write32(0, 7).unwrap();
        assert_eq!(bar.read32(0).unwrap(), 7, "still mapped and usable");
    }

    #[test]
    fn claim_refuses_what_is_not_a_stale_emulator_socket() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("users-file");
        std::fs::write(&file, "precious").unwrap();
        assert!(matches!(claim(&file), Err(ClaimError::NotASocket { .. })));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious", "left untouched");
        assert!(matches!(claim(dir.path()), Err(ClaimError::NotASocket { .. })));
        let sock = dir.path().join("dev.sock");
        let live = claim(&sock).unwrap();
        assert!(matches!(claim(&sock), Err(ClaimError::Served { .. })), "a live emulator keeps its path");
        drop(live); // the socket file stays behind, as after kill -9
        assert!(sock.exists());
        let _again = claim(&sock).expect("a stale socket of a dead emulator is replaced");
    }

    #[test]
    fn a_host_finds_no_live_emulator_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("dev.sock");
        drop(claim(&sock).unwrap());
        let start = std::time::Instant::now();
        let e = open(&sock).err().unwrap();
        assert!(e.to_string().contains("no emulator is serving"), "{e}");
        assert!(start.elapsed() < Duration::from_millis(100), "said so within 100 ms");
        let e = open(&dir.path().join("nothing")).err().unwrap();
        assert!(e.to_string().contains("no emulator at"), "{e}");
    }
}
