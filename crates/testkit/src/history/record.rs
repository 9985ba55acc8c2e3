//! What a history holds: every transaction a run began, the operations it ran with what
//! each returned, and how it ended. Written values are unique (each names its writer
//! transaction and operation, [`ValueId`]), so every read names the write it saw.

use sluice::Lsn;
use std::fmt;
use std::ops::Bound;

/// A transaction of a history: every attempt gets its own number (the engine's
/// `TxnId` is not unique across a run's agents and direct transactions, and a retried
/// body would reuse nothing anyway: the workload does not retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TxnNo(pub u64);

impl fmt::Display for TxnNo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.0)
    }
}

/// The identity of a written value: its writer and the index of the operation in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId {
    /// The writer.
    pub txn: TxnNo,
    /// The writer's operation that wrote it.
    pub op: u32,
}

impl fmt::Display for ValueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.txn, self.op)
    }
}

/// A value as read back: the write it names, or bytes that name none (a value the
/// workload never wrote, or one damaged on the way).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Val {
    /// A value the workload wrote, byte for byte.
    Id(ValueId),
    /// Bytes no write of the workload produced (summarised).
    Garbled(String),
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Id(v) => write!(f, "{v}"),
            Val::Garbled(s) => write!(f, "garbled({s})"),
        }
    }
}

/// Shows a read of one key: a value, or `absent`.
pub fn show_read(r: &Option<Val>) -> String {
    r.as_ref()
        .map_or_else(|| "absent".to_string(), Val::to_string)
}

/// A key of one of the run's tables.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The table's index in the run (0 or 1).
    pub table: u8,
    /// The key's bytes (short printable names).
    pub key: Vec<u8>,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t{}/{}", self.table, String::from_utf8_lossy(&self.key))
    }
}

/// How a scan's range was written (each form goes through its own `KeyRange` impl).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// `..`
    Full,
    /// `a..`
    From,
    /// `..b`
    To,
    /// `..=b`
    ToInclusive,
    /// `a..b`
    Range,
    /// `a..=b`
    RangeInclusive,
    /// A pair of `Bound`s (excluded lower bounds only exist this way).
    Bounds,
    /// `scan_prefix(p)`
    Prefix(Vec<u8>),
}

/// The keys a scan covers, and how it was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The lower bound.
    pub from: Bound<Vec<u8>>,
    /// The upper bound.
    pub to: Bound<Vec<u8>>,
    /// The syntax used.
    pub form: Form,
}

impl Span {
    /// Whether `key` is in the span.
    pub fn contains(&self, key: &[u8]) -> bool {
        if let Form::Prefix(p) = &self.form {
            return key.starts_with(p);
        }
        let above = match &self.from {
            Bound::Included(a) => key >= a.as_slice(),
            Bound::Excluded(a) => key > a.as_slice(),
            Bound::Unbounded => true,
        };
        let below = match &self.to {
            Bound::Included(b) => key <= b.as_slice(),
            Bound::Excluded(b) => key < b.as_slice(),
            Bound::Unbounded => true,
        };
        above && below
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = |b: &Vec<u8>| String::from_utf8_lossy(b).into_owned();
        let bound = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) => format!("Included({})", s(k)),
            Bound::Excluded(k) => format!("Excluded({})", s(k)),
            Bound::Unbounded => "Unbounded".to_string(),
        };
        let end = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) | Bound::Excluded(k) => s(k),
            Bound::Unbounded => String::new(),
        };
        match &self.form {
            Form::Prefix(p) => write!(f, "prefix {:?}", s(p)),
            Form::Full => write!(f, ".."),
            Form::From => write!(f, "{}..", end(&self.from)),
            Form::To => write!(f, "..{}", end(&self.to)),
            Form::ToInclusive => write!(f, "..={}", end(&self.to)),
            Form::Range => write!(f, "{}..{}", end(&self.from), end(&self.to)),
            Form::RangeInclusive => write!(f, "{}..={}", end(&self.from), end(&self.to)),
            Form::Bounds => write!(f, "({}, {})", bound(&self.from), bound(&self.to)),
        }
    }
}

