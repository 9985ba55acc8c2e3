//! Planning log partitioning: the analytical model of the Tandem log-partitioning paper
//! (§5, Table 1) as a function from a workload profile to a plan.
//!
//! # The model
//!
//! Database partitions P_1..P_n each have a *log generator*; transactions come in types
//! T_1..T_m. A [`Profile`] gives
//!
//! * G_ij — bytes of log the generator of P_i writes per transaction of type T_j
//!   ([`GeneratorSpec::bytes_per_txn`]; a type it does not name is 0),
//! * R_j — the desired rate of T_j in transactions/s ([`TransactionType::rate_tps`]),
//! * c — the size of a commit record in bytes ([`Profile::commit_record_bytes`]),
//! * Lmax — the bytes/s one log manager accepts for this mix with no archiver
//!   interference ([`Profile::lmax_bytes_per_s`]; observed as the plateau of log
//!   throughput as generators are added, the paper's footnote 7),
//! * γ — the degradation right after a log-file rollover, while the archiver copies the
//!   old file off the same device (0 < γ < 1; [`Profile::gamma`]).
//!
//! From these, [`plan`] computes L_i = Σ_j R_j·G_ij, R = Σ_j R_j, and the aggregate rate
//! L = Σ_i L_i + R·c (the commit coordinator writes R·c), and compares L with γ·Lmax and
//! Lmax (Table 1):
//!
//! | case | condition                 | strategy                                   |
//! |------|---------------------------|--------------------------------------------|
//! | 1    | L < γ·Lmax                | none: one log manager keeps up even after a rollover |
//! | 2    | γ·Lmax ≤ L < Lmax         | horizontal: rotate log files over devices so the archiver never shares the writer's device |
//! | 3    | L ≥ Lmax                  | vertical: several log managers, generators split among them |
//!
//! The paper writes every inequality strictly and leaves the boundaries open. Here a rate
//! *equal* to a limit counts as reaching it: a manager at exactly Lmax is saturated (the
//! paper's Table 2 T3 run is that case — its L is the plateau itself, and Table 4 shows
//! its queues: 3.55 s per transaction), so L = Lmax is case 3, and L = γ·Lmax is case 2.
//!
//! # Log managers and the assignment
//!
//! Cases 1 and 2 use one log manager. Case 3 starts from the paper's ⌈L / Lmax⌉ — taken
//! as the smallest n with L / n < Lmax, which is ⌈L / Lmax⌉ except when L is an exact
//! multiple of Lmax, where the same boundary rule asks for one more. The commit
//! coordinator's R·c goes to manager 1 (the log that holds the commit records, Tandem's
//! master audit trail) and counts in its load; then the generators go largest L_i first
//! (ties in profile order), each to the least-loaded manager (ties to the lowest number).
//!
//! A manager whose load reaches Lmax after that is over capacity. Following the paper's
//! footnote 9 (when the managers do not divide the generators evenly, add one), the
//! planner adds managers and reassigns until no manager is over capacity — unless the
//! only over-capacity managers each hold a single generator (or the commit coordinator
//! alone) whose rate reaches Lmax by itself: no assignment fixes that; the paper's remedy
//! is to reorganize the database partitions, and the plan says so in its warnings.
//!
//! Each manager also reports whether its own load reaches γ·Lmax: such a manager falls
//! behind after a rollover and wants horizontal partitioning of its own (the paper's §4:
//! vertically partitioned managers can be partitioned horizontally too).
//!
//! # The profile as JSON
//!
//! ```json
//! {
//!   "description": "optional free text",
//!   "commit_record_bytes": 50,
//!   "lmax_bytes_per_s": 972327,
//!   "gamma": 0.8,
//!   "transactions": [{"name": "T3", "rate_tps": 68.31}],
//!   "generators": [
//!     {"name": "P", "count": 64, "bytes_per_txn": {"T3": 434.45}},
//!     {"name": "hot", "bytes_per_txn": {"T3": 2000}}
//!   ]
//! }
//! ```
//!
//! A generator with `count` k stands for k identical generators named `P1`..`Pk`; without
//! it, one generator with that name. Unknown fields are rejected (a misspelt field is an
//! error, not a silent default). [`Profile::from_json`] parses and validates; every
//! [`PlanError`] is one line.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::fmt;

