"""A watchdog process that removes a process's ViZDoom engines and scratch files once it is gone.

Why: a ViZDoom engine ignores SIGTERM and outlives its Python owner, spinning at 100% CPU, when
that owner dies without closing it (SIGTERM, SIGKILL, a segfault); its shared memory and message
queues (``/dev/shm/ViZDoom{SM,MQCtr,MQDoom}<instance id>``, about 10 MB per engine) and our temp
folders stay behind too. No code inside the dying process can run in those cases, so the first
folder a process guards (:func:`guard`) starts a small watchdog (``python`` running this file, in
a session of its own so that a Ctrl-C or a ``kill`` of the caller's process group spares it). Its
stdin is a pipe from the owner, which sends one line per event:

- ``+PATH``: guard PATH (a folder, or a file such as a shared-memory segment);
- ``-PATH``: the owner released PATH itself (closed it); sweep what may remain and forget it;
- ``scan``: engines were just started; note their instance ids.

A *guarded engine* is a process whose ViZDoom ``-config`` file or whose working directory lies
inside a guarded folder: every such folder is a private temp folder, so whatever runs from it is
provably ours. When the pipe reaches EOF or the owner's process is gone (however it ended), the
watchdog SIGKILLs the guarded engines, unlinks the shared memory of every engine instance it has
seen, removes the guarded paths and exits.

This file imports only the standard library, so the watchdog starts in tens of milliseconds
without importing sf_envs (numba, vizdoom, gymnasium).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

__all__ = [
    "VIZDOOM_SHM_PREFIXES",
    "covered_by_parent",
    "find_processes",
    "guard",
    "instance_ids",
    "note_engines",
    "option_value",
    "release",
    "remove_shared_memory",
]

#: What a ViZDoom engine and its controller create in /dev/shm, followed by the instance id.
VIZDOOM_SHM_PREFIXES = ("ViZDoomSM", "ViZDoomMQCtr", "ViZDoomMQDoom")

# How often the watchdog checks that its owner still exists when the pipe stays open (a child
# forked without exec holds a copy of the owner's end).
_OWNER_CHECK_S = 1.0
# How long the watchdog waits for SIGKILLed engines to disappear.
_KILL_WAIT_S = 5.0


# -- the owner's side ------------------------------------------------------------------------


class _Client:
    """The owner's end: starts the watchdog on first use and writes its events.

    The pipe is held as a raw descriptor, not a file object: it stays open until this process
    ends, by design (its closing is what tells the watchdog), and a file object still open at
    exit is reported as a leak (``ResourceWarning: unclosed file``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: int | None = None
        self._owner = 0  # the PID that started the watchdog: a forked child needs its own
        self.enabled = True

    def send(self, line: str, start: bool) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._pipe is None or self._owner != os.getpid():
                if not start:
                    return
                self._start()
            data = memoryview(f"{line}\n".encode())
            try:
                while data:
                    data = data[os.write(self._pipe, data) :]  # type: ignore[arg-type]
            except OSError as exc:
                raise RuntimeError(
                    f"the sf_envs watchdog is gone ({exc}); engines of this process would "
                    "outlive it. Restart the process"
                ) from exc

    def _start(self) -> None:
        owner = os.getpid()
        if self._pipe is not None:  # a forked child's copy of its parent's end
            os.close(self._pipe)
        script = os.path.abspath(__file__)
        read_end, self._pipe = os.pipe()  # both close on exec: what we start holds neither
        try:
            # -I -S: no site, no PYTHON* variables; the file runs alone, without sf_envs.
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", script, str(owner), _started(owner)],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(read_end)
        # The watchdog forks once more and this child exits at once: a watchdog that is not
        # our child survives code that kills all of an owner's children on its way out
        # (sf-league's runners do), and leaves no zombie behind.
        proc.wait(timeout=30)
        self._owner = owner


_CLIENT = _Client()


def guard(path: str) -> None:
    """Has ``path`` (a folder or file of this process) and every ViZDoom engine running from
    it removed when this process ends without :func:`release` — whatever ends it."""
    _CLIENT.send(f"+{os.path.abspath(path)}", start=True)


def release(path: str) -> None:
    """Tells the watchdog that ``path`` was closed by its owner; it sweeps what remains (the
    shared memory of engines that died without removing it) and stops guarding it."""
    _CLIENT.send(f"-{os.path.abspath(path)}", start=False)


def note_engines() -> None:
    """Tells the watchdog that engines were just started, so it records their instance ids
    (the names of their shared memory) while they are alive to be read."""
    _CLIENT.send("scan", start=False)


def covered_by_parent() -> None:
    """For a child process whose guarded paths its parent's watchdog already covers (a vector
    worker, a start probe): start no watchdog of its own."""
    _CLIENT.enabled = False


# -- the watchdog's side ---------------------------------------------------------------------


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot): with the PID, it names that process
    for good, since a PID is reused; "" when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat[stat.rfind(b")") + 2 :].split()[19].decode()


def option_value(args: list[str], flag: str) -> str | None:
    """The argument after ``flag`` in a command line ``args``; None when the flag is absent."""
    for name, value in itertools.pairwise(args):
        if name == flag:
            return value
    return None


def _inside(path: str | None, folder: str) -> bool:
    return path is not None and (path == folder or path.startswith(folder.rstrip("/") + "/"))


