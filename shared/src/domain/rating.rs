//! Rating updates from match results, through the `skillratings` crate.
//!
//! A rated world's ratings-store entry is a number (a manual write, `PUT
//! /v1/ratings/{playerId}`) or, once a result has updated it,
//! `"<value> <mean> <uncertainty> <games>[ <volatility>]"`: the value
//! matching uses first (the scripts read only that), then what the rating
//! system keeps. The value is `mean − k·uncertainty` (k = the world's
//! `conservativeK`, 0 by default: matching uses the mean), within the
//! configured rating range.

use serde::{Deserialize, Serialize};
use skillratings::elo::{elo_rating_period, EloConfig, EloRating};
use skillratings::glicko2::{glicko2_rating_period, Glicko2Config, Glicko2Rating};
use skillratings::trueskill::{trueskill_multi_team, TrueSkillConfig, TrueSkillRating};
use skillratings::weng_lin::{weng_lin_multi_team, WengLinConfig, WengLinRating};
use skillratings::{MultiTeamOutcome, Outcomes};

/// The rating system a world's results update ratings with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RatingSystem {
    /// Weng-Lin (OpenSkill, Bradley-Terry full pairing), any number of
    /// teams: `beta` is the skill-class width in rating points.
    WengLin { beta: f64 },
    /// Elo: every player against each other side's average, `k` the most a
    /// game moves a rating (shared among the opposing sides).
    Elo { k: f64 },
    /// Glicko-2: every player against each other side as one opponent (its
    /// average rating, root-mean-square deviation), `tau` the volatility
    /// constraint.
    Glicko2 { tau: f64 },
    /// TrueSkill (Herbrich, Minka, Graepel 2006; the places as one factor
    /// graph), any number of teams: `beta` a player's performance noise in
    /// rating points, `draw_probability` how often two sides draw.
    TrueSkill { beta: f64, draw_probability: f64 },
}

/// How a rated world's results move ratings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatingUpdates {
    pub system: RatingSystem,
    /// The uncertainty of a player without one yet (Weng-Lin's sigma,
    /// Glicko-2's deviation; Elo keeps none).
    pub initial_uncertainty: f64,
    /// Matching uses `mean − conservative_k · uncertainty`.
    pub conservative_k: f64,
    /// The rating range (`ratings.min`/`max`) the value is kept within.
    pub min: f64,
    pub max: f64,
}

/// Every side's players' ratings and the side's place.
type Sides = [(Vec<StoredRating>, u32)];

/// What a rating system makes of one player: mean, uncertainty, volatility.
type Updated = (f64, Option<f64>, Option<f64>);

/// Glicko-2's starting volatility.
const INITIAL_VOLATILITY: f64 = 0.06;

/// A ratings-store entry, as this module reads and writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoredRating {
    /// What matching uses.
    pub value: f64,
    pub mean: f64,
    /// `None` until a result set it (a manual or claimed rating).
    pub uncertainty: Option<f64>,
    pub games: u64,
    pub volatility: Option<f64>,
}

impl StoredRating {
    /// A rating known only by its value (a manual write, a token claim,
    /// the default, the value a ticket joined with).
    pub fn plain(value: f64) -> Self {
        Self {
            value,
            mean: value,
            uncertainty: None,
            games: 0,
            volatility: None,
        }
    }

    /// Parses a store entry; `None` when it is neither form.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.split(' ');
        let value = finite(parts.next()?)?;
        let Some(mean) = parts.next() else {
            return Some(Self::plain(value));
        };
        let mean = finite(mean)?;
        let uncertainty = finite(parts.next()?)?;
        let games = parts.next()?.parse().ok()?;
        let volatility = match parts.next() {
            None => None,
            Some(v) => Some(finite(v)?),
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            value,
            mean,
            uncertainty: Some(uncertainty),
            games,
            volatility,
        })
    }

    pub fn encode(&self) -> String {
        let mut s = format!(
            "{} {} {} {}",
            self.value,
            self.mean,
            self.uncertainty.unwrap_or(0.0),
            self.games
        );
        if let Some(v) = self.volatility {
            s.push_str(&format!(" {v}"));
        }
        s
    }
}