/// The most generators a profile may expand to (after `count`).
pub const MAX_GENERATORS: u64 = 65_536;

/// A workload profile: the inputs of the paper's model. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Free text: where the numbers come from, why this γ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// c: bytes per commit record (≥ 0).
    pub commit_record_bytes: f64,
    /// Lmax: bytes/s one log manager accepts for this transaction mix (> 0).
    pub lmax_bytes_per_s: f64,
    /// γ: the fraction of Lmax a manager accepts right after a rollover (0 < γ < 1).
    pub gamma: f64,
    /// The transaction types T_j and their rates R_j (at least one, names unique).
    pub transactions: Vec<TransactionType>,
    /// The log generators (at least one; names unique after expanding `count`).
    pub generators: Vec<GeneratorSpec>,
}

/// A transaction type T_j.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransactionType {
    /// Its name, referred to by [`GeneratorSpec::bytes_per_txn`].
    pub name: String,
    /// R_j: desired transactions per second (≥ 0).
    pub rate_tps: f64,
}

/// One log generator, or `count` identical ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    /// The generator's name; with `count`, the prefix of `name1`..`name{count}`.
    pub name: String,
    /// How many identical generators this entry stands for (≥ 1); absent means one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// G_ij: log bytes per transaction, by transaction-type name (each ≥ 0); a type not
    /// named here contributes nothing.
    #[serde(default, deserialize_with = "unique_keys")]
    pub bytes_per_txn: BTreeMap<String, f64>,
}

/// A JSON object into a map, refusing a key that appears twice (serde's map would keep
/// the last one silently).
fn unique_keys<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = BTreeMap<String, f64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of transaction-type names to bytes per transaction")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            let mut m = BTreeMap::new();
            while let Some((k, v)) = a.next_entry::<String, f64>()? {
                if m.contains_key(&k) {
                    return Err(serde::de::Error::custom(format!(
                        "transaction type {k:?} appears twice in bytes_per_txn"
                    )));
                }
                m.insert(k, v);
            }
            Ok(m)
        }
    }
    d.deserialize_map(V)
}

/// Why a profile cannot be planned. Every message is one line (names are quoted with
/// escapes).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The text is not JSON of the profile's shape (a missing or misspelt field, a wrong
    /// type, a negative `count`); the message carries serde's line and column.
    #[error("malformed profile: {0}")]
    Malformed(String),
    /// A number is NaN, infinite, negative, or (for Lmax) not positive.
    #[error("{field} is {value}, must be a finite number {requirement}")]
    BadNumber {
        /// Which value, e.g. `transaction "T3" rate_tps`.
        field: String,
        /// What the profile gave.
        value: f64,
        /// What it must be, e.g. `≥ 0`.
        requirement: &'static str,
    },
    /// γ is not strictly between 0 and 1.
    #[error("gamma is {0}, must be strictly between 0 and 1")]
    Gamma(f64),
    /// The `transactions` or `generators` list is empty.
    #[error("{0} is empty: a profile needs at least one")]
    Empty(&'static str),
    /// A transaction type or generator has an empty name.
    #[error("{what} #{index} has an empty name")]
    EmptyName {
        /// `transaction` or `generator`.
        what: &'static str,
        /// Its position in its list, from 1.
        index: usize,
    },
    /// Two transaction types, or two generators (after expanding `count`), share a name.
    #[error("{what} name {name:?} appears more than once")]
    Duplicate {
        /// `transaction` or `generator`.
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A generator gives bytes for a transaction type the profile does not define.
    #[error("generator {generator:?} gives bytes_per_txn for {transaction:?}, which is not in transactions")]
    UnknownTransaction {
        /// The generator entry's name.
        generator: String,
        /// The undefined type.
        transaction: String,
    },
    /// A generator entry has `count` 0.
    #[error("generator {0:?} has count 0, must be at least 1")]
    ZeroCount(String),
    /// The generators expand to more than [`MAX_GENERATORS`].
    #[error(
        "the profile expands to {0} generators, more than the {MAX_GENERATORS} the planner takes"
    )]
    TooManyGenerators(u128),
}

