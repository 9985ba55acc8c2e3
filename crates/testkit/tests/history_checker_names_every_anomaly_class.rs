//! The history checker, shown to fail: hand-made histories, one per anomaly class, each
//! must be reported with its class and only the transactions that show it; a serial
//! history must be reported clean.

use sluice::Lsn;
use sluice_testkit::history::{
    check, Anomaly, Class, End, Form, History, Key, Op, Span, Txn, TxnNo, Val, ValueId,
};
use std::ops::Bound;

fn id(txn: u64, op: u32) -> ValueId {
    ValueId {
        txn: TxnNo(txn),
        op,
    }
}

fn key(k: &str) -> Key {
    Key {
        table: 0,
        key: k.as_bytes().to_vec(),
    }
}

fn read(v: Option<(u64, u32)>) -> Option<Val> {
    v.map(|(t, o)| Val::Id(id(t, o)))
}

fn put(txn: u64, op: u32, k: &str, prev: Option<(u64, u32)>) -> Op {
    Op::Put {
        key: key(k),
        value: id(txn, op),
        len: 20,
        prev: read(prev),
    }
}

fn get(k: &str, got: Option<(u64, u32)>) -> Op {
    Op::Get {
        key: key(k),
        for_update: false,
        got: read(got),
    }
}

/// `scan(a..=b)` that returned `seen`.
fn scan(a: &str, b: &str, seen: &[(&str, (u64, u32))]) -> Op {
    Op::Scan {
        table: 0,
        span: Span {
            from: Bound::Included(a.as_bytes().to_vec()),
            to: Bound::Included(b.as_bytes().to_vec()),
            form: Form::RangeInclusive,
        },
        seen: seen
            .iter()
            .map(|(k, (t, o))| (k.as_bytes().to_vec(), Val::Id(id(*t, *o))))
            .collect(),
    }
}

fn committed(lsn: u64) -> End {
    End::Committed {
        lsn: (lsn > 0).then_some(Lsn(lsn)),
    }
}

