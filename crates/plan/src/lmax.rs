//! Lmax as a function of the log bytes per transaction (the paper's §5: "L_max depends
//! on amount of log data generated per transaction (L/R) … a large amount of log data
//! generated per transaction results in a higher L_max because the log data has
//! proportionally fewer commit records and thus requires proportionally fewer forced
//! writes").
//!
//! The model here: a log manager spends a fixed time t₀ on each transaction (its forced
//! commit write, the commit coordinator's round) and 1/B on each byte, so it accepts at
//! most R = 1 / (t₀ + b/B) transactions of b bytes each per second, and
//!
//! ```text
//! Lmax(b) = b·R = b / (t₀ + b/B)
//! ```
//!
//! which rises with b towards the ceiling B. With t₀ = 0 Lmax is B whatever b: one Lmax
//! for every profile, as a profile without `lmax_txn_overhead_s` says. Two or more
//! measured plateaus (b_k, Lmax_k) at different b fix B and t₀: 1/R = t₀ + b/B is a
//! straight line in b ([`LmaxCurve::fit`]).

use serde::Serialize;

/// Lmax(b) = b / (t₀ + b/B): a log manager spends a fixed time t₀ per transaction (its
/// forced commit write) and 1/B per byte, so Lmax rises with the log bytes per
/// transaction b towards the ceiling B, as the paper's §5 says it does; t₀ = 0 is one
/// Lmax for every profile. [`LmaxCurve::fit`] finds B and t₀ from measured plateaus.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LmaxCurve {
    /// B: the ceiling as b grows, bytes/s (> 0).
    pub ceiling_bytes_per_s: f64,
    /// t₀: the log manager's fixed time per transaction, seconds (≥ 0).
    pub txn_overhead_s: f64,
}

impl LmaxCurve {
    /// Lmax for transactions of `bytes_per_txn` log bytes each (B when b is 0 or not
    /// finite: no transactions, nothing to charge t₀ to).
    pub fn at(&self, bytes_per_txn: f64) -> f64 {
        let b = bytes_per_txn;
        if !(b.is_finite() && b > 0.0) || self.txn_overhead_s == 0.0 {
            return self.ceiling_bytes_per_s;
        }
        b / (self.txn_overhead_s + b / self.ceiling_bytes_per_s)
    }

    /// The curve through measured plateaus `(bytes per transaction, Lmax bytes/s)`: the
    /// least-squares line 1/R = t₀ + b/B over the points (R = Lmax / b). With one point,
    /// or points that give no rising line (noise: a slope ≤ 0), or a negative t₀, it
    /// falls back to what they support: t₀ = 0 and B the largest Lmax seen. `None` when
    /// no point has b > 0 and Lmax > 0.
    pub fn fit(points: &[(f64, f64)]) -> Option<LmaxCurve> {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .copied()
            .filter(|&(b, l)| b.is_finite() && l.is_finite() && b > 0.0 && l > 0.0)
            .collect();
        let best = pts.iter().map(|p| p.1).fold(0.0, f64::max);
        if pts.is_empty() {
            return None;
        }
        let flat = LmaxCurve {
            ceiling_bytes_per_s: best,
            txn_overhead_s: 0.0,
        };
        // x = b, y = 1/R = b / Lmax.
        let n = pts.len() as f64;
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let my = pts.iter().map(|p| p.0 / p.1).sum::<f64>() / n;
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 / p.1 - my)).sum();
        if sxx <= 0.0 {
            return Some(flat);
        }
        let slope = sxy / sxx;
        let t0 = my - slope * mx;
        // A NaN fails every comparison: written so that it falls back too.
        let rising = slope > 0.0 && t0 >= 0.0 && (1.0 / slope).is_finite();
        if !rising {
            return Some(flat);
        }
        Some(LmaxCurve {
            ceiling_bytes_per_s: 1.0 / slope,
            txn_overhead_s: t0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's Table 2 (one log manager): (L / R, L) of T1, T2 and T3.
    fn table2() -> [(f64, f64); 3] {
        [
            (628_703.0 / 332.90, 628_703.0),
            (960_892.0 / 67.08, 960_892.0),
            (972_327.0 / 34.37, 972_327.0),
        ]
    }

    #[test]
    fn the_curve_rises_with_bytes_per_transaction_towards_its_ceiling() {
        let c = LmaxCurve {
            ceiling_bytes_per_s: 1e6,
            txn_overhead_s: 1e-3,
        };
        // b = 1000 B: 1 ms + 1 ms per transaction, 500 tps, 500 kB/s.
        assert!((c.at(1000.0) - 500_000.0).abs() < 1e-6);
        assert!(c.at(100.0) < c.at(1000.0) && c.at(1000.0) < c.at(1e6));
        assert!(c.at(1e9) < 1e6 && c.at(1e9) > 0.999e6);
        assert_eq!(c.at(0.0), 1e6);
        let flat = LmaxCurve {
            txn_overhead_s: 0.0,
            ..c
        };
        assert_eq!(flat.at(10.0), 1e6);
    }

    #[test]
    fn fitting_the_papers_table_2_reproduces_its_plateaus() {
        // Through T1 and T3: B ≈ 1.01 MB/s, t₀ ≈ 1.14 ms.
        let [t1, t2, t3] = table2();
        let c = LmaxCurve::fit(&[t1, t3]).unwrap();
        assert!(
            (c.ceiling_bytes_per_s - 1_011_890.0).abs() < 2_000.0,
            "{c:?}"
        );
        assert!((c.txn_overhead_s - 1.1375e-3).abs() < 0.01e-3, "{c:?}");
        assert!((c.at(t1.0) - t1.1).abs() < 1.0, "{c:?}");
        assert!((c.at(t3.0) - t3.1).abs() < 1.0, "{c:?}");
        // T2, not used in the fit, within 3 % of its measured L.
        assert!((c.at(t2.0) / t2.1 - 1.0).abs() < 0.03, "{}", c.at(t2.0));
        // All three: least squares, still within 5 % of each.
        let c = LmaxCurve::fit(&table2()).unwrap();
        for (b, l) in table2() {
            assert!((c.at(b) / l - 1.0).abs() < 0.05, "{b}: {} vs {l}", c.at(b));
        }
    }

    #[test]
    fn a_fit_without_a_rising_line_is_flat_at_the_best_plateau() {
        let one = LmaxCurve::fit(&[(1000.0, 5e5)]).unwrap();
        assert_eq!(one.txn_overhead_s, 0.0);
        assert_eq!(one.ceiling_bytes_per_s, 5e5);
        // More bytes per transaction and a lower plateau: noise, not the model.
        let falling = LmaxCurve::fit(&[(1000.0, 9e5), (20_000.0, 2e5)]).unwrap();
        assert_eq!(falling.ceiling_bytes_per_s, 9e5);
        assert_eq!(falling.txn_overhead_s, 0.0);
        assert!(LmaxCurve::fit(&[]).is_none());
        assert!(LmaxCurve::fit(&[(0.0, 1e6), (f64::NAN, 1.0)]).is_none());
    }
}
