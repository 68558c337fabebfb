"""The scoreboard: sf-train on every Doom id, each for a fixed wall budget on this machine.

For each id, one at a time: ``sf-train train --env ID --seconds BUDGET`` as a user runs it
(the id's preset and the defaults), then ``sf-train eval --checkpoint best`` over
``--episodes`` episodes (every env an equal share), a uniformly random policy over as many
episodes in the same units, the final entropy of the policy (from its TensorBoard events), the
share of wall time its in-training evaluations took, and a GIF of the best checkpoint
(``sf-train enjoy``). Each id's result is appended to ``OUT/results.jsonl`` as soon as it is
known, and ids already there are skipped (or, with ``--reevaluate``, evaluated again from
their runs, when the way of evaluating changed), so a full pass can be done in several sittings;
``OUT/scoreboard.md`` (the table) and ``OUT/scoreboard.png`` (IQM with its 95% interval against
the random policy and the reference, where one is known) are written from all the results.

    python benchmarks/scoreboard.py                                  # every id, 10 minutes each
    python benchmarks/scoreboard.py --ids sf/DoomBasic-v0 --minutes 2 --out runs/scoreboard
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import time
from pathlib import Path
from typing import Any

from common.policies import evaluate_best, random_policy, sf_train

import sf_envs
from sf_train.run.checkpoint import load_checkpoint
from sf_train.run.folder import find_checkpoint

ROOT = Path(__file__).resolve().parents[1]
GIF_FRAMES = 180
"""Frames of a GIF at most (:func:`thin_gif`)."""

#: Scores published or measured by a peer for the same task, in the env's own units, and where
#: they come from. Only figures measured in these units belong here: Sample Factory's Doom envs
#: report the engine's reward times their ``reward_scaling`` (0.01 on basic and
#: deadly_corridor, 1 elsewhere), so their published means are divided by it; its
#: health_gathering and battle envs train on a shaped reward, and it has no take_cover or
#: predict_position env, so those ids have no reference.
_SF2 = "Sample Factory 2.0 APPO, Hugging Face model edbeeching/{}_1111 (trained far longer)"
REFERENCES: dict[str, tuple[float, str]] = {
    "sf/DoomBasic-v0": (0.75 / 0.01, _SF2.format("doom_basic")),
    "sf/DoomDefendTheCenter-v0": (24.67, _SF2.format("doom_defend_the_center")),
    "sf/DoomDefendTheLine-v0": (34.67, _SF2.format("doom_defend_the_line")),
    "sf/DoomMyWayHome-v0": (0.98, _SF2.format("doom_my_way_home")),
    "sf/DoomDeadlyCorridor-v0": (17.08 / 0.01, _SF2.format("doom_deadly_corridor")),
}


def _last_scalar(run_dir: Path, tag: str) -> float | None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0}).Reload()
    if tag not in acc.Tags()["scalars"]:
        return None
    return float(acc.Scalars(tag)[-1].value)


def short_name(env_id: str) -> str:
    """``sf/DoomBasic-v0`` -> ``DoomBasic``: the name of an id's run folder and GIF."""
    return env_id.removeprefix("sf/").removesuffix("-v0")


