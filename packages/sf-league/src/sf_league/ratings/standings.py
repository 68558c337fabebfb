"""From stored games to the ranked table and the cross table (plain data, no printing).

Games are rated in groups of equal settings (:mod:`sf_league.ratings.groups`): one table per group,
never one fit across groups. Within a group every stored game counts. A game's players are compared pairwise by frags (more frags wins,
equal frags is a draw); a duel is one result, a free-for-all of ``n`` players gives every pair
a result of weight ``1 / (n - 1)`` (:func:`~sf_league.ratings.elo.ffa_pairwise`). W/D/L and
score % in the tables count those pairwise results (for duels: games).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sf_league.ratings.elo import FitSettings, PairResults, RatingFit, ffa_pairwise, fit_ratings
from sf_league.ratings.elo import likelihood_of_superiority as los
from sf_league.ratings.groups import GameGroup, GroupSelection, group_games
from sf_league.store import GameRecord, LeagueStore, LeagueStoreError

__all__ = ["Standing", "Standings", "compute_standings"]


@dataclass(frozen=True)
class Standing:
    """One row of the ranked table (``plus_minus`` is half the interval's width)."""

    rank: int
    player: str
    kind: str
    elo: float
    lower: float
    upper: float
    plus_minus: float
    games: int
    score_pct: float
    wins: float
    draws: float
    losses: float
    los_next: float | None  # likelihood this player is stronger than the next one down


@dataclass(frozen=True)
class Standings:
    """The ranked table, the cross table (``cross[a][b]`` = a's W/D/L against b) and the fit
    of one group of comparable games."""

    group: GameGroup
    rows: list[Standing]
    cross: dict[str, dict[str, tuple[float, float, float]]]
    games: int
    settings: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group.to_json(),
            "games": self.games,
            "settings": self.settings,
            "ratings": [asdict(r) for r in self.rows],
            "cross": {a: {b: list(v) for b, v in row.items()} for a, row in self.cross.items()},
        }


@dataclass(frozen=True)
class _Tally:
    """Every stored game as pairwise results, with the W/D/L counts the tables show."""

    results: PairResults
    wdl: np.ndarray  # [n, n, 3]: a's wins, draws and losses against b
    games_played: np.ndarray  # [n]
    games: int


def compute_standings(
    store: LeagueStore,
    selection: GroupSelection | None = None,
    anchor: str | None = None,
    anchor_value: float = 0.0,
    bootstrap: int = 1000,
    seed: int = 0,
    save: bool = True,
) -> list[Standings]:
    """Fits ratings for each group of comparable stored games and builds its tables.

    Args:
        store: The league.
        selection: Which groups to rate; None: every group.
        anchor: Player held at ``anchor_value`` Elo (e.g. ``bot:1``) in every group rated;
            None: mean 0.
        anchor_value: The anchor's Elo, or the mean without an anchor.
        bootstrap: Bootstrap resamples of the games for the intervals.
        seed: Bootstrap seed (the same league and seed give the same table).
        save: Store each fit, its settings and its group in the league.

    Returns:
        One :class:`Standings` per group, in the order of :func:`~sf_league.ratings.groups.group_games`.

    Raises:
        LeagueStoreError: If the league has no games, the selection matches none of its groups,
            or the anchor is not a player of every group rated.
    """
    players = store.players()
    names = [p.name for p in players]
    if anchor is not None and anchor not in names:
        raise LeagueStoreError(
            f"--anchor {anchor!r} is not a player of {store.path}; players: {', '.join(names)}"
        )
    groups = group_games(store.games())
    if not groups:
        raise LeagueStoreError(
            f"{store.path} has no games yet: run sf-league evaluate --db {store.path}"
        )
    chosen = {g: games for g, games in groups.items() if selection is None or selection.accepts(g)}
    if not chosen:
        raise LeagueStoreError(
            f"no games in {store.path} match the options given; its games were played under "
            "these settings, select one with its options:\n  - "
            + "\n  - ".join(f"{g.label()}: {g.flags()}" for g in groups)
        )
    without_anchor = [g for g, games in chosen.items() if anchor not in _players_of(games)]
    if anchor is not None and without_anchor:
        raise LeagueStoreError(
            f"--anchor {anchor!r} played no game of these groups, which cannot be anchored to "
            "it: select the groups it played with their options, or give another --anchor:\n"
            "  - " + "\n  - ".join(f"{g.label()}: {g.flags()}" for g in without_anchor)
        )
    kinds = {p.name: p.kind for p in players}
    out = []
    for group, games in chosen.items():
        present = _players_of(games)
        group_names = [n for n in names if n in present]
        standings = _group_standings(
            group,
            games,
            group_names,
            [kinds[n] for n in group_names],
            anchor,
            anchor_value,
            bootstrap,
            seed,
        )
        if save:
            ratings = {r.player: (r.elo, r.lower, r.upper) for r in standings.rows}
            store.record_fit(standings.settings, standings.games, ratings)
        out.append(standings)
    return out