fn finite(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// What a result did to one player's rating (in the match's lifecycle and
/// the player's `MATCH_RESULT`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RatingChange {
    /// The value matching used before, and uses now.
    pub before: f64,
    pub after: f64,
    pub mean: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<f64>,
    /// Rated games played in this world, this one included.
    pub games: u64,
}

impl RatingUpdates {
    /// The new ratings of every side's players (same shape as `sides`):
    /// `sides` holds each side's players' ratings and its place (1 =
    /// first; equal places draw).
    pub fn apply(&self, sides: &Sides) -> Vec<Vec<StoredRating>> {
        let new_means: Vec<Vec<Updated>> = match self.system {
            RatingSystem::WengLin { beta } => self.weng_lin(sides, beta),
            RatingSystem::Elo { k } => elo(sides, k),
            RatingSystem::Glicko2 { tau } => self.glicko2(sides, tau),
            RatingSystem::TrueSkill {
                beta,
                draw_probability,
            } => self.trueskill(sides, beta, draw_probability),
        };
        sides
            .iter()
            .zip(new_means)
            .map(|((players, _), news)| {
                players
                    .iter()
                    .zip(news)
                    .map(|(old, (mean, uncertainty, volatility))| {
                        let value = mean - self.conservative_k * uncertainty.unwrap_or(0.0);
                        StoredRating {
                            value: round(value.clamp(self.min, self.max)),
                            mean: round(mean),
                            uncertainty: uncertainty.map(round),
                            games: old.games + 1,
                            volatility,
                        }
                    })
                    .collect()
            })
            .collect()
    }

    fn uncertainty_of(&self, r: &StoredRating) -> f64 {
        r.uncertainty
            .filter(|u| *u > 0.0)
            .unwrap_or(self.initial_uncertainty)
    }

    /// Runs a multi-team system whose rating is a mean and an uncertainty
    /// (Weng-Lin, TrueSkill): `make` builds its rating, `read` takes one
    /// apart, `update` rates the sides in their places.
    fn mean_and_uncertainty<R>(
        &self,
        sides: &Sides,
        make: impl Fn(f64, f64) -> R,
        read: impl Fn(&R) -> (f64, f64),
        update: impl FnOnce(&[(&[R], MultiTeamOutcome)]) -> Vec<Vec<R>>,
    ) -> Vec<Vec<Updated>> {
        let teams: Vec<Vec<R>> = sides
            .iter()
            .map(|(players, _)| {
                players
                    .iter()
                    .map(|r| make(r.mean, self.uncertainty_of(r)))
                    .collect()
            })
            .collect();
        let ranked: Vec<(&[R], MultiTeamOutcome)> = teams
            .iter()
            .zip(sides)
            .map(|(team, (_, rank))| (&team[..], MultiTeamOutcome::new(*rank as usize)))
            .collect();
        update(&ranked)
            .iter()
            .map(|team| {
                team.iter()
                    .map(|r| {
                        let (mean, uncertainty) = read(r);
                        (mean, Some(uncertainty), None)
                    })
                    .collect()
            })
            .collect()
    }

    fn weng_lin(&self, sides: &Sides, beta: f64) -> Vec<Vec<Updated>> {
        let config = WengLinConfig {
            beta,
            ..WengLinConfig::new()
        };
        self.mean_and_uncertainty(
            sides,
            |rating, uncertainty| WengLinRating {
                rating,
                uncertainty,
            },
            |r| (r.rating, r.uncertainty),
            |ranked| weng_lin_multi_team(ranked, &config),
        )
    }

    fn trueskill(&self, sides: &Sides, beta: f64, draw_probability: f64) -> Vec<Vec<Updated>> {
        let config = TrueSkillConfig {
            draw_probability,
            beta,
            // TrueSkill's own proportion: its default dynamics (25/300) is a
            // hundredth of its default uncertainty (25/3).
            dynamics_factor: self.initial_uncertainty / 100.0,
        };
        self.mean_and_uncertainty(
            sides,
            |rating, uncertainty| TrueSkillRating {
                rating,
                uncertainty,
            },
            |r| (r.rating, r.uncertainty),
            // Without weights the crate cannot fail; should it, nobody moves.
            |ranked| {
                trueskill_multi_team(ranked, &config, None)
                    .unwrap_or_else(|_| ranked.iter().map(|(team, _)| team.to_vec()).collect())
            },
        )
    }

