//! # fairshare-report: what a run looks like on paper
//!
//! Everything that turns results into files a person reads: the evaluation's summary
//! rows and their tables ([`comparison`]), CSV and Markdown ([`table`]), the plots
//! ([`plots`] for the evaluation, [`chart`] for a log-log line chart such as the
//! benchmark report's), the TrueType font they draw their text with ([`font`]), and the
//! report folder that is built beside its destination and swapped in only when complete
//! ([`folder`]).
//!
//! It depends on the workload simulator (`fairshare-sim`, whose results it lays out) and
//! on no device, RTL or command-line crate: the CLI parses arguments and prints, this
//! crate writes the files.

pub mod chart;
pub mod comparison;
pub mod folder;
pub mod font;
pub mod matrix;
pub mod plots;
pub mod table;

use std::path::PathBuf;

/// Why a report could not be written. Every variant names the file or folder.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Reading or writing a file or folder failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done ("writing", "creating", "moving aside"...).
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The destination exists and is not something a report may replace.
    #[error("{}: {reason}", path.display())]
    Refused {
        /// The destination.
        path: PathBuf,
        /// Why it is left alone.
        reason: String,
    },
    /// No TrueType font could be found for the plots' text.
    #[error(
        "no TrueType font found for the plots: install one (Debian: apt-get install fonts-dejavu-core), point \
         $FAIRSHARE_FONT at a .ttf file, or pass --no-plots"
    )]
    NoFont,
    /// The plotting library could not draw a plot.
    #[error("drawing {}: {message}", path.display())]
    Plot {
        /// The plot's file.
        path: PathBuf,
        /// plotters' message.
        message: String,
    },
}

impl ReportError {
    /// An I/O error on `path`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ReportError::Io { what, path: path.into(), source }
    }
}
