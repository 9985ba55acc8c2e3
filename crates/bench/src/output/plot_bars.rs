//! A bar chart (PNG and SVG): one bar per engine in `sluice compare`, one per strategy
//! in the propagation sweep (on a log axis, with the device's bandwidth as a reference
//! line); and stacked bars ([`StackedBars`]): where the time goes, per client count or
//! per commit protocol, in the commit sweep's breakdown figures.

use super::plot::{note_lines, write_png_and_svg, Drawing, PlotError};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// One bar.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Label under the bar.
    pub label: String,
    /// Height.
    pub value: f64,
    /// Text above the bar (e.g. the ratio to a baseline).
    pub note: String,
    /// An error bar from `.0` to `.1` (e.g. the min and max of repeats), drawn as a
    /// black whisker across the bar; `None`: none.
    pub spread: Option<(f64, f64)>,
}

/// A vertical bar chart.
#[derive(Debug, Clone)]
pub struct BarChart {
    /// Title above the plot.
    pub title: String,
    /// Y axis label.
    pub y_label: String,
    /// The bars, left to right.
    pub bars: Vec<Bar>,
    /// Log-scale Y axis (bars of 0 or less are not drawn; their note still is).
    pub log_y: bool,
    /// A horizontal line across the plot, labelled.
    pub reference: Option<Reference>,
}

/// A horizontal reference line (e.g. the device's own bandwidth).
#[derive(Debug, Clone)]
pub struct Reference {
    /// Text drawn above the line.
    pub label: String,
    /// Where the line is.
    pub value: f64,
}

impl BarChart {
    /// Writes `stem.png` and `stem.svg` under `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<(), PlotError> {
        // Wide enough for each bar's label under it.
        let size = ((self.bars.len() as u32 * 110).max(1000), 640);
        write_png_and_svg(self, dir, stem, size)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        if self.log_y {
            return self.draw_log(root);
        }
        let n = self.bars.len().max(1) as f64;
        let top = self
            .bars
            .iter()
            .map(|b| b.spread.map_or(b.value, |s| s.1.max(b.value)))
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.15;
        // The labels go in a band below zero inside the plot, centred under the bars;
        // the y axis prints no negative ticks.
        let floor = -top * 0.07;
        let mut chart = self.axes(root, floor..top, &|v| {
            if *v < 0.0 {
                String::new()
            } else {
                super::report::thousands(*v)
            }
        })?;
        let centred = |size: u32, v: VPos| {
            TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, v))
        };
        for (i, b) in self.bars.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let x = i as f64;
            chart
                .draw_series([Rectangle::new(
                    [(x + 0.15, 0.0), (x + 0.85, b.value)],
                    color.filled(),
                )])
                .map_err(|e| e.to_string())?;
            if let Some((lo, hi)) = b.spread {
                whisker(&mut chart, x + 0.5, lo.max(0.0), hi)?;
            }
            let note_y = b.spread.map_or(b.value, |s| s.1.max(b.value));
            chart
                .draw_series([
                    Text::new(
                        b.note.clone(),
                        (x + 0.5, note_y + top * 0.01),
                        centred(16, VPos::Bottom),
                    ),
                    Text::new(
                        b.label.clone(),
                        (x + 0.5, floor * 0.5),
                        centred(15, VPos::Center),
                    ),
                ])
                .map_err(|e| e.to_string())?;
        }
        if let Some(r) = &self.reference {
            reference_line(&mut chart, r, n, r.value, top * 0.01)?;
        }
        Ok(())
    }

    /// The log-axis variant: whole decades from below the smallest positive value (or
    /// reference) to above the largest; the labels go in a band below the lowest decade.
    fn draw_log<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        let n = self.bars.len().max(1) as f64;
        let values = self
            .bars
            .iter()
            .flat_map(|b| [Some(b.value), b.spread.map(|s| s.0), b.spread.map(|s| s.1)])
            .flatten()
            .chain(self.reference.as_ref().map(|r| r.value))
            .filter(|v| v.is_finite() && *v > 0.0);
        let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
        let (lo, hi) = if lo > hi {
            (0.01, 1.0)
        } else {
            (
                10f64.powf(lo.log10().floor()),
                10f64.powf((hi * 1.5).log10().ceil()),
            )
        };
        let decades = (hi / lo).log10();
        let floor = lo / 10f64.powf(decades * 0.09);
        let mut chart = self.axes(root, (floor..hi).log_scale(), &|v| {
            if *v < lo * 0.999 {
                String::new()
            } else if *v >= 1.0 {
                super::report::thousands(*v)
            } else {
                format!("{v}")
            }
        })?;
        let centred = |size: u32, v: VPos| {
            TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, v))
        };
        let label_y = floor * 10f64.powf(decades * 0.045);
        for (i, b) in self.bars.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            let x = i as f64;
            let drawn = b.value.is_finite() && b.value > 0.0;
            if drawn {
                chart
                    .draw_series([Rectangle::new(
                        [(x + 0.15, lo), (x + 0.85, b.value.max(lo))],
                        color.filled(),
                    )])
                    .map_err(|e| e.to_string())?;
                if let Some((a, z)) = b.spread {
                    whisker(&mut chart, x + 0.5, a.max(lo), z.max(lo))?;
                }
            }
            let top_of = b.spread.map_or(b.value, |s| s.1.max(b.value));
            let note_at = if drawn { top_of.max(lo) } else { lo } * 10f64.powf(decades * 0.01);
            chart
                .draw_series([
                    Text::new(
                        b.note.clone(),
                        (x + 0.5, note_at),
                        centred(15, VPos::Bottom),
                    ),
                    Text::new(
                        b.label.clone(),
                        (x + 0.5, label_y),
                        centred(14, VPos::Center),
                    ),
                ])
                .map_err(|e| e.to_string())?;
        }
        if let Some(r) = &self.reference {
            if r.value > 0.0 {
                let above = r.value * 10f64.powf(decades * 0.01);
                reference_line(&mut chart, r, n, r.value, above - r.value)?;
            }
        }
        Ok(())
    }
}

