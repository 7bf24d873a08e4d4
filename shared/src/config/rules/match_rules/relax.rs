//! A rule's `relax`: a linear move of its number toward a limit, or steps.

use super::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RelaxSection {
    per_second: Option<Value>,
    limit: Option<Value>,
    steps: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StepSection {
    after_seconds: Option<Value>,
    /// `Some(Null)` when written as `null` (the rule off), `None` when left out.
    #[serde(default, deserialize_with = "given")]
    value: Option<Value>,
}

fn given<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// How a relaxed number is bounded, per rule kind.
#[derive(Clone, Copy)]
pub(super) enum Bound {
    /// A comparison's reference: any finite number.
    Finite,
    /// A distance: >= 0.
    NonNegative,
    /// An intersection's count: a whole number 0..=the list's maxItems.
    Count(u32),
}

impl Bound {
    pub(super) fn check(self, field: &str, v: &Value) -> Result<f64, String> {
        match self {
            Bound::Finite => number(field, v),
            Bound::NonNegative => at_least(field, v, 0.0),
            Bound::Count(max) => integer(field, v, 0, max).map(f64::from),
        }
    }
}

/// A rule's `relax` (its number starts at `base`).
pub(super) fn relax(v: &Value, bound: Bound, base: f64, kind: &RuleKind) -> Result<Relax, String> {
    let section: RelaxSection =
        serde_json::from_value(v.clone()).map_err(|e| format!("relax: {e}"))?;
    match (&section.per_second, &section.limit, &section.steps) {
        (None, None, None) => Err("relax: give perSecond and limit, or steps".into()),
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
            Err("relax: either perSecond and limit, or steps, not both".into())
        }
        (Some(_), None, None) => Err("relax.limit: required with perSecond".into()),
        (None, Some(_), None) => Err("relax.perSecond: required with limit".into()),
        (Some(p), Some(l), None) => {
            let per_second = number("relax.perSecond", p)
                .ok()
                .filter(|r| *r > 0.0)
                .ok_or_else(|| format!("relax.perSecond: must be a number > 0, got {p}"))?;
            let limit = bound.check("relax.limit", l)?;
            if matches!(kind, RuleKind::Distance { .. }) && limit < base {
                return Err(format!(
                    "relax.limit: must be a number >= max ({base}), got {l}"
                ));
            }
            Ok(Relax::Linear { per_second, limit })
        }
        (None, None, Some(steps)) => {
            let steps = steps
                .as_array()
                .filter(|s| (1..=MAX_STEPS).contains(&s.len()))
                .ok_or_else(|| format!("relax.steps: must be a list of 1 to {MAX_STEPS} steps"))?;
            let mut out: Vec<(Duration, Option<f64>)> = Vec::new();
            for (j, step) in steps.iter().enumerate() {
                let field = format!("relax.steps[{j}]");
                if out.last().is_some_and(|(_, v)| v.is_none()) {
                    return Err(format!(
                        "{field}: after a null step (the rule is off from then on)"
                    ));
                }
                let step: StepSection =
                    serde_json::from_value(step.clone()).map_err(|e| format!("{field}: {e}"))?;
                let at = step
                    .after_seconds
                    .as_ref()
                    .ok_or_else(|| format!("{field}.afterSeconds: required"))?;
                let after = seconds(&format!("{field}.afterSeconds"), at)?;
                if let Some((before, _)) = out.last() {
                    if after <= *before {
                        return Err(format!(
                            "{field}.afterSeconds: must be greater than the step before's ({}), got {at}",
                            before.as_secs_f64()
                        ));
                    }
                }
                let value = match step.value {
                    None => {
                        return Err(format!(
                            "{field}.value: required: a number, or null to switch the rule off"
                        ))
                    }
                    Some(Value::Null) => None,
                    Some(v) => Some(bound.check(&format!("{field}.value"), &v)?),
                };
                out.push((after, value));
            }
            Ok(Relax::Steps(out))
        }
    }
}
