"""The results of the peer comparison: evaluated checkpoints, a line per contender, the
markdown table with its ratios, and the plot of the score against wall time and frames.

A scenario is scored by one per-episode metric (:data:`METRICS`): its return in ViZDoom's
units, or, where the contenders train on different rewards, what those rewards stand for: the
kills the engine counted (``KILLCOUNT`` at the episode's end) on battle, whose Sample Factory
reward is shaped; the agent steps survived on health_gathering_supreme, where ViZDoom's
scenario pays 1 a tic and -100 at death and Sample Factory's 0.01 a tic. Best and final means
come with their 95% bootstrap interval over the episodes (:mod:`sf_train.scores`)."""

from __future__ import annotations

import itertools
import shutil
import statistics
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sf_train.scores import stratified_bootstrap

from .supervise import Supervision

#: Raw pages of the sittings (``sample_factory.py --sitting``), built but outside the docs' nav.
SITTINGS = Path(__file__).resolve().parents[2] / "docs" / "benchmarks" / "sittings"

__all__ = ["METRICS", "SITTINGS", "Point", "Summary", "plot", "summarize", "table", "write_sitting"]

#: Metric -> how the table and the plot name its per-episode value.
METRICS: dict[str, str] = {
    "return": "return",
    "kills": "kills/episode",
    "survival": "steps survived/episode",
}


@dataclass
class Point:
    """One checkpoint: when it was written, after how many frames, and how it plays (per
    episode: the return in ViZDoom's units, the length in agent steps, the engine's kill count)."""

    path: str
    time_s: float
    frames: int
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    kills: list[float] = field(default_factory=list)
    timeouts: float = 0.0

    def scores(self, metric: str) -> list[float]:
        """The per-episode values of ``metric`` (a key of :data:`METRICS`)."""
        if metric == "survival":
            return [float(n) for n in self.lengths]
        return self.kills if metric == "kills" else self.returns

    @property
    def mean(self) -> float:
        return statistics.fmean(self.returns)

    @property
    def median(self) -> float:
        return statistics.median(self.returns)

    @property
    def kills_mean(self) -> float:
        return statistics.fmean(self.kills)


@dataclass
class Summary:
    """One contender's line of the table; ``best_*``, ``final_*`` and ``target_*`` are of the
    scenario's ``metric``."""

    key: str
    label: str
    metric: str
    fps_window: float | None
    fps_overall: float | None
    peak_rss_mib: float
    peak_pss_mib: float
    final_frames: int
    best_mean: float | None
    best_ci: tuple[float, float] | None
    best_time_s: float | None
    final_mean: float | None
    final_ci: tuple[float, float] | None
    final_median: float | None
    final_timeouts: float | None
    target_time_s: float | None
    target_frames: int | None


def summarize(
    key: str,
    label: str,
    run: Supervision,
    points: list[Point],
    target: float | None,
    metric: str = "return",
) -> Summary:
    """One contender's line: frames/s from its checkpoints' frames and times, memory from its
    supervision, the mean and median of ``metric`` from its evaluated checkpoints."""
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r}: use one of {', '.join(METRICS)}")

    def mean(p: Point) -> float:
        return statistics.fmean(p.scores(metric))

    def interval(p: Point) -> tuple[float, float]:
        scores = np.asarray(p.scores(metric), dtype=np.float64)
        found = stratified_bootstrap(scores, np.zeros(len(scores), np.int64), "mean")
        return found.low, found.high

    rates = [
        (b.frames - a.frames) / (b.time_s - a.time_s)
        for a, b in itertools.pairwise(points)
        if b.time_s > a.time_s
    ][1:]  # the first interval still holds the trainer's start-up
    last = points[-1] if points else None
    best = max(points, key=mean) if points else None
    reached = next((p for p in points if target is not None and mean(p) >= target), None)
    return Summary(
        key=key,
        label=label,
        metric=metric,
        fps_window=statistics.median(rates) if rates else None,
        fps_overall=last.frames / last.time_s if last else None,
        peak_rss_mib=run.peak_rss_mib,
        peak_pss_mib=run.peak_pss_mib,
        final_frames=last.frames if last else 0,
        best_mean=mean(best) if best else None,
        best_ci=interval(best) if best else None,
        best_time_s=best.time_s if best else None,
        final_mean=mean(last) if last else None,
        final_ci=interval(last) if last else None,
        final_median=statistics.median(last.scores(metric)) if last else None,
        final_timeouts=last.timeouts if last else None,
        target_time_s=reached.time_s if reached else None,
        target_frames=reached.frames if reached else None,
    )


def _ratio(x: float | None, y: float | None) -> str:
    return f"{x / y:.2f}" if x is not None and y else "n/a"


def _num(x: float | None, fmt: str = ",.0f", missing: str = "n/a") -> str:
    return format(x, fmt) if x is not None else missing


