//! The configuration table of docs/deploy.md, read back for the tests that
//! hold it to the code: here, that it lists every variable
//! [`Settings::from_lookup`] reads with the default the code applies; in
//! `lambda-common` and `local-stack`, the variables those crates read.

use std::cell::RefCell;
use std::collections::BTreeSet;

use super::Settings;

/// One row of the configuration table: its variables, its default cell and
/// its meaning cell.
#[derive(Debug)]
pub struct Row {
    pub variables: Vec<String>,
    pub default: String,
    pub meaning: String,
}

/// The rows of the first table after `## Configuration` in `doc`.
pub fn documented_variables(doc: &str) -> Vec<Row> {
    doc.lines()
        .skip_while(|line| line.trim() != "## Configuration")
        .skip_while(|line| !line.starts_with("| variable"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
            assert_eq!(cells.len(), 3, "a configuration row has 3 cells: {line}");
            let variables = cells[0]
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect();
            Row {
                variables,
                default: cells[1].trim().to_owned(),
                meaning: cells[2].trim().to_owned(),
            }
        })
        .collect()
}

/// Every variable [`Settings::from_lookup`] reads.
pub fn settings_variables() -> BTreeSet<String> {
    let seen = RefCell::new(BTreeSet::new());
    Settings::from_lookup(|k| {
        seen.borrow_mut().insert(k.to_owned());
        None
    })
    .expect("the defaults are valid");
    seen.into_inner()
}

/// The value a default cell states plainly: "`x`" or "`x` (...)".
pub fn plain_default(cell: &str) -> Option<&str> {
    let rest = cell.strip_prefix('`')?;
    let (value, after) = rest.split_once('`')?;
    let after = after.trim();
    (after.is_empty() || after.starts_with('(')).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_table_lists_every_setting_with_its_default() {
        let doc = include_str!("../../../docs/deploy.md");
        let rows = documented_variables(doc);
        assert!(!rows.is_empty(), "no configuration table in docs/deploy.md");
        let documented: BTreeSet<&str> = rows
            .iter()
            .flat_map(|r| r.variables.iter().map(String::as_str))
            .collect();
        let missing: Vec<String> = settings_variables()
            .into_iter()
            .filter(|v| !documented.contains(v.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/deploy.md's configuration table lacks variables shared::Settings reads; \
             add a row for each:\n{}",
            missing
                .iter()
                .map(|v| format!("| `{v}` | <default> | <meaning> |"))
                .collect::<Vec<_>>()
                .join("\n")
        );

        let unset = format!("{:?}", Settings::from_lookup(|_| None).unwrap());
        let ours = settings_variables();
        let mut checked = 0;
        for row in &rows {
            let [variable] = row.variables.as_slice() else {
                continue;
            };
            let Some(value) = plain_default(&row.default).filter(|_| ours.contains(variable))
            else {
                continue;
            };
            let set = Settings::from_lookup(|k| (k == variable).then(|| value.to_owned()))
                .unwrap_or_else(|e| panic!("{variable}={value} (its documented default): {e}"));
            assert_eq!(
                format!("{set:?}"),
                unset,
                "docs/deploy.md says {variable} defaults to `{value}`, but setting it to that \
                 changes the settings"
            );
            checked += 1;
        }
        assert!(checked >= 15, "only {checked} defaults checked");
    }

    #[test]
    fn a_wrong_default_is_caught() {
        let doc = "## Configuration\n\n| variable | default | meaning |\n|---|---|---|\n\
                   | `MM_TICKET_TTL_SECS` | `601` | x |\n| `A`, `B` | `1`, `2` | y |\n";
        let rows = documented_variables(doc);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].variables, ["A", "B"]);
        assert_eq!(plain_default(&rows[0].default), Some("601"));
        assert_eq!(plain_default("`true` if several URLs"), None);
        assert_eq!(plain_default("`false` (template: `true`)"), Some("false"));
        let set =
            Settings::from_lookup(|k| (k == "MM_TICKET_TTL_SECS").then(|| "601".into())).unwrap();
        assert_ne!(
            format!("{set:?}"),
            format!("{:?}", Settings::from_lookup(|_| None).unwrap())
        );
    }
}
