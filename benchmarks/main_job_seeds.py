"""The main job over several seeds: does ``hatch run train`` reach its goal every time?

For each seed, one after another, runs the two commands of the ``train`` script in
``hatch.toml`` as they are written there (the run folder moved into ``--runs``, ``--seed N``
given as the script's ``{args}``): training, then the evaluation of the best checkpoint over
100 fresh episodes. Reports per seed the wall time of training, what the run's final line said
(the evaluation behind its best.pt), and the separate evaluation (mean, median, IQM with its
95% interval, time-outs), then their spread and whether each seed met the goal: an evaluated
mean of at least ``--goal``, at most ``--max-timeouts`` of time-outs, at most ``--max-minutes``
of training, the final line within 10 of the evaluation. Each seed's row is appended to
``OUT/results.jsonl`` when known and seeds already there are skipped, so a study can be done in
several sittings; ``OUT/seeds.png`` plots the evaluated means against the goal.

Not part of CI. Run on an otherwise idle machine, from the repository root:

    hatch run python benchmarks/main_job_seeds.py [--seeds 0 1 ... 9] [--out runs/main_job_seeds]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parents[1]
MAIN_RUN_DIR = "runs/basic"
AGREEMENT = 10.0
"""How far the run's final line may be from the separate evaluation (the project's promise)."""
DONE = re.compile(r"mean (-?[\d.]+), median (-?[\d.]+), IQM (-?[\d.]+)")


def main_job() -> list[str]:
    """The ``train`` script of ``hatch.toml``'s default env: the main job's commands."""
    config = tomllib.loads((ROOT / "hatch.toml").read_text())
    return list(config["envs"]["default"]["scripts"]["train"])


def command_for(template: str, run_dir: Path, seed: int, extra: str = "") -> list[str]:
    """One of the main job's commands for ``seed``, in ``run_dir``, run by this Python, with
    ``extra`` flags where the script passes its arguments."""
    args = f"--seed {seed} {extra}".strip()
    text = template.replace(MAIN_RUN_DIR, str(run_dir)).replace("{args}", args)
    words = shlex.split(text)
    if words[0] != "sf-train":
        raise SystemExit(f"the main job's command {template!r} no longer starts with sf-train")
    return [sys.executable, "-m", "sf_train.cli", *words[1:]]


def run_seed(seed: int, runs: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Trains and evaluates one seed as the main job does (with ``args.train_args``, and the
    separate evaluation over ``args.episodes``); its row."""
    run_dir = runs / f"seed{seed}"
    if run_dir.exists():
        raise SystemExit(f"{run_dir} exists from an unfinished study: remove it to run seed {seed}")
    train, evaluate = main_job()
    started = time.perf_counter()
    trained = subprocess.run(
        command_for(train, run_dir, seed, args.train_args),
        check=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # the done line is logged, on stderr
    ).stdout
    wall = time.perf_counter() - started
    done = DONE.search(trained.rsplit("done:", 1)[-1])
    if done is None:
        raise SystemExit(f"seed {seed}: the run printed no evaluation of its best.pt:\n{trained}")
    evaluated = json.loads(
        subprocess.run(
            [*command_for(evaluate, run_dir, seed), "--episodes", str(args.episodes), "--json"],
            check=True,
            text=True,
            stdout=subprocess.PIPE,
        ).stdout
    )
    return {
        "seed": seed,
        "date": time.strftime("%Y-%m-%d"),
        "train_args": args.train_args,
        "train_seconds": wall,
        "printed_mean": float(done.group(1)),
        "evaluation": evaluated,
    }


