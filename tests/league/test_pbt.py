"""PBT decisions: who copies whom, only on significant gaps, and mutations within bounds."""

from __future__ import annotations

import numpy as np
import pytest

from sf_league.population.pbt import (
    BOUNDS,
    SHAPING_RANGE,
    PBTConfig,
    explore,
    mutate_shaping,
    ranked_scores,
    select_exploits,
)

STRONG, WEAK = [1.0] * 30, [0.0] * 30


def test_the_worst_copy_the_best_when_the_gap_is_significant():
    cfg = PBTConfig(fraction=0.25, min_matches=20)
    scores = [STRONG, [0.5] * 30, [0.5] * 30, WEAK]
    (exploit,) = select_exploits(scores, cfg, np.random.default_rng(0))
    assert (exploit.target, exploit.source) == (3, 0)
    assert (exploit.target_score, exploit.source_score) == (0.0, 1.0)


def test_no_copy_on_noise():
    """Two members whose win rates differ by chance (14 of 30 against 16 of 30) stay."""
    rng = np.random.default_rng(0)
    a = [1.0] * 16 + [0.0] * 14
    b = [1.0] * 14 + [0.0] * 16
    assert select_exploits([a, b], PBTConfig(fraction=0.5), rng) == []


def test_draws_count_the_draw_score():
    """A member that draws every match ranks above one that wins a third and loses the rest
    when a draw counts half, and below it when draws count nothing: the copy goes the other
    way."""
    drawer, fighter = [0.5] * 60, ([1.0] * 20 + [0.0] * 40)
    half = PBTConfig(fraction=0.5, window=60, draw_score=0.5)
    (exploit,) = select_exploits([drawer, fighter], half, np.random.default_rng(0))
    assert (exploit.target, exploit.source) == (1, 0)
    wins_alone = PBTConfig(fraction=0.5, window=60, draw_score=0.0)
    (exploit,) = select_exploits([drawer, fighter], wins_alone, np.random.default_rng(0))
    assert (exploit.target, exploit.source) == (0, 1)
    assert (exploit.target_score, exploit.source_score) == (0.0, pytest.approx(1 / 3))


def test_ranked_scores_keep_the_window_and_count_draws_as_told():
    cfg = PBTConfig(window=3, min_matches=1, draw_score=0.0)
    assert ranked_scores([0.0, 1.0, 0.5, 0.0], cfg) == [1.0, 0.0, 0.0]
    assert ranked_scores([0.5, 1.0], PBTConfig(window=3, min_matches=1)) == [0.5, 1.0]


def test_members_without_enough_matches_are_not_ranked():
    cfg = PBTConfig(fraction=0.5, min_matches=20)
    assert select_exploits([STRONG, WEAK[:5]], cfg, np.random.default_rng(0)) == []


def test_only_the_window_counts():
    """A member that lost long ago but wins its last matches is not among the worst."""
    cfg = PBTConfig(fraction=0.5, window=30, min_matches=20)
    recovered = WEAK * 3 + STRONG
    (exploit,) = select_exploits([recovered, WEAK], cfg, np.random.default_rng(0))
    assert (exploit.target, exploit.source) == (1, 0)


def test_the_control_member_is_never_replaced():
    cfg = PBTConfig(fraction=0.5, control=True)
    assert select_exploits([WEAK, STRONG], cfg, np.random.default_rng(0)) == []


@pytest.mark.parametrize("seed", range(5))
def test_mutations_stay_within_bounds(seed):
    rng = np.random.default_rng(seed)
    cfg = PBTConfig(probability=1.0, factor=3.0, mutate=tuple(BOUNDS))
    values = {name: (low + high) / 2 for name, (low, high) in BOUNDS.items()}
    for _ in range(50):
        values |= explore(values, cfg, rng)
        for name, (low, high) in BOUNDS.items():
            assert low <= values[name] <= high, name
    assert values["gamma"] < 1.0


def test_explore_changes_only_the_chosen_hyperparameters():
    cfg = PBTConfig(probability=1.0, mutate=("learning_rate",))
    values = {"learning_rate": 1e-3, "entropy_coef": 0.01}
    changed = explore(values, cfg, np.random.default_rng(0))
    assert set(changed) == {"learning_rate"}
    assert changed["learning_rate"] == pytest.approx(1e-3 * 1.2) or changed[
        "learning_rate"
    ] == pytest.approx(1e-3 / 1.2)


def test_explore_with_probability_zero_changes_nothing():
    cfg = PBTConfig(probability=0.0)
    values = {name: (low + high) / 2 for name, (low, high) in BOUNDS.items()}
    assert explore(values, cfg, np.random.default_rng(0)) == {}


def test_shaping_weights_keep_their_sign_and_range():
    rng = np.random.default_rng(1)
    cfg = PBTConfig(probability=1.0, factor=2.0)
    start = {"deaths": -0.5, "damage_dealt": 0.01, "hits": 0.0}
    weights = dict(start)
    for _ in range(100):
        weights |= mutate_shaping(weights, start, cfg, rng)
    assert weights["hits"] == 0.0  # a weight that starts at 0 stays 0
    assert -0.5 * SHAPING_RANGE <= weights["deaths"] <= -0.5 / SHAPING_RANGE
    assert 0.01 / SHAPING_RANGE <= weights["damage_dealt"] <= 0.01 * SHAPING_RANGE


def test_invalid_settings_are_named():
    problems = PBTConfig(fraction=0.9, factor=1.0, draw_score=1.0, mutate=("momentum",)).problems()
    assert any("--pbt-fraction" in p for p in problems)
    assert any("--mutation-factor" in p for p in problems)
    assert any("momentum" in p for p in problems)
    assert any("--pbt-draw-score" in p for p in problems)
