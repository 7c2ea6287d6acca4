//! # fairshare-driver: the device ABI and the ways to reach a device
//!
//! - [`abi`]: the one definition of the device contract (registers, buffers, doorbell
//!   protocol) that the RustHDL block, the emulator and the host share.
//! - [`device`]: an open device: quanta through the doorbell and completion record,
//!   credits through the registers, typed faults and timeouts.
//! - [`shm`]: the emulated device's shared-memory file; [`vfio`]: a real one bound to
//!   `vfio-pci`. Both give a [`device::Device`].
//! - [`mmio`]: checked volatile access to mapped memory (the crate's only `unsafe`).

pub mod abi;
pub mod device;
pub mod mmio;
pub mod shm;
pub mod vfio;

pub use device::{Device, DeviceFault, DeviceInfo, OpenError, QuantumOutput};