def verdict(row: dict[str, Any], args: argparse.Namespace) -> list[str]:
    """The goals a seed missed (none: it met them all)."""
    e = row["evaluation"]
    missed = []
    if e["return_mean"] < args.goal:
        missed.append(f"mean {e['return_mean']:.1f} < {args.goal:g}")
    if e["timeout_fraction"] > args.max_timeouts:
        missed.append(f"{100 * e['timeout_fraction']:.0f}% time-outs")
    if row["train_seconds"] > 60 * args.max_minutes:
        missed.append(f"{row['train_seconds']:.0f} s of training")
    if abs(row["printed_mean"] - e["return_mean"]) > AGREEMENT:
        missed.append(f"printed {row['printed_mean']:.1f}, evaluated {e['return_mean']:.1f}")
    return missed


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "| seed | training s | printed mean | evaluated mean | median | IQM [95% CI] | time-outs "
        "| goal |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        e = row["evaluation"]
        low, high = e["return_iqm_ci"]
        missed = verdict(row, args)
        lines.append(
            f"| {row['seed']} | {row['train_seconds']:.0f} | {row['printed_mean']:.1f} "
            f"| {e['return_mean']:.1f} | {e['return_median']:.1f} "
            f"| {e['return_iqm']:.1f} [{low:.1f}, {high:.1f}] "
            f"| {100 * e['timeout_fraction']:.0f}% | {'met' if not missed else '; '.join(missed)} |"
        )
    means = sorted(r["evaluation"]["return_mean"] for r in rows)
    seconds = sorted(r["train_seconds"] for r in rows)
    met = sum(not verdict(r, args) for r in rows)
    lines.append("")
    lines.append(
        f"{len(rows)} seeds: evaluated mean {means[0]:.1f}-{means[-1]:.1f} (median "
        f"{means[len(means) // 2]:.1f}), training {seconds[0]:.0f}-{seconds[-1]:.0f} s; "
        f"{met} of {len(rows)} met the goal"
    )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], args: argparse.Namespace, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3))
    seeds = [r["seed"] for r in rows]
    iqm = [r["evaluation"]["return_iqm"] for r in rows]
    low = [i - r["evaluation"]["return_iqm_ci"][0] for i, r in zip(iqm, rows, strict=True)]
    high = [r["evaluation"]["return_iqm_ci"][1] - i for i, r in zip(iqm, rows, strict=True)]
    ax.errorbar(seeds, iqm, yerr=[low, high], fmt="o", capsize=3, label="IQM, 95% CI")
    ax.plot(seeds, [r["evaluation"]["return_mean"] for r in rows], "x", label="mean")
    ax.axhline(args.goal, color="C3", ls="--", label=f"goal {args.goal:g}")
    ax.set_xlabel("seed")
    ax.set_ylabel("evaluated return, 100 episodes")
    ax.set_xticks(seeds)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--goal", type=float, default=75.0, help="evaluated mean to reach")
    parser.add_argument("--max-timeouts", type=float, default=0.01, help="share of episodes")
    parser.add_argument("--max-minutes", type=float, default=3.0, help="training wall time")
    parser.add_argument("--out", type=Path, default=Path("runs/main_job_seeds"))
    parser.add_argument(
        "--train-args",
        default="",
        help="flags added to the training command, to try a change before it goes into the "
        "main job, e.g. --train-args='--frames 800000'",
    )
    parser.add_argument(
        "--episodes", type=int, default=100, help="episodes of the separate evaluation"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.jsonl"
    rows = (
        [json.loads(line) for line in results.read_text().splitlines()] if results.exists() else []
    )
    done = {r["seed"] for r in rows}
    for seed in args.seeds:
        if seed in done:
            print(f"seed {seed}: done already ({results}), skipped")
            continue
        print(f"seed {seed}: training", flush=True)
        row = run_seed(seed, args.out / "runs", args)
        with results.open("a") as f:
            f.write(json.dumps(row) + "\n")
        rows.append(row)
        print(report([row], args).splitlines()[2], flush=True)
    rows = sorted((r for r in rows if r["seed"] in args.seeds), key=lambda r: r["seed"])
    if rows:
        print(report(rows, args))
        plot(rows, args, args.out / "seeds.png")


if __name__ == "__main__":
    main()
