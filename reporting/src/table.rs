//! Tables as files: CSV (through the `csv` crate, so cells with commas or quotes stay
//! one cell) and Markdown; and the one way a ratio is written in every table.

use std::path::Path;

use crate::ReportError;

/// Formats a ratio for tables: three decimals.
pub fn ratio(x: f64) -> String {
    format!("{x:.3}")
}

/// A Markdown table: a header row, the separator, and the rows.
pub fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}|\n", header.join(" | "), vec!["---"; header.len()].join("|"));
    for r in rows {
        out += &format!("| {} |\n", r.join(" | "));
    }
    out
}

/// Writes `dir/name` as CSV: the header, then every row.
pub fn csv_file(
    dir: &Path,
    name: &str,
    header: &[&str],
    rows: impl Iterator<Item = Vec<String>>,
) -> Result<(), ReportError> {
    let path = dir.join(name);
    let fail = |e: csv::Error| ReportError::io("writing", &path, csv_io_error(e));
    let mut w = csv::Writer::from_path(&path).map_err(fail)?;
    w.write_record(header).map_err(fail)?;
    for row in rows {
        w.write_record(&row).map_err(fail)?;
    }
    w.flush().map_err(|e| ReportError::io("writing", &path, e))
}

/// A CSV writer's error as the I/O error it is (or carries): what callers report with
/// the file's name.
pub fn csv_io_error(e: csv::Error) -> std::io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => std::io::Error::other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_has_a_separator_per_column_and_a_line_per_row() {
        let md = markdown(&["a", "b"], &[vec!["1".into(), "2".into()], vec!["3".into(), "4".into()]]);
        assert_eq!(md, "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n");
    }

    #[test]
    fn csv_cells_with_commas_and_quotes_stay_one_cell() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        csv_file(
            dir.path(),
            "t.csv",
            &["name", "note"],
            [vec!["x,y".to_string(), "say \"hi\"".to_string()]].into_iter(),
        )?;
        let text = std::fs::read_to_string(dir.path().join("t.csv"))?;
        assert_eq!(text, "name,note\n\"x,y\",\"say \"\"hi\"\"\"\n");
        Ok(())
    }

    #[test]
    fn a_missing_folder_is_named_in_the_error() {
        let e = csv_file(Path::new("/nonexistent-fairshare-dir"), "t.csv", &["a"], std::iter::empty())
            .expect_err("no such folder");
        assert!(e.to_string().contains("/nonexistent-fairshare-dir/t.csv"), "{e}");
    }
}
