//! TPC-B as docs/BENCHMARKS.md defines it.
//!
//! Tables (SF = scale factor = branches): `branch` SF rows, `teller` 10·SF, `account`
//! 100,000·SF, `history` append-only. Rows are padded to 100 bytes (history 50); balances
//! are `i64`, starting at 0. Keys are big-endian ids so that key order is id order.
//!
//! One transaction: pick a teller, its branch, an account (85 % in that branch, 15 % in
//! another when SF > 1), a delta in ±999,999; update the account (returning its balance),
//! insert a history row, update the teller, update the branch, commit.

use crate::knobs::in_range;
use rand::Rng;
use rand_distr::{Distribution, Zipf};
use sluice::{Database, Error, Table, Transaction};

/// Tellers per branch.
pub const TELLERS_PER_BRANCH: u32 = 10;
/// Accounts per branch.
pub const ACCOUNTS_PER_BRANCH: u32 = 100_000;
const ROW: usize = 100;
const HISTORY_ROW: usize = 50;

/// How the workload picks its rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TpcbShape {
    /// Branches.
    pub scale: u32,
    /// Zipf exponent for account, teller and branch choice (0 = uniform).
    pub skew: f64,
    /// Only accounts of the teller's own branch (the original experiments).
    pub local_only: bool,
    /// Accounts per branch (100,000 by the definition; smaller only in tests).
    pub accounts_per_branch: u32,
}

impl TpcbShape {
    /// The standard shape at `scale` branches, uniform.
    pub fn standard(scale: u32) -> TpcbShape {
        TpcbShape {
            scale,
            skew: 0.0,
            local_only: false,
            accounts_per_branch: ACCOUNTS_PER_BRANCH,
        }
    }
    fn tellers(&self) -> u32 {
        self.scale * TELLERS_PER_BRANCH
    }
    fn accounts(&self) -> u32 {
        self.scale * self.accounts_per_branch
    }
}

/// The four tables.
#[derive(Clone)]
pub struct TpcbTables {
    /// `branch`.
    pub branch: Table,
    /// `teller`.
    pub teller: Table,
    /// `account`.
    pub account: Table,
    /// `history`.
    pub history: Table,
}

impl TpcbTables {
    /// Opens the tables of a loaded database.
    pub fn open(db: &Database) -> Result<TpcbTables, Error> {
        Ok(TpcbTables {
            branch: db.table("branch")?,
            teller: db.table("teller")?,
            account: db.table("account")?,
            history: db.table("history")?,
        })
    }
}

/// One transaction's inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TpcbInput {
    /// Account id.
    pub account: u32,
    /// Teller id.
    pub teller: u32,
    /// Branch id (the teller's).
    pub branch: u32,
    /// Amount added to all three balances.
    pub delta: i64,
    /// Unique id of this transaction's history row.
    pub history_id: u64,
}

/// Draws transaction inputs.
pub struct TpcbGenerator {
    shape: TpcbShape,
    teller_zipf: Zipf<f64>,
    account_zipf: Zipf<f64>,
}

impl TpcbGenerator {
    /// A generator for `shape`. Fails on a negative or non-finite skew.
    pub fn new(shape: TpcbShape) -> Result<TpcbGenerator, String> {
        in_range("skew", shape.skew, 0.0..)?;
        in_range("scale", shape.scale, 1..)?;
        in_range("accounts per branch", shape.accounts_per_branch, 1..)?;
        let z = |n: u32| Zipf::new(n as u64, shape.skew).map_err(|e| format!("skew: {e}"));
        Ok(TpcbGenerator {
            shape,
            teller_zipf: z(shape.tellers())?,
            account_zipf: z(shape.accounts_per_branch)?,
        })
    }

    /// The next input; `history_id` must be unique across all transactions of a run.
    pub fn next(&self, rng: &mut impl Rng, history_id: u64) -> TpcbInput {
        let s = &self.shape;
        let teller = self.teller_zipf.sample(rng) as u32 - 1;
        let branch = teller / TELLERS_PER_BRANCH;
        let account_branch = if s.scale > 1 && !s.local_only && rng.gen_ratio(15, 100) {
            let other = rng.gen_range(0..s.scale - 1);
            if other >= branch {
                other + 1
            } else {
                other
            }
        } else {
            branch
        };
        let account =
            account_branch * s.accounts_per_branch + self.account_zipf.sample(rng) as u32 - 1;
        debug_assert!(account < s.accounts());
        TpcbInput {
            account,
            teller,
            branch,
            delta: rng.gen_range(-999_999..=999_999),
            history_id,
        }
    }
}

