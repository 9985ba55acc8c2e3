//! Records of every type and kind, and format version 2's encoder (the one this module
//! had before version 3, for the transaction records it still decodes): what the codec's
//! tests encode and decode.

use super::{
    legacy, ActiveTxn, Change, CheckpointData, CommitTime, Delta, PageOp, Participant, Record,
};
use crate::ids::{PageId, TxnId};
use crate::page::StoredValue;
use sluice_wal::Lsn;

/// A record of each type, and of each kind of change and page operation, with extreme
/// numbers among them.
pub(super) fn samples() -> Vec<Record> {
    vec![
        Record::Update {
            txn: TxnId(9),
            prev: None,
            page: PageId(4),
            tree: PageId(2),
            key: b"k".to_vec(),
            change: Change::Update {
                old: StoredValue::inline(b"a".to_vec()),
                new: StoredValue {
                    bytes: b"bb".to_vec(),
                    external: true,
                },
            },
        },
        Record::Update {
            txn: TxnId(1 << 40),
            prev: Some(Lsn(1 << 33)),
            page: PageId(300),
            tree: PageId(u64::MAX),
            key: b"account".to_vec(),
            change: Change::Patch {
                delta: Delta {
                    at: 4,
                    old: b"1234".to_vec(),
                    new: b"98765".to_vec(),
                    tail: 88,
                },
            },
        },
        Record::Update {
            txn: TxnId(0),
            prev: Some(Lsn(8)),
            page: PageId(1),
            tree: PageId(1),
            key: vec![],
            change: Change::Insert {
                value: StoredValue::inline(vec![7; 200]),
            },
        },
        Record::Update {
            txn: TxnId(u64::MAX),
            prev: Some(Lsn(u64::MAX - 7)),
            page: PageId(0),
            tree: PageId(1),
            key: vec![0xFF; 3],
            change: Change::Delete {
                old: StoredValue::inline(vec![]),
            },
        },
        Record::Clr {
            txn: TxnId(9),
            prev: Some(Lsn(0)),
            page: PageId(4),
            tree: None,
            op: PageOp::Remove { key: vec![] },
            undo_next: Some(Lsn(16)),
        },
        Record::Clr {
            txn: TxnId(200),
            prev: Some(Lsn(4096)),
            page: PageId(77),
            tree: None,
            op: PageOp::Patch {
                key: b"k".to_vec(),
                delta: Delta {
                    at: 0,
                    old: vec![],
                    new: b"x".to_vec(),
                    tail: 3,
                },
            },
            undo_next: None,
        },
        Record::Clr {
            txn: TxnId(200),
            prev: None,
            page: PageId(77),
            tree: None,
            op: PageOp::Set {
                key: b"k".to_vec(),
                value: StoredValue {
                    bytes: vec![1; 18],
                    external: true,
                },
            },
            undo_next: Some(Lsn(64)),
        },
        Record::Clr {
            txn: TxnId(201),
            prev: None,
            page: PageId(78),
            tree: None,
            op: PageOp::Insert {
                key: b"i".to_vec(),
                value: StoredValue::inline(b"v".to_vec()),
            },
            undo_next: None,
        },
        Record::Commit {
            txn: TxnId(1),
            prev: Some(Lsn(8)),
            at: CommitTime::UNKNOWN,
        },
        Record::End {
            txn: TxnId(1),
            prev: None,
        },
        Record::Coordinated {
            txn: TxnId(7),
            prev: None,
            at: CommitTime::UNKNOWN,
            participants: vec![
                Participant {
                    partition: 1,
                    txn: TxnId(40),
                    last: Lsn(4096),
                },
                Participant {
                    partition: 2,
                    txn: TxnId(u64::MAX),
                    last: Lsn(u64::MAX),
                },
            ],
        },
        Record::Images {
            pages: vec![(PageId(3), vec![1, 2, 3]), (PageId(0), vec![])],
        },
        Record::BeginCheckpoint,
        Record::EndCheckpoint(CheckpointData {
            begin: Lsn(64),
            next_txn: 12,
            active: vec![ActiveTxn {
                txn: TxnId(3),
                first: Lsn(8),
                last: Lsn(40),
            }],
            dirty: vec![(PageId(5), Lsn(24))],
            clock: CommitTime::UNKNOWN,
        }),
        Record::Clr {
            txn: TxnId(9),
            prev: Some(Lsn(0)),
            page: PageId(4),
            tree: Some(PageId(u64::MAX)),
            op: PageOp::Remove { key: vec![] },
            undo_next: Some(Lsn(16)),
        },
        Record::TreeCount {
            tree: PageId(2),
            entries: Some(u64::MAX),
        },
        Record::TreeCount {
            tree: PageId(300),
            entries: None,
        },
        // Written since commit times: commits with their time, and a checkpoint with the
        // commit clock.
        Record::Commit {
            txn: TxnId(1),
            prev: Some(Lsn(8)),
            at: CommitTime(1_700_000_000_123_456),
        },
        Record::Commit {
            txn: TxnId(u64::MAX),
            prev: None,
            at: CommitTime(u64::MAX),
        },
        Record::Coordinated {
            txn: TxnId(7),
            prev: Some(Lsn(64)),
            at: CommitTime(1),
            participants: vec![Participant {
                partition: 3,
                txn: TxnId(41),
                last: Lsn(8192),
            }],
        },
        Record::EndCheckpoint(CheckpointData {
            begin: Lsn(64),
            next_txn: 12,
            active: vec![],
            dirty: vec![],
            clock: CommitTime(1_700_000_000_123_456),
        }),
    ]
}

