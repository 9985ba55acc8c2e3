//! What one transaction of the workload does: its operations, drawn at random and
//! recorded with what each returned.
//!
//! Two tables share one small key universe of names over `a`..`d` (one to three
//! letters, so names are each other's prefixes and `scan_prefix` matters). Each
//! transaction runs point reads (`get`, `get_for_update`), scans in every range form and
//! by prefix, `retain`, puts (short, medium, and larger than the leaf limit, stored in
//! chunks) and deletes; a fifth of them scan a range, insert a key into it that the scan
//! did not see, and scan the range again (the shape of a phantom). Most commit; some
//! roll back, some are dropped unfinished. Every written value is unique
//! ([`encode_value`]), so every read names its writer, and `put` / `delete` return the
//! value they replaced, which chains each write to the version it overwrote.

use super::record::{decode_value, encode_value, Form, Key, Op, Span, TxnNo, Val, ValueId};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use sluice::{Error, Table, Transaction};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

/// The tables of a run.
pub const TABLES: [&str; 2] = ["h0", "h1"];
/// Every name of one to three letters over `a`..`d`, in order (84).
pub(super) fn names() -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for a in b'a'..=b'd' {
        all.push(vec![a]);
        for b in b'a'..=b'd' {
            all.push(vec![a, b]);
            for c in b'a'..=b'd' {
                all.push(vec![a, b, c]);
            }
        }
    }
    all.sort();
    all
}

/// What every client shares.
pub(super) struct Ctx {
    pub(super) tables: Vec<Table>,
    pub(super) keys: Vec<Vec<u8>>,
    pub(super) names: Vec<Vec<u8>>,
    /// The smallest value length stored apart from the leaf (for the longest key).
    pub(super) large_from: usize,
    pub(super) next: AtomicU64,
}

impl Ctx {
    pub(super) fn txn_no(&self) -> TxnNo {
        TxnNo(self.next.fetch_add(1, Ordering::Relaxed))
    }

    fn key(&self, rng: &mut StdRng) -> Vec<u8> {
        self.keys[rng.gen_range(0..self.keys.len())].clone()
    }

    /// A bound: mostly a key of the universe, sometimes any name (a bound between keys).
    fn bound_key(&self, rng: &mut StdRng) -> Vec<u8> {
        if rng.gen_bool(0.25) {
            self.names[rng.gen_range(0..self.names.len())].clone()
        } else {
            self.key(rng)
        }
    }

    fn span(&self, rng: &mut StdRng) -> Span {
        let (mut a, mut b) = (self.bound_key(rng), self.bound_key(rng));
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        let (inc, exc) = (Bound::Included, Bound::Excluded);
        let (from, to, form) = match rng.gen_range(0..16) {
            0 => (Bound::Unbounded, Bound::Unbounded, Form::Full),
            1 => (inc(a), Bound::Unbounded, Form::From),
            2 => (Bound::Unbounded, exc(b), Form::To),
            3 => (Bound::Unbounded, inc(b), Form::ToInclusive),
            4..=6 => (inc(a), exc(b), Form::Range),
            7..=10 => (inc(a), inc(b), Form::RangeInclusive),
            11..=12 => {
                let from = match rng.gen_range(0..3) {
                    0 => inc(a),
                    1 => exc(a),
                    _ => Bound::Unbounded,
                };
                let to = match rng.gen_range(0..3) {
                    0 => inc(b),
                    1 => exc(b),
                    _ => Bound::Unbounded,
                };
                (from, to, Form::Bounds)
            }
            _ => {
                let p = match rng.gen_range(0..4) {
                    0 => a[..1].to_vec(),
                    1 => a[..a.len().min(2)].to_vec(),
                    2 => a,
                    _ => Vec::new(),
                };
                (inc(p.clone()), Bound::Unbounded, Form::Prefix(p))
            }
        };
        Span { from, to, form }
    }
}

fn as_slice(b: &Bound<Vec<u8>>) -> &[u8] {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => &[],
    }
}

/// Scans `span` through the range syntax its form names (each is its own `KeyRange`
/// impl).
pub(super) fn scan(
    tx: &mut Transaction,
    t: &Table,
    span: &Span,
    walk: Walk,
) -> Result<Vec<(Vec<u8>, Val)>, Error> {
    let (a, b) = (as_slice(&span.from), as_slice(&span.to));
    let it = match &span.form {
        Form::Full => tx.scan(t, ..),
        Form::From => tx.scan(t, a..),
        Form::To => tx.scan(t, ..b),
        Form::ToInclusive => tx.scan(t, ..=b),
        Form::Range => tx.scan(t, a..b),
        Form::RangeInclusive => tx.scan(t, a..=b),
        Form::Bounds => tx.scan(t, (span.from.clone(), span.to.clone())),
        Form::Prefix(p) => tx.scan_prefix(t, p),
    };
    let entry = |e: Result<(Vec<u8>, Vec<u8>), Error>| e.map(|(k, v)| (k, decode_value(&v)));
    match walk {
        Walk::Forward => it.map(entry).collect(),
        Walk::Reverse => {
            let mut seen: Vec<_> = it.rev().map(entry).collect::<Result<_, _>>()?;
            seen.reverse();
            Ok(seen)
        }
        Walk::Mixed(seed) => {
            // Runs of `next` and `next_back`, long enough to cross batches at times.
            let mut coin = StdRng::seed_from_u64(seed);
            let (mut low, mut high) = (Vec::new(), Vec::new());
            let mut it = it;
            loop {
                let forward = coin.gen_bool(0.5);
                let e = if forward { it.next() } else { it.next_back() };
                let Some(e) = e else { break };
                let e = entry(e)?;
                if forward { &mut low } else { &mut high }.push(e);
            }
            high.reverse();
            low.extend(high);
            Ok(low)
        }
    }
}