def score_id(env_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """Trains, evaluates and films one id; the scoreboard's row for it."""
    name = short_name(env_id)
    run_dir = Path(args.runs) / name
    if run_dir.exists():
        raise SystemExit(f"{run_dir} exists from an unfinished pass: remove it to score {env_id}")
    started = time.perf_counter()
    train = ["train", "--env", env_id, "--run-dir", str(run_dir), "--frames", str(10**12)]
    train += ["--seconds", str(args.minutes * 60), "--seed", str(args.seed)]
    log = sf_train(*train, logs=True)
    wall = time.perf_counter() - started
    (run_dir / "train.log").write_text(log)
    gif = Path(args.out) / "gifs" / f"{name}.gif"
    if not args.no_gif:
        gif.parent.mkdir(parents=True, exist_ok=True)
        sf_train("enjoy", str(run_dir), "--out", str(gif), "--checkpoint", "best")
        thin_gif(gif)
    return {
        "env": env_id,
        "date": time.strftime("%Y-%m-%d"),
        "commit": _commit(),
        "minutes": args.minutes,
        "wall_seconds": wall,
        "frames": _frames_of(run_dir),
        "eval_share": _eval_share(log, wall),
        "entropy": _last_scalar(run_dir, "losses/entropy"),
        **evaluate_id(run_dir, args),
        "gif": None if args.no_gif else str(gif),
    }


def evaluate_id(run_dir: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The row's evaluations: the best checkpoint's and the random policy's."""
    evaluated = evaluate_best(run_dir, args.episodes)
    random = random_policy(run_dir, args.episodes, seed=args.seed + 1)
    return {"best": evaluated, "random": random, "evaluated_commit": _commit()}


def thin_gif(path: Path, max_frames: int = GIF_FRAMES) -> None:
    """Keeps every k-th frame of a long GIF, each shown k times as long, so that a whole
    episode plays at its real speed in at most ``max_frames`` frames (a few MB less per id
    in the docs)."""
    from PIL import Image

    with Image.open(path) as gif:
        n = gif.n_frames
        step = math.ceil(n / max_frames)
        if step <= 1:
            return
        duration = gif.info.get("duration", 100) * step
        frames = []
        for i in range(0, n, step):
            gif.seek(i)
            frames.append(gif.convert("RGB"))
    tmp = path.with_suffix(".tmp.gif")
    frames[0].save(tmp, save_all=True, append_images=frames[1:], duration=duration, loop=0)
    tmp.replace(path)


def _commit() -> str:
    """The checked-out commit of the code that scored (with ``+`` if the tree has changes)."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], text=True, capture_output=True, cwd=ROOT
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        text=True,
        capture_output=True,
        cwd=ROOT,
    ).stdout.strip()
    return head + ("+" if dirty else "")


def _frames_of(run_dir: Path) -> int:
    """Frames trained, as the run's latest checkpoint records them."""
    return int(load_checkpoint(find_checkpoint(run_dir, "latest"))["frames"])


def _eval_share(log: str, wall: float) -> float | None:
    """The run's own account of its evaluations (its last log line about them)."""
    for line in reversed(log.splitlines()):
        if "evaluating checkpoints took" in line:
            return float(line.split("took", 1)[1].split(" s,", 1)[0]) / wall
    return None


def _interval(summary: dict[str, Any]) -> str:
    low, high = summary["return_iqm_ci"]
    return f"{summary['return_iqm']:.1f} [{low:.1f}, {high:.1f}]"


def normalised(r: dict[str, Any]) -> tuple[float, float, float] | None:
    """The IQM and its interval between the random policy's mean (0) and the reference (1);
    None without a reference."""
    reference = REFERENCES.get(r["env"])
    if reference is None:
        return None
    floor = r["random"]["return_mean"]
    span = reference[0] - floor
    low, high = r["best"]["return_iqm_ci"]
    return tuple((x - floor) / span for x in (r["best"]["return_iqm"], low, high))  # type: ignore[return-value]


def write_table(results: list[dict[str, Any]], out: Path) -> None:
    lines = [
        "| id | minutes | frames | IQM [95% CI] | mean | time-outs | length | random mean "
        "| random length | reference | normalised IQM | entropy | eval share |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        reference = REFERENCES.get(r["env"])
        ref = "-" if reference is None else f"{reference[0]:g}"
        norm = normalised(r)
        share = "-" if r["eval_share"] is None else f"{100 * r['eval_share']:.1f}%"
        entropy = "-" if r["entropy"] is None else f"{r['entropy']:.3f}"
        best, random = r["best"], r["random"]
        lines.append(
            f"| `{r['env']}` | {r['minutes']:g} | {r['frames']:,} | {_interval(best)} "
            f"| {best['return_mean']:.1f} | {100 * best['timeout_fraction']:.0f}% "
            f"| {best['length_mean']:.0f} | {random['return_mean']:.1f} "
            f"| {random['length_mean']:.0f} | {ref} "
            f"| {'-' if norm is None else f'{norm[0]:.2f} [{norm[1]:.2f}, {norm[2]:.2f}]'} "
            f"| {entropy} | {share} |"
        )
    sources = sorted({source for env, (_, source) in REFERENCES.items()})
    lines += ["", "References: " + "; ".join(sources) + "."]
    (out / "scoreboard.md").write_text("\n".join(lines) + "\n")


def write_plot(results: list[dict[str, Any]], out: Path) -> None:
    """``scoreboard.png``: each id's IQM against the random policy's and the reference;
    ``scoreboard_normalised.png``: the ids with a reference on one scale (random 0, reference 1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(4, len(results))
    rows = math.ceil(len(results) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.6 * rows), squeeze=False)
    for ax in axes.flat[len(results) :]:
        ax.axis("off")
    for ax, r in zip(axes.flat, results, strict=False):
        low, high = r["best"]["return_iqm_ci"]
        iqm = r["best"]["return_iqm"]
        ax.bar(["random", "sf-train"], [r["random"]["return_iqm"], iqm], color=["0.7", "C0"])
        ax.errorbar([1], [iqm], yerr=[[iqm - low], [high - iqm]], color="k", capsize=4)
        reference = REFERENCES.get(r["env"])
        if reference is not None:
            ax.axhline(reference[0], color="C3", ls="--", label="reference")
            ax.legend(fontsize=7)
        ax.set_title(r["env"].removeprefix("sf/"), fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"IQM of {results[0]['best']['episodes']} evaluation episodes, 95% CI", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "scoreboard.png", dpi=110)
    plt.close(fig)

    scored = [(r["env"].removeprefix("sf/"), normalised(r)) for r in results]
    scored = [(name, n) for name, n in scored if n is not None]
    if not scored:
        return
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(scored) + 1))
    y = range(len(scored))
    values = [n[0] for _, n in scored]
    errors = [[n[0] - n[1] for _, n in scored], [n[2] - n[0] for _, n in scored]]
    ax.barh(list(y), values, xerr=errors, color="C0", capsize=3)
    ax.axvline(0, color="0.5", lw=1)
    ax.axvline(1, color="C3", ls="--", lw=1, label="reference")
    ax.set_yticks(list(y), [name for name, _ in scored], fontsize=8)
    ax.set_xlabel("IQM normalised: random policy 0, reference 1 (95% CI)", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "scoreboard_normalised.png", dpi=110)
    plt.close(fig)


def _write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Rewrites the results file atomically (a rename over it)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--ids",
        nargs="+",
        default=sf_envs.env_ids() + sf_envs.match_env_ids(),
        help="ids to score (default: every single-player id and the one-agent match ids)",
    )
    parser.add_argument("--minutes", type=float, default=10.0, help="training budget per id")
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/scoreboard", help="results, table, PNG, GIFs")
    parser.add_argument("--runs", default="runs/scoreboard/runs", help="the training runs")
    parser.add_argument("--no-gif", action="store_true", help="skip the GIFs")
    parser.add_argument(
        "--reevaluate",
        action="store_true",
        help="evaluate the ids scored already again (best checkpoint and random policy) with "
        "this code, keeping their training; for a change in how evaluations are made",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="train and score the ids scored already again, replacing their rows; for a new "
        "preset or budget (their old runs in --runs must be removed first)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.jsonl"
    lines = results_file.read_text().splitlines() if results_file.exists() else []
    results = [json.loads(line) for line in lines if line.strip()]
    done = {r["env"] for r in results}
    for env_id in args.ids:
        if env_id in done and args.reevaluate:
            (row,) = (r for r in results if r["env"] == env_id)
            print(f"{env_id}: evaluating again", flush=True)
            row.update(evaluate_id(Path(args.runs) / short_name(env_id), args))
            _write_rows(results, results_file)
            continue
        if env_id in done and not args.rescore:
            print(f"{env_id}: scored already ({results_file}), skipped")
            continue
        print(f"{env_id}: training for {args.minutes:g} min", flush=True)
        row = score_id(env_id, args)
        results = [r for r in results if r["env"] != env_id] + [row]
        _write_rows(results, results_file)
        print(
            f"{env_id}: IQM {_interval(row['best'])}, random mean "
            f"{row['random']['return_mean']:.1f}, entropy {row['entropy']}",
            flush=True,
        )
    if results:
        write_table(results, out)
        write_plot(results, out)
        print(f"table: {out / 'scoreboard.md'}, plot: {out / 'scoreboard.png'}")
    print(f"{len(results)} ids scored in {results_file}")


if __name__ == "__main__":
    main()
