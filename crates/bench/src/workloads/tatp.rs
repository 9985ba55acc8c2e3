//! TATP (TM1) as docs/BENCHMARKS.md defines it.
//!
//! Tables: `subscriber` (s_id → row, with a unique secondary index `subscriber_nbr`
//! sub_nbr → s_id), `access_info` (s_id, ai_type), `special_facility` (s_id, sf_type),
//! `call_forwarding` (s_id, sf_type, start_time). Per subscriber 1–4 access-info rows and
//! 1–4 special-facility rows with distinct random types (is_active 85 %), and 0–3
//! call-forwarding rows per special facility with start_time ∈ {0, 8, 16}.

use crate::knobs::{in_range, named_values};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_distr::{Distribution, Zipf};
use sluice::{Database, Error, Table, Transaction};

/// The seven transaction types, in the standard mix order; named on the command line
/// (`--only`) in kebab case, in reports in the benchmark's own capitals.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TatpKind {
    /// Read one subscriber row (35 %).
    GetSubscriberData,
    /// Special facility + call forwarding lookup (10 %).
    GetNewDestination,
    /// Read one access-info row (35 %).
    GetAccessData,
    /// Update subscriber bit_1 and a special facility's data_a (2 %).
    UpdateSubscriberData,
    /// Update vlr_location by sub_nbr (14 %).
    UpdateLocation,
    /// Insert a call-forwarding row (2 %).
    InsertCallForwarding,
    /// Delete a call-forwarding row (2 %).
    DeleteCallForwarding,
}

named_values!(TatpKind, "TATP transaction");

impl TatpKind {
    /// All seven, in mix order (the declaration order, as `value_variants()` lists them;
    /// an array, so that the mix and the per-type counts index it without a call).
    pub const ALL: [TatpKind; 7] = [
        TatpKind::GetSubscriberData,
        TatpKind::GetNewDestination,
        TatpKind::GetAccessData,
        TatpKind::UpdateSubscriberData,
        TatpKind::UpdateLocation,
        TatpKind::InsertCallForwarding,
        TatpKind::DeleteCallForwarding,
    ];
    /// Percent of the standard mix.
    pub fn share(self) -> u32 {
        match self {
            TatpKind::GetSubscriberData | TatpKind::GetAccessData => 35,
            TatpKind::GetNewDestination => 10,
            TatpKind::UpdateLocation => 14,
            _ => 2,
        }
    }
    /// True for the read-only types.
    pub fn read_only(self) -> bool {
        matches!(
            self,
            TatpKind::GetSubscriberData | TatpKind::GetNewDestination | TatpKind::GetAccessData
        )
    }
}

/// How subscribers are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TatpKeys {
    /// NURand, as the benchmark specifies.
    NuRand,
    /// Uniform.
    Uniform,
    /// Zipf with this exponent.
    Zipf(f64),
}

/// The four tables and the index.
#[derive(Clone)]
pub struct TatpTables {
    /// `subscriber`.
    pub subscriber: Table,
    /// `subscriber_nbr` (sub_nbr → s_id).
    pub subscriber_nbr: Table,
    /// `access_info`.
    pub access_info: Table,
    /// `special_facility`.
    pub special_facility: Table,
    /// `call_forwarding`.
    pub call_forwarding: Table,
}

impl TatpTables {
    /// Opens the tables of a loaded database.
    pub fn open(db: &Database) -> Result<TatpTables, Error> {
        Ok(TatpTables {
            subscriber: db.table("subscriber")?,
            subscriber_nbr: db.table("subscriber_nbr")?,
            access_info: db.table("access_info")?,
            special_facility: db.table("special_facility")?,
            call_forwarding: db.table("call_forwarding")?,
        })
    }
}

/// The 15-digit subscriber number of `s_id`.
pub fn sub_nbr(s_id: u32) -> [u8; 15] {
    let s = format!("{s_id:015}");
    s.as_bytes().try_into().expect("15 digits")
}

fn k1(s_id: u32) -> [u8; 4] {
    s_id.to_be_bytes()
}
fn k2(s_id: u32, t: u8) -> [u8; 5] {
    let mut k = [0u8; 5];
    k[..4].copy_from_slice(&s_id.to_be_bytes());
    k[4] = t;
    k
}
fn k3(s_id: u32, t: u8, start: u8) -> [u8; 6] {
    let mut k = [0u8; 6];
    k[..5].copy_from_slice(&k2(s_id, t));
    k[5] = start;
    k
}

