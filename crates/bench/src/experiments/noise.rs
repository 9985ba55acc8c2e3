//! What the sweeps do about a noisy, small machine, in one place for all of them: the
//! range of `repeat`, rounds that interleave a figure's points, and the note a figure
//! carries when the machine has fewer hardware threads than the sweep runs.
//!
//! On a shared machine the noise is not independent per run: another process starts, the
//! disk's cache fills, the CPU's clock steps down. Running every point once per round
//! (rather than all repeats of one point, then the next) spreads such drift over every
//! variant alike, so a difference between two variants' medians is the variants', not
//! the minute they ran in.

use crate::knobs::in_range;

/// The most rounds a sweep runs: a typo must not start a day-long sweep.
pub const MAX_REPEAT: usize = 100;

/// The rounds a sweep runs by default: the least that has a median and a spread that
/// one outlying run does not make.
pub const DEFAULT_REPEAT: usize = 3;

/// Checks a sweep's `repeat` (1 to [`MAX_REPEAT`]); the message names the knob.
pub fn check_repeat(repeat: usize) -> Result<usize, String> {
    in_range("repeat", repeat, 1..=MAX_REPEAT)
}

/// `repeat` rounds of `round`, one after another, each run paired with its round
/// (0-based): round r runs every point once, in the same order.
pub fn rounds<T: Clone>(round: &[T], repeat: usize) -> Vec<(usize, T)> {
    let out: Vec<(usize, T)> = (0..repeat)
        .flat_map(|r| round.iter().map(move |p| (r, p.clone())))
        .collect();
    debug_assert_eq!(out.len(), round.len() * repeat);
    out
}

/// The hardware threads of the machine Aether's figures ran on (a Sun Niagara II: 8
/// cores × 8 threads); a machine with fewer cannot show what needs idle hardware
/// threads past its own count.
pub const PAPER_HARDWARE_THREADS: usize = 64;

/// The note for a figure that runs up to `most` threads (clients, inserting threads) on a
/// machine of `hw` hardware threads: `None` when every run had a hardware thread per
/// thread. `past` says what happens past `hw` ("clients the agents share cores") and
/// `so` what the figure therefore cannot show.
pub fn hardware_note(hw: usize, most: usize, past: &str, so: &str) -> Option<String> {
    hardware_note_against(PAPER_HARDWARE_THREADS, hw, most, past, so)
}

/// [`hardware_note`] for a paper whose machine had `paper` hardware threads (the Tandem
/// paper's: 16 CPUs).
pub fn hardware_note_against(
    paper: usize,
    hw: usize,
    most: usize,
    past: &str,
    so: &str,
) -> Option<String> {
    (most > hw).then(|| {
        format!("{hw} hardware threads here, {paper} in the paper: past {hw} {past}, so {so}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_repeat_the_round_in_order() {
        let r = rounds(&["a", "b", "c"], 2);
        assert_eq!(
            r,
            [(0, "a"), (0, "b"), (0, "c"), (1, "a"), (1, "b"), (1, "c")]
        );
        assert!(rounds(&["a"], 0).is_empty());
    }

    #[test]
    fn repeat_is_checked_against_its_range() {
        assert_eq!(check_repeat(1), Ok(1));
        assert_eq!(check_repeat(MAX_REPEAT), Ok(MAX_REPEAT));
        for bad in [0, MAX_REPEAT + 1] {
            let e = check_repeat(bad).unwrap_err();
            assert!(e.starts_with("repeat must be between 1 and"), "{e}");
        }
    }

    #[test]
    fn the_hardware_note_comes_from_the_thread_count() {
        let n = hardware_note(2, 64, "clients they share", "nothing").unwrap();
        assert_eq!(
            n,
            "2 hardware threads here, 64 in the paper: past 2 clients they share, so nothing"
        );
        assert_eq!(
            hardware_note(2, 2, "x", "y"),
            None,
            "no point past the cores"
        );
        assert_eq!(hardware_note(64, 64, "x", "y"), None, "the paper's machine");
        let n = hardware_note_against(16, 2, 16, "they share", "less").unwrap();
        assert!(
            n.starts_with("2 hardware threads here, 16 in the paper"),
            "{n}"
        );
    }
}
