"""sf-train on Atari as a user runs it, scored on whole games of raw score.

For each id: ``sf-train train --env ID`` (the ``atari`` preset; any extra sf-train flags after
``--``) for ``--seconds`` of wall time, then its best checkpoint evaluated over ``--episodes``
fresh games, and a random policy over as many. Writes ``OUT/results.json``, a Markdown table in
``OUT/results.md`` (frames, wall time, evaluated mean, IQM with its 95% interval, random mean,
the frames and seconds at which an in-training evaluation first reached ``--goal``), and
``OUT/<id>.png``: the training return and the in-training evaluations against frames.
``--reuse RUN_DIR`` scores a finished run instead of training one.

Not part of CI. Run on an otherwise idle machine, from the repository root:

    hatch run python benchmarks/atari_learning.py --ids sf/Atari-Pong-v0 --seconds 6000 \\
        --goal 18 -- --precision bfloat16
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from common.policies import evaluate_best, random_policy, sf_train
from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS,
    EventAccumulator,
)

from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint

Series = list[tuple[int, float, float]]
"""(frames, value, seconds since the run began) of one TensorBoard tag."""


def series(run_dir: Path, tag: str) -> Series:
    """A tag's points in the run's event files (every session of a resumed run)."""
    events = EventAccumulator(str(run_dir), size_guidance={SCALARS: 0})
    events.Reload()
    if tag not in events.Tags()["scalars"]:
        return []
    points = events.Scalars(tag)
    start = points[0].wall_time if points else 0.0
    return [(p.step, p.value, p.wall_time - start) for p in points]


def first_reaching(points: Series, goal: float | None) -> tuple[int, float] | None:
    """(frames, seconds) of the first point at or above ``goal``."""
    for frames, value, seconds in points:
        if goal is not None and value >= goal:
            return frames, seconds
    return None


def plot(env_id: str, training: Series, evaluations: Series, random_mean: float, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([f for f, _, _ in training], [v for _, v, _ in training], lw=1, label="training")
    ax.plot(
        [f for f, _, _ in evaluations],
        [v for _, v, _ in evaluations],
        "o-",
        label="in-training evaluation",
    )
    ax.axhline(random_mean, color="grey", ls="--", lw=1, label="random policy")
    ax.set_xlabel("frames")
    ax.set_ylabel("return of a whole game (raw score)")
    ax.set_title(env_id)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def score(
    env_id: str, run_dir: Path, wall: float | None, args: argparse.Namespace
) -> dict[str, Any]:
    evaluations = series(run_dir, "eval/return_mean")
    random = random_policy(run_dir, args.episodes, seed=1000)
    plot(
        env_id,
        series(run_dir, "charts/episodic_return"),
        evaluations,
        random["return_mean"],
        Path(args.out) / f"{env_id.replace('/', '_')}.png",
    )
    return {
        "env": env_id,
        "run_dir": str(run_dir),
        "wall_seconds": wall,
        "frames": int(load_checkpoint(find_checkpoint(run_dir, "latest"))["frames"]),
        "best_frames": int(load_checkpoint(find_checkpoint(run_dir, "best"))["frames"]),
        "best": evaluate_best(run_dir, args.episodes),
        "random": random,
        "goal": args.goal,
        "goal_reached_at": first_reaching(evaluations, args.goal),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| id | frames | training | best at | evaluated mean | IQM [95% CI] | random mean "
        "| evaluation first at the goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["best"]
        low, high = b["return_iqm_ci"]
        wall = "-" if r["wall_seconds"] is None else f"{r['wall_seconds']:.0f} s"
        reached = r["goal_reached_at"]
        at = (
            "-"
            if r["goal"] is None
            else "not reached"
            if reached is None
            else f">= {r['goal']:g} at {reached[0]:,} frames, {reached[1]:.0f} s"
        )
        lines.append(
            f"| `{r['env']}` | {r['frames']:,} | {wall} | {r['best_frames']:,} | "
            f"{b['return_mean']:.1f} | {b['return_iqm']:.1f} [{low:.1f}, {high:.1f}] | "
            f"{r['random']['return_mean']:.1f} | {at} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", nargs="+", default=["sf/Atari-Pong-v0"])
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--goal", type=float, help="the evaluated return to reach, e.g. 18")
    parser.add_argument("--reuse", type=Path, help="score this finished run of the one id")
    parser.add_argument("--out", default="runs/atari")
    parser.add_argument("flags", nargs="*", help="extra sf-train flags, after --")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for env_id in args.ids:
        if args.reuse is not None:
            rows.append(score(env_id, args.reuse, None, args))
            continue
        run_dir = out / "runs" / env_id.replace("/", "_")
        shutil.rmtree(run_dir, ignore_errors=True)
        started = time.perf_counter()
        print(f"{env_id}: training for {args.seconds:.0f} s", flush=True)
        sf_train(
            "train",
            "--env",
            env_id,
            "--run-dir",
            str(run_dir),
            "--seconds",
            str(args.seconds),
            *args.flags,
        )
        rows.append(score(env_id, run_dir, time.perf_counter() - started, args))
        (out / "results.json").write_text(json.dumps(rows, indent=1))
    text = table(rows)
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
