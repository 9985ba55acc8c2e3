//! Outside review of a restore's per-step progress (`RestoreProgress`, `RestoreStep`):
//! steps come in `RestoreStep` order, each once, each from a report of 0 done to one of
//! `done == total`, never going back or past its total; recovery's passes reach the
//! caller's callback (which is not `Send`) from the open's thread. The swarm checks this
//! for restores to the end only; here: an incremental chain with an archive, to the end,
//! to an LSN inside a transaction (a loser to undo) and to a time, both replays; a
//! callback that panics in recovery's reports; a restore whose recovery fails.

use sluice::{
    CommitTime, Database, Lsn, Options, Replay, Restore, RestoreProgress, RestoreStep,
    RestoreTarget,
};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage, Storage};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// The contract of `RestoreProgress`'s docs. `complete`: the restore succeeded, so the
/// last step ended (done == total); otherwise the reports need only be a valid prefix.
fn progress_rule(told: &[RestoreProgress], complete: bool) -> Result<Vec<RestoreStep>, String> {
    let mut steps: Vec<RestoreStep> = Vec::new();
    for (i, p) in told.iter().enumerate() {
        let at = |why: &str| format!("report {i} ({p:?}): {why}; all: {told:?}");
        if p.done > p.total {
            return Err(at("done past the total"));
        }
        if steps.last() == Some(&p.step) {
            let prev = told[i - 1];
            if p.done < prev.done {
                return Err(at("went back"));
            }
            if prev.total != p.total && prev.total != 0 {
                return Err(at("the step's total changed"));
            }
        } else {
            if steps.last().is_some_and(|&s| s >= p.step) {
                return Err(at("a step out of order, or again"));
            }
            if i > 0 && told[i - 1].done != told[i - 1].total {
                return Err(at("the step before ended short"));
            }
            if p.done != 0 {
                return Err(at("a step that does not start at 0"));
            }
            steps.push(p.step);
        }
    }
    if complete {
        match told.last() {
            Some(l) if l.done == l.total => {}
            l => return Err(format!("the last step ended short: {l:?}")),
        }
    }
    Ok(steps)
}

fn spec(
    backup: &str,
    ancestors: &[&str],
    target: RestoreTarget,
    dest: &str,
    replay: Replay,
) -> Restore {
    Restore {
        backup: backup.into(),
        ancestors: ancestors.iter().map(PathBuf::from).collect(),
        archive: Some("/archive".into()),
        target,
        dest: dest.into(),
        replay,
    }
}

fn options() -> Options {
    let mut o = Options::small();
    o.log_archive = Some("/archive".into());
    o
}

fn put_many(db: &Database, tag: &str, n: u32, len: usize) -> Lsn {
    let t = db.table_or_create("t").unwrap();
    let mut tx = db.begin();
    for k in 0..n {
        tx.put(&t, format!("{tag}{k:04}").as_bytes(), vec![b'x'; len])
            .unwrap();
    }
    let mut end = None;
    tx.commit_observed(|e| end = e).unwrap();
    end.unwrap()
}

fn state(db: &Database) -> State {
    let t = db.table("t").unwrap();
    let mut tx = db.begin();
    let s = tx.scan_all(&t).map(|r| r.unwrap()).collect::<State>();
    tx.commit().unwrap();
    s
}

fn open_state(storage: &Arc<dyn Storage>, dir: &str) -> State {
    let db = Database::open_on(storage.clone(), dir, Options::small())
        .unwrap_or_else(|e| panic!("open of {dir}: {e}"));
    let s = state(&db);
    db.verify()
        .unwrap_or_else(|e| panic!("verify of {dir}: {e}"));
    db.close().unwrap();
    s
}

