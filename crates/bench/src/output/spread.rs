//! The spread of a point measured more than once: its median, the least and the most.
//!
//! A figure on a noisy machine draws the median with the min–max range as an error bar;
//! two points whose ranges do not overlap differ by more than the machine's noise did in
//! any of the repeats.

use super::plot::{ErrorBar, Series};
use serde::Serialize;

/// The median, least and most of a point's repeats.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The least.
    pub min: f64,
    /// The most.
    pub max: f64,
    /// How many finite values it summarises.
    pub n: usize,
}

impl Spread {
    /// The spread of the finite `values` (NaN and infinities, a failed or empty run's
    /// ratio, are left out); `None` when none is finite.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let s = Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        };
        debug_assert!(s.min <= s.median && s.median <= s.max);
        Some(s)
    }

    /// The ranges share a value: the difference of the medians is within the noise.
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// As a table cell with `digits` decimals: the median and, when there was more than
    /// one value, the min–max in brackets ("120.5 (98.0–130.2)").
    pub fn cell(&self, digits: usize) -> String {
        if self.n > 1 {
            format!(
                "{:.digits$} ({:.digits$}–{:.digits$})",
                self.median, self.min, self.max
            )
        } else {
            format!("{:.digits$}", self.median)
        }
    }

    /// The summary CSV's columns of a measure `name`: `name_median`, `name_min` and
    /// `name_max`.
    pub fn csv_header(name: &str) -> [String; 3] {
        ["median", "min", "max"].map(|s| format!("{name}_{s}"))
    }

    /// Its cells under [`Spread::csv_header`], with four decimals.
    pub fn csv_cells(&self) -> [String; 3] {
        [self.median, self.min, self.max].map(|v| format!("{v:.4}"))
    }

    /// `f` applied to the three values (a unit change; `f` must be increasing).
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Spread {
        Spread {
            median: f(self.median),
            min: f(self.min),
            max: f(self.max),
            n: self.n,
        }
    }
}

/// `rows` gathered into points: each distinct `key` (in the order of first sight) with
/// the rows that have it, the repeats of that point.
pub fn by_point<R, K: PartialEq>(rows: &[R], key: impl Fn(&R) -> K) -> Vec<(K, Vec<&R>)> {
    let mut points: Vec<(K, Vec<&R>)> = Vec::new();
    for r in rows {
        let k = key(r);
        match points.iter_mut().find(|(p, _)| *p == k) {
            Some((_, mine)) => mine.push(r),
            None => points.push((k, vec![r])),
        }
    }
    debug_assert_eq!(
        points.iter().map(|(_, v)| v.len()).sum::<usize>(),
        rows.len()
    );
    points
}

/// A line through the medians of `(x, spread)` points and its min–max error bars; a
/// point a log axis (`log_y`) cannot draw, or with no finite median, is left out.
pub fn spread_line(label: String, pts: &[(f64, Spread)], log_y: bool) -> (Series, Vec<ErrorBar>) {
    let drawable: Vec<&(f64, Spread)> = pts
        .iter()
        .filter(|(_, s)| s.median.is_finite() && (!log_y || s.median > 0.0))
        .collect();
    (
        Series {
            label,
            points: drawable.iter().map(|(x, s)| (*x, s.median)).collect(),
        },
        drawable
            .iter()
            .map(|(x, s)| ErrorBar {
                x: *x,
                low: s.min,
                high: s.max,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts_and_the_extremes() {
        let s = Spread::of([3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (2.0, 1.0, 3.0, 3));
        let s = Spread::of([4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        let one = Spread::of([7.0]).unwrap();
        assert_eq!((one.median, one.min, one.max), (7.0, 7.0, 7.0));
    }

    #[test]
    fn non_finite_values_are_left_out() {
        let s = Spread::of([f64::NAN, 5.0, f64::INFINITY, 1.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (3.0, 1.0, 5.0, 2));
        assert_eq!(Spread::of([f64::NAN]), None);
        assert_eq!(Spread::of([]), None);
    }

    #[test]
    fn a_cell_shows_the_spread_only_of_repeats() {
        assert_eq!(
            Spread::of([3.0, 1.0, 2.0]).unwrap().cell(1),
            "2.0 (1.0–3.0)"
        );
        assert_eq!(Spread::of([2.25]).unwrap().cell(1), "2.2");
    }

    #[test]
    fn a_line_is_the_medians_and_its_bars_the_extremes() {
        let pts = [
            (1.0, Spread::of([1.0, 2.0, 4.0]).unwrap()),
            (2.0, Spread::of([0.0, 0.0, 1.0]).unwrap()),
        ];
        let (s, b) = spread_line("l".into(), &pts, false);
        assert_eq!(s.points, [(1.0, 2.0), (2.0, 0.0)]);
        assert_eq!((b[0].low, b[0].high, b[1].high), (1.0, 4.0, 1.0));
        let (s, b) = spread_line("l".into(), &pts, true);
        assert_eq!(s.points, [(1.0, 2.0)], "a log axis has no 0");
        assert_eq!(b.len(), 1);
    }

    #[test]
    fn rows_gather_by_key_in_the_order_of_first_sight() {
        let rows = [("b", 1), ("a", 2), ("b", 3)];
        let p = by_point(&rows, |r| r.0);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].0, p[1].0), ("b", "a"));
        assert_eq!(p[0].1, [&("b", 1), &("b", 3)]);
        assert!(by_point(&rows[..0], |r| r.0).is_empty());
    }

    #[test]
    fn csv_columns_are_median_min_max() {
        let s = Spread::of([1.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            Spread::csv_header("tps"),
            ["tps_median", "tps_min", "tps_max"]
        );
        assert_eq!(s.csv_cells(), ["2.0000", "1.0000", "4.0000"]);
    }

    #[test]
    fn overlap_is_sharing_a_value() {
        let a = Spread::of([1.0, 2.0]).unwrap();
        let b = Spread::of([2.0, 3.0]).unwrap();
        let c = Spread::of([2.5, 3.0]).unwrap();
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c) && !c.overlaps(&a));
    }
}
