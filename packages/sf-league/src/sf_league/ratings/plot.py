"""PNGs of the ratings with their bootstrap intervals as error bars: one bar per player, or the
ratings of population members' gauntlet checkpoints against their training frames."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sf_envs.errors import OptionError
from sf_league.ratings.standings import Standings

__all__ = ["plot_over_time", "plot_ratings"]

_GAUNTLET_CHECKPOINT = re.compile(r"(?P<member>.+/p\d+)@(?P<frames>\d+)")
"""A gauntlet checkpoint's league name
(:func:`sf_league.population.training.gauntlet_checkpoint_name`)."""


def _figure(out: str | os.PathLike[str], standings: Sequence[Standings]) -> Path:
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise OptionError(f"--out {out}: name a .png file")
    if not standings:
        raise OptionError("nothing to plot: no group of games was rated")
    return out


def _save(fig: Any, out: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display needed; this only writes files
    import matplotlib.pyplot as plt

    return plt


def plot_over_time(standings: Sequence[Standings], out: str | os.PathLike[str]) -> Path:
    """Draws, per group of comparable games, every population member's gauntlet checkpoints
    (players named ``RUN/pN@FRAMES``) as a line of Elo against frames with 95% intervals, and
    every other player (bots, baselines) as a horizontal line, and writes it to ``out``.

    Raises:
        OptionError: If ``out`` is not a .png file name, or no group has gauntlet checkpoints.
    """
    out = _figure(out, standings)
    over_time = [
        s for s in standings if any(_GAUNTLET_CHECKPOINT.fullmatch(r.player) for r in s.rows)
    ]
    if not over_time:
        raise OptionError(
            "nothing to plot over time: no rated player is a gauntlet checkpoint (RUN/pN@FRAMES); "
            "train with sf-league train --gauntlet-every N"
        )
    plt = _pyplot()
    fig, axes = plt.subplots(len(over_time), 1, figsize=(9, 4.5 * len(over_time)), squeeze=False)
    for ax, s in zip(axes[:, 0], over_time, strict=True):
        lines: dict[str, list[tuple[int, float, float, float]]] = defaultdict(list)
        for r in s.rows:
            if m := _GAUNTLET_CHECKPOINT.fullmatch(r.player):
                lines[m["member"]].append((int(m["frames"]), r.elo, r.lower, r.upper))
            else:
                ax.axhline(r.elo, color="gray", alpha=0.5, linestyle="--")
                ax.annotate(
                    r.player,
                    (1.0, r.elo),
                    xycoords=("axes fraction", "data"),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=8,
                    color="gray",
                )
        for member, points in sorted(lines.items()):
            frames, elo, lower, upper = (list(v) for v in zip(*sorted(points), strict=True))
            yerr = [
                [e - lo for e, lo in zip(elo, lower, strict=True)],
                [hi - e for e, hi in zip(elo, upper, strict=True)],
            ]
            ax.errorbar(frames, elo, yerr=yerr, marker="o", capsize=3, label=member)
        ax.set_xlabel("training frames of the run")
        ax.set_ylabel("Elo (95% bootstrap intervals)")
        ax.set_title(f"{s.group.label()}: {s.games} games", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    return _save(fig, out)


def plot_ratings(standings: Sequence[Standings], out: str | os.PathLike[str]) -> Path:
    """Draws one panel per group of comparable games (its settings in the panel's title), one
    horizontal bar per player, strongest on top, and writes it to ``out``. Panels do not share
    an Elo axis: ratings of different groups are not on one scale.

    Raises:
        ValueError: If ``out`` is not a .png file name, or ``standings`` is empty.
    """
    out = _figure(out, standings)
    plt = _pyplot()
    heights = [0.45 * len(s.rows) + 1.5 for s in standings]
    fig, axes = plt.subplots(
        len(standings), 1, figsize=(8, sum(heights)), height_ratios=heights, squeeze=False
    )
    for ax, s in zip(axes[:, 0], standings, strict=True):
        _panel(ax, s)
    return _save(fig, out)


def _panel(ax: Any, standings: Standings) -> None:
    rows = list(reversed(standings.rows))  # matplotlib draws the first row at the bottom
    colours = {
        "bot": "tab:red",
        "baseline": "tab:gray",
        "checkpoint": "tab:blue",
        "member": "tab:green",
    }
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
