"""Which torch device a run uses."""

from __future__ import annotations

import torch

__all__ = ["resolve_device"]


def resolve_device(name: str) -> torch.device:
    """Maps a ``run.device`` value to a torch device; 'auto' picks CUDA when present."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
