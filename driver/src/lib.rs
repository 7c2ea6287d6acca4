//! # fairshare-driver: the host's handle to a device
//!
//! Owns the ways the host reaches a fairshare device and the protocol it speaks over
//! them; takes the contract (registers, buffers, admission, the [`Accelerator`] seam)
//! from `fairshare-abi` and must not depend on the policies (the host library), the
//! RTL or the emulator.
//!
//! - [`handle`]: an open device, [`DeviceHandle`]: quanta through the doorbell and
//!   completion record, credits through the registers, typed errors and timeouts. It is
//!   an [`Accelerator`].
//! - [`shm`]: the emulated device's shared-memory file; [`vfio`]: a real one bound to
//!   `vfio-pci`. Both give a [`DeviceHandle`].
//! - [`mmio`]: checked access to mapped memory (the crate's only `unsafe`).
//! - [`signal`]: how a host and the emulator wait for each other (spin, then a futex).
//!
//! [`Accelerator`]: fairshare_abi::Accelerator

pub mod handle;
pub mod mmio;
pub mod shm;
pub mod signal;
pub mod vfio;

pub use handle::{DeviceHandle, DeviceInfo, DmaLayout, OpenError};
