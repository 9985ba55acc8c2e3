//! `sluice crash-test swarm` from the command line: bad flags are one-line usage errors,
//! and a run ends with one JSON object whose failures each name their seed, its drawn
//! configuration and the command that replays it, with the exit code saying whether any
//! seed broke a rule.

use crate::common;

use common::{assert_usage_error, sluice};

#[test]
fn swarm_bad_arguments_exit_2() {
    assert_usage_error(&["crash-test", "swarm", "--seeds", "0"], "--seeds");
    assert_usage_error(&["crash-test", "swarm", "--seeds", "x"], "x");
    assert_usage_error(&["crash-test", "swarm", "--jobs", "0"], "--jobs");
    assert_usage_error(&["crash-test", "swarm", "--jobs", "-1"], "-1");
    assert_usage_error(&["crash-test", "swarm", "--jobs", "100000"], "--jobs");
    assert_usage_error(
        &[
            "crash-test",
            "swarm",
            "--first-seed",
            &u64::MAX.to_string(),
            "--seeds",
            "2",
        ],
        "overflows",
    );
}

#[test]
fn swarm_runs_on_several_jobs_and_reports_json() {
    let (first, seeds) = (100u64, 12u64);
    let out = sluice(&[
        "crash-test",
        "swarm",
        "--first-seed",
        &first.to_string(),
        "--seeds",
        &seeds.to_string(),
        "--jobs",
        "2",
        "--json",
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(stdout.trim_end().lines().last().unwrap()).unwrap();
    assert_eq!(v["seeds"], seeds);
    assert!(v["acknowledged"].as_u64().unwrap() > 0, "{v}");
    let (lost, violations) = (
        v["lost"].as_u64().unwrap(),
        v["violations"].as_u64().unwrap(),
    );
    // Exit 0 exactly when nothing was lost and no rule broke.
    let clean = lost == 0 && violations == 0;
    assert_eq!(
        out.status.code(),
        Some(if clean { 0 } else { 1 }),
        "{stderr}"
    );
    let failures = v["failures"].as_array().unwrap();
    assert_eq!(failures.len() as u64, violations, "{v}");
    for f in failures {
        let f = f.as_str().unwrap();
        let seed: u64 = f
            .strip_prefix("seed ")
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("a failure names its seed: {f}"));
        assert!((first..first + seeds).contains(&seed), "{f}");
        assert!(
            f.contains("strategies="),
            "the failure names its config: {f}"
        );
        assert!(
            f.ends_with(&format!(
                "replay: sluice crash-test swarm --first-seed {seed} --seeds 1"
            )),
            "the failure ends with its replay command: {f}"
        );
    }
    // Every seed drew one protocol and one layout.
    let coverage = v["coverage"].as_object().unwrap();
    let sum = |prefix: &str| -> u64 {
        coverage
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(_, n)| n.as_u64().unwrap())
            .sum()
    };
    assert_eq!(sum("protocol="), seeds, "{v}");
    assert_eq!(sum("layout="), seeds, "{v}");
}

/// Tables created, dropped and renamed inside writing transactions are a dimension of
/// the swarm: a seed that draws them (`scratch=` in its configuration) shows them in the
/// report's counts, and the recovered states that judged them broke no rule.
#[test]
fn swarm_seeds_create_drop_and_rename_tables_inside_transactions() {
    // Seeds 3 and 5 draw an ordinary database and a share of scratch-table operations.
    let out = sluice(&[
        "crash-test",
        "swarm",
        "--first-seed",
        "3",
        "--seeds",
        "3",
        "--json",
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(stdout.trim_end().lines().last().unwrap()).unwrap();
    assert!(
        v["coverage"]["scratch-tables"].as_u64().unwrap() >= 2,
        "{v}"
    );
    for count in ["tables_created", "tables_dropped", "tables_renamed"] {
        assert!(v[count].as_u64().unwrap() > 0, "{count}: {v}");
    }
    assert!(stdout.contains("tables created"), "{stdout}");
}
