//! A restore never skips log: with an archived segment missing, a restore past it fails
//! naming the segment, a restore to the end fails rather than stop short while later
//! segments exist, and a restore to a point before it still works; a damaged segment
//! (a flipped byte inside its records) fails naming the file and the LSN.

use crate::backup_load::*;
use sluice::{CommitProtocol, Database, Error, Lsn, Restore, RestoreTarget, Strategy};
use sluice_storage::{OpenOptions, SimStorage, Storage};
use sluice_wal::segment::{segment_name, SEGMENT_HEADER_BYTES};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

struct Setup {
    storage: Arc<dyn Storage>,
    rec: Recorded,
    backup_end: Lsn,
    archived: Vec<Lsn>,
    segment_bytes: u64,
}

fn setup(seed: u64) -> Setup {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new(seed));
    let mut o = options(CommitProtocol::default(), Strategy::CheckpointSweep);
    o.log_archive = Some(PathBuf::from("/archive"));
    let db = Database::open_on(storage.clone(), "/db", o).unwrap();
    let rec = Recorded::default();
    preload(&db, &rec);
    let label = db.backup_to("/backup").unwrap();
    let segment_bytes = db.log().segment_bytes();
    // Enough load to fill several segments past the backup: how many bytes a load logs
    // depends on when its checkpoints (and so its full-page images) come, which timing
    // decides — so load again until the log is far enough.
    for round in 0..20 {
        run_load(
            &db,
            2,
            300,
            seed + round * 100,
            &AtomicBool::new(false),
            &rec,
        );
        if db.log().durable_lsn().0 >= label.end_lsn.0 + 6 * segment_bytes {
            break;
        }
    }
    wait_archived(&db);
    db.close().unwrap();
    let mut archived: Vec<Lsn> = storage
        .list("/archive".as_ref())
        .unwrap()
        .iter()
        .filter_map(|n| sluice_wal::segment::parse_segment_name(n))
        .filter(|s| s.0 + segment_bytes > label.end_lsn.0)
        .collect();
    archived.sort();
    assert!(
        archived.len() >= 4,
        "the load must fill several segments past the backup (end {}): archived {archived:?} \
         of {segment_bytes} bytes each, {} commits",
        label.end_lsn,
        rec.commits.lock().len()
    );
    Setup {
        storage,
        rec,
        backup_end: label.end_lsn,
        archived,
        segment_bytes,
    }
}

fn restore(s: &Setup, target: RestoreTarget, dest: &str) -> sluice::Result<sluice::RestoreReport> {
    Database::restore(
        s.storage.clone(),
        &Restore {
            backup: "/backup".into(),
            ancestors: Vec::new(),
            archive: Some("/archive".into()),
            target,
            dest: dest.into(),
            replay: Default::default(),
        },
        &mut |_| {},
    )
}

#[test]
fn a_missing_segment() {
    let s = setup(1);
    let missing = s.archived[2];
    s.storage
        .remove(&PathBuf::from("/archive").join(segment_name(missing)))
        .unwrap();
    let name = segment_name(missing);
    // Past it: named.
    let e = restore(
        &s,
        RestoreTarget::Lsn(Lsn(missing.0 + s.segment_bytes + 100)),
        "/r1",
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains(&name)),
        "{e}"
    );
    // To the end: named, not skipped.
    let e = restore(&s, RestoreTarget::End, "/r2").unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains(&name) && m.contains("skip")),
        "{e}"
    );
    // Before it: works, and shows exactly the commits below the target.
    let before = s
        .rec
        .in_lsn_order()
        .into_iter()
        .rfind(|c| c.end > s.backup_end && c.end < missing)
        .expect("a commit between the backup and the gap");
    let r = restore(&s, RestoreTarget::Lsn(Lsn(before.end.0 - 1)), "/r3").unwrap();
    assert_eq!(r.end_lsn, before.end);
    let db = Database::builder("/r3")
        .options(options(
            CommitProtocol::default(),
            Strategy::CheckpointSweep,
        ))
        .storage(s.storage.clone())
        .open()
        .unwrap();
    assert_eq!(state(&db), s.rec.state_at(before.end));
    db.close().unwrap();
    // backup_reach says how far it goes and which segment is missing.
    let reach = Database::backup_reach(
        s.storage.clone(),
        "/backup".as_ref(),
        Some("/archive".as_ref()),
    )
    .unwrap();
    assert_eq!(reach.end_lsn, missing);
    assert_eq!(reach.gap, Some((name, missing)));
}

#[test]
fn a_damaged_segment() {
    let s = setup(2);
    let damaged = s.archived[2];
    let path = PathBuf::from("/archive").join(segment_name(damaged));
    let f = s.storage.open(&path, OpenOptions::EXISTING).unwrap();
    // A byte in the middle of the segment's records.
    let at = SEGMENT_HEADER_BYTES + s.segment_bytes / 2;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_at(&[b[0] ^ 0x5a], at).unwrap();
    f.sync_data().unwrap();
    drop(f);
    for (target, dest) in [
        (RestoreTarget::End, "/r1"),
        (
            RestoreTarget::Lsn(Lsn(damaged.0 + s.segment_bytes + 8)),
            "/r2",
        ),
    ] {
        let e = restore(&s, target, dest).unwrap_err();
        assert!(
            matches!(&e, Error::Corruption(m) if m.contains(&segment_name(damaged)) && m.contains("damaged at LSN")),
            "{e}"
        );
    }
    // Before it: works.
    let r = restore(&s, RestoreTarget::Lsn(Lsn(damaged.0 - 1)), "/r3").unwrap();
    assert!(r.end_lsn <= damaged);
    let e = Database::backup_reach(
        s.storage.clone(),
        "/backup".as_ref(),
        Some("/archive".as_ref()),
    )
    .unwrap_err();
    assert!(e.to_string().contains(&segment_name(damaged)), "{e}");
}
