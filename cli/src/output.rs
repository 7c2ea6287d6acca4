//! Writing results: atomically to a file (temporary file, then rename, so a failed run
//! leaves no partial file), or to stdout; a progress bar when stderr is a terminal.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes `path` through a temporary file in the same folder, renamed into place only
/// when `write` succeeded. The file gets the mode any new file gets (0666 less the
/// umask: 0644 under the usual 022), not the temporary file's private 0600.
pub fn write_atomically(path: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // The kernel applies the umask to the mode asked for at creation, as for any file.
    let mut tmp = tempfile::Builder::new()
        .prefix(".fairshare-")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    {
        let mut out = BufWriter::new(tmp.as_file_mut());
        write(&mut out)?;
        out.flush()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes to `--out` atomically, or to stdout.
pub fn write_output(out: Option<&Path>, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    match out {
        Some(path) => write_atomically(path, write),
        None => {
            let stdout = io::stdout();
            let mut lock = BufWriter::new(stdout.lock());
            write(&mut lock)?;
            lock.flush()
        }
    }
}

/// A progress bar over `len` quanta on stderr, hidden unless stderr is a terminal and
/// the run is long enough to be worth one.
pub fn progress(len: usize, what: &str) -> ProgressBar {
    if len < 200 || !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} quanta ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(what.to_string());
    bar
}

/// Ratios print as they do in the report files.
pub use fairshare_report::table::ratio;

/// A plain text table: a header row and rows, columns padded to their widest cell.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells.iter().zip(&width).map(|(c, w)| format!("{c:<w$}")).collect();
        padded.join("  ").trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out += &line(row.iter().map(String::as_str).collect());
    }
    out
}
