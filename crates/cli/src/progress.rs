//! Progress for long runs, on stderr: a bar on a terminal; plain lines elsewhere (a
//! pipe, a log file, CI), so that a run is never silent for its ~20 s; nothing with
//! `--json`, so scripts get clean output.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::cell::Cell;
use std::io::IsTerminal;
use std::time::Instant;

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
/// argument with the fraction done, 0 to 1, shown as a percentage. When stderr is not a
/// terminal, plain lines instead: `msg: 10 %` … `msg: done in 3.2 s`.
pub fn fraction<T>(msg: &str, quiet: bool, work: impl FnOnce(&dyn Fn(f64)) -> T) -> T {
    if !quiet && !std::io::stderr().is_terminal() {
        return plain(msg, work);
    }
    let pb = percent_bar(msg, quiet);
    let r = work(&|f| pb.set_position((f * 1000.0) as u64));
    pb.finish_and_clear();
    r
}

/// A bar of 1000 steps shown as a percentage (hidden when `quiet`).
fn percent_bar(msg: &str, quiet: bool) -> ProgressBar {
    let pb = bar(1000, msg, quiet);
    pb.set_style(
        ProgressStyle::with_template("{msg:>24} [{bar:40}] {percent:>3} % ({eta} left)")
            .expect("the template is valid")
            .progress_chars("=> "),
    );
    pb
}

/// [`fraction`]'s plain lines: one at the start, one per tenth done, one at the end.
fn plain<T>(msg: &str, work: impl FnOnce(&dyn Fn(f64)) -> T) -> T {
    let started = Instant::now();
    let shown = Cell::new(0u32);
    eprintln!("{msg}: started");
    let r = work(&|f| tenth_line(msg, &shown, f, started));
    eprintln!("{msg}: done in {:.1} s", started.elapsed().as_secs_f64());
    r
}

/// The plain line for a fraction `f` done since `started`, once per tenth (`shown`: the
/// last tenth printed).
fn tenth_line(msg: &str, shown: &Cell<u32>, f: f64, started: Instant) {
    let tenths = (f.clamp(0.0, 1.0) * 10.0) as u32;
    if tenths > shown.get() && tenths < 10 {
        shown.set(tenths);
        eprintln!(
            "{msg}: {} % ({:.1} s)",
            tenths * 10,
            started.elapsed().as_secs_f64()
        );
    }
}

/// [`fraction`] for work that may first refuse its input: nothing is shown until `work`
/// reports its first progress, so a refusal before any work is the only line on stderr
/// (a usage error is one line). On a terminal the bar, elsewhere the plain lines, start
/// at that first report.
pub fn fraction_once_started<T>(msg: &str, quiet: bool, work: impl FnOnce(&dyn Fn(f64)) -> T) -> T {
    let terminal = std::io::stderr().is_terminal();
    let started: Cell<Option<(Instant, Option<ProgressBar>)>> = Cell::new(None);
    let shown = Cell::new(0u32);
    let r = work(&|f| {
        if quiet {
            return;
        }
        let (at, pb) = match started.take() {
            Some(s) => s,
            None if terminal => (Instant::now(), Some(percent_bar(msg, false))),
            None => {
                eprintln!("{msg}: started");
                (Instant::now(), None)
            }
        };
        match &pb {
            Some(pb) => pb.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64),
            None => tenth_line(msg, &shown, f, at),
        }
        started.set(Some((at, pb)));
    });
    match started.take() {
        Some((_, Some(pb))) => pb.finish_and_clear(),
        Some((at, None)) => eprintln!("{msg}: done in {:.1} s", at.elapsed().as_secs_f64()),
        None => {}
    }
    r
}

/// [`fraction_once_started`] for work in named steps: `work` reports a step's name and its
/// fraction done. Each step gets its own bar, titled `msg: step`, left drawn full when the
/// next step starts; elsewhere plain lines per step (`msg: step: started`, its tenths once
/// it has run a second, `msg: step done in 3.2 s`). Nothing is shown until the work is
/// under way — a second step begun, or the first one a second old — so a refusal found
/// by a short first step (a restore's target read from the log) is the only line on
/// stderr. A step the work fails in is left as it stood, never shown done.
pub fn steps_once_started<T, E>(
    msg: &str,
    quiet: bool,
    work: impl FnOnce(&dyn Fn(&str, f64)) -> Result<T, E>,
) -> Result<T, E> {
    let terminal = std::io::stderr().is_terminal();
    // The step under way: its title, when it started, whether it is shown yet, its bar
    // (on a terminal, once shown).
    struct Step {
        title: String,
        at: Instant,
        shown: bool,
        bar: Option<ProgressBar>,
    }
    let current: Cell<Option<Step>> = Cell::new(None);
    let any_shown = Cell::new(false);
    let tenths = Cell::new(0u32);
    let show = |s: &mut Step| {
        if !s.shown {
            s.shown = true;
            any_shown.set(true);
            match terminal {
                true => s.bar = Some(percent_bar(&s.title, false)),
                false => eprintln!("{}: started", s.title),
            }
        }
    };
    let done = |s: Step| {
        if s.shown {
            match s.bar {
                Some(pb) => {
                    pb.set_position(1000);
                    pb.finish();
                }
                None => eprintln!("{} done in {:.1} s", s.title, s.at.elapsed().as_secs_f64()),
            }
        }
    };
    let r = work(&|step, f| {
        if quiet {
            return;
        }
        let title = format!("{msg}: {step}");
        let mut s = match current.take() {
            Some(s) if s.title == title => s,
            previous => {
                if let Some(mut p) = previous {
                    // A second step: the work is under way, and the first is shown too.
                    show(&mut p);
                    done(p);
                }
                tenths.set(0);
                Step {
                    title,
                    at: Instant::now(),
                    shown: false,
                    bar: None,
                }
            }
        };
        if any_shown.get() || s.at.elapsed().as_secs() >= 1 {
            show(&mut s);
        }
        match &s.bar {
            Some(pb) => pb.set_position((f.clamp(0.0, 1.0) * 1000.0) as u64),
            None if s.shown && s.at.elapsed().as_secs() >= 1 => {
                tenth_line(&s.title, &tenths, f, s.at)
            }
            None => {}
        }
        current.set(Some(s));
    });
    if let Some(s) = current.take() {
        match (&r, s.bar) {
            (Ok(_), bar) => done(Step { bar, ..s }),
            (Err(_), Some(pb)) => pb.abandon(),
            (Err(_), None) => {}
        }
    }
    r
}