    fn glicko2(&self, sides: &Sides, tau: f64) -> Vec<Vec<Updated>> {
        let rated: Vec<Vec<Glicko2Rating>> = sides
            .iter()
            .map(|(players, _)| {
                players
                    .iter()
                    .map(|r| Glicko2Rating {
                        rating: r.mean,
                        deviation: self.uncertainty_of(r),
                        volatility: r.volatility.unwrap_or(INITIAL_VOLATILITY),
                    })
                    .collect()
            })
            .collect();
        // Each side as one opponent: its average rating and volatility,
        // the root mean square of its deviations.
        let composite: Vec<Glicko2Rating> = rated
            .iter()
            .map(|team| {
                let n = team.len().max(1) as f64;
                Glicko2Rating {
                    rating: team.iter().map(|r| r.rating).sum::<f64>() / n,
                    deviation: (team.iter().map(|r| r.deviation.powi(2)).sum::<f64>() / n).sqrt(),
                    volatility: team.iter().map(|r| r.volatility).sum::<f64>() / n,
                }
            })
            .collect();
        let config = Glicko2Config {
            tau,
            ..Glicko2Config::new()
        };
        rated
            .iter()
            .enumerate()
            .map(|(i, team)| {
                let games: Vec<(Glicko2Rating, Outcomes)> = composite
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(j, opponent)| (*opponent, outcome(sides[i].1, sides[j].1)))
                    .collect();
                team.iter()
                    .map(|player| {
                        let r = glicko2_rating_period(player, &games, &config);
                        (r.rating, Some(r.deviation), Some(r.volatility))
                    })
                    .collect()
            })
            .collect()
    }
}

fn elo(sides: &Sides, k: f64) -> Vec<Vec<Updated>> {
    let averages: Vec<EloRating> = sides
        .iter()
        .map(|(players, _)| EloRating {
            rating: players.iter().map(|r| r.mean).sum::<f64>() / players.len().max(1) as f64,
        })
        .collect();
    // With several opposing sides, k is shared among them: a game moves a
    // rating at most k, whatever the number of sides.
    let config = EloConfig {
        k: k / (sides.len().saturating_sub(1).max(1)) as f64,
    };
    sides
        .iter()
        .enumerate()
        .map(|(i, (players, rank))| {
            let games: Vec<(EloRating, Outcomes)> = averages
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(j, opponent)| (*opponent, outcome(*rank, sides[j].1)))
                .collect();
            players
                .iter()
                .map(|r| {
                    let new = elo_rating_period(&EloRating { rating: r.mean }, &games, &config);
                    (new.rating, None, None)
                })
                .collect()
        })
        .collect()
}

/// The outcome for a side placed `mine` against one placed `theirs`.
fn outcome(mine: u32, theirs: u32) -> Outcomes {
    match mine.cmp(&theirs) {
        std::cmp::Ordering::Less => Outcomes::WIN,
        std::cmp::Ordering::Equal => Outcomes::DRAW,
        std::cmp::Ordering::Greater => Outcomes::LOSS,
    }
}

