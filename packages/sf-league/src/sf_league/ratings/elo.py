"""Elo ratings fitted by maximum likelihood (Bradley–Terry) over every stored result.

Pure functions on plain arrays; nothing here knows about Doom or the database.

The model: player ``i`` beats ``j`` with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``
(the Elo logistic curve). A draw counts as half a win for each side, so each result is a score
``s`` in ``{0, 0.5, 1}`` and the log-likelihood is ``s log p + (1 - s) log (1 - p)``. Unlike
incremental Elo, the fit does not depend on the order the games were played in, and it uses
every game with equal weight, which is why it is the reported rating.

A weak Gaussian prior (mean 0, standard deviation :attr:`FitSettings.prior_sd` Elo) is added to
the likelihood. Without it a player who won (or lost) every game has no finite maximum, and
players in separate components of the "who played whom" graph have no defined offset; with it
such players get a finite rating pulled toward 0 (about +500 Elo for 10 straight wins against a
0-rated opponent at the default 1000 sd), while with tens of games per pairing its effect is
a few Elo. When every resample of the games is the same sweep (one pairing, all wins), the
bootstrap interval collapses to a point; :func:`likelihood_of_superiority` (from the Laplace
covariance) still shows the uncertainty there. The prior's gradient sums to zero with the likelihood's, so the fit has mean 0 before
anchoring.

Free-for-all games are reduced to pairwise results by :func:`ffa_pairwise`; the bootstrap
resamples whole games, so the dependence between pairs of one game shows in the intervals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sf_envs.errors import OptionError

__all__ = [
    "ELO_SCALE",
    "FitSettings",
    "PairResults",
    "RatingFit",
    "elo_win_probability",
    "ffa_pairwise",
    "fit_ratings",
    "likelihood_of_superiority",
]

ELO_SCALE = 400.0 / math.log(10.0)
"""Elo points per unit of natural log-odds (~173.7): ``r_elo = ELO_SCALE * theta``."""


def elo_win_probability(r_i: float | np.ndarray, r_j: float | np.ndarray) -> np.ndarray:
    """Expected score of a player rated ``r_i`` against one rated ``r_j`` (Elo points)."""
    return 1.0 / (1.0 + 10.0 ** ((np.asarray(r_j) - np.asarray(r_i)) / 400.0))


@dataclass(frozen=True)
class PairResults:
    """Pairwise results, one row each, tagged with the game they came from.

    Attributes:
        game: Game index of each result, ``[R]`` int; the bootstrap resamples these.
        i: First player index, ``[R]`` int.
        j: Second player index, ``[R]`` int.
        score: Score of ``i`` against ``j``: 1 win, 0.5 draw, 0 loss, ``[R]`` float.
        weight: Weight of each result, ``[R]`` float (1 in a duel; see :func:`ffa_pairwise`).
    """

    game: np.ndarray
    i: np.ndarray
    j: np.ndarray
    score: np.ndarray
    weight: np.ndarray

    @classmethod
    def from_lists(
        cls,
        game: Sequence[int],
        i: Sequence[int],
        j: Sequence[int],
        score: Sequence[float],
        weight: Sequence[float] | None = None,
    ) -> PairResults:
        """Builds and checks the arrays; a ValueError names the bad field."""
        arrays = [np.asarray(a) for a in (game, i, j, score)]
        w = np.ones(len(arrays[0])) if weight is None else np.asarray(weight, dtype=np.float64)
        if len({len(a) for a in (*arrays, w)}) != 1:
            raise ValueError("game, i, j, score and weight must have the same length")
        score_arr = arrays[3].astype(np.float64)
        if score_arr.size and (score_arr.min() < 0 or score_arr.max() > 1):
            raise ValueError("scores must lie in [0, 1] (1 win, 0.5 draw, 0 loss)")
        if np.any(arrays[1] == arrays[2]):
            raise ValueError("a result pairs a player with itself; pair two different players")
        game_arr, i_arr, j_arr = (a.astype(np.int64) for a in arrays[:3])
        return cls(game_arr, i_arr, j_arr, score_arr, w)

    def __len__(self) -> int:
        return len(self.game)


def ffa_pairwise(frags: Sequence[float]) -> list[tuple[int, int, float, float]]:
    """Reduces one free-for-all game to pairwise results.

    Every pair of players is one result decided by frags (more frags wins, equal frags is a
    draw), weighted ``1 / (n - 1)`` so that each player's results from one game weigh one game
    in total, as in a duel. Finishing order against each opponent is what an FFA reveals; the
    weighting keeps an 8-player game from counting as 7 duels for everyone in it.

    Args:
        frags: Frags of each of the ``n >= 2`` players, by position in the game.

    Returns:
        ``(a, b, score_of_a, weight)`` for every pair ``a < b`` of positions.
    """
    n = len(frags)
    if n < 2:
        raise ValueError(f"a game needs at least two players, got {n}")
    w = 1.0 / (n - 1)
    out = []
    for a in range(n):
        for b in range(a + 1, n):
            s = 1.0 if frags[a] > frags[b] else 0.0 if frags[a] < frags[b] else 0.5
            out.append((a, b, s, w))
    return out


@dataclass(frozen=True)
class FitSettings:
    """How ratings are fitted; stored with every fit.

    Attributes:
        anchor: Player index held at ``anchor_value``; None centres the ratings on mean 0.
        anchor_value: Elo of the anchor (or the mean when ``anchor`` is None).
        prior_sd: Standard deviation (Elo) of the Gaussian prior on each rating; see the module
            docstring for why a weak one is always used.
        bootstrap: Bootstrap resamples of the games for the intervals (0: none).
        confidence: Two-sided coverage of the percentile intervals.
        seed: Seed of the bootstrap resampling.
    """

    anchor: int | None = None
    anchor_value: float = 0.0
    prior_sd: float = 1000.0
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        errors = []
        if not self.prior_sd > 0:
            errors.append(f"prior_sd must be > 0 Elo, got {self.prior_sd}")
        if self.bootstrap < 0:
            errors.append(f"bootstrap must be >= 0 resamples, got {self.bootstrap}")
        if not 0 < self.confidence < 1:
            errors.append(f"confidence must be in (0, 1), got {self.confidence}")
        if errors:
            raise OptionError("invalid fit settings: " + "; ".join(errors))


@dataclass(frozen=True)
class RatingFit:
    """The fitted ratings of ``n`` players (Elo points, anchored).

    Attributes:
        elo: Maximum a posteriori ratings, ``[n]``.
        lower: Lower ends of the bootstrap intervals, ``[n]`` (equal to ``elo`` without bootstrap).
        upper: Upper ends, ``[n]``.
        covariance: Laplace (inverse Hessian) covariance of the anchored ratings, ``[n, n]``.
        samples: Bootstrap ratings, ``[bootstrap, n]``.
        settings: The settings used.
    """

    elo: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    covariance: np.ndarray
    samples: np.ndarray
    settings: FitSettings


def _aggregate(
    results: PairResults, n: int, game_weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Score and count matrices ``[..., n, n]``: ``S[a, b]`` is a's weighted score against b.

    ``game_weights`` ``[B, G]`` gives one batch entry per bootstrap resample.
    """
    w = results.weight if game_weights is None else game_weights[:, results.game] * results.weight
    w = np.atleast_2d(w)
    batch = w.shape[0]
    S = np.zeros((batch, n * n))
    N = np.zeros((batch, n * n))
    ij = results.i * n + results.j
    ji = results.j * n + results.i
    for b in range(batch):
        S[b] += np.bincount(ij, w[b] * results.score, n * n)
        S[b] += np.bincount(ji, w[b] * (1.0 - results.score), n * n)
        N[b] += np.bincount(ij, w[b], n * n) + np.bincount(ji, w[b], n * n)
    return S.reshape(batch, n, n), N.reshape(batch, n, n)


