//! Drawing the experiments' figures as PNG and SVG.
//!
//! Text is rendered with a bundled font (DejaVu Sans, `assets/`), so figures come out the
//! same on any machine without system font libraries.

use super::files::create_dir;
use plotters::chart::SeriesLabelPosition;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

fn ensure_font() {
    REGISTER.call_once(|| {
        if register_font("sans-serif", FontStyle::Normal, FONT).is_err() {
            // The bundled font is valid; failure here means a plotters bug. Figures then
            // lack text but still draw, so carry on.
            eprintln!("warning: could not register the bundled font");
        }
    });
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points (x, y), drawn in order.
    pub points: Vec<(f64, f64)>,
}

/// A line chart.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Log-scale X axis (for thread counts and sizes that double).
    pub log_x: bool,
    /// Log-scale Y axis.
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// Errors drawing a figure (as text: plotters' error types are generic per backend).
pub type PlotError = String;

impl Chart {
    /// Writes `stem.png` and `stem.svg` under `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<(), PlotError> {
        write_png_and_svg(self, dir, stem, (1000, 640))
    }

    #[cfg(test)]
    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        self.bounds_with(&[])
    }

    /// The axes' ranges: every point and every error bar's ends inside (a bar's end
    /// that a log axis cannot draw, zero or less, is left out).
    fn bounds_with(&self, bars: &[Vec<ErrorBar>]) -> ((f64, f64), (f64, f64)) {
        let ends = bars
            .iter()
            .flatten()
            .flat_map(|b| [(b.x, b.low), (b.x, b.high)])
            .filter(|&(_, y)| y.is_finite() && (!self.log_y || y > 0.0));
        let pts = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .chain(ends);
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for (x, y) in pts {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
        if x0 > x1 {
            return ((1.0, 2.0), (1.0, 2.0));
        }
        if x0 == x1 {
            x1 = x0 + 1.0;
        }
        let y0 = if self.log_y {
            (y0 * 0.8).max(1e-9)
        } else {
            0.0f64.min(y0)
        };
        let y1 = if y1 <= y0 { y0 + 1.0 } else { y1 * 1.1 };
        let x0 = if self.log_x { x0.max(1e-9) } else { x0 };
        ((x0, x1), (y0, y1))
    }

    /// The corner where the legend covers the least of the lines: each line is sampled
    /// along its segments in plot coordinates (0..1 on both axes, log axes in log space)
    /// and the corner box a legend of this many entries needs that holds the fewest
    /// samples wins; ties go to the first in the order upper right, upper left, lower
    /// right, lower left.
    fn legend_position(&self, (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> SeriesLabelPosition {
        let unit = |v: f64, lo: f64, hi: f64, log: bool| {
            if log {
                (v.max(1e-300).ln() - lo.ln()) / (hi.ln() - lo.ln())
            } else {
                (v - lo) / (hi - lo)
            }
        };
        let samples: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| {
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .map(|&(x, y)| (unit(x, x0, x1, self.log_x), unit(y, y0, y1, self.log_y)))
                    .collect();
                let mut out = pts.clone();
                for w in pts.windows(2) {
                    for i in 1..16 {
                        let t = i as f64 / 16.0;
                        out.push((
                            w[0].0 + t * (w[1].0 - w[0].0),
                            w[0].1 + t * (w[1].1 - w[0].1),
                        ));
                    }
                }
                out
            })
            .collect();
        // The legend's size as a share of the plot area (about 240 px wide, 22 px per
        // entry plus padding, in a plot area of about 880 × 520 px).
        let w = 0.3;
        let h = (0.06 + 0.045 * self.series.len() as f64).min(0.6);
        let corners = [
            (SeriesLabelPosition::UpperRight, true, true),
            (SeriesLabelPosition::UpperLeft, false, true),
            (SeriesLabelPosition::LowerRight, true, false),
            (SeriesLabelPosition::LowerLeft, false, false),
        ];
        let covered = |right: bool, upper: bool| {
            samples
                .iter()
                .filter(|&&(x, y)| {
                    (if right { x >= 1.0 - w } else { x <= w })
                        && (if upper { y >= 1.0 - h } else { y <= h })
                })
                .count()
        };
        corners
            .into_iter()
            .min_by_key(|&(_, right, upper)| covered(right, upper))
            .map(|(p, _, _)| p)
            .expect("four corners")
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        draw_panel(self, &[], &[], &[], root)
    }
}

/// A vertical error bar: the spread of one point's repeats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorBar {
    /// Where the point is.
    pub x: f64,
    /// The least of its repeats.
    pub low: f64,
    /// The most of its repeats.
    pub high: f64,
}

