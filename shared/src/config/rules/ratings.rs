//! The rule set's rating sections, as written in the document: where
//! ratings come from (`ratings`), a rated world's widening window
//! (`rating`), its team balance (`balance`) and a backfill's own
//! (`backfill.balance`), each validated into the core's settings.

use super::*;

/// Where ratings come from, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RatingsSection {
    #[serde(default)]
    claim: Option<String>,
    #[serde(default)]
    default: Option<f64>,
    #[serde(default)]
    min: Option<f64>,
    #[serde(default)]
    max: Option<f64>,
    #[serde(default)]
    writer_scope: Option<String>,
}

/// A rated world's window, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct RatingSection {
    base_window: f64,
    widen_per_second: f64,
    max_window: f64,
    relax_after_seconds: f64,
    #[serde(default)]
    updates: Option<UpdatesSection>,
}

/// A rated team world's balance window, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct BalanceSection {
    base_window: f64,
    widen_per_second: f64,
    max_window: f64,
}

/// A backfill's own balance window, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct BackfillBalanceSection {
    base_window: f64,
    widen_per_second: f64,
    max_window: f64,
    #[serde(default)]
    relax_after_seconds: Option<f64>,
}

/// A widening window `<field>.baseWindow`, `.widenPerSecond`, `.maxWindow`.
fn widening_window(
    field: &str,
    base_window: f64,
    widen_per_second: f64,
    max_window: f64,
) -> Result<BalanceRules, String> {
    let base_window = finite_at_least(&format!("{field}.baseWindow"), base_window, 0.0)?;
    let widen_per_second =
        finite_at_least(&format!("{field}.widenPerSecond"), widen_per_second, 0.0)?;
    let max_window = finite_at_least(&format!("{field}.maxWindow"), max_window, base_window)?;
    Ok(BalanceRules {
        base_window,
        widen_per_second,
        max_window,
    })
}

/// A `relaxAfterSeconds` (`field`): a number of seconds > 0.
fn relax_after(field: &str, secs: f64) -> Result<Duration, String> {
    let secs = finite_at_least(field, secs, 0.0)?;
    if secs == 0.0 {
        return Err(format!("{field}: must be > 0"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl BalanceSection {
    pub(super) fn validate(&self) -> Result<BalanceRules, String> {
        widening_window(
            "balance",
            self.base_window,
            self.widen_per_second,
            self.max_window,
        )
    }
}

impl BackfillBalanceSection {
    pub(super) fn validate(&self) -> Result<BackfillBalance, String> {
        Ok(BackfillBalance {
            window: widening_window(
                "backfill.balance",
                self.base_window,
                self.widen_per_second,
                self.max_window,
            )?,
            relax_after: self
                .relax_after_seconds
                .map(|secs| relax_after("backfill.balance.relaxAfterSeconds", secs))
                .transpose()?,
        })
    }
}

impl RatingSection {
    pub(super) fn validate(&self, ratings: &RatingSettings) -> Result<RatingRules, String> {
        let BalanceRules {
            base_window,
            widen_per_second,
            max_window,
        } = widening_window(
            "rating",
            self.base_window,
            self.widen_per_second,
            self.max_window,
        )?;
        Ok(RatingRules {
            base_window,
            widen_per_second,
            max_window,
            relax_after: relax_after("rating.relaxAfterSeconds", self.relax_after_seconds)?,
            retry: ANCHOR_RETRY,
            anchors_per_call: ANCHORS_PER_CALL,
            balance: None,
            backfill_balance: None,
            updates: match &self.updates {
                None => Some(default_updates(ratings)),
                Some(section) => section.validate(ratings)?,
            },
        })
    }
}

impl RatingsSection {
    pub(super) fn validate(self) -> Result<RatingSettings, String> {
        let defaults = RatingSettings::default();
        let min = self.min.unwrap_or(defaults.min);
        let max = self.max.unwrap_or(defaults.max);
        if !min.is_finite() || !max.is_finite() || min > max {
            return Err(format!(
                "ratings.min/max: must be finite with min <= max, got {min} and {max}"
            ));
        }
        if let Some(d) = self.default {
            if !(min..=max).contains(&d) {
                return Err(format!("ratings.default: {d} is outside [{min}, {max}]"));
            }
        }
        if let Some(claim) = &self.claim {
            if claim.is_empty() || claim == "sub" {
                return Err(format!(
                    "ratings.claim: must name a claim other than sub, got {claim:?}"
                ));
            }
        }
        if self.writer_scope.as_deref().is_some_and(str::is_empty) {
            return Err("ratings.writerScope: must not be empty".into());
        }
        Ok(RatingSettings {
            claim: self.claim,
            default: self.default,
            min,
            max,
            writer_scope: self.writer_scope,
        })
    }
}
