//! Progress bars for long runs (hidden when stderr is not a terminal or `--json` is set,
//! so scripts get clean output).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting to `len` steps, with a message.
pub fn bar(len: u64, msg: &str, quiet: bool) -> ProgressBar {
    let pb = ProgressBar::new(len);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    }
    pb.set_style(
        ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} ({eta} left)")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    pb.set_message(msg.to_string());
    pb
}

/// Runs `work` under a bar of `msg` (hidden when `quiet`) that `work` moves by calling its
/// argument with the fraction done, 0 to 1.
pub fn fraction<T>(msg: &str, quiet: bool, work: impl FnOnce(&dyn Fn(f64)) -> T) -> T {
    let pb = bar(1000, msg, quiet);
    let r = work(&|f| pb.set_position((f * 1000.0) as u64));
    pb.finish_and_clear();
    r
}