/// A chart and what its lines alone cannot say: each series' spread as error bars and
/// notes printed under the plot (what this machine cannot show, …).
#[derive(Debug, Clone)]
pub struct Panel {
    /// The lines (their points are the medians).
    pub chart: Chart,
    /// Per series, in the order of `chart.series`, its error bars (fewer lists than
    /// series: the rest have none).
    pub bars: Vec<Vec<ErrorBar>>,
    /// Lines of text under the plot.
    pub notes: Vec<String>,
    /// The x axis' ticks (empty: chosen from the range); a sweep over doubling client
    /// counts reads best with its own counts as ticks.
    pub x_ticks: Vec<f64>,
}

impl Panel {
    /// A panel of `chart` alone.
    pub fn new(chart: Chart) -> Panel {
        Panel {
            chart,
            bars: Vec::new(),
            notes: Vec::new(),
            x_ticks: Vec::new(),
        }
    }

    /// Writes `stem.png` and `stem.svg` under `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<(), PlotError> {
        let h = 640 + NOTE_LINE_PX * note_lines(&self.notes, 1000).len() as u32;
        write_png_and_svg(self, dir, stem, (1000, h))
    }
}

impl Drawing for Panel {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        draw_panel(&self.chart, &self.bars, &self.notes, &self.x_ticks, root)
    }
}

/// Height of one note line under a plot, pixels.
pub(super) const NOTE_LINE_PX: u32 = 22;

/// Average width of a character of the notes' 15-pixel text, pixels (DejaVu Sans).
const NOTE_CHAR_PX: f64 = 7.6;

