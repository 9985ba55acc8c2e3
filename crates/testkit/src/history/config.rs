//! A run's configuration, drawn from its seed (swarm testing: every option that changes
//! a code path is a dimension, drawn anew per seed, so any two options meet often and a
//! failure replays from its seed alone).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sluice::experiment::{PageCleaner, Policy};
use sluice::{CommitProtocol, Options, Strategy};
use sluice_wal::FlushPath;
use std::fmt;
use std::time::Duration;

/// How a run's clients run their transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Each client thread begins and commits its own transactions (the pipelined
    /// protocols behave as their blocking counterparts).
    Direct,
    /// Each client submits its transactions to a pool of this many agents (flush
    /// pipelining where the protocol has it) and waits for each.
    Agents(usize),
}

/// Every propagation strategy a run can draw: checkpoint sweeps, the page cleaner under
/// each policy, log-based propagation.
pub fn strategies() -> Vec<Strategy> {
    let page = |policy| Strategy::Page(PageCleaner { policy, heap: 0 });
    vec![
        Strategy::CheckpointSweep,
        page(Policy::Oldest),
        page(Policy::Coldest),
        page(Policy::Hottest),
        page(Policy::None),
        page(Policy::Clustered { min_pages: 2 }),
        page(Policy::Mixed),
        Strategy::Log,
    ]
}

/// The three families of propagation strategy (the CI test covers each with every
/// protocol and page size; a run of the `Page` family draws its policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `Strategy::CheckpointSweep`.
    CheckpointSweep,
    /// `Strategy::Page` with a drawn policy.
    Page,
    /// `Strategy::Log`.
    Log,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 3] = [Family::CheckpointSweep, Family::Page, Family::Log];

    /// Whether `s` is of this family.
    pub fn holds(self, s: &Strategy) -> bool {
        matches!(
            (self, s),
            (Family::CheckpointSweep, Strategy::CheckpointSweep)
                | (Family::Page, Strategy::Page(_))
                | (Family::Log, Strategy::Log)
        )
    }
}

/// Dimensions a sweep fixes instead of drawing (`None`: drawn from the seed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fixed {
    /// The commit protocol.
    pub protocol: Option<CommitProtocol>,
    /// The family of propagation strategy.
    pub family: Option<Family>,
    /// The propagation strategy itself (wins over `family`).
    pub strategy: Option<Strategy>,
    /// The page size.
    pub page_size: Option<usize>,
    /// The buffer pool's frames.
    pub pool_pages: Option<usize>,
    /// Transactions per client thread.
    pub txns_per_client: Option<usize>,
    /// Through agents (`true`) or direct transactions (`false`).
    pub agents: Option<bool>,
}

/// Everything a run depends on besides thread timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The seed it was drawn from (also the seed of every client's choices).
    pub seed: u64,
    /// The commit protocol.
    pub protocol: CommitProtocol,
    /// Direct transactions or agents.
    pub via: Via,
    /// The propagation strategy.
    pub strategy: Strategy,
    /// Bytes per page: 1 KiB or 8 KiB.
    pub page_size: usize,
    /// Buffer-pool frames: the minimum of 16 half the time, else up to 48.
    pub pool_pages: usize,
    /// Log bytes between background checkpoints (small: frequent checkpoints).
    pub checkpoint_log_bytes: u64,
    /// Client threads, 2 to 8.
    pub clients: usize,
    /// Keys per table, 12 to 32.
    pub keys: usize,
    /// Transactions each client runs.
    pub txns_per_client: usize,
    /// Whether a compactor ([`sluice::Database::compact`]) runs beside the clients, again
    /// and again until they finish: trees cut back when every key is deleted, under
    /// transactions that read, scan and re-insert them.
    pub compact: bool,
    /// How the log's rounds reach the disk, from the seed (not drawn, so every other
    /// dimension of a seed is what it was): the io_uring path in three seeds of five
    /// (the simulated disk's deferred, reordering ring), the daemon in one, and io_uring
    /// refused by the disk (the daemon as fallback) in one.
    pub flush: FlushPath,
    /// The simulated disk refuses a ring (see `flush`).
    pub ring_refused: bool,
}

