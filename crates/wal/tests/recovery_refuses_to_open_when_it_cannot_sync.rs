//! Recovery makes every byte it keeps durable before it publishes durability; when it
//! cannot (the sync of a segment or of the directory fails), it refuses to open with an
//! error that names the file, instead of trusting what the page cache shows. Once the
//! device works again the log opens with every acknowledged record.

use crate::common;

use common::*;
use sluice_storage::{raw_os_error, FaultKind, FaultOp, FaultPlan};
use sluice_wal::{segment, Log, Lsn};
use std::path::Path;

#[test]
fn recovery_refuses_to_open_when_a_segment_or_the_directory_cannot_be_synced() {
    let (sim, storage) = sim(41);
    let log = Log::open(storage.clone(), DIR, small_options()).unwrap();
    let a = log.append(b"acknowledged").unwrap();
    log.wait_durable(a.end).unwrap();
    drop(log);

    let segment_zero = Path::new(DIR).join(segment::segment_name(Lsn(0)));
    for (target, kind) in [
        (segment_zero.clone(), FaultKind::Eio),
        (Path::new(DIR).to_path_buf(), FaultKind::Enospc),
    ] {
        sim.inject(
            FaultPlan::new(FaultOp::Sync, 1, kind)
                .persistent()
                .on(&target),
        );
        let e = Log::open(storage.clone(), DIR, small_options())
            .err()
            .expect("recovery cannot sync, so it must not open");
        let text = e.to_string();
        assert!(e.is_io(), "{text}");
        assert!(text.contains("recovery cannot make the log"), "{text}");
        assert!(text.contains(&target.display().to_string()), "{text}");
        assert!(!text.contains('\n'), "{text}");
        let sluice_wal::WalError::Io(io) = &e else {
            panic!("{e:?}")
        };
        let code = if kind == FaultKind::Eio { 5 } else { 28 };
        assert_eq!(raw_os_error(io), Some(code), "{text}");
        sim.clear_faults();
    }
    let log = Log::open(storage, DIR, small_options()).unwrap();
    assert_eq!(read_all(&log), [(a.lsn, b"acknowledged".to_vec())]);
}
