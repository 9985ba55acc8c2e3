//! Postmortem: a read-only open of a missing partitioned database failed but left the
//! directory and a `PARTITIONS` manifest behind — the open created the manifest before any
//! partition was opened read-only, against "a read-only open never creates or changes a file".
//!
//! Every failure path of a read-only `Partitioned` open (no directory, an empty one, an
//! interrupted creation) leaves the directory tree exactly as it was, on the real file
//! system and on the simulator.

use sluice::{Options, Partitioned};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, OpenOptions, SimStorage, Storage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn options(read_only: bool) -> Options {
    let mut o = Options::small();
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    o.read_only = read_only;
    o
}

fn open(storage: Arc<dyn Storage>, dir: &Path, read_only: bool) -> sluice::Result<Partitioned> {
    Partitioned::builder(dir)
        .log_managers(2)
        .options(options(read_only))
        .storage(storage)
        .assign("a", 0)
        .assign("b", 1)
        .open()
}

/// Every file and directory under `root` (the root included), with each file's bytes.
fn tree(storage: &dyn Storage, root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut all = BTreeMap::new();
    if !storage.exists(root).unwrap() {
        return all;
    }
    let mut todo = vec![root.to_path_buf()];
    while let Some(p) = todo.pop() {
        match storage.list(&p) {
            Ok(names) => {
                all.insert(p.clone(), None);
                todo.extend(names.iter().map(|n| p.join(n)));
            }
            Err(_) => {
                let f = storage.open(&p, OpenOptions::READ_ONLY).unwrap();
                let mut b = vec![0; f.len().unwrap() as usize];
                f.read_exact_at(&mut b, 0).unwrap();
                all.insert(p, Some(b));
            }
        }
    }
    all
}

/// A read-only open of `dir` fails and leaves every file under `root` as it was.
fn fails_and_creates_nothing(storage: Arc<dyn Storage>, root: &Path, dir: &Path, case: &str) {
    let before = tree(&*storage, root);
    let r = open(storage.clone(), dir, true);
    let after = tree(&*storage, root);
    let Err(e) = r else {
        panic!("{case}: a read-only open succeeded");
    };
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>(),
        "{case}: the read-only open ({e}) changed the directory tree"
    );
    assert!(
        before == after,
        "{case}: the read-only open ({e}) changed a file"
    );
}

#[test]
fn read_only_open_of_a_missing_partitioned_database_creates_nothing() {
    // The real file system.
    let tmp = tempfile::tempdir().unwrap();
    let os: Arc<dyn Storage> = Arc::new(sluice_storage::OsStorage::new());
    let dir = tmp.path().join("db");
    fails_and_creates_nothing(os.clone(), tmp.path(), &dir, "os, missing");
    assert!(!dir.exists());
    std::fs::create_dir(&dir).unwrap();
    fails_and_creates_nothing(os.clone(), tmp.path(), &dir, "os, empty directory");

    // The simulator.
    let sim = SimStorage::new(1);
    let storage: Arc<dyn Storage> = Arc::new(sim.pinned());
    let root = Path::new("/");
    let dir = Path::new("/db");
    storage.create_dir_all(Path::new("/elsewhere")).unwrap();
    fails_and_creates_nothing(storage.clone(), root, dir, "sim, missing");
    storage.create_dir_all(dir).unwrap();
    fails_and_creates_nothing(storage.clone(), root, dir, "sim, empty directory");

    // An interrupted creation: the manifest says "creating", partition 1 never came.
    sim.inject(
        FaultPlan::new(FaultOp::Any, 1, FaultKind::Eio)
            .persistent()
            .on("/db/part-1"),
    );
    assert!(open(storage.clone(), dir, false).is_err());
    sim.clear_faults();
    assert!(storage
        .exists(&dir.join(sluice::testing::MANIFEST))
        .unwrap());
    fails_and_creates_nothing(storage.clone(), root, dir, "sim, interrupted creation");
}
