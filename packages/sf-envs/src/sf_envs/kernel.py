"""Compiled kernels: numba with its on-disk cache where one is writable."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["numba_kernel"]

logger = logging.getLogger(__name__)


def numba_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``numba.njit(cache=True, nogil=True)``, falling back to an in-memory cache.

    Numba refuses ``cache=True`` at decoration time (``RuntimeError``) when neither the package
    directory, ``NUMBA_CACHE_DIR`` nor the user cache directory is writable; a read-only container
    should then still import and run, only with a compile on each start.
    """
    try:
        return numba.njit(cache=True, nogil=True)(fn)
    except RuntimeError as exc:
        logger.warning(
            "numba cannot cache %s (%s); compiling in memory on every start. "
            "Set NUMBA_CACHE_DIR to a writable directory to keep compiled kernels.",
            fn.__name__,
            exc,
        )
        return numba.njit(nogil=True)(fn)