// subscriber row: sub_nbr 15 | bits u16 | hex 5 | byte2 10 | msc u32 | vlr u32 = 42 bytes
const SUB_ROW: usize = 42;
const VLR_AT: usize = 38;

fn subscriber_row(rng: &mut impl Rng, s_id: u32) -> [u8; SUB_ROW] {
    let mut r = [0u8; SUB_ROW];
    r[..15].copy_from_slice(&sub_nbr(s_id));
    r[15..17].copy_from_slice(&(rng.gen::<u16>() & 0x3ff).to_le_bytes());
    rng.fill(&mut r[17..32]);
    r[32..36].copy_from_slice(&rng.gen::<u32>().to_le_bytes());
    r[36..40].copy_from_slice(&rng.gen::<u32>().to_le_bytes());
    r
}

fn random_types(rng: &mut impl Rng) -> Vec<u8> {
    let mut t = vec![1u8, 2, 3, 4];
    t.shuffle(rng);
    t.truncate(rng.gen_range(1..=4));
    t
}

fn numberx(rng: &mut impl Rng) -> [u8; 15] {
    let mut n = [b'0'; 15];
    for d in n.iter_mut() {
        *d = b'0' + rng.gen_range(0..10);
    }
    n
}

/// A TATP table, named for stores that keep the tables as byte maps (the peers of
/// `sluice compare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TatpTable {
    /// `subscriber`.
    Subscriber,
    /// `subscriber_nbr` (sub_nbr → s_id).
    SubscriberNbr,
    /// `access_info`.
    AccessInfo,
    /// `special_facility`.
    SpecialFacility,
    /// `call_forwarding`.
    CallForwarding,
}

impl TatpTable {
    /// All tables.
    pub const ALL: [TatpTable; 5] = [
        TatpTable::Subscriber,
        TatpTable::SubscriberNbr,
        TatpTable::AccessInfo,
        TatpTable::SpecialFacility,
        TatpTable::CallForwarding,
    ];

    /// The table's name.
    pub fn name(self) -> &'static str {
        match self {
            TatpTable::Subscriber => "subscriber",
            TatpTable::SubscriberNbr => "subscriber_nbr",
            TatpTable::AccessInfo => "access_info",
            TatpTable::SpecialFacility => "special_facility",
            TatpTable::CallForwarding => "call_forwarding",
        }
    }
}

impl TatpTables {
    /// The handle of `table`.
    pub fn table(&self, table: TatpTable) -> &Table {
        match table {
            TatpTable::Subscriber => &self.subscriber,
            TatpTable::SubscriberNbr => &self.subscriber_nbr,
            TatpTable::AccessInfo => &self.access_info,
            TatpTable::SpecialFacility => &self.special_facility,
            TatpTable::CallForwarding => &self.call_forwarding,
        }
    }
}

/// A loader's sink for one row: (table, key, value).
pub type PutRow<'a, E> = dyn FnMut(TatpTable, &[u8], &[u8]) -> Result<(), E> + 'a;

/// Draws the rows of subscriber `s_id` by the population rules and hands each to `put`
/// (every engine's loader uses this, so all hold the same kind of population).
pub fn populate<E>(rng: &mut impl Rng, s_id: u32, put: &mut PutRow<'_, E>) -> Result<(), E> {
    put(TatpTable::Subscriber, &k1(s_id), &subscriber_row(rng, s_id))?;
    put(TatpTable::SubscriberNbr, &sub_nbr(s_id), &k1(s_id))?;
    for ai in random_types(rng) {
        let mut v = [0u8; 10];
        rng.fill(&mut v[..]);
        put(TatpTable::AccessInfo, &k2(s_id, ai), &v)?;
    }
    for sf in random_types(rng) {
        let active = rng.gen_ratio(85, 100) as u8;
        let mut v = [0u8; 8];
        v[0] = active;
        rng.fill(&mut v[1..]);
        put(TatpTable::SpecialFacility, &k2(s_id, sf), &v)?;
        let mut starts = [0u8, 8, 16];
        starts.shuffle(rng);
        for &st in &starts[..rng.gen_range(0..=3)] {
            let mut v = [0u8; 16];
            v[0] = st + rng.gen_range(1..=8);
            v[1..].copy_from_slice(&numberx(rng));
            put(TatpTable::CallForwarding, &k3(s_id, sf, st), &v)?;
        }
    }
    Ok(())
}

