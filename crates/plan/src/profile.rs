//! A workload profile: the inputs of the paper's model, read from JSON and validated
//! (see the [crate docs](crate)).

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fmt;

/// The most generators a profile may expand to (after `count`).
pub const MAX_GENERATORS: u64 = 65_536;

/// A workload profile: the inputs of the paper's model. See the [crate docs](crate).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Free text: where the numbers come from, why this γ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// c: bytes per commit record (≥ 0).
    pub commit_record_bytes: f64,
    /// Lmax: bytes/s one log manager accepts for this transaction mix (> 0); with
    /// [`Profile::lmax_txn_overhead_s`], the ceiling B of Lmax as the log bytes per
    /// transaction grow.
    pub lmax_bytes_per_s: f64,
    /// t₀: a log manager's fixed time per transaction (its forced commit write), seconds
    /// (≥ 0). Given, Lmax depends on the profile's log bytes per transaction b = L / R:
    /// Lmax = b / (t₀ + b / `lmax_bytes_per_s`) ([`LmaxCurve`](crate::LmaxCurve));
    /// absent, Lmax is `lmax_bytes_per_s` whatever b.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lmax_txn_overhead_s: Option<f64>,
    /// γ: the fraction of Lmax a manager accepts right after a rollover (0 < γ < 1).
    pub gamma: f64,
    /// The transaction types T_j and their rates R_j (at least one, names unique).
    pub transactions: Vec<TransactionType>,
    /// The log generators (at least one; names unique after expanding `count`).
    pub generators: Vec<GeneratorSpec>,
}

/// A transaction type T_j.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransactionType {
    /// Its name, referred to by [`GeneratorSpec::bytes_per_txn`].
    pub name: String,
    /// R_j: desired transactions per second (≥ 0).
    pub rate_tps: f64,
}

/// One log generator, or `count` identical ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorSpec {
    /// The generator's name; with `count`, the prefix of `name1`..`name{count}`.
    pub name: String,
    /// How many identical generators this entry stands for (≥ 1); absent means one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// G_ij: log bytes per transaction, by transaction-type name (each ≥ 0); a type not
    /// named here contributes nothing.
    #[serde(default, deserialize_with = "unique_keys")]
    pub bytes_per_txn: BTreeMap<String, f64>,
}

/// A JSON object into a map, refusing a key that appears twice (serde's map would keep
/// the last one silently).
fn unique_keys<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = BTreeMap<String, f64>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of transaction-type names to bytes per transaction")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            let mut m = BTreeMap::new();
            while let Some((k, v)) = a.next_entry::<String, f64>()? {
                if m.contains_key(&k) {
                    return Err(serde::de::Error::custom(format!(
                        "transaction type {k:?} appears twice in bytes_per_txn"
                    )));
                }
                m.insert(k, v);
            }
            Ok(m)
        }
    }
    d.deserialize_map(V)
}

/// Why a profile cannot be planned. Every message is one line (names are quoted with
/// escapes).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The text is not JSON of the profile's shape (a missing or misspelt field, a wrong
    /// type, a negative `count`); the message carries serde's line and column.
    #[error("malformed profile: {0}")]
    Malformed(String),
    /// A number is NaN, infinite, negative, or (for Lmax) not positive.
    #[error("{field} is {value}, must be a finite number {requirement}")]
    BadNumber {
        /// Which value, e.g. `transaction "T3" rate_tps`.
        field: String,
        /// What the profile gave.
        value: f64,
        /// What it must be, e.g. `≥ 0`.
        requirement: &'static str,
    },
    /// γ is not strictly between 0 and 1.
    #[error("gamma is {0}, must be strictly between 0 and 1")]
    Gamma(f64),
    /// The `transactions` or `generators` list is empty.
    #[error("{0} is empty: a profile needs at least one")]
    Empty(&'static str),
    /// A transaction type or generator has an empty name.
    #[error("{what} #{index} has an empty name")]
    EmptyName {
        /// `transaction` or `generator`.
        what: &'static str,
        /// Its position in its list, from 1.
        index: usize,
    },
    /// Two transaction types, or two generators (after expanding `count`), share a name.
    #[error("{what} name {name:?} appears more than once")]
    Duplicate {
        /// `transaction` or `generator`.
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// A generator gives bytes for a transaction type the profile does not define.
    #[error("generator {generator:?} gives bytes_per_txn for {transaction:?}, which is not in transactions")]
    UnknownTransaction {
        /// The generator entry's name.
        generator: String,
        /// The undefined type.
        transaction: String,
    },
    /// A generator entry has `count` 0.
    #[error("generator {0:?} has count 0, must be at least 1")]
    ZeroCount(String),
    /// The generators expand to more than [`MAX_GENERATORS`].
    #[error(
        "the profile expands to {0} generators, more than the {MAX_GENERATORS} the planner takes"
    )]
    TooManyGenerators(u128),
}