impl Profile {
    /// Parses a profile from JSON and validates it.
    pub fn from_json(text: &str) -> Result<Profile, PlanError> {
        let p: Profile =
            serde_json::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// Checks every rule of the schema (see [`PlanError`]); [`plan`] calls it too.
    pub fn validate(&self) -> Result<(), PlanError> {
        non_negative("commit_record_bytes".into(), self.commit_record_bytes)?;
        if !self.lmax_bytes_per_s.is_finite() || self.lmax_bytes_per_s <= 0.0 {
            return Err(PlanError::BadNumber {
                field: "lmax_bytes_per_s".into(),
                value: self.lmax_bytes_per_s,
                requirement: "> 0",
            });
        }
        // NaN fails both comparisons' negation, so test for "inside" and negate.
        if !(self.gamma > 0.0 && self.gamma < 1.0) {
            return Err(PlanError::Gamma(self.gamma));
        }
        if self.transactions.is_empty() {
            return Err(PlanError::Empty("transactions"));
        }
        if self.generators.is_empty() {
            return Err(PlanError::Empty("generators"));
        }
        let mut types = HashSet::new();
        for (i, t) in self.transactions.iter().enumerate() {
            if t.name.is_empty() {
                return Err(PlanError::EmptyName {
                    what: "transaction",
                    index: i + 1,
                });
            }
            if !types.insert(t.name.as_str()) {
                return Err(PlanError::Duplicate {
                    what: "transaction",
                    name: t.name.clone(),
                });
            }
            non_negative(format!("transaction {:?} rate_tps", t.name), t.rate_tps)?;
        }
        let mut total: u128 = 0;
        for (i, g) in self.generators.iter().enumerate() {
            if g.name.is_empty() {
                return Err(PlanError::EmptyName {
                    what: "generator",
                    index: i + 1,
                });
            }
            if g.count == Some(0) {
                return Err(PlanError::ZeroCount(g.name.clone()));
            }
            total += u128::from(g.count.unwrap_or(1));
            for (t, &bytes) in &g.bytes_per_txn {
                if !types.contains(t.as_str()) {
                    return Err(PlanError::UnknownTransaction {
                        generator: g.name.clone(),
                        transaction: t.clone(),
                    });
                }
                non_negative(
                    format!("generator {:?} bytes_per_txn[{t:?}]", g.name),
                    bytes,
                )?;
            }
        }
        if total > u128::from(MAX_GENERATORS) {
            return Err(PlanError::TooManyGenerators(total));
        }
        let mut names = HashSet::new();
        for g in self.expanded() {
            if !names.insert(g.0.clone()) {
                return Err(PlanError::Duplicate {
                    what: "generator",
                    name: g.0,
                });
            }
        }
        Ok(())
    }

    /// The generators one by one (`count` expanded), each with its spec.
    fn expanded(&self) -> impl Iterator<Item = (String, &GeneratorSpec)> {
        self.generators.iter().flat_map(|g| {
            let n = g.count;
            (1..=n.unwrap_or(1)).map(move |k| match n {
                Some(_) => (format!("{}{k}", g.name), g),
                None => (g.name.clone(), g),
            })
        })
    }
}

fn non_negative(field: String, value: f64) -> Result<(), PlanError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(PlanError::BadNumber {
            field,
            value,
            requirement: "≥ 0",
        })
    }
}

/// The row of Table 1 that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "u8")]
pub enum Case {
    /// Case 1: L < γ·Lmax.
    NoPartitioning = 1,
    /// Case 2: γ·Lmax ≤ L < Lmax.
    Horizontal = 2,
    /// Case 3: L ≥ Lmax.
    Vertical = 3,
}

impl Case {
    /// The case of aggregate rate `l` against `gamma` and `lmax` (boundaries: see the
    /// [module docs](self)).
    pub fn of(l: f64, gamma: f64, lmax: f64) -> Case {
        if l >= lmax {
            Case::Vertical
        } else if l >= gamma * lmax {
            Case::Horizontal
        } else {
            Case::NoPartitioning
        }
    }

    /// 1, 2 or 3, as in Table 1.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The partitioning strategy the case calls for.
    pub fn strategy(self) -> Strategy {
        match self {
            Case::NoPartitioning => Strategy::None,
            Case::Horizontal => Strategy::Horizontal,
            Case::Vertical => Strategy::Vertical,
        }
    }

