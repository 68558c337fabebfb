"""Reading back what a run logged: an offline W&B run's records and the TensorBoard scalars.

An offline W&B run keeps everything it logged in its ``.wandb`` transaction log, which wandb's
own CLI prints record by record (``wandb leet inspect --json``, one JSON object a line); the
history records carry each ``run.log`` call's values (sf-train's steps as ``global_step``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

__all__ = ["OfflineRun", "offline_runs", "tensorboard_scalars", "wandb_test_env"]

Series = dict[str, list[tuple[int, float]]]
"""Each tag's (step, value) pairs, in the order they were logged."""


def wandb_test_env(tmp_path: Path) -> dict[str, str]:
    """Environment variables for W&B in a test: offline (no account, no network), quiet, and
    every folder of W&B's own (cache, data, config) under ``tmp_path``; the run's folder is
    left to sf-train."""
    home = tmp_path / "wandb-home"
    return {
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "WANDB_CACHE_DIR": str(home / "cache"),
        "WANDB_DATA_DIR": str(home / "data"),
        "WANDB_CONFIG_DIR": str(home / "config"),
        "WANDB_ARTIFACT_DIR": str(home / "artifacts"),
    }


@dataclass
class OfflineRun:
    """What an offline W&B run recorded."""

    folder: Path
    name: str = ""
    group: str = ""
    job_type: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    scalars: Series = field(default_factory=dict)
    """The numbers logged, by key (media keys, e.g. a table's ``KEY.nrows``, left out)."""
    media: dict[str, list[tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    """Each media key's (step, fields), e.g. ``{"_type": "table-file", "path": ...}`` (the
    path inside the run's ``files/``)."""
    texts: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    exit_code: int | None = None

    @classmethod
    def read(cls, folder: Path) -> OfflineRun:
        """Reads the run in ``folder`` (an ``offline-run-*`` folder)."""
        (log,) = folder.glob("run-*.wandb")
        printed = subprocess.run(
            [sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(log)],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
            env={**os.environ, "WANDB_SILENT": "true"},
        ).stdout
        run = cls(folder)
        for line in printed.splitlines():
            record = json.loads(line)
            kind = record["type"]
            if kind == "run":
                info = record["run"]
                run.name, run.group = info.get("display_name", ""), info.get("run_group", "")
                run.job_type = info.get("job_type", "")
                run.config.update(info.get("config", {}).get("update", {}))
            elif kind == "config":
                run.config.update(record["config"].get("update", {}))
            elif kind == "history":
                run._add_history(record["history"])
            elif kind == "exit":
                run.exit_code = record["exit"].get("exit_code", 0)
        run.config.pop("_wandb", None)
        return run

    def _add_history(self, history: dict[str, Any]) -> None:
        """One history row; its step is sf-train's ``global_step`` where it has one."""
        item = history["item"]
        step = int(item.pop("global_step", history["step"].get("num", 0)))
        media = {k.removesuffix("._type") for k in item if k.endswith("._type")}
        for key in media:
            fields = {k.split(".", 1)[1]: v for k, v in item.items() if k.startswith(f"{key}.")}
            self.media.setdefault(key, []).append((step, fields))
        for key, value in item.items():
            if key.startswith("_") or key.split(".", 1)[0] in media:
                continue
            if isinstance(value, str):
                self.texts.setdefault(key, []).append((step, value))
            else:
                self.scalars.setdefault(key, []).append((step, float(value)))


def offline_runs(wandb_dir: Path) -> list[OfflineRun]:
    """Every offline run under ``wandb_dir`` (a ``wandb/`` folder), oldest first.

    Oldest by the last write of its transaction log: the folders' names carry the start time to
    the second only, and two short runs in one second would sort by their random ids."""
    folders = sorted(wandb_dir.glob("offline-run-*"), key=_last_write)
    return [OfflineRun.read(f) for f in folders]


def _last_write(folder: Path) -> int:
    (log,) = folder.glob("run-*.wandb")
    return log.stat().st_mtime_ns


def tensorboard_scalars(run_dir: Path) -> Series:
    """Every scalar series of the event files in ``run_dir``."""
    events = EventAccumulator(str(run_dir), size_guidance={SCALARS: 0})
    events.Reload()
    return {
        tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]
    }
