"""The folder of one training run: ``config.json``, ``checkpoints/`` and TensorBoard events.

Starting a run writes the config; resuming one checks that the given config matches the saved
one, except for the fields that may change between sessions (:data:`RESUMABLE_FIELDS`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sf_train.checkpoint import BEST, CheckpointError, Checkpoints, load_checkpoint
from sf_train.config import Config, ConfigError, config_to_dict, load_config, save_config

__all__ = [
    "CONFIG_FILE",
    "RESUMABLE_FIELDS",
    "RunFolderError",
    "checkpoints_of",
    "find_checkpoint",
    "load_run_config",
    "prepare_run_folder",
]

CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoints"

RESUMABLE_FIELDS = frozenset(
    {
        "run.run_dir",
        "run.frames",
        "run.device",
        "run.torch_threads",
        "run.sync",
        "run.checkpoint_every",
        "run.checkpoint_seconds",
        "run.keep_checkpoints",
        "run.eval_episodes",
        "env.worker_timeout",
        "env.worker_max_restarts",
    }
)
"""Fields a resumed run may change: how long and where it trains, not what it trains (a run
folder that was moved or copied resumes where it now is)."""


class RunFolderError(RuntimeError):
    """The run folder does not fit the request; the message names the file and the fix."""


def checkpoints_of(run_dir: str | os.PathLike[str], keep: int = 1) -> Checkpoints:
    """The :class:`Checkpoints` of a run folder."""
    return Checkpoints(Path(run_dir) / CHECKPOINT_DIR, keep)


def load_run_config(run_dir: str | os.PathLike[str]) -> Config:
    """The saved config of a run.

    Raises:
        RunFolderError: If ``config.json`` is missing or invalid.
    """
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise RunFolderError(
            f"{path} does not exist: {run_dir} is not a run folder; train into it first with "
            f"sf-train train --run-dir {run_dir}"
        )
    try:
        return load_config(path)
    except (ValueError, ConfigError) as e:
        raise RunFolderError(f"{path} is not a valid config ({e}); fix or delete it") from e


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    return {f"{s}.{k}": v for s, fields in data.items() for k, v in fields.items()}


def prepare_run_folder(cfg: Config, resume: bool) -> dict[str, Any] | None:
    """Creates or checks the run folder and returns the checkpoint to resume from.

    Args:
        cfg: The config of this session.
        resume: Continue the run in ``cfg.run.run_dir`` from its latest checkpoint.

    Returns:
        The latest checkpoint's state when resuming, else None (``config.json`` is written).

    Raises:
        RunFolderError: Starting into a folder that already has checkpoints, resuming a folder
            without any, or resuming with a config that differs from the saved one.
        CheckpointError: If the latest checkpoint is unreadable.
    """
    run_dir = Path(cfg.run.run_dir)
    checkpoints = checkpoints_of(run_dir)
    latest = checkpoints.latest()
    if not resume:
        if latest is not None:
            raise RunFolderError(
                f"{run_dir} already holds checkpoints ({latest.name}): pass --resume to continue "
                "that run, or choose a new --run-dir"
            )
        save_config(cfg, run_dir / CONFIG_FILE)
        return None
    saved = load_run_config(run_dir)
    old, new = _flatten(config_to_dict(saved)), _flatten(config_to_dict(cfg))
    changed = sorted(k for k in old if old[k] != new[k] and k not in RESUMABLE_FIELDS)
    if changed:
        diffs = ", ".join(f"{k}: saved {old[k]!r}, given {new[k]!r}" for k in changed)
        raise RunFolderError(
            f"--resume with a config that differs from {run_dir / CONFIG_FILE} ({diffs}): drop "
            "those flags to continue the run as it was, or train into a new --run-dir"
        )
    if latest is None:
        hint = f" (only {BEST})" if (checkpoints.directory / BEST).exists() else ""
        raise CheckpointError(
            f"{checkpoints.directory} has no checkpoint_*.pt to resume from{hint}: train without "
            "--resume into a new --run-dir"
        )
    state = load_checkpoint(latest)
    save_config(cfg, run_dir / CONFIG_FILE)
    return state


def find_checkpoint(run_dir: str | os.PathLike[str], which: str = "latest") -> Path:
    """The checkpoint file for ``which``: ``"latest"``, ``"best"`` or a path.

    Raises:
        CheckpointError: If the run has no such checkpoint.
    """
    if which == "latest":
        path = checkpoints_of(run_dir).latest()
        if path is None:
            raise CheckpointError(
                f"{Path(run_dir) / CHECKPOINT_DIR} has no checkpoint: train the run first "
                f"(sf-train train --run-dir {run_dir})"
            )
        return path
    if which == "best":
        return Path(run_dir) / CHECKPOINT_DIR / BEST
    return Path(which)
