"""A tiny scoreboard pass: one id trained for seconds, scored, appended, skipped on a second
call, evaluated again, then (training replaced by a stand-in) scored again in place."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scoreboard.py"


def test_a_scoreboard_pass_scores_one_id_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "board"
    command = [sys.executable, str(SCRIPT), "--ids", "sf/DoomBasic-v0", "--minutes", "0.05"]
    command += ["--episodes", "4", "--out", str(out), "--runs", str(tmp_path / "runs")]
    subprocess.run(command, check=True, timeout=600)
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["env"] == "sf/DoomBasic-v0" and row["frames"] > 0
    assert row["best"]["episodes"] == 4 and row["random"]["episodes"] == 4
    low, high = row["best"]["return_iqm_ci"]
    assert low <= row["best"]["return_iqm"] <= high
    assert row["entropy"] is not None and 0 <= row["eval_share"] <= 1
    assert Path(row["gif"]).stat().st_size > 0
    table = (out / "scoreboard.md").read_text()
    assert "`sf/DoomBasic-v0`" in table and (out / "scoreboard.png").stat().st_size > 0
    again = subprocess.run(command, check=True, timeout=600, capture_output=True, text=True)
    assert "scored already" in again.stdout
    assert len((out / "results.jsonl").read_text().splitlines()) == 1
    # Evaluated again from its run (here over 8 episodes): the training's figures stay.
    command[command.index("--episodes") + 1] = "8"
    subprocess.run([*command, "--reevaluate", "--no-gif"], check=True, timeout=600)
    (again_row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert again_row["best"]["episodes"] == 8 and again_row["random"]["episodes"] == 8
    assert again_row["frames"] == row["frames"] and again_row["date"] == row["date"]
    # Scored again (a new budget or preset): its row replaced, not added. Training and scoring
    # an id is what the first pass did; here a stand-in scores it, in this process.
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # as `python benchmarks/scoreboard.py` has
    spec = importlib.util.spec_from_file_location("scoreboard", SCRIPT)
    assert spec is not None and spec.loader is not None
    scoreboard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scoreboard)
    monkeypatch.setattr(scoreboard, "score_id", lambda env_id, args: {**row, "wall_seconds": -1.0})
    scoreboard.main([*command[2:], "--rescore", "--no-gif"])
    (rescored,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert rescored["wall_seconds"] == -1.0
