"""Rating maths against synthetic leagues whose true strengths are known."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sf_league.ratings.elo import (
    FitSettings,
    PairResults,
    elo_win_probability,
    ffa_pairwise,
    fit_ratings,
    likelihood_of_superiority,
)

TRUTH = np.array([-300.0, -100.0, 0.0, 150.0, 250.0])


def simulate(truth: np.ndarray, games: int, rng: np.random.Generator, draw: float = 0.0):
    """A round robin: each pair plays ``games`` games; a fraction ``draw`` of games is drawn."""
    g, i, j, s = [], [], [], []
    for a, b in itertools.combinations(range(len(truth)), 2):
        p = float(elo_win_probability(truth[a], truth[b]))
        for _ in range(games):
            u = rng.random()
            score = 0.5 if u < draw else float(rng.random() < p)
            g.append(len(g))
            i.append(a)
            j.append(b)
            s.append(score)
    return PairResults.from_lists(g, i, j, s)


def centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean()


def test_recovers_known_strengths_within_intervals() -> None:
    results = simulate(TRUTH, 150, np.random.default_rng(1))
    fit = fit_ratings(results, len(TRUTH), FitSettings(bootstrap=300, seed=1))
    truth = centred(TRUTH)
    assert abs(fit.elo.mean()) < 1e-6
    assert np.all(fit.lower <= truth) and np.all(truth <= fit.upper)
    assert np.all(np.abs(fit.elo - truth) < 60)
    assert list(np.argsort(fit.elo)) == list(range(len(TRUTH)))


def test_bootstrap_coverage_over_repeated_leagues() -> None:
    rng = np.random.default_rng(7)
    covered = total = 0
    for league in range(40):
        fit = fit_ratings(
            simulate(TRUTH, 30, rng), len(TRUTH), FitSettings(bootstrap=200, seed=league)
        )
        truth = centred(TRUTH)
        covered += int(np.sum((fit.lower <= truth) & (truth <= fit.upper)))
        total += len(TRUTH)
    # Nominal 95%; loose bounds for 200 intervals and percentile bootstrap.
    assert 0.85 <= covered / total <= 0.995


def test_matches_plain_gradient_ascent_reference() -> None:
    results = simulate(TRUTH[:3], 40, np.random.default_rng(3), draw=0.2)
    settings = FitSettings(bootstrap=0, prior_sd=500.0)
    fit = fit_ratings(results, 3, settings)
    # Reference: slow gradient ascent on the same log posterior, written out directly.
    theta = np.zeros(3)
    scale = 400 / np.log(10)
    for _ in range(20000):
        grad = -theta * (scale / 500.0) ** 2
        for a, b, s, w in zip(results.i, results.j, results.score, results.weight, strict=True):
            p = 1 / (1 + np.exp(theta[b] - theta[a]))
            grad[a] += w * (s - p)
            grad[b] -= w * (s - p)
        theta += 0.01 * grad
    np.testing.assert_allclose(fit.elo, centred(theta * scale), atol=0.1)


def test_anchoring_shifts_only() -> None:
    results = simulate(TRUTH, 20, np.random.default_rng(2))
    free = fit_ratings(results, 5, FitSettings(bootstrap=50))
    anchored = fit_ratings(results, 5, FitSettings(anchor=2, anchor_value=1500.0, bootstrap=50))
    assert anchored.elo[2] == pytest.approx(1500.0)
    np.testing.assert_allclose(anchored.elo - anchored.elo[2], free.elo - free.elo[2], atol=1e-6)
    # The anchor is fixed by definition: its interval and variance collapse to a point.
    assert anchored.lower[2] == pytest.approx(1500.0) and anchored.upper[2] == pytest.approx(1500)
    assert anchored.covariance[2, 2] == pytest.approx(0.0, abs=1e-9)
    mean_fit = fit_ratings(results, 5, FitSettings(anchor_value=1000.0, bootstrap=0))
    assert mean_fit.elo.mean() == pytest.approx(1000.0)


def test_draws_count_half() -> None:
    draws = PairResults.from_lists(range(10), [0] * 10, [1] * 10, [0.5] * 10)
    fit = fit_ratings(draws, 2, FitSettings(bootstrap=0))
    np.testing.assert_allclose(fit.elo, [0.0, 0.0], atol=1e-9)
    # One win and one loss is the same evidence as two draws.
    split = PairResults.from_lists([0, 1], [0, 0], [1, 1], [1.0, 0.0])
    two_draws = PairResults.from_lists([0, 1], [0, 0], [1, 1], [0.5, 0.5])
    np.testing.assert_allclose(
        fit_ratings(split, 2, FitSettings(bootstrap=0)).elo,
        fit_ratings(two_draws, 2, FitSettings(bootstrap=0)).elo,
    )
    # 3 wins and 1 draw in 4 games is a score of 87.5%: the fit's expected score matches it
    # up to the weak prior's pull.
    mixed = PairResults.from_lists(range(4), [0] * 4, [1] * 4, [1, 1, 1, 0.5])
    f = fit_ratings(mixed, 2, FitSettings(bootstrap=0, prior_sd=1e6))
    assert float(elo_win_probability(f.elo[0], f.elo[1])) == pytest.approx(0.875, abs=1e-6)


def test_player_who_won_everything_is_finite_and_on_top() -> None:
    results = PairResults.from_lists(range(10), [0] * 10, [1] * 10, [1.0] * 10)
    fit = fit_ratings(results, 2, FitSettings(bootstrap=100))
    assert np.all(np.isfinite(fit.elo)) and np.all(np.isfinite(fit.upper))
    gap = fit.elo[0] - fit.elo[1]
    assert 300 < gap < 2000  # the prior, not the data, bounds it
    assert likelihood_of_superiority(fit, 0, 1) > 0.9
    # Every resample is the same 10-0 sweep: the bootstrap cannot show the uncertainty there.
    assert fit.upper[0] - fit.lower[0] == pytest.approx(0.0)


def test_disconnected_players_and_unplayed_player() -> None:
    # {0, 1} and {2, 3} never met; player 4 never played.
    results = PairResults.from_lists(
        range(40), [0] * 20 + [2] * 20, [1] * 20 + [3] * 20, [1.0] * 15 + [0.0] * 5 + [0.5] * 20
    )
    fit = fit_ratings(results, 5, FitSettings(bootstrap=100))
    assert np.all(np.isfinite(fit.elo))
    assert fit.elo[0] > fit.elo[1]
    assert fit.elo[2] == pytest.approx(fit.elo[3], abs=1e-6)
    assert fit.elo[4] == pytest.approx(0.0, abs=1.0)
    assert likelihood_of_superiority(fit, 2, 3) == pytest.approx(0.5)


def test_likelihood_of_superiority_grows_with_evidence() -> None:
    rng = np.random.default_rng(5)
    few = fit_ratings(simulate(TRUTH[[2, 3]], 10, rng), 2, FitSettings(bootstrap=0))
    many = fit_ratings(simulate(TRUTH[[2, 3]], 400, rng), 2, FitSettings(bootstrap=0))
    assert likelihood_of_superiority(many, 1, 0) > likelihood_of_superiority(few, 1, 0)
    assert likelihood_of_superiority(many, 1, 0) > 0.95
    assert likelihood_of_superiority(many, 0, 1) == pytest.approx(
        1 - likelihood_of_superiority(many, 1, 0)
    )


def test_ffa_pairwise_decomposition() -> None:
    pairs = ffa_pairwise([3, 1, 3])
    assert pairs == [(0, 1, 1.0, 0.5), (0, 2, 0.5, 0.5), (1, 2, 0.0, 0.5)]
    with pytest.raises(ValueError, match="at least two"):
        ffa_pairwise([1])


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="itself"):
        PairResults.from_lists([0], [1], [1], [1.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        PairResults.from_lists([0], [0], [1], [2.0])
    with pytest.raises(ValueError, match="range"):
        fit_ratings(PairResults.from_lists([0], [0], [3], [1.0]), 2)
    with pytest.raises(ValueError, match="anchor"):
        fit_ratings(PairResults.from_lists([0], [0], [1], [1.0]), 2, FitSettings(anchor=5))
    with pytest.raises(ValueError, match="prior_sd"):
        FitSettings(prior_sd=0)
