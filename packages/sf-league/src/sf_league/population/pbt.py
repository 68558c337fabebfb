"""Population-based training: who copies whom (exploit) and how the copies change (explore).

Pure decisions on plain numbers, so they can be tested without a trainer: the population
driver (:mod:`sf_league.population.training`) feeds them each member's recent match results and
applies what they return through sf-train's population API.

Exploit: members are ranked by their win rate over their last matches against other members
(a draw counts ``draw_score``: half by default, as in Elo; 0 ranks on wins alone, so members
that avoid fights rank below those that win them). Each member of the worst ``fraction``
copies a random member of the best ``fraction``, but only when the gap is significant: a
one-sided two-proportion z-test at ``confidence``, so that noise alone does not wipe out a
member that is as good.

Explore: each hyperparameter (and each non-zero shaping weight) of a copy is multiplied by
``factor`` or ``1 / factor`` with probability ``probability``, then clipped to its bounds;
the discount is perturbed through its horizon ``1 / (1 - gamma)`` so it stays below 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BOUNDS",
    "Exploit",
    "PBTConfig",
    "explore",
    "mutate_shaping",
    "ranked_scores",
    "select_exploits",
]

BOUNDS: dict[str, tuple[float, float]] = {
    "learning_rate": (1e-5, 1e-2),
    "entropy_coef": (1e-4, 0.1),
    "value_coef": (0.1, 2.0),
    "clip_ratio": (0.05, 0.4),
    "max_grad_norm": (0.5, 20.0),
    "gamma": (0.95, 0.999),
}
"""The range each mutated hyperparameter is kept in."""

SHAPING_RANGE = 10.0
"""A shaping weight stays within this factor of its starting value (and keeps its sign)."""


@dataclass
class PBTConfig:
    """When and how the population is changed.

    Attributes:
        interval: Env frames each member plays between two PBT steps (counted per member).
        fraction: Share of the population in the worst (and in the best) group.
        window: Matches per member the ranking looks at (the most recent ones).
        min_matches: Matches a member needs in its window to be ranked at all.
        confidence: One-sided confidence that the best member beats the worst before a copy.
        draw_score: What a draw counts in the ranking (a win 1, a loss 0).
        probability: Chance that each hyperparameter or shaping weight of a copy is changed.
        factor: A change multiplies by ``factor`` or ``1 / factor``.
        mutate: The hyperparameters that explore changes (``gamma`` is left out by default).
        control: Keep member 0 as it started: never mutated, never replaced (a baseline).
        seed: Seed of the random choices.
    """

    interval: int = 2_000_000
    fraction: float = 0.25
    window: int = 100
    min_matches: int = 20
    confidence: float = 0.95
    draw_score: float = 0.5
    probability: float = 0.2
    factor: float = 1.2
    mutate: tuple[str, ...] = (
        "learning_rate",
        "entropy_coef",
        "value_coef",
        "clip_ratio",
        "max_grad_norm",
    )
    control: bool = False
    seed: int = 0

    def problems(self) -> list[str]:
        """Every invalid setting, with the fix."""
        out = []
        if self.interval < 1:
            out.append(f"--pbt-interval={self.interval}: use a positive frame count")
        if not 0.0 < self.fraction <= 0.5:
            out.append(f"--pbt-fraction={self.fraction}: use a share in (0, 0.5]")
        if self.window < 1 or not 1 <= self.min_matches <= self.window:
            out.append(
                f"--pbt-window={self.window} / --pbt-min-matches={self.min_matches}: use "
                "1 <= min-matches <= window"
            )
        if not 0.5 <= self.confidence < 1.0:
            out.append(f"--pbt-confidence={self.confidence}: use a value in [0.5, 1)")
        if not 0.0 <= self.draw_score <= 0.5:
            out.append(f"--pbt-draw-score={self.draw_score}: use a value in [0, 0.5]")
        if not 0.0 <= self.probability <= 1.0:
            out.append(f"--mutation-probability={self.probability}: use a value in [0, 1]")
        if not self.factor > 1.0:
            out.append(f"--mutation-factor={self.factor}: use a factor above 1, e.g. 1.2")
        unknown = sorted(set(self.mutate) - BOUNDS.keys())
        if unknown:
            out.append(f"--mutate {' '.join(unknown)}: choose from {' '.join(BOUNDS)}")
        return out


@dataclass(frozen=True)
class Exploit:
    """``target`` copies ``source`` (win rates over their windows, for the record)."""

    target: int
    source: int
    target_score: float
    source_score: float


def _one_sided_p(wins_a: float, n_a: int, wins_b: float, n_b: int) -> float:
    """P-value of "a's rate is no higher than b's" (two-proportion z-test, pooled)."""
    pooled = (wins_a + wins_b) / (n_a + n_b)
    var = pooled * (1.0 - pooled) * (1.0 / n_a + 1.0 / n_b)
    if var <= 0.0:
        return 0.0 if wins_a / n_a > wins_b / n_b else 1.0
    z = (wins_a / n_a - wins_b / n_b) / math.sqrt(var)
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def ranked_scores(scores: Sequence[float], cfg: PBTConfig) -> list[float]:
    """The scores (1 win, 0.5 draw, 0 loss) a member is ranked on: its last ``cfg.window``,
    a draw counting ``cfg.draw_score``."""
    return [cfg.draw_score if x == 0.5 else x for x in list(scores)[-cfg.window :]]


def select_exploits(
    scores: Sequence[Sequence[float]], cfg: PBTConfig, rng: np.random.Generator
) -> list[Exploit]:
    """Which members copy which.

    Args:
        scores: Per member, its recent match scores against other members (1 win, 0.5 draw,
            0 loss), oldest first; ranked as :func:`ranked_scores` counts them.
        cfg: The PBT settings.
        rng: Draws the source of each copy among the best.

    Returns:
        One :class:`Exploit` per member of the worst group whose gap to the drawn source is
        significant; none while fewer than two members have ``cfg.min_matches`` results.
    """
    recent = [ranked_scores(s, cfg) for s in scores]
    ranked = [i for i, s in enumerate(recent) if len(s) >= cfg.min_matches]
    if len(ranked) < 2:
        return []
    rate = {i: float(np.mean(recent[i])) for i in ranked}
    order = sorted(ranked, key=lambda i: rate[i])
    size = max(1, int(len(order) * cfg.fraction))
    worst, best = order[:size], order[-size:]
    exploits = []
    for target in worst:
        if cfg.control and target == 0:
            continue
        source = int(rng.choice(best))
        if source == target:
            continue
        p = _one_sided_p(
            sum(recent[source]), len(recent[source]), sum(recent[target]), len(recent[target])
        )
        if p < 1.0 - cfg.confidence:
            exploits.append(Exploit(target, source, rate[target], rate[source]))
    return exploits


def _perturbed(value: float, rng: np.random.Generator, factor: float) -> float:
    return value * (factor if rng.random() < 0.5 else 1.0 / factor)


def explore(values: dict[str, float], cfg: PBTConfig, rng: np.random.Generator) -> dict[str, float]:
    """The hyperparameters that change, with their new values (each in :data:`BOUNDS`)."""
    changed = {}
    for name in cfg.mutate:
        if rng.random() >= cfg.probability:
            continue
        low, high = BOUNDS[name]
        if name == "gamma":  # through the horizon, so the discount never reaches 1
            horizon = _perturbed(1.0 / (1.0 - values[name]), rng, cfg.factor)
            new = 1.0 - 1.0 / horizon
        else:
            new = _perturbed(values[name], rng, cfg.factor)
        new = float(min(max(new, low), high))
        if new != values[name]:
            changed[name] = new
    return changed


def mutate_shaping(
    weights: dict[str, float],
    start: dict[str, float],
    cfg: PBTConfig,
    rng: np.random.Generator,
) -> dict[str, float]:
    """The shaping weights that change, with their new values: each non-zero weight within
    :data:`SHAPING_RANGE` of its starting value ``start`` (weights that start at 0 stay 0)."""
    changed = {}
    for name, value in weights.items():
        origin = start.get(name, 0.0)
        if origin == 0.0 or rng.random() >= cfg.probability:
            continue
        new = _perturbed(value, rng, cfg.factor)
        low, high = sorted((origin / SHAPING_RANGE, origin * SHAPING_RANGE))
        new = float(min(max(new, low), high))
        if new != value:
            changed[name] = new
    return changed
