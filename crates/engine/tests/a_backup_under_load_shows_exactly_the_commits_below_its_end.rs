//! An online backup taken while clients commit opens (read-only) showing exactly the
//! commits whose records end at or below its end LSN — under every commit protocol and
//! each propagation family, on the simulator and on the real disk — and a read-write open
//! of it is refused (it would write past its end).

use crate::backup_load::*;
use sluice::{BackupLabel, Database, Error, Options};
use sluice_storage::{OsStorage, SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn check(
    storage: Arc<dyn Storage>,
    root: &Path,
    protocol: sluice::CommitProtocol,
    strategy: sluice::Strategy,
    seed: u64,
) {
    let (dir, dest) = (root.join("db"), root.join("backup"));
    let db = Database::open_on(storage.clone(), &dir, options(protocol, strategy)).unwrap();
    let rec = Arc::new(Recorded::default());
    preload(&db, &rec);
    let label: BackupLabel = under_load(&db, 3, seed, &rec, || {
        db.backup_to_with(&dest, &mut slowly).unwrap()
    });
    db.close().unwrap();
    assert_eq!(rec.uncertain.load(std::sync::atomic::Ordering::Relaxed), 0);
    let commits = rec.in_lsn_order();
    let below = commits.iter().filter(|c| c.end <= label.end_lsn).count();
    println!(
        "{protocol}/{strategy}: {} commits, {below} below the end {}, data {} bytes, log from {}",
        commits.len(),
        label.end_lsn,
        label.data_bytes,
        label.log_start
    );
    assert!(
        below > 0 && below < commits.len(),
        "{protocol}/{strategy}: the backup must fall inside the load ({below} of {} commits below its end)",
        commits.len()
    );

    let ro = Database::builder(&dest)
        .options(Options {
            read_only: true,
            ..options(protocol, strategy)
        })
        .storage(storage.clone())
        .open()
        .unwrap();
    assert_eq!(
        state(&ro),
        rec.state_at(label.end_lsn),
        "{protocol}/{strategy} seed {seed}: the backup shows other than the commits below its end LSN {}",
        label.end_lsn
    );
    ro.verify().unwrap();
    drop(ro);

    let err = Database::open_on(storage, &dest, options(protocol, strategy)).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("is a backup")),
        "{err}"
    );
}

#[test]
fn on_the_simulator_under_every_protocol_and_strategy() {
    for (i, (p, s)) in configurations().into_iter().enumerate() {
        let sim: Arc<dyn Storage> = Arc::new(SimStorage::new(i as u64));
        check(sim, Path::new("/"), p, s, i as u64);
    }
}

#[test]
fn on_the_real_disk() {
    for (i, (p, s)) in configurations().into_iter().enumerate().step_by(2) {
        let tmp = tempfile::tempdir().unwrap();
        check(Arc::new(OsStorage::new()), tmp.path(), p, s, 100 + i as u64);
    }
}