/// Creates and fills the tables for `subscribers` subscribers.
pub fn load(
    db: &Database,
    subscribers: u32,
    rng: &mut impl Rng,
    mut progress: impl FnMut(f64),
) -> Result<TatpTables, Error> {
    let t = TatpTables {
        subscriber: db.create_table("subscriber")?,
        subscriber_nbr: db.create_table("subscriber_nbr")?,
        access_info: db.create_table("access_info")?,
        special_facility: db.create_table("special_facility")?,
        call_forwarding: db.create_table("call_forwarding")?,
    };
    const BATCH: u32 = 1_000;
    let mut s = 1;
    while s <= subscribers {
        let end = (s + BATCH).min(subscribers + 1);
        let mut tx = db.begin();
        for s_id in s..end {
            populate(rng, s_id, &mut |table, k, v| {
                tx.put(t.table(table), k, v).map(|_| ())
            })?;
        }
        tx.commit()?;
        s = end;
        progress((s - 1) as f64 / subscribers as f64);
    }
    // No checkpoint here: one would make the first change to every page in the
    // measured runs log a full page image (torn-page protection), and the runs would
    // measure that burst instead of the commit path.
    Ok(t)
}

/// Draws subscriber ids and transaction types.
pub struct TatpGenerator {
    subscribers: u32,
    keys: TatpKeys,
    a: u32,
    zipf: Option<Zipf<f64>>,
    only: Option<TatpKind>,
}

impl TatpGenerator {
    /// A generator over `subscribers` ids; `only` restricts the mix to one type.
    pub fn new(
        subscribers: u32,
        keys: TatpKeys,
        only: Option<TatpKind>,
    ) -> Result<TatpGenerator, String> {
        in_range("subscribers", subscribers, 1..)?;
        let zipf = match keys {
            TatpKeys::Zipf(s) => {
                let s = in_range("skew", s, 0.0..)?;
                Some(Zipf::new(subscribers as u64, s).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        let a = if subscribers <= 1_000_000 {
            65_535
        } else if subscribers <= 10_000_000 {
            1_048_575
        } else {
            2_097_151
        };
        Ok(TatpGenerator {
            subscribers,
            keys,
            a,
            zipf,
            only,
        })
    }

    /// A subscriber id in 1..=P.
    pub fn s_id(&self, rng: &mut impl Rng) -> u32 {
        let p = self.subscribers;
        match self.keys {
            TatpKeys::NuRand => ((rng.gen_range(0..=self.a) | rng.gen_range(1..=p)) % p) + 1,
            TatpKeys::Uniform => rng.gen_range(1..=p),
            TatpKeys::Zipf(_) => self.zipf.as_ref().unwrap().sample(rng) as u32,
        }
    }

    /// The next transaction type.
    pub fn kind(&self, rng: &mut impl Rng) -> TatpKind {
        if let Some(k) = self.only {
            return k;
        }
        let mut x = rng.gen_range(0..100);
        for k in TatpKind::ALL {
            if x < k.share() {
                return k;
            }
            x -= k.share();
        }
        unreachable!("shares sum to 100")
    }

    /// Draws one transaction.
    pub fn next(&self, rng: &mut impl Rng) -> TatpInput {
        let kind = self.kind(rng);
        TatpInput {
            kind,
            s_id: self.s_id(rng),
            ty: rng.gen_range(1..=4),
            start: [0u8, 8, 16][rng.gen_range(0..3)],
            end: rng.gen_range(1..=24),
            value: rng.gen(),
        }
    }
}

/// One transaction's inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TatpInput {
    /// Which transaction.
    pub kind: TatpKind,
    /// The subscriber.
    pub s_id: u32,
    /// ai_type or sf_type, 1..=4.
    pub ty: u8,
    /// start_time ∈ {0, 8, 16}.
    pub start: u8,
    /// end_time parameter, 1..=24.
    pub end: u8,
    /// A random value to write.
    pub value: u32,
}

/// What TATP's transactions need of a store: point reads, reads that lock the row for
/// an update, writes and deletes, in one transaction. sluice's `Transaction` is one
/// (through [`TatpTables`]); so are the peers of `sluice compare`.
pub trait TatpStore {
    /// The store's error.
    type Error;
    /// Reads a row.
    fn get(&mut self, table: TatpTable, key: &[u8]) -> Result<Option<Vec<u8>>, Self::Error>;
    /// Reads a row to update it (an exclusive lock where the store has row locks).
    fn get_for_update(
        &mut self,
        table: TatpTable,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, Self::Error>;
    /// Writes a row.
    fn put(&mut self, table: TatpTable, key: &[u8], value: &[u8]) -> Result<(), Self::Error>;
    /// Deletes a row; says whether it was there.
    fn delete(&mut self, table: TatpTable, key: &[u8]) -> Result<bool, Self::Error>;
    /// An error for a malformed row.
    fn corrupt(what: String) -> Self::Error;
}

/// sluice's transaction over loaded tables, as a [`TatpStore`].
pub struct SluiceTatp<'a> {
    /// The transaction.
    pub tx: &'a mut Transaction,
    /// The tables.
    pub tables: &'a TatpTables,
}

impl TatpStore for SluiceTatp<'_> {
    type Error = Error;
    fn get(&mut self, t: TatpTable, k: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.tx.get(self.tables.table(t), k)
    }
    fn get_for_update(&mut self, t: TatpTable, k: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        self.tx.get_for_update(self.tables.table(t), k)
    }
    fn put(&mut self, t: TatpTable, k: &[u8], v: &[u8]) -> Result<(), Error> {
        self.tx.put(self.tables.table(t), k, v).map(|_| ())
    }
    fn delete(&mut self, t: TatpTable, k: &[u8]) -> Result<bool, Error> {
        Ok(self.tx.delete(self.tables.table(t), k)?.is_some())
    }
    fn corrupt(what: String) -> Error {
        Error::Corruption(what)
    }
}

/// Looks up a subscriber's id through the `sub_nbr` index, as the transactions that are
/// given a number (not an id) must.
fn s_id_by_number<S: TatpStore>(tx: &mut S, s_id: u32) -> Result<Option<u32>, S::Error> {
    let Some(id) = tx.get(TatpTable::SubscriberNbr, &sub_nbr(s_id))? else {
        return Ok(None);
    };
    let bytes: [u8; 4] = id
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| S::corrupt(format!("sub_nbr index entry of {} bytes", id.len())))?;
    Ok(Some(u32::from_be_bytes(bytes)))
}

