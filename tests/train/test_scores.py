"""IQM and stratified bootstrap intervals against values computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from sf_train.evaluation import EvalResult
from sf_train.scores import iqm, stratified_bootstrap, task_scores


def test_iqm_drops_a_quarter_at_each_end() -> None:
    assert iqm(np.array([8, 1, 7, 2, 6, 3, 5, 4])) == pytest.approx(4.5)  # mean of 3, 4, 5, 6
    assert iqm(np.array([0.0, 0.0, 0.0, 100.0])) == 0.0  # the outlier is cut
    assert iqm(np.array([-300.0, 80.0, 82.0])) == pytest.approx(-46.0)  # n < 4 cuts nothing
    assert iqm(np.arange(10.0)) == pytest.approx(4.5)  # floor(10 / 4) = 2 cut: mean of 2..7


def test_iqm_along_an_axis() -> None:
    rows = np.array([[4, 3, 2, 1], [10, 0, 0, 10]])
    np.testing.assert_allclose(iqm(rows, axis=1), [2.5, 5.0])


def test_an_interval_collapses_when_each_stratum_is_constant() -> None:
    # Resampling within strata keeps two 1s and two 5s in every sample: IQM 3, always.
    scores, strata = np.array([1.0, 1.0, 5.0, 5.0]), np.array([0, 0, 1, 1])
    interval = stratified_bootstrap(scores, strata)
    assert (interval.estimate, interval.low, interval.high) == (3.0, 3.0, 3.0)
    # The same scores in one stratum resample freely, so the interval opens.
    wide = stratified_bootstrap(scores, np.zeros(4, dtype=int))
    assert wide.low < 3.0 < wide.high


def test_a_two_point_stratum_gives_the_hand_computed_interval() -> None:
    # Means of two draws from {0, 10}: 0 (p 1/4), 5 (p 1/2), 10 (p 1/4); the 2.5th and 97.5th
    # percentiles are the extremes.
    interval = stratified_bootstrap(np.array([0.0, 10.0]), np.array([3, 3]), "mean")
    assert (interval.estimate, interval.low, interval.high) == (5.0, 0.0, 10.0)


def test_a_task_s_scores_resample_all_its_episodes_together() -> None:
    # Two episodes: the mean's and the IQM's (n < 4 cuts nothing) resamples are 0, 5 or 10.
    assert task_scores(np.array([0.0, 10.0])) == {
        "return_mean": 5.0, "return_mean_ci": [0.0, 10.0],
        "return_iqm": 5.0, "return_iqm_ci": [0.0, 10.0],
    }  # fmt: skip


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="one of each per episode"):
        stratified_bootstrap(np.zeros(3), np.zeros(2))
    with pytest.raises(ValueError, match="use 'iqm' or 'mean'"):
        stratified_bootstrap(np.zeros(3), np.zeros(3), "median")
    with pytest.raises(ValueError, match="at least one episode"):
        iqm(np.array([]))


def test_the_summary_reports_iqm_and_intervals() -> None:
    returns = np.array([80.0, 82.0, 79.0, -300.0, 81.0, 83.0, 78.0, 80.0])
    result = EvalResult(
        checkpoint=None,
        returns=returns,
        lengths=np.full(8, 10),
        truncated=returns < 0,
        variables={},
        episodes_per_env=np.array([4, 4]),
        greedy=True,
        envs=np.array([0, 1] * 4),
    )
    summary = result.summary()
    assert summary["return_iqm"] == pytest.approx(80.0)  # the middle four: 79, 80, 80, 81
    low, high = summary["return_iqm_ci"]
    assert low <= summary["return_iqm"] <= high
    low, high = summary["return_mean_ci"]
    # Samples with and without the time-out spread the mean far wider than the IQM.
    assert low <= summary["return_mean"] <= high and high - low > 50


def test_one_episode_per_env_still_has_an_interval() -> None:
    """16 envs, one episode each (a short evaluation of long matches): the envs are replicas
    of one task, so the interval reflects the spread of the 16 returns, not zero width."""
    returns = np.arange(16, dtype=np.float64)
    result = EvalResult(
        checkpoint=None,
        returns=returns,
        lengths=np.full(16, 10),
        truncated=np.zeros(16, bool),
        variables={},
        episodes_per_env=np.ones(16, np.int64),
        greedy=False,
        envs=np.arange(16),
    )
    summary = result.summary()
    low, high = summary["return_iqm_ci"]
    assert low < summary["return_iqm"] < high
