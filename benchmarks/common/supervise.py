"""Running a command tree for a fixed wall time, from /proc: its peak memory, the processes it
started and the /dev/shm files they mapped, and a stop that leaves none of them behind.

Used by ``sample_factory.py`` to give each trainer the same budget and measure it the same way.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from sf_envs.lifecycle import interruptible

__all__ = ["Supervision", "run_for"]

STOP_SIGNALS = ((signal.SIGINT, 30.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0))
"""Each stop signal and the seconds given to it before the next (the first's: ``grace``)."""
SAMPLE_SECONDS = 0.5


Identity = tuple[int, int]  # pid and start time: a pid alone may be reused


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(ppid, pgid, start time, state) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2]), int(fields[19]), fields[0]


def _process_tree(root: int, pgid: int) -> set[Identity]:
    """The live processes of the group ``pgid`` and every descendant of ``root``."""
    table = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) and stat[3] != "Z":
            table[int(entry.name)] = stat
    found, frontier = set(), [root]
    while frontier:
        pid = frontier.pop()
        if pid in table and pid not in found:
            found.add(pid)
            frontier.extend(p for p, s in table.items() if s[0] == pid)
    found |= {pid for pid, s in table.items() if s[1] == pgid}
    return {(pid, table[pid][2]) for pid in found}


def _alive(identities: set[Identity]) -> set[Identity]:
    return {(pid, t) for pid, t in identities if (s := _stat(pid)) and s[2] == t and s[3] != "Z"}


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of a process in KiB; zeros when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0, 0
    values = {line.split(":")[0]: int(line.split()[1]) for line in lines if line.endswith("kB")}
    return values.get("Rss", 0), values.get("Pss", 0)


def _shm_files(pid: int) -> set[str]:
    """The /dev/shm files a process maps (ViZDoom's screen buffers and message queues)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    return {line[line.index("/dev/shm/") :] for line in maps.splitlines() if "/dev/shm/" in line}


@dataclass
class Supervision:
    """What happened while a command ran for its budget."""

    start: float
    seconds: float
    exit_code: int | None
    stop_signal: str
    peak_rss_mib: float
    peak_pss_mib: float
    processes: dict[str, int]  # command name -> how many ran during the budget
    leftover_processes: int
    leftover_shm: list[str]


@dataclass
class _Watch:
    """What the sampling loop has seen of one process tree so far."""

    seen: set[Identity] = field(default_factory=set)
    names: dict[Identity, str] = field(default_factory=dict)
    shm: set[str] = field(default_factory=set)
    peak_rss_kib: int = 0
    peak_pss_kib: int = 0
    samples: int = 0

    def sample(self, root: int) -> None:
        tree = _process_tree(root, root)
        self.names.update((ident, _name(ident[0])) for ident in tree - self.seen)
        self.seen |= tree
        memory = [_memory_kib(pid) for pid, _ in tree]
        self.peak_rss_kib = max(self.peak_rss_kib, sum(m[0] for m in memory))
        self.peak_pss_kib = max(self.peak_pss_kib, sum(m[1] for m in memory))
        if self.samples % 4 == 0:  # maps are long; shm files live as long as their engine
            self.shm |= {path for pid, _ in tree for path in _shm_files(pid)}
        self.samples += 1


def run_for(
    command: list[str], folder: Path, seconds: float, grace: float = STOP_SIGNALS[0][1]
) -> Supervision:
    """Runs ``command`` in ``folder`` (output to ``train.log`` there) for ``seconds`` of wall
    time or until it exits, then stops every process it started (SIGINT, and after ``grace``
    seconds harder signals) and removes the /dev/shm files they mapped that are still there."""
    watch = _Watch()
    with (folder / "train.log").open("wb") as log:
        start = time.time()
        proc = subprocess.Popen(
            command,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, signalled as a whole
            preexec_fn=interruptible,
        )
        try:
            while (now := time.time()) < start + seconds and proc.poll() is None:
                watch.sample(proc.pid)
                time.sleep(max(0.0, min(SAMPLE_SECONDS, start + seconds - now)))
            exit_code = proc.poll()
        finally:  # also on Ctrl-C: the command's own session would not get it
            stop_signal, leftovers = _stop(proc, watch.seen, grace)
    left_shm = sorted(p for p in watch.shm if os.path.exists(p))
    for path in left_shm:
        Path(path).unlink(missing_ok=True)
    return Supervision(
        start=start,
        seconds=seconds,
        exit_code=exit_code,
        stop_signal=stop_signal,
        peak_rss_mib=watch.peak_rss_kib / 1024,
        peak_pss_mib=watch.peak_pss_kib / 1024,
        processes=dict(collections.Counter(watch.names.values())),
        leftover_processes=leftovers,
        leftover_shm=left_shm,
    )


def _signal(proc: subprocess.Popen[bytes], alive: set[Identity], sig: signal.Signals) -> None:
    """Sends ``sig`` to the root's group and, after SIGINT, to each live process that left the
    group. SIGINT goes to the group alone, as a terminal's Ctrl-C does: a trainer's engine
    workers run in sessions of their own and are ended by their owner (signalled directly,
    they would fail and be restarted during its final checkpoint)."""
    strays = (
        []
        if sig == signal.SIGINT
        else [pid for pid, _ in alive if (s := _stat(pid)) and s[1] != proc.pid]
    )
    for send, target in [(os.killpg, proc.pid), *((os.kill, pid) for pid in strays)]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            send(target, sig)


def _stop(proc: subprocess.Popen[bytes], seen: set[Identity], grace: float) -> tuple[str, int]:
    """Signals the command's processes, harder each time, until all are gone; the first
    signal is given ``grace`` seconds.

    Returns:
        The last signal sent ("none" if all had exited) and how many processes outlived the
        first signal.
    """
    used, leftovers = "none", 0
    waits = [grace, *(wait for _, wait in STOP_SIGNALS[1:])]
    for number, ((sig, _), wait) in enumerate(zip(STOP_SIGNALS, waits, strict=True)):
        seen |= _process_tree(proc.pid, proc.pid)
        alive = _alive(seen)
        if not alive and proc.poll() is not None:
            break
        if number == 1:
            leftovers = len(alive)
        used = sig.name
        _signal(proc, alive, sig)
        deadline = time.time() + wait
        while time.time() < deadline and (proc.poll() is None or _alive(seen)):
            time.sleep(0.2)
    proc.wait(timeout=10)
    if survivors := _alive(seen):
        raise RuntimeError(f"processes {sorted(survivors)} survived SIGKILL")
    return used, leftovers
