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
//!   throughput as generators are added, the paper's footnote 7). The paper says Lmax
//!   depends on the log bytes per transaction L / R (fewer forced commit writes per
//!   byte as transactions grow); with [`Profile::lmax_txn_overhead_s`] the planner
//!   takes Lmax = b / (t₀ + b/B) at the profile's b = L / R ([`LmaxCurve`]), fitted from
//!   plateaus measured at two or more sizes,
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
//!   "lmax_bytes_per_s": 1011890,
//!   "lmax_txn_overhead_s": 0.0011375,
//!   "gamma": 0.5,
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
//!
//! The model imports nothing of the log: it is a crate of its own, which `sluice plan`
//! (the CLI) and the benchmarks use.

#![warn(missing_docs)]

mod lmax;
mod model;
mod profile;

pub use lmax::LmaxCurve;
pub use model::{plan, Case, GeneratorLoad, ManagerLoad, Partitioning, Plan, Warning, WarningKind};
pub use profile::{GeneratorSpec, PlanError, Profile, TransactionType, MAX_GENERATORS};
