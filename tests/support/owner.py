"""Ending a process that owns ViZDoom engines (a script, a CLI) and listing what it left behind.

The owner runs in a session of its own with a private TMPDIR. While it runs, every engine among
its descendants is recorded by PID and instance id, and every /dev/shm file a descendant maps;
after the owner is ended, what is left of exactly those is reported, so concurrent tests on the
machine do not disturb the check.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from pathlib import Path

from sf_envs.lifecycle import interruptible

__all__ = ["descendants", "end_owner", "running"]

# What ViZDoom creates in /dev/shm per engine (measured), followed by its instance id.
VIZDOOM_SHM = ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")
# Until the owner's end has been swept up (engines killed, files removed).
_SWEEP_LIMIT_S = 20.0


def _stat(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (six generations deep)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) and fields[0] not in "ZX":
            parents[int(entry)] = int(fields[1])
    family = {root}
    for _ in range(6):
        family |= {pid for pid, parent in parents.items() if parent in family}
    return sorted(family - {root})


def _instance(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    return next((v for k, v in itertools.pairwise(args) if k == "+viz_instance_id"), None)


def _shm_files(pid: int) -> set[str]:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return {
                line.split()[-1] for line in f if " /dev/shm/" in line and "(deleted)" not in line
            }
    except OSError:
        return set()


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in "ZX"


def _alive(pid: int, instance: str) -> bool:
    fields = _stat(pid)  # the instance id guards against a reused PID
    return fields is not None and fields[0] not in "ZX" and _instance(pid) == instance


def end_owner(
    command: list[str],
    tmp_path: Path,
    how: str,
    engines_expected: int,
    start_limit_s: float = 120,
    ignored_prefixes: tuple[str, ...] = (),
) -> list[str]:
    """Runs ``command``, waits until ``engines_expected`` engines run under it, ends it by
    ``how`` ("sigint": Ctrl-C, to the whole process group as a terminal does; "sigterm" and
    "sigkill": to the owner alone), and returns what is left after the sweep limit: engines still
    running, /dev/shm files that were mapped under it, and anything in its TMPDIR (but entries
    named with ``ignored_prefixes``)."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    with open(tmp_path / "owner.log", "wb") as log:
        proc = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=tmp_path,
            env={**os.environ, "TMPDIR": str(tmpdir)},
            start_new_session=True,
            preexec_fn=interruptible,
        )
    engines: dict[int, str] = {}
    files: set[str] = set()
    try:
        deadline = time.monotonic() + start_limit_s
        while len(engines) < engines_expected:
            assert proc.poll() is None, (tmp_path / "owner.log").read_text()[-3000:]
            assert time.monotonic() < deadline, f"only {len(engines)} engines started"
            for pid in descendants(proc.pid):
                files |= _shm_files(pid)
                if instance := _instance(pid):
                    engines[pid] = instance
            time.sleep(0.1)
        time.sleep(0.5)  # the engines' shared memory is mapped
        for pid in [proc.pid, *descendants(proc.pid)]:
            files |= _shm_files(pid)
        if how == "sigint":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            os.kill(proc.pid, {"sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL}[how])
        proc.wait(timeout=60)
        deadline = time.monotonic() + _SWEEP_LIMIT_S
        while True:
            left = [f"engine {pid}" for pid, i in engines.items() if _alive(pid, i)]
            left += sorted(f for f in files if os.path.exists(f))
            left += [
                f"/dev/shm/{prefix}{i}"
                for i in engines.values()
                for prefix in VIZDOOM_SHM
                if os.path.exists(f"/dev/shm/{prefix}{i}") and f"/dev/shm/{prefix}{i}" not in files
            ]
            left += sorted(
                str(p) for p in tmpdir.iterdir() if not p.name.startswith(ignored_prefixes)
            )
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid, instance in engines.items():  # on failure: leave nothing to the next tests
            if _alive(pid, instance):
                os.kill(pid, signal.SIGKILL)
