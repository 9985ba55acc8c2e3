//! What the knobs of an experiment accept, in one place for the library and the command
//! line: the names of a choice (a figure, a mode, an engine) and the bounds of a number.
//!
//! Names: a choice is a `clap::ValueEnum`, and [`named_values!`] gives it `Display`,
//! `FromStr` and (when asked) `Serialize` from that derive, so each name is spelled once —
//! by its variant, in kebab case, or its `#[value(name = …)]`.

use clap::builder::PossibleValue;
use clap::ValueEnum;

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
