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
