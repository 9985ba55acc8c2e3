//! The documents cannot rot silently: every relative link in README.md, ARCHITECTURE.md,
//! PERFORMANCE.md and docs/*.md points to a file that exists (and, into a Markdown file,
//! to a heading it has); the README stays a front door of at most 150 lines; its
//! embedding example is the example the test command compiles; and each command manual
//! in docs/ documents exactly the flags `sluice … --help` lists, for every command there
//! is; the technique table that opens ARCHITECTURE.md names files that exist and
//! commands and flags the binary has. Reads files and runs `--help` only: no network,
//! well under a second.

use crate::common;

use common::sluice;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The README's ceiling (issue 23: "a README a newcomer reads in five minutes").
const README_MAX_LINES: usize = 150;

/// Each command manual in docs/ and the top-level commands it documents (with all their
/// subcommands).
const MANUALS: &[(&str, &[&str])] = &[
    ("docs/bench.md", &["bench"]),
    ("docs/report.md", &["report"]),
    ("docs/compare.md", &["compare"]),
    ("docs/plan.md", &["plan", "measure-lmax"]),
    ("docs/crash-test.md", &["crash-test"]),
    ("docs/replication.md", &["cluster"]),
    ("docs/backup.md", &["backup", "restore", "archive"]),
    (
        "docs/operate.md",
        &["verify", "log", "stats", "tables", "get", "scan", "compact"],
    ),
];

/// Flags a manual may name beyond its commands' own: `--help` (every command has it) and
/// cargo's.
const OTHER_FLAGS: &[&str] = &["--help", "--release", "--features", "--example"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Markdown files whose links are checked, relative to the root.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "PERFORMANCE.md"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| Path::new("docs").join(p.file_name().unwrap()))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The lines of `text` outside fenced code blocks, with inline code spans blanked out.
fn prose_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        out.push(kept);
    }
    out
}

/// The targets of the inline links `[text](target)` in `text`, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(text).iter().enumerate() {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            out.push((n + 1, after[..end].trim().to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (repeated headings get `-1`, `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn every_relative_link_points_to_a_file_and_heading_that_exist() {
    let root = root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = read(&root.join(&doc));
        let dir = doc.parent().unwrap_or(Path::new(""));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue; // not a file in this repository; no network here
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                root.join(&doc)
            } else {
                root.join(dir).join(file)
            };
            if !path.exists() {
                broken.push(format!("{}:{line}: {target}: no such file", doc.display()));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| path.extension().is_some_and(|x| x == "md")) {
                if !anchors(&read(&path)).contains(anchor) {
                    broken.push(format!(
                        "{}:{line}: {target}: no heading with that anchor",
                        doc.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 50,
        "only {checked} links found: is the parser still right?"
    );
}

#[test]
fn the_readme_is_at_most_150_lines_and_links_every_command_manual() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move manuals to docs/"
    );
    let targets: BTreeSet<String> = links(&readme).into_iter().map(|(_, t)| t).collect();
    for (manual, _) in MANUALS {
        assert!(
            targets.contains(*manual),
            "README.md does not link {manual}"
        );
    }
    for command in [
        "cargo run --release -p sluice-cli -- bench tpcb",
        "bash scripts/test.sh",
    ] {
        assert!(readme.contains(command), "README.md lost `{command}`");
    }
}

#[test]
fn the_readme_example_is_the_quickstart_example_the_tests_compile() {
    let root = root();
    let readme = read(&root.join("README.md"));
    let start = readme
        .find("```rust\n")
        .expect("README.md has a ```rust block")
        + 8;
    let len = readme[start..].find("```").expect("the block ends");
    let block = &readme[start..start + len];
    let example = read(&root.join("crates/engine/examples/quickstart.rs"));
    // The example is the README's block below its `//!` header and a blank line.
    let body = example
        .lines()
        .skip_while(|l| l.starts_with("//"))
        .skip_while(|l| l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    assert_eq!(
        block, body,
        "README.md's example and crates/engine/examples/quickstart.rs differ"
    );
    let code_lines = block.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        code_lines <= 30,
        "the example grew to {code_lines} lines (the issue allows 30)"
    );
}

/// The subcommands listed under `Commands:` in `sluice <path> --help`.
fn subcommands(path: &[String]) -> Vec<String> {
    let help = help(path);
    let mut out = Vec::new();
    let mut listing = false;
    for line in help.lines() {
        if line.starts_with("Commands:") {
            listing = true;
        } else if listing && line.starts_with("  ") {
            let name = line.split_whitespace().next().unwrap_or("");
            if name != "help" {
                out.push(name.to_string());
            }
        } else if listing {
            listing = false;
        }
    }
    out
}

