"""Finding and killing a worker's process group, ViZDoom engines included, from ``/proc``.

A ViZDoom engine killed by SIGKILL cannot remove its shared memory and message queues
(``/dev/shm/ViZDoom{SM,MQCtr,MQDoom}<instance id>``, ≈ 10 MB per engine), so before killing a
group we read every member's ``+viz_instance_id`` from its command line and unlink those files
afterwards. psutil-free: ``/proc`` is all there is to read on Linux, where ViZDoom runs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time

__all__ = ["group_members", "kill_group"]

_SHM_PREFIXES = ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) process ids whose process group is ``pgid``.

    Zombies are skipped: an engine orphaned by a killed worker is reparented to PID 1, which in
    a container may never reap it, yet a zombie holds no memory and burns no CPU.
    """
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the command name, which may itself contain spaces or parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            members.append(int(entry))
    return members


def _instance_id(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return None
    for flag, value in itertools.pairwise(args):
        if flag == b"+viz_instance_id":
            return value.decode(errors="replace")
    return None


def kill_group(pgid: int, timeout_s: float = 5.0) -> None:
    """SIGKILLs every process in group ``pgid``, waits (bounded) until they are dead, and
    removes their engines' shared memory."""
    members = group_members(pgid)
    if not members:
        return
    ids = [i for i in map(_instance_id, members) if i]
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)
    for instance in ids:
        for prefix in _SHM_PREFIXES:
            with contextlib.suppress(OSError):
                os.unlink(f"/dev/shm/{prefix}{instance}")
