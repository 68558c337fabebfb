"""Experiment tracking with Weights & Biases (``--wandb``), offline: the W&B run holds what
TensorBoard holds (same tags, steps and values), the config and the evaluations; it is finished
however training ends, W&B's service process with it; and without ``--wandb`` wandb is never
imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import support
from support.owner import descendants
from support.wandb_runs import offline_runs, tensorboard_scalars, wandb_test_env

from sf_train.cli import main
from sf_train.run.trainer import train


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch) -> None:
    """W&B offline, quiet, its own folders in tmp_path; the run's folder is left to sf-train."""
    for name in [n for n in os.environ if n.startswith("WANDB_")]:
        monkeypatch.delenv(name)
    for name, value in wandb_test_env(tmp_path).items():
        monkeypatch.setenv(name, value)


def _new_processes(before: set[int]) -> list[int]:
    return sorted(set(descendants(os.getpid())) - before)


def test_a_tracked_run_logs_what_tensorboard_logs(tmp_path, toy_flags, offline_wandb, capsys):
    run = tmp_path / "toy"
    before = set(descendants(os.getpid()))
    flags = ["--run-dir", str(run), "--frames", "512", "--checkpoint-every", "256"]
    flags += ["--eval-episodes", "4", "--eval-share", "1"]  # every checkpoint evaluated
    assert main(["train", *toy_flags, *flags, "--wandb"]) == 0
    assert not _new_processes(before), "a W&B process outlived the run"
    (tracked,) = offline_runs(run / "wandb")  # inside the run folder, named after it
    assert (tracked.name, tracked.group, tracked.job_type) == ("toy", "toy", "train")
    assert tracked.exit_code == 0
    assert tracked.config == json.loads((run / "config.json").read_text())
    assert tracked.config["run"]["wandb"] is True
    scalars = tensorboard_scalars(run)
    assert {"charts/SPS", "losses/entropy", "eval/return_mean"} <= scalars.keys()
    assert tracked.scalars.keys() == scalars.keys()
    for tag, series in scalars.items():
        steps, values = zip(*tracked.scalars[tag], strict=True)
        assert [s for s, _ in series] == list(steps), tag
        # TensorBoard keeps float32.
        assert [v for _, v in series] == np.float32(values).tolist(), tag
    assert tracked.texts["hyperparameters"][0][0] == 0
    # One table per evaluation, of every evaluation so far (two checkpoints, two evaluations).
    evaluations = [step for step, _ in scalars["eval/return_mean"]]
    assert len(evaluations) == 2
    tables = tracked.media["eval/summaries"]
    assert [(step, table["_type"]) for step, table in tables] == [
        (step, "table-file") for step in evaluations
    ]
    content = json.loads((tracked.folder / "files" / tables[-1][1]["path"]).read_text())
    column = content["columns"].index("return_mean")
    assert [row[0] for row in content["data"]] == evaluations
    assert [row[column] for row in content["data"]] == pytest.approx(
        [v for _, v in scalars["eval/return_mean"]], rel=1e-6
    )


def test_a_resumed_run_is_a_new_w_and_b_run_of_the_same_group(tmp_path, toy_flags, offline_wandb):
    run = tmp_path / "toy"
    flags = ["--run-dir", str(run), "--eval-episodes", "0"]
    assert main(["train", *toy_flags, *flags, "--frames", "256", "--wandb"]) == 0
    assert main(["train", *flags, "--frames", "512", "--resume"]) == 0  # --wandb is saved
    first, second = offline_runs(run / "wandb")
    assert first.group == second.group == "toy"
    # The second session goes on from the first one's final checkpoint.
    last = max(step for step, _ in first.scalars["charts/SPS"])
    assert min(step for step, _ in second.scalars["charts/SPS"]) > last


def test_an_interrupted_run_finishes_its_w_and_b_run(toy_config, offline_wandb):
    """Ctrl-C while training: the W&B run is finished, marked failed, and nothing is left."""
    cfg = toy_config(frames=100_000, eval_episodes=0, wandb=True)
    before = set(descendants(os.getpid()))

    def interrupt(progress) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, on_progress=interrupt)
    assert not _new_processes(before), "a W&B process outlived the run"
    (tracked,) = offline_runs(Path(cfg.run.run_dir) / "wandb")
    assert tracked.exit_code == 1
    assert "perf/dropped_frames" in tracked.scalars  # logged before the first progress report


def test_wandb_variables_outrank_the_run_folders_defaults(
    tmp_path, toy_config, offline_wandb, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("WANDB_DIR", str(elsewhere))
    monkeypatch.setenv("WANDB_NAME", "named")
    monkeypatch.setenv("WANDB_PROJECT", "proj")
    cfg = toy_config(frames=256, eval_episodes=0, wandb=True)
    train(cfg)
    assert not (Path(cfg.run.run_dir) / "wandb").exists()
    (tracked,) = offline_runs(elsewhere / "wandb")
    assert tracked.name == "named"


def test_enjoy_logs_its_video_to_a_run_of_the_same_group(tmp_path, toy_flags, offline_wandb):
    run = tmp_path / "toy"
    flags = ["--run-dir", str(run), "--frames", "256", "--eval-episodes", "0"]
    assert main(["train", *toy_flags, *flags]) == 0
    assert not (run / "wandb").exists()
    assert main(["enjoy", str(run), "--out", str(tmp_path / "agent.gif"), "--wandb"]) == 0
    (tracked,) = offline_runs(run / "wandb")
    assert (tracked.group, tracked.job_type, tracked.exit_code) == ("toy", "enjoy", 0)
    ((_, video),) = tracked.media["enjoy/video"]
    assert video["_type"] == "video-file" and video["path"].endswith(".gif")
    assert (tracked.folder / "files" / video["path"]).is_file()


def test_without_wandb_installed_the_error_names_the_fix(tmp_path, toy_flags, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    run = tmp_path / "toy"
    assert main(["train", *toy_flags, "--run-dir", str(run), "--frames", "256", "--wandb"]) == 2
    assert "pip install 'sf-train[wandb]'" in capsys.readouterr().err
    assert not (run / "config.json").exists()  # refused before the run folder is made
    gif = tmp_path / "agent.gif"
    assert main(["enjoy", str(run), "--out", str(gif), "--wandb"]) == 2
    assert "pip install 'sf-train[wandb]'" in capsys.readouterr().err


def test_the_flag_is_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--wandb" in capsys.readouterr().out


def test_a_run_without_wandb_never_imports_it(tmp_path, toy_flags):
    """In a fresh interpreter, as a user runs it: training and recording a video import
    nothing of wandb."""
    code = (
        "import json, sys\n"
        "from sf_train.cli import main\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    assert main(argv) == 0, argv\n"
        "assert 'wandb' not in sys.modules, 'wandb was imported'\n"
    )
    run = str(tmp_path / "toy")
    commands = [
        ["train", *toy_flags, "--run-dir", run, "--frames", "256", "--eval-episodes", "2"],
        ["enjoy", run, "--out", str(tmp_path / "agent.gif")],
    ]
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(commands)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(support.__file__).parent.parent)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
