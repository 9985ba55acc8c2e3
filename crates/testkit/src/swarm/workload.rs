//! The work of one session, and the oracle that watches it while it runs.
//!
//! Each client thread owns keys (`o{t}.NNN`) in both owned tables and keeps an exact
//! model of them: every read of an owned key — a `get`, the old value a `put` or
//! `delete` returns, a scan of the thread's whole range — must match the model with the
//! transaction's own uncommitted writes applied. A writing transaction may also transfer
//! an amount between two accounts (shared by all threads), and always inserts a marker
//! row (`m{t}.{session}.{i}`) into one to three marker tables, all or none of which a
//! recovered database must hold; with the seed's scratch share it also creates, drops or
//! renames the thread's scratch tables (`super::scratch`). Read-only audits scan every
//! account in one transaction
//! and must see the loaded total. The first broken rule stops the session.
//!
//! Locks are taken in one global order — accounts in (table, key) order by transfers and
//! audits alike, owned keys and markers by their owner alone, each thread's keys fenced
//! off from the next thread's by a key loaded at creation (`o{t}~`, `m{t}~`) so that no
//! gap is shared — so clients never deadlock and lock timeouts are rare.

use super::config::{Config, ACCT, INITIAL_BALANCE, MARK, MAX_THREADS, OWN};
pub(crate) use super::engine::Write;
use super::engine::{Ops, Rows, Tbl};
use super::scratch::{self, TableOp};
use crate::crash::{make_value, ValueShape};
use rand::rngs::StdRng;
use rand::Rng;
use sluice::{Durability, Error};

/// An account: (table index, key).
type Account = (usize, Vec<u8>);

/// A key owned by thread `t`.
pub(crate) fn owned_key(t: usize, k: u32) -> Vec<u8> {
    format!("o{t}.{k:03}").into_bytes()
}

/// The range of thread `t`'s owned keys: `[o{t}., o{t}/)`.
pub(crate) fn owned_range(t: usize) -> (Vec<u8>, Vec<u8>) {
    (format!("o{t}.").into_bytes(), format!("o{t}/").into_bytes())
}

/// The marker of thread `t`'s `i`-th transaction of session `s`.
pub(crate) fn marker_key(t: usize, s: usize, i: usize) -> Vec<u8> {
    format!("m{t}.{s}.{i:04}").into_bytes()
}

/// An account's key.
pub(crate) fn account_key(a: u32) -> Vec<u8> {
    format!("a{a:02}").into_bytes()
}

/// The rows loaded at creation: the accounts, and for every possible thread a fence after
/// its owned keys in each owned table, after its markers in each marker table, and (when
/// the seed draws them) after its scratch tables in the catalog.
pub(crate) fn initial_rows(cfg: &Config) -> Rows {
    let mut rows = Rows::new();
    for &t in &ACCT {
        for a in 0..cfg.accounts {
            rows.insert((t, account_key(a)), INITIAL_BALANCE.to_le_bytes().to_vec());
        }
    }
    for th in 0..MAX_THREADS {
        for &t in &OWN {
            rows.insert((t, format!("o{th}~").into_bytes()), b"fence".to_vec());
        }
        for &t in &MARK {
            rows.insert((t, format!("m{th}~").into_bytes()), b"fence".to_vec());
        }
    }
    scratch::initial_rows(cfg, &mut rows);
    rows
}

/// The sum every audit must see.
pub(crate) fn total(cfg: &Config) -> i64 {
    INITIAL_BALANCE * i64::from(cfg.accounts) * ACCT.len() as i64
}

/// A transaction whose commit was attempted.
#[derive(Debug, Clone)]
pub(crate) struct Attempt {
    /// Its number in its thread's session (its marker's).
    pub(crate) index: usize,
    /// Its writes to owned keys and its markers, in order (transfers are not modelled:
    /// the sums check them).
    pub(crate) writes: Vec<Write>,
    /// The commit returned (`false`: it failed, and the transaction may or may not
    /// have committed).
    pub(crate) acked: bool,
    /// It committed with [`Durability::Async`]: a crash may take it away even when
    /// acknowledged (as a suffix of the thread's commits).
    pub(crate) is_async: bool,
}

