"""The user cache folder sf-envs keeps downloads and built files in."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["user_cache"]


def user_cache(name: str) -> Path:
    """``$XDG_CACHE_HOME/sf-envs/<name>``, else ``~/.cache/sf-envs/<name>`` (not created)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(cache) / "sf-envs" / name
