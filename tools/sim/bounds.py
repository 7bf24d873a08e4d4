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
   prior's 1 / sd^2, bounds the estimate's root mean square error from below:
   RMSE >= sd_n = 1 / sqrt(n I + 1 / PRIOR_SD^2) (van Trees, the Bayesian
   Cramer-Rao bound).
   Its mean absolute error: the report's criterion (Q1) is on the MAE, and
   "MAE = sd_n * sqrt(2 / pi)" (the *Gaussian* figure, kept for comparison)
   holds only if the error is Gaussian, which nothing guarantees (an
   estimator's error can be peakier, with MAE / RMSE anywhere in (0, 1]):
   it bounds the RMSE, not the MAE. The *rigorous* bound, for every
   estimator and every (adaptive) choice of opponents:

       MAE >= sqrt(pi / (2 e)) * sd_n        (sqrt(pi / (2 e)) = 0.7602)

   Proof. Let e = estimate - skill and X the results. (a) Given X the
   estimate is fixed, so h(e) >= h(e | X) = h(skill | X) (differential
   entropy; conditioning reduces it, a shift does not change it). (b) Among
   all errors with E|e| = m the Laplace law has the most entropy, ln(2 e m),
   so MAE >= exp(h(skill | X)) / (2 e). (c) For each x the posterior has
   entropy power exp(2 h) / (2 pi e) >= 1 / J_x, its Fisher information
   (Stam's inequality); averaging over X with Jensen (ln is concave) gives
   exp(2 h(skill | X)) / (2 pi e) >= 1 / E[J_X], and E[J_X] = 1 / PRIOR_SD^2
   + E[information of the results] <= 1 / sd_n^2 (the score of the
   posterior is the prior's plus the results', whose cross term has mean 0;
   each game adds at most I, whatever the design). Together:
   MAE >= sqrt(2 pi e) sd_n / (2 e). This is Efroimovich's (1980) entropy
   form of the van Trees bound, with the Laplace law in place of the
   Gaussian; it is 0.9527 x the Gaussian figure. Players with fewer or more
   games than the mean: the bound is convex in n, so the mean over players
   is at least the bound at the mean number of games (Jensen again).
   `--ideal` measures what an ideal single-player estimator reaches in 5v5
   (the others known exactly, each match balanced at the current estimate,
   the exact posterior on a grid, its median as the estimate: the best
   estimator for the MAE given those results): the bound must lie below it.
2. The true-skill spread of a match. The matcher groups players whose
   *ratings* lie within its window: with ratings known exactly the ten true
   skills span the known variant's spread. With estimates of error sd, each
   true skill is its rating plus an independent N(0, sd^2) (a calibrated
   posterior), so the match spans more. A Monte Carlo draws the ratings of a
   match uniformly over a width whose expected range is the known variant's
   spread, adds the errors and measures the range. The model is checked
   against the simulator's own measurement (TrueSkill's error and spread).

Standard library only; deterministic (seeded). Runs in about ten seconds;
`--ideal` adds the Monte Carlo of the ideal 5v5 estimator (about a minute):

    python3 tools/sim/bounds.py [--ideal]
"""

import math
import random
import sys
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


GAUSSIAN = math.sqrt(2 / math.pi)  # MAE / sd of a Gaussian error: not a bound
RIGOROUS = math.sqrt(math.pi / (2 * math.e))  # MAE / sd_n, a bound (docstring)


def mae_of(sd):
    """The Gaussian figure: the MAE if the error were N(0, sd^2)."""
    return sd * GAUSSIAN


def mae_bound(sd):
    """The rigorous lower bound on the MAE of any estimator whose RMSE
    information bound is `sd` (the docstring's proof)."""
    return sd * RIGOROUS


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
    """Games (not rounded) after which the information bound reaches `sd`."""
    return (1 / sd**2 - 1 / PRIOR_SD**2) / information


def games_for_mae(information, mae, per_sd):
    """The fewest whole games at which a MAE of `mae` is not excluded, for
    MAE = per_sd * sd_n."""
    return math.ceil(games_for_sd(information, mae / per_sd) - 1e-9)


def ideal_team_estimator(games, trials, team_size=5, beta=BETA, step=5.0, seed=39):
    """Monte Carlo of the ideal single-player estimator in a two-team game:
    the player's skill ~ N(0, PRIOR_SD^2), the nine others known exactly;
    each match is balanced at the current posterior mean (the opponents'
    sum minus the teammates' equals it, rounded to the grid); the result is
    a win with probability Phi((skill - that mean) / (beta sqrt(2 team)));
    the posterior is exact on a grid of `step`; the estimate after each game
    is the posterior median. Returns the MAE after 0..games games."""
    noise = beta * math.sqrt(2 * team_size)
    half = int(6 * PRIOR_SD / step)
    xs = [(i - half) * step for i in range(2 * half + 1)]
    prior = [math.exp(-x * x / (2 * PRIOR_SD**2)) for x in xs]
    total = sum(prior)
    prior = [p / total for p in prior]
    size = len(xs)
    win = {d: Phi(d * step / noise) for d in range(-2 * size, 2 * size + 1)}
    rng = random.Random(seed)
    errors = [0.0] * (games + 1)
    for _ in range(trials):
        skill = rng.gauss(0, PRIOR_SD)
        post = prior
        for n in range(games + 1):
            acc, median = 0.0, xs[-1]
            for x, p in zip(xs, post):
                if acc + p >= 0.5:
                    median = x - step / 2 + step * (0.5 - acc) / p  # within the cell
                    break
                acc += p
            errors[n] += abs(median - skill)
            if n == games:
                break
            at = round(sum(x * p for x, p in zip(xs, post)) / step)
            won = rng.random() < Phi((skill - at * step) / noise)
            if won:
                post = [p * win[i - half - at] for i, p in enumerate(post)]
            else:
                post = [p * (1 - win[i - half - at]) for i, p in enumerate(post)]
            total = sum(post)
            post = [p / total for p in post]
    return [e / trials for e in errors]


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
    target = MAE_LIMIT * START_MAE
    print("MAE after 30 games: the Gaussian figure (sd_n * sqrt(2/pi), not a bound) and the "
          f"rigorous bound (sd_n * sqrt(pi/(2e))); (Q1) target {target:.1f} = 25 % of {START_MAE}")
    print()
    print("| world | information per game | best RMSE sd_n after 30 games "
          "| MAE, Gaussian figure (share of start) | MAE, rigorous bound (share of start) "
          "| games for (Q1) 25 %: Gaussian | rigorous |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, info in worlds.items():
        sd = best_sd(info, GAMES)
        gauss, bound = mae_of(sd), mae_bound(sd)
        print(
            f"| {name} | {info:.3e} | {sd:.1f} "
            f"| {gauss:.1f} ({100 * gauss / START_MAE:.1f} %) "
            f"| {bound:.1f} ({100 * bound / START_MAE:.1f} %) "
            f"| {games_for_mae(info, target, GAUSSIAN)} "
            f"({games_for_sd(info, target / GAUSSIAN):.2f}) "
            f"| {games_for_mae(info, target, RIGOROUS)} "
            f"({games_for_sd(info, target / RIGOROUS):.2f}) |"
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
    if "--ideal" in sys.argv[1:]:
        trials = IDEAL_TRIALS
        info = worlds["teams-5v5"]
        curve = ideal_team_estimator(IDEAL_GAMES, trials)
        print()
        print(f"Ideal single-player estimator, teams-5v5 ({trials} players, seeded; "
              "a MAE's standard error is about 0.35 % of the start; at 0 games the "
              "model's prior, N(0, 300^2), whose MAE is 239.4, not the drawn population's 231.9):")
        print()
        print("| games | ideal estimator MAE (share of start) | rigorous bound | Gaussian figure |")
        print("|---:|---:|---:|---:|")
        for n in (0, 10, 20, 30, 40, 50, 55, 57, 60, 63, 70):
            sd = best_sd(info, n)
            print(f"| {n} | {curve[n]:.1f} ({100 * curve[n] / START_MAE:.1f} %) "
                  f"| {mae_bound(sd):.1f} ({100 * mae_bound(sd) / START_MAE:.1f} %) "
                  f"| {mae_of(sd):.1f} ({100 * mae_of(sd) / START_MAE:.1f} %) |")
        first = next((n for n, e in enumerate(curve) if e <= target), None)
        print()
        print(f"The ideal estimator first reaches {target:.1f} (25 %) at {first} games.")


IDEAL_GAMES = 70
IDEAL_TRIALS = 4000


if __name__ == "__main__":
    main()
