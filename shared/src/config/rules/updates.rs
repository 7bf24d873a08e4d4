//! How results move ratings (`updates` of a rated world), as written in the
//! rule set.

use super::*;

/// How results move ratings, as written in the document.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct UpdatesSection {
    system: UpdateSystem,
    #[serde(default)]
    uncertainty: Option<f64>,
    #[serde(default)]
    beta: Option<f64>,
    #[serde(default)]
    k: Option<f64>,
    #[serde(default)]
    tau: Option<f64>,
    #[serde(default)]
    conservative_k: Option<f64>,
    #[serde(default)]
    draw_probability: Option<f64>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum UpdateSystem {
    WengLin,
    Elo,
    Glicko2,
    #[serde(rename = "trueskill")]
    TrueSkill,
    None,
}

/// Weng-Lin's and Glicko-2's starting uncertainty, on Glicko's scale.
pub const DEFAULT_UNCERTAINTY: f64 = 350.0;
pub const DEFAULT_ELO_K: f64 = 32.0;
pub const DEFAULT_GLICKO2_TAU: f64 = 0.5;
/// TrueSkill's draw probability unless told (Microsoft's and the crate's).
pub const DEFAULT_DRAW_PROBABILITY: f64 = 0.1;

impl UpdatesSection {
    pub(super) fn validate(
        &self,
        ratings: &RatingSettings,
    ) -> Result<Option<RatingUpdates>, String> {
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(format!(
                    "rating.updates.{field}: must be a number > 0, got {v}"
                ))
            }
        };
        let only = |field: &str, set: bool, systems: &str| {
            if set {
                Err(format!("rating.updates.{field}: only for {systems}"))
            } else {
                Ok(())
            }
        };
        let uncertainty = positive(
            "uncertainty",
            self.uncertainty.unwrap_or(DEFAULT_UNCERTAINTY),
        )?;
        if !matches!(self.system, UpdateSystem::TrueSkill | UpdateSystem::None) {
            only(
                "drawProbability",
                self.draw_probability.is_some(),
                "trueskill",
            )?;
        }
        let system = match self.system {
            UpdateSystem::None => {
                let any = self.uncertainty.is_some()
                    || self.beta.is_some()
                    || self.k.is_some()
                    || self.tau.is_some()
                    || self.conservative_k.is_some()
                    || self.draw_probability.is_some();
                only("*", any, "a system other than none")?;
                return Ok(None);
            }
            UpdateSystem::TrueSkill => {
                only("k", self.k.is_some(), "elo")?;
                only("tau", self.tau.is_some(), "glicko2")?;
                let draw_probability = self.draw_probability.unwrap_or(DEFAULT_DRAW_PROBABILITY);
                if !(draw_probability > 0.0 && draw_probability < 1.0) {
                    return Err(format!(
                        "rating.updates.drawProbability: must be between 0 and 1 (exclusive), got {draw_probability}"
                    ));
                }
                RatingSystem::TrueSkill {
                    beta: positive("beta", self.beta.unwrap_or(uncertainty / 2.0))?,
                    draw_probability,
                }
            }
            UpdateSystem::WengLin => {
                only("k", self.k.is_some(), "elo")?;
                only("tau", self.tau.is_some(), "glicko2")?;
                RatingSystem::WengLin {
                    beta: positive("beta", self.beta.unwrap_or(uncertainty / 2.0))?,
                }
            }
            UpdateSystem::Elo => {
                only("beta", self.beta.is_some(), "weng-lin and trueskill")?;
                only("tau", self.tau.is_some(), "glicko2")?;
                only(
                    "uncertainty",
                    self.uncertainty.is_some(),
                    "weng-lin, glicko2 and trueskill",
                )?;
                only(
                    "conservativeK",
                    self.conservative_k.is_some(),
                    "weng-lin, glicko2 and trueskill",
                )?;
                RatingSystem::Elo {
                    k: positive("k", self.k.unwrap_or(DEFAULT_ELO_K))?,
                }
            }
            UpdateSystem::Glicko2 => {
                only("beta", self.beta.is_some(), "weng-lin and trueskill")?;
                only("k", self.k.is_some(), "elo")?;
                RatingSystem::Glicko2 {
                    tau: positive("tau", self.tau.unwrap_or(DEFAULT_GLICKO2_TAU))?,
                }
            }
        };
        let conservative_k = self.conservative_k.unwrap_or(0.0);
        if !(0.0..=10.0).contains(&conservative_k) {
            return Err(format!(
                "rating.updates.conservativeK: must be 0..=10, got {conservative_k}"
            ));
        }
        Ok(Some(RatingUpdates {
            system,
            initial_uncertainty: uncertainty,
            conservative_k,
            min: ratings.min,
            max: ratings.max,
        }))
    }
}

/// The updates of a rated world that names none: Weng-Lin with the
/// default uncertainty.
pub(super) fn default_updates(ratings: &RatingSettings) -> RatingUpdates {
    RatingUpdates {
        system: RatingSystem::WengLin {
            beta: DEFAULT_UNCERTAINTY / 2.0,
        },
        initial_uncertainty: DEFAULT_UNCERTAINTY,
        conservative_k: 0.0,
        min: ratings.min,
        max: ratings.max,
    }
}
