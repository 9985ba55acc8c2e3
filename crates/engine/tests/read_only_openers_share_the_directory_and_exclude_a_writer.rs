//! Read-only openers take a shared lock on the directory's LOCK file: several coexist,
//! while a read-write opener and read-only openers exclude each other with
//! `Error::Locked`, both ways, until the other side has closed. A copy of a database
//! without its LOCK file opens read-only without one — and the file is not created.

use crate::read_only;

use read_only::*;
use sluice::{Database, Error};
use sluice_storage::{SimStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn read_only(storage: &Arc<dyn Storage>) -> sluice::Result<Database> {
    Database::builder(DIR)
        .options(read_only_options())
        .storage(storage.clone())
        .open()
}

fn read_write(storage: &Arc<dyn Storage>) -> sluice::Result<Database> {
    Database::open_on(storage.clone(), DIR, options())
}

#[test]
fn read_only_openers_share_the_directory_and_exclude_a_writer() {
    let sim = SimStorage::new(8);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let expected = closed_cleanly(storage.clone());

    let readers: Vec<Database> = (0..3).map(|_| read_only(&storage).unwrap()).collect();
    for r in &readers {
        assert_eq!(contents(r), expected);
    }
    let err = read_write(&storage).expect_err("readers hold the directory");
    assert!(matches!(err, Error::Locked(_)), "{err:?}");
    assert!(err.to_string().contains(DIR), "{err}");
    let mut readers = readers.into_iter();
    readers.next().unwrap().close().unwrap();
    drop(readers.next());
    assert!(
        matches!(read_write(&storage), Err(Error::Locked(_))),
        "one reader is left"
    );
    drop(readers);

    let writer = read_write(&storage).expect("free once every reader is gone");
    let err = read_only(&storage).expect_err("the writer holds the directory");
    assert!(matches!(err, Error::Locked(_)), "{err:?}");
    writer.close().unwrap();
    read_only(&storage).unwrap().close().unwrap();

    // A copy made without LOCK: opened read-only without a lock, LOCK not created.
    sim.remove(&Path::new(DIR).join("LOCK")).unwrap();
    sim.remove(&Path::new(DIR).join("log/LOCK")).unwrap();
    let a = read_only(&storage).unwrap();
    let b = read_only(&storage).unwrap();
    assert_eq!(contents(&a), expected);
    assert_eq!(contents(&b), expected);
    drop((a, b));
    assert!(!sim.exists(&Path::new(DIR).join("LOCK")).unwrap());
    assert!(!sim.exists(&Path::new(DIR).join("log/LOCK")).unwrap());
}