/// Ratings are kept to 1/1000 of a point: the store's text stays short and
/// what a player is shown is what is stored.
fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn updates(system: RatingSystem) -> RatingUpdates {
        RatingUpdates {
            system,
            initial_uncertainty: 350.0,
            conservative_k: 0.0,
            min: 0.0,
            max: 5000.0,
        }
    }

    #[test]
    fn store_entries_round_trip_and_plain_numbers_still_read() {
        let plain = StoredRating::parse("1500").unwrap();
        assert_eq!(plain, StoredRating::plain(1500.0));
        let full = StoredRating::parse("1480.5 1490 120.25 7 0.06").unwrap();
        assert_eq!(full.games, 7);
        assert_eq!(StoredRating::parse(&full.encode()).unwrap(), full);
        for bad in [
            "",
            "x",
            "1 2",
            "1 2 3",
            "1 2 3 x",
            "1 2 3 4 5 6",
            "NaN",
            "inf 1 1 1",
        ] {
            assert_eq!(StoredRating::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn winners_gain_losers_lose_in_every_system() {
        for system in [
            RatingSystem::WengLin { beta: 175.0 },
            RatingSystem::Elo { k: 32.0 },
            RatingSystem::Glicko2 { tau: 0.5 },
            RatingSystem::TrueSkill {
                beta: 175.0,
                draw_probability: 0.1,
            },
        ] {
            let u = updates(system);
            let sides = vec![
                (
                    vec![StoredRating::plain(1500.0), StoredRating::plain(1500.0)],
                    2,
                ),
                (
                    vec![StoredRating::plain(1500.0), StoredRating::plain(1500.0)],
                    1,
                ),
            ];
            let new = u.apply(&sides);
            assert!(
                new[0].iter().all(|r| r.value < 1500.0),
                "{system:?} {new:?}"
            );
            assert!(
                new[1].iter().all(|r| r.value > 1500.0),
                "{system:?} {new:?}"
            );
            assert!(new.iter().flatten().all(|r| r.games == 1));
            let draw = u.apply(&[
                (vec![StoredRating::plain(1500.0)], 1),
                (vec![StoredRating::plain(1500.0)], 1),
            ]);
            assert!(
                (draw[0][0].value - 1500.0).abs() < 1e-6,
                "{system:?} {draw:?}"
            );
        }
    }

    #[test]
    fn uncertainty_shrinks_and_the_conservative_value_trails_the_mean() {
        let mut u = updates(RatingSystem::WengLin { beta: 175.0 });
        u.conservative_k = 1.0;
        let new = u.apply(&[
            (vec![StoredRating::plain(1500.0)], 1),
            (vec![StoredRating::plain(1500.0)], 2),
        ]);
        let winner = new[0][0];
        assert!(winner.uncertainty.unwrap() < 350.0);
        assert!((winner.value - (winner.mean - winner.uncertainty.unwrap())).abs() < 0.01);
    }

    /// TrueSkill orders a ranked free-for-all: every place above another
    /// ends higher than it did, the first gains most, the last loses most,
    /// and every player is surer than before.
    #[test]
    fn trueskill_ranks_a_free_for_all_by_its_places() {
        let u = updates(RatingSystem::TrueSkill {
            beta: 150.0,
            draw_probability: 0.01,
        });
        let sides: Vec<(Vec<StoredRating>, u32)> = (1..=4)
            .map(|place| (vec![StoredRating::plain(1500.0)], place))
            .collect();
        let new = u.apply(&sides);
        let means: Vec<f64> = new.iter().map(|side| side[0].mean).collect();
        assert!(means.windows(2).all(|w| w[0] > w[1]), "{means:?}");
        assert!(means[0] > 1500.0 && means[3] < 1500.0, "{means:?}");
        assert!(
            new.iter()
                .flatten()
                .all(|r| r.uncertainty.is_some_and(|s| s < 350.0)),
            "{new:?}"
        );
        // Matching the skillratings figures for two players (docs/http-api.md).
        let two = updates(RatingSystem::TrueSkill {
            beta: 175.0,
            draw_probability: 0.1,
        })
        .apply(&[
            (vec![StoredRating::plain(1500.0)], 1),
            (vec![StoredRating::plain(1500.0)], 2),
        ]);
        assert_eq!(
            (two[0][0].mean, two[1][0].mean, two[0][0].uncertainty),
            (1684.625, 1315.375, Some(301.202))
        );
    }

    #[test]
    fn values_stay_within_the_range() {
        let mut u = updates(RatingSystem::Elo { k: 400.0 });
        u.max = 1510.0;
        let new = u.apply(&[
            (vec![StoredRating::plain(1505.0)], 1),
            (vec![StoredRating::plain(1500.0)], 2),
        ]);
        assert_eq!(new[0][0].value, 1510.0);
        assert!(new[0][0].mean > 1510.0);
    }
}