/// Runs one transaction's body (without commit). `Ok(true)`: it found what it looked
/// for; `Ok(false)`: "not found" (counted as completed; the caller rolls back the
/// updating types that fail).
pub fn run(tx: &mut Transaction, t: &TatpTables, i: &TatpInput) -> Result<bool, Error> {
    run_on(&mut SluiceTatp { tx, tables: t }, i)
}

/// [`run`] on any [`TatpStore`].
pub fn run_on<S: TatpStore>(tx: &mut S, i: &TatpInput) -> Result<bool, S::Error> {
    use TatpTable as T;
    match i.kind {
        TatpKind::GetSubscriberData => Ok(tx.get(T::Subscriber, &k1(i.s_id))?.is_some()),
        TatpKind::GetNewDestination => {
            let sf = tx.get(T::SpecialFacility, &k2(i.s_id, i.ty))?;
            if !matches!(sf, Some(v) if v.first() == Some(&1)) {
                return Ok(false);
            }
            let mut found = false;
            for start in [0u8, 8, 16].into_iter().filter(|&s| s <= i.start) {
                if let Some(v) = tx.get(T::CallForwarding, &k3(i.s_id, i.ty, start))? {
                    found |= v.first().is_some_and(|&end| i.end < end);
                }
            }
            Ok(found)
        }
        TatpKind::GetAccessData => Ok(tx.get(T::AccessInfo, &k2(i.s_id, i.ty))?.is_some()),
        TatpKind::UpdateSubscriberData => {
            let k = k1(i.s_id);
            let Some(mut row) = tx.get_for_update(T::Subscriber, &k)? else {
                return Ok(false);
            };
            if row.len() != SUB_ROW {
                return Err(S::corrupt(format!("subscriber row of {} bytes", row.len())));
            }
            row[15] = (row[15] & !1) | (i.value & 1) as u8;
            tx.put(T::Subscriber, &k, &row)?;
            let fk = k2(i.s_id, i.ty);
            let Some(mut sf) = tx.get_for_update(T::SpecialFacility, &fk)? else {
                return Ok(false);
            };
            if sf.len() < 3 {
                return Err(S::corrupt(format!(
                    "special_facility row of {} bytes",
                    sf.len()
                )));
            }
            sf[2] = i.value as u8;
            tx.put(T::SpecialFacility, &fk, &sf)?;
            Ok(true)
        }
        TatpKind::UpdateLocation => {
            let Some(s_id) = s_id_by_number(tx, i.s_id)? else {
                return Ok(false);
            };
            let id = k1(s_id);
            let Some(mut row) = tx.get_for_update(T::Subscriber, &id)? else {
                return Ok(false);
            };
            if row.len() != SUB_ROW {
                return Err(S::corrupt(format!("subscriber row of {} bytes", row.len())));
            }
            row[VLR_AT..VLR_AT + 4].copy_from_slice(&i.value.to_le_bytes());
            tx.put(T::Subscriber, &id, &row)?;
            Ok(true)
        }
        TatpKind::InsertCallForwarding => {
            let Some(s_id) = s_id_by_number(tx, i.s_id)? else {
                return Ok(false);
            };
            if tx.get(T::SpecialFacility, &k2(s_id, i.ty))?.is_none() {
                return Ok(false);
            }
            let k = k3(s_id, i.ty, i.start);
            if tx.get_for_update(T::CallForwarding, &k)?.is_some() {
                return Ok(false); // primary-key violation: the row exists
            }
            let mut v = [0u8; 16];
            v[0] = i.start + 1 + (i.value % 8) as u8;
            v[1..].copy_from_slice(&sub_nbr(i.value % 1_000_000));
            tx.put(T::CallForwarding, &k, &v)?;
            Ok(true)
        }
        TatpKind::DeleteCallForwarding => {
            let Some(s_id) = s_id_by_number(tx, i.s_id)? else {
                return Ok(false);
            };
            tx.delete(T::CallForwarding, &k3(s_id, i.ty, i.start))
        }
    }
}

