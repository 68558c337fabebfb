"""How long an id takes to learn: sf-train as a user runs it, for a long wall budget.

For each id: ``sf-train train --env ID`` (the id's preset; any extra sf-train flags after
``--``) for ``--seconds`` of wall time, then its best checkpoint evaluated over ``--episodes``
fresh episodes (whole games on Atari, scored raw), and a random policy over as many. Writes
``OUT/results.json``, a Markdown table in ``OUT/results.md`` (frames, wall time, evaluated
mean, IQM with its 95% interval, random mean, the frames and seconds at which an in-training
evaluation first met the goal), and ``OUT/<id>.png``: the training return and the in-training
evaluations against frames. The goal is an evaluated mean return (``--goal 18``), or with
``--goal-timeouts`` a share of time-outs at most (on a task whose episodes end early only at
their goal, such as my_way_home's vest, ``--goal-timeouts 0.2`` is "the goal in 80% of the
episodes"). ``--reuse RUN_DIR`` scores a finished run instead of training one. A run longer
than one sitting (Atari's 40M frames) goes in ``--sitting SECONDS`` slices: each trains on
toward the preset's frame budget and stops as Ctrl-C stops a run, the next resumes it; the
seconds reported count training sessions only.

Not part of CI. Run on an otherwise idle machine, from the repository root:

    hatch run python benchmarks/learning.py --ids sf/Atari-Pong-v0 --seconds 6000 \\
        --goal 18 -- --precision bfloat16
    hatch run python benchmarks/learning.py --ids sf/DoomMyWayHome-v0 --seconds 3600 \\
        --goal-timeouts 0.2 --episodes 100
    hatch run python benchmarks/learning.py --ids sf/Atari-Pong-v0 --sitting 3000 --goal 18 \\
        --out runs/pong -- --precision bfloat16   # again in each sitting
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from common.policies import SF_TRAIN, evaluate_best, random_policy, sf_train
from common.run_series import Series, read_series
from common.supervise import run_for

from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint

FINAL_SECONDS = 900.0
"""What a stopped sitting may take for its final checkpoint and evaluation before it is
stopped harder (and loses them)."""


def sitting(env_id: str, run_dir: Path, args: argparse.Namespace) -> None:
    """One sitting of a run: ``sf-train train`` (resumed where a sitting ran before) stopped
    after ``args.sitting`` seconds as Ctrl-C stops it, with a final checkpoint and its
    evaluation; its log goes to ``OUT/logs/<id>/train.log``."""
    logs = Path(args.out, "logs", run_dir.name)
    logs.mkdir(parents=True, exist_ok=True)
    resume = ["--resume"] if (run_dir / "checkpoints").is_dir() else ["--env", env_id]
    command = [*SF_TRAIN, "train", "--run-dir", str(run_dir.resolve())]
    print(f"{env_id}: a sitting of {args.sitting:.0f} s in {run_dir}", flush=True)
    ran = run_for([*command, *resume, *args.flags], logs, args.sitting, grace=FINAL_SECONDS)
    if ran.exit_code not in (0, None) or find_checkpoint(run_dir, "latest") is None:
        raise RuntimeError(f"{env_id}: the sitting ended without a checkpoint; see {logs}")


def fresh(env_id: str, run_dir: Path, args: argparse.Namespace) -> None:
    """A new run of ``args.seconds``, its learning rate decaying over them."""
    shutil.rmtree(run_dir, ignore_errors=True)
    print(f"{env_id}: training for {args.seconds:.0f} s", flush=True)
    command = ["train", "--env", env_id, "--run-dir", str(run_dir)]
    sf_train(*command, "--seconds", str(args.seconds), *args.flags)


@dataclass(frozen=True)
class Goal:
    """An in-training evaluation's figure to reach: its mean return at least ``value``, or
    with ``timeouts`` its share of time-outs at most ``value``."""

    value: float
    timeouts: bool = False

    @property
    def tag(self) -> str:
        return "eval/timeout_fraction" if self.timeouts else "eval/return_mean"

    def met(self, figure: float) -> bool:
        return figure <= self.value if self.timeouts else figure >= self.value

    def __str__(self) -> str:
        return f"time-outs <= {self.value:.0%}" if self.timeouts else f">= {self.value:g}"


def first_reaching(points: Series, goal: Goal) -> tuple[int, float] | None:
    """(frames, seconds) of the first point that meets ``goal``."""
    for frames, value, seconds in points:
        if goal.met(value):
            return frames, seconds
    return None


def plot(
    env_id: str,
    training: Series,
    evaluations: Series,
    timeouts: Series,
    random: dict[str, Any],
    out: Path,
) -> None:
    """The returns against frames and, beside them, the evaluations' share of time-outs."""
    fig, (ax, share) = plt.subplots(1, 2, figsize=(11, 4))
    ax.plot([f for f, _, _ in training], [v for _, v, _ in training], lw=1, label="training")
    ax.plot(
        [f for f, _, _ in evaluations],
        [v for _, v, _ in evaluations],
        "o-",
        label="in-training evaluation",
    )
    ax.axhline(random["return_mean"], color="grey", ls="--", lw=1, label="random policy")
    ax.set_xlabel("frames")
    ax.set_ylabel("return of an episode (raw)")
    ax.set_title(env_id)
    ax.legend()
    share.plot([f for f, _, _ in timeouts], [100 * v for _, v, _ in timeouts], "o-")
    share.axhline(100 * random["timeout_fraction"], color="grey", ls="--", lw=1)
    share.set_xlabel("frames")
    share.set_ylabel("in-training evaluation: episodes timed out (%)")
    share.set_ylim(-2, 102)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def score(env_id: str, run_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    tags = read_series(run_dir)
    random = random_policy(run_dir, args.episodes, seed=1000)
    plot(
        env_id,
        tags.get("charts/episodic_return", []),
        tags.get("eval/return_mean", []),
        tags.get("eval/timeout_fraction", []),
        random,
        Path(args.out) / f"{env_id.replace('/', '_')}.png",
    )
    goal = args.goal
    return {
        "env": env_id,
        "run_dir": str(run_dir),
        "training_seconds": max((t for _, _, t in tags.get("perf/fps", [])), default=0.0),
        "frames": int(load_checkpoint(find_checkpoint(run_dir, "latest"))["frames"]),
        "best_frames": int(load_checkpoint(find_checkpoint(run_dir, "best"))["frames"]),
        "best": evaluate_best(run_dir, args.episodes),
        "random": random,
        "goal": None if goal is None else str(goal),
        "goal_reached_at": None if goal is None else first_reaching(tags.get(goal.tag, []), goal),
    }


def reached(row: dict[str, Any]) -> str:
    """Where the run's in-training evaluations first met its goal, for the table."""
    if row["goal"] is None:
        return "-"
    if row["goal_reached_at"] is None:
        return "not reached"
    frames, seconds = row["goal_reached_at"]
    return f"{row['goal']} at {frames:,} frames, {seconds:.0f} s"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| id | frames | training | best at | evaluated mean | IQM [95% CI] | time-outs "
        "| random mean | random time-outs | evaluation first at the goal |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["best"]
        low, high = b["return_iqm_ci"]
        lines.append(
            f"| `{r['env']}` | {r['frames']:,} | {r['training_seconds']:.0f} s | "
            f"{r['best_frames']:,} | "
            f"{b['return_mean']:.2f} | {b['return_iqm']:.2f} [{low:.2f}, {high:.2f}] | "
            f"{b['timeout_fraction']:.0%} | {r['random']['return_mean']:.2f} | "
            f"{r['random']['timeout_fraction']:.0%} | {reached(r)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", nargs="+", default=["sf/Atari-Pong-v0"])
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--goal", type=float, help="the evaluated mean return to reach, e.g. 18")
    parser.add_argument(
        "--goal-timeouts",
        type=float,
        help="instead of --goal: the share of evaluation episodes timed out to get down to",
    )
    parser.add_argument(
        "--sitting",
        type=float,
        help="instead of --seconds: train to the preset's frame budget (its learning-rate "
        "schedule) across sittings, this one stopped after SITTING seconds; the next call "
        "resumes the run in --out",
    )
    parser.add_argument("--reuse", type=Path, help="score this finished run of the one id")
    parser.add_argument("--out", default="runs/learning")
    parser.add_argument("flags", nargs="*", help="extra sf-train flags, after --")
    args = parser.parse_args()
    if args.goal is not None and args.goal_timeouts is not None:
        parser.error("--goal and --goal-timeouts are two goals: give one")
    if args.goal_timeouts is not None:
        args.goal = Goal(args.goal_timeouts, timeouts=True)
    elif args.goal is not None:
        args.goal = Goal(args.goal)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for env_id in args.ids:
        run_dir = out / "runs" / env_id.replace("/", "_")
        if args.reuse is not None:
            run_dir = args.reuse
        elif args.sitting is not None:
            sitting(env_id, run_dir, args)
        else:
            fresh(env_id, run_dir, args)
        rows.append(score(env_id, run_dir, args))
        (out / "results.json").write_text(json.dumps(rows, indent=1))
    text = table(rows)
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
