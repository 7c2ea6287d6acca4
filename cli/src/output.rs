//! Writing results: to stdout, or to a file that is replaced whole or not at all and
//! never clobbers what it must not ([`Output`]); a progress bar when stderr is a
//! terminal; plain text tables.

use crate::CliError;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Where a command's output goes: stdout, a non-regular file written directly (a FIFO,
/// `/dev/null`, a terminal), or a regular file written through a temporary file beside
/// it that replaces it only at [`Output::commit`].
///
/// The rules (docs/reliability.md): an output that is one of the command's inputs is
/// refused; a symlink is written through (its target is replaced, the link stays); a
/// non-regular file is never replaced; the temporary file (`.NAME.fairshare-PID.tmp`)
/// is fsynced, renamed over the target and the folder fsynced; it is removed when the
/// command fails, on SIGINT and SIGTERM, and, after a kill -9, by the next run that
/// writes to the same folder.
pub struct Output {
    sink: Sink,
}

enum Sink {
    Discard(io::Sink),
    Stdout(BufWriter<io::Stdout>),
    Direct { file: BufWriter<File>, path: PathBuf },
    Staged { file: BufWriter<File>, tmp: PathBuf, target: PathBuf },
}

/// Temporary files of this process, removed by the signal handler.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Once per process: SIGINT and SIGTERM remove the temporaries, then end the process
/// with the usual status (128 + the signal's number).
fn remove_temporaries_on_signal() -> io::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let mut signals =
                signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])
                    .map_err(|e| e.to_string())?;
            std::thread::spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    for tmp in TEMPORARIES.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
                        let _ = fs::remove_file(tmp);
                    }
                    std::process::exit(128 + signal);
                }
            });
            Ok(())
        })
        .clone()
        .map_err(io::Error::other)
}

/// The marker in the names of temporary files: `.NAME.fairshare-PID.tmp`.
const TMP_MARK: &str = ".fairshare-";

/// Removes `.NAME.fairshare-PID.tmp` files in `dir` whose process is gone (a run killed
/// with kill -9 could not remove its own).
fn remove_stale_temporaries(dir: &Path, name: &str) {
    let prefix = format!(".{name}{TMP_MARK}");
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file.to_str().and_then(|f| f.strip_prefix(&prefix)).and_then(|f| f.strip_suffix(".tmp")) else {
            continue;
        };
        let alive = pid.parse::<u32>().is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive && pid.parse::<u32>().is_ok() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The file a path names once symlinks are followed (the path itself when it does not
/// exist yet; a dangling link names its target).
fn resolve(path: &Path) -> io::Result<PathBuf> {
    match fs::canonicalize(path) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                let target = fs::read_link(path)?;
                let base = path.parent().unwrap_or(Path::new("."));
                Ok(base.join(target))
            } else {
                Ok(path.to_path_buf())
            }
        }
        Err(e) => Err(e),
    }
}

