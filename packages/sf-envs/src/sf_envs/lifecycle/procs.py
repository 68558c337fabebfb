"""Finding processes from ``/proc`` (:func:`find_processes`, :func:`command_line_option`: the one
scanner of the sf packages) and killing a worker's process group, ViZDoom engines included;
running a risky job in a child process of its own session (:func:`run_in_child`); sending the
console of the engines a process starts to a log file (:func:`redirect_console`); and starting a
child that Ctrl-C reaches however its parent was started (:func:`interruptible`).

A ViZDoom engine killed by SIGKILL cannot remove its shared memory and message queues
(``/dev/shm/ViZDoom{SM,MQCtr,MQDoom}<instance id>``, ≈ 10 MB per engine), so before killing a
group we read every member's ``+viz_instance_id`` from its command line and unlink those files
before the kill (the mappings outlive the names) and after it (an engine still starting may
create them). psutil-free: ``/proc`` is all there is to read on Linux, where ViZDoom runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

from sf_envs.lifecycle.watchdog import (
    find_processes,
    instance_ids,
    option_value,
    remove_shared_memory,
)

__all__ = [
    "command_line_option",
    "console_to",
    "find_processes",
    "interruptible",
    "kill_group",
    "kill_processes",
    "log_tail",
    "redirect_console",
    "run_in_child",
]


# How often a risky child's shared memory is noted while it runs: a failed engine start
# takes a quarter of a second or more.
_NOTE_INSTANCES_S = 0.05


def interruptible() -> None:
    """A ``preexec_fn`` for a child that is to be stopped by Ctrl-C (SIGINT): SIGINT at its
    default, as in a terminal's foreground job. A shell starts background jobs with SIGINT
    ignored, children inherit the ignore, and Python then never raises KeyboardInterrupt
    (measured: sf-train kept training after SIGINT when its parent ran as such a job)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def command_line_option(pid: int, flag: str) -> str | None:
    """The argument after ``flag`` in the command line of process ``pid``; None when the flag
    is absent or the process is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    return option_value(args, flag)


def kill_group(pgid: int, timeout_s: float = 5.0) -> None:
    """SIGKILLs every process in group ``pgid``, waits (bounded) until they are dead, and
    removes their engines' shared memory."""
    members = find_processes(group=pgid)
    if not members:
        return
    ids = set().union(*(instance_ids(pid) for pid in members))
    remove_shared_memory(ids)  # first too, in case the caller dies with its engines
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while find_processes(group=pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
    remove_shared_memory(ids)


def kill_processes(pids: Sequence[int], timeout_s: float = 5.0) -> None:
    """SIGKILLs ``pids``, waits (bounded) until they are dead, and removes their engines'
    shared memory: :func:`kill_group` for a process that must spare itself (a group leader
    killing its engines before it exits)."""
    ids = set().union(*(instance_ids(pid) for pid in pids))
    remove_shared_memory(ids)  # first too, in case the caller dies with its engines
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while set(pids) & set(find_processes()) and time.monotonic() < deadline:
        time.sleep(0.01)
    remove_shared_memory(ids)


def run_in_child(
    source: str, args: Sequence[str], payload: bytes, workdir: str, limit_s: float, what: str
) -> str | None:
    """Runs ``python -c source *args`` with ``payload`` on its stdin, in its own session in
    ``workdir``, and kills its whole process group afterwards, whatever happened.

    For jobs that can take their process down (a fatal ViZDoom init segfaults it) or leave
    engines spinning. The child's stderr goes to a file, not a pipe: engines that outlive a dead
    child would hold a pipe open until their own timeouts.

    Args:
        what: What the child does, for the hang message (``"the game"``).

    Returns:
        None when the child exited with status 0, else why not: a hang past ``limit_s``, or the
        signal or exit status with the last lines of its stderr.
    """
    instances: set[str] = set()
    with open(os.path.join(workdir, "child.stderr"), "w+b") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", source, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=workdir,
            start_new_session=True,
        )
        try:
            proc.stdin.write(payload)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
            instances = _wait_noting_instances(proc, limit_s)
        except subprocess.TimeoutExpired:
            return f"{what} took over {limit_s:.0f} s (hung)"
        except BrokenPipeError:  # the child died before reading its job
            proc.wait()
        finally:
            kill_group(proc.pid)
            proc.wait()
            # A child killed by a fatal engine error (a segfault) leaves the message queues
            # it created for its engines; its engines are dead now, so their files can go.
            remove_shared_memory(instances)
        if proc.returncode == 0:
            return None
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
    code = proc.returncode
    status = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
    return f"{status}: {' | '.join(tail) or 'no output'}"


def _wait_noting_instances(proc: subprocess.Popen, limit_s: float) -> set[str]:
    """Waits for ``proc`` (raising TimeoutExpired after ``limit_s``) while noting the ViZDoom
    instance ids it maps: the only record of an engine's files once a failed start killed it."""
    instances: set[str] = set()
    deadline = time.monotonic() + limit_s
    while proc.poll() is None:
        instances |= instance_ids(proc.pid)
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, limit_s)
        time.sleep(_NOTE_INSTANCES_S)
    return instances


def redirect_console(path: str) -> tuple[int, int]:
    """Points this process's stdout and stderr (file descriptors 1 and 2, so also those of every
    ViZDoom engine it starts from now on, which keep them) at ``path``, appending.

    Returns:
        Duplicates of the previous descriptors 1 and 2, for :func:`console_to` to restore.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    return saved


@contextlib.contextmanager
def console_to(path: str | None) -> Iterator[None]:
    """:func:`redirect_console` for the engines started inside the block (None: no change).

    For the duration, the caller's own output to file descriptors 1 and 2 goes there too.
    """
    if path is None:
        yield
        return
    saved = redirect_console(path)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for target, fd in zip((1, 2), saved, strict=True):
            os.dup2(fd, target)
            os.close(fd)


def log_tail(path: str, lines: int = 20, max_bytes: int = 8192) -> str:
    """The last ``lines`` lines of a log file ("" when there is none)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - max_bytes))
            text = f.read().decode(errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])
