//! The model itself: from a validated [`Profile`], the aggregate log rate, the case of
//! Table 1, the number of log managers and the assignment of generators to them (see the
//! [crate docs](crate)).

use crate::lmax::LmaxCurve;
use crate::profile::{PlanError, Profile};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt;

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
    /// [crate docs](crate)).
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

    /// The log partitioning the case calls for.
    pub fn partitioning(self) -> Partitioning {
        match self {
            Case::NoPartitioning => Partitioning::None,
            Case::Horizontal => Partitioning::Horizontal,
            Case::Vertical => Partitioning::Vertical,
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

/// The log partitioning a case calls for (Table 1's right column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Partitioning {
    /// No log partitioning necessary.
    None,
    /// Horizontal log partitioning: log files rotate over devices so the archiver copies
    /// a finished file off a device the log manager no longer writes.
    Horizontal,
    /// Vertical log partitioning: several log managers, each serving some generators.
    Vertical,
}

impl fmt::Display for Partitioning {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            Partitioning::None => "no log partitioning necessary",
            Partitioning::Horizontal => "horizontal log partitioning",
            Partitioning::Vertical => "vertical log partitioning",
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
    /// L / R: log bytes per transaction, commit records included (0 when R is 0).
    pub log_bytes_per_txn: f64,
    /// Lmax for this profile, bytes/s: the profile's `lmax_bytes_per_s`, or with
    /// `lmax_txn_overhead_s` the curve at `log_bytes_per_txn`.
    pub lmax_bytes_per_s: f64,
    /// The curve Lmax was read from (t₀ = 0 when the profile gives one Lmax for all).
    pub lmax_curve: LmaxCurve,
    /// γ·Lmax, bytes/s: what one manager accepts right after a rollover.
    pub degraded_lmax_bytes_per_s: f64,
    /// L / Lmax.
    pub utilization: f64,
    /// Table 1's case (serialised as 1, 2 or 3).
    pub case: Case,
    /// The case's partitioning (serialised as `strategy`).
    #[serde(rename = "strategy")]
    pub partitioning: Partitioning,
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
/// managers and the assignment (see the [crate docs](crate)).
pub fn plan(profile: &Profile) -> Result<Plan, PlanError> {
    profile.validate()?;
    let curve = LmaxCurve {
        ceiling_bytes_per_s: profile.lmax_bytes_per_s,
        txn_overhead_s: profile.lmax_txn_overhead_s.unwrap_or(0.0),
    };
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
    let per_txn = if r > 0.0 { l / r } else { 0.0 };
    let lmax = curve.at(per_txn);
    assert!(
        lmax > 0.0 && lmax.is_finite(),
        "a validated profile gives Lmax > 0"
    );
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
        log_bytes_per_txn: per_txn,
        lmax_bytes_per_s: lmax,
        lmax_curve: curve,
        degraded_lmax_bytes_per_s: gamma * lmax,
        utilization: l / lmax,
        case,
        partitioning: case.partitioning(),
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