impl Output {
    /// Stdout when `out` is `None`; else `out`, refused if it is one of `inputs`.
    pub fn open(out: Option<&Path>, inputs: &[&Path]) -> Result<Self, CliError> {
        let Some(out) = out else { return Ok(Output { sink: Sink::Stdout(BufWriter::new(io::stdout())) }) };
        if let Ok(meta) = fs::metadata(out) {
            for input in inputs {
                if fs::metadata(input).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino()) {
                    return Err(CliError::Usage(format!(
                        "--out {} is the input {}: refusing to overwrite an input",
                        out.display(),
                        input.display()
                    )));
                }
            }
            if meta.is_dir() {
                return Err(CliError::Usage(format!("--out {} is a folder", out.display())));
            }
            if !meta.is_file() {
                let file = OpenOptions::new().write(true).open(out).map_err(CliError::file("opening --out", out))?;
                return Ok(Output { sink: Sink::Direct { file: BufWriter::new(file), path: out.to_path_buf() } });
            }
        }
        let target = resolve(out).map_err(CliError::file("resolving --out", out))?;
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| CliError::Usage(format!("--out {}: not a file name", out.display())))?;
        remove_stale_temporaries(&dir, &name);
        remove_temporaries_on_signal()
            .map_err(|source| CliError::Signal { signal: signal_hook::consts::SIGINT, source })?;
        let fail = CliError::file("creating the temporary file of --out", out);
        let tmp = dir.join(format!(".{name}{TMP_MARK}{}.tmp", std::process::id()));
        // Registered before it exists, so that a signal between the two cannot leave it.
        TEMPORARIES.lock().unwrap_or_else(|p| p.into_inner()).push(tmp.clone());
        // Mode 0666 less the umask, as any new file (0644 under the usual 022).
        let file = OpenOptions::new().write(true).create_new(true).mode(0o666).open(&tmp).map_err(|e| {
            forget(&tmp);
            fail(e)
        })?;
        Ok(Output { sink: Sink::Staged { file: BufWriter::new(file), tmp, target } })
    }

    /// An output that keeps nothing (rows nobody asked for).
    pub fn discard() -> Self {
        Output { sink: Sink::Discard(io::sink()) }
    }

    /// A failed write, worded for this output (a closed stdout ends the command quietly).
    pub fn error(&self, e: io::Error) -> CliError {
        match &self.sink {
            Sink::Discard(_) | Sink::Stdout(_) => stdout_error(e),
            Sink::Direct { path, .. } => CliError::file("writing", path)(e),
            Sink::Staged { target, .. } => CliError::file("writing", target)(e),
        }
    }

    /// Where to write.
    pub fn writer(&mut self) -> &mut dyn Write {
        match &mut self.sink {
            Sink::Discard(w) => w,
            Sink::Stdout(w) => w,
            Sink::Direct { file, .. } | Sink::Staged { file, .. } => file,
        }
    }

    /// Makes the output whole: flushes; for a regular file, fsyncs it, renames it over
    /// the target and fsyncs the folder.
    pub fn commit(mut self) -> Result<(), CliError> {
        let sink = std::mem::replace(&mut self.sink, Sink::Stdout(BufWriter::new(io::stdout())));
        match sink {
            Sink::Discard(_) => Ok(()),
            Sink::Stdout(mut w) => w.flush().map_err(stdout_error),
            Sink::Direct { mut file, path } => file.flush().map_err(CliError::file("writing", path)),
            Sink::Staged { file, tmp, target } => {
                let io = |what: &'static str, e: io::Error| {
                    let _ = fs::remove_file(&tmp);
                    forget(&tmp);
                    CliError::File { what, path: target.clone(), source: e }
                };
                let file = file.into_inner().map_err(|e| io("writing", e.into_error()))?;
                file.sync_all().map_err(|e| io("syncing", e))?;
                fs::rename(&tmp, &target).map_err(|e| io("renaming into place", e))?;
                forget(&tmp);
                if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io("syncing the folder of", e))?;
                }
                Ok(())
            }
        }
    }
}

/// Writes go to [`Output::writer`], so that a CSV writer can own the output.
impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

impl Drop for Output {
    /// An output dropped without [`Output::commit`] leaves the target as it was.
    fn drop(&mut self) {
        if let Sink::Staged { tmp, .. } = &self.sink {
            let _ = fs::remove_file(tmp);
            forget(tmp);
        }
    }
}

fn forget(tmp: &Path) {
    TEMPORARIES.lock().unwrap_or_else(|p| p.into_inner()).retain(|t| t != tmp);
}

/// A failed write to stdout: a closed pipe ends the command quietly.
pub fn stdout_error(e: io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        CliError::ClosedStdout
    } else {
        CliError::Stdout(e)
    }
}

/// Writes `args` to stdout and flushes: the one way a command prints. A reader gone
/// away is [`CliError::ClosedStdout`] (Rust ignores SIGPIPE, so the write fails with
/// `BrokenPipe`), never a panic as `print!` would.
pub fn write_stdout(args: std::fmt::Arguments) -> Result<(), CliError> {
    let mut out = io::stdout().lock();
    out.write_fmt(args).and_then(|()| out.flush()).map_err(stdout_error)
}

/// `print!` that returns [`write_stdout`]'s result.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!($($arg)*)) };
}

/// `println!` that returns [`write_stdout`]'s result.
macro_rules! outln {
    () => { $crate::output::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};

/// Writes `path` whole through [`Output`] (no inputs to protect).
pub fn write_atomically(path: &Path, text: &[u8]) -> Result<(), CliError> {
    let mut out = Output::open(Some(path), &[])?;
    out.writer().write_all(text).map_err(CliError::file("writing", path))?;
    out.commit()
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