fn help(path: &[String]) -> String {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let out = sluice(&args);
    assert_eq!(out.status.code(), Some(0), "sluice {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Every leaf command under `path`, as its words; and a command with subcommands that
/// also runs on its own (`sluice backup DIR DEST` beside `sluice backup list`), which
/// has flags of its own to document.
fn leaves(path: Vec<String>) -> Vec<Vec<String>> {
    let subs = subcommands(&path);
    if subs.is_empty() {
        return vec![path];
    }
    let runs_itself = !path.is_empty() && !declared_flags(&help(&path)).is_empty();
    let mut out: Vec<Vec<String>> = subs
        .into_iter()
        .flat_map(|s| {
            let mut p = path.clone();
            p.push(s);
            leaves(p)
        })
        .collect();
    if runs_itself {
        out.insert(0, path);
    }
    out
}

/// The long flags the option lines of `--help` declare (`  -h, --help  …`, `      --json`).
fn declared_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|l| {
            let t = l.trim_start();
            // A short form first (`-h, --help`): skip it.
            let t = match t.as_bytes() {
                [b'-', c, b',', b' ', ..] if c.is_ascii_alphanumeric() => &t[4..],
                _ => t,
            };
            let flag: String = t
                .strip_prefix("--")?
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(format!("--{flag}"))
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

/// Every `--flag` written anywhere in a page, code included.
fn written_flags(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let before = rest[..at].chars().next_back();
        let word: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if before.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '-')
            && word.starts_with(|c: char| c.is_ascii_lowercase())
        {
            out.insert(format!("--{}", word.trim_end_matches('-')));
        }
        rest = &rest[at + 2..];
    }
    out
}

/// The sections of a page: each heading (outside code blocks) with the text up to the
/// next heading.
fn sections(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![(String::new(), String::new())];
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') {
            out.push((line.to_string(), String::new()));
        } else {
            let body = &mut out.last_mut().unwrap().1;
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

/// Whether `word` occurs in `text` as a whole command word (not inside `log-insert-sweep`
/// when looking for `log-insert`).
fn has_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

#[test]
fn each_command_manual_documents_exactly_the_flags_of_its_commands() {
    let root = root();
    let top = subcommands(&[]);
    let covered: BTreeSet<&str> = MANUALS
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .collect();
    for command in &top {
        assert!(
            covered.contains(command.as_str()),
            "`sluice {command}` has no manual in docs/: add one and list it in MANUALS"
        );
    }
    let mut problems = Vec::new();
    for (manual, commands) in MANUALS {
        let text = read(&root.join(manual));
        let sections = sections(&text);
        let mut declared = BTreeSet::new();
        for command in *commands {
            for leaf in leaves(vec![command.to_string()]) {
                let name = leaf.last().unwrap();
                // A command's flags are documented in the sections whose heading names it.
                let its_text: String = sections
                    .iter()
                    .filter(|(heading, _)| has_word(heading, name))
                    .map(|(heading, body)| format!("{heading}\n{body}"))
                    .collect();
                if its_text.is_empty() {
                    problems.push(format!(
                        "{manual}: no heading names `sluice {}`",
                        leaf.join(" ")
                    ));
                }
                let written = written_flags(&its_text);
                let flags = declared_flags(&help(&leaf));
                for flag in &flags {
                    if !written.contains(flag) {
                        problems.push(format!(
                            "{manual}: `sluice {}` has {flag}; its section does not say it",
                            leaf.join(" ")
                        ));
                    }
                }
                declared.extend(flags);
            }
        }
        for flag in &written_flags(&text) {
            if !declared.contains(flag) && !OTHER_FLAGS.contains(&flag.as_str()) {
                problems.push(format!(
                    "{manual}: names {flag}, which none of {commands:?} has"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The code spans of a line, in order.
fn code_spans(line: &str) -> Vec<String> {
    line.split('`')
        .skip(1)
        .step_by(2)
        .map(|s| s.replace("\\|", "|"))
        .collect()
}

#[test]
fn the_architecture_table_names_real_commands_flags_and_files() {
    let root = root();
    let text = read(&root.join("ARCHITECTURE.md"));
    let rows: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| ") && !l.starts_with("| paper"))
        .collect();
    assert!(
        rows.len() >= 15,
        "the technique table has {} rows",
        rows.len()
    );
    let mut problems = Vec::new();
    for row in &rows {
        let cells: Vec<&str> = row.split(" | ").collect();
        let [_, module, experiment] = cells[..] else {
            problems.push(format!("not three cells: {row}"));
            continue;
        };
        // Files named in the module cell lie in a folder the cell links (or beside a file
        // it links).
        let dirs: Vec<PathBuf> = links(module)
            .into_iter()
            .map(|(_, t)| root.join(&t))
            .map(|p| {
                if p.is_dir() {
                    p
                } else {
                    p.parent().unwrap().to_path_buf()
                }
            })
            .collect();
        if dirs.is_empty() && !module.contains("the rows above") {
            problems.push(format!("no module linked: {module}"));
        }
        for span in code_spans(module) {
            let file = (span.ends_with(".rs") || span.ends_with('/')) && !span.contains(' ');
            // A span that starts at `crates/` is a link's text, checked with the links.
            if file && !span.starts_with("crates/") && !dirs.iter().any(|d| d.join(&span).exists())
            {
                problems.push(format!("`{span}` is not in {dirs:?}"));
            }
        }
        // Each experiment is a real command with real flags; a span of flags alone
        // continues the command before it.
        let mut flags_of_last = BTreeSet::new();
        let mut last = String::new();
        for span in code_spans(experiment) {
            let words: Vec<&str> = span.split_whitespace().collect();
            let flags: Vec<&str> = words
                .iter()
                .copied()
                .filter(|w| w.starts_with("--"))
                .collect();
            if words.first() == Some(&"sluice") {
                let path: Vec<String> = words[1..]
                    .iter()
                    .take_while(|w| !w.starts_with('-'))
                    .map(|w| w.to_string())
                    .collect();
                let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
                args.push("--help");
                let out = sluice(&args);
                if out.status.code() != Some(0) || !subcommands(&path).is_empty() {
                    problems.push(format!(
                        "`{span}`: `sluice {}` is not a command",
                        path.join(" ")
                    ));
                    continue;
                }
                flags_of_last = declared_flags(&String::from_utf8_lossy(&out.stdout));
                last = path.join(" ");
            } else if flags.is_empty() {
                continue; // a value of the flag before it, e.g. `page-hottest`
            }
            for flag in flags {
                if !flags_of_last.contains(flag) {
                    problems.push(format!("`{span}`: `sluice {last}` has no {flag}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
