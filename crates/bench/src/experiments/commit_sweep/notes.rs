//! What a commit sweep's figures say under their plots about how they were measured:
//! where the log was, and what this machine cannot show of the paper's figure.

use super::{Figure, SweepConfig};
use crate::experiments::noise;
use crate::metrics::cores;

/// Where the log was.
pub(super) fn log_note(cfg: &SweepConfig) -> String {
    match (cfg.figure, cfg.log_latency) {
        (Figure::ElrSkew, _) => "log on the emulated device".to_string(),
        (_, Some(l)) => format!("log on an emulated device of {l:?}"),
        (_, None) => "log on the real disk".to_string(),
    }
}

/// What this machine cannot show of the paper's figure, from its hardware threads
/// (`std::thread::available_parallelism`): past that many clients, agents time-share
/// cores that the paper's machine had to spare. Empty when nothing is to be said.
pub(super) fn machine_notes(cfg: &SweepConfig) -> Vec<String> {
    hardware_note(
        cfg.figure,
        cores(),
        cfg.clients.iter().copied().max().unwrap_or(1),
    )
    .into_iter()
    .collect()
}

fn hardware_note(figure: Figure, hw: usize, max_clients: usize) -> Option<String> {
    // Fig. 7's contention is many threads inserting into the log at once; the pipelined
    // agents are one per hardware thread, so this machine has that many inserters.
    let so = if figure == Figure::Breakdown {
        format!("only {hw} agents insert into the log at once, and the paper's log-buffer contention cannot show")
    } else {
        "what needs idle cores cannot show".to_string()
    };
    noise::hardware_note(hw, max_clients, "clients the agents share cores", &so)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hardware_note_comes_from_the_thread_count() {
        let n = hardware_note(Figure::Ctx, 2, 64).unwrap();
        assert!(n.starts_with("2 hardware threads here"), "{n}");
        assert!(n.ends_with("idle cores cannot show"), "{n}");
        let n = hardware_note(Figure::Breakdown, 2, 64).unwrap();
        assert!(n.contains("only 2 agents insert"), "{n}");
        assert_eq!(
            hardware_note(Figure::Ctx, 2, 2),
            None,
            "no point past the cores"
        );
        assert_eq!(
            hardware_note(Figure::Ctx, 64, 64),
            None,
            "the paper's machine or larger"
        );
    }
}
