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

    fn bounds(&self) -> ((f64, f64), (f64, f64)) {
        let pts = self.series.iter().flat_map(|s| s.points.iter().copied());
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
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let ((x0, x1), (y0, y1)) = self.bounds();
        let legend_at = self.legend_position((x0, x1), (y0, y1));
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x_label.as_str())
                    .y_desc(self.y_label.as_str())
                    .x_label_formatter(&|v| tick(*v))
                    .y_label_formatter(&|v| tick(*v))
                    .label_style(("sans-serif", 16))
                    .draw()
                    .map_err(|e| e.to_string())?;
                for (i, s) in self.series.iter().enumerate() {
                    let color = Palette99::pick(i).to_rgba();
                    chart
                        .draw_series(LineSeries::new(
                            s.points.iter().copied(),
                            color.stroke_width(2),
                        ))
                        .map_err(|e| e.to_string())?
                        .label(s.label.clone())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(|e| e.to_string())?;
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
        b.caption(self.title.as_str(), ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(80);
        match (self.log_x, self.log_y) {
            (false, false) => body!(b
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| e.to_string())?),
            (true, false) => body!(b
                .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                .map_err(|e| e.to_string())?),
            (false, true) => body!(b
                .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                .map_err(|e| e.to_string())?),
            (true, true) => body!(b
                .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                .map_err(|e| e.to_string())?),
        }
        Ok(())
    }
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
    let cols = cols.max(1);
    let rows = charts.len().div_ceil(cols).max(1);
    let size = (800 * cols as u32, 520 * rows as u32 + 50);
    let grid = Grid {
        title,
        charts,
        rows,
        cols,
    };
    write_png_and_svg(&grid, dir, stem, size)
}

/// Panels under one title.
struct Grid<'a> {
    title: &'a str,
    charts: &'a [Chart],
    rows: usize,
    cols: usize,
}

impl Drawing for Grid<'_> {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let body = root
            .titled(self.title, ("sans-serif", 28))
            .map_err(|e| e.to_string())?;
        for (area, chart) in body
            .split_evenly((self.rows, self.cols))
            .iter()
            .zip(self.charts)
        {
            chart.draw(area)?;
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
/// "8.0" — so that the crowded ticks of a log axis stay legible.
fn tick(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_drop_needless_decimals() {
        assert_eq!(tick(8.0), "8");
        assert_eq!(tick(12288.0), "12288");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(1234.5), "1234");
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
