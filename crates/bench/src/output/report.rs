//! Printing results: aligned text tables for people, JSON for scripts.

use serde::Serialize;

/// A text table with a header row; columns are right-aligned except the first.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (as many cells as columns).
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let r: Vec<String> = cells.into_iter().map(Into::into).collect();
        assert_eq!(
            r.len(),
            self.header.len(),
            "row width differs from the header"
        );
        self.rows.push(r);
    }

    /// The table as text.
    pub fn render(&self) -> String {
        let mut w: Vec<usize> = self.header.iter().map(|h| h.len()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.len());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i == 0 {
                    s.push_str(&format!("{c:<width$}", width = w[0]));
                } else {
                    s.push_str(&format!("  {c:>width$}", width = w[i]));
                }
            }
            s.trim_end().to_string()
        };
        let mut out = line(&self.header);
        out.push('\n');
        out.push_str(&"-".repeat(w.iter().sum::<usize>() + 2 * (w.len() - 1)));
        for r in &self.rows {
            out.push('\n');
            out.push_str(&line(r));
        }
        out
    }
}

/// Formats a rate with thousands separators: `12,345`.
pub fn thousands(v: f64) -> String {
    let n = v.round() as i64;
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// One JSON object on one line.
pub fn json_line<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("benchmark results serialise")
}

/// A JSON array with one object per line: valid JSON for a parser, and still one row per
/// line for grep and line-oriented tools.
pub fn json_array<T: Serialize>(rows: &[T]) -> String {
    let mut json = String::from("[\n");
    for (i, r) in rows.iter().enumerate() {
        json.push_str(&json_line(r));
        json.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    json.push_str("]\n");
    json
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_array_has_a_row_per_line() {
        let json = json_array(&[1, 2]);
        assert_eq!(json, "[\n1,\n2\n]\n");
        let v: Vec<u32> = serde_json::from_str(&json).unwrap();
        assert_eq!(v, [1, 2]);
        assert_eq!(json_array::<u32>(&[]), "[\n]\n");
    }

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(["name", "value"]);
        t.row(["a", "1"]);
        t.row(["long", "12345"]);
        assert_eq!(
            t.render(),
            "name  value\n-----------\na         1\nlong  12345"
        );
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(-1000.0), "-1,000");
    }
}
