"""`sf-train train` on Doom ended by Ctrl-C or SIGTERM leaves no engine, shared memory or temp
folder behind."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.owner import end_owner

_TINY_DOOM_RUN = [
    "--env",
    "sf/DoomBasic-v0",
    "--num-envs",
    "2",
    "--batch-size",
    "2",
    "--num-workers",
    "1",
    "--obs-size",
    "32",
    "24",
    "--frames",
    "100000000",
    "--num-minibatches",
    "1",
    "--eval-episodes",
    "0",
]


@pytest.mark.parametrize("how", ["sigint", "sigterm"])
def test_an_interrupted_training_run_leaves_nothing_behind(tmp_path: Path, how: str) -> None:
    command = [sys.executable, "-m", "sf_train.cli", "train", *_TINY_DOOM_RUN]
    left = end_owner([*command, "--run-dir", str(tmp_path / "run")], tmp_path, how, 2)
    assert not left, f"left behind after {how} of sf-train: {left}"


@pytest.mark.parametrize("how", ["sigint", "sigkill"])
def test_a_run_with_sampler_processes_leaves_nothing_behind(tmp_path: Path, how: str) -> None:
    """Two sampler processes with 2 envs each: their engines, shared batches and folders go
    with the trainer however it ends (a sampler process notices its trainer is gone)."""
    split = ["--num-envs", "4", "--num-workers", "2", "--num-samplers", "2"]
    command = [sys.executable, "-m", "sf_train.cli", "train", *_TINY_DOOM_RUN, *split]
    left = end_owner([*command, "--run-dir", str(tmp_path / "run")], tmp_path, how, 4)
    assert not left, f"left behind after {how} of sf-train with 2 samplers: {left}"
