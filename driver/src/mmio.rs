//! Memory-mapped regions (a device BAR, a DMA buffer, a shared-memory file): the only
//! `unsafe` code of the driver. Every access is bounds- and alignment-checked before
//! it touches memory, and register accesses are volatile 32-bit loads and stores, so
//! the compiler neither merges, reorders nor drops them.
//!
//! Registers are read and written one word at a time; the buffers that the protocol
//! hands over whole (demands, results) move with one bulk copy each.
//!
//! Safety argument, once for the module: a [`Region`] owns its mapping (`MmapMut`) for
//! as long as it lives, so `ptr .. ptr + len` stays valid; offsets are checked against
//! `len` and 4-byte alignment before any pointer is formed; the mapping's base is page
//! aligned, so aligned offsets give aligned pointers. Another process (the emulator), a
//! thread of this one (the in-process emulator) or the device may change the memory at
//! any time:
//! - register words are read and written with volatile 32-bit accesses, never through
//!   references;
//! - the words two sides wait on with a futex ([`Region::word`]) are viewed as
//!   `AtomicU32`, the type made for memory that others change; the other side's
//!   volatile 32-bit stores to them are single aligned stores as well;
//! - the bulk copies ([`Region::read_words`], [`Region::write_words`]) copy between the
//!   mapping and this process's own buffers through raw pointers, never references into
//!   the mapping, so a device that writes the span during the copy (against the
//!   protocol) tears the copied values, which any bit pattern of a `u32` tolerates and
//!   the host's checks then see.

#![allow(unsafe_code)]

use memmap2::{MmapMut, MmapOptions};
use std::fs::File;
use std::os::fd::RawFd;
use std::sync::atomic::{fence, AtomicU32, Ordering};

/// An access outside a region or not 4-byte aligned (a bug in the caller, or a device
/// buffer address that does not fit the mapping).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("access of {len} bytes at offset 0x{offset:X} is outside the {size}-byte region or not 4-byte aligned")]
pub struct OutOfBounds {
    /// Byte offset.
    pub offset: usize,
    /// Bytes accessed.
    pub len: usize,
    /// Region size.
    pub size: usize,
}

/// A mapped region with checked volatile access.
pub struct Region {
    map: MmapMut,
}

impl Region {
    /// Maps `len` bytes of `file` from `offset` (shared, read-write).
    pub fn map_file(file: &File, offset: u64, len: usize) -> std::io::Result<Region> {
        // SAFETY: the mapping is shared with the emulator by design; all access goes
        // through the volatile, checked methods below, never through references.
        let map = unsafe { MmapOptions::new().offset(offset).len(len).map_mut(file)? };
        Ok(Region { map })
    }

    /// Maps `len` bytes of a device file descriptor from `offset` (a VFIO region).
    pub fn map_fd(fd: RawFd, offset: u64, len: usize) -> std::io::Result<Region> {
        // SAFETY: as for `map_file`; the kernel maps the BAR's physical pages.
        let map = unsafe { MmapOptions::new().offset(offset).len(len).map_mut(fd)? };
        Ok(Region { map })
    }

    /// Anonymous zeroed memory (a DMA buffer to be mapped through the IOMMU).
    pub fn anonymous(len: usize) -> std::io::Result<Region> {
        Ok(Region { map: MmapMut::map_anon(len)? })
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True for an empty region.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The region's address in this process (for `VFIO_IOMMU_MAP_DMA`).
    pub fn host_address(&self) -> u64 {
        self.map.as_ptr() as u64
    }

    fn check(&self, offset: usize, len: usize) -> Result<(), OutOfBounds> {
        let size = self.map.len();
        if !offset.is_multiple_of(4) || !len.is_multiple_of(4) || offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(OutOfBounds { offset, len, size });
        }
        Ok(())
    }