/// What one thread did in a session.
#[derive(Debug, Clone, Default)]
pub(crate) struct ThreadLog {
    /// Transactions whose commit was attempted, in order; at most the last is unacked.
    pub(crate) attempts: Vec<Attempt>,
    /// Markers of transactions that rolled back: never to be seen.
    pub(crate) rolled_back: Vec<Write>,
}

/// What a writing transaction does, drawn before it runs (so an agent's body is a
/// plain function of it).
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) index: usize,
    ops: Vec<OwnedOp>,
    /// (from, to, amount), `from < to`.
    transfer: Option<(Account, Account, i64)>,
    markers: Vec<usize>,
    marker: Vec<u8>,
    /// Roll back at the end: `Some(true)` by dropping the transaction.
    pub(super) rollback: Option<bool>,
    /// How it commits ([`Config::async_share`]).
    pub(super) durability: Durability,
    /// What it does to the thread's scratch tables ([`Config::scratch_share`]), after
    /// its operations on owned keys.
    pub(super) tables: Vec<TableOp>,
}

#[derive(Debug, Clone)]
pub(super) enum OwnedOp {
    Get(usize, Vec<u8>),
    Put(usize, Vec<u8>, Vec<u8>),
    Delete(usize, Vec<u8>),
    /// A scan of the thread's whole range of an owned table.
    Scan(usize),
}

/// A transaction's result as the body sees it: its writes, or the rule it broke.
pub(super) type Body = Result<Vec<Write>, String>;

/// Runs a writing transaction's operations on `tx`, checking every read of an owned key
/// against `model` with the transaction's own writes applied; `handles` are of the
/// scratch tables it drops or renames ([`scratch::needed`]).
pub(super) fn run_plan(
    tx: &mut impl Ops,
    tables: &[Tbl],
    handles: &[(String, Tbl)],
    t: usize,
    model: &Rows,
    plan: &Plan,
) -> Result<Body, Error> {
    tx.set_durability(plan.durability);
    let mut view = model.clone();
    let mut writes = Vec::new();
    let expect = |what: &str, key: &[u8], want: Option<&Vec<u8>>, got: Option<&Vec<u8>>| {
        if want == got {
            return Ok(());
        }
        Err(format!(
            "thread {t}'s transaction {}: {what} of its own key {} returned {} but its model holds {}",
            plan.index,
            String::from_utf8_lossy(key),
            show(got),
            show(want)
        ))
    };
    for op in &plan.ops {
        let r = match op {
            OwnedOp::Get(tb, k) => {
                let got = tx.get(&tables[*tb], k)?;
                expect("a get", k, view.get(&(*tb, k.clone())), got.as_ref())
            }
            OwnedOp::Put(tb, k, v) => {
                let old = tx.put(&tables[*tb], k, v)?;
                let r = expect("a put", k, view.get(&(*tb, k.clone())), old.as_ref());
                view.insert((*tb, k.clone()), v.clone());
                writes.push((*tb, k.clone(), Some(v.clone())));
                r
            }
            OwnedOp::Delete(tb, k) => {
                let old = tx.delete(&tables[*tb], k)?;
                let r = expect("a delete", k, view.get(&(*tb, k.clone())), old.as_ref());
                view.remove(&(*tb, k.clone()));
                writes.push((*tb, k.clone(), None));
                r
            }
            OwnedOp::Scan(tb) => {
                let (from, to) = owned_range(t);
                let got = tx.scan(&tables[*tb], Some((from.clone(), to.clone())))?;
                let want: Vec<(Vec<u8>, Vec<u8>)> = view
                    .range((*tb, from)..(*tb, to))
                    .map(|((_, k), v)| (k.clone(), v.clone()))
                    .collect();
                if got == want {
                    Ok(())
                } else {
                    Err(format!(
                        "thread {t}'s transaction {}: a scan of its own keys returned {} rows but its model holds {}; {}",
                        plan.index,
                        got.len(),
                        want.len(),
                        first_difference(&want, &got)
                    ))
                }
            }
        };
        if let Err(broke) = r {
            return Ok(Err(broke));
        }
    }
    let what = |m: String| format!("thread {t}'s transaction {}: {m}", plan.index);
    if let Err(broke) = scratch::run(tx, handles, &plan.tables, &mut writes, &what)? {
        return Ok(Err(broke));
    }
    if let Some((from, to, amount)) = &plan.transfer {
        // Both accounts locked for update in (table, key) order: the global order.
        let a = balance(tx.get_for_update(&tables[from.0], &from.1)?);
        let b = balance(tx.get_for_update(&tables[to.0], &to.1)?);
        let (Some(a), Some(b)) = (a, b) else {
            return Ok(Err(format!(
                "thread {t}'s transaction {}: an account is missing or not 8 bytes",
                plan.index
            )));
        };
        tx.put(&tables[from.0], &from.1, &(a - amount).to_le_bytes())?;
        tx.put(&tables[to.0], &to.1, &(b + amount).to_le_bytes())?;
    }
    for &m in &plan.markers {
        let old = tx.put(&tables[m], &plan.marker, &plan.marker)?;
        if old.is_some() {
            return Ok(Err(format!(
                "thread {t}'s transaction {}: its new marker {} already existed",
                plan.index,
                String::from_utf8_lossy(&plan.marker)
            )));
        }
        writes.push((m, plan.marker.clone(), Some(plan.marker.clone())));
    }
    Ok(Ok(writes))
}