/// How a scan is read, a dimension of the run: forwards, backwards (`.rev()`), or both
/// ends at once until they meet. Each hands its entries to the checks in key order, so
/// an entry missed, repeated or out of order in any walk fails them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Walk {
    Forward,
    Reverse,
    Mixed(u64),
}

impl Walk {
    pub(super) fn pick(rng: &mut StdRng) -> Walk {
        match rng.gen_range(0..3) {
            0 => Walk::Forward,
            1 => Walk::Reverse,
            _ => Walk::Mixed(rng.gen()),
        }
    }
}

/// `retain` over `span` (a prefix goes as its bounds: `retain` has no prefix form),
/// deleting a random share of what it sees.
fn retain(tx: &mut Transaction, t: &Table, span: &Span, rng: &mut StdRng) -> Result<Op, Error> {
    let (a, b) = (as_slice(&span.from), as_slice(&span.to));
    let mut seen = Vec::new();
    let mut deleted = Vec::new();
    let share = rng.gen_range(0.2..0.8);
    let mut coin = StdRng::seed_from_u64(rng.gen());
    let mut keep = |k: &[u8], v: &[u8]| {
        seen.push((k.to_vec(), decode_value(v)));
        let keep = coin.gen_bool(1.0 - share);
        if !keep {
            deleted.push(k.to_vec());
        }
        keep
    };
    let reported = match &span.form {
        Form::Full => tx.retain(t, .., &mut keep),
        Form::From => tx.retain(t, a.., &mut keep),
        Form::To => tx.retain(t, ..b, &mut keep),
        Form::ToInclusive => tx.retain(t, ..=b, &mut keep),
        Form::Range => tx.retain(t, a..b, &mut keep),
        Form::RangeInclusive => tx.retain(t, a..=b, &mut keep),
        Form::Bounds | Form::Prefix(_) => {
            tx.retain(t, (span.from.clone(), span.to.clone()), &mut keep)
        }
    }?;
    Ok(Op::Retain {
        table: tables_index(t),
        span: span.clone(),
        seen,
        deleted,
        reported,
    })
}

fn tables_index(t: &Table) -> u8 {
    TABLES.iter().position(|n| *n == t.name()).unwrap_or(0) as u8
}

/// How a body wants its transaction to end.
pub(super) enum Ending {
    Commit,
    Rollback,
    Drop,
}

/// A transaction's body as it runs: its transaction, the run's context, its random
/// choices, its number, and the operations it has recorded so far (an operation that
/// fails leaves no entry: its error ends the transaction).
pub(super) struct Work<'a> {
    pub(super) tx: &'a mut Transaction,
    pub(super) ctx: &'a Ctx,
    pub(super) rng: &'a mut StdRng,
    pub(super) no: TxnNo,
    pub(super) ops: &'a mut Vec<Op>,
}

/// One transaction's work, recorded as it goes.
pub(super) fn body(w: &mut Work) -> Result<Ending, Error> {
    if w.rng.gen_bool(0.2) {
        w.scan_insert_scan()?;
    } else {
        for _ in 0..w.rng.gen_range(1..=6) {
            w.random_op()?;
        }
    }
    Ok(match w.rng.gen_range(0..20) {
        0..=1 => Ending::Rollback,
        2 => Ending::Drop,
        _ => Ending::Commit,
    })
}