/// Format version 2's fixed-width encoding of a transaction record (the encoder this
/// module had before deltas, for the transaction records it still decodes).
pub(super) fn legacy_encode(r: &Record) -> Vec<u8> {
    fn opt_lsn(b: &mut Vec<u8>, l: Option<Lsn>) {
        match l {
            None => b.push(0),
            Some(l) => {
                b.push(1);
                b.extend_from_slice(&l.0.to_le_bytes());
            }
        }
    }
    fn bytes(b: &mut Vec<u8>, x: &[u8]) {
        b.extend_from_slice(&(x.len() as u32).to_le_bytes());
        b.extend_from_slice(x);
    }
    fn value(b: &mut Vec<u8>, v: &StoredValue) {
        let flag = if v.external { legacy::EXTERNAL_FLAG } else { 0 };
        b.extend_from_slice(&(v.bytes.len() as u32 | flag).to_le_bytes());
        b.extend_from_slice(&v.bytes);
    }
    let mut b = Vec::new();
    match r {
        Record::Update {
            txn,
            prev,
            page,
            tree,
            key,
            change,
        } => {
            b.push(legacy::TAG_UPDATE);
            b.extend_from_slice(&txn.0.to_le_bytes());
            opt_lsn(&mut b, *prev);
            b.extend_from_slice(&page.0.to_le_bytes());
            b.extend_from_slice(&tree.0.to_le_bytes());
            bytes(&mut b, key);
            match change {
                Change::Insert { value: v } => {
                    b.push(1);
                    value(&mut b, v);
                }
                Change::Update { old, new } => {
                    b.push(2);
                    value(&mut b, old);
                    value(&mut b, new);
                }
                Change::Delete { old } => {
                    b.push(3);
                    value(&mut b, old);
                }
                Change::Patch { .. } => unreachable!("format version 2 has no patches"),
            }
        }
        Record::Clr {
            txn,
            prev,
            page,
            tree: None,
            op,
            undo_next,
        } => {
            b.push(legacy::TAG_CLR);
            b.extend_from_slice(&txn.0.to_le_bytes());
            opt_lsn(&mut b, *prev);
            b.extend_from_slice(&page.0.to_le_bytes());
            match op {
                PageOp::Insert { key, value: v } => {
                    b.push(1);
                    bytes(&mut b, key);
                    value(&mut b, v);
                }
                PageOp::Set { key, value: v } => {
                    b.push(2);
                    bytes(&mut b, key);
                    value(&mut b, v);
                }
                PageOp::Remove { key } => {
                    b.push(3);
                    bytes(&mut b, key);
                }
                PageOp::Patch { .. } => unreachable!("format version 2 has no patches"),
            }
            opt_lsn(&mut b, *undo_next);
        }
        Record::Commit { txn, prev, .. } | Record::End { txn, prev } => {
            b.push(if matches!(r, Record::Commit { .. }) {
                legacy::TAG_COMMIT
            } else {
                legacy::TAG_END
            });
            b.extend_from_slice(&txn.0.to_le_bytes());
            opt_lsn(&mut b, *prev);
        }
        _ => unreachable!("only transaction records changed format"),
    }
    b
}

/// The samples format version 2 could write.
pub(super) fn legacy_samples() -> Vec<Record> {
    samples()
        .into_iter()
        .filter(|r| match r {
            Record::Update { change, .. } => !matches!(change, Change::Patch { .. }),
            Record::Clr { op, tree, .. } => tree.is_none() && !matches!(op, PageOp::Patch { .. }),
            Record::Commit { at, .. } => !at.is_known(),
            Record::End { .. } => true,
            _ => false,
        })
        .collect()
}
