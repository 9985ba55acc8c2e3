//! Postmortem: a transaction that scanned a range and then inserted into it let another
//! transaction insert below its key and commit, a phantom in its repeated scan.
//! Why: the insert split the scanned gap, and the new lower gap (named by the inserted
//! key) carried none of the scanner's own gap S; now an insert carries it over.
//!
//! Every range form (bounded, open at either end, excluded bounds, a prefix, the whole
//! table with an append at its end) under every commit protocol. One thread: the other
//! transaction's insert either goes through (the defect) or waits out its lock timeout.

use sluice::{CommitProtocol, Database, Error, Options, Table, Transaction};
use sluice_storage::SimStorage;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

/// One form of the scenario: the scan, the scanner's own insert, and the other
/// transaction's insert into the gap the scanner's insert split off (below it).
struct Form {
    name: &'static str,
    scan: fn(&mut Transaction, &Table) -> Vec<Vec<u8>>,
    before: &'static [&'static str],
    own: &'static str,
    other: &'static str,
    /// Both inserts store values too large for a leaf (kept apart, `blob`).
    large: bool,
}

fn keys<'a>(it: impl Iterator<Item = sluice::Result<(Vec<u8>, Vec<u8>)>> + 'a) -> Vec<Vec<u8>> {
    it.map(|e| e.map(|(k, _)| k))
        .collect::<Result<_, _>>()
        .unwrap()
}

const FORMS: &[Form] = &[
    Form {
        name: "a..=d",
        scan: |tx, t| keys(tx.scan(t, "a"..="d")),
        before: &["a", "d"],
        own: "c",
        other: "b",
        large: false,
    },
    Form {
        name: "a..=d, large values",
        scan: |tx, t| keys(tx.scan(t, "a"..="d")),
        before: &["a", "d"],
        own: "c",
        other: "b",
        large: true,
    },
    Form {
        name: "a..d",
        scan: |tx, t| keys(tx.scan(t, "a".."d")),
        before: &["a", "c"],
        own: "c5",
        other: "c3",
        large: false,
    },
    Form {
        name: "(excluded a, excluded d)",
        scan: |tx, t| keys(tx.scan(t, (Bound::Excluded("a"), Bound::Excluded("d")))),
        before: &["a", "b", "d"],
        own: "c",
        other: "b5",
        large: false,
    },
    Form {
        name: "..=d",
        scan: |tx, t| keys(tx.scan(t, ..="d")),
        before: &["b", "d"],
        own: "a5",
        other: "a3",
        large: false,
    },
    Form {
        name: "..d",
        scan: |tx, t| keys(tx.scan(t, .."d")),
        before: &["b", "e"],
        own: "c",
        other: "b5",
        large: false,
    },
    Form {
        name: "b..",
        scan: |tx, t| keys(tx.scan(t, "b"..)),
        before: &["a", "b", "d"],
        own: "c",
        other: "b5",
        large: false,
    },
    Form {
        name: "scan_prefix",
        scan: |tx, t| keys(tx.scan_prefix(t, "p/")),
        before: &["o", "p/a", "p/d", "q"],
        own: "p/c",
        other: "p/b",
        large: false,
    },
    Form {
        name: "scan_all then append",
        scan: |tx, t| keys(tx.scan_all(t)),
        before: &["a", "d"],
        own: "z",
        other: "e",
        large: false,
    },
];

/// Runs one form; the phantom it let in, if any.
fn run(protocol: CommitProtocol, form: &Form, seed: u64) -> Option<String> {
    let mut o = Options::small();
    o.commit = protocol;
    // The other insert must wait for the scanner; it gives up after this.
    o.lock_timeout = Duration::from_millis(150);
    let db = Database::open_on(Arc::new(SimStorage::new(seed)), "/db", o).unwrap();
    let t = db.create_table("t").unwrap();
    let mut tx = db.begin();
    for k in form.before {
        tx.put(&t, k.as_bytes(), b"v").unwrap();
    }
    tx.commit().unwrap();

    let what = format!("{protocol}, {}", form.name);
    let value = if form.large {
        vec![7u8; 5000]
    } else {
        vec![7u8]
    };
    let mut scanner = db.begin();
    let first = (form.scan)(&mut scanner, &t);
    scanner.put(&t, form.own.as_bytes(), &value).unwrap();
    let mut with_own = first.clone();
    with_own.push(form.own.as_bytes().to_vec());
    with_own.sort();

    // Another transaction inserts into the gap below the scanner's insert.
    let mut other = db.begin();
    let r = other.put(&t, form.other.as_bytes(), &value);
    let committed = r.is_ok() && other.commit().is_ok();
    let again = (form.scan)(&mut scanner, &t);
    if again != with_own || committed {
        let shown: Vec<String> = again
            .iter()
            .map(|k| String::from_utf8_lossy(k).into())
            .collect();
        return Some(format!(
            "{what}: repeated scan {shown:?}, other committed: {committed}"
        ));
    }
    assert!(
        matches!(r, Err(Error::LockTimeout { .. })),
        "{what}: the insert must wait for the scanner, got {r:?}"
    );
    scanner.commit().unwrap();

    // Only delayed: once the scanner is done the insert goes through.
    let mut tx = db.begin();
    tx.put(&t, form.other.as_bytes(), &value).unwrap();
    tx.commit().unwrap();
    let mut tx = db.begin();
    let mut expected = with_own;
    expected.push(form.other.as_bytes().to_vec());
    expected.sort();
    assert_eq!((form.scan)(&mut tx, &t), expected, "{what}");
    tx.commit().unwrap();
    None
}

#[test]
fn every_range_form_under_every_protocol_keeps_the_split_gap_locked() {
    // The other insert lies below the scanner's, in the gap its insert split off.
    assert!(FORMS.iter().all(|f| f.other < f.own));
    let mut seed = 0;
    let mut phantoms = Vec::new();
    for protocol in CommitProtocol::ALL {
        for form in FORMS {
            seed += 1;
            phantoms.extend(run(protocol, form, seed));
        }
    }
    assert!(
        phantoms.is_empty(),
        "{} of {} runs saw a phantom:\n{}",
        phantoms.len(),
        CommitProtocol::ALL.len() * FORMS.len(),
        phantoms.join("\n")
    );
}
