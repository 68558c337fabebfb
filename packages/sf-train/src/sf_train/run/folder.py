"""The folder of one training run: ``config.json``, ``checkpoints/`` and TensorBoard events.

Starting a run writes the config; resuming one checks that the given config matches the saved
one, except for the fields that may change between sessions (:data:`RESUMABLE_FIELDS`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from sf_train.config.schema import Config, ConfigError, config_to_dict, load_config, save_config
from sf_train.run.checkpoint import BEST, CheckpointError, Checkpoints, load_checkpoint

__all__ = [
    "CONFIG_FILE",
    "RESUMABLE_FIELDS",
    "RunFolderError",
    "checkpoints_of",
    "find_checkpoint",
    "load_run_config",
    "policy_folder",
    "prepare_run_folder",
]

CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoints"

RESUMABLE_FIELDS = frozenset(
    {
        "run.run_dir",
        "run.frames",
        "run.seconds",
        "run.device",
        "run.torch_threads",
        "run.num_samplers",
        "run.sync",
        "run.checkpoint_every",
        "run.checkpoint_seconds",
        "run.keep_checkpoints",
        "run.eval_episodes",
        "run.eval_share",
        "run.eval_greedy",
        "run.wandb",
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


def policy_folder(run_dir: str | os.PathLike[str], policy: int, num_policies: int) -> Path:
    """Where a policy's checkpoints go: the run folder itself for a run of one policy, else
    ``RUN_DIR/p<policy>``, a run folder of its own (its ``config.json`` is the run's, for one
    policy), which ``sf-train eval``, ``enjoy`` and sf-league take like any other."""
    return Path(run_dir) if num_policies == 1 else Path(run_dir) / f"p{policy}"


def _policy_config(cfg: Config, folder: Path) -> Config:
    return dataclasses.replace(
        cfg,
        algo=dataclasses.replace(cfg.algo, num_policies=1),
        run=dataclasses.replace(cfg.run, run_dir=str(folder)),
    )


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


def prepare_run_folder(cfg: Config, resume: bool) -> list[dict[str, Any]] | None:
    """Creates or checks the run folder and returns the checkpoints to resume from.

    Args:
        cfg: The config of this session.
        resume: Continue the run in ``cfg.run.run_dir`` from its latest checkpoint.

    Returns:
        When resuming, the state of every policy's latest checkpoint (in a population, the
        latest that every policy has); else None (``config.json`` is written, and each
        policy folder's).

    Raises:
        RunFolderError: Starting into a folder that already has checkpoints, resuming a folder
            without any, or resuming with a config that differs from the saved one.
        CheckpointError: If the latest checkpoint is unreadable.
    """
    run_dir = Path(cfg.run.run_dir)
    count = cfg.algo.num_policies
    folders = [policy_folder(run_dir, p, count) for p in range(count)]
    checkpoints = checkpoints_of(folders[0])
    latest = _latest_common(folders)
    if not resume:
        existing = checkpoints.latest()
        if existing is not None:
            raise RunFolderError(
                f"{existing.parent} already holds checkpoints ({existing.name}): pass --resume "
                "to continue that run, or choose a new --run-dir"
            )
        save_config(cfg, run_dir / CONFIG_FILE)
        if count > 1:
            for folder in folders:
                save_config(_policy_config(cfg, folder), folder / CONFIG_FILE)
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
    states = [load_checkpoint(checkpoints_of(f).directory / latest) for f in folders]
    save_config(cfg, run_dir / CONFIG_FILE)
    return states


def _latest_common(folders: list[Path]) -> str | None:
    """The name of the latest checkpoint that every folder holds (a crash while a population
    was saved can leave some policies one checkpoint ahead)."""
    names = [{p.name for p in checkpoints_of(f).all()} for f in folders]
    common = set.intersection(*names)
    return max(common) if common else None  # names are zero-padded frame counts


def find_checkpoint(run_dir: str | os.PathLike[str], which: str = "latest") -> Path:
    """The checkpoint file for ``which``: ``"latest"``, ``"best"`` or a path.

    Raises:
        CheckpointError: If the run has no such checkpoint.
    """
    if which == "latest":
        path = checkpoints_of(run_dir).latest()
        if path is None and (Path(run_dir) / "p0" / CONFIG_FILE).is_file():
            raise CheckpointError(
                f"{run_dir} holds a population: name one policy's folder, e.g. {run_dir}/p0"
            )
        if path is None:
            raise CheckpointError(
                f"{Path(run_dir) / CHECKPOINT_DIR} has no checkpoint: train the run first "
                f"(sf-train train --run-dir {run_dir})"
            )
        return path
    if which == "best":
        return Path(run_dir) / CHECKPOINT_DIR / BEST
    return Path(which)
