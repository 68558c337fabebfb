"""The errors of this package that callers may want to tell apart from bugs."""

from __future__ import annotations

from gymnasium.error import ClosedEnvironmentError

__all__ = ["ClosedEnvError", "OptionError"]


class ClosedEnvError(ClosedEnvironmentError, RuntimeError):
    """Raised when an env, a vector env or a match is used after ``close()``.

    A Gymnasium ``ClosedEnvironmentError``, so code written for Gymnasium's vector envs catches it,
    and a ``RuntimeError`` as it always was.
    """


class OptionError(ValueError):
    """An id, option or setting given by the caller is invalid; the message names the fix.

    Command lines print it as a one-line error, while any other exception (a bug) keeps its
    traceback. A ``ValueError``, so code that caught bad options before still catches them.
    """