/// The key of row `id` of a TPC-B table (big-endian, so scans go in id order).
pub fn key(id: u32) -> [u8; 4] {
    id.to_be_bytes()
}

/// A 100-byte row: owner id (branch of a teller/account), balance, padding.
fn row(owner: u32, balance: i64) -> [u8; ROW] {
    let mut r = [b' '; ROW];
    r[..4].copy_from_slice(&owner.to_le_bytes());
    r[4..12].copy_from_slice(&balance.to_le_bytes());
    r
}

fn parse_row(v: &[u8]) -> Result<(u32, i64), Error> {
    if v.len() != ROW {
        return Err(Error::Corruption(format!("TPC-B row of {} bytes", v.len())));
    }
    Ok((
        u32::from_le_bytes(v[..4].try_into().unwrap()),
        i64::from_le_bytes(v[4..12].try_into().unwrap()),
    ))
}

fn history_row(i: &TpcbInput) -> [u8; HISTORY_ROW] {
    let mut r = [b' '; HISTORY_ROW];
    r[..4].copy_from_slice(&i.account.to_le_bytes());
    r[4..8].copy_from_slice(&i.teller.to_le_bytes());
    r[8..12].copy_from_slice(&i.branch.to_le_bytes());
    r[12..20].copy_from_slice(&i.delta.to_le_bytes());
    r
}

/// Creates and fills the tables, `batch` rows per load transaction. `progress` gets the
/// fraction loaded.
pub fn load(
    db: &Database,
    shape: &TpcbShape,
    mut progress: impl FnMut(f64),
) -> Result<TpcbTables, Error> {
    let t = TpcbTables {
        branch: db.create_table("branch")?,
        teller: db.create_table("teller")?,
        account: db.create_table("account")?,
        history: db.create_table("history")?,
    };
    const BATCH: u32 = 5_000;
    let mut tx = db.begin();
    for b in 0..shape.scale {
        tx.put(&t.branch, key(b), row(b, 0))?;
    }
    for te in 0..shape.tellers() {
        tx.put(&t.teller, key(te), row(te / TELLERS_PER_BRANCH, 0))?;
    }
    tx.commit()?;
    let total = shape.accounts();
    let mut a = 0;
    while a < total {
        let mut tx = db.begin();
        let end = (a + BATCH).min(total);
        for id in a..end {
            tx.put(&t.account, key(id), row(id / shape.accounts_per_branch, 0))?;
        }
        tx.commit()?;
        a = end;
        progress(a as f64 / total as f64);
    }
    // No checkpoint here: one would make the first change to every page in the
    // measured runs log a full page image (torn-page protection), and the runs would
    // measure that burst instead of the commit path.
    Ok(t)
}

fn update_balance(tx: &mut Transaction, table: &Table, id: u32, delta: i64) -> Result<i64, Error> {
    let k = key(id);
    let v = tx
        .get_for_update(table, k)?
        .ok_or_else(|| Error::NotFound(format!("TPC-B row {id} in {}", table.name())))?;
    let (owner, bal) = parse_row(&v)?;
    let new = bal + delta;
    tx.put(table, k, row(owner, new))?;
    Ok(new)
}

/// The transaction body (without commit): returns the account's new balance.
pub fn run(tx: &mut Transaction, t: &TpcbTables, i: &TpcbInput) -> Result<i64, Error> {
    let balance = update_balance(tx, &t.account, i.account, i.delta)?;
    tx.put(&t.history, i.history_id.to_be_bytes(), history_row(i))?;
    update_balance(tx, &t.teller, i.teller, i.delta)?;
    update_balance(tx, &t.branch, i.branch, i.delta)?;
    Ok(balance)
}

/// What the consistency check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Consistency {
    /// Σ account balances.
    pub account_sum: i64,
    /// Σ teller balances.
    pub teller_sum: i64,
    /// Σ branch balances.
    pub branch_sum: i64,
    /// Σ history deltas.
    pub history_sum: i64,
    /// History rows.
    pub history_rows: u64,
    /// Identities that failed, described.
    pub violations: Vec<String>,
}

impl Consistency {
    /// True if every identity held.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }
}

/// The consistency check, fed row by row from any engine: sluice's [`check`] feeds it
/// from scans, and the peer engines of `sluice compare` from their own tables, so every
/// engine is judged by the same identities.
#[derive(Debug, Default)]
pub struct Tally {
    c: Consistency,
    branch_bal: Vec<i64>,
    teller_bal: Vec<i64>,
    teller_branch: Vec<u32>,
    hist_branch: Vec<i64>,
    hist_teller: Vec<i64>,
}