/// `notes` broken at spaces into the lines that fit a figure `width_px` wide: a note
/// longer than the plot is wide (what this machine cannot show, say) is not cut off.
pub(super) fn note_lines(notes: &[String], width_px: u32) -> Vec<String> {
    let fit = ((width_px.saturating_sub(32)) as f64 / NOTE_CHAR_PX).max(20.0) as usize;
    let mut lines = Vec::new();
    for n in notes {
        let mut line = String::new();
        for word in n.split(' ') {
            if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > fit {
                lines.push(std::mem::take(&mut line));
                line.push_str("  ");
            } else if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    lines
}

/// Draws `notes` in grey at the bottom of `root` ([`note_lines`]); returns the area
/// above them, for the plot.
pub(super) fn notes_under<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    notes: &[String],
) -> Result<DrawingArea<DB, Shift>, PlotError>
where
    DB::ErrorType: 'static,
{
    let (w, h) = root.dim_in_pixel();
    let lines = note_lines(notes, w);
    let note_px = (NOTE_LINE_PX * lines.len() as u32).min(h / 2);
    let (plot, below) = root.split_vertically(h - note_px);
    for (i, n) in lines.iter().enumerate() {
        below
            .draw_text(
                n,
                &("sans-serif", 15).into_font().color(&RGBColor(90, 90, 90)),
                (16, 2 + NOTE_LINE_PX as i32 * i as i32),
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(plot)
}

/// The x of series `i` of `n` nudged sideways ("dodged") so that error bars at the same
/// x do not hide each other: a few pixels' worth of the axis, in log space on a log axis.
fn dodge(x: f64, i: usize, n: usize, (x0, x1): (f64, f64), log: bool) -> f64 {
    if n < 2 {
        return x;
    }
    let shift = (i as f64 - (n - 1) as f64 / 2.0) * 0.006;
    if log {
        x * ((x1 / x0).ln() * shift).exp()
    } else {
        x + (x1 - x0) * shift
    }
}

/// Ticks for a log axis from `lo` to `hi`: 1, 2 and 5 of each decade in the range,
/// each once; on a range of about a decade, where those leave fewer than four, 1 to 9 of
/// each decade (a sweep whose values span 200 to 2,600 MB/s had only 500, 1000 and 2000
/// labelled). (plotters' own log ticks hold each power of ten twice, once as the last
/// light tick of the decade below and once as the decade's own, which printed "10" two
/// times on every log chart.) At least the two ends when no such value falls inside.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = (lo.min(hi).max(1e-300), hi.max(lo));
    let ticks = |mantissas: &[f64]| {
        let mut out = Vec::new();
        let mut decade = 10f64.powf(lo.log10().floor());
        while decade <= hi && out.len() < 64 {
            for m in mantissas {
                let v = decade * m;
                // A tolerance of a part in a million: 10^k is not exact in binary.
                if v >= lo * (1.0 - 1e-6) && v <= hi * (1.0 + 1e-6) {
                    out.push(v);
                }
            }
            decade *= 10.0;
        }
        out
    };
    let mut out = ticks(&[1.0, 2.0, 5.0]);
    if out.len() < 4 {
        out = ticks(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    if out.len() < 2 {
        out = vec![lo, hi];
    }
    out.dedup();
    out
}

/// Ticks for a log axis given as the data's own values, deduplicated and clipped to the
/// range; the 1-2-5 ticks when none is given.
fn given_or_log_ticks(given: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let mut v: Vec<f64> = given
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x >= lo && *x <= hi)
        .collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    if v.len() < 2 {
        log_ticks(lo, hi)
    } else {
        v
    }
}

fn draw_panel<DB: DrawingBackend>(
    c: &Chart,
    bars: &[Vec<ErrorBar>],
    notes: &[String],
    x_ticks: &[f64],
    root: &DrawingArea<DB, Shift>,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let plot = notes_under(root, notes)?;
    let root = &plot;
    let ((x0, x1), (y0, y1)) = c.bounds_with(bars);
    let legend_at = c.legend_position((x0, x1), (y0, y1));
    // Only the series with error bars are dodged: a reference line (1×, a bound) stays
    // where its values are.
    let barred = |i: usize| bars.get(i).is_some_and(|b| !b.is_empty());
    let n = (0..c.series.len()).filter(|&i| barred(i)).count();
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(c.x_label.as_str())
                .y_desc(c.y_label.as_str())
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .label_style(("sans-serif", 16))
                .draw()
                .map_err(|e| e.to_string())?;
            for (i, s) in c.series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                let slot = (0..i).filter(|&j| barred(j)).count();
                let at = |x: f64| {
                    if barred(i) {
                        dodge(x, slot, n, (x0, x1), c.log_x)
                    } else {
                        x
                    }
                };
                chart
                    .draw_series(LineSeries::new(
                        s.points.iter().map(|&(x, y)| (at(x), y)),
                        color.stroke_width(2),
                    ))
                    .map_err(|e| e.to_string())?
                    .label(s.label.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .map(|&(x, y)| Circle::new((at(x), y), 3, color.filled())),
                    )
                    .map_err(|e| e.to_string())?;
                let Some(bars) = bars.get(i) else { continue };
                let drawable = bars
                    .iter()
                    .filter(|b| !c.log_y || b.low > 0.0)
                    .filter(|b| b.low.is_finite() && b.high.is_finite());
                chart
                    .draw_series(drawable.clone().map(|b| {
                        PathElement::new(
                            vec![(at(b.x), b.low), (at(b.x), b.high)],
                            color.stroke_width(1),
                        )
                    }))
                    .map_err(|e| e.to_string())?;
                // Caps, a few pixels wide whatever the axis' scale.
                for y in [|b: &ErrorBar| b.low, |b: &ErrorBar| b.high] {
                    chart
                        .draw_series(drawable.clone().map(|b| {
                            EmptyElement::at((at(b.x), y(b)))
                                + PathElement::new(vec![(-4, 0), (4, 0)], color.stroke_width(1))
                        }))
                        .map_err(|e| e.to_string())?;
                }
            }
            chart
                .configure_series_labels()
                .position(legend_at.clone())
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .label_font(("sans-serif", 16))
                .draw()
                .map_err(|e| e.to_string())?;
        }};
    }
    let mut b = ChartBuilder::on(root);
    b.caption(c.title.as_str(), ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80);
    let xt = given_or_log_ticks(x_ticks, x0, x1);
    let yt = log_ticks(y0, y1);
    match (c.log_x, c.log_y) {
        (false, false) => body!(b
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| e.to_string())?),
        (true, false) => body!(b
            .build_cartesian_2d((x0..x1).log_scale().with_key_points(xt), y0..y1)
            .map_err(|e| e.to_string())?),
        (false, true) => body!(b
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale().with_key_points(yt))
            .map_err(|e| e.to_string())?),
        (true, true) => body!(b
            .build_cartesian_2d(
                (x0..x1).log_scale().with_key_points(xt),
                (y0..y1).log_scale().with_key_points(yt)
            )
            .map_err(|e| e.to_string())?),
    }
    Ok(())
}

