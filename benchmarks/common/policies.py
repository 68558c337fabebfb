"""Evaluations the scoring scripts share: a run's best checkpoint and a random policy, both in
the env's own units, over an equal quota of episodes per env."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from sf_train.evaluation import evaluate_policy
from sf_train.model.network import ActorCritic
from sf_train.run.folder import load_run_config

__all__ = ["evaluate_best", "random_policy", "sf_train"]


def sf_train(*args: str, logs: bool = False) -> str:
    """What ``sf-train ARGS`` printed: its output, and with ``logs`` its log lines too."""
    command = [sys.executable, "-m", "sf_train.cli", *args]
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


def random_policy(run_dir: Path, episodes: int, seed: int) -> dict[str, Any]:
    """A policy whose logits are all zero, sampled: uniform over the run env's discrete
    actions (a standard Gaussian over Box actions)."""
    cfg = load_run_config(run_dir)

    def uniform(venv: Any) -> ActorCritic:
        model = ActorCritic(venv.single_observation_space, venv.single_action_space, cfg.model)
        model.actor.weight.data.zero_()
        model.actor.bias.data.zero_()
        return model

    return evaluate_policy(cfg, uniform, episodes, greedy=False, seed=seed).summary()