fn balance(v: Option<Vec<u8>>) -> Option<i64> {
    Some(i64::from_le_bytes(v?.try_into().ok()?))
}

fn show(v: Option<&Vec<u8>>) -> String {
    match v {
        None => "nothing".into(),
        Some(v) => {
            let end = v.iter().position(|&b| b == b':').unwrap_or(v.len().min(24));
            format!("{}({} B)", String::from_utf8_lossy(&v[..end]), v.len())
        }
    }
}

fn first_difference(want: &[(Vec<u8>, Vec<u8>)], got: &[(Vec<u8>, Vec<u8>)]) -> String {
    let i = want
        .iter()
        .zip(got)
        .position(|(a, b)| a != b)
        .unwrap_or(want.len().min(got.len()));
    let key = |r: Option<&(Vec<u8>, Vec<u8>)>| {
        r.map_or("the end".to_string(), |(k, v)| {
            format!("{}={}", String::from_utf8_lossy(k), show(Some(v)))
        })
    };
    format!(
        "first difference at row {i}: model {} got {}",
        key(want.get(i)),
        key(got.get(i))
    )
}

/// An audit: every account in one read-only transaction, whose sum must be the total;
/// with `own_scan`, also a scan of the thread's range of that owned table, which must
/// match its model.
pub(super) fn audit(
    tx: &mut impl Ops,
    tables: &[Tbl],
    cfg: &Config,
    t: usize,
    model: &Rows,
    own_scan: Option<usize>,
) -> Result<Result<(), String>, Error> {
    let mut sum = 0i64;
    let mut n = 0;
    for &tb in &ACCT {
        for (k, v) in tx.scan(&tables[tb], None)? {
            let Some(b) = balance(Some(v)) else {
                return Ok(Err(format!(
                    "an audit read account {} of other than 8 bytes",
                    String::from_utf8_lossy(&k)
                )));
            };
            sum += b;
            n += 1;
        }
    }
    let (want_sum, want_n) = (total(cfg), cfg.accounts as usize * ACCT.len());
    if sum != want_sum || n != want_n {
        return Ok(Err(format!(
            "thread {t}'s audit saw {n} accounts summing to {sum}, not {want_n} summing to {want_sum}"
        )));
    }
    // Half the audits count the accounts too: `len` waits for every transfer in flight
    // on the table (the fast-path table locks moved into the lock table) and must see
    // the fixed number of accounts, as the scan did.
    if own_scan.is_some() {
        for &tb in &ACCT {
            let counted = tx.len(&tables[tb])?;
            if counted != u64::from(cfg.accounts) {
                return Ok(Err(format!(
                    "thread {t}'s audit counted {counted} accounts in table {tb}, not {}",
                    cfg.accounts
                )));
            }
        }
    }
    if let Some(tb) = own_scan {
        let (from, to) = owned_range(t);
        let got = tx.scan(&tables[tb], Some((from.clone(), to.clone())))?;
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .range((tb, from)..(tb, to))
            .map(|((_, k), v)| (k.clone(), v.clone()))
            .collect();
        if got != want {
            return Ok(Err(format!(
                "thread {t}'s audit: a scan of its own keys disagrees with its model; {}",
                first_difference(&want, &got)
            )));
        }
    }
    Ok(Ok(()))
}

