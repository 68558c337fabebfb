"""Several runs of ``sample_factory.py`` on one plot and in one table: variants of a contender
(``--c-args``) or reruns, each from its own ``--out`` folder, compared by their evaluated
checkpoints.

    hatch run python benchmarks/peers/overlay.py --scenario battle \\
        --runs runs/exp/lr3 runs/exp/skl --out docs/benchmarks/sittings/battle_variants.png

Writes the PNG (the scenario's score against wall time and frames, one line per run and
contender) and prints a markdown table of every checkpoint's score.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for common
from common.peers_report import METRICS, Point, plot


def load(folder: Path, scenario: str) -> dict[str, tuple[str, list[Point]]]:
    """The contenders of ``scenario`` in one run folder: ``folder/key`` -> label and points."""
    results = folder / "results.json"
    if not results.is_file():
        raise SystemExit(f"{results} does not exist: pass the --out folder of a finished run")
    entries = json.loads(results.read_text())["scenarios"].get(scenario)
    if entries is None:
        raise SystemExit(f"{results} has no {scenario!r} scenario: pick it with --scenario")
    names = {f.name for f in fields(Point)}
    curves = {}
    for key, entry in entries.items():
        points = [Point(**{k: v for k, v in p.items() if k in names}) for p in entry["checkpoints"]]
        curves[f"{folder.name}/{key}"] = (entry["summary"]["label"], points)
    return curves


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", type=Path, required=True, help="--out folders")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--title", default=None)
    args = parser.parse_args(argv)
    metric = "kills" if args.scenario == "battle" else "return"
    curves = {}
    for folder in args.runs:
        curves.update(load(folder, args.scenario))
    plot(args.title or f"{args.scenario}: variants", curves, None, args.out, metric)
    print(f"| run | contender | evaluated {METRICS[metric]} at frames (M) |")
    print("|---|---|---|")
    for key, (label, points) in curves.items():
        cells = ", ".join(
            f"{p.frames / 1e6:.2f}: {statistics.fmean(p.scores(metric)):.2f}" for p in points
        )
        print(f"| {key} | {label} | {cells} |")


if __name__ == "__main__":
    main()
