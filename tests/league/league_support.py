"""Helpers shared by the sf-league tests (the working-directory fixture is tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def sf_league(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Runs the ``sf-league`` CLI in a child process (as a user would)."""
    proc = subprocess.run(
        [sys.executable, "-m", "sf_league.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"sf-league {args} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def make_checkpoint(run_dir: Path, num_actions: int, obs_size: tuple[int, int] = (64, 36)) -> Path:
    """A run folder with one randomly initialised checkpoint, built with sf-train's own API.

    sf-train trains on single-player gym ids only (there is no 1-agent match id yet), so a
    duel-shaped policy is built directly: the network for the match's spaces, saved as a
    checkpoint of a run whose config records the observation settings.
    """
    import torch
    from gymnasium import spaces

    from sf_train.checkpoint import Checkpoints
    from sf_train.config import Config, EnvConfig, save_config
    from sf_train.model import ActorCritic

    torch.manual_seed(0)
    cfg = Config(env=EnvConfig(obs_size=obs_size, grayscale=True, frame_skip=4))
    cfg.run.run_dir = str(run_dir)
    run_dir.mkdir(parents=True)
    save_config(cfg, run_dir / "config.json")
    width, height = obs_size
    obs = spaces.Box(0, 255, (1, height, width), dtype="uint8")
    model = ActorCritic(obs, spaces.Discrete(num_actions), cfg.model)
    return Checkpoints(run_dir / "checkpoints", keep=1).save(
        {"model": model.state_dict()}, frames=4096, mean_return=None
    )