    /// Table 1's condition, for people: `L < γ·Lmax` etc.
    pub fn condition(self) -> &'static str {
        match self {
            Case::NoPartitioning => "L < γ·Lmax",
            Case::Horizontal => "γ·Lmax ≤ L < Lmax",
            Case::Vertical => "L ≥ Lmax",
        }
    }
}

impl From<Case> for u8 {
    fn from(c: Case) -> u8 {
        c.number()
    }
}

/// A partitioning strategy (Table 1's right column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// No log partitioning necessary.
    None,
    /// Horizontal log partitioning: log files rotate over devices so the archiver copies
    /// a finished file off a device the log manager no longer writes.
    Horizontal,
    /// Vertical log partitioning: several log managers, each serving some generators.
    Vertical,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Strategy::None => "no log partitioning necessary",
            Strategy::Horizontal => "horizontal log partitioning",
            Strategy::Vertical => "vertical log partitioning",
        })
    }
}

/// One generator's rate and where the plan puts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GeneratorLoad {
    /// Its name (`count` expanded: `P1`, `P2`, …).
    pub name: String,
    /// L_i = Σ_j R_j·G_ij, bytes/s.
    pub log_bytes_per_s: f64,
    /// The log manager it is assigned to, from 1.
    pub manager: usize,
}

/// One log manager in the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManagerLoad {
    /// Its number, from 1.
    pub manager: usize,
    /// Σ L_i of its generators, plus R·c if it holds the commit coordinator; bytes/s.
    pub load_bytes_per_s: f64,
    /// load / Lmax.
    pub utilization: f64,
    /// Whether it takes the commit coordinator's R·c.
    pub commit_coordinator: bool,
    /// Whether its load reaches γ·Lmax, so it falls behind after a rollover unless it is
    /// itself partitioned horizontally.
    pub needs_horizontal: bool,
    /// Its generators, in the order they were assigned (largest L_i first).
    pub generators: Vec<String>,
}

/// Something the plan could not settle, or settled by departing from ⌈L / Lmax⌉.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    /// What happened, with its numbers.
    #[serde(flatten)]
    pub kind: WarningKind,
    /// The same for people, one line.
    pub message: String,
}

/// The kinds of [`Warning`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WarningKind {
    /// One generator alone reaches Lmax: no assignment helps; reorganize the database
    /// partitions so its log records spread over several generators (paper §5).
    GeneratorAboveLmax {
        /// The generator.
        generator: String,
        /// Its L_i.
        log_bytes_per_s: f64,
    },
    /// The commit coordinator's R·c alone reaches Lmax: the commit records alone saturate
    /// a log manager.
    CommitCoordinatorAboveLmax {
        /// R·c.
        log_bytes_per_s: f64,
    },
    /// ⌈L / Lmax⌉ managers left a manager at or above Lmax after the largest-first
    /// assignment, so the planner added managers (paper footnote 9).
    ManagersAdded {
        /// The count from the formula.
        by_formula: usize,
        /// The count planned.
        planned: usize,
    },
    /// A manager stays at or above Lmax: it holds one generator (or the commit
    /// coordinator) that reaches Lmax by itself.
    ManagerAboveLmax {
        /// The manager, from 1.
        manager: usize,
        /// Its load.
        load_bytes_per_s: f64,
    },
}

/// The answer of [`plan`]: the model's numbers, the case, and the assignment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Every generator's L_i and manager, in profile order.
    pub generators: Vec<GeneratorLoad>,
    /// R = Σ_j R_j, transactions/s.
    pub transactions_per_s: f64,
    /// c, bytes.
    pub commit_record_bytes: f64,
    /// R·c: the commit coordinator's log rate, bytes/s.
    pub commit_log_bytes_per_s: f64,
    /// Σ_i L_i, bytes/s.
    pub generator_log_bytes_per_s: f64,
    /// L = Σ_i L_i + R·c, bytes/s.
    pub log_bytes_per_s: f64,
    /// γ.
    pub gamma: f64,
    /// Lmax, bytes/s.
    pub lmax_bytes_per_s: f64,
    /// γ·Lmax, bytes/s: what one manager accepts right after a rollover.
    pub degraded_lmax_bytes_per_s: f64,
    /// L / Lmax.
    pub utilization: f64,
    /// Table 1's case (serialised as 1, 2 or 3).
    pub case: Case,
    /// The case's strategy.
    pub strategy: Strategy,
    /// ⌈L / Lmax⌉ in case 3 (one more when L is an exact multiple of Lmax), else 1.
    pub managers_by_formula: usize,
    /// The number of log managers planned (≥ `managers_by_formula`).
    pub manager_count: usize,
    /// The manager that takes the commit coordinator's R·c, from 1 (always 1).
    pub commit_coordinator_manager: usize,
    /// Each manager's generators and load.
    pub managers: Vec<ManagerLoad>,
    /// What the plan could not settle; empty when all is well.
    pub warnings: Vec<Warning>,
}