/// The caption's font size: 22 px, smaller when the title would not fit across `width`
/// pixels (a sans-serif character is about 0.55 of the size wide), never below 11.
fn caption_size(title: &str, width: u32) -> f64 {
    let fits = (width as f64 - 24.0) / (0.55 * title.chars().count().max(1) as f64);
    fits.clamp(11.0, 22.0)
}

impl BarChart {
    /// The plot the bars stand in: the title, one slot per bar across (each bar carries
    /// its own label, so the x axis has none), `y` up, its ticks labelled by `y_label`.
    fn axes<'a, DB, Y>(
        &self,
        root: &'a DrawingArea<DB, Shift>,
        y: Y,
        y_label: &dyn Fn(&f64) -> String,
    ) -> Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, Y::CoordDescType>>, PlotError>
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
        Y: AsRangedCoord<Value = f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let n = self.bars.len().max(1) as f64;
        let mut chart = ChartBuilder::on(root)
            .caption(
                self.title.as_str(),
                (
                    "sans-serif",
                    caption_size(&self.title, root.dim_in_pixel().0),
                ),
            )
            .margin(16)
            .x_label_area_size(10)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..n, y)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y_label.as_str())
            .y_label_formatter(y_label)
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(|e| e.to_string())?;
        Ok(chart)
    }
}

/// A stacked bar chart: one bar per label, each the sum of its segments, one colour per
/// kind of segment with a legend beside the plot, and notes under it. Where a segment is
/// tall enough its value is printed inside it.
#[derive(Debug, Clone)]
pub struct StackedBars {
    /// Title above the plot.
    pub title: String,
    /// Y axis label.
    pub y_label: String,
    /// What the bars are, printed under their labels ("clients").
    pub x_label: String,
    /// The kinds of segment, from the bottom of a bar up: legend label and colour (RGB).
    pub kinds: Vec<(String, (u8, u8, u8))>,
    /// The bars, left to right: label and one value per kind (0 or less: no segment).
    pub bars: Vec<(String, Vec<f64>)>,
    /// The top of the y axis (`None`: the tallest bar plus a margin).
    pub y_max: Option<f64>,
    /// Lines of text under the plot.
    pub notes: Vec<String>,
}

