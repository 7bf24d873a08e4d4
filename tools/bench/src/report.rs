//! The results: tables printed as plain text and written as Markdown.

use std::fmt::Write as _;

use crate::stats::Summary;

/// Whether a row met its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Miss,
    /// Could not run (the reason is in the row).
    NotRun,
}

impl Verdict {
    pub fn of(pass: bool) -> Self {
        if pass {
            Verdict::Pass
        } else {
            Verdict::Miss
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Miss => "MISS",
            Verdict::NotRun => "NOT RUN",
        }
    }
}

/// One table of results.
pub struct Table {
    pub title: String,
    /// What the values are (how many samples or repetitions, what spread).
    pub caption: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(title: &str, caption: &str, headers: &[&str]) -> Self {
        Self {
            title: title.to_owned(),
            caption: caption.to_owned(),
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// A target check, listed in the summary.
pub struct Check {
    pub what: String,
    pub value: String,
    pub target: String,
    pub verdict: Verdict,
}

#[derive(Default)]
pub struct Report {
    pub title: String,
    pub machine: Vec<(String, String)>,
    pub tables: Vec<Table>,
    pub checks: Vec<Check>,
    pub notes: Vec<String>,
}

impl Report {
    pub fn check(&mut self, what: &str, value: String, target: &str, verdict: Verdict) {
        self.checks.push(Check {
            what: what.to_owned(),
            value,
            target: target.to_owned(),
            verdict,
        });
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    fn summary_table(&self) -> Table {
        let mut t = Table::new(
            "Targets",
            "",
            &["check", "value (median)", "target", "result"],
        );
        for c in &self.checks {
            t.row(vec![
                c.what.clone(),
                c.value.clone(),
                c.target.clone(),
                c.verdict.label().to_owned(),
            ]);
        }
        t
    }

    pub fn plain(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{}", self.title);
        for (k, v) in &self.machine {
            let _ = writeln!(out, "  {k:<14} {v}");
        }
        for t in self
            .tables
            .iter()
            .chain(std::iter::once(&self.summary_table()))
        {
            let _ = writeln!(out, "\n== {} ==", t.title);
            if !t.caption.is_empty() {
                let _ = writeln!(out, "{}", t.caption);
            }
            out.push_str(&plain_table(&t.headers, &t.rows));
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\nNotes:");
            for n in &self.notes {
                let _ = writeln!(out, "  - {n}");
            }
        }
        out
    }

    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## {}\n", self.title);
        let _ = writeln!(out, "| machine | |\n|---|---|");
        for (k, v) in &self.machine {
            let _ = writeln!(out, "| {k} | {} |", escape(v));
        }
        for t in std::iter::once(&self.summary_table()).chain(self.tables.iter()) {
            let _ = writeln!(out, "\n### {}\n", t.title);
            if !t.caption.is_empty() {
                let _ = writeln!(out, "{}\n", t.caption);
            }
            let _ = writeln!(
                out,
                "| {} |",
                t.headers
                    .iter()
                    .map(|h| escape(h))
                    .collect::<Vec<_>>()
                    .join(" | ")
            );
            let _ = writeln!(out, "|{}", "---|".repeat(t.headers.len()));
            for r in &t.rows {
                let cells: Vec<String> = r
                    .iter()
                    .map(|c| match c.as_str() {
                        "PASS" => "**PASS**".to_owned(),
                        "MISS" => "**MISS**".to_owned(),
                        other => escape(other),
                    })
                    .collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\n### Notes\n");
            for n in &self.notes {
                let _ = writeln!(out, "- {n}");
            }
        }
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn plain_table(headers: &[String], rows: &[Vec<String>]) -> String {
    let cols = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, w) in widths.iter().enumerate() {
            let c = cells.get(i).map(String::as_str).unwrap_or("");
            let pad = w.saturating_sub(c.chars().count());
            s.push_str(c);
            s.push_str(&" ".repeat(pad));
            if i + 1 < cols {
                s.push_str(" | ");
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(headers);
    out.push_str(
        &widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-+-"),
    );
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// A duration given in microseconds, in a readable unit.
pub fn dur(us: f64) -> String {
    if us.is_nan() {
        "n/a".into()
    } else if us < 1_000.0 {
        format!("{us:.1} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1_000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}

/// `median (p10–p90)` of microsecond samples.
pub fn dur_spread(s: &Summary) -> String {
    format!("{} ({}–{})", dur(s.median), dur(s.p10), dur(s.p90))
}

/// `median (min–max)` of microsecond values.
pub fn dur_range(s: &Summary) -> String {
    format!("{} ({}–{})", dur(s.median), dur(s.min), dur(s.max))
}

/// A count with thousands separators.
pub fn count(n: f64) -> String {
    if n.is_nan() {
        return "n/a".into();
    }
    let v = n.round() as i64;
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(ch);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Bytes in MiB with one decimal.
pub fn mib(bytes: f64) -> String {
    if bytes.is_nan() {
        "n/a".into()
    } else {
        format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(dur(12.34), "12.3 µs");
        assert_eq!(dur(1234.0), "1.23 ms");
        assert_eq!(dur(2_500_000.0), "2.50 s");
        assert_eq!(count(1234567.0), "1 234 567");
        assert_eq!(count(999.0), "999");
        assert_eq!(mib(1048576.0), "1.0 MiB");
    }

    #[test]
    fn tables_render() {
        let mut r = Report {
            title: "t".into(),
            ..Default::default()
        };
        let mut t = Table::new("a", "cap", &["x", "y"]);
        t.row(vec!["1|2".into(), "PASS".into()]);
        r.tables.push(t);
        r.check("c", "1".into(), "<= 2", Verdict::Pass);
        let md = r.markdown();
        assert!(md.contains("| 1\\|2 | **PASS** |"), "{md}");
        assert!(r.plain().contains("1|2 | PASS"));
    }
}
