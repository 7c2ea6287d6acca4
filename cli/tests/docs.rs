//! The documentation stays followable: the README is short and has the sections a
//! newcomer needs, every relative link in `README.md` and `docs/**/*.md` names a file of
//! the repository, and no page points at the `shared/` folder outside it.

#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

/// The README must stay under this many lines.
const README_MAX_LINES: usize = 260;

/// Headings the README must have, in this order.
const README_HEADINGS: [&str; 4] = ["## Prerequisites", "## Quick start", "## Next steps", "## Layout"];

/// Text that would point outside the repository, at the folder the specs and vectors
/// were copied from.
const FORBIDDEN: [&str; 3] = ["shared/spec", "shared/vectors", "../shared"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `README.md` and every `.md` file under `docs/`, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    collect_markdown(&root().join("docs"), &mut files);
    files
}

fn collect_markdown(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries.map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect_markdown(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            files.push(path);
        }
    }
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The file's path relative to the repository's root, for messages.
fn name(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// The text outside fenced code blocks, one string per paragraph, with inline code spans
/// removed: a `](` inside code is not a link.
fn prose(text: &str) -> Vec<String> {
    let mut paragraphs = Vec::new();
    let mut current = String::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = &fence {
            if trimmed.starts_with(open.as_str()) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker = trimmed.chars().next().unwrap();
            let len = trimmed.chars().take_while(|&c| c == marker).count();
            fence = Some(marker.to_string().repeat(len));
            paragraphs.push(strip_code_spans(&current));
            current.clear();
            continue;
        }
        if trimmed.is_empty() {
            paragraphs.push(strip_code_spans(&current));
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    paragraphs.push(strip_code_spans(&current));
    paragraphs
}

/// `text` without its code spans: a run of backticks up to the next run of the same
/// length. A run with no match is kept as it is.
fn strip_code_spans(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].bytes().take_while(|&b| b == b'`').count();
        let body = &rest[start + ticks..];
        match closing_run(body, ticks) {
            Some(end) => rest = &body[end + ticks..],
            None => {
                out.push_str(&rest[start..start + ticks]);
                rest = body;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The byte offset in `body` of the first run of exactly `ticks` backticks.
fn closing_run(body: &str, ticks: usize) -> Option<usize> {
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            if run == ticks {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
}

/// The targets of the inline links and images of `text`: what stands between `](` and
/// the closing `)`, without angle brackets and without a title.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for paragraph in prose(text) {
        let mut rest = paragraph.as_str();
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let Some(end) = after.find(')') else { break };
            let inside = after[..end].trim();
            let target = inside.split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            targets.push(target.to_string());
            rest = &after[end + 1..];
        }
    }
    targets
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:", "#"].iter().any(|prefix| target.starts_with(prefix))
}

#[test]
fn readme_is_short_and_has_the_newcomer_sections() {
    let path = root().join("README.md");
    let text = read(&path);
    let lines = text.lines().count();
    assert!(lines < README_MAX_LINES, "README.md has {lines} lines; it must stay under {README_MAX_LINES}");
    let mut previous: Option<(usize, &str)> = None;
    for heading in README_HEADINGS {
        let position = text.lines().position(|line| line.trim_end() == heading);
        let Some(position) = position else { panic!("README.md has no heading `{heading}`") };
        if let Some((before, before_heading)) = previous {
            assert!(position > before, "README.md: `{heading}` must come after `{before_heading}`");
        }
        previous = Some((position, heading));
    }
}

#[test]
fn every_relative_link_names_a_file_of_the_repository() {
    let repository = root().canonicalize().unwrap();
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let folder = file.parent().unwrap();
        for target in link_targets(&read(&file)) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() {
                continue;
            }
            checked += 1;
            match folder.join(path).canonicalize() {
                Ok(found) if found.starts_with(&repository) => {}
                Ok(found) => broken.push(format!(
                    "{}: link `{target}` leads outside the repository ({})",
                    name(&file),
                    found.display()
                )),
                Err(_) => broken.push(format!("{}: link `{target}`: no such file", name(&file))),
            }
        }
    }
    assert!(checked > 0, "no relative link found in README.md or docs/");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn no_page_refers_to_the_shared_folder() {
    let mut found = Vec::new();
    for file in markdown_files() {
        for (number, line) in read(&file).lines().enumerate() {
            for needle in FORBIDDEN {
                if line.contains(needle) {
                    found.push(format!("{}:{}: mentions `{needle}`", name(&file), number + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "references outside the repository:\n{}", found.join("\n"));
}

#[test]
fn code_spans_and_fences_hide_link_syntax() {
    let text = concat!(
        "See [a](a.md) and `x[i](j)`.\n\n",
        "```rust\nlet v = w[i](k);\n```\n\n",
        "![p](p.svg \"title\") ``c](d``\n",
    );
    assert_eq!(link_targets(text), ["a.md", "p.svg"]);
}
