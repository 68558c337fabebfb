"""Starting a networked match once in a child process first, so a fatal init error cannot kill us.

A fatal engine error during a networked ``DoomGame.init()`` (no deathmatch starts, too many
players for a map, the host's port taken, a network sync timeout) segfaults the Python process
that called it, and so does killing an engine that is still starting. So before a match with
several agents starts its engines in the caller's process, :func:`probe_start` starts the same
match, on the same leased port, in a child process (``python -c``) and reports how that went;
the caller then retries on a fresh port.

What a successful probe proves is that this configuration can start: failures that come from the
configuration repeat every time. Failures that strike at random are kept away from the caller's
own start differently — the port stays bound by its lease until the host binds it, and the
engines get a generous sync timeout — so a configuration is probed once per process
(:func:`proven`). Only a match running wholly in a worker process is safe from everything (the
vector engine's :class:`~sf_envs.match.unit.MatchUnitFactory`), so workers skip the probe.
"""

from __future__ import annotations

import os
import pickle
import sys

from sf_envs.lifecycle.procs import run_in_child
from sf_envs.match.scenarios import MatchConfig

__all__ = ["mark_proven", "probe_start", "proven"]

#: Seconds a probe may take beyond the match's own timeout: a fresh Python imports sf_envs.
_STARTUP_ALLOWANCE_S = 5.0

_PROVEN: set[MatchConfig] = set()


def proven(config: MatchConfig) -> bool:
    """True when a probe in this process already started ``config``'s match."""
    return config in _PROVEN


def mark_proven(config: MatchConfig) -> None:
    """Records that ``config``'s match started in this process, so it is not probed again."""
    _PROVEN.add(config)


def probe_start(config: MatchConfig, port: int, workdir: str) -> str | None:
    """Starts and closes ``config``'s match on ``port`` in a child process.

    Returns:
        None when the match started, else why not (exit status and the engine's last words).
    """
    return run_in_child(
        "from sf_envs.match.probe import _main; _main()",
        [str(port)],
        pickle.dumps(config),
        workdir,
        config.timeout + _STARTUP_ALLOWANCE_S,
        "starting",
    )


def _main() -> None:
    from sf_envs.lifecycle import watchdog
    from sf_envs.match.core import MatchCore

    watchdog.covered_by_parent()  # it runs from the match's folder, which the caller guards
    config = pickle.loads(sys.stdin.buffer.read())
    MatchCore(config, os.getcwd(), port=int(sys.argv[1]), guarded=False).close()