/// One operation of a transaction and what it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `get` (or `get_for_update` when `for_update`).
    Get {
        /// The key.
        key: Key,
        /// Read under record X.
        for_update: bool,
        /// What it returned.
        got: Option<Val>,
    },
    /// `put`: wrote `value` (`len` bytes; above the leaf limit it is stored in chunks).
    Put {
        /// The key.
        key: Key,
        /// The value written.
        value: ValueId,
        /// Its length in bytes.
        len: usize,
        /// The value it replaced, as `put` returned it.
        prev: Option<Val>,
    },
    /// `delete`.
    Delete {
        /// The key.
        key: Key,
        /// The value it removed, as `delete` returned it (`None`: the key was absent and
        /// nothing was written).
        prev: Option<Val>,
    },
    /// `scan` or `scan_prefix`: the entries it returned, in order.
    Scan {
        /// The table.
        table: u8,
        /// The keys it covers.
        span: Span,
        /// What it returned.
        seen: Vec<(Vec<u8>, Val)>,
    },
    /// `len`: the number of entries the transaction saw in the table (its own
    /// uncommitted changes included).
    Len {
        /// The table.
        table: u8,
        /// What it returned.
        got: u64,
    },
    /// `retain`: the entries its predicate saw and the keys it rejected (deleted).
    Retain {
        /// The table.
        table: u8,
        /// The keys it covers.
        span: Span,
        /// Every entry the predicate was called with, in order.
        seen: Vec<(Vec<u8>, Val)>,
        /// The keys the predicate rejected.
        deleted: Vec<Vec<u8>>,
        /// The count `retain` returned.
        reported: u64,
    },
}

fn show_entries(seen: &[(Vec<u8>, Val)]) -> String {
    let items: Vec<String> = seen
        .iter()
        .map(|(k, v)| format!("{}={v}", String::from_utf8_lossy(k)))
        .collect();
    format!("[{}]", items.join(", "))
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Get {
                key,
                for_update,
                got,
            } => {
                let name = if *for_update { "get_for_update" } else { "get" };
                write!(f, "{name}({key}) -> {}", show_read(got))
            }
            Op::Put {
                key,
                value,
                len,
                prev,
            } => write!(f, "put({key}, {value} [{len} B]) -> {}", show_read(prev)),
            Op::Delete { key, prev } => write!(f, "delete({key}) -> {}", show_read(prev)),
            Op::Scan { table, span, seen } => {
                write!(f, "scan(t{table}, {span}) -> {}", show_entries(seen))
            }
            Op::Len { table, got } => write!(f, "len(t{table}) -> {got}"),
            Op::Retain {
                table,
                span,
                seen,
                deleted,
                reported,
            } => {
                let d: Vec<_> = deleted
                    .iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect();
                write!(
                    f,
                    "retain(t{table}, {span}) saw {} deleted [{}] -> {reported}",
                    show_entries(seen),
                    d.join(", ")
                )
            }
        }
    }
}

/// How a transaction ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// Committed; `lsn` is the end of its commit record (`None`: it logged nothing).
    Committed {
        /// The commit record's end LSN.
        lsn: Option<Lsn>,
    },
    /// Rolled back on purpose.
    RolledBack,
    /// Dropped without commit or rollback (the engine rolls it back).
    Dropped,
    /// Failed (a deadlock victim, a lock timeout) and rolled back.
    Aborted(String),
}

impl End {
    /// Whether it committed.
    pub fn committed(&self) -> bool {
        matches!(self, End::Committed { .. })
    }
}

impl fmt::Display for End {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            End::Committed { lsn: Some(l) } => write!(f, "committed at LSN {}", l.0),
            End::Committed { lsn: None } => write!(f, "committed (read-only)"),
            End::RolledBack => write!(f, "rolled back"),
            End::Dropped => write!(f, "dropped"),
            End::Aborted(why) => write!(f, "aborted: {why}"),
        }
    }
}

/// One transaction: its operations in the order they ran, and its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// Its number in the history.
    pub no: TxnNo,
    /// The client thread that ran it.
    pub client: usize,
    /// Its operations, each with what it returned (an operation that failed is not
    /// listed: its failure is the transaction's end).
    pub ops: Vec<Op>,
    /// How it ended.
    pub end: End,
}

