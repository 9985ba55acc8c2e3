//! A backup taken under load, rolled forward from the log archive, restored to the LSN of
//! every archived commit (every 4th in the first configuration, every one with
//! `SLUICE_RESTORE_EVERY=1`; every 13th in the others, every 11th on the real disk, to
//! keep the test's time in bounds), shows exactly the
//! commits at or below it — the state the clients observed at that commit; restored to a
//! time between two rounds of commits, it shows the first round and nothing of the
//! second; restored to the end, everything archived. Under every commit protocol and
//! each propagation family, on the simulator and on the real disk, the restores
//! alternating between the single-pass restore from sorted runs and replay in log order.

use crate::backup_load::*;
use sluice::{CommitTime, Database, Lsn, Options, Replay, Restore, RestoreTarget};
use sluice_storage::{OsStorage, SimStorage, Storage};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

fn restored(storage: &Arc<dyn Storage>, spec: &Restore, o: &Options, verify: bool) -> (State, Lsn) {
    let report = Database::restore(storage.clone(), spec, &mut |_| {}).unwrap();
    // Either way of replaying the log gives the same state (checked by the caller); the
    // single-pass restore leaves nothing for recovery's redo.
    match spec.replay {
        Replay::SortedRuns => {
            assert!(report.single_pass.is_some(), "{report:?}");
            assert_eq!(report.recovery.redone, 0, "{report:?}");
        }
        Replay::LogOrder => assert!(report.single_pass.is_none(), "{report:?}"),
    }
    // The restored database's log is a new one: the old archive refuses it (it names the
    // log it archives), so that two histories never mix in one archive.
    let db = Database::builder(&spec.dest)
        .options(Options {
            log_archive: None,
            archive_mirror: None,
            ..o.clone()
        })
        .storage(storage.clone())
        .open()
        .unwrap();
    let s = state(&db);
    if verify {
        db.verify().unwrap();
    }
    db.close().unwrap();
    assert!(report.end_lsn >= report.label.end_lsn);
    (s, report.end_lsn)
}

fn check(
    storage: Arc<dyn Storage>,
    root: &Path,
    (protocol, strategy): (sluice::CommitProtocol, sluice::Strategy),
    seed: u64,
    every: usize,
) {
    let (dir, archive, backup) = (root.join("db"), root.join("archive"), root.join("backup"));
    let mut o = options(protocol, strategy);
    o.log_archive = Some(archive.clone());
    let db = Database::open_on(storage.clone(), &dir, o.clone()).unwrap();
    let rec = Arc::new(Recorded::default());
    preload(&db, &rec);
    let label = under_load(&db, 3, seed, &rec, || {
        db.backup_to_with(&backup, &mut slowly).unwrap()
    });
    // Rounds of commits with a quiet moment between them: a time target there cuts
    // between two known sets of commits.
    let mut quiet = Vec::new();
    for round in 0..4 {
        run_load(&db, 3, 40, seed * 10 + round, &AtomicBool::new(false), &rec);
        std::thread::sleep(Duration::from_millis(3));
        let last = rec.in_lsn_order().last().unwrap().end;
        quiet.push((CommitTime::now(), last));
        std::thread::sleep(Duration::from_millis(3));
    }
    // Everything but the segment being written is archived.
    wait_archived(&db);
    let log = db.log();
    let reach = log.archived_lsn().unwrap();
    db.close().unwrap();
    assert_eq!(rec.uncertain.load(std::sync::atomic::Ordering::Relaxed), 0);

    let spec = |target, n: usize| Restore {
        backup: backup.clone(),
        ancestors: Vec::new(),
        archive: Some(archive.clone()),
        target,
        dest: root.join(format!("restored-{n}")),
        // Both ways, alternately.
        replay: if n.is_multiple_of(2) {
            Replay::SortedRuns
        } else {
            Replay::LogOrder
        },
    };
    let mut n = 0;
    let mut checked = 0;
    for c in rec
        .in_lsn_order()
        .iter()
        .filter(|c| c.end > label.end_lsn && c.end <= reach)
        .step_by(every)
    {
        n += 1;
        // The commit record lies just below its end: a target inside it keeps it, and
        // keeps no later record.
        let target = Lsn(c.end.0 - 1);
        assert_eq!(
            restored(
                &storage,
                &spec(RestoreTarget::Lsn(target), n),
                &o,
                n % 10 == 1
            )
            .0,
            rec.state_at(c.end),
            "{protocol}/{strategy} seed {seed}: restored to LSN {target}"
        );
        checked += 1;
    }
    // A time target needs a commit after it in the archive (otherwise commits up to it
    // may be missing, and the restore refuses it): the next round's first commit.
    let commits = rec.in_lsn_order();
    let archived_after = |last: Lsn| commits.iter().any(|c| c.end > last && c.end <= reach);
    for (t, last) in quiet.iter().filter(|q| q.1 <= reach && archived_after(q.1)) {
        n += 1;
        assert_eq!(
            restored(&storage, &spec(RestoreTarget::Time(*t), n), &o, true).0,
            rec.state_at(*last),
            "{protocol}/{strategy} seed {seed}: restored to time {t}"
        );
        checked += 1;
    }
    // The end is where the archive reaches at the restore: at least `reach`, and more if
    // the close finished the segment being written (its checkpoint's records can).
    n += 1;
    let (s, end) = restored(&storage, &spec(RestoreTarget::End, n), &o, true);
    assert!(
        end >= reach,
        "{protocol}/{strategy} seed {seed}: restored to the end at {end}, below the archive's {reach} before the close"
    );
    assert_eq!(
        s,
        rec.state_at(end),
        "{protocol}/{strategy} seed {seed}: restored to the end ({end})"
    );
    println!(
        "{protocol}/{strategy}: backup end {}, archive reaches {reach}, {checked} targets checked",
        label.end_lsn
    );
    assert!(
        checked > 8,
        "{protocol}/{strategy}: too few archived commits to mean anything"
    );
}

/// Every how many commits the first configuration is restored to: 4 in CI (about 150
/// restores), `SLUICE_RESTORE_EVERY=1` for every one (about 600, a minute).
fn first_step() -> usize {
    std::env::var("SLUICE_RESTORE_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
        .max(1)
}

#[test]
fn on_the_simulator_under_every_protocol_and_strategy() {
    for (i, c) in configurations().into_iter().enumerate() {
        let sim: Arc<dyn Storage> = Arc::new(SimStorage::new(i as u64));
        check(
            sim,
            Path::new("/"),
            c,
            i as u64,
            if i == 0 { first_step() } else { 13 },
        );
    }
}

#[test]
fn on_the_real_disk() {
    for (i, c) in configurations().into_iter().enumerate().step_by(3) {
        let tmp = tempfile::tempdir().unwrap();
        check(
            Arc::new(OsStorage::new()),
            tmp.path(),
            c,
            100 + i as u64,
            11,
        );
    }
}
