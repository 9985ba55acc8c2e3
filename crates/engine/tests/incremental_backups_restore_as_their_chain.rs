//! Incremental backups (issue 26): a full backup, then two incremental ones, each taken
//! under load against the one before, copy strictly fewer pages than the full one; the
//! chain restored to the newest backup's end shows exactly the commits below that end,
//! and rolled forward from the log archive to its end, exactly the commits archived —
//! under the checkpoint sweep, a page cleaner (whose checkpoints leave pages dirty from
//! below their redo point) and log-based propagation. A chain with a link missing, swapped
//! or not starting with a full backup is refused naming the backup; so is an incremental
//! backup opened on its own, and a parent backup of another database, an incomplete one,
//! or one newer than the database. A crash at any step of an incremental backup leaves
//! its parent intact and the incremental backup complete or refused by name.

use crate::backup_load::*;
use sluice::{
    BackupLabel, BackupParent, CommitProtocol, Database, Error, Options, Restore, RestoreTarget,
    Strategy,
};
use sluice_storage::{SimStorage, Storage};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The load between and during the backups writes keys `0..HOT` only: a few dozen of the
/// few hundred pages the preload fills.
const HOT: u64 = 150;

fn ro(o: &Options) -> Options {
    Options {
        read_only: true,
        log_archive: None,
        ..o.clone()
    }
}

/// Restores so far (which way the next one replays the log).
static RESTORES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn restore(
    storage: &Arc<dyn Storage>,
    chain: &[&str],
    archive: Option<&str>,
    dest: &str,
) -> sluice::Result<sluice::RestoreReport> {
    let (newest, ancestors) = chain.split_last().unwrap();
    Database::restore(
        storage.clone(),
        &Restore {
            backup: PathBuf::from(newest),
            ancestors: ancestors.iter().map(PathBuf::from).collect(),
            archive: archive.map(PathBuf::from),
            target: RestoreTarget::End,
            dest: PathBuf::from(dest),
            // Both ways of replaying the log, alternately.
            replay: if RESTORES
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .is_multiple_of(2)
            {
                sluice::Replay::SortedRuns
            } else {
                sluice::Replay::LogOrder
            },
        },
        &mut |_| {},
    )
}

/// What the restored database in `dest` shows, after checking every page and tree.
fn shows(storage: &Arc<dyn Storage>, dest: &str, o: &Options) -> State {
    let db = Database::builder(dest)
        .options(ro(o))
        .storage(storage.clone())
        .open()
        .unwrap();
    db.verify().unwrap();
    state(&db)
}

struct Chain {
    storage: Arc<dyn Storage>,
    o: Options,
    rec: Arc<Recorded>,
    labels: [BackupLabel; 3],
    /// Where the archive reaches after the load.
    archived: sluice::Lsn,
}

/// `/db` on a simulator with its log archived to `/archive`: preloaded, then `/full`,
/// `/inc1` (against `/full`) and `/inc2` (against `/inc1`), each taken while clients
/// commit on the hot keys, and more commits after the last.
fn take_chain((protocol, strategy): (CommitProtocol, Strategy), seed: u64) -> Chain {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new(seed));
    let mut o = options(protocol, strategy);
    o.log_archive = Some("/archive".into());
    let db = Database::open_on(storage.clone(), "/db", o.clone()).unwrap();
    let rec = Arc::new(Recorded::default());
    preload(&db, &rec);
    // Every preloaded page written before the full backup, whatever the strategy (verify's
    // checkpoint writes them all): under a page cleaner, a preloaded page still dirty at
    // the full backup's checkpoint lowers its redo start below the preload, and the first
    // incremental then rightly copies every page the preload wrote — which a starved
    // cleaner made happen once in a loaded test run, and which is not what this test is
    // about (the pages left dirty below a checkpoint's redo point come from the load).
    db.verify().unwrap();
    let full = under_load_on(&db, (2, HOT), seed, &rec, || {
        db.backup_to_with("/full", &mut slowly).unwrap()
    });
    let inc1 = under_load_on(&db, (2, HOT), seed + 1, &rec, || {
        db.backup_incremental_to_with("/inc1", "/full", &mut slowly)
            .unwrap()
    });
    let inc2 = under_load_on(&db, (2, HOT), seed + 2, &rec, || {
        db.backup_incremental_to_with("/inc2", "/inc1", &mut slowly)
            .unwrap()
    });
    wait_archived(&db);
    let archived = db.log().archived_lsn().unwrap();
    db.close().unwrap();
    assert_eq!(rec.uncertain.load(std::sync::atomic::Ordering::Relaxed), 0);
    Chain {
        storage,
        o,
        rec,
        labels: [full, inc1, inc2],
        archived,
    }
}