/// A run's history: every transaction, and the key universe of its tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// Every transaction begun, in no particular order.
    pub txns: Vec<Txn>,
    /// The keys each table may hold (the workload writes no others), sorted.
    pub keys: Vec<Vec<u8>>,
    /// The number of tables.
    pub tables: u8,
}

impl History {
    /// How op `op` of `txn` scanned, if it is a scan or a `retain`
    /// (`scan(t0, a..=d)`), for reports.
    pub fn scan_of(&self, txn: TxnNo, op: usize) -> Option<String> {
        let t = self.txns.iter().find(|t| t.no == txn)?;
        match t.ops.get(op)? {
            Op::Scan { table, span, .. } => Some(format!("scan(t{table}, {span})")),
            Op::Retain { table, span, .. } => Some(format!("retain(t{table}, {span})")),
            _ => None,
        }
    }

    /// Every key of every table.
    pub fn universe(&self) -> impl Iterator<Item = Key> + '_ {
        (0..self.tables).flat_map(move |t| {
            self.keys.iter().map(move |k| Key {
                table: t,
                key: k.clone(),
            })
        })
    }
}

/// The bytes of value `id`, `len` bytes long (or as long as its header, if that is
/// longer): a header naming it and its length, then filler drawn from it, so a value cut
/// short, spliced or swapped with another's chunks names no write.
pub fn encode_value(id: ValueId, len: usize) -> Vec<u8> {
    let header = |len: usize| format!("v{}.{}.{len};", id.txn.0, id.op);
    let mut len = len;
    while header(len).len() > len {
        len = header(len).len();
    }
    let mut v = header(len).into_bytes();
    let mut x = (id.txn.0 << 20) ^ u64::from(id.op) ^ 0x9E37_79B9_7F4A_7C15;
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v
}

/// The write a value's bytes name, if they are exactly what [`encode_value`] made for it.
pub fn decode_value(bytes: &[u8]) -> Val {
    let garbled = || {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(24)]).into_owned();
        Val::Garbled(format!("{} bytes {head:?}", bytes.len()))
    };
    let Some(end) = bytes.iter().position(|&b| b == b';') else {
        return garbled();
    };
    let Some(head) = std::str::from_utf8(&bytes[..end])
        .ok()
        .and_then(|h| h.strip_prefix('v'))
    else {
        return garbled();
    };
    let mut parts = head.split('.');
    let (Some(t), Some(o), Some(l), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return garbled();
    };
    let (Ok(txn), Ok(op), Ok(len)) = (t.parse::<u64>(), o.parse::<u32>(), l.parse::<usize>())
    else {
        return garbled();
    };
    let id = ValueId {
        txn: TxnNo(txn),
        op,
    };
    if len != bytes.len() || encode_value(id, len) != bytes {
        return garbled();
    }
    Val::Id(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_damage_shows() {
        let id = ValueId {
            txn: TxnNo(42),
            op: 3,
        };
        for len in [0, 10, 300, 5000] {
            let v = encode_value(id, len);
            assert!(v.len() >= len && v.len() <= len.max(12));
            assert_eq!(decode_value(&v), Val::Id(id));
            let mut bad = v.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            assert!(matches!(decode_value(&bad), Val::Garbled(_)));
            assert!(matches!(decode_value(&v[..last]), Val::Garbled(_)));
        }
        assert!(matches!(decode_value(b"hello"), Val::Garbled(_)));
    }

    #[test]
    fn spans_contain_what_their_form_says() {
        let k = |s: &str| s.as_bytes().to_vec();
        let span = Span {
            from: Bound::Excluded(k("b")),
            to: Bound::Included(k("d")),
            form: Form::Bounds,
        };
        assert!(!span.contains(b"b") && span.contains(b"ba") && span.contains(b"d"));
        assert!(!span.contains(b"da"));
        let p = Span {
            from: Bound::Included(k("ab")),
            to: Bound::Excluded(k("ac")),
            form: Form::Prefix(k("ab")),
        };
        assert!(p.contains(b"ab") && p.contains(b"abc") && !p.contains(b"a"));
    }
}