impl Work<'_> {
    /// A table of the run, at random: its index.
    fn table(&mut self) -> usize {
        self.rng.gen_range(0..self.ctx.tables.len())
    }

    /// Scans `span` of table `ti` and records what it saw.
    pub(super) fn scan(&mut self, ti: usize, span: Span) -> Result<(), Error> {
        let walk = Walk::pick(self.rng);
        let seen = scan(self.tx, &self.ctx.tables[ti], &span, walk)?;
        self.scanned(ti, span, seen);
        Ok(())
    }

    fn scanned(&mut self, ti: usize, span: Span, seen: Vec<(Vec<u8>, Val)>) {
        self.ops.push(Op::Scan {
            table: ti as u8,
            span,
            seen,
        });
    }

    /// Scan a range, insert a key of it the scan did not see, maybe one more operation,
    /// and scan the range again: the repeat must see the same entries plus the insert.
    fn scan_insert_scan(&mut self) -> Result<(), Error> {
        let ti = self.table();
        let ctx = self.ctx;
        let span = ctx.span(self.rng);
        let walk = Walk::pick(self.rng);
        let seen = scan(self.tx, &ctx.tables[ti], &span, walk)?;
        let unseen: Vec<&Vec<u8>> = ctx
            .keys
            .iter()
            .filter(|k| span.contains(k) && !seen.iter().any(|(s, _)| s == *k))
            .collect();
        let target = unseen.choose(self.rng).map(|k| (*k).clone());
        self.scanned(ti, span.clone(), seen);
        if let Some(k) = target {
            self.put(ti, k)?;
        }
        if self.rng.gen_bool(0.5) {
            self.random_op()?;
        }
        self.scan(ti, span)
    }

    /// Puts `key` into table `ti` with a fresh value of a random size, and records it
    /// with the value it replaced.
    pub(super) fn put(&mut self, ti: usize, key: Vec<u8>) -> Result<(), Error> {
        let id = ValueId {
            txn: self.no,
            op: self.ops.len() as u32,
        };
        let (ctx, rng) = (self.ctx, &mut *self.rng);
        // Short, medium (a few per leaf: the tables outgrow a small pool) and large
        // (stored apart, in chunks).
        let len = match rng.gen_range(0..10) {
            0 => rng.gen_range(ctx.large_from..=ctx.large_from * 3),
            1..=4 => rng.gen_range(64..=ctx.large_from / 2),
            _ => rng.gen_range(16..64),
        };
        let bytes = encode_value(id, len);
        let prev = self.tx.put(&ctx.tables[ti], &key, &bytes)?;
        self.ops.push(Op::Put {
            key: Key {
                table: ti as u8,
                key,
            },
            value: id,
            len: bytes.len(),
            prev: prev.map(|p| decode_value(&p)),
        });
        Ok(())
    }

    fn random_op(&mut self) -> Result<(), Error> {
        let ti = self.table();
        let ctx = self.ctx;
        let t = &ctx.tables[ti];
        let key = ctx.key(self.rng);
        let k = |key: Vec<u8>| Key {
            table: ti as u8,
            key,
        };
        let tx = &mut *self.tx;
        match self.rng.gen_range(0..100) {
            0..=19 => {
                let got = tx.get(t, &key)?.map(|v| decode_value(&v));
                self.ops.push(Op::Get {
                    key: k(key),
                    for_update: false,
                    got,
                });
            }
            20..=29 => {
                let got = tx.get_for_update(t, &key)?.map(|v| decode_value(&v));
                self.ops.push(Op::Get {
                    key: k(key),
                    for_update: true,
                    got,
                });
            }
            30..=44 => {
                let span = ctx.span(self.rng);
                self.scan(ti, span)?;
            }
            45..=47 => {
                // `first` or `last`: a scan from the table's end to the key it returns
                // (the keys and gaps it locks), which saw that one entry.
                let last = self.rng.gen_bool(0.5);
                let end = if last { tx.last(t)? } else { tx.first(t)? };
                let (span, seen) = match end {
                    None => {
                        let span = Span {
                            from: Bound::Unbounded,
                            to: Bound::Unbounded,
                            form: Form::Full,
                        };
                        (span, Vec::new())
                    }
                    Some((k, v)) => {
                        let (from, to) = if last {
                            (Bound::Included(k.clone()), Bound::Unbounded)
                        } else {
                            (Bound::Unbounded, Bound::Included(k.clone()))
                        };
                        let span = Span {
                            from,
                            to,
                            form: Form::Bounds,
                        };
                        (span, vec![(k, decode_value(&v))])
                    }
                };
                self.scanned(ti, span, seen);
            }
            48..=52 => {
                let mut span = ctx.span(self.rng);
                if let Form::Prefix(p) = &span.form {
                    // The bounds `scan_prefix` would use, spelt out for `retain`.
                    span.to = match p.iter().rposition(|&b| b != 0xFF) {
                        Some(i) => {
                            let mut end = p[..=i].to_vec();
                            end[i] += 1;
                            Bound::Excluded(end)
                        }
                        None => Bound::Unbounded,
                    };
                }
                let op = retain(tx, t, &span, self.rng)?;
                self.ops.push(op);
            }
            53..=84 => self.put(ti, key)?,
            85..=87 => {
                // The table's count: its lock waits for every other writer of the table
                // and holds new ones off (the strong table lock, which moves the weak
                // ones other transactions took on the fast path).
                let got = tx.len(t)?;
                self.ops.push(Op::Len {
                    table: ti as u8,
                    got,
                });
            }
            _ => {
                let prev = tx.delete(t, &key)?.map(|v| decode_value(&v));
                self.ops.push(Op::Delete { key: k(key), prev });
            }
        }
        Ok(())
    }
}