impl Profile {
    /// Parses a profile from JSON and validates it.
    pub fn from_json(text: &str) -> Result<Profile, PlanError> {
        let p: Profile =
            serde_json::from_str(text).map_err(|e| PlanError::Malformed(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// Checks every rule of the schema (see [`PlanError`]); [`plan`](crate::plan) calls it too.
    pub fn validate(&self) -> Result<(), PlanError> {
        non_negative("commit_record_bytes".into(), self.commit_record_bytes)?;
        if !self.lmax_bytes_per_s.is_finite() || self.lmax_bytes_per_s <= 0.0 {
            return Err(PlanError::BadNumber {
                field: "lmax_bytes_per_s".into(),
                value: self.lmax_bytes_per_s,
                requirement: "> 0",
            });
        }
        if let Some(t0) = self.lmax_txn_overhead_s {
            non_negative("lmax_txn_overhead_s".into(), t0)?;
        }
        // NaN fails both comparisons' negation, so test for "inside" and negate.
        if !(self.gamma > 0.0 && self.gamma < 1.0) {
            return Err(PlanError::Gamma(self.gamma));
        }
        if self.transactions.is_empty() {
            return Err(PlanError::Empty("transactions"));
        }
        if self.generators.is_empty() {
            return Err(PlanError::Empty("generators"));
        }
        let mut types = HashSet::new();
        for (i, t) in self.transactions.iter().enumerate() {
            if t.name.is_empty() {
                return Err(PlanError::EmptyName {
                    what: "transaction",
                    index: i + 1,
                });
            }
            if !types.insert(t.name.as_str()) {
                return Err(PlanError::Duplicate {
                    what: "transaction",
                    name: t.name.clone(),
                });
            }
            non_negative(format!("transaction {:?} rate_tps", t.name), t.rate_tps)?;
        }
        let mut total: u128 = 0;
        for (i, g) in self.generators.iter().enumerate() {
            if g.name.is_empty() {
                return Err(PlanError::EmptyName {
                    what: "generator",
                    index: i + 1,
                });
            }
            if g.count == Some(0) {
                return Err(PlanError::ZeroCount(g.name.clone()));
            }
            total += u128::from(g.count.unwrap_or(1));
            for (t, &bytes) in &g.bytes_per_txn {
                if !types.contains(t.as_str()) {
                    return Err(PlanError::UnknownTransaction {
                        generator: g.name.clone(),
                        transaction: t.clone(),
                    });
                }
                non_negative(
                    format!("generator {:?} bytes_per_txn[{t:?}]", g.name),
                    bytes,
                )?;
            }
        }
        if total > u128::from(MAX_GENERATORS) {
            return Err(PlanError::TooManyGenerators(total));
        }
        let mut names = HashSet::new();
        for g in self.expanded() {
            if !names.insert(g.0.clone()) {
                return Err(PlanError::Duplicate {
                    what: "generator",
                    name: g.0,
                });
            }
        }
        Ok(())
    }

    /// The generators one by one (`count` expanded), each with its spec.
    pub(crate) fn expanded(&self) -> impl Iterator<Item = (String, &GeneratorSpec)> {
        self.generators.iter().flat_map(|g| {
            let n = g.count;
            (1..=n.unwrap_or(1)).map(move |k| match n {
                Some(_) => (format!("{}{k}", g.name), g),
                None => (g.name.clone(), g),
            })
        })
    }
}

fn non_negative(field: String, value: f64) -> Result<(), PlanError> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(PlanError::BadNumber {
            field,
            value,
            requirement: "≥ 0",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan;

    const GOOD: &str = r#"{"commit_record_bytes":50,"lmax_bytes_per_s":972327,"gamma":0.8,
        "transactions":[{"name":"T3","rate_tps":68.31}],
        "generators":[{"name":"P","count":64,"bytes_per_txn":{"T3":434.45}}]}"#;

    /// GOOD with `from` replaced by `to` (which must occur once).
    fn with(from: &str, to: &str) -> String {
        assert_eq!(GOOD.matches(from).count(), 1, "{from}");
        GOOD.replace(from, to)
    }

    /// The error for `text`, checked to be one line.
    fn err(text: &str) -> PlanError {
        let e = Profile::from_json(text).expect_err(text);
        assert_eq!(e.to_string().lines().count(), 1, "{e}");
        e
    }

    #[test]
    fn a_good_profile_parses_and_expands_count() {
        let p = Profile::from_json(GOOD).unwrap();
        let names: Vec<String> = p.expanded().map(|g| g.0).collect();
        assert_eq!(names.len(), 64);
        assert_eq!((names[0].as_str(), names[63].as_str()), ("P1", "P64"));
        // Without count: one generator under its own name; bytes_per_txn may be absent.
        let p = Profile::from_json(&with(r#""count":64,"#, "")).unwrap();
        assert_eq!(p.expanded().map(|g| g.0).collect::<Vec<_>>(), ["P"]);
        let p = Profile::from_json(&with(r#","bytes_per_txn":{"T3":434.45}"#, "")).unwrap();
        assert_eq!(plan(&p).unwrap().generators[0].log_bytes_per_s, 0.0);
    }

    #[test]
    fn missing_fields_and_wrong_types_are_malformed() {
        for (from, to, says) in [
            (r#""gamma":0.8,"#, "", "missing field `gamma`"),
            (
                r#""commit_record_bytes":50,"#,
                "",
                "missing field `commit_record_bytes`",
            ),
            (
                r#""lmax_bytes_per_s":972327,"#,
                "",
                "missing field `lmax_bytes_per_s`",
            ),
            (
                r#""rate_tps":68.31"#,
                r#""rate":68.31"#,
                "unknown field `rate`",
            ),
            (r#""gamma":0.8"#, r#""gamma":"high""#, "invalid type"),
            (r#""gamma":0.8"#, r#""gamma":null"#, "invalid type: null"),
            (r#""count":64"#, r#""count":-1"#, "invalid value"),
            (r#""count":64"#, r#""count":2.5"#, "invalid type"),
            (r#"{"T3":434.45}"#, r#"{"T3":1,"T3":2}"#, "appears twice"),
            (
                r#""gamma":0.8,"#,
                r#""gamma":0.8,"lmax":1,"#,
                "unknown field `lmax`",
            ),
        ] {
            let e = err(&with(from, to));
            assert!(matches!(e, PlanError::Malformed(_)), "{e}");
            assert!(e.to_string().contains(says), "{e} lacks {says}");
        }
        assert!(matches!(err("not json"), PlanError::Malformed(_)));
        assert!(matches!(err(""), PlanError::Malformed(_)));
        assert!(matches!(err("[]"), PlanError::Malformed(_)));
    }

    #[test]
    fn negative_values_are_refused_by_name() {
        for (from, to, field) in [
            (
                r#""rate_tps":68.31"#,
                r#""rate_tps":-1"#,
                r#"transaction "T3" rate_tps"#,
            ),
            (
                r#"{"T3":434.45}"#,
                r#"{"T3":-434.45}"#,
                r#"generator "P" bytes_per_txn["T3"]"#,
            ),
            (
                r#""commit_record_bytes":50"#,
                r#""commit_record_bytes":-50"#,
                "commit_record_bytes",
            ),
            (
                r#""lmax_bytes_per_s":972327"#,
                r#""lmax_bytes_per_s":0"#,
                "lmax_bytes_per_s",
            ),
            (
                r#""lmax_bytes_per_s":972327"#,
                r#""lmax_bytes_per_s":-5"#,
                "lmax_bytes_per_s",
            ),
        ] {
            let e = err(&with(from, to));
            assert!(
                matches!(&e, PlanError::BadNumber { field: f, .. } if f == field),
                "{e}"
            );
        }
        // JSON has no NaN or infinity; a profile built in code can.
        let mut p = Profile::from_json(GOOD).unwrap();
        p.transactions[0].rate_tps = f64::NAN;
        assert!(matches!(p.validate(), Err(PlanError::BadNumber { .. })));
        assert!(plan(&p).is_err());
        p.transactions[0].rate_tps = 1.0;
        p.lmax_bytes_per_s = f64::INFINITY;
        assert!(matches!(p.validate(), Err(PlanError::BadNumber { .. })));
        p.lmax_bytes_per_s = 1.0;
        p.gamma = f64::NAN;
        assert!(matches!(p.validate(), Err(PlanError::Gamma(g)) if g.is_nan()));
        // Numbers too large for f64 are a parse error, not infinity.
        assert!(matches!(
            err(&with(r#""gamma":0.8"#, r#""gamma":1e999"#)),
            PlanError::Malformed(_)
        ));
    }

    #[test]
    fn gamma_must_lie_strictly_inside_0_1() {
        for g in ["0", "1", "-0.5", "1.5"] {
            let e = err(&with(r#""gamma":0.8"#, &format!(r#""gamma":{g}"#)));
            assert!(matches!(e, PlanError::Gamma(_)), "{g}: {e}");
            assert!(e.to_string().contains("strictly between 0 and 1"));
        }
        assert!(Profile::from_json(&with(r#""gamma":0.8"#, r#""gamma":0.999"#)).is_ok());
    }

    #[test]
    fn empty_lists_names_duplicates_and_unknown_types() {
        let e = err(&with(r#"[{"name":"T3","rate_tps":68.31}]"#, "[]"));
        assert_eq!(e, PlanError::Empty("transactions"));
        let e = err(&with(
            r#"[{"name":"P","count":64,"bytes_per_txn":{"T3":434.45}}]"#,
            "[]",
        ));
        assert_eq!(e, PlanError::Empty("generators"));
        let e = err(&with(r#""name":"T3","#, r#""name":"","#));
        assert!(matches!(
            e,
            PlanError::EmptyName {
                what: "transaction",
                index: 1
            }
        ));
        let e = err(&with(r#""name":"P","#, r#""name":"","#));
        assert!(matches!(
            e,
            PlanError::EmptyName {
                what: "generator",
                index: 1
            }
        ));
        let e = err(&with(
            r#"{"name":"T3","rate_tps":68.31}"#,
            r#"{"name":"T3","rate_tps":68.31},{"name":"T3","rate_tps":1}"#,
        ));
        assert_eq!(
            e,
            PlanError::Duplicate {
                what: "transaction",
                name: "T3".into()
            }
        );
        // Duplicates after expansion: P with count 64 makes P12.
        let e = err(&with(
            r#""bytes_per_txn":{"T3":434.45}}"#,
            r#""bytes_per_txn":{"T3":434.45}},{"name":"P12"}"#,
        ));
        assert_eq!(
            e,
            PlanError::Duplicate {
                what: "generator",
                name: "P12".into()
            }
        );
        let e = err(&with(r#"{"T3":434.45}"#, r#"{"T9":434.45}"#));
        assert_eq!(
            e,
            PlanError::UnknownTransaction {
                generator: "P".into(),
                transaction: "T9".into()
            }
        );
        let e = err(&with(r#""count":64"#, r#""count":0"#));
        assert_eq!(e, PlanError::ZeroCount("P".into()));
        let e = err(&with(r#""count":64"#, r#""count":18446744073709551615"#));
        assert!(matches!(e, PlanError::TooManyGenerators(_)), "{e}");
    }

    #[test]
    fn names_with_newlines_still_give_one_line() {
        let e = err(&with(r#"{"T3":434.45}"#, r#"{"T\n9":434.45}"#));
        assert!(e.to_string().contains(r#""T\n9""#), "{e}");
    }
}