/// Draws thread `t`'s `index`-th writing transaction, from the thread's committed state
/// `model`.
pub(super) fn draw_plan(
    rng: &mut StdRng,
    cfg: &Config,
    max_entry: usize,
    model: &Rows,
    t: usize,
    session: usize,
    index: usize,
) -> Plan {
    let mut ops = Vec::new();
    for op in 0..rng.gen_range(1..=5) {
        let tb = OWN[rng.gen_range(0..OWN.len())];
        let k = rng.gen_range(0..cfg.owned_keys);
        let key = owned_key(t, k);
        ops.push(match rng.gen_range(0..10) {
            0..=1 => OwnedOp::Get(tb, key),
            2 => OwnedOp::Delete(tb, key),
            3 => OwnedOp::Scan(tb),
            _ => {
                let shape = if rng.gen_bool(cfg.large.share) {
                    ValueShape::Large(
                        rng.gen_range(max_entry + 1..=max_entry * cfg.large.max_entries),
                    )
                } else {
                    let pad = if cfg.wide_values { max_entry / 2 } else { 60 };
                    ValueShape::Short(rng.gen_range(0..pad))
                };
                let tag = format!("{}.{session}.{t}.{index}.{op}", cfg.seed);
                OwnedOp::Put(tb, key, make_value(&tag, k, shape))
            }
        });
    }
    let transfer = rng.gen_bool(0.5).then(|| {
        let mut a = (
            ACCT[rng.gen_range(0..ACCT.len())],
            rng.gen_range(0..cfg.accounts),
        );
        let mut b = (
            ACCT[rng.gen_range(0..ACCT.len())],
            rng.gen_range(0..cfg.accounts),
        );
        if a == b {
            b.1 = (b.1 + 1) % cfg.accounts;
        }
        let amount = rng.gen_range(1..=30);
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        ((a.0, account_key(a.1)), (b.0, account_key(b.1)), amount)
    });
    let mut markers: Vec<usize> = MARK.iter().copied().filter(|_| rng.gen_bool(0.5)).collect();
    if markers.is_empty() {
        markers.push(MARK[rng.gen_range(0..MARK.len())]);
    }
    let rollback = rng.gen_bool(0.15).then(|| rng.gen_bool(0.5));
    // Only when the seed mixes them in, so that other seeds draw what they did before.
    let durability = if cfg.async_share > 0.0 && rng.gen_bool(cfg.async_share) {
        Durability::Async
    } else {
        Durability::Durable
    };
    // Drawn last, and only when the seed mixes them in, for the same reason.
    let tables = scratch::draw(rng, cfg, max_entry, model, (t, session, index));
    Plan {
        index,
        ops,
        transfer,
        markers,
        marker: marker_key(t, session, index),
        rollback,
        durability,
        tables,
    }
}

impl Plan {
    /// The writes the plan makes to owned keys, scratch tables and markers, in order.
    pub(super) fn writes(&self) -> Vec<Write> {
        let mut w: Vec<Write> = self
            .ops
            .iter()
            .filter_map(|op| match op {
                OwnedOp::Put(tb, k, v) => Some((*tb, k.clone(), Some(v.clone()))),
                OwnedOp::Delete(tb, k) => Some((*tb, k.clone(), None)),
                OwnedOp::Get(..) | OwnedOp::Scan(_) => None,
            })
            .collect();
        w.extend(self.tables.iter().flat_map(scratch::writes_of));
        w.extend(
            self.markers
                .iter()
                .map(|&m| (m, self.marker.clone(), Some(self.marker.clone()))),
        );
        w
    }

    pub(super) fn marker_writes(&self) -> Vec<Write> {
        self.markers
            .iter()
            .map(|&m| (m, self.marker.clone(), Some(self.marker.clone())))
            .collect()
    }
}