/// A database with an archive: a full backup `/full`, commits, an incremental backup
/// `/inc` on it, a commit, a moment (returned: a target time), a commit, then one big
/// transaction (its records' LSN range returned: a target LSN inside it leaves a loser)
/// and filler until the archive holds it all.
fn history(sim: &SimStorage) -> (Arc<dyn Storage>, CommitTime, (Lsn, Lsn)) {
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = Database::open_on(storage.clone(), "/db", options()).unwrap();
    for c in 0..8 {
        put_many(&db, &format!("a{c}-"), 40, 60);
    }
    db.checkpoint().unwrap();
    db.backup_to("/full").unwrap();
    for c in 0..6 {
        put_many(&db, &format!("b{c}-"), 30, 60);
    }
    // A transaction left open across the incremental backup's checkpoint.
    let t = db.table("t").unwrap();
    let mut open = db.begin();
    open.put(&t, b"open-across", b"the backup").unwrap();
    db.backup_incremental_to("/inc", "/full").unwrap();
    open.commit().unwrap();
    put_many(&db, "c-", 20, 60);
    std::thread::sleep(Duration::from_millis(20));
    let between = CommitTime::now();
    std::thread::sleep(Duration::from_millis(20));
    put_many(&db, "d-", 20, 60);
    let before = db.log().durable_lsn();
    let end = put_many(&db, "big-", 300, 100);
    let segment = db.log().segment_bytes();
    let mut i = 0;
    while db.log().durable_lsn().0 < end.0 + 3 * segment {
        put_many(&db, &format!("f{i}-"), 20, 200);
        i += 1;
    }
    let log = db.log();
    let finished = Lsn(log.durable_lsn().0 - log.durable_lsn().0 % segment);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while log.archived_lsn().unwrap() < finished {
        assert!(std::time::Instant::now() < deadline, "archiver stuck");
        std::thread::sleep(Duration::from_millis(5));
    }
    db.close().unwrap();
    (storage, between, (before, end))
}

/// Every target, both replays, the incremental chain and the full backup alone: the
/// reports follow the rule; the steps are exactly check, copy, (sort, apply | redo),
/// analysis, undo, checkpoint; a cut inside the big transaction reports an undo of its
/// records.
#[test]
fn every_target_and_replay_of_a_chain_with_an_archive_reports_steps_in_order() {
    let sim = SimStorage::new(71);
    let (storage, between, (before, end)) = history(&sim);
    let inside = Lsn(before.0 + (end.0 - before.0) / 2);
    let mut n = 0;
    for (backup, ancestors) in [("/inc", &["/full"][..]), ("/full", &[][..])] {
        for (tname, target) in [
            ("end", RestoreTarget::End),
            ("lsn", RestoreTarget::Lsn(inside)),
            ("time", RestoreTarget::Time(between)),
        ] {
            let mut shown: Option<State> = None;
            for replay in [Replay::LogOrder, Replay::SortedRuns] {
                n += 1;
                let dest = format!("/r{n}");
                let tag = format!("{backup} to {tname} by {replay:?}");
                let mut told = Vec::new();
                let r = Database::restore(
                    storage.clone(),
                    &spec(backup, ancestors, target, &dest, replay),
                    &mut |p| told.push(p),
                )
                .unwrap_or_else(|e| panic!("{tag}: {e}"));
                let steps = progress_rule(&told, true).unwrap_or_else(|e| panic!("{tag}: {e}"));
                use RestoreStep::*;
                let want: Vec<RestoreStep> = match replay {
                    Replay::SortedRuns => {
                        vec![Check, Copy, Sort, Apply, Analysis, Undo, Checkpoint]
                    }
                    _ => vec![Check, Copy, Analysis, Redo, Undo, Checkpoint],
                };
                assert_eq!(steps, want, "{tag}: {told:?}");
                let total = |s: RestoreStep| told.iter().rev().find(|p| p.step == s).unwrap().total;
                for s in [Check, Copy, Analysis] {
                    assert!(total(s) > 0, "{tag}: {s:?} measured nothing: {told:?}");
                }
                if tname == "lsn" {
                    assert!(
                        r.recovery.losers >= 1,
                        "{tag}: no loser at a cut inside a transaction"
                    );
                    assert!(
                        total(Undo) >= 2,
                        "{tag}: the undo of a loser with records measured {}",
                        total(Undo)
                    );
                }
                let s = open_state(&storage, &dest);
                match &shown {
                    Some(o) => assert!(o == &s, "{tag}: the replays disagree"),
                    None => shown = Some(s),
                }
            }
        }
    }
}

