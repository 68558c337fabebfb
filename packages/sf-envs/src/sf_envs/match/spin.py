"""Networked engines that give their CPU away while they wait for a peer.

A ViZDoom engine in a network game waits for its peers' tic commands by polling its UDP socket
in a busy loop (``TryRunTics`` in the engine's ``d_net.cpp``). One duel on two idle cores loses
little to that, but duels that share cores do: measured on 2 cores, the engines of 2 pinned
workers x 2 duels spent 1.9 ms of CPU per match step polling as they are, 1.4 ms with the poller
stepping aside, and ran 1.41x the match steps/s (numbers in ``docs/benchmarks/matches.md``).

:func:`engine_path` gives a launcher that starts ViZDoom's engine with ``spin_yield.c`` preloaded:
after a run of empty polls the engine calls ``sched_yield()``. It changes no result of any call,
so the lock step and everything a match computes stay exactly as they were; only who runs while
an engine waits changes. The library is compiled once per machine with the system C compiler
into the user cache. Without a compiler, matches run with the engines' own busy wait and a
warning says what that costs and how to fix it; ``SF_ENVS_SPIN_YIELD=0`` turns the launcher off
(for comparisons) and silences that warning.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import vizdoom

from sf_envs.cache import user_cache

__all__ = ["SPIN_YIELD_ENV_VAR", "engine_path"]

logger = logging.getLogger(__name__)

#: Set to ``0`` to start networked engines as they are, busy-waiting for their peers.
SPIN_YIELD_ENV_VAR = "SF_ENVS_SPIN_YIELD"
_SOURCE = Path(__file__).with_name("spin_yield.c")
_ENGINE = Path(vizdoom.__file__).with_name("vizdoom")
_LOCK = threading.Lock()
_built: dict[Path, str | None] = {}


def engine_path() -> str | None:
    """The launcher networked matches start their engines with; None for ViZDoom's own engine
    (turned off by :data:`SPIN_YIELD_ENV_VAR`, or no C compiler: then it warns once)."""
    if os.environ.get(SPIN_YIELD_ENV_VAR, "1") == "0":
        return None
    folder = _build_folder()
    with _LOCK:
        if folder not in _built:
            _built[folder] = _build(folder)
        return _built[folder]


@functools.cache
def _build_key() -> str:
    """One build per source and engine: a changed shim or another vizdoom install rebuilds."""
    return hashlib.sha256(_SOURCE.read_bytes() + str(_ENGINE).encode()).hexdigest()[:16]


def _build_folder() -> Path:
    return user_cache("engine") / _build_key()


def _build(folder: Path) -> str | None:
    launcher = folder / "vizdoom"
    if launcher.is_file():
        return str(launcher)
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    try:
        if compiler is None:
            raise OSError("no C compiler (cc or gcc) on PATH")
        folder.mkdir(parents=True, exist_ok=True)
        library = folder / "spin_yield.so"
        # Built under temporary names and renamed: workers starting together may all build.
        with tempfile.TemporaryDirectory(dir=folder) as scratch:
            built = Path(scratch) / library.name
            result = subprocess.run(
                [compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(_SOURCE), "-ldl"],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if result.returncode != 0:
                raise OSError(f"{compiler} failed: {result.stderr.strip()[-500:]}")
            os.replace(built, library)
            script = Path(scratch) / "vizdoom"
            script.write_text(
                "#!/bin/sh\n"
                f'LD_PRELOAD="{library}${{LD_PRELOAD:+ $LD_PRELOAD}}" exec "{_ENGINE}" "$@"\n'
            )
            script.chmod(0o755)
            os.replace(script, launcher)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning(
            "networked matches start ViZDoom's engines as they are, busy-waiting for their "
            "peers, which costs duels that share CPUs a quarter to a half of their speed (could not "
            "build %s: %s). "
            "Install a C compiler (e.g. gcc) to fix this, or set %s=0 to run without it and "
            "silence this warning",
            _SOURCE.name,
            exc,
            SPIN_YIELD_ENV_VAR,
        )
        return None
    return str(launcher)