#[test]
fn a_chain_restores_to_the_newest_backups_end_and_to_the_archives_end() {
    let configs = [
        (CommitProtocol::default(), Strategy::CheckpointSweep),
        (CommitProtocol::default(), "page-oldest".parse().unwrap()),
        (CommitProtocol::default(), "log".parse().unwrap()),
    ];
    for (i, config) in configs.into_iter().enumerate() {
        let c = take_chain(config, 40 + i as u64);
        let [full, inc1, inc2] = c.labels;
        let what = format!("{}/{}", config.0, config.1);
        println!(
            "{what}: pages copied: full {}, inc1 {}, inc2 {} (data {} bytes)",
            full.pages_copied, inc1.pages_copied, inc2.pages_copied, inc2.data_bytes
        );
        assert_eq!(full.kind(), "full");
        assert_eq!(
            full.pages_copied,
            full.data_bytes / u64::from(full.page_size)
        );
        assert_eq!(inc1.parent, Some(BackupParent::of(&full)), "{what}");
        assert_eq!(inc2.parent, Some(BackupParent::of(&inc1)), "{what}");
        for inc in [inc1, inc2] {
            assert!(
                inc.pages_copied > 0 && inc.pages_copied < full.pages_copied,
                "{what}: an incremental backup copied {} pages, the full one {}",
                inc.pages_copied,
                full.pages_copied
            );
        }
        let commits = c.rec.in_lsn_order();
        for (a, b) in [(full, inc1), (inc1, inc2)] {
            assert!(
                commits
                    .iter()
                    .any(|x| x.end > a.end_lsn && x.end <= b.end_lsn),
                "{what}: commits between the backups"
            );
        }
        let st = &c.storage;
        // Each prefix of the chain, without the archive: exactly its newest backup's end.
        restore(st, &["/full", "/inc1"], None, "/r1").unwrap();
        assert_eq!(
            shows(st, "/r1", &c.o),
            c.rec.state_at(inc1.end_lsn),
            "{what}: the chain up to inc1"
        );
        let r = restore(st, &["/full", "/inc1", "/inc2"], None, "/r2").unwrap();
        assert_eq!(r.end_lsn, inc2.end_lsn);
        assert_eq!(
            shows(st, "/r2", &c.o),
            c.rec.state_at(inc2.end_lsn),
            "{what}: the chain up to inc2"
        );
        // Rolled forward from the archive: everything archived.
        let r = restore(st, &["/full", "/inc1", "/inc2"], Some("/archive"), "/r3").unwrap();
        assert!(
            r.end_lsn >= c.archived && r.end_lsn >= inc2.end_lsn,
            "{what}: restored to {}, archived to {}",
            r.end_lsn,
            c.archived
        );
        assert_eq!(
            shows(st, "/r3", &c.o),
            c.rec.state_at(r.end_lsn),
            "{what}: the chain rolled forward to the archive's end"
        );
    }
}

fn refused(r: sluice::Result<impl std::fmt::Debug>, says: &[&str]) {
    match r {
        Err(Error::InvalidArgument(m)) => {
            for s in says {
                assert!(m.contains(s), "`{m}` does not say `{s}`");
            }
        }
        other => panic!("expected a refusal saying {says:?}, got {other:?}"),
    }
}

