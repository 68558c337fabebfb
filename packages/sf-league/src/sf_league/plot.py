"""A PNG of the ratings with their bootstrap intervals as error bars."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sf_envs.errors import OptionError
from sf_league.standings import Standings

__all__ = ["plot_ratings"]


def plot_ratings(standings: Sequence[Standings], out: str | os.PathLike[str]) -> Path:
    """Draws one panel per group of comparable games (its settings in the panel's title), one
    horizontal bar per player, strongest on top, and writes it to ``out``. Panels do not share
    an Elo axis: ratings of different groups are not on one scale.

    Raises:
        ValueError: If ``out`` is not a .png file name, or ``standings`` is empty.
    """
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise OptionError(f"--out {out}: name a .png file")
    if not standings:
        raise OptionError("nothing to plot: no group of games was rated")
    import matplotlib

    matplotlib.use("Agg")  # no display needed; this only writes files
    import matplotlib.pyplot as plt

    heights = [0.45 * len(s.rows) + 1.5 for s in standings]
    fig, axes = plt.subplots(
        len(standings), 1, figsize=(8, sum(heights)), height_ratios=heights, squeeze=False
    )
    for ax, s in zip(axes[:, 0], standings, strict=True):
        _panel(ax, s)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _panel(ax: Any, standings: Standings) -> None:
    rows = list(reversed(standings.rows))  # matplotlib draws the first row at the bottom
    colours = {"bot": "tab:red", "baseline": "tab:gray", "checkpoint": "tab:blue"}
    for y, r in enumerate(rows):
        ax.errorbar(
            r.elo,
            y,
            xerr=[[r.elo - r.lower], [r.upper - r.elo]],
            fmt="o",
            color=colours.get(r.kind, "black"),
            capsize=4,
        )
    ax.set_yticks(range(len(rows)), [f"{r.player} ({r.games} games)" for r in rows])
    anchor = standings.settings.get("anchor")
    ax.set_xlabel(
        "Elo: maximum likelihood, 95% bootstrap intervals ("
        + (f"{anchor} = {standings.settings['anchor_value']:g})" if anchor else "mean 0)")
    )
    ax.set_title(f"{standings.group.label()}: {standings.games} games", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
