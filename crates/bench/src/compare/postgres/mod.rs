//! PostgreSQL through pgbench, on a throwaway cluster (TPC-B only: pgbench has no TATP).

mod tpcb;

pub use tpcb::{find_bin, Cluster, PgRun, VARIANTS};
