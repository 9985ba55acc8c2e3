//! `sluice peer-child` (hidden): TPC-B on SQLite or RocksDB forever, printing
//! `ack <history id>` for each commit the engine acknowledged. The kill test runs it,
//! SIGKILLs it mid-run, and checks that every printed id survived.

use crate::Failure;
use sluice_bench::compare::Engine;
use std::path::PathBuf;

/// Flags of `sluice peer-child`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// sqlite or rocksdb.
    #[arg(long, value_enum)]
    engine: Engine,
    /// The database directory (loaded when it holds no database yet).
    #[arg(long)]
    dir: PathBuf,
    /// Client threads.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Branches.
    #[arg(long, default_value_t = 2)]
    scale: u32,
    /// Accounts per branch (small, so that the load takes no time).
    #[arg(long, default_value_t = 1_000)]
    accounts_per_branch: u32,
}

#[cfg(not(feature = "peers"))]
pub fn run(a: Args) -> Result<(), Failure> {
    Err(Failure::Usage(format!(
        "{} is not in this build; build with: {}",
        a.engine,
        sluice_bench::compare::BUILD_PEERS
    )))
}

#[cfg(feature = "peers")]
pub fn run(a: Args) -> Result<(), Failure> {
    use sluice_bench::compare::peer::{self, PeerRunConfig, TpcbPeer};
    use sluice_bench::compare::rocksdb::RocksTpcb;
    use sluice_bench::compare::sqlite::SqliteTpcb;
    use sluice_bench::knobs::in_range;
    use sluice_bench::workloads::tpcb::{TpcbInput, TpcbShape, ACCOUNTS_PER_BRANCH};
    use std::io::Write;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    in_range("--clients", a.clients, 1..=1_000).map_err(Failure::Usage)?;
    in_range("--scale", a.scale, 1..=1_000).map_err(Failure::Usage)?;
    in_range(
        "--accounts-per-branch",
        a.accounts_per_branch,
        1..=ACCOUNTS_PER_BRANCH,
    )
    .map_err(Failure::Usage)?;
    std::fs::create_dir_all(&a.dir).map_err(|e| Failure::Runtime(e.to_string()))?;
    let shape = TpcbShape {
        accounts_per_branch: a.accounts_per_branch,
        ..TpcbShape::standard(a.scale)
    };
    fn go<P: TpcbPeer>(
        p: &P,
        shape: TpcbShape,
        clients: usize,
        ids: Vec<u64>,
    ) -> Result<(), Failure> {
        // A run tag past every earlier run's in this directory: ids never repeat.
        let run_tag = ids.iter().map(|id| id >> 40).max().unwrap_or(0) + 1;
        let cfg = PeerRunConfig {
            clients,
            warmup: Duration::ZERO,
            measure: Duration::from_secs(86_400),
            seed: run_tag,
            run_tag,
        };
        println!("ready");
        let stdout = std::io::stdout();
        // Printed only after the commit returned: each line is an acknowledged commit.
        let ack = |i: &TpcbInput| {
            let mut out = stdout.lock();
            let _ = writeln!(out, "ack {}", i.history_id);
            let _ = out.flush();
        };
        let never = AtomicBool::new(false);
        peer::run(p, shape, &cfg, &ack, &never, |_| {}).map_err(Failure::Runtime)?;
        Ok(())
    }
    let fresh = std::fs::read_dir(&a.dir)
        .map(|mut d| d.next().is_none())
        .unwrap_or(true);
    match a.engine {
        Engine::Sqlite => {
            let p = if fresh {
                SqliteTpcb::load(&a.dir, &shape, |_| {})
            } else {
                SqliteTpcb::open(&a.dir)
            }
            .map_err(Failure::Runtime)?;
            let ids = p.history_ids().map_err(Failure::Runtime)?;
            go(&p, shape, a.clients, ids)
        }
        Engine::Rocksdb => {
            let p = if fresh {
                RocksTpcb::load(&a.dir, &shape, |_| {})
            } else {
                RocksTpcb::open(&a.dir)
            }
            .map_err(Failure::Runtime)?;
            let ids = p.history_ids().map_err(Failure::Runtime)?;
            go(&p, shape, a.clients, ids)
        }
        e => Err(Failure::Usage(format!(
            "--engine must be sqlite or rocksdb, got {e}"
        ))),
    }
}
