//! A bar chart (PNG and SVG): one bar per engine in `sluice compare`.

use crate::plot::{ensure_font, PlotError};
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
}

impl BarChart {
    /// Writes `stem.png` and `stem.svg` under `dir`.
    pub fn write(&self, dir: &Path, stem: &str) -> Result<(), PlotError> {
        ensure_font();
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let png = dir.join(format!("{stem}.png"));
        let svg = dir.join(format!("{stem}.svg"));
        {
            let root = BitMapBackend::new(&png, (1000, 640)).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())?;
        }
        {
            let root = SVGBackend::new(&svg, (1000, 640)).into_drawing_area();
            self.draw(&root)?;
            root.present().map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), PlotError>
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let n = self.bars.len().max(1) as f64;
        let top = self
            .bars
            .iter()
            .map(|b| b.value)
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.15;
        // The labels go in a band below zero inside the plot, centred under the bars;
        // the y axis prints no negative ticks.
        let floor = -top * 0.07;
        let mut chart = ChartBuilder::on(root)
            .caption(self.title.as_str(), ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(10)
            .y_label_area_size(90)
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
                    crate::report::thousands(*v)
                }
            })
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(|e| e.to_string())?;
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
            chart
                .draw_series([
                    Text::new(
                        b.note.clone(),
                        (x + 0.5, b.value + top * 0.01),
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
        Ok(())
    }
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
                },
                Bar {
                    label: "b".into(),
                    value: 0.0,
                    note: "unavailable".into(),
                },
            ],
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
}
