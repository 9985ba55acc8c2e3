//! Outside review of the single-pass restore (`Replay::SortedRuns`): the restored
//! database must be the same as with `Replay::LogOrder`, for every configuration and
//! target, and a crash anywhere in a restore must leave no database or the restored one.
//! All tests here passed on the code reviewed: regression guards, no finding.

use crate::backup_load::*;
use sluice::{CommitProtocol, Database, Lsn, Options, Replay, Restore, RestoreTarget, Strategy};
use sluice_storage::{SimStorage, Storage};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

type Dump = BTreeMap<String, State>;

fn restore(
    storage: &Arc<dyn Storage>,
    backup: &str,
    ancestors: &[&str],
    archive: Option<&str>,
    target: RestoreTarget,
    dest: &str,
    replay: Replay,
) -> sluice::Result<sluice::RestoreReport> {
    Database::restore(
        storage.clone(),
        &Restore {
            backup: backup.into(),
            ancestors: ancestors.iter().map(PathBuf::from).collect(),
            archive: archive.map(PathBuf::from),
            target,
            dest: dest.into(),
            replay,
        },
        &mut |_| {},
    )
}

/// Every table's entries, and `verify()` (as a string, so that both sides compare).
fn dump(db: &Database) -> (Dump, String) {
    let mut d = Dump::new();
    for name in db.table_names().unwrap() {
        let t = db.table(&name).unwrap();
        let mut tx = db.begin();
        let s = tx.scan_all(&t).map(|r| r.unwrap()).collect::<State>();
        tx.commit().unwrap();
        d.insert(name, s);
    }
    let v = match db.verify() {
        Ok(r) => format!(
            "ok: tables {} entries {} per_table {:?}",
            r.tables, r.entries, r.per_table
        ),
        Err(e) => format!("verify failed: {e}"),
    };
    (d, v)
}

fn open_dump(storage: &Arc<dyn Storage>, dir: &str, o: &Options) -> (Dump, String) {
    let db = Database::open_on(storage.clone(), dir, o.clone())
        .unwrap_or_else(|e| panic!("open of {dir}: {e}"));
    let d = dump(&db);
    db.close().unwrap();
    d
}

/// Restores both ways into `/<tag>-sr` and `/<tag>-lo`, checks both open, verify, and
/// show the same; returns the SortedRuns dump and the cut.
fn both_ways(
    storage: &Arc<dyn Storage>,
    backup: &str,
    ancestors: &[&str],
    archive: Option<&str>,
    target: RestoreTarget,
    tag: &str,
    o: &Options,
) -> (Dump, Lsn) {
    let sr_dir = format!("/{tag}-sr");
    let lo_dir = format!("/{tag}-lo");
    let lo = restore(
        storage,
        backup,
        ancestors,
        archive,
        target,
        &lo_dir,
        Replay::LogOrder,
    )
    .unwrap_or_else(|e| panic!("{tag}: LogOrder restore to {target:?} failed: {e}"));
    let sr = restore(
        storage,
        backup,
        ancestors,
        archive,
        target,
        &sr_dir,
        Replay::SortedRuns,
    );
    let sr = sr.unwrap_or_else(|e| {
        panic!(
            "{tag}: SortedRuns restore to {target:?} failed where LogOrder succeeded (cut {}): {e}",
            lo.end_lsn
        )
    });
    assert!(sr.single_pass.is_some(), "{tag}: no single pass ran");
    assert_eq!(sr.end_lsn, lo.end_lsn, "{tag}: cuts differ");
    let (d_lo, v_lo) = open_dump(storage, &lo_dir, o);
    let (d_sr, v_sr) = open_dump(storage, &sr_dir, o);
    assert!(
        v_lo.starts_with("ok"),
        "{tag}: LogOrder restore does not verify: {v_lo}"
    );
    assert!(
        v_sr.starts_with("ok"),
        "{tag}: SortedRuns restore to {target:?} (cut {}) does not verify: {v_sr}",
        sr.end_lsn
    );
    assert_eq!(v_sr, v_lo, "{tag}: verify reports differ");
    assert!(d_sr == d_lo, "{tag}: SortedRuns and LogOrder restores to {target:?} (cut {}) show different tables/entries", sr.end_lsn);
    // A second open (normal redo from the checkpoint) shows the same again.
    let (d2, v2) = open_dump(storage, &sr_dir, o);
    assert!(
        d2 == d_sr && v2 == v_sr,
        "{tag}: second open of the SortedRuns restore differs"
    );
    (d_sr, sr.end_lsn)
}