impl Tally {
    /// An empty tally.
    pub fn new() -> Tally {
        Tally::default()
    }

    /// A branch row; branches must come in id order (0, 1, …).
    pub fn branch(&mut self, balance: i64) {
        self.branch_bal.push(balance);
    }

    /// A teller row; tellers must come in id order (0, 1, …).
    pub fn teller(&mut self, branch: u32, balance: i64) {
        self.teller_bal.push(balance);
        self.teller_branch.push(branch);
    }

    /// An account row.
    pub fn account(&mut self, balance: i64) {
        self.c.account_sum += balance;
    }

    /// A history row.
    pub fn history(&mut self, teller: u32, branch: u32, delta: i64) {
        self.history_group(teller, branch, delta, 1);
    }

    /// `rows` history rows of one teller and branch whose deltas add up to `delta` (an
    /// engine that can aggregate — SQL's `GROUP BY` — sends these instead of rows).
    pub fn history_group(&mut self, teller: u32, branch: u32, delta: i64, rows: u64) {
        self.c.history_sum += delta;
        self.c.history_rows += rows;
        let (t, b) = (teller as usize, branch as usize);
        if self.hist_teller.len() <= t {
            self.hist_teller.resize(t + 1, 0);
        }
        if self.hist_branch.len() <= b {
            self.hist_branch.resize(b + 1, 0);
        }
        self.hist_teller[t] += delta;
        self.hist_branch[b] += delta;
    }

    /// A problem found while reading (a malformed row).
    pub fn violation(&mut self, what: String) {
        self.c.violations.push(what);
    }

    /// Checks Σ account = Σ teller = Σ branch = Σ history.delta, the same per branch and
    /// per teller, and (if given) that the history holds exactly `expected_rows` rows.
    pub fn finish(self, expected_rows: Option<u64>) -> Consistency {
        self.finish_with(expected_rows, true)
    }

    /// [`Tally::finish`] without the per-branch and per-teller identities, for a
    /// workload that draws teller and branch independently (pgbench's built-in
    /// `tpcb-like`): the global sums and the row count still hold.
    pub fn finish_sums(self, expected_rows: Option<u64>) -> Consistency {
        self.finish_with(expected_rows, false)
    }

    fn finish_with(mut self, expected_rows: Option<u64>, per_owner: bool) -> Consistency {
        let mut c = std::mem::take(&mut self.c);
        let branches = self.branch_bal.len();
        let mut per_branch_tellers = vec![0i64; branches];
        for (id, (&b, &bal)) in self.teller_branch.iter().zip(&self.teller_bal).enumerate() {
            match per_branch_tellers.get_mut(b as usize) {
                Some(s) => *s += bal,
                None => c
                    .violations
                    .push(format!("teller {id} names missing branch {b}")),
            }
        }
        if self.hist_branch.len() > branches || self.hist_teller.len() > self.teller_bal.len() {
            c.violations.push(format!(
                "history rows name tellers up to {} / branches up to {}, but there are {} / {}",
                self.hist_teller.len(),
                self.hist_branch.len(),
                self.teller_bal.len(),
                branches
            ));
        }
        self.hist_branch
            .resize(branches.max(self.hist_branch.len()), 0);
        self.hist_teller
            .resize(self.teller_bal.len().max(self.hist_teller.len()), 0);
        c.branch_sum = self.branch_bal.iter().sum();
        c.teller_sum = self.teller_bal.iter().sum();
        let sums = [c.account_sum, c.teller_sum, c.branch_sum, c.history_sum];
        if sums.iter().any(|&s| s != sums[0]) {
            c.violations.push(format!(
                "sums differ: account {} teller {} branch {} history {}",
                c.account_sum, c.teller_sum, c.branch_sum, c.history_sum
            ));
        }
        if !per_owner {
            self.branch_bal.clear();
            self.teller_bal.clear();
        }
        for (b, &bal) in self.branch_bal.iter().enumerate() {
            if bal != per_branch_tellers[b] || bal != self.hist_branch[b] {
                c.violations.push(format!(
                    "branch {b}: balance {bal}, its tellers {}, its history {}",
                    per_branch_tellers[b], self.hist_branch[b]
                ));
            }
        }
        for (te, &bal) in self.teller_bal.iter().enumerate() {
            if bal != self.hist_teller[te] {
                c.violations.push(format!(
                    "teller {te}: balance {bal}, its history {}",
                    self.hist_teller[te]
                ));
            }
        }
        if let Some(n) = expected_rows {
            if n != c.history_rows {
                c.violations.push(format!(
                    "{} history rows for {n} committed transactions",
                    c.history_rows
                ));
            }
        }
        c
    }
}

