//! Prints every record of a node's Raft log, one line each: entries (log id and the keys
//! they write), votes, committed ids, purge points and truncations. A debugging aid for a
//! directory a failed `sluice crash-test cluster` run kept (docs/crash-test.md); run it on
//! a copy, since opening a log may repair its tail.
use std::sync::Arc;

use openraft::entry::RaftEntry;
use openraft::EntryPayload;
use serde::Deserialize;
use sluice_raft::types::{Entry, LogId, Vote};
use sluice_raft::Command;
use sluice_wal::{Log, LogOptions};

#[derive(Deserialize)]
enum Record {
    Entry(Entry),
    Vote(Vote),
    Committed(Option<LogId>),
    Purged(LogId),
    TruncateAfter(Option<LogId>),
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: dump_raft_log RAFT_LOG_DIR (a copy of a node's raft-log directory)");
        std::process::exit(2);
    };
    if let Err(e) = dump(&dir) {
        eprintln!("error: {dir}: {e}");
        std::process::exit(2);
    }
}

fn dump(dir: &str) -> Result<(), String> {
    let storage: Arc<dyn sluice_storage::Storage> = Arc::new(sluice_storage::OsStorage::new());
    let log = Log::open(storage, dir, LogOptions::default()).map_err(|e| e.to_string())?;
    for r in log.read_from(log.start_lsn()).map_err(|e| e.to_string())? {
        let r = r.map_err(|e| e.to_string())?;
        let rec: Record = postcard::from_bytes(&r.payload)
            .map_err(|e| format!("the record at LSN {}: {e}", r.lsn))?;
        match rec {
            Record::Entry(e) => {
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
                println!("{} entry {} {}", r.lsn, e.log_id(), what);
            }
            Record::Vote(v) => println!("{} vote {v:?}", r.lsn),
            Record::Committed(c) => println!("{} committed {c:?}", r.lsn),
            Record::Purged(p) => println!("{} purged {p:?}", r.lsn),
            Record::TruncateAfter(t) => println!("{} truncate after {t:?}", r.lsn),
        }
    }
    Ok(())
}
