//! Traces read from CSV files.

use std::path::Path;

use super::{Row, Scenario, Source, TraceError};

impl Scenario {
    /// Reads a CSV file with the header `time,player,rating` or
    /// `time,player,rating,party` (seconds since the start, a player id, a
    /// finite rating, a party label: rows with the same label arrive
    /// together as one party, led by the first of them; empty for a solo
    /// player). Rows may come in any order; players must be unique.
    pub fn from_csv_file(path: &Path) -> Result<Self, TraceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TraceError(format!("cannot read {}: {e}", path.display())))?;
        let mut scenario = Self::from_csv(&text)
            .map_err(|e| TraceError(format!("{}: {}", path.display(), e.0)))?;
        scenario.source = Source::Csv {
            path: path.display().to_string(),
        };
        Ok(scenario)
    }

    /// Parses CSV text (see [`Scenario::from_csv_file`]).
    pub fn from_csv(text: &str) -> Result<Self, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        const HEADERS: &str = "time,player,rating (or time,player,rating,party)";
        let (_, header) = lines
            .next()
            .ok_or_else(|| TraceError(format!("empty trace: expected the header {HEADERS}")))?;
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        let with_party = match columns.as_slice() {
            ["time", "player", "rating"] => false,
            ["time", "player", "rating", "party"] => true,
            _ => {
                return Err(TraceError(format!(
                    "line 1: expected the header {HEADERS}, got {header:?}"
                )))
            }
        };
        let width = if with_party { 4 } else { 3 };
        let mut rows = Vec::new();
        for (line, row) in lines {
            let fields: Vec<&str> = row.split(',').map(str::trim).collect();
            if fields.len() != width {
                return Err(TraceError(format!(
                    "line {line}: expected {width} fields ({}), got {}: {row:?}",
                    columns.join(","),
                    fields.len()
                )));
            }
            let time: f64 = fields[0].parse().map_err(|_| {
                TraceError(format!("line {line}: time {:?} is not a number", fields[0]))
            })?;
            if !(time.is_finite() && time >= 0.0) {
                return Err(TraceError(format!(
                    "line {line}: time must be a finite number of seconds >= 0, got {time}"
                )));
            }
            let player = fields[1];
            shared::PlayerId::parse(player)
                .map_err(|e| TraceError(format!("line {line}: player {player:?}: {e}")))?;
            let rating: f64 = fields[2].parse().map_err(|_| {
                TraceError(format!(
                    "line {line}: rating {:?} is not a number",
                    fields[2]
                ))
            })?;
            if !rating.is_finite() {
                return Err(TraceError(format!(
                    "line {line}: rating must be finite, got {rating}"
                )));
            }
            let party = fields
                .get(3)
                .filter(|p| !p.is_empty())
                .map(|p| (*p).to_owned());
            rows.push(Row {
                time,
                player: player.to_owned(),
                rating,
                party,
                line,
            });
        }
        if rows.is_empty() {
            return Err(TraceError("the trace has a header but no arrivals".into()));
        }
        Self::assemble(
            Source::Csv {
                path: String::new(),
            },
            rows,
        )
    }
}
