"""Scores of an evaluation as Agarwal et al. (2021), "Deep Reinforcement Learning at the Edge of
the Statistical Precipice", report them: the interquartile mean (IQM) and a 95% confidence
interval from a stratified bootstrap.

The IQM is the mean of the middle half of the scores: unlike the mean it is not dragged by a
few outliers (basic's time-outs near -300 among kills near +80), unlike the median it uses
half of the data. The interval resamples scores within each stratum: a task, as in the paper,
so an evaluation of one task resamples all its episodes together (its envs are replicas of
the task; within each env, a resample would copy an env's only episode every time).

Written here rather than taken from ``rliable``: the protocol is a few lines of numpy, and
``rliable`` would add ``arch``, ``scipy`` and ``pandas`` to sf-train for one statistic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Interval", "iqm", "stratified_bootstrap", "task_scores"]

#: Bootstrap resamples: enough that the interval's ends move by well under 1% between seeds.
RESAMPLES = 10_000


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """The interquartile mean along ``axis``: the mean after dropping the lowest and highest
    quarter (``floor(n / 4)`` scores at each end, as ``scipy.stats.trim_mean(x, 0.25)``)."""
    x = np.sort(np.asarray(scores, dtype=np.float64), axis=axis)
    n = x.shape[axis]
    if n == 0:
        raise ValueError("iqm of no scores: evaluate at least one episode")
    cut = n // 4
    return np.take(x, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval."""

    estimate: float
    low: float
    high: float


def stratified_bootstrap(
    scores: np.ndarray,
    strata: np.ndarray,
    statistic: str = "iqm",
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> Interval:
    """The ``statistic`` ("iqm" or "mean") of ``scores`` with its percentile bootstrap
    interval, each resample drawing, within every stratum, as many scores as it holds.

    Args:
        scores: One score per episode, ``[episodes]``.
        strata: The stratum (env) of each episode, ``[episodes]``.
        statistic: "iqm" or "mean".
        confidence: The interval's coverage.
        resamples: Bootstrap resamples.
        seed: Seed of the resampling (the interval is reproducible).
    """
    scores = np.asarray(scores, dtype=np.float64)
    strata = np.asarray(strata)
    if scores.shape != strata.shape or scores.ndim != 1:
        raise ValueError(
            f"scores {scores.shape} and strata {strata.shape}: one of each per episode"
        )
    if statistic not in ("iqm", "mean"):
        raise ValueError(f"statistic={statistic!r}: use 'iqm' or 'mean'")
    measure = iqm if statistic == "iqm" else np.mean
    rng = np.random.default_rng(seed)
    columns = []
    for stratum in np.unique(strata):
        members = np.flatnonzero(strata == stratum)
        columns.append(members[rng.integers(0, len(members), size=(resamples, len(members)))])
    samples = scores[np.concatenate(columns, axis=1)]
    estimates = measure(samples, axis=1)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return Interval(float(measure(scores)), float(low), float(high))


def task_scores(returns: np.ndarray) -> dict[str, float | list[float]]:
    """The mean and IQM of one task's episode returns with their 95% intervals, JSON-ready
    (``return_mean``, ``return_mean_ci``, ``return_iqm``, ``return_iqm_ci``).

    One task is one stratum (Agarwal et al. stratify by task): its envs are replicas of it,
    and drawing within each env would narrow the interval, to nothing when each env played
    one episode.
    """
    task = np.zeros(len(returns), dtype=np.int64)
    mean = stratified_bootstrap(returns, task, "mean")
    middle = stratified_bootstrap(returns, task, "iqm")
    return {
        "return_mean": mean.estimate,
        "return_mean_ci": [mean.low, mean.high],
        "return_iqm": middle.estimate,
        "return_iqm_ci": [middle.low, middle.high],
    }
