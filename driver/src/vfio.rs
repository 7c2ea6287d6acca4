//! The VFIO backend: a fairshare device bound to `vfio-pci`. Opens the container,
//! group and device, maps BAR0 (checking its size and mmap flag), maps a DMA buffer
//! through the IOMMU at [`IOVA_BASE`], and hands both to [`DeviceHandle`].
//!
//! Not tested on a real FPGA (none is attached to the machines this is built on): the
//! address parsing, the region checks and every error path before the first ioctl are
//! tested here; past that point the code follows the kernel's VFIO API.

use crate::handle::{DeviceHandle, DmaLayout, OpenError};
use crate::mmio::Region;
use fairshare_abi as abi;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use vfio_bindings::bindings::vfio::{
    VFIO_PCI_BAR0_REGION_INDEX, VFIO_REGION_INFO_FLAG_MMAP, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use vfio_ioctls::{VfioContainer, VfioDevice};

/// Bus address at which the DMA buffer is mapped through the IOMMU.
pub const IOVA_BASE: u64 = 0x1_0000_0000;
/// The VFIO container device.
pub const CONTAINER: &str = "/dev/vfio/vfio";

/// The sysfs directory of a PCI device given as `DDDD:BB:DD.F`, `BB:DD.F` (domain 0)
/// or a path under `/sys`.
pub fn sysfs_path(address: &str) -> Result<PathBuf, OpenError> {
    if address.starts_with('/') {
        return Ok(PathBuf::from(address));
    }
    let full = if address.matches(':').count() == 1 { format!("0000:{address}") } else { address.to_string() };
    let hex = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit());
    let ok = match full.split(':').collect::<Vec<_>>()[..] {
        [domain, bus, devfn] => match devfn.split_once('.') {
            Some((dev, func)) => {
                hex(domain, 4)
                    && hex(bus, 2)
                    && hex(dev, 2)
                    && u8::from_str_radix(dev, 16).is_ok_and(|d| d < 32)
                    && func.len() == 1
                    && func.chars().all(|c| ('0'..='7').contains(&c))
            }
            None => false,
        },
        _ => false,
    };
    if !ok {
        return Err(OpenError::BadAddress(address.to_string()));
    }
    Ok(Path::new("/sys/bus/pci/devices").join(full.to_ascii_lowercase()))
}

/// Checks BAR0's region info: readable, writable, mappable, and large enough for the
/// register map. Returns the length to map.
pub fn check_bar(flags: u32, size: u64) -> Result<usize, OpenError> {
    for (flag, what) in [
        (VFIO_REGION_INFO_FLAG_READ, "is not readable"),
        (VFIO_REGION_INFO_FLAG_WRITE, "is not writable"),
        (VFIO_REGION_INFO_FLAG_MMAP, "cannot be memory-mapped (no VFIO_REGION_INFO_FLAG_MMAP)"),
    ] {
        if flags & flag == 0 {
            return Err(OpenError::Bar(what.to_string()));
        }
    }
    if size < abi::BAR_BYTES as u64 {
        return Err(OpenError::Bar(format!("has {size} bytes, the register map needs {}", abi::BAR_BYTES)));
    }
    Ok(size.min(4096) as usize)
}

fn io_error(what: String, e: std::io::Error, path: &Path) -> OpenError {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => OpenError::Permission { path: path.display().to_string() },
        std::io::ErrorKind::NotFound => OpenError::NotFound(format!("{what}: {} does not exist", path.display())),
        _ => OpenError::Io { what, source: e },
    }
}

/// Opens the fairshare device at `address` through VFIO.
pub fn open(address: &str) -> Result<DeviceHandle, OpenError> {
    open_with(address, Path::new(CONTAINER))
}

