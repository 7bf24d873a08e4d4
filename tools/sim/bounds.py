#!/usr/bin/env python3
"""What any rating system could reach in the ratings scenario (issue 22).

docs/sim/ratings/analysis.md quotes this script's output. It computes, for the
simulator's outcome model (docs/simulator.md#ratings: performance = true skill
+ N(0, beta^2) per player and game; a team performs the sum of its players'; a
free-for-all ranks every player), two lower bounds that hold for every
estimator, TrueSkill or better:

1. The rating error after n games. The Fisher information one result carries
   about one player's skill, in the most favourable case (the other players'
   skills known exactly, a perfectly balanced match), added n times to the
   prior's 1 / sd^2, bounds the estimate's standard deviation from below
   (Cramer-Rao / Bayesian information bound); its mean absolute error is
   sd * sqrt(2 / pi).
2. The true-skill spread of a match. The matcher groups players whose
   *ratings* lie within its window: with ratings known exactly the ten true
   skills span the known variant's spread. With estimates of error sd, each
   true skill is its rating plus an independent N(0, sd^2) (a calibrated
   posterior), so the match spans more. A Monte Carlo draws the ratings of a
   match uniformly over a width whose expected range is the known variant's
   spread, adds the errors and measures the range. The model is checked
   against the simulator's own measurement (TrueSkill's error and spread).

Standard library only; deterministic (seeded). Runs in a few seconds:

    python3 tools/sim/bounds.py
"""

import math
import random
from math import comb

BETA = 150.0  # --noise: performance noise per player and game (sd)
PRIOR_SD = 300.0  # --sd: the population's spread, everyone starts at its mean
START_MAE = 231.9  # the report's MAE at 0 games (everyone at 1500)
GAMES = 30  # the "after 30 games per player on average"
SPREAD_LIMIT = 1.3  # (Q2)
MAE_LIMIT = 0.25  # (Q1)

# Measured by `scripts/sim.sh --ratings --speed 10` (docs/sim/ratings/report.md):
# the true-skill spread of the last matches (formed at 25-30 games) with
# ratings known exactly, and TrueSkill's MAE and spread there.
MEASURED = {
    "ffa10": {"players": 10, "known": 105.5, "mae": 29.8, "spread": 154.5},
    "teams-5v5": {"players": 10, "known": 183.5, "mae": 127.0, "spread": 531.4},
}


def phi(z):
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def Phi(z):
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def ffa_information(players=10, beta=BETA, steps=3000):
    """Fisher information about one player's skill from its place among
    `players` (the others' skills known and equal to its own)."""
    others = players - 1

    def place_probabilities(shift):
        # P(exactly k others perform below this player), the player's skill
        # `shift` above the others'.
        lo, hi = -8 * beta, 8 * beta
        h = (hi - lo) / steps
        probs = [0.0] * (others + 1)
        for i in range(steps + 1):
            x = lo + i * h
            weight = (0.5 if i in (0, steps) else 1.0) * h * phi((x - shift) / beta) / beta
            below = Phi(x / beta)
            for k in range(others + 1):
                probs[k] += weight * comb(others, k) * below**k * (1 - below) ** (others - k)
        return probs

    d = 1.0
    at, up, down = place_probabilities(0.0), place_probabilities(d), place_probabilities(-d)
    return sum(((u - w) / (2 * d)) ** 2 / p for p, u, w in zip(at, up, down))


def team_information(team_size=5, beta=BETA):
    """Fisher information about one player's skill from a two-team result
    (win or loss), teammates and opponents known, teams balanced."""
    noise = beta * math.sqrt(2 * team_size)
    return phi(0.0) ** 2 / (0.25 * noise**2)


def best_sd(information, games):
    return 1 / math.sqrt(games * information + 1 / PRIOR_SD**2)


def mae_of(sd):
    return sd * math.sqrt(2 / math.pi)


def spread(known, sd, players=10, draws=40000, seed=22):
    """Mean range of `players` true skills: ratings uniform over the width
    whose expected range is `known`, each true skill its rating + N(0, sd^2)."""
    rng = random.Random(seed)
    width = known * (players + 1) / (players - 1)
    total = 0.0
    for _ in range(draws):
        skills = [rng.uniform(0, width) + rng.gauss(0, sd) for _ in range(players)]
        total += max(skills) - min(skills)
    return total / draws


def games_for_sd(information, sd):
    return (1 / sd**2 - 1 / PRIOR_SD**2) / information


def sd_for_spread(known, target, players=10):
    lo, hi = 0.0, 400.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if spread(known, mid, players, draws=20000) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def main():
    worlds = {
        "ffa10": ffa_information(10),
        "teams-5v5": team_information(5),
    }
    print("| world | information per game | best sd after 30 games | best MAE (share of start) | games for (Q1) 25 % |")
    print("|---|---:|---:|---:|---:|")
    for name, info in worlds.items():
        sd = best_sd(info, GAMES)
        mae = mae_of(sd)
        target_sd = MAE_LIMIT * START_MAE / math.sqrt(2 / math.pi)
        print(
            f"| {name} | {info:.3e} | {sd:.1f} | {mae:.1f} ({100 * mae / START_MAE:.1f} %) "
            f"| {games_for_sd(info, target_sd):.0f} |"
        )
    print()
    print("| world | model check: spread at TrueSkill's measured error vs measured | "
          "best spread after 30 games | vs known | error sd for 1.3x | games for (Q2) 1.3x |")
    print("|---|---|---:|---:|---:|---:|")
    for name, info in worlds.items():
        m = MEASURED[name]
        check = spread(m["known"], m["mae"] / math.sqrt(2 / math.pi), m["players"])
        sd = best_sd(info, GAMES)
        best = spread(m["known"], sd, m["players"])
        need = sd_for_spread(m["known"], SPREAD_LIMIT * m["known"], m["players"])
        print(
            f"| {name} | {check:.1f} vs {m['spread']:.1f} ({check / m['spread']:.2f}) "
            f"| {best:.1f} | {best / m['known']:.2f}x | {need:.1f} | {games_for_sd(info, need):.0f} |"
        )


if __name__ == "__main__":
    main()