impl Config {
    /// The configuration of `seed`, with the dimensions `fixed` names set as it says.
    /// Every dimension is drawn first, whatever is fixed, so a fixed protocol does not
    /// change the rest of the seed's draw.
    pub fn draw(seed: u64, fixed: Fixed) -> Config {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x4869_7374_6f72_7921);
        let protocol = CommitProtocol::ALL[rng.gen_range(0..CommitProtocol::ALL.len())];
        let agents = rng.gen_range(1..=4);
        let direct = rng.gen_bool(0.5);
        // The family first, then its member: log-based propagation and checkpoint sweeps
        // get a third of the runs each, not one strategy's share in eight.
        let all = strategies();
        let family = Family::ALL[rng.gen_range(0..Family::ALL.len())];
        let members: Vec<Strategy> = all.iter().copied().filter(|s| family.holds(s)).collect();
        let mut strategy = members[rng.gen_range(0..members.len())];
        let page_size = if rng.gen_bool(0.5) { 1024 } else { 8192 };
        // The minimum pool half the time: evictions on almost every access (log-based
        // propagation reverted committed values there, with checkpoints every 8 KiB).
        let pool_pages = if rng.gen_bool(0.5) {
            16
        } else {
            rng.gen_range(17..=48)
        };
        // A checkpoint every 4 KiB to 128 KiB of log.
        let checkpoint_log_bytes = 1u64 << rng.gen_range(12..=17);
        let clients = rng.gen_range(2..=8);
        let keys = rng.gen_range(12..=32);
        // About 400 transactions per run whatever the client count.
        let txns_per_client = 400 / clients;
        // Drawn last, so that every other draw of a seed is what it was before.
        let compact = rng.gen_bool(0.35);
        // Fixing the family redraws the strategy inside it from the seed alone (not the
        // stream: the other dimensions stay as drawn).
        if let Some(f) = fixed.family {
            if !f.holds(&strategy) {
                let inside: Vec<_> = all.into_iter().filter(|s| f.holds(s)).collect();
                strategy = inside[(seed as usize).wrapping_mul(7) % inside.len()];
            }
        }
        if let Some(s) = fixed.strategy {
            strategy = s;
        }
        Config {
            seed,
            protocol: fixed.protocol.unwrap_or(protocol),
            via: if !fixed.agents.unwrap_or(!direct) {
                Via::Direct
            } else {
                Via::Agents(agents)
            },
            strategy,
            page_size: fixed.page_size.unwrap_or(page_size),
            pool_pages: fixed.pool_pages.unwrap_or(pool_pages),
            checkpoint_log_bytes,
            clients,
            keys,
            txns_per_client: fixed.txns_per_client.unwrap_or(txns_per_client),
            compact,
            flush: if seed % 5 == 2 {
                FlushPath::Daemon
            } else {
                FlushPath::IoUring
            },
            ring_refused: seed % 5 == 4,
        }
    }

    /// The database's options.
    pub fn options(&self) -> Options {
        let mut o = Options::small();
        o.page_size = self.page_size;
        o.pool_pages = self.pool_pages;
        o.commit = self.protocol;
        o.propagation = self.strategy;
        o.checkpoint_log_bytes = self.checkpoint_log_bytes;
        o.log.flush = self.flush;
        // Small segments: checkpoints truncate and recycle them often.
        o.log.segment_bytes = 64 << 10;
        // Deadlocks are found at once by the wait-for graph; the timeout only bounds a
        // wait the graph missed, and a short one keeps a run short if that happens.
        o.lock_timeout = Duration::from_millis(300);
        o.propagation_segment_bytes = (16 << 10).max(self.page_size * 2);
        o
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let via = match self.via {
            Via::Direct => "direct".to_string(),
            Via::Agents(n) => format!("{n} agents"),
        };
        write!(
            f,
            "seed {} {} {via} {} {} B pages, {} frames, checkpoint every {} KiB, {} clients x {} txns, {} keys x 2 tables",
            self.seed,
            self.protocol,
            self.strategy,
            self.page_size,
            self.pool_pages,
            self.checkpoint_log_bytes >> 10,
            self.clients,
            self.txns_per_client,
            self.keys
        )?;
        if self.compact {
            write!(f, ", compacting")?;
        }
        match (self.flush, self.ring_refused) {
            (FlushPath::Daemon, _) => write!(f, ", flush daemon")?,
            (FlushPath::IoUring, true) => write!(f, ", io_uring refused")?,
            (FlushPath::IoUring, false) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixing_a_dimension_keeps_the_others() {
        for seed in 0..200 {
            let free = Config::draw(seed, Fixed::default());
            let fixed = Config::draw(
                seed,
                Fixed {
                    protocol: Some(CommitProtocol::Classic),
                    family: Some(Family::Log),
                    page_size: Some(1024),
                    ..Fixed::default()
                },
            );
            assert_eq!(fixed.protocol, CommitProtocol::Classic);
            assert_eq!(fixed.strategy, Strategy::Log);
            assert_eq!(fixed.page_size, 1024);
            assert_eq!(
                (free.clients, free.keys, free.via),
                (fixed.clients, fixed.keys, fixed.via)
            );
            assert_eq!(Config::draw(seed, Fixed::default()), free);
        }
    }

    #[test]
    fn every_family_draws_every_member() {
        for f in Family::ALL {
            let members: std::collections::HashSet<String> = (0..400)
                .map(|s| {
                    Config::draw(
                        s,
                        Fixed {
                            family: Some(f),
                            ..Fixed::default()
                        },
                    )
                    .strategy
                    .to_string()
                })
                .collect();
            let want = strategies().iter().filter(|s| f.holds(s)).count();
            assert_eq!(members.len(), want, "{f:?}: {members:?}");
        }
    }
}
