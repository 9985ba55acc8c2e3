//! What the experiments print and write: text tables and JSON lines ([`Table`],
//! [`json_line`]), CSV ([`Csv`]), figures as PNG and SVG ([`Chart`], [`Panel`] with
//! error bars, [`BarChart`], [`StackedBars`]), the spread of repeated points
//! ([`Spread`]), and the files they go to ([`write_file`]).

mod csv;
mod files;
mod plot;
mod plot_bars;
mod report;
mod spread;

pub use csv::Csv;
pub use files::{create_dir, write_file, write_texts};
pub use plot::{write_grid, write_panels, Chart, ErrorBar, Panel, PlotError, Series};
pub use plot_bars::{Bar, BarChart, Reference, StackedBars};
pub use report::{json_array, json_line, thousands, Table};
pub use spread::{by_point, spread_line, Spread};
