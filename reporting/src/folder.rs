//! A report folder that is replaced whole or not at all: built beside its destination,
//! then swapped in by two renames; an earlier report is put back if the swap fails, and
//! anything that is not an earlier report (or an empty folder) is never replaced.

use std::fs;
use std::path::{Path, PathBuf};

use crate::ReportError;

/// The file whose presence marks a folder as an earlier report.
pub const MARKER: &str = "summary.md";

/// Where a report goes, checked before any work is done.
#[derive(Debug)]
pub struct ReportFolder {
    out: PathBuf,
    parent: PathBuf,
    name: String,
}

impl ReportFolder {
    /// Checks that `out` can receive a report: its parent folder exists, and `out` is
    /// absent, empty, or an earlier report (it holds [`MARKER`]).
    pub fn new(out: &Path) -> Result<Self, ReportError> {
        let refused = |reason: String| ReportError::Refused { path: out.to_path_buf(), reason };
        let name = out.file_name().and_then(|n| n.to_str()).ok_or_else(|| refused("not a folder name".into()))?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            return Err(refused(format!("folder {} does not exist", parent.display())));
        }
        if out.exists() || out.is_symlink() {
            let earlier_report = out.join(MARKER).is_file();
            let empty = fs::read_dir(out).map(|mut d| d.next().is_none()).unwrap_or(false);
            if out.is_symlink() || !out.is_dir() || !(earlier_report || empty) {
                return Err(refused(format!(
                    "exists and is not an earlier report (no {MARKER}); refusing to replace it"
                )));
            }
        }
        Ok(ReportFolder { out: out.to_path_buf(), parent, name: name.to_string() })
    }

    /// The destination.
    pub fn path(&self) -> &Path {
        &self.out
    }

    /// Builds the folder with `fill` beside the destination, then swaps it in. On any
    /// error the destination is as it was and the staging folder is removed.
    pub fn write<E: From<ReportError>>(&self, fill: impl FnOnce(&Path) -> Result<(), E>) -> Result<(), E> {
        let stage = self.parent.join(format!(".{}.new-{}", self.name, std::process::id()));
        let old = self.parent.join(format!(".{}.old-{}", self.name, std::process::id()));
        let _ = fs::remove_dir_all(&stage);
        fs::create_dir(&stage).map_err(|e| ReportError::io("creating", &stage, e))?;
        if let Err(e) = fill(&stage) {
            let _ = fs::remove_dir_all(&stage);
            return Err(e);
        }
        let replacing = self.out.exists();
        if replacing {
            if let Err(e) = fs::rename(&self.out, &old) {
                let _ = fs::remove_dir_all(&stage);
                return Err(ReportError::io("moving aside", &self.out, e).into());
            }
        }
        if let Err(e) = fs::rename(&stage, &self.out) {
            // Put the earlier report back: a failed run changes nothing.
            if replacing {
                let _ = fs::rename(&old, &self.out);
            }
            let _ = fs::remove_dir_all(&stage);
            return Err(ReportError::io("renaming into place", &self.out, e).into());
        }
        let _ = fs::remove_dir_all(&old);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Result = std::result::Result<(), Box<dyn std::error::Error>>;

    fn leftovers(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn an_earlier_report_is_replaced_whole() -> Result {
        let dir = tempfile::tempdir()?;
        let out = dir.path().join("r");
        fs::create_dir(&out)?;
        fs::write(out.join(MARKER), "old")?;
        fs::write(out.join("stale.csv"), "old")?;
        ReportFolder::new(&out)?.write(|d| fs::write(d.join(MARKER), "new").map_err(|e| ReportError::io("w", d, e)))?;
        assert_eq!(fs::read_to_string(out.join(MARKER))?, "new");
        assert!(!out.join("stale.csv").exists());
        assert_eq!(leftovers(dir.path()), ["r"]);
        Ok(())
    }

    #[test]
    fn a_failed_fill_leaves_the_earlier_report_and_no_staging_folder() -> Result {
        let dir = tempfile::tempdir()?;
        let out = dir.path().join("r");
        fs::create_dir(&out)?;
        fs::write(out.join(MARKER), "old")?;
        let failed = ReportFolder::new(&out)?.write(|d| {
            fs::write(d.join(MARKER), "half").map_err(|e| ReportError::io("writing", d, e))?;
            Err(ReportError::io("writing", d, std::io::Error::other("disk full")))
        });
        assert!(failed.is_err());
        assert_eq!(fs::read_to_string(out.join(MARKER))?, "old");
        assert_eq!(leftovers(dir.path()), ["r"]);
        Ok(())
    }

    #[test]
    fn anything_else_is_refused_before_work_starts() -> Result {
        let dir = tempfile::tempdir()?;
        let notes = dir.path().join("notes");
        fs::create_dir(&notes)?;
        fs::write(notes.join("todo.txt"), "mine")?;
        let file = dir.path().join("file");
        fs::write(&file, "mine")?;
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&notes, &link)?;
        for path in [&notes, &file, &link] {
            let e = ReportFolder::new(path).expect_err("not a report");
            assert!(e.to_string().contains("refusing to replace"), "{e}");
        }
        let e = ReportFolder::new(&dir.path().join("missing/r")).expect_err("no parent");
        assert!(e.to_string().contains("does not exist"), "{e}");
        assert_eq!(fs::read_to_string(notes.join("todo.txt"))?, "mine");
        Ok(())
    }
}
