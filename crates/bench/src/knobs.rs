//! What the knobs of an experiment accept, in one place for the library and the command
//! line: the bounds of a number and the names of a choice (a figure, a mode, an engine).
//!
//! Bounds: [`in_range`] checks a number against a range and says what is wrong in one
//! line that names the knob, the bounds and the value (`--clients must be between 1 and
//! 4096, got 0`); [`seconds`] does the same for a number of seconds.
//!
//! Names: a choice is a `clap::ValueEnum`, and `named_values!` gives it `Display`,
//! `FromStr` and (when asked) `Serialize` from that derive, so each name is spelled once —
//! by its variant, in kebab case, or its `#[value(name = …)]`.

use clap::builder::PossibleValue;
use clap::ValueEnum;
use std::fmt::Display;
use std::ops::{Bound, RangeBounds};
use std::time::Duration;

/// A number a knob takes: an integer, or a float, which must also be finite (NaN and the
/// infinities are in no range, so a typo such as `nan` is refused like a value too big).
pub trait Number: PartialOrd + Display + Copy {
    /// False for NaN and the infinities.
    fn is_finite(self) -> bool {
        true
    }
}

impl Number for u32 {}
impl Number for u64 {}
impl Number for usize {}
impl Number for f64 {
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// Returns `value` if it lies in `range` (and is finite); otherwise the message for the
/// user: "`name` must be between 1 and 4096, got 0" (or "at least", "at most", "above",
/// "below" for a bound that is open or absent). `name` is the knob as the user spells
/// it: `--clients` on the command line, `clients` in a library config.
pub fn in_range<T: Number>(name: &str, value: T, range: impl RangeBounds<T>) -> Result<T, String> {
    if value.is_finite() && range.contains(&value) {
        return Ok(value);
    }
    let (lo, hi) = (range.start_bound(), range.end_bound());
    let low = match lo {
        Bound::Included(l) => Some(format!("at least {l}")),
        Bound::Excluded(l) => Some(format!("above {l}")),
        Bound::Unbounded => None,
    };
    let high = match hi {
        Bound::Included(h) => Some(format!("at most {h}")),
        Bound::Excluded(h) => Some(format!("below {h}")),
        Bound::Unbounded => None,
    };
    let bounds = match (lo, hi, low, high) {
        (Bound::Included(l), Bound::Included(h), _, _) => format!("between {l} and {h}"),
        (_, _, Some(low), Some(high)) => format!("{low} and {high}"),
        (_, _, Some(one), None) | (_, _, None, Some(one)) => one,
        (_, _, None, None) => "a finite number".to_string(),
    };
    Err(format!("{name} must be {bounds}, got {value}"))
}

/// [`in_range`] for a number of seconds, as a `Duration`.
pub fn seconds(name: &str, value: f64, range: impl RangeBounds<f64>) -> Result<Duration, String> {
    in_range(name, value, range).map(Duration::from_secs_f64)
}

/// `v`'s name as the command line spells it.
pub fn name<T: ValueEnum>(v: &T) -> PossibleValue {
    v.to_possible_value()
        .expect("no value of a choice is skipped")
}

/// Every name of `T`, in declaration order, joined by ", " (for messages).
pub fn choices<T: ValueEnum>() -> String {
    T::value_variants()
        .iter()
        .map(|v| name(v).get_name().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a name of `T`; an unknown one is a one-line error naming `what` it should have
/// been and the choices.
pub fn parse_choice<T: ValueEnum>(what: &str, s: &str) -> Result<T, String> {
    <T as ValueEnum>::from_str(s, false)
        .map_err(|_| format!("unknown {what} '{s}' (expected one of: {})", choices::<T>()))
}

/// Gives the `clap::ValueEnum` type `$t` its names everywhere: `Display` (so
/// `to_string()` and `{}`) writes the name the command line takes, and `FromStr` parses
/// it ([`parse_choice`], `$what` naming the kind of value in errors); with `serialize`,
/// `Serialize` writes the name too (a JSON string).
macro_rules! named_values {
    ($t:ty, $what:literal) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str($crate::knobs::name(self).get_name())
            }
        }

        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<$t, String> {
                $crate::knobs::parse_choice($what, s)
            }
        }
    };
    ($t:ty, $what:literal, serialize) => {
        $crate::knobs::named_values!($t, $what);

        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}
pub(crate) use named_values;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    enum Shade {
        LightGrey,
        #[value(name = "ink")]
        Black,
    }
    named_values!(Shade, "shade", serialize);

    #[test]
    fn a_value_out_of_range_is_one_line_naming_the_knob_the_bounds_and_the_value() {
        assert_eq!(in_range("--clients", 4usize, 1..=4096), Ok(4));
        assert_eq!(
            in_range("--clients", 0usize, 1..=4096).unwrap_err(),
            "--clients must be between 1 and 4096, got 0"
        );
        assert_eq!(
            in_range("skew", -1.0, 0.0..).unwrap_err(),
            "skew must be at least 0, got -1"
        );
        assert_eq!(
            in_range("--probe-mib", 70_000u64, ..=65_536).unwrap_err(),
            "--probe-mib must be at most 65536, got 70000"
        );
        let positive = (Bound::Excluded(0.0), Bound::Included(86_400.0));
        assert_eq!(
            in_range("--seconds", 0.0, positive).unwrap_err(),
            "--seconds must be above 0 and at most 86400, got 0"
        );
        assert_eq!(
            in_range("--rate", 5.0, 1.0..5.0).unwrap_err(),
            "--rate must be at least 1 and below 5, got 5"
        );
        // NaN and infinity are in no range, not even an unbounded one.
        assert!(in_range("--seconds", f64::NAN, 0.0..=1.0)
            .unwrap_err()
            .contains("got NaN"));
        assert!(in_range("skew", f64::INFINITY, 0.0..).is_err());
        assert_eq!(
            in_range("x", f64::NAN, ..).unwrap_err(),
            "x must be a finite number, got NaN"
        );
        assert_eq!(
            seconds("--warmup", 1.5, 0.0..=3600.0),
            Ok(Duration::from_millis(1500))
        );
    }

    #[test]
    fn names_come_from_the_derive_and_round_trip() {
        assert_eq!(Shade::LightGrey.to_string(), "light-grey");
        assert_eq!(Shade::Black.to_string(), "ink");
        assert_eq!("ink".parse::<Shade>(), Ok(Shade::Black));
        assert_eq!(choices::<Shade>(), "light-grey, ink");
        let e = "grey".parse::<Shade>().unwrap_err();
        assert_eq!(e, "unknown shade 'grey' (expected one of: light-grey, ink)");
        assert_eq!(
            serde_json::to_string(&Shade::LightGrey).unwrap(),
            "\"light-grey\""
        );
    }
}