def find_processes(*, parent: int | None = None, group: int | None = None) -> list[int]:
    """Ids of the live (not zombie) processes whose parent is ``parent`` and whose process group
    is ``group`` (a criterion left None is not checked).

    Zombies are skipped: an engine orphaned by a killed worker is reparented to PID 1, which in
    a container may never reap it, yet a zombie holds no memory and burns no CPU.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # state, ppid, pgrp...: the fields after the command name, which may itself contain
        # spaces or parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if (
            fields[0] not in (b"Z", b"X")
            and (parent is None or int(fields[1]) == parent)
            and (group is None or int(fields[2]) == group)
        ):
            found.append(int(entry))
    return found


def _processes() -> dict[int, tuple[list[str], str]]:
    """Every live (not zombie) process: its command line and working directory."""
    found = {}
    for pid in find_processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
            found[pid] = (args, os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
    return found


def _engines_of(folder: str, owner: int) -> dict[int, str | None]:
    """Live processes running from ``folder`` (by ``-config`` or working directory) and their
    ViZDoom instance ids (None for a process that is no engine, a vector worker say); never
    the owner nor the watchdog itself."""
    spared = {os.getpid(), owner}
    return {
        pid: option_value(args, "+viz_instance_id")
        for pid, (args, cwd) in _processes().items()
        if pid not in spared
        and (_inside(option_value(args, "-config"), folder) or _inside(cwd, folder))
    }


def instance_ids(pid: int) -> set[str]:
    """ViZDoom instance ids process ``pid`` knows: the shared memory it maps (a controller
    maps its engine's message queues before the engine starts, and keeps them mapped after a
    failed start) and, for an engine, its own ``+viz_instance_id``."""
    ids: set[str] = set()
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            for line in f:
                _, found, path = line.rstrip().partition(b"/dev/shm/")
                name = path.decode(errors="replace").removesuffix(" (deleted)")
                ids.update(
                    name[len(prefix) :]
                    for prefix in VIZDOOM_SHM_PREFIXES
                    if found and name.startswith(prefix)
                )
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return ids
    engine_id = option_value(args, "+viz_instance_id")
    return ids | {engine_id} if engine_id else ids


def remove_shared_memory(ids: set[str]) -> None:
    """Unlinks the /dev/shm files of the ViZDoom instances ``ids`` (their engines are dead)."""
    for instance in ids:
        for prefix in VIZDOOM_SHM_PREFIXES:
            with contextlib.suppress(OSError):
                os.unlink(f"/dev/shm/{prefix}{instance}")


def _boot_seconds(started: str) -> float:
    """The wall-clock time of a process start given in clock ticks since boot (:func:`_started`)."""
    with open("/proc/stat") as f:
        boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    return boot + int(started) / os.sysconf("SC_CLK_TCK")


def _unused_since(since: float) -> set[str]:
    """Ids of the ViZDoom instances whose /dev/shm files were created at ``since`` or later and
    that no live process maps or runs as an engine."""
    found = set()
    for name in os.listdir("/dev/shm"):
        prefix = next((p for p in VIZDOOM_SHM_PREFIXES if name.startswith(p)), None)
        with contextlib.suppress(OSError):
            # btime has whole seconds: a second of slack keeps files made just after the start.
            if prefix and os.stat(f"/dev/shm/{name}").st_ctime >= since - 1:
                found.add(name[len(prefix) :])
    if found:
        for pid in find_processes():
            found -= instance_ids(pid)
    return found


class _Watchdog:
    def __init__(self, owner: int, owner_started: str) -> None:
        self.owner = owner
        self.owner_started = owner_started
        self.paths: set[str] = set()
        #: Instance ids seen per guarded path; their shared memory goes with the path.
        self.instances: dict[str, set[str]] = {}
        #: Instance ids the owner mapped: removed after the owner is gone, unless still in use.
        self.owner_instances: set[str] = set()

    def scan(self) -> None:
        self.owner_instances |= instance_ids(self.owner)
        for path in self.paths:
            ids = self.instances.setdefault(path, set())
            for pid in _engines_of(path, self.owner):
                ids |= instance_ids(pid)

    def sweep(self, path: str) -> None:
        """Kills what runs from ``path``, unlinks its engines' shared memory, removes it."""
        ids = self.instances.pop(path, set())
        deadline = time.monotonic() + _KILL_WAIT_S
        while (running := _engines_of(path, self.owner)) and time.monotonic() < deadline:
            for pid in running:
                ids |= instance_ids(pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        remove_shared_memory(ids)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def finish(self) -> None:
        """The owner is gone: sweeps every guarded path, then the owner's own instances whose
        engines are dead (an engine that is not ours keeps its files), then the instances no
        live process uses that were created since the owner started: an owner killed while an
        engine was starting (after its controller made the engine's message queues, before
        the next ``scan``) leaves those, and nothing names them any more."""
        for path in sorted(self.paths):
            self.sweep(path)
        live = {option_value(args, "+viz_instance_id") for args, _ in _processes().values()}
        remove_shared_memory(self.owner_instances - live)
        remove_shared_memory(_unused_since(_boot_seconds(self.owner_started)))

    def handle(self, line: str) -> None:
        if line == "scan":
            self.scan()
        elif line.startswith("+"):
            self.paths.add(line[1:])
        elif line.startswith("-"):
            path = line[1:]
            self.paths.discard(path)
            self.sweep(path)

    def run(self, stream: int) -> None:
        pending = b""
        while _started(self.owner) == self.owner_started:
            ready, _, _ = select.select([stream], [], [], _OWNER_CHECK_S)
            if not ready:
                continue
            chunk = os.read(stream, 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self.handle(line.decode(errors="replace"))
        self.finish()


def _main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # only the owner's end tells it to finish
    if os.fork() > 0:  # see _Client._start
        os._exit(0)
    _Watchdog(int(sys.argv[1]), sys.argv[2]).run(sys.stdin.fileno())


if __name__ == "__main__":
    _main()