/// Plans a profile: validates it, computes L_i, R, L, the case, the number of log
/// managers and the assignment (see the [module docs](self)).
pub fn plan(profile: &Profile) -> Result<Plan, PlanError> {
    profile.validate()?;
    let lmax = profile.lmax_bytes_per_s;
    let gamma = profile.gamma;
    let rates: BTreeMap<&str, f64> = profile
        .transactions
        .iter()
        .map(|t| (t.name.as_str(), t.rate_tps))
        .collect();
    // `+ 0.0` turns a -0.0 (an empty float sum, or -0.0 given for c) into 0.0, which
    // prints plainly and orders correctly in `assign`'s heap.
    let r: f64 = profile.transactions.iter().map(|t| t.rate_tps).sum::<f64>() + 0.0;
    let commit = r * profile.commit_record_bytes + 0.0;
    let gens: Vec<(String, f64)> = profile
        .expanded()
        .map(|(name, g)| {
            let li = g
                .bytes_per_txn
                .iter()
                .map(|(t, bytes)| rates[t.as_str()] * bytes)
                .sum::<f64>()
                + 0.0;
            (name, li)
        })
        .collect();
    let sum_li: f64 = gens.iter().map(|g| g.1).sum::<f64>() + 0.0;
    let l = sum_li + commit;
    let case = Case::of(l, gamma, lmax);

    let mut warnings = Vec::new();
    for (name, li) in &gens {
        if *li >= lmax {
            warnings.push(warning(WarningKind::GeneratorAboveLmax {
                generator: name.clone(),
                log_bytes_per_s: *li,
            }));
        }
    }
    if commit >= lmax {
        warnings.push(warning(WarningKind::CommitCoordinatorAboveLmax {
            log_bytes_per_s: commit,
        }));
    }

    // Largest first; the stable sort keeps profile order among equals.
    let mut order: Vec<usize> = (0..gens.len()).collect();
    order.sort_by(|&a, &b| gens[b].1.total_cmp(&gens[a].1));

    let by_formula = match case {
        Case::Vertical => (l / lmax).floor() as usize + 1,
        _ => 1,
    };
    // With one manager per positive item every item is alone; more never helps.
    let positive = gens.iter().filter(|g| g.1 > 0.0).count() + usize::from(commit > 0.0);
    let mut n = match case {
        Case::Vertical => by_formula.max(packing_bound(&gens, commit, lmax).min(positive)),
        _ => 1,
    };
    let (mut loads, mut members) = assign(&gens, &order, commit, n);
    if case == Case::Vertical {
        while n < positive && fixable_overload(&gens, &loads, &members, commit, lmax) {
            n += 1;
            (loads, members) = assign(&gens, &order, commit, n);
        }
    }
    if n > by_formula {
        warnings.push(warning(WarningKind::ManagersAdded {
            by_formula,
            planned: n,
        }));
    }
    for (k, &load) in loads.iter().enumerate() {
        if load >= lmax {
            warnings.push(warning(WarningKind::ManagerAboveLmax {
                manager: k + 1,
                load_bytes_per_s: load,
            }));
        }
    }

    let mut manager_of = vec![0; gens.len()];
    for (k, m) in members.iter().enumerate() {
        for &i in m {
            manager_of[i] = k + 1;
        }
    }
    let managers = loads
        .iter()
        .zip(&members)
        .enumerate()
        .map(|(k, (&load, m))| ManagerLoad {
            manager: k + 1,
            load_bytes_per_s: load,
            utilization: load / lmax,
            commit_coordinator: k == 0,
            needs_horizontal: load >= gamma * lmax,
            generators: m.iter().map(|&i| gens[i].0.clone()).collect(),
        })
        .collect();
    Ok(Plan {
        generators: gens
            .iter()
            .zip(&manager_of)
            .map(|((name, li), &m)| GeneratorLoad {
                name: name.clone(),
                log_bytes_per_s: *li,
                manager: m,
            })
            .collect(),
        transactions_per_s: r,
        commit_record_bytes: profile.commit_record_bytes,
        commit_log_bytes_per_s: commit,
        generator_log_bytes_per_s: sum_li,
        log_bytes_per_s: l,
        gamma,
        lmax_bytes_per_s: lmax,
        degraded_lmax_bytes_per_s: gamma * lmax,
        utilization: l / lmax,
        case,
        strategy: case.strategy(),
        managers_by_formula: by_formula,
        manager_count: n,
        commit_coordinator_manager: 1,
        managers,
        warnings,
    })
}