/// A callback that panics on recovery's first report (analysis): the restore neither hangs
/// nor aborts; the caller gets that panic (its own payload, not a scoped thread's); the
/// restored directory, whose control file was written, opens showing what a finished
/// restore to the same target shows.
#[test]
fn a_callback_panicking_in_recoverys_reports_unwinds_to_the_caller_and_leaves_a_database() {
    let sim = SimStorage::new(72);
    let (storage, _, (before, end)) = history(&sim);
    let target = RestoreTarget::Lsn(Lsn(before.0 + (end.0 - before.0) / 3));
    Database::restore(
        storage.clone(),
        &spec("/inc", &["/full"], target, "/whole", Replay::LogOrder),
        &mut |_| {},
    )
    .unwrap();
    let want = open_state(&storage, "/whole");
    for (k, replay) in [Replay::LogOrder, Replay::SortedRuns]
        .into_iter()
        .enumerate()
    {
        let dest = format!("/panicked{k}");
        let seen = RefCell::new(Vec::new());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Database::restore(
                storage.clone(),
                &spec("/inc", &["/full"], target, &dest, replay),
                &mut |p| {
                    seen.borrow_mut().push(p);
                    if p.step == RestoreStep::Analysis {
                        std::panic::panic_any("the caller's callback gave up");
                    }
                },
            )
        }));
        let payload = r.expect_err("the callback's panic reached the caller");
        assert_eq!(
            payload.downcast_ref::<&str>().copied(),
            Some("the caller's callback gave up"),
            "{replay:?}: the panic's payload"
        );
        let seen = seen.into_inner();
        progress_rule(&seen, false).unwrap_or_else(|e| panic!("{replay:?}: {e}"));
        assert_eq!(open_state(&storage, &dest), want, "{replay:?}");
    }
}

/// A restore whose recovery fails (every read of the restored data file fails, after the
/// copy): an error, at once, naming the failure (the open's error, not "ended without a
/// result"); the reports up to it a valid prefix that reached recovery; with the disk
/// healthy again the directory opens showing the target state.
#[test]
fn a_restore_whose_recovery_fails_returns_the_opens_error_and_leaves_a_database() {
    let sim = SimStorage::new(73);
    let (storage, _, _) = history(&sim);
    Database::restore(
        storage.clone(),
        &spec("/full", &[], RestoreTarget::End, "/whole", Replay::LogOrder),
        &mut |_| {},
    )
    .unwrap();
    let want = open_state(&storage, "/whole");
    sim.inject(
        FaultPlan::new(FaultOp::Read, 1, FaultKind::Eio)
            .persistent()
            .on("/failing/data"),
    );
    let mut told = Vec::new();
    let started = std::time::Instant::now();
    let r = Database::restore(
        storage.clone(),
        &spec(
            "/full",
            &[],
            RestoreTarget::End,
            "/failing",
            Replay::LogOrder,
        ),
        &mut |p| told.push(p),
    );
    let e = r.expect_err("recovery reads the data file");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let msg = e.to_string();
    assert!(!msg.contains("without a result"), "{msg}");
    // The same failure as a plain open of the directory under the same fault.
    let plain = Database::open_on(storage.clone(), "/failing", Options::small())
        .map(|_| ())
        .expect_err("a plain open fails the same way");
    sim.clear_faults();
    assert!(msg.contains("/failing/data"), "{msg}");
    assert_eq!(msg, plain.to_string(), "the restore's error is the open's");
    let steps = progress_rule(&told, false).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        steps.contains(&RestoreStep::Analysis) && !steps.contains(&RestoreStep::Checkpoint),
        "{steps:?}"
    );
    assert_eq!(open_state(&storage, "/failing"), want);
}