    /// Volatile 32-bit load (little-endian, as the device writes it).
    pub fn read32(&self, offset: usize) -> Result<u32, OutOfBounds> {
        self.check(offset, 4)?;
        // SAFETY: checked in bounds and aligned above.
        let v = unsafe { std::ptr::read_volatile(self.map.as_ptr().add(offset) as *const u32) };
        Ok(u32::from_le(v))
    }

    /// Volatile 32-bit store.
    pub fn write32(&self, offset: usize, value: u32) -> Result<(), OutOfBounds> {
        self.check(offset, 4)?;
        // SAFETY: checked in bounds and aligned above; the mapping is writable.
        unsafe { std::ptr::write_volatile(self.map.as_ptr().add(offset) as *mut u32, value.to_le()) };
        Ok(())
    }

    /// Copies consecutive words into `out` in one bulk copy (little-endian, as the
    /// device writes them). For buffers that the protocol hands over whole (demands
    /// before the doorbell, results before the completion record), never for
    /// registers: the other side does not write the span while it is read, so a plain
    /// copy sees what was written before the hand-over (the caller's [`barrier`]
    /// orders it), and any bit pattern is a valid `u32` should a faulty device write
    /// anyway.
    pub fn read_words(&self, offset: usize, out: &mut [u32]) -> Result<(), OutOfBounds> {
        self.check(offset, out.len() * 4)?;
        // SAFETY: the whole span was checked above; `out` is a distinct allocation of
        // this process, so the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(self.map.as_ptr().add(offset) as *const u32, out.as_mut_ptr(), out.len())
        };
        if cfg!(target_endian = "big") {
            out.iter_mut().for_each(|w| *w = u32::from_le(*w));
        }
        Ok(())
    }

    /// Copies `words` to consecutive words in one bulk copy (see [`Region::read_words`]
    /// for when that is sound).
    pub fn write_words(&self, offset: usize, words: &[u32]) -> Result<(), OutOfBounds> {
        self.check(offset, words.len() * 4)?;
        if cfg!(target_endian = "big") {
            for (i, w) in words.iter().enumerate() {
                self.write32(offset + 4 * i, *w)?;
            }
            return Ok(());
        }
        // SAFETY: the whole span was checked above; the mapping is writable and does
        // not overlap `words`, which this process owns.
        unsafe {
            std::ptr::copy_nonoverlapping(words.as_ptr(), self.map.as_ptr().add(offset) as *mut u32, words.len())
        };
        Ok(())
    }

    /// The word at `offset` as an atomic, for the futex words that a host and the
    /// emulator wait on and wake each other through ([`crate::signal`]).
    pub fn word(&self, offset: usize) -> Result<&AtomicU32, OutOfBounds> {
        self.check(offset, 4)?;
        // SAFETY: checked in bounds and 4-byte aligned; the mapping lives as long as
        // `self`, to which the reference is tied. `AtomicU32` has the layout of `u32`
        // and is made for memory that other threads and processes change.
        Ok(unsafe { &*(self.map.as_ptr().add(offset) as *const AtomicU32) })
    }
}

/// Orders this thread's earlier memory accesses before its later ones as seen by the
/// device or the emulator (buffers before the doorbell; completion before results).
pub fn barrier() {
    fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_access() {
        let r = Region::anonymous(4096).unwrap();
        r.write32(8, 0xA1B2_C3D4).unwrap();
        assert_eq!(r.read32(8).unwrap(), 0xA1B2_C3D4);
        assert!(r.read32(4094).is_err());
        assert!(r.read32(4096).is_err());
        assert!(r.write32(6, 1).is_err());
        assert!(r.read_words(4088, &mut [0; 3]).is_err());
        r.write_words(16, &[1, 2, 3]).unwrap();
        let mut out = [0; 3];
        r.read_words(16, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        assert_eq!(r.read32(usize::MAX - 3), Err(OutOfBounds { offset: usize::MAX - 3, len: 4, size: 4096 }));
    }
}