/// [`open`] with another container path (tests).
pub fn open_with(address: &str, container_path: &Path) -> Result<DeviceHandle, OpenError> {
    let sysfs = sysfs_path(address)?;
    if !container_path.exists() {
        return Err(OpenError::NoVfio { path: container_path.display().to_string() });
    }
    if !sysfs.exists() {
        return Err(OpenError::NotFound(format!(
            "no PCI device at {address} ({} does not exist): check the address with `lspci -D`",
            sysfs.display()
        )));
    }
    if !sysfs.join("iommu_group").exists() {
        return Err(OpenError::NotFound(format!(
            "{address} has no IOMMU group: enable the IOMMU (intel_iommu=on or amd_iommu=on) and bind the device to vfio-pci"
        )));
    }
    let container = VfioContainer::new(None)
        .map_err(|e| io_error(format!("opening {CONTAINER}: {e}"), std::io::Error::last_os_error(), container_path))?;
    let container = Arc::new(container);
    let device = VfioDevice::new(&sysfs, container.clone())
        .map_err(|e| OpenError::NotFound(format!("VFIO could not open {address}: {e}; is it bound to vfio-pci?")))?;
    let flags = device.get_region_flags(VFIO_PCI_BAR0_REGION_INDEX);
    let size = device.get_region_size(VFIO_PCI_BAR0_REGION_INDEX);
    let offset = device.get_region_offset(VFIO_PCI_BAR0_REGION_INDEX);
    let len = check_bar(flags, size)?;
    let bar = Region::map_fd(device.as_raw_fd(), offset, len)
        .map_err(|e| OpenError::Io { what: format!("mapping BAR0 of {address}"), source: e })?;
    let max_users = bar.read32(abi::MAX_USERS.offset as usize).map_err(|e| OpenError::Bar(e.to_string()))? as usize;
    let layout = DmaLayout::for_users(max_users.min(1 << 20));
    let dma = Region::anonymous(layout.total)
        .map_err(|e| OpenError::Io { what: "allocating the DMA buffer".into(), source: e })?;
    container.vfio_dma_map(IOVA_BASE, layout.total as u64, dma.host_address()).map_err(|e| OpenError::Io {
        what: format!("mapping the DMA buffer through the IOMMU: {e}"),
        source: std::io::Error::last_os_error(),
    })?;
    DeviceHandle::attach(bar, dma, IOVA_BASE, format!("vfio:{address}"), Some(Box::new((device, container))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pci_addresses() {
        assert_eq!(sysfs_path("0000:01:00.0").unwrap(), Path::new("/sys/bus/pci/devices/0000:01:00.0"));
        assert_eq!(sysfs_path("3B:1f.7").unwrap(), Path::new("/sys/bus/pci/devices/0000:3b:1f.7"));
        assert_eq!(sysfs_path("/sys/bus/pci/devices/x").unwrap(), Path::new("/sys/bus/pci/devices/x"));
        for bad in ["", "01:00", "0000:01:00.8", "0000:01:20.0", "zz:00.0", "0000:001:00.0", "1:2:3:4.0"] {
            let e = sysfs_path(bad).unwrap_err();
            assert!(e.to_string().contains("is not a PCI address"), "{bad}: {e}");
        }
    }

    #[test]
    fn bar_region_info() {
        let rw_mmap = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP;
        assert_eq!(check_bar(rw_mmap, 1 << 20).unwrap(), 4096);
        assert_eq!(check_bar(rw_mmap, 512).unwrap(), 512);
        let e = check_bar(rw_mmap, 256).unwrap_err().to_string();
        assert!(e.contains("has 256 bytes"), "{e}");
        let e = check_bar(VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE, 4096).unwrap_err().to_string();
        assert!(e.contains("memory-mapped"), "{e}");
        let e = check_bar(VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_MMAP, 4096).unwrap_err().to_string();
        assert!(e.contains("not writable"), "{e}");
    }

    #[test]
    fn opening_without_vfio_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let e = open_with("0000:01:00.0", &dir.path().join("vfio")).err().unwrap().to_string();
        assert!(e.contains("does not exist") && e.contains("modprobe vfio-pci"), "{e}");
        let e = open_with("not-an-address", &dir.path().join("vfio")).err().unwrap().to_string();
        assert!(e.contains("is not a PCI address"), "{e}");
        // A container that exists, and an address with no device behind it.
        let fake = dir.path().join("container");
        std::fs::write(&fake, "").unwrap();
        let e = open_with("0000:ff:1f.7", &fake).err().unwrap().to_string();
        assert!(e.contains("lspci -D"), "{e}");
    }

    #[test]
    fn this_machine_without_vfio() {
        // On machines without /dev/vfio (CI), opening reports it; with VFIO it must at
        // least not find a device at an impossible address.
        let e = open("0000:ff:1f.7").err().unwrap().to_string();
        assert!(e.contains("modprobe vfio-pci") || e.contains("lspci -D"), "{e}");
    }
}