#[test]
fn a_broken_chain_and_a_wrong_parent_are_refused_naming_them() {
    let c = take_chain((CommitProtocol::default(), Strategy::CheckpointSweep), 7);
    let st = &c.storage;
    refused(
        restore(st, &["/full", "/inc2"], None, "/x1"),
        &["chain is broken at /inc2", "missing"],
    );
    refused(
        restore(st, &["/full", "/inc2", "/inc1"], None, "/x2"),
        &["chain is broken at /inc2"],
    );
    refused(
        restore(st, &["/inc2"], None, "/x3"),
        &["/inc2 is an incremental backup", "chain"],
    );
    refused(
        restore(st, &["/inc1", "/inc2"], None, "/x4"),
        &["must start with a full backup", "/inc1"],
    );
    for dest in ["/x1", "/x2", "/x3", "/x4"] {
        assert!(
            !st.exists(&Path::new(dest).join("CONTROL")).unwrap(),
            "a refused restore made {dest}"
        );
    }
    // Opened on its own, an incremental backup says it needs its chain.
    refused(
        Database::builder("/inc1")
            .options(ro(&c.o))
            .storage(st.clone())
            .open()
            .map(|_| ()),
        &["/inc1 is an incremental backup", "chain"],
    );

    // Wrong parents, refused before anything is written.
    let db = Database::open_on(st.clone(), "/db", options(c.o.commit, c.o.propagation)).unwrap();
    refused(db.backup_incremental_to("/y1", "/nowhere"), &["/nowhere"]);
    st.create_dir_all(Path::new("/half")).unwrap();
    st.open(
        Path::new("/half/BACKUP.partial"),
        sluice_storage::OpenOptions::CREATE,
    )
    .unwrap();
    refused(
        db.backup_incremental_to("/y2", "/half"),
        &["/half is an incomplete backup"],
    );
    let other =
        Database::open_on(st.clone(), "/other", options(c.o.commit, c.o.propagation)).unwrap();
    preload(&other, &Recorded::default());
    other.backup_to("/other-full").unwrap();
    refused(
        db.backup_incremental_to("/y3", "/other-full"),
        &["/other-full", "another database"],
    );
    other.close().unwrap();
    // A database restored from the full backup is a new database (its history forks
    // from the source's at the cut, and a restore gives it an id of its own): no backup
    // of the source is its parent, neither the newer ones nor the one it came from.
    db.close().unwrap();
    restore(st, &["/full"], None, "/restored").unwrap();
    let restored = Database::open_on(
        st.clone(),
        "/restored",
        options(c.o.commit, c.o.propagation),
    )
    .unwrap();
    refused(
        restored.backup_incremental_to("/y4", "/inc2"),
        &["/inc2", "another database"],
    );
    refused(
        restored.backup_incremental_to("/y5", "/full"),
        &["/full", "another database"],
    );
    // Its own backups chain as usual.
    restored.backup_to("/rfull").unwrap();
    let label = restored.backup_incremental_to("/rinc", "/rfull").unwrap();
    restored.close().unwrap();
    assert!(label.pages_copied < label.data_bytes / u64::from(label.page_size));
    for dest in ["/y1", "/y2", "/y3", "/y4", "/y5"] {
        assert!(!st.exists(Path::new(dest)).unwrap(), "{dest} was made");
    }
}

/// An interrupted backup is refused saying what it is: incomplete (the marker is there),
/// or not a backup at all (the halt came before the marker was durable).
fn refused_by_name(e: &Error) -> bool {
    let m = e.to_string();
    ["incomplete backup", "is not a backup", "does not exist"]
        .iter()
        .any(|p| m.contains(p))
}

#[test]
fn a_crash_during_an_incremental_backup_leaves_its_parent_intact() {
    let o = options(CommitProtocol::default(), Strategy::CheckpointSweep);
    let (mut complete, mut refused, mut steps) = (0, 0, 0);
    for n in 1.. {
        let sim = SimStorage::new(n);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let db = Database::open_on(storage.clone(), "/db", o.clone()).unwrap();
        let rec = Recorded::default();
        preload(&db, &rec);
        let first = db.backup_to("/first").unwrap();
        run_load_on(
            &db,
            1,
            (20, HOT),
            n,
            &std::sync::atomic::AtomicBool::new(false),
            &rec,
        );
        let end = rec.in_lsn_order().last().unwrap().end;
        sim.crash_at_op(n);
        let outcome = db.backup_incremental_to("/second", "/first");
        drop(db);
        if outcome.is_ok() {
            sim.disarm_crash();
            break;
        }
        steps += 1;
        // The source keeps every acknowledged commit.
        let db = Database::open_on(storage.clone(), "/db", o.clone()).unwrap();
        assert_eq!(state(&db), rec.state_at(end), "step {n}: the source");
        db.close().unwrap();
        // The parent is as it was: it restores to its end.
        let dest = format!("/from-first-{n}");
        restore(&storage, &["/first"], None, &dest).unwrap();
        assert_eq!(
            shows(&storage, &dest, &o),
            rec.state_at(first.end_lsn),
            "step {n}: the parent changed"
        );
        // The incremental backup is complete (and restores with its parent), or
        // refused by name by a restore.
        match restore(&storage, &["/first", "/second"], None, "/from-second") {
            Ok(r) => {
                assert_eq!(
                    shows(&storage, "/from-second", &o),
                    rec.state_at(r.end_lsn),
                    "step {n}"
                );
                assert_eq!(r.end_lsn, r.label.end_lsn);
                complete += 1;
            }
            Err(e) => {
                assert!(refused_by_name(&e), "step {n}: {e}");
                refused += 1;
            }
        }
    }
    println!("{steps} interrupted incremental backups: {complete} complete, {refused} refused");
    assert!(
        steps > 10 && refused > 5,
        "the halts must land inside the backup"
    );
}
