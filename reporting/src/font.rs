//! The TrueType font the plots draw their text with. plotters is built without its
//! font-config path (no native library to install); instead a font file is found on the
//! system at run time and registered as `sans-serif`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::style::FontStyle;

use crate::ReportError;

/// Font files tried, in order, after `$FAIRSHARE_FONT`.
const FONTS: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Finds a TrueType font and registers it as plotters' `sans-serif`, once per process.
/// `$FAIRSHARE_FONT` names one; otherwise the usual places, then any `.ttf` under
/// `/usr/share/fonts`.
pub fn register() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let found = *REGISTERED.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = std::env::var_os("FAIRSHARE_FONT").map(PathBuf::from).into_iter().collect();
        candidates.extend(FONTS.iter().map(PathBuf::from));
        candidates.extend(first_ttf(Path::new("/usr/share/fonts"), 4));
        for path in candidates {
            if let Ok(bytes) = std::fs::read(&path) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    });
    if found {
        Ok(())
    } else {
        Err(ReportError::NoFont)
    }
}

/// The first `.ttf` file under `dir`, searching `depth` levels down.
fn first_ttf(dir: &Path, depth: usize) -> Option<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).collect();
    entries.sort();
    if let Some(f) = entries.iter().find(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("ttf"))) {
        return Some(f.clone());
    }
    if depth == 0 {
        return None;
    }
    entries.iter().filter(|p| p.is_dir()).find_map(|d| first_ttf(d, depth - 1))
}