/// Writes `panels` as one figure, `cols` to a row, under one `title`: `stem.png` and
/// `stem.svg` under `dir`.
pub fn write_panels(
    title: &str,
    panels: &[Panel],
    cols: usize,
    dir: &Path,
    stem: &str,
) -> Result<(), PlotError> {
    let notes = panels
        .iter()
        .map(|p| note_lines(&p.notes, GRID_PANEL_PX).len())
        .max()
        .unwrap_or(0);
    write_drawings(title, panels, cols, notes, dir, stem)
}

/// The width of a panel in a grid, pixels.
pub(super) const GRID_PANEL_PX: u32 = 800;

/// Writes `panels` (any figure that draws itself, with at most `notes` lines of notes
/// each, [`note_lines`] at [`GRID_PANEL_PX`]) as one figure, `cols` to a row, under one
/// `title`: `stem.png` and `stem.svg` under `dir`.
pub(super) fn write_drawings<D: Drawing>(
    title: &str,
    panels: &[D],
    cols: usize,
    notes: usize,
    dir: &Path,
    stem: &str,
) -> Result<(), PlotError> {
    let cols = cols.max(1);
    let rows = panels.len().div_ceil(cols).max(1);
    let size = (
        GRID_PANEL_PX * cols as u32,
        (520 + NOTE_LINE_PX * notes as u32) * rows as u32 + 50,
    );
    let grid = Grid {
        title,
        panels: panels.iter().collect(),
        rows,
        cols,
    };
    write_png_and_svg(&grid, dir, stem, size)
}

/// Writes `charts` as panels of one figure, `cols` to a row, under one `title`:
/// `stem.png` and `stem.svg` under `dir`.
pub fn write_grid(
    title: &str,
    charts: &[Chart],
    cols: usize,
    dir: &Path,
    stem: &str,
) -> Result<(), PlotError> {
    let panels: Vec<Panel> = charts.iter().cloned().map(Panel::new).collect();
    write_panels(title, &panels, cols, dir, stem)
}

/// Panels under one title.
struct Grid<'a, D> {
    title: &'a str,
    panels: Vec<&'a D>,
    rows: usize,
    cols: usize,
}

impl<D: Drawing> Drawing for Grid<'_, D> {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let body = root
            .titled(self.title, ("sans-serif", 28))
            .map_err(|e| e.to_string())?;
        for (area, panel) in body
            .split_evenly((self.rows, self.cols))
            .iter()
            .zip(&self.panels)
        {
            panel.draw_on(area)?;
        }
        Ok(())
    }
}

impl Drawing for Chart {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        self.draw(root)
    }
}

/// A figure that draws itself on any plotters backend, so that one function writes
/// every figure as PNG and as SVG.
pub(super) trait Drawing {
    /// Draws the figure on `root`.
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static;
}

