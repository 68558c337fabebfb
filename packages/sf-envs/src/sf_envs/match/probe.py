"""Starting a networked match once in a child process first, so a fatal init error cannot kill us.

A fatal engine error during a networked ``DoomGame.init()`` (the host's UDP port taken by another
program, a network sync timeout) segfaults the Python process that called it. So before a match
with several agents starts its engines in the caller's process, :func:`probe_start` starts the
same match, on the same leased port, in a child process (``python -m sf_envs.match.probe``) and
reports how that went; the caller then retries on a fresh port. The child's engines form their
own process group, removed in one call if the child hangs. The probe costs one extra match start
(about a second) and catches failures that repeat; a failure that strikes only the second start
is still fatal, which only a match running wholly in a worker process avoids (the vector engine's
:class:`~sf_envs.match.unit.MatchUnitFactory`).
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys

from sf_envs.match.scenarios import MatchConfig
from sf_envs.vector.procs import kill_group

__all__ = ["probe_start"]


def probe_start(config: MatchConfig, port: int, workdir: str) -> str | None:
    """Starts and closes ``config``'s match on ``port`` in a child process.

    Returns:
        None when the match started, else why not (exit status and the engine's last words).
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "sf_envs.match.probe", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=workdir,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(pickle.dumps(config), timeout=config.timeout + 5)
    except subprocess.TimeoutExpired:
        return f"starting took over {config.timeout + 5:.0f} s (hung)"
    finally:
        # Also after a crash: the child's engines outlive it, spinning, in its process group.
        kill_group(proc.pid)
        proc.wait()
    if proc.returncode == 0:
        return None
    code = proc.returncode
    status = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    tail = err.decode(errors="replace").strip().splitlines()[-3:]
    return f"{status}: {' | '.join(tail) or 'no output'}"


def _main() -> None:
    from sf_envs.match.core import MatchCore

    config = pickle.loads(sys.stdin.buffer.read())
    MatchCore(config, os.getcwd(), port=int(sys.argv[1])).close()


if __name__ == "__main__":
    _main()
