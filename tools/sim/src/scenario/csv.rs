//! Traces read from CSV files.

use std::path::Path;

use std::collections::HashMap;

use super::attrs::column_name;
use super::{Attrs, Geo, Row, Scenario, Source, TraceError, MAX_LATENCY_MS};

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

    /// Parses CSV text (see [`Scenario::from_csv_file`]). After the
    /// `time,player,rating` (and `party`) columns a trace may carry
    /// latencies: one `latency:<region>` column per region (milliseconds,
    /// empty: not measured; each row measures at least one) and optionally
    /// `home` (the region the player is counted in; by default the one it
    /// measured lowest, also when the field is empty). And attributes:
    /// one `attr:<name>` column per attribute, each cell the player's raw
    /// value (`a|b|c` for a list, `key:number|...` for a map; empty: no
    /// value), typed by the rule set's declaration when a world reads it.
    pub fn from_csv(text: &str) -> Result<Self, TraceError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty());
        const HEADERS: &str = "time,player,rating (or time,player,rating,party), then optionally home, latency:<region> and attr:<name> columns";
        let (_, header) = lines
            .next()
            .ok_or_else(|| TraceError(format!("empty trace: expected the header {HEADERS}")))?;
        let columns: Vec<&str> = header.split(',').map(str::trim).collect();
        let bad_header = || {
            TraceError(format!(
                "line 1: expected the header {HEADERS}, got {header:?}"
            ))
        };
        if columns.len() < 3 || columns[..3] != ["time", "player", "rating"] {
            return Err(bad_header());
        }
        let with_party = columns.get(3) == Some(&"party");
        let mut home_column = None;
        let mut regions: Vec<(usize, String)> = Vec::new();
        let mut attr_columns: Vec<(usize, String)> = Vec::new();
        for (i, c) in columns.iter().enumerate().skip(3 + usize::from(with_party)) {
            if *c == "home" && home_column.is_none() {
                home_column = Some(i);
            } else if let Some(name) = column_name(c) {
                let name = name?;
                if attr_columns.iter().any(|(_, known)| *known == name) {
                    return Err(TraceError(format!(
                        "line 1: column {c:?}: an attribute is named once"
                    )));
                }
                attr_columns.push((i, name));
            } else if let Some(r) = c.strip_prefix("latency:") {
                let valid = !r.is_empty()
                    && r.len() <= 32
                    && r.chars()
                        .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-');
                if !valid || regions.iter().any(|(_, known)| known == r) {
                    return Err(TraceError(format!(
                        "line 1: column {c:?}: a region is [a-z0-9-]{{1,32}}, named once"
                    )));
                }
                regions.push((i, r.to_owned()));
            } else {
                return Err(bad_header());
            }
        }
        if home_column.is_some() && regions.is_empty() {
            return Err(TraceError(
                "line 1: a home column needs latency:<region> columns".into(),
            ));
        }
        let width = columns.len();
        let mut rows = Vec::new();
        let mut geo_rows: HashMap<String, (Option<usize>, Vec<Option<u32>>)> = HashMap::new();
        let mut attr_rows: HashMap<String, Vec<Option<String>>> = HashMap::new();
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
            let party = if with_party {
                Some(fields[3]).filter(|p| !p.is_empty()).map(str::to_owned)
            } else {
                None
            };
            if !regions.is_empty() {
                let geo = geo_row(line, &fields, &regions, home_column)?;
                geo_rows.insert(player.to_owned(), geo);
            }
            if !attr_columns.is_empty() {
                let values = attr_columns
                    .iter()
                    .map(|(c, _)| {
                        Some(fields[*c])
                            .filter(|v| !v.is_empty())
                            .map(str::to_owned)
                    })
                    .collect();
                attr_rows.insert(player.to_owned(), values);
            }
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
        let mut scenario = Self::assemble(
            Source::Csv {
                path: String::new(),
            },
            rows,
        )?;
        if !regions.is_empty() {
            let mut home = Vec::with_capacity(scenario.arrivals.len());
            let mut latency = Vec::with_capacity(scenario.arrivals.len());
            for a in &scenario.arrivals {
                let (h, l) = geo_rows.remove(&a.player).unwrap_or_default();
                // By default a player is at home where it measured lowest.
                let h = h.unwrap_or_else(|| {
                    (0..l.len())
                        .filter(|&r| l[r].is_some())
                        .min_by_key(|&r| (l[r], r))
                        .unwrap_or(0)
                });
                home.push(h);
                latency.push(l);
            }
            scenario.geo = Some(Geo {
                regions: regions.into_iter().map(|(_, r)| r).collect(),
                home,
                latency,
                model: None,
            });
        }
        if !attr_columns.is_empty() {
            let values = scenario
                .arrivals
                .iter()
                .map(|a| attr_rows.remove(&a.player).unwrap_or_default())
                .collect();
            scenario.attrs = Some(Attrs {
                names: attr_columns.into_iter().map(|(_, n)| n).collect(),
                values,
                spec: None,
            });
        }
        Ok(scenario)
    }
}

/// One row's home (an index into `regions`) and latencies.
fn geo_row(
    line: usize,
    fields: &[&str],
    regions: &[(usize, String)],
    home_column: Option<usize>,
) -> Result<(Option<usize>, Vec<Option<u32>>), TraceError> {
    let mut latencies = Vec::with_capacity(regions.len());
    for (column, region) in regions {
        let v = fields[*column];
        if v.is_empty() {
            latencies.push(None);
            continue;
        }
        let ms: f64 = v.parse().map_err(|_| {
            TraceError(format!(
                "line {line}: latency to {region} {v:?} is not a number"
            ))
        })?;
        if !(ms > 0.0 && ms <= f64::from(MAX_LATENCY_MS)) {
            return Err(TraceError(format!(
                "line {line}: latency to {region} must be > 0 and <= {MAX_LATENCY_MS} ms, got {v}"
            )));
        }
        // As the core rounds: a fraction of a millisecond rounds up.
        latencies.push(Some(ms.ceil() as u32));
    }
    if latencies.iter().all(Option::is_none) {
        return Err(TraceError(format!(
            "line {line}: no latency measured (every latency:<region> field is empty)"
        )));
    }
    let home = match home_column.map(|c| fields[c]).filter(|h| !h.is_empty()) {
        Some(h) => Some(regions.iter().position(|(_, r)| r == h).ok_or_else(|| {
            TraceError(format!(
                "line {line}: home {h:?} is not one of the latency:<region> columns"
            ))
        })?),
        None => None,
    };
    Ok((home, latencies))
}