/// The commit coordinator's load on manager 1, then each generator in `order` to the
/// least-loaded of `n` managers (ties to the lowest number). Returns each manager's load
/// and its generators (indices into `gens`).
fn assign(
    gens: &[(String, f64)],
    order: &[usize],
    commit: f64,
    n: usize,
) -> (Vec<f64>, Vec<Vec<usize>>) {
    let mut loads = vec![0.0; n];
    loads[0] = commit;
    let mut members = vec![Vec::new(); n];
    // Min-heap on (load, manager number); loads are finite and ≥ 0, so their bit
    // patterns order like the numbers.
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = loads
        .iter()
        .enumerate()
        .map(|(k, l)| Reverse((l.to_bits(), k)))
        .collect();
    for &i in order {
        let Reverse((_, k)) = heap.pop().expect("n ≥ 1");
        loads[k] += gens[i].1;
        members[k].push(i);
        heap.push(Reverse((loads[k].to_bits(), k)));
    }
    (loads, members)
}

/// A count of managers below which some manager must reach Lmax with two or more items:
/// j + 1 items of at least Lmax / (j + 1) each reach Lmax together, so at most j of them
/// share a manager, and the c_j such items need ⌈c_j / j⌉ managers. Adding managers one
/// at a time could never stop below this count (pigeonhole), so the search starts there;
/// it spares a walk of thousands of reassignments on, say, 60,000 generators of
/// 0.34·Lmax each (⌈L / Lmax⌉ is 20,401, but only pairs fit: 30,000).
fn packing_bound(gens: &[(String, f64)], commit: f64, lmax: f64) -> usize {
    let mut loads: Vec<f64> = gens.iter().map(|g| g.1).chain([commit]).collect();
    loads.retain(|&l| l > 0.0);
    loads.sort_by(|a, b| b.total_cmp(a));
    let mut bound = 0;
    let mut count = 0; // items of at least Lmax / (j + 1)
    for j in 1..=loads.len() {
        while count < loads.len() && loads[count] * (j as f64 + 1.0) >= lmax {
            count += 1;
        }
        bound = bound.max(count.div_ceil(j));
    }
    bound
}

/// Whether some manager at or above Lmax holds more than one item with a positive rate
/// (so spreading over more managers could relieve it).
fn fixable_overload(
    gens: &[(String, f64)],
    loads: &[f64],
    members: &[Vec<usize>],
    commit: f64,
    lmax: f64,
) -> bool {
    loads
        .iter()
        .zip(members)
        .enumerate()
        .any(|(k, (&load, m))| {
            let items = m.iter().filter(|&&i| gens[i].1 > 0.0).count()
                + usize::from(k == 0 && commit > 0.0);
            load >= lmax && items > 1
        })
}

