"""Names a package's top offers but loads on first use (PEP 562), so that importing the package
costs nothing it does not use (``import sf_train.config`` without torch, say)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: each name of ``exports`` (name -> module that
    defines it) is imported when first read, then kept in the package's namespace."""

    def get(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    return get
