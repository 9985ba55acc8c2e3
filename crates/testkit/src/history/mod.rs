//! A serializability checker in the manner of Jepsen's Elle (Kingsbury & Alvaro, VLDB
//! 2020): record histories of random concurrent transactions, recover each key's
//! version order, build the dependency graph, search it for cycles and name the anomaly
//! with the smallest history that shows it; and, as a second oracle independent of the
//! graph, replay the committed transactions in commit order against a map.
//!
//! * [`workload`] runs client threads of random transactions ([`body`]) and records
//!   them ([`record`]), on a configuration drawn from the seed ([`config`]);
//! * [`facts`] turns operations into external reads and per-key writes, checking each
//!   transaction against its own writes;
//! * [`oracle`] replays in commit-LSN order and places the read-only transactions;
//! * [`versions`] recovers the version order from the values writes returned;
//! * [`graph`] builds the ww / wr / rw (item and predicate) edges;
//! * [`cycles`] finds and classifies the cycles; [`report`] prints them;
//! * [`check()`] runs the analysis, [`sweep()`] runs seeds.

pub mod body;
pub mod check;
pub mod config;
pub mod cycles;
pub mod facts;
pub mod graph;
pub mod oracle;
pub mod record;
pub mod report;
pub mod sweep;
pub mod versions;
pub mod workload;

pub use check::{check, Checked};
pub use config::{Config, Family, Fixed, Via};
pub use record::{End, Form, History, Key, Op, Span, Txn, TxnNo, Val, ValueId};
pub use report::{Anomaly, Class};
pub use sweep::{run_seed, sweep, Limit, SeedReport, SweepReport};
