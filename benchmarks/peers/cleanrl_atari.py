"""CleanRL's ``ppo_atari_envpool.py`` (its file untouched, in a venv of its own) trained on this
machine and evaluated as sf-train's Atari runs are: whole games of raw score, sampled actions,
an equal share of games per env, the mean and the IQM with its 95% bootstrap interval.

CleanRL saves no weights and has no evaluation of its own; ``cleanrl_runner.py`` runs the
script as its documentation does (``python ppo_atari_envpool.py --env-id Pong-v5``, all its
defaults: 10M agent steps, the learning rate decaying over them) and keeps its agent's weights
when its frame count first reaches each of ``--frames`` (then stops after the last), with the
wall time since its start; every kept agent then plays ``--episodes`` fresh games (EnvPool
seeds apart from training's). So the frames and seconds sf-train takes to a score (``learning.py``)
compare with CleanRL's at the same frames on the same machine.

The script comes from CleanRL's repository (``git clone https://github.com/vwxyzjn/cleanrl``,
``cleanrl/ppo_atari_envpool.py``; commit fe8d8a0 was measured): pass it with ``--script`` or
put it at the default path (``~/.cache/sf/peers/cleanrl/``). The venv (default
``~/.cache/sf/peers/cleanrl-venv``) is made on first
use with python3.11: the CPU torch wheel and the nearest EnvPool that installs here with the
gym it needs. Not part of CI; run on an otherwise idle machine, from the repository root:

    hatch run python benchmarks/peers/cleanrl_atari.py --env-id Pong-v5 \\
        --frames 2000000 4000000 6000000 --episodes 30 --out runs/cleanrl_pong \\
        --against runs/pong40/runs/sf_Atari-Pong-v0 --goal 18

It writes ``results.json``, ``results.md`` and ``learning.png`` (beside an sf-train run's
in-training evaluations with ``--against``) in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for common
from common.run_series import read_series
from sf_venv import build_venv, say

from sf_train.scores import task_scores

PEERS = Path.home() / ".cache/sf/peers"
PACKAGES = ("envpool==0.8.4", "gym==0.23.1", "numpy==1.24.4", "tyro", "tensorboard")
RUNNER = Path(__file__).with_name("cleanrl_runner.py")
EVAL_SEED = 10_000
"""EnvPool's seed for the evaluation games; CleanRL trains with seed 1 by default."""


def train(python: Path, script: Path, out: Path, frames: list[int], env_id: str, seed: int) -> None:
    """CleanRL trains until the last of ``frames``; its output goes to ``out/train.log``."""
    command = [str(python), str(RUNNER), "train", str(script), "--out", str(out)]
    command += ["--frames", *map(str, frames), "--", "--env-id", env_id, "--seed", str(seed)]
    say(f"CleanRL trains {env_id} to {max(frames):,} frames (log: {out / 'train.log'})")
    with (out / "train.log").open("w") as log:
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT)


def evaluate(python: Path, script: Path, weights: Path, env_id: str, episodes: int) -> np.ndarray:
    """The raw game scores of ``episodes`` games played by the kept agent."""
    command = [str(python), str(RUNNER), "eval", str(script), "--weights", str(weights)]
    command += ["--env-id", env_id, "--episodes", str(episodes), "--seed", str(EVAL_SEED)]
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    return np.array(json.loads(result.stdout.strip().splitlines()[-1])["scores"])


def summary(scores: np.ndarray) -> dict[str, Any]:
    """Mean and IQM with their 95% intervals, as ``sf-train eval`` reports them."""
    return {"episodes": len(scores), **task_scores(scores), "scores": scores.tolist()}


def table(env_id: str, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"CleanRL `ppo_atari_envpool` on {env_id}, each kept agent over "
        f"{rows[0]['episodes'] if rows else 0} fresh games (raw score, sampled actions)",
        "",
        "| frames | seconds | mean [95% CI] | IQM [95% CI] |",
        "|---:|---:|---|---|",
    ]
    for row in rows:
        low, high = row["return_mean_ci"]
        iqm_low, iqm_high = row["return_iqm_ci"]
        lines.append(
            f"| {row['frames']:,} | {row['seconds']:.0f} | {row['return_mean']:.2f} "
            f"[{low:.2f}, {high:.2f}] | {row['return_iqm']:.2f} [{iqm_low:.2f}, {iqm_high:.2f}] |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], against: Path | None, goal: float | None, out: Path) -> None:
    """CleanRL's evaluated means with their intervals against frames and against seconds,
    beside the in-training evaluations of the sf-train run ``against``."""
    means = np.array([row["return_mean"] for row in rows])
    lows, highs = np.array([row["return_mean_ci"] for row in rows]).T
    points = read_series(against).get("eval/return_mean", []) if against is not None else []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, x in zip(axes, ("frames", "seconds"), strict=True):
        ax.errorbar(
            [row[x] for row in rows],
            means,
            yerr=[means - lows, highs - means],
            fmt="o-",
            capsize=3,
            label=f"CleanRL ppo_atari_envpool ({rows[0]['episodes']} fresh games each)",
        )
        if points:
            ax.plot(
                [f if x == "frames" else t for f, _, t in points],
                [v for _, v, _ in points],
                "s-",
                label="sf-train (in-training evaluations)",
            )
        if goal is not None:
            ax.axhline(goal, color="grey", ls="--", lw=1, label=f"goal {goal:g}")
        ax.set_xlabel(x if x == "frames" else "seconds of training")
        ax.set_ylabel("mean raw game score")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-id", default="Pong-v5", help="EnvPool's id, as CleanRL takes it")
    parser.add_argument("--frames", type=int, nargs="+", required=True)
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1, help="CleanRL's --seed (its default)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--script", type=Path, default=PEERS / "cleanrl/ppo_atari_envpool.py")
    parser.add_argument("--venv", type=Path, default=PEERS / "cleanrl-venv")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="no training: the agents a previous run kept in --out, those already evaluated "
        "over --episodes games taken from its results.json",
    )
    parser.add_argument("--against", type=Path, help="an sf-train run dir to plot beside")
    parser.add_argument("--goal", type=float, help="a score to draw as a line")
    args = parser.parse_args(argv)
    if not args.script.is_file():
        raise SystemExit(
            f"{args.script} not found: get CleanRL's ppo_atari_envpool.py (git clone "
            f"https://github.com/vwxyzjn/cleanrl) and pass it with --script"
        )
    python = build_venv(args.venv, "CleanRL", PACKAGES)
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.reuse:
        train(python, args.script, args.out, args.frames, args.env_id, args.seed)
    results = args.out / "results.json"
    previous = json.loads(results.read_text()) if args.reuse and results.exists() else []
    done = {row["frames"]: row for row in previous}
    rows = []
    for kept in json.loads((args.out / "kept.json").read_text()):
        if done.get(kept["frames"], {}).get("episodes") == args.episodes:
            rows.append(done[kept["frames"]])
            continue
        say(f"evaluating CleanRL's agent at {kept['frames']:,} frames over {args.episodes} games")
        scores = evaluate(python, args.script, Path(kept["weights"]), args.env_id, args.episodes)
        rows.append({**kept, **summary(scores)})
        results.write_text(json.dumps(rows, indent=1))
    (args.out / "results.md").write_text(table(args.env_id, rows))
    plot(rows, args.against, args.goal, args.out / "learning.png")
    sys.stdout.write(table(args.env_id, rows))


if __name__ == "__main__":
    main()
