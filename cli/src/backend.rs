//! `--backend` on the command line: the backends themselves live in
//! `fairshare-backends`; this module words a fallback, once, for every command.

use fairshare::offload::{Fallback, Offload};
pub use fairshare_backends::{Backend, DeviceOptions};

/// Says on stderr whether a pool left its device, and why.
pub fn report(pool: &Offload) {
    if let Some(fb) = pool.fallback() {
        report_fallback(pool.label(), fb);
    }
}

/// Says on stderr that the pool on `backend` left its device (the one wording of a
/// fallback: [`Fallback`]'s own, plus what happens next).
pub fn report_fallback(backend: &str, fb: &Fallback) {
    eprintln!("fairshare: backend {backend} {fb}; the pool continues on software with the last good credits");
}
