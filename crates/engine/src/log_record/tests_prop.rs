//! Property tests of the log record decoder: every record the engine can write
//! round-trips, and no bytes (arbitrary, behind a valid tag, or a valid record mutated)
//! make `Record::decode` panic, allocate absurdly or loop. The same checks as the fuzz
//! target (`super::fuzz::record`).

use super::codec::{MAX_TAG, TAG_UPDATE};
use super::limits::MAX_IMAGES_PER_RECORD;
use super::*;
use crate::alloc_probe::assert_bounded;
use crate::ids::{PageId, TxnId};
use crate::mutations::{apply, mutations};
use crate::page::StoredValue;
use proptest::prelude::*;
use sluice_wal::Lsn;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn lsn() -> impl Strategy<Value = Lsn> {
    prop_oneof![
        (0u64..1 << 30),
        Just(u64::MAX / 8 - 1),
        any::<u64>().prop_map(|v| v / 8)
    ]
    .prop_map(|v| Lsn(v * 8))
}

fn opt_lsn() -> impl Strategy<Value = Option<Lsn>> {
    proptest::option::of(lsn())
}

fn number() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..300, any::<u64>()]
}

/// A commit time: unknown (an old record's), near now, or anything.
fn time() -> impl Strategy<Value = CommitTime> {
    prop_oneof![
        Just(0u64),
        1_600_000_000_000_000u64..1_900_000_000_000_000,
        any::<u64>()
    ]
    .prop_map(CommitTime)
}

fn value() -> impl Strategy<Value = StoredValue> {
    (bytes(120), any::<bool>()).prop_map(|(bytes, external)| StoredValue { bytes, external })
}

fn delta() -> impl Strategy<Value = Delta> {
    (0usize..2000, bytes(40), bytes(40), 0usize..2000).prop_map(|(at, old, new, tail)| Delta {
        at,
        old,
        new,
        tail,
    })
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        value().prop_map(|value| Change::Insert { value }),
        (value(), value()).prop_map(|(old, new)| Change::Update { old, new }),
        delta().prop_map(|delta| Change::Patch { delta }),
        value().prop_map(|old| Change::Delete { old }),
    ]
}

fn op() -> impl Strategy<Value = PageOp> {
    prop_oneof![
        (bytes(40), value()).prop_map(|(key, value)| PageOp::Insert { key, value }),
        (bytes(40), value()).prop_map(|(key, value)| PageOp::Set { key, value }),
        (bytes(40), delta()).prop_map(|(key, delta)| PageOp::Patch { key, delta }),
        bytes(40).prop_map(|key| PageOp::Remove { key }),
    ]
}

/// Any record the engine may write (within the size bound its encoder checks).
pub(crate) fn record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (number(), opt_lsn(), number(), number(), bytes(40), change()).prop_map(
            |(txn, prev, page, tree, key, change)| Record::Update {
                txn: TxnId(txn),
                prev,
                page: PageId(page),
                tree: PageId(tree),
                key,
                change,
            }
        ),
        (
            number(),
            opt_lsn(),
            number(),
            proptest::option::of(number()),
            op(),
            opt_lsn()
        )
            .prop_map(|(txn, prev, page, tree, op, undo_next)| Record::Clr {
                txn: TxnId(txn),
                prev,
                page: PageId(page),
                tree: tree.map(PageId),
                op,
                undo_next,
            }),
        (number(), opt_lsn(), time()).prop_map(|(txn, prev, at)| Record::Commit {
            txn: TxnId(txn),
            prev,
            at
        }),
        (
            number(),
            opt_lsn(),
            time(),
            proptest::collection::vec((any::<u16>(), number(), lsn()), 0..=8)
        )
            .prop_map(|(txn, prev, at, ps)| Record::Coordinated {
                txn: TxnId(txn),
                prev,
                at,
                participants: ps
                    .into_iter()
                    .map(|(partition, t, last)| Participant {
                        partition,
                        txn: TxnId(t),
                        last,
                    })
                    .collect(),
            }),
        (number(), opt_lsn()).prop_map(|(txn, prev)| Record::End {
            txn: TxnId(txn),
            prev
        }),
        proptest::collection::vec((number(), bytes(200)), 0..=MAX_IMAGES_PER_RECORD).prop_map(
            |pages| Record::Images {
                pages: pages.into_iter().map(|(p, i)| (PageId(p), i)).collect()
            }
        ),
        Just(Record::BeginCheckpoint),
        (number(), proptest::option::of(number())).prop_map(|(t, entries)| Record::TreeCount {
            tree: PageId(t),
            entries
        }),
        (
            lsn(),
            number(),
            proptest::collection::vec((number(), lsn(), lsn()), 0..5),
            proptest::collection::vec((number(), lsn()), 0..5),
            time(),
        )
            .prop_map(|(begin, next_txn, active, dirty, clock)| {
                Record::EndCheckpoint(CheckpointData {
                    begin,
                    next_txn,
                    active: active
                        .into_iter()
                        .map(|(t, first, last)| ActiveTxn {
                            txn: TxnId(t),
                            first,
                            last,
                        })
                        .collect(),
                    dirty: dirty.into_iter().map(|(p, l)| (PageId(p), l)).collect(),
                    clock,
                })
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::test_support::prop_cases(1024)))]

    #[test]
    fn every_record_round_trips(r in record()) {
        let b = r.encode();
        prop_assert_eq!(Record::decode(&b), Ok(r));
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in bytes(400)) {
        assert_bounded(&b, super::fuzz::record);
    }

    #[test]
    fn arbitrary_bytes_behind_each_tag_never_panic(tag in 0u8..=MAX_TAG + 1, b in bytes(400)) {
        let mut v = vec![tag];
        v.extend_from_slice(&b);
        assert_bounded(&v, super::fuzz::record);
    }

    #[test]
    fn mutated_records_never_panic(r in record(), ms in mutations(3)) {
        let mut b = r.encode();
        apply(&mut b, &ms);
        assert_bounded(&b, super::fuzz::record);
        // A varint-form record that decodes is canonical: it re-encodes to its bytes.
        if let Ok(d @ (Record::Update { .. } | Record::Clr { .. } | Record::Commit { .. } | Record::Coordinated { .. } | Record::End { .. })) = Record::decode(&b) {
            if b[0] >= TAG_UPDATE {
                prop_assert_eq!(d.encode(), b);
            }
        }
    }
}