fn archived(o: &Options) -> Options {
    let mut o = o.clone();
    o.log_archive = Some("/archive".into());
    o
}

/// Restores at several targets between the backup's end and the archive's end, for
/// every commit protocol and propagation family, cutting inside transactions of the
/// load (losers undone), and compares both replays with each other and the recorded
/// state.
#[test]
fn both_replays_agree_at_many_targets_for_every_configuration() {
    for (i, (p, s)) in configurations().into_iter().enumerate() {
        let sim = SimStorage::new(300 + i as u64);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let o = options(p, s);
        let db = Database::open_on(storage.clone(), "/db", archived(&o)).unwrap();
        let rec = Arc::new(Recorded::default());
        preload(&db, &rec);
        let label = under_load(&db, 2, 40 + i as u64, &rec, || {
            db.backup_to_with("/backup", &mut slowly).unwrap()
        });
        run_load(&db, 2, 150, 70 + i as u64, &AtomicBool::new(false), &rec);
        wait_archived(&db);
        db.close().unwrap();
        let full = restore(
            &storage,
            "/backup",
            &[],
            Some("/archive"),
            RestoreTarget::End,
            "/full",
            Replay::LogOrder,
        )
        .unwrap();
        let (b, e) = (label.end_lsn.0, full.end_lsn.0);
        for k in 0..4u64 {
            let t = Lsn(b + (e - b) * k / 3 + if k == 3 { 0 } else { 37 * k });
            let t = if k == 3 {
                RestoreTarget::End
            } else {
                RestoreTarget::Lsn(t)
            };
            let tag = format!("c{i}-{k}");
            let (d, cut) = both_ways(&storage, "/backup", &[], Some("/archive"), t, &tag, &o);
            assert!(
                d.get(TABLE).cloned().unwrap_or_default() == rec.state_at(cut),
                "{tag} ({p:?}, {s:?}): restored state is not the recorded one at {cut}"
            );
        }
    }
}

/// Power loss (not a kill) at storage operations throughout a single-pass restore,
/// under page-cleaner and log-based propagation: the destination is no database, or it
/// opens (twice) showing exactly the target state.
#[test]
fn a_power_loss_anywhere_in_a_single_pass_restore_leaves_no_database_or_the_restored_one() {
    for (j, s) in ["page-oldest", "log"].into_iter().enumerate() {
        let sim = SimStorage::new(400 + j as u64);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let o = options(CommitProtocol::default(), s.parse::<Strategy>().unwrap());
        let db = Database::open_on(storage.clone(), "/db", archived(&o)).unwrap();
        let rec = Arc::new(Recorded::default());
        preload(&db, &rec);
        let label = under_load(&db, 2, 9, &rec, || db.backup_to("/backup").unwrap());
        run_load(&db, 1, 150, 9, &AtomicBool::new(false), &rec);
        wait_archived(&db);
        db.close().unwrap();
        let full = restore(
            &storage,
            "/backup",
            &[],
            Some("/archive"),
            RestoreTarget::End,
            "/full",
            Replay::LogOrder,
        )
        .unwrap();
        let target = RestoreTarget::Lsn(Lsn((label.end_lsn.0 + full.end_lsn.0) / 2 + 11));
        let reference = restore(
            &storage,
            "/backup",
            &[],
            Some("/archive"),
            target,
            "/ref",
            Replay::LogOrder,
        )
        .unwrap();
        let want = rec.state_at(reference.end_lsn);
        let mut n = 1;
        loop {
            let dest = format!("/p{j}-{n}");
            sim.crash_at_op(n);
            let r = restore(
                &storage,
                "/backup",
                &[],
                Some("/archive"),
                target,
                &dest,
                Replay::SortedRuns,
            );
            sim.disarm_crash();
            let crashed = r.is_err();
            let empty = storage
                .list(dest.as_ref())
                .map_or(true, |names| names.is_empty());
            if !empty {
                for attempt in 0..2 {
                    match Database::open_on(storage.clone(), &dest, o.clone()) {
                        Ok(d) => {
                            assert!(
                                state(&d) == want,
                                "{s}: power loss at op {n}: wrong state (open {attempt})"
                            );
                            let v = d.verify();
                            assert!(
                                v.is_ok(),
                                "{s}: power loss at op {n}: verify: {:?}",
                                v.err()
                            );
                            d.close().unwrap();
                        }
                        Err(e) => assert!(
                            crashed && e.to_string().contains("not a sluice database"),
                            "{s}: power loss at op {n} (restore {}): open {attempt}: {e}",
                            if crashed { "failed" } else { "succeeded" }
                        ),
                    }
                }
            }
            if !crashed {
                break;
            }
            n += if n < 40 { 1 } else { 13 };
            assert!(n < 20000);
        }
    }
}

