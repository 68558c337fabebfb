"""The error every env of this package raises when used after ``close()``."""

from __future__ import annotations

from gymnasium.error import ClosedEnvironmentError

__all__ = ["ClosedEnvError"]


class ClosedEnvError(ClosedEnvironmentError, RuntimeError):
    """Raised when an env, a vector env or a match is used after ``close()``.

    A Gymnasium ``ClosedEnvironmentError``, so code written for Gymnasium's vector envs catches it,
    and a ``RuntimeError`` as it always was.
    """