def _newton(S: np.ndarray, N: np.ndarray, precision: float) -> tuple[np.ndarray, np.ndarray]:
    """Maximises the log posterior for a batch ``[B, n, n]``; returns theta ``[B, n]`` and
    the negative Hessian ``[B, n, n]`` at the optimum (log-odds units).

    The objective is strictly concave (the prior adds ``precision`` to the diagonal), so
    Newton's method with step halving converges from 0.
    """
    batch, n, _ = S.shape
    theta = np.zeros((batch, n))
    eye = np.eye(n)

    def objective(t: np.ndarray) -> np.ndarray:
        d = t[:, :, None] - t[:, None, :]
        # S log sigmoid(d) summed over ordered pairs covers both sides of every result.
        return -(S * np.logaddexp(0.0, -d)).sum((1, 2)) - 0.5 * precision * (t**2).sum(1)

    for _ in range(100):
        d = theta[:, :, None] - theta[:, None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        grad = (S - N * p).sum(2) - precision * theta
        c = N * p * (1.0 - p)
        neg_hess = eye * c.sum(2)[:, :, None] - c + precision * eye
        step = np.linalg.solve(neg_hess, grad[..., None])[..., 0]
        current = objective(theta)
        scale = np.ones(batch)
        for _ in range(30):
            trial = theta + scale[:, None] * step
            worse = objective(trial) < current - 1e-12
            if not worse.any():
                break
            scale = np.where(worse, scale / 2, scale)
        theta = theta + scale[:, None] * step
        if np.abs(step).max() < 1e-9:
            break
    d = theta[:, :, None] - theta[:, None, :]
    p = 1.0 / (1.0 + np.exp(-d))
    c = N * p * (1.0 - p)
    return theta, eye * c.sum(2)[:, :, None] - c + precision * eye


def _anchor(elo: np.ndarray, settings: FitSettings) -> np.ndarray:
    if settings.anchor is None:
        return elo - elo.mean(-1, keepdims=True) + settings.anchor_value
    return elo - elo[..., settings.anchor : settings.anchor + 1] + settings.anchor_value


def fit_ratings(
    results: PairResults, num_players: int, settings: FitSettings | None = None
) -> RatingFit:
    """Fits Elo ratings to pairwise results by maximum a posteriori Bradley–Terry.

    Args:
        results: The pairwise results (draws as score 0.5).
        num_players: Number of players ``n``; indices in ``results`` are below it. Players
            without results get the prior's rating (0 before anchoring) and wide intervals.
        settings: Anchor, prior, bootstrap; defaults when None.

    Returns:
        The anchored ratings with bootstrap percentile intervals (resampling whole games).

    Raises:
        ValueError: If an index is out of range or the anchor is not a player.
    """
    settings = settings or FitSettings()
    n = num_players
    if n < 1:
        raise ValueError("fit_ratings needs at least one player")
    if len(results) and (
        min(results.i.min(), results.j.min()) < 0 or max(results.i.max(), results.j.max()) >= n
    ):
        raise ValueError(f"player indices must be in [0, {n}); got results outside that range")
    if settings.anchor is not None and not 0 <= settings.anchor < n:
        raise ValueError(f"anchor {settings.anchor} is not a player index in [0, {n})")
    precision = (ELO_SCALE / settings.prior_sd) ** 2
    theta, neg_hess = _newton(*_aggregate(results, n), precision)
    elo = _anchor(theta[0] * ELO_SCALE, settings)
    # Covariance of the anchored ratings: a linear map of theta's Laplace covariance.
    shift = np.eye(n) - (
        np.full((n, n), 1.0 / n) if settings.anchor is None else np.eye(n)[[settings.anchor] * n]
    )
    cov = shift @ np.linalg.inv(neg_hess[0]) @ shift.T * ELO_SCALE**2
    samples = np.zeros((0, n))
    lower = upper = elo
    if settings.bootstrap and len(results):
        rng = np.random.default_rng(settings.seed)
        games = np.unique(results.game)
        counts = rng.multinomial(
            len(games), np.full(len(games), 1.0 / len(games)), size=settings.bootstrap
        )
        weights = np.zeros((settings.bootstrap, int(results.game.max()) + 1))
        weights[:, games] = counts
        chunks = []
        for start in range(0, settings.bootstrap, 256):  # bounds memory: [chunk, n, n]
            S, N = _aggregate(results, n, weights[start : start + 256])
            chunks.append(_newton(S, N, precision)[0])
        samples = _anchor(np.concatenate(chunks) * ELO_SCALE, settings)
        tail = (1.0 - settings.confidence) / 2 * 100
        lower, upper = np.percentile(samples, [tail, 100 - tail], axis=0)
    return RatingFit(elo, lower, upper, cov, samples, settings)


def likelihood_of_superiority(fit: RatingFit, a: int, b: int) -> float:
    """Probability that player ``a`` is stronger than ``b`` under the fit's Laplace posterior.

    ``Phi((r_a - r_b) / sd(r_a - r_b))`` with the covariance of the fit (as in BayesElo);
    0.5 means the data cannot tell them apart.
    """
    diff = fit.elo[a] - fit.elo[b]
    var = fit.covariance[a, a] + fit.covariance[b, b] - 2 * fit.covariance[a, b]
    if var <= 0:
        return 0.5 if diff == 0 else float(diff > 0)
    return 0.5 * (1.0 + math.erf(diff / math.sqrt(2.0 * var)))
