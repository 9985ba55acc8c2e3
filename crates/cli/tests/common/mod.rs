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