impl StackedBars {
    /// Writes `stem.png` and `stem.svg` under `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<(), PlotError> {
        let w = (self.bars.len() as u32 * 90 + 560).max(1200);
        let h = 640 + super::plot::NOTE_LINE_PX * note_lines(&self.notes, w).len() as u32;
        write_png_and_svg(self, dir, stem, (w, h))
    }

    /// Writes `charts` side by side (`cols` to a row) under one `title`: `stem.png` and
    /// `stem.svg` under `dir`.
    pub fn write_grid(
        title: &str,
        charts: &[StackedBars],
        cols: usize,
        dir: &Path,
        stem: &str,
    ) -> Result<(), PlotError> {
        let notes = charts
            .iter()
            .map(|c| note_lines(&c.notes, super::plot::GRID_PANEL_PX).len())
            .max()
            .unwrap_or(0);
        super::plot::write_drawings(title, charts, cols, notes, dir, stem)
    }

    fn draw_stacked<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        // The title spans the legend too: it is the longest text.
        let root = root
            .titled(self.title.as_str(), ("sans-serif", 22))
            .map_err(|e| e.to_string())?;
        let plot = super::plot::notes_under(&root, &self.notes)?;
        let (w, _) = plot.dim_in_pixel();
        let (plot, legend) = plot.split_horizontally(w.saturating_sub(250));
        let tallest = self
            .bars
            .iter()
            .map(|(_, v)| v.iter().filter(|x| **x > 0.0).sum::<f64>())
            .fold(0.0f64, f64::max);
        let top = self.y_max.unwrap_or((tallest * 1.08).max(1e-9));
        let n = self.bars.len().max(1) as f64;
        let floor = -top * 0.09;
        let mut chart = ChartBuilder::on(&plot)
            .margin(16)
            .x_label_area_size(10)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..n, floor..top)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y_label.as_str())
            .y_label_formatter(&|v| {
                if *v < 0.0 {
                    String::new()
                } else {
                    super::report::thousands(*v)
                }
            })
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(|e| e.to_string())?;
        let centred = |size: u32| {
            TextStyle::from(("sans-serif", size).into_font())
                .pos(Pos::new(HPos::Center, VPos::Center))
        };
        for (i, (label, values)) in self.bars.iter().enumerate() {
            let x = i as f64;
            let mut y = 0.0;
            for ((_, (r, g, b)), &v) in self.kinds.iter().zip(values) {
                if v.is_nan() || v <= 0.0 {
                    continue;
                }
                let color = RGBColor(*r, *g, *b);
                chart
                    .draw_series([
                        Rectangle::new([(x + 0.15, y), (x + 0.85, y + v)], color.filled()),
                        Rectangle::new([(x + 0.15, y), (x + 0.85, y + v)], WHITE.stroke_width(1)),
                    ])
                    .map_err(|e| e.to_string())?;
                // The value inside a segment of at least 4 % of the axis, in black or
                // white, whichever reads on its colour.
                if v >= top * 0.04 {
                    let light = 0.3 * *r as f64 + 0.6 * *g as f64 + 0.1 * *b as f64 > 140.0;
                    let ink = if light { BLACK } else { WHITE };
                    chart
                        .draw_series([Text::new(
                            format!("{v:.0}"),
                            (x + 0.5, y + v / 2.0),
                            centred(13).color(&ink),
                        )])
                        .map_err(|e| e.to_string())?;
                }
                y += v;
            }
            chart
                .draw_series([Text::new(
                    label.clone(),
                    (x + 0.5, floor * 0.35),
                    centred(15),
                )])
                .map_err(|e| e.to_string())?;
        }
        chart
            .draw_series([Text::new(
                self.x_label.clone(),
                (n / 2.0, floor * 0.8),
                centred(15),
            )])
            .map_err(|e| e.to_string())?;
        // The legend, top to bottom as the segments are stacked.
        let swatch = 18;
        for (k, (label, (r, g, b))) in self.kinds.iter().rev().enumerate() {
            let y = 30 + k as i32 * 28;
            legend
                .draw(&Rectangle::new(
                    [(4, y), (4 + swatch, y + swatch)],
                    RGBColor(*r, *g, *b).filled(),
                ))
                .map_err(|e| e.to_string())?;
            legend
                .draw_text(
                    label,
                    &("sans-serif", 15).into_font().color(&BLACK),
                    (4 + swatch + 8, y + 1),
                )
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Drawing for StackedBars {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        self.draw_stacked(root)
    }
}

impl Drawing for BarChart {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        self.draw(root)
    }
}

