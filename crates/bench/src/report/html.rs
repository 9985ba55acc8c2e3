//! The report as one static HTML page: no script, no network; the figures are the
//! sections' own SVG files, inlined.

use super::{Report, Section, Verdict};
use std::fmt::Write as _;
use std::path::Path;

/// `s` with the characters HTML gives a meaning escaped.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(c),
        }
    }
    o
}

fn badge(v: Verdict) -> String {
    let class = match v {
        Verdict::Shown => "shown",
        Verdict::Partly => "partly",
        Verdict::NotShown => "not",
    };
    format!("<span class=\"badge {class}\">{}</span>", v.word())
}

/// An SVG file's text without its XML prolog, to sit inside the page (`None` when it
/// cannot be read).
fn inline_svg(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let start = text.find("<svg")?;
    Some(text[start..].to_string())
}

const STYLE: &str = r#"
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
       max-width: 1100px; margin: 2em auto; padding: 0 1.2em; }
h1 { font-size: 1.7em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 0.35em 0.6em; border-bottom: 1px solid #eee; }
a { white-space: nowrap; }
th { background: #f6f6f8; font-weight: 600; }
.badge { display: inline-block; padding: 0.05em 0.55em; border-radius: 0.8em; font-size: 0.85em;
         font-weight: 600; white-space: nowrap; }
.badge.shown { background: #d8f3dc; color: #1b5e20; }
.badge.partly { background: #fff3cd; color: #7a5a00; }
.badge.not { background: #eceff1; color: #455a64; }
.finding { border-left: 4px solid #ddd; padding: 0.3em 0.9em; margin: 0.9em 0; background: #fafafa; }
.finding p { margin: 0.25em 0; }
.label { color: #666; font-size: 0.9em; display: inline-block; min-width: 8.5em; }
.fig svg { max-width: 100%; height: auto; border: 1px solid #eee; margin: 0.6em 0; }
pre { background: #f6f6f8; padding: 0.8em; overflow-x: auto; font-size: 12.5px; line-height: 1.35; }
.error { color: #b00020; font-weight: 600; }
.meta { color: #555; font-size: 0.9em; }
code { background: #f1f1f4; padding: 0 0.3em; border-radius: 3px; }
"#;

/// The page for `r`, whose files lie under `out`.
pub(super) fn page(r: &Report, out: &Path) -> String {
    let mut h = String::new();
    let (shown, partly, not) = r.tally();
    let m = &r.machine;
    let _ = writeln!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>sluice report: what each logging technique buys on this machine</title>\
         <style>{STYLE}</style></head><body>\n\
         <h1>What each logging technique buys on this machine</h1>\
         <p class=\"sub\">sluice {} ran every experiment of the three papers (Aether: Johnson et \
         al., PVLDB 2010; update propagation: Sauer, Graefe and Härder; Tandem log \
         partitioning, 1997) in {:.1} of its {:.1} budgeted minutes. For \
         each figure: the paper's claim and numbers, what was measured here over {} rounds \
         (median, min–max), and whether this machine shows the effect: <b>shown</b> when the \
         spreads are apart in the paper's direction, <b>partly</b> when only the medians \
         are, <b>not shown here</b> otherwise.</p>",
        env!("CARGO_PKG_VERSION"),
        r.seconds / 60.0,
        r.budget_seconds / 60.0,
        super::sections::REPEAT,
    );
    // The machine.
    let sync = match (m.sync_p50_us, m.sync_p99_us, &m.sync_error) {
        (Some(p50), Some(p99), _) => {
            format!("{p50} µs median, {p99} µs p99 (one writer, append then wait for durable)")
        }
        (_, _, Some(e)) => format!("not measured: {}", esc(e)),
        _ => "not measured".into(),
    };
    let _ = writeln!(
        h,
        "<table><tr><th colspan=\"2\">The machine</th></tr>\
         <tr><td>hardware threads</td><td>{}</td></tr>\
         <tr><td>processor</td><td>{}</td></tr>\
         <tr><td>memory</td><td>{}</td></tr>\
         <tr><td>kernel</td><td>{}</td></tr>\
         <tr><td>sync latency of the databases' disk</td><td>{sync}</td></tr></table>",
        m.cores,
        esc(m.cpu.as_deref().unwrap_or("unknown")),
        m.memory_gib
            .map_or("unknown".into(), |g| format!("{g:.1} GiB")),
        esc(m.kernel.as_deref().unwrap_or("unknown")),
    );
    // The summary of every finding.
    let _ = writeln!(
        h,
        "<h2 id=\"summary\">Summary: {shown} shown, {partly} partly, {not} not shown here</h2>\
         <table><tr><th>paper</th><th>figure</th><th>claim</th><th>verdict</th></tr>"
    );
    for s in &r.sections {
        if let Some(e) = &s.error {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td class=\"error\">did not \
                 finish: {}</td><td></td></tr>",
                esc(s.paper),
                s.id,
                esc(s.short),
                esc(e)
            );
        }
        for f in &s.findings {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td></tr>",
                esc(s.paper),
                s.id,
                esc(s.short),
                esc(f.claim),
                badge(f.verdict)
            );
        }
    }
    h.push_str("</table>\n");
    h.push_str("<p class=\"meta\">Not run in this report:</p><ul class=\"meta\">");
    for (paper, figure, command, why) in super::sections::NOT_RUN {
        let _ = write!(
            h,
            "<li>{} {} — <code>{}</code>: {}</li>",
            esc(paper),
            esc(figure),
            esc(command),
            esc(why)
        );
    }
    h.push_str("</ul>\n");
    for s in &r.sections {
        section(&mut h, s, out);
    }
    let _ = writeln!(
        h,
        "<p class=\"meta\">Every section's CSV, JSON and figures are in its folder next to \
         this page; <code>report.json</code> holds every finding. Machines are shared and \
         noisy: compare the variants of one run, as ratios.</p></body></html>"
    );
    h
}

fn section(h: &mut String, s: &Section, out: &Path) {
    let _ = writeln!(
        h,
        "<h2 id=\"{}\">{} — {}</h2>\n<p class=\"meta\">{} · given {:.0} s, took {:.0} s · \
         at full size: <code>{}</code></p>",
        s.id,
        esc(s.paper),
        esc(s.title),
        esc(&s.setup),
        s.budget_seconds,
        s.seconds,
        esc(s.command)
    );
    if let Some(e) = &s.error {
        let _ = writeln!(h, "<p class=\"error\">Did not finish: {}</p>", esc(e));
    }
    for f in &s.findings {
        let _ = writeln!(
            h,
            "<div class=\"finding\"><p>{} <b>{}</b></p>\
             <p><span class=\"label\">the paper</span>{}</p>\
             <p><span class=\"label\">measured here</span>{}</p>\
             <p><span class=\"label\">why</span>{}</p></div>",
            badge(f.verdict),
            esc(f.claim),
            esc(f.paper),
            esc(&f.measured),
            esc(&f.why)
        );
    }
    for fig in &s.figures {
        match inline_svg(&out.join(fig)) {
            Some(svg) => {
                let _ = writeln!(h, "<div class=\"fig\">{svg}</div>");
            }
            None => {
                let _ = writeln!(
                    h,
                    "<p class=\"error\">figure {} could not be read</p>",
                    esc(&fig.display().to_string())
                );
            }
        }
    }
    if !s.notes.is_empty() {
        h.push_str("<ul class=\"meta\">");
        for n in &s.notes {
            let _ = write!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul>\n");
    }
    if let Some(t) = &s.table {
        let _ = writeln!(
            h,
            "<details><summary>the measured points</summary><pre>{}</pre></details>",
            esc(t)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }

    #[test]
    fn an_svg_loses_its_prolog() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.svg");
        std::fs::write(&p, "<?xml version=\"1.0\"?>\n<svg width=\"1\"></svg>").unwrap();
        assert_eq!(inline_svg(&p).unwrap(), "<svg width=\"1\"></svg>");
        assert!(inline_svg(&d.path().join("missing.svg")).is_none());
    }
}
