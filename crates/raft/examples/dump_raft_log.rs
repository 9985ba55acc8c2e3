//! Prints every record of a node's Raft log, one line each: entries (log id and the keys
//! they write), votes, committed ids, purge points and truncations. A debugging aid for a
//! directory a failed `sluice crash-test cluster` run kept (docs/crash-test.md); run it on
//! a copy, since opening a log may repair its tail.
use std::sync::Arc;

use openraft::entry::RaftEntry;
use openraft::EntryPayload;
use sluice_raft::{Command, LogRecord, LogStore};
use sluice_wal::LogOptions;

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: dump_raft_log RAFT_LOG_DIR (a copy of a node's raft-log directory)");
        std::process::exit(2);
    };
    if !std::path::Path::new(&dir).is_dir() {
        eprintln!("error: {dir}: not a directory (give a copy of a node's raft-log directory)");
        std::process::exit(2);
    }
    let storage: Arc<dyn sluice_storage::Storage> = Arc::new(sluice_storage::OsStorage::new());
    let records = match LogStore::records(storage, &dir, LogOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {dir}: {e}");
            std::process::exit(2);
        }
    };
    for (lsn, record) in records {
        match record {
            LogRecord::Entry(e) => {
                let what = match &e.payload {
                    EntryPayload::Blank => "blank".to_string(),
                    EntryPayload::Membership(m) => format!("membership {m:?}"),
                    EntryPayload::Normal(p) => p
                        .batches
                        .iter()
                        .flat_map(|b| b.commands.iter())
                        .map(|c| match c {
                            Command::Put { key, .. } => String::from_utf8_lossy(key).into_owned(),
                            other => format!("{other:?}"),
                        })
                        .collect::<Vec<_>>()
                        .join(" "),
                };
                println!("{lsn} entry {} {what}", e.log_id());
            }
            other => println!("{lsn} {other:?}"),
        }
    }
}
