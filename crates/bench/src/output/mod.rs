//! What the experiments print and write: text tables and JSON lines ([`Table`],
//! [`json_line`]), CSV ([`Csv`]), and figures as PNG and SVG ([`Chart`], [`BarChart`]).

mod plot;
mod plot_bars;
mod report;

pub use plot::{write_grid, Chart, PlotError, Series};
pub use plot_bars::{Bar, BarChart, Reference};
pub use report::{json_line, thousands, Table};
