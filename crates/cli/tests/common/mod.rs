//! Running the `sluice` binary from the CLI tests.
#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs `sluice` with `args`.
pub fn sluice(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The arguments of a short `sluice bench WORKLOAD` (tpcb, tatp) in `dir`: 2 clients,
/// classic commits, 0.2 s measured, no warm-up, then `extra`.
pub fn bench_args<'a>(workload: &'a str, dir: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "bench",
        workload,
        "--dir",
        dir,
        "--clients",
        "2",
        "--commit",
        "classic",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
    ];
    args.extend_from_slice(extra);
    args
}

/// The JSON lines of a command's stdout.
pub fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `sluice args`, prints the command and what it printed, asserts no panic; returns
/// (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = sluice(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown = &stdout[..stdout.floor_char_boundary(2000)];
    println!("$ sluice {}\n{shown}{stderr}", args.join(" "));
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    (out.status.code(), stdout, stderr)
}

/// Asserts that `csv`, a sweep's CSV of every run with a `repeat` column (the round, from
/// 0), holds each of `points` points — told apart by the columns `key` — once in each of
/// `rounds` rounds, and nothing else.
pub fn assert_every_point_once_per_round(csv: &str, key: &[&str], points: usize, rounds: usize) {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}: {header:?}"))
    };
    let cols: Vec<usize> = std::iter::once("repeat")
        .chain(key.iter().copied())
        .map(col)
        .collect();
    let mut seen: Vec<Vec<String>> = lines
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            cols.iter().map(|&i| c[i].to_string()).collect()
        })
        .collect();
    assert_eq!(seen.len(), points * rounds, "{csv}");
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen.len(),
        points * rounds,
        "each point once per round: {csv}"
    );
    for r in 0..rounds {
        let in_round = seen.iter().filter(|s| s[0] == r.to_string()).count();
        assert_eq!(in_round, points, "round {r}: {csv}");
    }
}

/// Asserts that `sluice args` is a usage error: exit code 2, one line on stderr that
/// contains `mentions`, no panic, nothing on stdout. Returns the output.
pub fn assert_usage_error(args: &[&str], mentions: &str) -> Output {
    let out = sluice(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {err:?}"
    );
    assert!(
        err.contains(mentions),
        "{args:?}: {err:?} lacks {mentions:?}"
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: printed to stdout");
    out
}

/// Opens the database at `dir` in this process, waiting (at most 10 s) while the
/// directory lock is still held by a copy of this process's descriptor. The tests of a
/// binary run in parallel threads, and a child that a sibling test spawns gets a copy of
/// every descriptor for the moment between its fork and its exec: a database this process
/// has just closed stays locked until that child execs (flock belongs to the open file,
/// and O_CLOEXEC only closes it at exec). Seen on a loaded 2-core machine as `Locked`
/// right after `close()` returned `Ok`.
pub fn open_in_process(dir: &std::path::Path) -> sluice::Database {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match sluice::Database::open(dir) {
            Err(sluice::Error::Locked(_)) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            r => return r.expect("the database opens"),
        }
    }
}
