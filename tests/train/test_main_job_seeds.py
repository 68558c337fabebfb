"""A tiny main-job study: hatch.toml's ``train`` commands, shortened by ``--train-args``, over
one seed (real Doom), its row read from what the run printed and the evaluation's JSON,
appended, then skipped on a second call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "main_job_seeds.py"
TINY = "--frames 4096 --num-envs 4 --batch-size 4 --eval-episodes 4"


def _study(out: Path) -> str:
    command = [sys.executable, str(SCRIPT), "--seeds", "3", "--out", str(out)]
    command += ["--episodes", "4", f"--train-args={TINY}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_a_main_job_study_trains_evaluates_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "study"
    printed = _study(out)
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["seed"] == 3 and row["train_args"] == TINY
    assert row["evaluation"]["episodes"] == 4 and row["evaluation"]["greedy"]
    assert -400 < row["printed_mean"] < 110  # read from the run's done line
    assert "| 3 |" in printed and "1 seeds: evaluated mean" in printed
    assert (out / "seeds.png").stat().st_size > 0
    assert "seed 3: done already" in _study(out)
