//! Workloads shared by the tests and the CLI, so both run exactly the same thing: the
//! crash sweep ([`crash::crash_test`]), the swarm sweep ([`swarm::swarm`]), the bulk load
//! ([`load::load_verify`]), the range-sum serializability workload ([`range_sum::run`])
//! and the history checker ([`history::run_seed`]); and the layer rule every crate's
//! modules keep ([`layers::Layers`]).

pub mod crash;
pub mod dir_snapshot;
pub mod fence;
pub mod history;
pub mod io_errors;
pub mod layers;
pub mod load;
pub mod range_sum;
pub mod swarm;
