"""Checkpoints written atomically: the last K by frame count, plus the best by mean return.

A checkpoint is written to a temporary file in the same folder and renamed over its final
name (``os.replace`` is atomic on POSIX), so a crash while saving leaves every existing
checkpoint intact and never a half-written one under a real name.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

__all__ = ["BEST", "CheckpointError", "Checkpoints", "load_checkpoint", "save_atomic"]

log = logging.getLogger(__name__)

BEST = "best.pt"
_NAME = re.compile(r"checkpoint_(\d+)\.pt")


class CheckpointError(RuntimeError):
    """A checkpoint is missing or unreadable; the message names the file and the fix."""


def save_atomic(obj: Any, path: Path) -> None:
    """``torch.save`` into a temp file beside ``path``, fsync, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; checkpoints are shared like any output
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Reads a checkpoint (tensors and plain data only: ``weights_only`` loading).

    Raises:
        CheckpointError: If the file is missing or not a readable checkpoint.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(
            f"checkpoint {path} does not exist: train first (sf-train train --run-dir "
            f"{path.parent.parent}) or name an existing checkpoint"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        # torch's own message goes on to suggest weights_only=False, which is not the fix here.
        reason = (str(e).splitlines() or [""])[0][:120]
        raise CheckpointError(
            f"checkpoint {path} is corrupt or not a checkpoint ({type(e).__name__}: {reason}): "
            "delete it to use the previous one, or start a new --run-dir"
        ) from e
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(
            f"checkpoint {path} holds no model state: it was not written by sf-train; delete it"
        )
    return state


class Checkpoints:
    """The ``checkpoints/`` folder of a run.

    Args:
        directory: Where checkpoints live (created if needed).
        keep: How many of the latest checkpoints to keep; older ones are deleted.
        best_return: Mean return of the current ``best.pt`` (restored on resume), if any.
    """

    def __init__(self, directory: Path, keep: int, best_return: float | None = None) -> None:
        if keep < 1:
            raise ValueError(f"keep={keep}: keep at least one checkpoint")
        self.directory = directory
        self.keep = keep
        self.best_return = best_return

    def all(self) -> list[Path]:
        """Checkpoints by increasing frame count (``best.pt`` excluded)."""
        if not self.directory.is_dir():
            return []
        found = [(int(m[1]), p) for p in self.directory.iterdir() if (m := _NAME.fullmatch(p.name))]
        return [p for _, p in sorted(found)]

    def latest(self) -> Path | None:
        """The checkpoint with the most frames, or None when there is none."""
        paths = self.all()
        return paths[-1] if paths else None

    def save(self, state: dict[str, Any], frames: int, mean_return: float | None) -> Path:
        """Writes ``checkpoint_<frames>.pt``, prunes old ones and updates ``best.pt``.

        ``best.pt`` is rewritten when ``mean_return`` beats every earlier one. The state is
        saved with a ``best_return`` entry, which a resumed run passes back to the constructor.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        is_best = mean_return is not None and (
            self.best_return is None or mean_return > self.best_return
        )
        state = {**state, "best_return": mean_return if is_best else self.best_return}
        path = self.directory / f"checkpoint_{frames:012d}.pt"
        save_atomic(state, path)
        for old in self.all()[: -self.keep]:
            old.unlink(missing_ok=True)
        if is_best:
            self.best_return = mean_return
            save_atomic(state, self.directory / BEST)
            log.info(
                "new best checkpoint in %s: mean return %.3f at %d frames",
                self.directory,
                mean_return,
                frames,
            )
        return path
