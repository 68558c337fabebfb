"""Evaluations the scoring scripts share: a run's best checkpoint and a random policy, both in
the env's own units, over an equal quota of episodes per env."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym

from sf_train.config.schema import ModelConfig
from sf_train.evaluation import evaluate_policy
from sf_train.model.network import ActorCritic
from sf_train.run.folder import load_run_config

__all__ = ["SF_TRAIN", "evaluate_best", "random_policy", "sf_train", "uniform_policy"]

SF_TRAIN = (sys.executable, "-m", "sf_train.cli")
"""The ``sf-train`` command of this interpreter."""


def sf_train(*args: str, logs: bool = False) -> str:
    """What ``sf-train ARGS`` printed: its output, and with ``logs`` its log lines too."""
    command = [*SF_TRAIN, *args]
    stderr = subprocess.STDOUT if logs else None
    return subprocess.run(
        command, check=True, text=True, stdout=subprocess.PIPE, stderr=stderr
    ).stdout


def evaluate_best(run_dir: Path, episodes: int) -> dict[str, Any]:
    """``sf-train eval RUN --checkpoint best --json``: the summary of the run's best checkpoint."""
    return json.loads(
        sf_train(
            "eval", str(run_dir), "--episodes", str(episodes), "--checkpoint", "best", "--json"
        )
    )


def uniform_policy(
    observation_space: gym.Space, action_space: gym.Space, cfg: ModelConfig
) -> ActorCritic:
    """A network whose logits are all zero, sampled: uniform over discrete actions (a
    standard Gaussian over Box actions)."""
    model = ActorCritic(observation_space, action_space, cfg)
    model.actor.weight.data.zero_()
    model.actor.bias.data.zero_()
    return model


def random_policy(run_dir: Path, episodes: int, seed: int) -> dict[str, Any]:
    """The :func:`uniform_policy` over the run's env, evaluated."""
    cfg = load_run_config(run_dir)

    def uniform(venv: Any) -> ActorCritic:
        return uniform_policy(venv.single_observation_space, venv.single_action_space, cfg.model)

    return evaluate_policy(cfg, uniform, episodes, greedy=False, seed=seed).summary()
