//! `sluice crash-test cluster` in CI: a short campaign of three-node clusters of
//! processes, the leader SIGKILLed in each run, must lose no acknowledged write, leave no
//! node diverged and serve no stale read — and the run drawn to snapshot often must have
//! reached the snapshot paths (a snapshot built, a log purged, a snapshot installed on
//! the node that was killed), so that kills land among builds, purges and installs.

use crate::common;
use common::sluice;

/// Seed 1: of its two runs (seeds 1 and 2), one is drawn to snapshot every 4–32 KiB of
/// log, keep at most 32 entries behind a snapshot, and restart its killed leader once the
/// others have purged past its log (the plain shape), so that it installs a snapshot.
const SEED: &str = "1";

#[test]
fn a_short_kill_campaign_loses_nothing_and_reaches_the_snapshot_paths() {
    let o = sluice(&[
        "crash-test",
        "cluster",
        "--runs",
        "2",
        "--seed",
        SEED,
        "--seconds-per-run",
        "2",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let rows = common::json_lines(&stdout);
    assert_eq!(rows.len(), 1, "{stdout}");
    let t = &rows[0];
    let n = |k: &str| {
        t[k].as_u64()
            .unwrap_or_else(|| panic!("no {k} in the totals: {t}"))
    };
    assert_eq!(n("runs"), 2, "{t}");
    assert!(n("acknowledged") > 0, "no write was acknowledged: {t}");
    assert_eq!(
        (n("lost"), n("diverged"), n("stale_reads")),
        (0, 0, 0),
        "{t}\n{stderr}"
    );
    assert!(n("failovers") >= 2, "a run without a failover: {t}");
    assert_eq!(
        n("snapshot_runs"),
        1,
        "the seed no longer draws one snapshot run: {t}"
    );
    assert_eq!(
        (n("snapshotted_runs"), n("purged_runs"), n("installed_runs")),
        (1, 1, 1),
        "the run drawn to snapshot often built no snapshot, purged no log or installed no snapshot on the killed node: {t}"
    );
}