/// Checks a loaded TATP database against the population rules the transactions keep:
/// subscribers 1..=`subscribers`, each with its `subscriber_nbr` entry pointing back at
/// it, 1–4 access-info and 1–4 special-facility rows, and every call-forwarding row
/// belonging to an existing special facility. Returns what is off (at most a few lines
/// per rule, with a count).
pub fn check_population(
    db: &Database,
    t: &TatpTables,
    subscribers: u32,
) -> Result<Vec<String>, Error> {
    let n = subscribers as usize;
    let mut out = Vec::new();
    let mut tx = db.begin();
    let s_id_of =
        |k: &[u8]| -> Option<u32> { Some(u32::from_be_bytes(k.get(..4)?.try_into().ok()?)) };
    let in_range = |id: u32| id >= 1 && id as usize <= n;
    let mut seen = vec![false; n + 1];
    let mut bad_subscribers = 0u64;
    for r in tx.scan_all(&t.subscriber) {
        let (k, _) = r?;
        match s_id_of(&k).filter(|&id| k.len() == 4 && in_range(id)) {
            Some(id) => seen[id as usize] = true,
            None => bad_subscribers += 1,
        }
    }
    let missing = seen[1..].iter().filter(|&&s| !s).count();
    if missing > 0 || bad_subscribers > 0 {
        out.push(format!(
            "subscriber: {missing} of {n} subscribers missing, {bad_subscribers} rows outside 1..={n}"
        ));
    }
    let mut bad_numbers = 0u64;
    let mut numbers = 0u64;
    for r in tx.scan_all(&t.subscriber_nbr) {
        let (k, v) = r?;
        numbers += 1;
        let ok = s_id_of(&v).is_some_and(|id| in_range(id) && k[..] == sub_nbr(id)[..]);
        bad_numbers += !ok as u64;
    }
    if numbers != n as u64 || bad_numbers > 0 {
        out.push(format!(
            "subscriber_nbr: {numbers} entries for {n} subscribers, {bad_numbers} not pointing at their subscriber"
        ));
    }
    let mut facilities = std::collections::HashSet::new();
    for (table, name) in [
        (&t.access_info, "access_info"),
        (&t.special_facility, "special_facility"),
    ] {
        let mut per = vec![0u8; n + 1];
        let mut stray = 0u64;
        for r in tx.scan_all(table) {
            let (k, _) = r?;
            match s_id_of(&k).filter(|&id| k.len() == 5 && in_range(id) && (1..=4).contains(&k[4]))
            {
                Some(id) => {
                    per[id as usize] += 1;
                    if name == "special_facility" {
                        facilities.insert((id, k[4]));
                    }
                }
                None => stray += 1,
            }
        }
        let off = per[1..].iter().filter(|&&c| !(1..=4).contains(&c)).count();
        if off > 0 || stray > 0 {
            out.push(format!(
                "{name}: {off} subscribers without 1 to 4 rows, {stray} rows with a bad key"
            ));
        }
    }
    let mut orphans = 0u64;
    for r in tx.scan_all(&t.call_forwarding) {
        let (k, _) = r?;
        let ok = k.len() == 6
            && s_id_of(&k).is_some_and(|id| facilities.contains(&(id, k[4])))
            && [0, 8, 16].contains(&k[5]);
        orphans += !ok as u64;
    }
    if orphans > 0 {
        out.push(format!(
            "call_forwarding: {orphans} rows without their special facility or with a bad start time"
        ));
    }
    tx.commit()?;
    Ok(out)
}

