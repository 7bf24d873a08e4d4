//! A world's `attributes` and `rules` (match rules), as written in the
//! document. Messages name the rule by index (0-based, as in the document's
//! list) and name, then the field: `rules[2] ("level"): max: ...`.

use super::fields::{at_least, integer, number, one_of, seconds, string};
use super::*;
use crate::config::attributes::{AttributeCatalog, AttributeDecl, AttributeType};
use crate::config::match_rules::{
    CompareOp, ListAggregate, MatchRule, NumberAggregate, Relax, RuleKind, RuleValue, MAX_OPERANDS,
    MAX_RULES, MAX_STEPS,
};

mod compound;
mod quota;
mod relax;

use compound::find_cycle;
use relax::{relax, Bound};

/// One rule, as written in the document (every field as JSON, so a message
/// names the field of a wrong type).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleSection {
    name: Option<Value>,
    #[serde(rename = "type")]
    kind: Option<Value>,
    attribute: Option<Value>,
    op: Option<Value>,
    value: Option<Value>,
    party: Option<Value>,
    max: Option<Value>,
    min: Option<Value>,
    from: Option<Value>,
    min_count: Option<Value>,
    rules: Option<Value>,
    per: Option<Value>,
    quotas: Option<Value>,
    optional_after_seconds: Option<Value>,
    relax: Option<Value>,
}