/// Writes `figure` as `stem.png` and `stem.svg` of `size` pixels under `dir`.
pub(super) fn write_png_and_svg(
    figure: &impl Drawing,
    dir: &Path,
    stem: &str,
    size: (u32, u32),
) -> Result<(), PlotError> {
    ensure_font();
    create_dir(dir)?;
    let png = dir.join(format!("{stem}.png"));
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        figure.draw_on(&root)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let svg = dir.join(format!("{stem}.svg"));
    let root = SVGBackend::new(&svg, size).into_drawing_area();
    figure.draw_on(&root)?;
    root.present().map_err(|e| e.to_string())
}

/// A tick label: whole numbers (and anything from 10 up) without decimals — "8", not
/// "8.0" — so that the crowded ticks of a log axis stay legible; a smaller value with
/// two significant digits and no trailing zeros ("2.5", "0.2", "0.05"), so that the
/// ticks of an axis below 1 do not all print as "0.0" or "0.1".
fn tick(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 10.0 {
        return format!("{v:.0}");
    }
    let decimals = (1 - v.abs().log10().floor() as i32).clamp(1, 12) as usize;
    let s = format!("{v:.decimals$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_wrap_at_spaces_to_the_figure_width() {
        let long = "word ".repeat(60).trim_end().to_string();
        let lines = note_lines(&[long.clone(), "short".into()], 400);
        assert!(lines.len() > 2, "{lines:?}");
        assert_eq!(lines.last().unwrap(), "short");
        let fit = ((400 - 32) as f64 / NOTE_CHAR_PX) as usize;
        assert!(lines.iter().all(|l| l.chars().count() <= fit), "{lines:?}");
        // Every word kept, in order; continuation lines indented.
        let words: Vec<&str> = lines[..lines.len() - 1]
            .iter()
            .flat_map(|l| l.split_whitespace())
            .collect();
        assert_eq!(words.join(" "), long);
        assert!(lines[1].starts_with("  "));
        assert_eq!(note_lines(std::slice::from_ref(&long), 10_000), [long]);
    }

    #[test]
    fn ticks_drop_needless_decimals() {
        assert_eq!(tick(8.0), "8");
        assert_eq!(tick(12288.0), "12288");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(1234.5), "1234");
        // Below 1: two significant digits, none of them a trailing zero.
        assert_eq!(tick(0.2), "0.2");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(0.05), "0.05");
        assert_eq!(tick(0.002), "0.002");
        assert_eq!(tick(-0.5), "-0.5");
        assert_eq!(tick(9.5), "9.5");
    }

    #[test]
    fn log_ticks_hold_each_value_once() {
        let t = log_ticks(1.0, 64.0);
        assert_eq!(t, [1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        let t = log_ticks(0.8, 1200.0);
        let tens = t.iter().filter(|v| tick(**v) == "10").count();
        assert_eq!(tens, 1, "{t:?}");
        for w in t.windows(2) {
            assert!(w[0] < w[1], "rising and distinct: {t:?}");
            assert_ne!(tick(w[0]), tick(w[1]), "{t:?}");
        }
        // A range inside one decade with no 1-9 value still gets its ends.
        assert_eq!(log_ticks(1.3, 1.8), [1.3, 1.8]);
        // About a decade: 1 to 9 of it, not just 500, 1000 and 2000.
        let t = log_ticks(220.0, 2600.0);
        assert_eq!(
            t,
            [300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0, 1000.0, 2000.0]
        );
        // Given ticks (doubling client counts) are used as given, clipped to the range.
        assert_eq!(
            given_or_log_ticks(&[64.0, 1.0, 2.0, 2.0, 500.0], 1.0, 64.0),
            [1.0, 2.0, 64.0]
        );
    }

    #[test]
    fn a_log_x_chart_prints_the_ten_tick_once() {
        // The bug: plotters' log key points hold 10 twice (as the last light tick of
        // 1..10 and as the bold one), so the SVG held two "10" labels.
        let dir = tempfile::tempdir().unwrap();
        let c = Chart {
            title: "t".into(),
            x_label: "clients".into(),
            y_label: "y".into(),
            log_x: true,
            log_y: false,
            series: vec![Series {
                label: "s".into(),
                points: vec![(1.0, 1.0), (64.0, 2.0)],
            }],
        };
        c.write(dir.path(), "fig").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
        // Each label is `<text …>\nLABEL\n</text>`.
        let tens = svg
            .split("</text>")
            .filter(|t| t.rsplit('>').next().map(str::trim) == Some("10"))
            .count();
        assert_eq!(tens, 1, "one 10 tick");
    }

    #[test]
    fn a_panel_draws_error_bars_and_notes_inside_its_range() {
        let dir = tempfile::tempdir().unwrap();
        let p = Panel {
            bars: vec![vec![
                ErrorBar {
                    x: 1.0,
                    low: 5.0,
                    high: 40.0,
                },
                ErrorBar {
                    x: 2.0,
                    low: 8.0,
                    high: 9.0,
                },
            ]],
            notes: vec!["2 hardware threads here".into()],
            x_ticks: vec![1.0, 2.0],
            ..Panel::new(chart(vec![vec![(1.0, 10.0), (2.0, 8.5)]]))
        };
        let (_, (_, y1)) = p.chart.bounds_with(&p.bars);
        assert!(y1 >= 40.0, "the top of a bar is inside the axis: {y1}");
        p.write(dir.path(), "panel").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("panel.svg")).unwrap();
        assert!(svg.contains("2 hardware threads here"), "the note is drawn");
    }

    #[test]
    fn writes_png_and_svg_with_text() {
        let dir = tempfile::tempdir().unwrap();
        let keep = std::env::var_os("SLUICE_KEEP_PLOT");
        let c = Chart {
            title: "throughput vs threads".into(),
            x_label: "threads".into(),
            y_label: "MB/s".into(),
            log_x: true,
            log_y: false,
            series: vec![
                Series {
                    label: "mutex".into(),
                    points: vec![(1.0, 10.0), (2.0, 12.0), (4.0, 11.0)],
                },
                Series {
                    label: "atomic".into(),
                    points: vec![(1.0, 11.0), (2.0, 20.0), (4.0, 25.0)],
                },
            ],
        };
        c.write(dir.path(), "fig").unwrap();
        let png = std::fs::read(dir.path().join("fig.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let svg = std::fs::read_to_string(dir.path().join("fig.svg")).unwrap();
        assert!(
            svg.contains("throughput vs threads") && svg.contains("atomic"),
            "labels drawn"
        );
        if let Some(k) = keep {
            std::fs::copy(dir.path().join("fig.png"), k).unwrap();
        }
    }

    #[test]
    fn a_grid_draws_every_panel() {
        let dir = tempfile::tempdir().unwrap();
        let panel = |t: &str| Chart {
            title: t.into(),
            x_label: "s".into(),
            y_label: "pages".into(),
            log_x: false,
            log_y: false,
            series: vec![Series {
                label: "line".into(),
                points: vec![(1.0, 2.0), (2.0, 3.0)],
            }],
        };
        let charts = ["p1", "p2", "p3", "p4"].map(panel);
        write_grid("four panels", &charts, 2, dir.path(), "grid").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("grid.svg")).unwrap();
        for t in ["four panels", "p1", "p4"] {
            assert!(svg.contains(t), "{t}");
        }
        assert_eq!(
            &std::fs::read(dir.path().join("grid.png")).unwrap()[1..4],
            b"PNG"
        );
    }

    fn chart(series: Vec<Vec<(f64, f64)>>) -> Chart {
        Chart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            log_x: false,
            log_y: false,
            series: series
                .into_iter()
                .map(|points| Series {
                    label: "s".into(),
                    points,
                })
                .collect(),
        }
    }

    #[test]
    fn the_legend_goes_where_the_lines_are_not() {
        let pos = |c: &Chart| {
            let (x, y) = c.bounds();
            format!("{:?}", c.legend_position(x, y))
        };
        // Rising lines leave the upper left empty.
        let rising = chart(vec![
            vec![(0.0, 0.0), (10.0, 100.0)],
            vec![(0.0, 0.0), (10.0, 80.0)],
        ]);
        assert_eq!(pos(&rising), "UpperLeft");
        // Falling lines leave the upper right empty.
        let falling = chart(vec![vec![(0.0, 100.0), (10.0, 1.0)]]);
        assert_eq!(pos(&falling), "UpperRight");
    }
}