fn history(txns: Vec<(u64, End, Vec<Op>)>) -> History {
    History {
        txns: txns
            .into_iter()
            .map(|(no, end, ops)| Txn {
                no: TxnNo(no),
                client: no as usize,
                ops,
                end,
            })
            .collect(),
        keys: ["a", "b", "c", "d"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect(),
        tables: 1,
    }
}

/// The anomalies of `class`; at least one must be there.
fn found(h: &History, class: Class) -> Vec<Anomaly> {
    let c = check(h);
    let of: Vec<Anomaly> = c
        .anomalies
        .iter()
        .filter(|a| a.class == class)
        .cloned()
        .collect();
    let all: Vec<String> = c.anomalies.iter().map(|a| a.render(h)).collect();
    assert!(!of.is_empty(), "no {class} among:\n{}", all.join("\n"));
    of
}

fn txns(a: &Anomaly) -> Vec<u64> {
    let mut t: Vec<u64> = a.txns.iter().map(|t| t.0).collect();
    t.sort_unstable();
    t.dedup();
    t
}

/// T0 loads a and b; T1 overwrites a; T2 (read-only) scans everything after both.
fn serial() -> Vec<(u64, End, Vec<Op>)> {
    vec![
        (
            0,
            committed(10),
            vec![put(0, 0, "a", None), put(0, 1, "b", None)],
        ),
        (
            1,
            committed(20),
            vec![get("a", Some((0, 0))), put(1, 1, "a", Some((0, 0)))],
        ),
        (
            2,
            committed(0),
            vec![scan("a", "d", &[("a", (1, 1)), ("b", (0, 1))])],
        ),
    ]
}

#[test]
fn a_serial_history_is_clean() {
    let h = history(serial());
    let c = check(&h);
    let all: Vec<String> = c.anomalies.iter().map(|a| a.render(&h)).collect();
    assert!(c.anomalies.is_empty(), "{}", all.join("\n"));
    assert_eq!((c.transactions, c.committed), (3, 3));
    // T0: the absence of a and b its puts replaced; T1: a (get) and a (its put's
    // previous value); T2: the four keys of a..=d.
    assert_eq!(c.reads_checked, 8);
    assert!(c.edges >= 3, "ww T0->T1, wr T0->T1, wr T1->T2: {}", c.edges);
}

#[test]
fn g0_a_cycle_of_overwrites() {
    // T1 overwrote T2's b, T2 overwrote T1's a.
    let h = history(vec![
        (
            1,
            committed(10),
            vec![put(1, 0, "a", None), put(1, 1, "b", Some((2, 0)))],
        ),
        (
            2,
            committed(20),
            vec![put(2, 0, "b", None), put(2, 1, "a", Some((1, 0)))],
        ),
    ]);
    let g0 = found(&h, Class::G0);
    assert_eq!(txns(&g0[0]), [1, 2]);
}

#[test]
fn g1a_a_read_of_an_aborted_write() {
    for end in [
        End::RolledBack,
        End::Dropped,
        End::Aborted("deadlock".into()),
    ] {
        let h = history(vec![
            (1, end, vec![put(1, 0, "a", None)]),
            (2, committed(0), vec![get("a", Some((1, 0)))]),
        ]);
        assert_eq!(txns(&found(&h, Class::G1a)[0]), [1, 2]);
    }
}

#[test]
fn g1b_a_read_of_an_intermediate_write() {
    let h = history(vec![
        (
            1,
            committed(10),
            vec![put(1, 0, "a", None), put(1, 1, "a", Some((1, 0)))],
        ),
        (2, committed(0), vec![get("a", Some((1, 0)))]),
    ]);
    assert_eq!(txns(&found(&h, Class::G1b)[0]), [1, 2]);
}

#[test]
fn g1c_circular_information_flow() {
    // Each read the other's write: no overwrite is involved.
    let h = history(vec![
        (
            1,
            committed(10),
            vec![put(1, 0, "a", None), get("b", Some((2, 0)))],
        ),
        (
            2,
            committed(20),
            vec![put(2, 0, "b", None), get("a", Some((1, 0)))],
        ),
    ]);
    let g1c = found(&h, Class::G1c);
    assert_eq!(txns(&g1c[0]), [1, 2]);
    assert!(check(&h).anomalies.iter().all(|a| a.class != Class::G0));
}

#[test]
fn g2_item_write_skew() {
    // Both read a and b as T0 left them; each overwrote one of them.
    let h = history(vec![
        (
            0,
            committed(10),
            vec![put(0, 0, "a", None), put(0, 1, "b", None)],
        ),
        (
            1,
            committed(20),
            vec![
                get("a", Some((0, 0))),
                get("b", Some((0, 1))),
                put(1, 2, "a", Some((0, 0))),
            ],
        ),
        (
            2,
            committed(30),
            vec![
                get("a", Some((0, 0))),
                get("b", Some((0, 1))),
                put(2, 2, "b", Some((0, 1))),
            ],
        ),
    ]);
    let g2 = found(&h, Class::G2Item);
    assert_eq!(txns(&g2[0]), [1, 2], "T0 is not part of the cycle");
    // The commit-order model sees it too: T2 read a after T1 overwrote it.
    found(&h, Class::ModelMismatch);
}

#[test]
fn phantom_a_scan_repeated_after_an_insert_into_its_range() {
    // The known defect: T1 scans a..=d and sees a and d, inserts c, and its repeated
    // scan sees b, which T2 inserted and committed meanwhile.
    let h = history(vec![
        (
            0,
            committed(10),
            vec![put(0, 0, "a", None), put(0, 1, "d", None)],
        ),
        (
            1,
            committed(30),
            vec![
                scan("a", "d", &[("a", (0, 0)), ("d", (0, 1))]),
                put(1, 1, "c", None),
                scan(
                    "a",
                    "d",
                    &[("a", (0, 0)), ("b", (2, 0)), ("c", (1, 1)), ("d", (0, 1))],
                ),
            ],
        ),
        (2, committed(20), vec![put(2, 0, "b", None)]),
    ]);
    let p = found(&h, Class::Phantom);
    assert_eq!(txns(&p[0]), [1, 2]);
    let text = p[0].render(&h);
    assert!(
        text.contains("rw-predicate") && text.contains("did not see t0/b"),
        "{text}"
    );
    assert!(
        !text.contains("T0 ("),
        "only the cycle's transactions are shown:\n{text}"
    );
    found(&h, Class::ModelMismatch);
}

#[test]
fn internal_a_transaction_that_does_not_see_its_own_write() {
    let h = history(vec![(
        1,
        committed(10),
        vec![put(1, 0, "a", None), get("a", None)],
    )]);
    assert_eq!(txns(&found(&h, Class::Internal)[0]), [1]);
    // A scan that misses its own insert is the same defect.
    let h = history(vec![(
        1,
        committed(10),
        vec![put(1, 0, "b", None), scan("a", "c", &[])],
    )]);
    found(&h, Class::Internal);
}

#[test]
fn lost_version_two_writers_overwrite_one_value() {
    let h = history(vec![
        (0, committed(10), vec![put(0, 0, "a", None)]),
        (1, committed(20), vec![put(1, 0, "a", Some((0, 0)))]),
        (2, committed(30), vec![put(2, 0, "a", Some((0, 0)))]),
    ]);
    assert_eq!(txns(&found(&h, Class::LostVersion)[0]), [0, 1, 2]);
}

#[test]
fn lost_version_a_committed_value_that_vanished() {
    // T1 found a absent although T0's committed value was never deleted (a reverted
    // page): the value is lost.
    let h = history(vec![
        (0, committed(10), vec![put(0, 0, "a", None)]),
        (1, committed(20), vec![put(1, 0, "a", None)]),
    ]);
    assert_eq!(txns(&found(&h, Class::LostVersion)[0]), [0, 1]);
}

#[test]
fn garbled_a_value_no_write_made() {
    let h = history(vec![(
        1,
        committed(0),
        vec![Op::Get {
            key: key("a"),
            for_update: false,
            got: Some(Val::Garbled("7 bytes \"garbage\"".into())),
        }],
    )]);
    found(&h, Class::Garbled);
    // A value of another key is garbled too.
    let h = history(vec![
        (0, committed(10), vec![put(0, 0, "a", None)]),
        (1, committed(0), vec![get("b", Some((0, 0)))]),
    ]);
    found(&h, Class::Garbled);
}

#[test]
fn model_mismatch_a_read_only_transaction_that_fits_no_place() {
    // T3 saw a before T1's overwrite and b after T2's insert, which committed after T1:
    // no place in the commit order gives both (read skew). No graph cycle shows it
    // (nothing orders T1 before T2 but the commit order); the second oracle does.
    let h = history(vec![
        (0, committed(10), vec![put(0, 0, "a", None)]),
        (1, committed(20), vec![put(1, 0, "a", Some((0, 0)))]),
        (2, committed(30), vec![put(2, 0, "b", None)]),
        (
            3,
            committed(0),
            vec![get("a", Some((0, 0))), get("b", Some((2, 0)))],
        ),
    ]);
    let m = found(&h, Class::ModelMismatch);
    assert!(m[0].summary.contains("read-only"), "{}", m[0].summary);
}

fn len(got: u64) -> Op {
    Op::Len { table: 0, got }
}

#[test]
fn model_mismatch_a_count_that_fits_no_place() {
    // T0 inserts a and b; T1 deletes a. T2 (read-only) counted 2: right after T0.
    // T3 inserts c and counts 2: b and its own c, right. T4 deletes b and counts 4: the
    // model has c alone (its own delete of b applied), 1. T5 (read-only) read b (from
    // T0 until T4) and counted 3: the table never held 3 entries.
    let h = history(vec![
        (
            0,
            committed(10),
            vec![put(0, 0, "a", None), put(0, 1, "b", None)],
        ),
        (2, committed(0), vec![len(2)]),
        (
            1,
            committed(20),
            vec![Op::Delete {
                key: key("a"),
                prev: read(Some((0, 0))),
            }],
        ),
        (3, committed(30), vec![put(3, 0, "c", None), len(2)]),
        (
            4,
            committed(40),
            vec![
                Op::Delete {
                    key: key("b"),
                    prev: read(Some((0, 1))),
                },
                len(4),
            ],
        ),
        (5, committed(0), vec![get("b", Some((0, 1))), len(3)]),
    ]);
    let m = found(&h, Class::ModelMismatch);
    let mut who: Vec<u64> = m.iter().flat_map(txns).collect();
    who.sort_unstable();
    assert_eq!(who, vec![4, 5], "{m:#?}");
    assert!(m.iter().any(|a| a.summary.contains("counted 4")), "{m:#?}");
    // The right counts alone are clean.
    let h = history(vec![
        (
            0,
            committed(10),
            vec![put(0, 0, "a", None), put(0, 1, "b", None)],
        ),
        (2, committed(0), vec![len(2)]),
        (3, committed(30), vec![put(3, 0, "c", None), len(3)]),
    ]);
    assert!(check(&h).anomalies.is_empty());
}