/// Draws an error bar at `x` from `lo` to `hi`: a vertical line with a cap at each end.
fn whisker<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    x: f64,
    lo: f64,
    hi: f64,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64>,
{
    let style = BLACK.stroke_width(2);
    let cap = 0.12;
    chart
        .draw_series([
            PathElement::new(vec![(x, lo), (x, hi)], style),
            PathElement::new(vec![(x - cap, lo), (x + cap, lo)], style),
            PathElement::new(vec![(x - cap, hi), (x + cap, hi)], style),
        ])
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Draws `r` as a dashed black line at `y` across `0..n`, its label above the right end
/// (`lift` above the line, in the axis' units).
fn reference_line<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    r: &Reference,
    n: f64,
    y: f64,
    lift: f64,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64>,
{
    let dashes = (n * 12.0) as usize;
    let segments = (0..dashes).map(|k| {
        let x0 = k as f64 * n / dashes as f64;
        PathElement::new(
            vec![(x0, y), (x0 + 0.6 * n / dashes as f64, y)],
            BLACK.stroke_width(2),
        )
    });
    chart.draw_series(segments).map_err(|e| e.to_string())?;
    let style =
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Right, VPos::Bottom));
    chart
        .draw_series([Text::new(r.label.clone(), (n - 0.05, y + lift), style)])
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_png_and_svg() {
        let dir = tempfile::tempdir().unwrap();
        let c = BarChart {
            title: "t".into(),
            y_label: "tps".into(),
            bars: vec![
                Bar {
                    label: "a".into(),
                    value: 10.0,
                    note: "1.00×".into(),
                    spread: Some((8.0, 12.0)),
                },
                Bar {
                    label: "b".into(),
                    value: 0.0,
                    note: "unavailable".into(),
                    spread: None,
                },
            ],
            log_y: false,
            reference: None,
        };
        c.write(dir.path(), "bars").unwrap();
        assert!(
            std::fs::metadata(dir.path().join("bars.png"))
                .unwrap()
                .len()
                > 0
        );
        let svg = std::fs::read_to_string(dir.path().join("bars.svg")).unwrap();
        assert!(svg.contains("<svg"));
    }

    #[test]
    fn stacked_bars_draw_every_kind_in_the_legend_and_alone_or_in_a_grid() {
        let dir = tempfile::tempdir().unwrap();
        let c = StackedBars {
            title: "where the time goes".into(),
            y_label: "% of agent time".into(),
            x_label: "clients".into(),
            kinds: vec![
                ("work".into(), (40, 120, 40)),
                ("lock wait".into(), (30, 60, 200)),
                ("idle".into(), (220, 220, 220)),
            ],
            bars: vec![
                ("1".into(), vec![20.0, 0.0, 80.0]),
                ("64".into(), vec![70.0, 30.0, f64::NAN]),
            ],
            y_max: Some(100.0),
            notes: vec!["a note".into()],
        };
        c.write(dir.path(), "stacked").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("stacked.svg")).unwrap();
        for text in ["lock wait", "idle", "a note", "clients", "64", "70"] {
            assert!(svg.contains(text), "{text} missing");
        }
        StackedBars::write_grid("two", &[c.clone(), c], 2, dir.path(), "grid").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("grid.svg")).unwrap();
        assert_eq!(svg.matches("lock wait").count(), 2, "a legend per panel");
        assert!(dir.path().join("grid.png").exists());
    }

    #[test]
    fn log_bars_with_a_reference_line() {
        let dir = tempfile::tempdir().unwrap();
        let keep = std::env::var_os("SLUICE_KEEP_PLOT");
        let c = BarChart {
            title: "write bandwidth".into(),
            y_label: "MB/s".into(),
            bars: [
                ("oldest 0.1%", 3.2),
                ("clustered ≥8", 18.0),
                ("none", 0.0),
                ("log", 96.0),
            ]
            .into_iter()
            .map(|(l, v)| Bar {
                label: l.into(),
                value: v,
                note: format!("{v}"),
                spread: (v > 0.0).then_some((v * 0.8, v * 1.2)),
            })
            .collect(),
            log_y: true,
            reference: Some(Reference {
                label: "device 200 MB/s".into(),
                value: 200.0,
            }),
        };
        c.write(dir.path(), "log").unwrap();
        let svg = std::fs::read_to_string(dir.path().join("log.svg")).unwrap();
        assert!(svg.contains("device 200 MB/s") && svg.contains("clustered"));
        if let Some(k) = keep {
            std::fs::copy(dir.path().join("log.png"), k).unwrap();
        }
    }

    #[test]
    fn a_long_title_gets_a_smaller_caption_that_fits() {
        assert_eq!(caption_size("short", 800), 22.0);
        let long = "x".repeat(120);
        let size = caption_size(&long, 800);
        assert!(
            size < 22.0 && 120.0 * 0.55 * size <= 800.0 - 24.0 + 1e-9,
            "{size}"
        );
        assert_eq!(caption_size(&"x".repeat(10_000), 800), 11.0);
    }
}
