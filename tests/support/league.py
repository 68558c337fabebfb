"""Helpers shared by the sf-league tests (the working-directory fixture is tests/conftest.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any


def duel_settings(frame_skip: int, map_name: str = "multi_duel", timelimit: float = 0.1) -> dict:
    """What a real duel between two agents stores."""
    return {
        "scenario": "duel",
        "map": map_name,
        "num_agents": 2,
        "num_bots": 0,
        "obs_size": [64, 36],
        "grayscale": True,
        "frame_skip": frame_skip,
        "timelimit": timelimit,
    }


def stored_games(db: Path) -> int:
    """Games stored in the league at ``db`` so far (0 while it is being created)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is still being created
        return 0


def children_of(pid: int) -> list[int]:
    """Ids of the processes whose parent is ``pid`` (zombies included)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


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


def train_tiny(
    run_dir: Path, env: str = "sf/DoomDuelBots-v0", frames: int = 256, *options: str
) -> None:
    """Trains a tiny network for a few hundred frames with the ``sf-train`` CLI (a real run
    folder: config.json, checkpoints), in a child process as a user would; ``options`` are
    added to its ``--env-options``."""
    flags = {
        "--env": env,
        "--run-dir": str(run_dir),
        "--frames": str(frames),
        "--num-envs": "2",
        "--batch-size": "1",
        "--num-workers": "1",
        "--obs-size": "32 24",
        "--conv-channels": "4",
        "--conv-kernels": "4",
        "--conv-strides": "2",
        "--fc-size": "16",
        "--rollout": "8",
        "--num-minibatches": "2",
        "--torch-threads": "1",
        # Players of a league are a run's latest checkpoint: no evaluation (a whole match).
        "--eval-episodes": "0",
        "--env-options": " ".join(("timelimit=0.1", *options)),
    }
    args = [part for flag, value in flags.items() for part in (flag, *value.split())]
    proc = subprocess.run(
        [sys.executable, "-m", "sf_train.cli", "train", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != 0:
        raise AssertionError(f"sf-train train failed:\n{proc.stdout}\n{proc.stderr}")


def make_checkpoint(run_dir: Path, num_actions: int, obs_size: tuple[int, int] = (64, 36)) -> Path:
    """A run folder with one randomly initialised checkpoint, built with sf-train's own API:
    a network for any action count (e.g. one that does not fit a match)."""
    import torch
    from gymnasium import spaces

    from sf_train.config.schema import Config, EnvConfig, save_config
    from sf_train.model.network import ActorCritic
    from sf_train.run.checkpoint import Checkpoints

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


def tiny_population(run_dir: Path, frames: int = 4000) -> Any:
    """A population of 2 tiny members on 4 duel envs of 3-second matches (sf-train config)."""
    from sf_train.config.schema import AlgoConfig, Config, EnvConfig, ModelConfig, RunConfig

    return Config(
        env=EnvConfig(
            env="sf/DoomDuel-v0",
            num_envs=4,
            batch_size=2,
            num_workers=1,
            obs_size=(32, 24),
            env_options=("timelimit=0.05",),  # 3-second matches: many of them
        ),
        model=ModelConfig(conv_channels=(4,), conv_kernels=(4,), conv_strides=(2,), fc_size=16),
        algo=AlgoConfig(
            rollout=8,
            num_minibatches=1,
            num_policies=2,
            entropy_coef=0.01,
            shaping=("deaths=-0.5", "damage_dealt=0.01"),
        ),
        run=RunConfig(
            run_dir=str(run_dir), frames=frames, eval_episodes=0, torch_threads=1, seed=3
        ),
    )


def tiny_population_flags(run_dir: Path, db: Path) -> list[str]:
    """``sf-league train`` flags of :func:`tiny_population` (the frames left to the caller)."""
    return [
        "--run-dir", str(run_dir), "--db", str(db), "--num-policies", "2", "--num-envs", "4",
        "--batch-size", "2", "--num-workers", "1", "--obs-size", "32", "24",
        "--conv-channels", "4", "--conv-kernels", "4", "--conv-strides", "2", "--fc-size", "16",
        "--rollout", "8", "--num-minibatches", "1", "--torch-threads", "1",
        "--env-options", "timelimit=0.05",
    ]  # fmt: skip