/// The success rates docs/BENCHMARKS.md expects with these population rules (a check that the
/// loader is right), as (kind, expected share succeeding, tolerance).
pub const EXPECTED_SUCCESS: [(TatpKind, f64, f64); 5] = [
    (TatpKind::GetAccessData, 0.625, 0.05),
    (TatpKind::UpdateSubscriberData, 0.625, 0.08),
    (TatpKind::InsertCallForwarding, 0.31, 0.08),
    (TatpKind::DeleteCallForwarding, 0.31, 0.08),
    (TatpKind::GetNewDestination, 0.15, 0.08),
];

/// Checks the measured success rates against [`EXPECTED_SUCCESS`]: `kinds[k]` is
/// (completed, succeeded) of `TatpKind::ALL[k]`. Types with fewer than 2,000 samples are
/// not judged. Returns what is off.
pub fn check_success_rates(kinds: &[(u64, u64)]) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, expected, tol) in EXPECTED_SUCCESS {
        let at = TatpKind::ALL
            .iter()
            .position(|&x| x == kind)
            .expect("known");
        let Some(&(completed, succeeded)) = kinds.get(at) else {
            continue;
        };
        if completed >= 2_000 {
            let rate = succeeded as f64 / completed as f64;
            if (rate - expected).abs() > tol {
                out.push(format!(
                    "{} succeeded {:.1} % of the time, expected {:.1} % ± {:.0}",
                    kind,
                    rate * 100.0,
                    expected * 100.0,
                    tol * 100.0
                ));
            }
        }
    }
    out
}

/// TATP as a [`super::driver::Workload`].
pub struct TatpWorkload {
    tables: TatpTables,
    gen: TatpGenerator,
}

impl TatpWorkload {
    /// A workload over loaded `tables`.
    pub fn new(tables: TatpTables, gen: TatpGenerator) -> TatpWorkload {
        TatpWorkload { tables, gen }
    }
}

const KIND_NAMES: [&str; 7] = [
    "GET_SUBSCRIBER_DATA",
    "GET_NEW_DESTINATION",
    "GET_ACCESS_DATA",
    "UPDATE_SUBSCRIBER_DATA",
    "UPDATE_LOCATION",
    "INSERT_CALL_FORWARDING",
    "DELETE_CALL_FORWARDING",
];

impl super::driver::Workload for TatpWorkload {
    type Input = TatpInput;
    fn kinds(&self) -> &'static [&'static str] {
        &KIND_NAMES
    }
    fn input(&self, rng: &mut rand::rngs::SmallRng, _client: u32, _seq: u64) -> TatpInput {
        self.gen.next(rng)
    }
    fn kind(&self, i: &TatpInput) -> usize {
        TatpKind::ALL
            .iter()
            .position(|&k| k == i.kind)
            .expect("a known kind")
    }
    fn body(
        &self,
        tx: &mut Transaction,
        i: &TatpInput,
    ) -> Result<sluice::experiment::Outcome<bool>, Error> {
        let found = run(tx, &self.tables, i)?;
        // A failed update rolls back what it did so far; "not found" still completes.
        Ok(if found || i.kind.read_only() {
            sluice::experiment::Outcome::Commit(found)
        } else {
            sluice::experiment::Outcome::Rollback(false)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_kind_is_in_the_mix_once_and_named_for_the_command_line() {
        assert_eq!(TatpKind::ALL, TatpKind::value_variants());
        assert_eq!(TatpKind::ALL.iter().map(|k| k.share()).sum::<u32>(), 100);
        assert_eq!(TatpKind::UpdateLocation.to_string(), "update-location");
        assert_eq!("update-location".parse(), Ok(TatpKind::UpdateLocation));
        assert!("x"
            .parse::<TatpKind>()
            .unwrap_err()
            .contains("get-access-data"));
    }
}