/// Tables emptied, dropped and the data file compacted (shortened) after the backup,
/// then new tables and big values reusing and extending the file: both replays agree at
/// targets before, inside and after the compaction.
#[test]
fn both_replays_agree_across_a_compaction_after_the_backup() {
    for (i, s) in ["checkpoint-sweep", "page-oldest", "log"]
        .into_iter()
        .enumerate()
    {
        let sim = SimStorage::new(500 + i as u64);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let o = options(CommitProtocol::default(), s.parse::<Strategy>().unwrap());
        let db = Database::open_on(storage.clone(), "/db", archived(&o)).unwrap();
        let rec = Recorded::default();
        preload(&db, &rec);
        // A big table at the end of the file.
        let big = db.table_or_create("big").unwrap();
        for c in 0..20u32 {
            let mut tx = db.begin();
            for k in 0..50u32 {
                tx.put(&big, format!("b{c:02}{k:03}").as_bytes(), vec![b'b'; 300])
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        let label = db.backup_to("/backup").unwrap();
        let mut marks = vec![label.end_lsn];
        // Empty it, drop it, compact.
        let mut tx = db.begin();
        for c in 0..20u32 {
            for k in 0..50u32 {
                tx.delete(&big, format!("b{c:02}{k:03}").as_bytes())
                    .unwrap();
            }
        }
        tx.commit().unwrap();
        marks.push(db.log().durable_lsn());
        db.drop_table("big").unwrap();
        let rep = db.compact().unwrap();
        let _ = rep; // the freed pages need not lie at the file's end
        marks.push(db.log().durable_lsn());
        // New tables and large values after it (pages reused, the file extended again).
        for n in 0..12u32 {
            let t = db.table_or_create(&format!("n{n}")).unwrap();
            let mut tx = db.begin();
            for k in 0..30u32 {
                let len = if k % 10 == 0 { 20_000 } else { 200 };
                tx.put(
                    &t,
                    format!("k{k:03}").as_bytes(),
                    vec![b'0' + (n % 10) as u8; len],
                )
                .unwrap();
            }
            tx.commit().unwrap();
            if n % 3 == 2 {
                db.drop_table(&format!("n{}", n - 1)).unwrap();
            }
        }
        run_load(&db, 1, 100, 5, &AtomicBool::new(false), &rec);
        marks.push(db.log().durable_lsn());
        wait_archived(&db);
        db.close().unwrap();
        for (k, m) in marks.iter().enumerate().skip(1).take(2) {
            let tag = format!("k{i}-{k}");
            both_ways(
                &storage,
                "/backup",
                &[],
                Some("/archive"),
                RestoreTarget::Lsn(Lsn(m.0 - 1)),
                &tag,
                &o,
            );
        }
        both_ways(
            &storage,
            "/backup",
            &[],
            Some("/archive"),
            RestoreTarget::End,
            &format!("k{i}-end"),
            &o,
        );
    }
}

/// Large values (overflow / blob pages), page sizes 4 KiB and 16 KiB, a long
/// transaction of many records left in flight at the cut (a loser with many pages),
/// both replays agree.
#[test]
fn both_replays_agree_with_big_values_and_a_long_loser() {
    for (i, (ps, s)) in [
        (4096usize, "log"),
        (8192, "page-oldest"),
        (8192, "checkpoint-sweep"),
    ]
    .into_iter()
    .enumerate()
    {
        let sim = SimStorage::new(600 + i as u64);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let mut o = options(CommitProtocol::default(), s.parse::<Strategy>().unwrap());
        o.page_size = ps;
        let db = Database::open_on(storage.clone(), "/db", archived(&o)).unwrap();
        let rec = Recorded::default();
        preload(&db, &rec);
        let label = db.backup_to("/backup").unwrap();
        let t = db.table_or_create("blobs").unwrap();
        for k in 0..6u32 {
            let mut tx = db.begin();
            tx.put(
                &t,
                format!("blob{k}").as_bytes(),
                vec![b'a' + k as u8; 50_000 + 7 * k as usize],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        // A long transaction: the cut lands inside it.
        let tt = db.table(TABLE).unwrap();
        let mut long = db.begin();
        for k in 0..400u32 {
            long.put(&tt, format!("k{k:03}").as_bytes(), vec![b'L'; 150])
                .unwrap();
        }
        long.put(&t, b"blob1", vec![b'X'; 70_000]).unwrap();
        let mid = db.log().durable_lsn();
        long.delete(&t, b"blob2").unwrap();
        long.commit().unwrap();
        let t2 = db.table(TABLE).unwrap();
        let mut tx = db.begin();
        tx.delete(&t2, b"k010").unwrap();
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        wait_archived(&db);
        let _ = label;
        db.close().unwrap();
        both_ways(
            &storage,
            "/backup",
            &[],
            Some("/archive"),
            RestoreTarget::Lsn(mid),
            &format!("b{i}-mid"),
            &o,
        );
        both_ways(
            &storage,
            "/backup",
            &[],
            Some("/archive"),
            RestoreTarget::End,
            &format!("b{i}-end"),
            &o,
        );
    }
}

/// An incremental chain under log-based propagation and the page cleaner, restored both
/// ways at mid targets.
#[test]
fn both_replays_agree_on_an_incremental_chain() {
    for (i, s) in ["log", "page-oldest"].into_iter().enumerate() {
        let sim = SimStorage::new(700 + i as u64);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let o = options(CommitProtocol::default(), s.parse::<Strategy>().unwrap());
        let db = Database::open_on(storage.clone(), "/db", archived(&o)).unwrap();
        let rec = Arc::new(Recorded::default());
        preload(&db, &rec);
        db.backup_to("/full").unwrap();
        under_load_on(&db, (2, 200), 3, &rec, || ());
        let inc = under_load_on(&db, (2, 300), 4, &rec, || {
            db.backup_incremental_to("/inc", "/full").unwrap()
        });
        run_load(&db, 1, 150, 11, &AtomicBool::new(false), &rec);
        wait_archived(&db);
        db.close().unwrap();
        let t = RestoreTarget::Lsn(Lsn(inc.end_lsn.0 + 3000));
        let (d, cut) = both_ways(
            &storage,
            "/inc",
            &["/full"],
            Some("/archive"),
            t,
            &format!("i{i}"),
            &o,
        );
        assert!(
            d.get(TABLE).cloned().unwrap_or_default() == rec.state_at(cut),
            "{s}: incremental chain: wrong state at {cut}"
        );
    }
}