/// Decodes a branch, teller or account row as sluice stores it: (owner id, balance).
/// Peers that store rows as bytes (RocksDB) store exactly these.
pub fn decode_row(v: &[u8]) -> Result<(u32, i64), Error> {
    parse_row(v)
}

/// Encodes a branch, teller or account row as sluice stores it.
pub fn encode_row(owner: u32, balance: i64) -> [u8; ROW] {
    row(owner, balance)
}

/// Encodes a history row as sluice stores it.
pub fn encode_history(i: &TpcbInput) -> [u8; HISTORY_ROW] {
    history_row(i)
}

/// Feeds one stored history row into `tally` (a malformed one is a violation).
pub fn tally_history(tally: &mut Tally, v: &[u8]) {
    if v.len() != HISTORY_ROW {
        tally.violation(format!("history row of {} bytes", v.len()));
        return;
    }
    let te = u32::from_le_bytes(v[4..8].try_into().unwrap());
    let b = u32::from_le_bytes(v[8..12].try_into().unwrap());
    let d = i64::from_le_bytes(v[12..20].try_into().unwrap());
    tally.history(te, b, d);
}

/// Checks Σ account = Σ teller = Σ branch = Σ history.delta, the same per branch and per
/// teller, and (if given) that the history holds exactly `expected_rows` rows.
pub fn check(
    db: &Database,
    t: &TpcbTables,
    expected_rows: Option<u64>,
) -> Result<Consistency, Error> {
    let mut tally = Tally::new();
    let mut tx = db.begin();
    for r in tx.scan_all(&t.branch) {
        let (_, v) = r?;
        tally.branch(parse_row(&v)?.1);
    }
    for r in tx.scan_all(&t.teller) {
        let (_, v) = r?;
        let (b, bal) = parse_row(&v)?;
        tally.teller(b, bal);
    }
    for r in tx.scan_all(&t.account) {
        let (_, v) = r?;
        tally.account(parse_row(&v)?.1);
    }
    for r in tx.scan_all(&t.history) {
        let (_, v) = r?;
        tally_history(&mut tally, &v);
    }
    tx.commit()?;
    Ok(tally.finish(expected_rows))
}

/// TPC-B as a [`super::driver::Workload`].
pub struct TpcbWorkload {
    tables: TpcbTables,
    gen: TpcbGenerator,
    /// High bits of history ids, distinct per run so ids never repeat in one database.
    run_tag: u64,
}

impl TpcbWorkload {
    /// A workload over loaded `tables`; `run_tag` must differ between runs on one
    /// database.
    pub fn new(tables: TpcbTables, shape: TpcbShape, run_tag: u64) -> Result<TpcbWorkload, String> {
        Ok(TpcbWorkload {
            tables,
            gen: TpcbGenerator::new(shape)?,
            run_tag,
        })
    }
}

impl super::driver::Workload for TpcbWorkload {
    type Input = TpcbInput;
    fn kinds(&self) -> &'static [&'static str] {
        &["TPC-B"]
    }
    fn input(&self, rng: &mut rand::rngs::SmallRng, _client: u32, seq: u64) -> TpcbInput {
        self.gen.next(rng, self.run_tag << 40 | seq)
    }
    fn kind(&self, _: &TpcbInput) -> usize {
        0
    }
    fn body(
        &self,
        tx: &mut Transaction,
        i: &TpcbInput,
    ) -> Result<sluice::experiment::Outcome<bool>, Error> {
        run(tx, &self.tables, i)?;
        Ok(sluice::experiment::Outcome::Commit(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_checks_sums_per_branch_and_rows() {
        let mut t = Tally::new();
        t.branch(5);
        t.teller(0, 5);
        t.account(5);
        t.history(0, 0, 5);
        assert!(t.finish(Some(1)).ok());

        // Balances that add up overall but not per branch: only finish_sums accepts.
        let feed = || {
            let mut t = Tally::new();
            t.branch(5);
            t.branch(-5);
            t.teller(0, -5);
            t.teller(1, 5);
            t.account(0);
            t.history_group(0, 1, -5, 1);
            t.history_group(1, 0, 5, 1);
            t
        };
        assert!(!feed().finish(Some(2)).ok());
        assert!(feed().finish_sums(Some(2)).ok());
        assert!(!feed().finish_sums(Some(3)).ok());
    }
}