/// Whether `name` may name a rule: `^[A-Za-z][A-Za-z0-9_-]{0,31}$`.
fn is_rule_name(name: &str) -> bool {
    name.len() <= 32
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A world's attributes (the rules' ∪ `listed`, in the catalog's
/// declaration order) and its rules (document order).
pub(super) fn world_rules(
    listed: Option<Vec<String>>,
    rules: Option<Vec<Value>>,
    catalog: &AttributeCatalog,
) -> Result<(Vec<String>, Vec<MatchRule>), String> {
    let listed = listed.unwrap_or_default();
    for (i, name) in listed.iter().enumerate() {
        if catalog.get(name).is_none() {
            return Err(format!(
                "attributes: {name:?} is not declared in the top-level attributes"
            ));
        }
        if listed[..i].contains(name) {
            return Err(format!("attributes: {name:?} is listed twice"));
        }
    }
    let rules = rules.unwrap_or_default();
    if rules.len() > MAX_RULES {
        return Err(format!(
            "rules: at most {MAX_RULES} rules, got {}",
            rules.len()
        ));
    }
    let mut labels = Vec::with_capacity(rules.len());
    let mut names: Vec<String> = Vec::with_capacity(rules.len());
    let mut sections = Vec::with_capacity(rules.len());
    for (i, value) in rules.into_iter().enumerate() {
        let label = value
            .get("name")
            .and_then(Value::as_str)
            .map_or_else(|| format!("rules[{i}]"), |n| format!("rules[{i}] ({n:?})"));
        let at = |e: String| format!("{label}: {e}");
        let section: RuleSection = serde_json::from_value(value).map_err(|e| at(e.to_string()))?;
        let name = string("name", section.name.as_ref().unwrap_or(&Value::Null)).map_err(at)?;
        if !is_rule_name(name) {
            return Err(at(format!(
                "name: must be [A-Za-z][A-Za-z0-9_-]{{0,31}}, got {name:?}"
            )));
        }
        if let Some(j) = names.iter().position(|n| n == name) {
            return Err(at(format!("name: {name:?} is also the name of rules[{j}]")));
        }
        names.push(name.to_owned());
        labels.push(label);
        sections.push(section);
    }
    let mut out = Vec::with_capacity(sections.len());
    for (i, section) in sections.into_iter().enumerate() {
        let rule = section
            .validate(i, &names, catalog)
            .map_err(|e| format!("{}: {e}", labels[i]))?;
        out.push(rule);
    }
    quota::check_world(&out, &labels)?;
    if let Some(cycle) = find_cycle(&out) {
        let path: Vec<&str> = cycle.iter().map(|&i| names[i].as_str()).collect();
        return Err(format!(
            "{}: rules: compound rules name each other in a cycle: {}",
            labels[cycle[0]],
            path.join(" -> ")
        ));
    }
    for i in 0..out.len() {
        for j in out[i].kind.operands().to_vec() {
            out[j].top = false;
        }
    }
    let attributes = catalog
        .iter()
        .map(|d| d.name.clone())
        .filter(|n| listed.contains(n) || out.iter().any(|r| r.kind.attribute() == Some(n)))
        .collect();
    Ok((attributes, out))
}

impl RuleSection {
    /// The given fields besides name, type and the relaxation, by their
    /// document names.
    fn given(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            ("attribute", &self.attribute),
            ("op", &self.op),
            ("value", &self.value),
            ("party", &self.party),
            ("max", &self.max),
            ("min", &self.min),
            ("from", &self.from),
            ("minCount", &self.min_count),
            ("rules", &self.rules),
            ("per", &self.per),
            ("quotas", &self.quotas),
        ]
        .into_iter()
        .filter_map(|(field, v)| v.as_ref().map(|_| field))
    }

    /// The rule at index `i` (`names`: every rule's name, by index); a
    /// message starts with the field.
    fn validate(
        self,
        i: usize,
        names: &[String],
        catalog: &AttributeCatalog,
    ) -> Result<MatchRule, String> {
        let kind_name = match &self.kind {
            None => return Err(
                "type: required: equality, comparison, distance, intersection, quota, total or compound"
                    .into(),
            ),
            Some(v) => one_of(
                "type",
                v,
                &[
                    "equality",
                    "comparison",
                    "distance",
                    "intersection",
                    "quota",
                    "total",
                    "compound",
                ],
            )?,
        };
        let fields: &[&str] = match kind_name {
            "equality" => &["attribute"],
            "comparison" => &["attribute", "op", "value", "party"],
            "distance" => &["attribute", "max", "from", "party"],
            "intersection" => &["attribute", "minCount", "party"],
            "quota" => &["attribute", "per", "quotas"],
            "total" => &["attribute", "per", "min", "max"],
            _ => &["op", "rules"],
        };
        if let Some(f) = self.given().find(|f| !fields.contains(f)) {
            return Err(format!("{f}: not a field of {kind_name} rules"));
        }
        let (kind, bound) = match kind_name {
            "equality" => {
                let d = self.attribute(catalog, &[AttributeType::String], "equality")?;
                (
                    RuleKind::Equality {
                        attribute: d.name.clone(),
                    },
                    None,
                )
            }
            "comparison" => (self.comparison(catalog)?, Some(Bound::Finite)),
            "distance" => {
                let d = self.attribute(catalog, &[AttributeType::Number], "distance")?;
                let max = at_least("max", self.max.as_ref().ok_or("max: required")?, 0.0)?;
                let from_anchor = match &self.from {
                    None => false,
                    Some(v) => one_of("from", v, &["spread", "anchor"])? == "anchor",
                };
                let party = number_party(self.party.as_ref())?;
                let attribute = d.name.clone();
                let kind = RuleKind::Distance {
                    attribute,
                    max,
                    from_anchor,
                    party,
                };
                (kind, Some(Bound::NonNegative))
            }
            "intersection" => {
                let d = self.attribute(catalog, &[AttributeType::StringList], "intersection")?;
                let most = d.max_items as u32;
                let min_count = match &self.min_count {
                    None => 1,
                    Some(v) => integer("minCount", v, 1, most)?,
                };
                let party = match &self.party {
                    None => ListAggregate::Intersection,
                    Some(v) => match one_of("party", v, &["intersection", "union"])? {
                        "union" => ListAggregate::Union,
                        _ => ListAggregate::Intersection,
                    },
                };
                let attribute = d.name.clone();
                let kind = RuleKind::Intersection {
                    attribute,
                    min_count,
                    party,
                };
                (kind, Some(Bound::Count(most)))
            }
            "quota" | "total" => {
                if self.relax.is_some() || self.optional_after_seconds.is_some() {
                    return Err(format!(
                        "relax, optionalAfterSeconds: a {kind_name} rule always holds (it does not relax)"
                    ));
                }
                match kind_name {
                    "quota" => (self.quota(catalog)?, None),
                    _ => (self.total(catalog)?, None),
                }
            }
            _ => (self.compound(i, names)?, None),
        };
        let bound = bound.filter(|_| kind.number().is_some());
        let relax = match (&self.relax, bound) {
            (None, _) => None,
            (Some(_), None) => return Err("relax: only for rules with a number (a comparison with a numeric value, distance, intersection)".into()),
            (Some(v), Some(bound)) => Some(relax(v, bound, kind.number().unwrap_or(0.0), &kind)?),
        };
        Ok(MatchRule {
            name: names[i].clone(),
            kind,
            optional_after: self
                .optional_after_seconds
                .as_ref()
                .map(|v| seconds("optionalAfterSeconds", v))
                .transpose()?,
            relax,
            top: true,
        })
    }

    /// The rule's attribute, declared, of one of `types`.
    fn attribute<'c>(
        &self,
        catalog: &'c AttributeCatalog,
        types: &[AttributeType],
        rule: &str,
    ) -> Result<&'c AttributeDecl, String> {
        let name = string(
            "attribute",
            self.attribute.as_ref().ok_or("attribute: required")?,
        )?;
        let decl = catalog.get(name).ok_or_else(|| {
            format!("attribute: {name:?} is not declared in the top-level attributes")
        })?;
        if !types.contains(&decl.kind) {
            let wanted: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
            return Err(format!(
                "attribute: {name:?} is a {} attribute; {rule} rules need a {} attribute",
                decl.kind.as_str(),
                wanted.join(" or ")
            ));
        }
        Ok(decl)
    }

    fn comparison(&self, catalog: &AttributeCatalog) -> Result<RuleKind, String> {
        let d = self.attribute(
            catalog,
            &[AttributeType::Number, AttributeType::String],
            "comparison",
        )?;
        let attribute = d.name.clone();
        let ops = [">=", "<=", ">", "<", "=", "!=", "allEqual", "allDifferent"];
        let op = one_of("op", self.op.as_ref().ok_or("op: required")?, &ops)?;
        if let Some(op) = CompareOp::parse(op) {
            let value = self
                .value
                .as_ref()
                .ok_or_else(|| format!("value: required with op {}", op.as_str()))?;
            if d.kind == AttributeType::Number {
                let value = RuleValue::Number(number("value", value)?);
                let party = number_party(self.party.as_ref())?;
                return Ok(RuleKind::Compare {
                    attribute,
                    op,
                    value,
                    party,
                });
            }
            if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
                return Err(format!(
                    "op: a string attribute compares only with = or !=, got {}",
                    op.as_str()
                ));
            }
            if self.party.is_some() {
                return Err("party: only for number attributes".into());
            }
            let token = string("value", value)?;
            d.value_from_json(value)
                .map_err(|e| format!("value: {e}"))?;
            let value = RuleValue::Token(token.to_owned());
            let party = NumberAggregate::Avg;
            return Ok(RuleKind::Compare {
                attribute,
                op,
                value,
                party,
            });
        }
        for (field, given) in [("value", &self.value), ("party", &self.party)] {
            if given.is_some() {
                return Err(format!(
                    "{field}: not with op {op} (it compares the players with each other)"
                ));
            }
        }
        Ok(match op {
            "allEqual" => RuleKind::AllEqual { attribute },
            _ => RuleKind::AllDifferent { attribute },
        })
    }
}

fn number_party(v: Option<&Value>) -> Result<NumberAggregate, String> {
    Ok(
        match v
            .map(|v| one_of("party", v, &["avg", "min", "max"]))
            .transpose()?
        {
            None | Some("avg") => NumberAggregate::Avg,
            Some("min") => NumberAggregate::Min,
            Some(_) => NumberAggregate::Max,
        },
    )
}