fn warning(kind: WarningKind) -> Warning {
    let message = match &kind {
        WarningKind::GeneratorAboveLmax {
            generator,
            log_bytes_per_s,
        } => format!(
            "generator {generator:?} alone writes {log_bytes_per_s:.0} B/s, at or above Lmax: \
             no assignment helps; reorganize the database partitions to spread its log records \
             over several generators"
        ),
        WarningKind::CommitCoordinatorAboveLmax { log_bytes_per_s } => format!(
            "the commit coordinator alone writes {log_bytes_per_s:.0} B/s of commit records \
             (R·c), at or above Lmax: no log manager can take them"
        ),
        WarningKind::ManagersAdded {
            by_formula,
            planned,
        } => format!(
            "⌈L / Lmax⌉ = {by_formula} managers left one at or above Lmax after the \
             largest-first assignment; planned {planned} (paper footnote 9)"
        ),
        WarningKind::ManagerAboveLmax {
            manager,
            load_bytes_per_s,
        } => format!(
            "manager {manager} stays at {load_bytes_per_s:.0} B/s, at or above Lmax, because \
             one generator (or the commit coordinator) on it reaches Lmax by itself"
        ),
    };
    Warning { kind, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"commit_record_bytes":50,"lmax_bytes_per_s":972327,"gamma":0.8,
        "transactions":[{"name":"T3","rate_tps":68.31}],
        "generators":[{"name":"P","count":64,"bytes_per_txn":{"T3":434.45}}]}"#;

    /// GOOD with `from` replaced by `to` (which must occur once).
    fn with(from: &str, to: &str) -> String {
        assert_eq!(GOOD.matches(from).count(), 1, "{from}");
        GOOD.replace(from, to)
    }

    /// The error for `text`, checked to be one line.
    fn err(text: &str) -> PlanError {
        let e = Profile::from_json(text).expect_err(text);
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
        e
    }

    #[test]
    fn a_good_profile_parses_and_expands_count() {
        let p = Profile::from_json(GOOD).unwrap();
        let names: Vec<String> = p.expanded().map(|g| g.0).collect();
        assert_eq!(names.len(), 64);
        assert_eq!((names[0].as_str(), names[63].as_str()), ("P1", "P64"));
        // Without count: one generator under its own name; bytes_per_txn may be absent.
        let p = Profile::from_json(&with(r#""count":64,"#, "")).unwrap();
        assert_eq!(p.expanded().map(|g| g.0).collect::<Vec<_>>(), ["P"]);
        let p = Profile::from_json(&with(r#","bytes_per_txn":{"T3":434.45}"#, "")).unwrap();
        assert_eq!(plan(&p).unwrap().generators[0].log_bytes_per_s, 0.0);
    }

    #[test]
    fn missing_fields_and_wrong_types_are_malformed() {
        for (from, to, says) in [
            (r#""gamma":0.8,"#, "", "missing field `gamma`"),
            (
                r#""commit_record_bytes":50,"#,
                "",
                "missing field `commit_record_bytes`",
            ),
            (
                r#""lmax_bytes_per_s":972327,"#,
                "",
                "missing field `lmax_bytes_per_s`",
            ),
            (
                r#""rate_tps":68.31"#,
                r#""rate":68.31"#,
                "unknown field `rate`",
            ),
            (r#""gamma":0.8"#, r#""gamma":"high""#, "invalid type"),
            (r#""gamma":0.8"#, r#""gamma":null"#, "invalid type: null"),
            (r#""count":64"#, r#""count":-1"#, "invalid value"),
            (r#""count":64"#, r#""count":2.5"#, "invalid type"),
            (r#"{"T3":434.45}"#, r#"{"T3":1,"T3":2}"#, "appears twice"),
            (
                r#""gamma":0.8,"#,
                r#""gamma":0.8,"lmax":1,"#,
                "unknown field `lmax`",
            ),
        ] {
            let e = err(&with(from, to));
            assert!(matches!(e, PlanError::Malformed(_)), "{e}");
            assert!(e.to_string().contains(says), "{e} lacks {says}");
        }
        assert!(matches!(err("not json"), PlanError::Malformed(_)));
        assert!(matches!(err(""), PlanError::Malformed(_)));
        assert!(matches!(err("[]"), PlanError::Malformed(_)));
    }

    #[test]
    fn negative_values_are_refused_by_name() {
        for (from, to, field) in [
            (
                r#""rate_tps":68.31"#,
                r#""rate_tps":-1"#,
                r#"transaction "T3" rate_tps"#,
            ),
            (
                r#"{"T3":434.45}"#,
                r#"{"T3":-434.45}"#,
                r#"generator "P" bytes_per_txn["T3"]"#,
            ),
            (
                r#""commit_record_bytes":50"#,
                r#""commit_record_bytes":-50"#,
                "commit_record_bytes",
            ),
            (
                r#""lmax_bytes_per_s":972327"#,
                r#""lmax_bytes_per_s":0"#,
                "lmax_bytes_per_s",
            ),
            (
                r#""lmax_bytes_per_s":972327"#,
                r#""lmax_bytes_per_s":-5"#,
                "lmax_bytes_per_s",
            ),
        ] {
            let e = err(&with(from, to));
            assert!(
                matches!(&e, PlanError::BadNumber { field: f, .. } if f == field),
                "{e}"
            );
        }
        // JSON has no NaN or infinity; a profile built in code can.
        let mut p = Profile::from_json(GOOD).unwrap();
        p.transactions[0].rate_tps = f64::NAN;
        assert!(matches!(p.validate(), Err(PlanError::BadNumber { .. })));
        assert!(plan(&p).is_err());
        p.transactions[0].rate_tps = 1.0;
        p.lmax_bytes_per_s = f64::INFINITY;
        assert!(matches!(p.validate(), Err(PlanError::BadNumber { .. })));
        p.lmax_bytes_per_s = 1.0;
        p.gamma = f64::NAN;
        assert!(matches!(p.validate(), Err(PlanError::Gamma(g)) if g.is_nan()));
        // Numbers too large for f64 are a parse error, not infinity.
        assert!(matches!(
            err(&with(r#""gamma":0.8"#, r#""gamma":1e999"#)),
            PlanError::Malformed(_)
        ));
    }

    #[test]
    fn gamma_must_lie_strictly_inside_0_1() {
        for g in ["0", "1", "-0.5", "1.5"] {
            let e = err(&with(r#""gamma":0.8"#, &format!(r#""gamma":{g}"#)));
            assert!(matches!(e, PlanError::Gamma(_)), "{g}: {e}");
            assert!(e.to_string().contains("strictly between 0 and 1"));
        }
        assert!(Profile::from_json(&with(r#""gamma":0.8"#, r#""gamma":0.999"#)).is_ok());
    }

    #[test]
    fn empty_lists_names_duplicates_and_unknown_types() {
        let e = err(&with(r#"[{"name":"T3","rate_tps":68.31}]"#, "[]"));
        assert_eq!(e, PlanError::Empty("transactions"));
        let e = err(&with(
            r#"[{"name":"P","count":64,"bytes_per_txn":{"T3":434.45}}]"#,
            "[]",
        ));
        assert_eq!(e, PlanError::Empty("generators"));
        let e = err(&with(r#""name":"T3","#, r#""name":"","#));
        assert!(matches!(
            e,
            PlanError::EmptyName {
                what: "transaction",
                index: 1
            }
        ));
        let e = err(&with(r#""name":"P","#, r#""name":"","#));
        assert!(matches!(
            e,
            PlanError::EmptyName {
                what: "generator",
                index: 1
            }
        ));
        let e = err(&with(
            r#"{"name":"T3","rate_tps":68.31}"#,
            r#"{"name":"T3","rate_tps":68.31},{"name":"T3","rate_tps":1}"#,
        ));
        assert_eq!(
            e,
            PlanError::Duplicate {
                what: "transaction",
                name: "T3".into()
            }
        );
        // Duplicates after expansion: P with count 64 makes P12.
        let e = err(&with(
            r#""bytes_per_txn":{"T3":434.45}}"#,
            r#""bytes_per_txn":{"T3":434.45}},{"name":"P12"}"#,
        ));
        assert_eq!(
            e,
            PlanError::Duplicate {
                what: "generator",
                name: "P12".into()
            }
        );
        let e = err(&with(r#"{"T3":434.45}"#, r#"{"T9":434.45}"#));
        assert_eq!(
            e,
            PlanError::UnknownTransaction {
                generator: "P".into(),
                transaction: "T9".into()
            }
        );
        let e = err(&with(r#""count":64"#, r#""count":0"#));
        assert_eq!(e, PlanError::ZeroCount("P".into()));
        let e = err(&with(r#""count":64"#, r#""count":18446744073709551615"#));
        assert!(matches!(e, PlanError::TooManyGenerators(_)), "{e}");
    }

    #[test]
    fn names_with_newlines_still_give_one_line() {
        let e = err(&with(r#"{"T3":434.45}"#, r#"{"T\n9":434.45}"#));
        assert!(e.to_string().contains(r#""T\n9""#), "{e}");
    }
}