def _ci(ci: tuple[float, float] | None, fmt: str) -> str:
    return f" [{format(ci[0], fmt)}, {format(ci[1], fmt)}]" if ci is not None else ""


def table(scenario: str, summaries: list[Summary], target: float | None) -> str:
    """The scenario's markdown table and the ratios of the others to contender (a)."""
    reach = "not reached" if target is not None else "n/a"
    goal = f"{target:g}" if target is not None else "-"
    name = METRICS[summaries[0].metric] if summaries else METRICS["return"]
    lines = [
        f"### {scenario}",
        "",
        f"| contender | env frames/s (median window / overall) | peak RSS / PSS MiB | final frames "
        f"| best eval mean {name} (at s) | final eval {name} mean / median / time-outs "
        f"| time to {goal} | frames to {goal} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        score = ".2f" if s.metric == "kills" else ".1f"  # kills are a few per episode
        lines.append(
            f"| ({s.key}) {s.label} | {_num(s.fps_window)} / {_num(s.fps_overall)} "
            f"| {s.peak_rss_mib:,.0f} / {s.peak_pss_mib:,.0f} | {s.final_frames:,} "
            f"| {_num(s.best_mean, score)}{_ci(s.best_ci, score)} ({_num(s.best_time_s, '.0f')}) "
            f"| {_num(s.final_mean, score)}{_ci(s.final_ci, score)} / {_num(s.final_median, '.1f')} "
            f"/ {_num(s.final_timeouts, '.0%')} "
            f"| {_num(s.target_time_s, '.0f', reach)}{' s' if s.target_time_s else ''} "
            f"| {_num(s.target_frames, ',', reach)} |"
        )
    by_key = {s.key: s for s in summaries}
    if "a" in by_key:
        a = by_key["a"]
        ratios = [
            f"({k})/(a) frames/s {_ratio(by_key[k].fps_window, a.fps_window)}"
            for k in sorted(by_key.keys() - {"a"})
        ]
        if target is not None:
            ratios += [
                f"({k})/(a) frames to {target:g} {_ratio(by_key[k].target_frames, a.target_frames)}"
                for k in sorted(by_key.keys() - {"a", "c"})
            ]
            if "c" in by_key:
                c_time = by_key["c"].target_time_s
                ratios.append(f"(c)/(a) time to {target:g} {_ratio(c_time, a.target_time_s)}")
        if target is None:  # no target: the scores at the end of the same wall time
            ratios += [
                f"({k})/(a) final {name} {_ratio(by_key[k].final_mean, a.final_mean)}"
                for k in sorted(by_key.keys() - {"a"})
            ]
        lines += ["", "Ratios (median-window frames/s): " + ", ".join(ratios)]
    return "\n".join(lines)


def plot(
    title: str,
    curves: dict[str, tuple[str, list[Point]]],
    target: float | None,
    path: Path,
    metric: str = "return",
) -> None:
    """The evaluated mean of ``metric`` against wall time and against frames, one line per
    contender (``curves``: key -> label and checkpoints)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The legend lists one contender per entry below the panels, long labels (flags) wrapped.
    labels = {key: textwrap.fill(f"({key}) {label}", 110) for key, (label, _) in curves.items()}
    rows = sum(label.count("\n") + 1 for label in labels.values())
    height = 4.5 + 0.25 * rows
    fig, (by_time, by_frames) = plt.subplots(1, 2, figsize=(12, height), sharey=True)
    for key, (_, points) in curves.items():
        means = [statistics.fmean(p.scores(metric)) for p in points]
        by_time.plot([p.time_s for p in points], means, "o-", label=labels[key])
        by_frames.plot([p.frames for p in points], means, "o-")
    for ax, xlabel in ((by_time, "wall time (s)"), (by_frames, "env frames")):
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
        if target is not None:
            ax.axhline(target, color="gray", linestyle="--", linewidth=1)
    by_time.set_ylabel(
        {
            "kills": "evaluated kills per episode (KILLCOUNT)",
            "survival": "evaluated agent steps survived per episode",
        }.get(metric, "evaluated mean return (ViZDoom units)")
    )
    fig.legend(loc="lower center", ncol=1, fontsize=9, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.25 * rows / height + 0.02, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_sitting(name: str, text: str, out: Path, scenarios: list[str]) -> Path:
    """The raw page of a sitting in ``docs/benchmarks/sittings/``: the results table as written
    to ``out``, each scenario's plot copied beside it and shown under the table."""
    SITTINGS.mkdir(parents=True, exist_ok=True)
    images = []
    for scenario in scenarios:
        png = f"{name}.png" if len(scenarios) == 1 else f"{name}_{scenario}.png"
        shutil.copyfile(out / f"{scenario}.png", SITTINGS / png)
        images.append(f"![{scenario}: score against wall time and frames]({png})")
    page = SITTINGS / f"{name}.md"
    page.write_text(text + "\n" + "\n\n".join(images) + "\n")
    return page