def _players_of(games: Sequence[GameRecord]) -> set[str]:
    return {seat.player for game in games for seat in game.seats}


def _group_standings(
    group: GameGroup,
    games: Sequence[GameRecord],
    names: list[str],
    kinds: list[str],
    anchor: str | None,
    anchor_value: float,
    bootstrap: int,
    seed: int,
) -> Standings:
    """The fit and tables of one group's games among the players who played them."""
    index = {n: k for k, n in enumerate(names)}
    tally = _tally(games, index)
    settings = FitSettings(
        anchor=None if anchor is None else index[anchor],
        anchor_value=anchor_value,
        bootstrap=bootstrap,
        seed=seed,
    )
    fit = fit_ratings(tally.results, len(names), settings)
    order = sorted(range(len(names)), key=lambda k: -fit.elo[k])
    rows = _ranked_rows(fit, order, names, kinds, tally)
    stored_settings = {
        "group": group.to_json(),
        "anchor": anchor,
        "anchor_value": anchor_value,
        "prior_sd": settings.prior_sd,
        "bootstrap": bootstrap,
        "confidence": settings.confidence,
        "seed": seed,
    }
    return Standings(
        group, rows, _cross_table(tally.wdl, order, names), tally.games, stored_settings
    )


def _tally(games: Sequence[GameRecord], index: dict[str, int]) -> _Tally:
    """Turns games into pairwise results by frags (see the module docstring)."""
    g_idx, i_idx, j_idx, scores, weights = [], [], [], [], []
    n = len(index)
    wdl = np.zeros((n, n, 3))
    games_played = np.zeros(n, dtype=np.int64)
    for g, game in enumerate(games):
        seats = [index[s.player] for s in game.seats]
        games_played[seats] += 1
        for a, b, s, w in ffa_pairwise([s.frags for s in game.seats]):
            pa, pb = seats[a], seats[b]
            g_idx.append(g)
            i_idx.append(pa)
            j_idx.append(pb)
            scores.append(s)
            weights.append(w)
            outcome = 0 if s == 1 else 1 if s == 0.5 else 2
            wdl[pa, pb, outcome] += 1
            wdl[pb, pa, 2 - outcome] += 1
    results = PairResults.from_lists(g_idx, i_idx, j_idx, scores, weights)
    return _Tally(results, wdl, games_played, len(games))


def _ranked_rows(
    fit: RatingFit, order: list[int], names: list[str], kinds: list[str], tally: _Tally
) -> list[Standing]:
    """One row per player, best first, with the chance of being stronger than the next."""
    totals = tally.wdl.sum(1)
    rows = []
    for rank, k in enumerate(order, 1):
        w, d, l_ = totals[k]
        played = w + d + l_
        nxt = order[rank] if rank < len(order) else None
        rows.append(
            Standing(
                rank=rank,
                player=names[k],
                kind=kinds[k],
                elo=float(fit.elo[k]),
                lower=float(fit.lower[k]),
                upper=float(fit.upper[k]),
                plus_minus=float(fit.upper[k] - fit.lower[k]) / 2,
                games=int(tally.games_played[k]),
                score_pct=100.0 * (w + d / 2) / played if played else float("nan"),
                wins=float(w),
                draws=float(d),
                losses=float(l_),
                los_next=None if nxt is None else los(fit, k, nxt),
            )
        )
    return rows


def _cross_table(
    wdl: np.ndarray, order: list[int], names: list[str]
) -> dict[str, dict[str, tuple[float, float, float]]]:
    """``cross[a][b]`` = a's W/D/L against b, for the pairs that met, in rank order."""
    return {
        names[a]: {
            names[b]: (float(wdl[a, b, 0]), float(wdl[a, b, 1]), float(wdl[a, b, 2]))
            for b in order
            if wdl[a, b].sum() > 0
        }
        for a in order
    }
