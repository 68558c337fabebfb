"""A PNG of the ratings with their bootstrap intervals as error bars."""

from __future__ import annotations

import os
from pathlib import Path

from sf_league.standings import Standings

__all__ = ["plot_ratings"]


def plot_ratings(standings: Standings, out: str | os.PathLike[str]) -> Path:
    """Draws one horizontal bar per player, strongest on top, and writes it to ``out``.

    Raises:
        ValueError: If ``out`` is not a .png file name.
    """
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise ValueError(f"--out {out}: name a .png file")
    import matplotlib

    matplotlib.use("Agg")  # no display needed; this only writes files
    import matplotlib.pyplot as plt

    rows = list(reversed(standings.rows))  # matplotlib draws the first row at the bottom
    colours = {"bot": "tab:red", "baseline": "tab:gray", "checkpoint": "tab:blue"}
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
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
        "Elo: maximum likelihood, 95% bootstrap intervals\n("
        + (f"{anchor} = {standings.settings['anchor_value']:g})" if anchor else "mean 0)")
    )
    ax.set_title(f"League ratings over {standings.games} games")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
