"""Gymnasium's classic control with sf-train, run as a user runs it, over several seeds.

For each id and seed, one after another: ``sf-train train --env ID --seed N`` (the id's preset
and the defaults, nothing else), then the best checkpoint evaluated over ``--episodes`` fresh
episodes, and a random policy over as many. Prints a Markdown table (id, seed, frames, wall
time of training, evaluated mean, IQM with its 95% interval, random mean) and writes it, with
every result, to ``OUT/results.md`` and ``OUT/results.json``; the goal column says whether the
evaluated mean reached the goal of the id (``GOALS``).

Not part of CI. Run on an otherwise idle machine, from the repository root:

    hatch run python benchmarks/gym_control.py [--ids CartPole-v1 Pendulum-v1] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

from common.policies import evaluate_best, random_policy, sf_train

from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint

GOALS = {"CartPole-v1": 475.0, "Pendulum-v1": -250.0}
"""The evaluated mean each id must reach (issue 46): CartPole's solved threshold, and for
Pendulum about where a well-tuned PPO ends (a random policy: -1230)."""


def run_one(env_id: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    run_dir = Path(args.out) / "runs" / f"{env_id}-{seed}"
    shutil.rmtree(run_dir, ignore_errors=True)
    started = time.perf_counter()
    sf_train("train", "--env", env_id, "--run-dir", str(run_dir), "--seed", str(seed))
    wall = time.perf_counter() - started
    best = evaluate_best(run_dir, args.episodes)
    return {
        "env": env_id,
        "seed": seed,
        "wall_seconds": wall,
        "frames": int(load_checkpoint(find_checkpoint(run_dir, "best"))["frames"]),
        "best": best,
        "random": random_policy(run_dir, args.episodes, seed=seed + 1000),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| id | seed | frames | training | evaluated mean | IQM [95% CI] | random mean | goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        b = r["best"]
        low, high = b["return_iqm_ci"]
        goal = GOALS.get(r["env"])
        met = "-" if goal is None else ("met" if b["return_mean"] >= goal else "missed")
        lines.append(
            f"| `{r['env']}` | {r['seed']} | {r['frames']:,} | {r['wall_seconds']:.0f} s | "
            f"{b['return_mean']:.1f} | {b['return_iqm']:.1f} [{low:.1f}, {high:.1f}] | "
            f"{r['random']['return_mean']:.1f} | {met} (>= {goal:g}) |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", nargs="+", default=list(GOALS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--out", default="runs/gym_control")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for env_id in args.ids:
        for seed in args.seeds:
            print(f"{env_id} seed {seed}: training", flush=True)
            rows.append(run_one(env_id, seed, args))
            (out / "results.json").write_text(json.dumps(rows, indent=1))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    text = table(rows)
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
