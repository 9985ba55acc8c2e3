//! CSV as every experiment writes it: one header line, then one line per row with as many
//! fields, a field quoted (RFC 4180: in double quotes, its quotes doubled) only when it
//! holds a comma, a quote or a line break.

use std::borrow::Cow;

/// A CSV text being written.
#[derive(Debug, Clone)]
pub struct Csv {
    text: String,
    columns: usize,
}

impl Csv {
    /// A CSV text with this header line.
    pub fn new<S: AsRef<str>>(header: impl IntoIterator<Item = S>) -> Csv {
        let mut c = Csv {
            text: String::new(),
            columns: 0,
        };
        c.columns = c.line(header);
        c
    }

    /// Adds a row (as many fields as the header has columns).
    pub fn row<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) {
        let n = self.line(cells);
        assert_eq!(n, self.columns, "CSV row width differs from the header");
    }

    /// The text: the header and every row, each line ending in `\n`.
    pub fn finish(self) -> String {
        self.text
    }

    /// Appends one line; returns its number of fields.
    fn line<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) -> usize {
        let mut n = 0;
        for c in cells {
            if n > 0 {
                self.text.push(',');
            }
            self.text.push_str(&field(c.as_ref()));
            n += 1;
        }
        self.text.push('\n');
        n
    }
}

/// One field, quoted when it must be.
fn field(s: &str) -> Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        Cow::Owned(format!("\"{}\"", s.replace('"', "\"\"")))
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a, b"), "\"a, b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
    }

    #[test]
    fn a_header_and_rows_make_lines() {
        let mut c = Csv::new(["a", "b"]);
        c.row(["1", "x, y"]);
        c.row([String::new(), "2".to_string()]);
        assert_eq!(c.finish(), "a,b\n1,\"x, y\"\n,2\n");
    }

    #[test]
    #[should_panic(expected = "width")]
    fn a_row_of_another_width_is_a_bug() {
        Csv::new(["a", "b"]).row(["1"]);
    }
}
