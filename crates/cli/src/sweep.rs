//! What the sweep commands (`bench commit-sweep`, `bench propagation-sweep`, `bench
//! log-insert-sweep`) share: the required `--figure` and `--out`, one progress bar over
//! all runs, and the end: the notes, the files written, JSON rows and the consistency
//! verdict.

use crate::progress;
use crate::Failure;
use serde::Serialize;
use sluice_bench::experiments::commit_sweep::Progress;
use sluice_bench::knobs::choices;
use sluice_bench::output::json_line;
use std::fmt::Display;
use std::path::{Path, PathBuf};

/// `--figure` and `--out`, both required (optional to clap, so that a missing one is one
/// line); an `--out` that exists must be a directory.
pub fn figure_and_out<F: clap::ValueEnum + Copy>(
    figure: Option<F>,
    out: &Option<PathBuf>,
) -> Result<(F, PathBuf), Failure> {
    let Some(figure) = figure else {
        return Err(Failure::Usage(format!(
            "--figure is required: one of {}",
            choices::<F>()
        )));
    };
    let Some(out) = out.clone() else {
        return Err(Failure::Usage(
            "--out DIR is required (where the CSV, JSON and figures go)".into(),
        ));
    };
    if out.exists() && !out.is_dir() {
        return Err(Failure::Usage(format!(
            "--out {} exists and is not a directory",
            out.display()
        )));
    }
    Ok((figure, out))
}

/// `--dir`, where the temporary databases go: a directory that exists, when given.
pub fn databases_dir(dir: Option<&Path>) -> Result<(), Failure> {
    match dir {
        Some(d) if !d.is_dir() => Err(Failure::Usage(format!(
            "--dir {} is not a directory",
            d.display()
        ))),
        _ => Ok(()),
    }
}

/// Runs a sweep of `runs` runs under one bar (hidden with `--json`) that `run` moves
/// through its progress callback.
pub fn with_bar<R>(
    runs: usize,
    figure: &dyn Display,
    json: bool,
    run: impl FnOnce(&mut dyn FnMut(Progress<'_>)) -> R,
) -> R {
    let pb = progress::bar(runs as u64 * 1000, &figure.to_string(), json);
    let r = run(&mut |p| {
        pb.set_position((p.done * 1000.0) as u64);
        pb.set_message(format!("{figure} · {}", p.what));
    });
    pb.finish_and_clear();
    r
}

/// Prints a sweep's end (its notes, the files it wrote and, with `--json`, one line per
/// row); fails when a consistency check did.
pub fn finish(
    notes: &[String],
    files: &[PathBuf],
    rows: &[impl Serialize],
    json: bool,
    consistent: bool,
) -> Result<(), Failure> {
    for n in notes {
        println!("note: {n}");
    }
    println!("\nwrote:");
    for f in files {
        println!("  {}", f.display());
    }
    if json {
        for row in rows {
            println!("{}", json_line(row));
        }
    }
    if !consistent {
        return Err(Failure::Runtime(
            "a consistency check failed (the files are written; see the rows marked false)".into(),
        ));
    }
    Ok(())
}
