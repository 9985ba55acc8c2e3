//! Key ranges for scans: every range syntax over any byte-string type.

use std::ops::{Bound, Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// A range of keys, as [`Transaction::scan`](crate::Transaction::scan) and
/// [`Transaction::retain`](crate::Transaction::retain) take it: any of Rust's range
/// expressions (`a..b`, `a..=b`, `a..`, `..b`, `..=b`, `..`) or a pair of [`Bound`]s, over
/// any byte-string type (`&str`, `String`, `&[u8]`, `Vec<u8>`, byte literals, and
/// references to them) — with no type annotation at the call. (`std`'s `RangeBounds<K>`
/// needs one: `b"a"..` is a range of both `&[u8; 1]` and `[u8; 1]`.)
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # let db = sluice::Database::open(dir.path()).unwrap();
/// # let t = db.table_or_create("t").unwrap();
/// let mut tx = db.begin();
/// let _ = tx.scan(&t, "user/".."user0").count();
/// let _ = tx.scan(&t, b"k"..).count();
/// let _ = tx.scan(&t, ..).count();
/// let from = b"a".to_vec();
/// let _ = tx.scan(&t, &from..=&from).count();
/// # Ok::<(), sluice::Error>(())
/// ```
pub trait KeyRange {
    /// The lower and upper bound, owned.
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>);
}

fn own<K: AsRef<[u8]>>(k: K) -> Vec<u8> {
    k.as_ref().to_vec()
}

impl<K: AsRef<[u8]>> KeyRange for Range<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (
            Bound::Included(own(self.start)),
            Bound::Excluded(own(self.end)),
        )
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeInclusive<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let (a, b) = self.into_inner();
        (Bound::Included(own(a)), Bound::Included(own(b)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeFrom<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Included(own(self.start)), Bound::Unbounded)
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeTo<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, Bound::Excluded(own(self.end)))
    }
}

impl<K: AsRef<[u8]>> KeyRange for RangeToInclusive<K> {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, Bound::Included(own(self.end)))
    }
}

impl KeyRange for RangeFull {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (Bound::Unbounded, Bound::Unbounded)
    }
}

impl<K: AsRef<[u8]>> KeyRange for (Bound<K>, Bound<K>) {
    fn into_bounds(self) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        (self.0.map(own), self.1.map(own))
    }
}
