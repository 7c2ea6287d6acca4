//! Building the large blocks. A RustHDL block is a plain struct of signals, built and
//! returned by value: an engine of 16 lanes is megabytes, more than a test thread's
//! stack holds. [`boxed`] builds one on a thread with a large stack (address space;
//! only the pages it touches are used) and hands back a box.

use rust_hdl::prelude::Block;

/// Stack of the building thread.
const STACK_BYTES: usize = 256 << 20;

/// `make()`, run on a thread with a large stack, boxed there.
pub fn boxed<T: Block + Send>(make: impl FnOnce() -> T + Send) -> Box<T> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("rust-hdl build".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(scope, move || Box::new(make()))
            .expect("the OS runs a thread to build the block")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
