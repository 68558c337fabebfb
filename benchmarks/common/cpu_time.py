"""CPU seconds from /proc: of a process, of this process's named threads, of ViZDoom engines.

A benchmark on a machine whose CPUs are saturated is bounded by CPU per unit of work, not by
wall time, so the benchmarks split where that CPU goes: the engines (processes started with
``+viz_instance_id``), everything else this process started, and this process's own threads.
"""

from __future__ import annotations

import os
import threading
from collections import Counter

from sf_envs.lifecycle import command_line_option, find_processes

_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_cpu(path: str) -> float:
    """utime + stime of a /proc ``stat`` file in seconds; 0 for one that is gone."""
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def process_cpu(pid: int) -> float:
    """CPU seconds a process has used so far (0 once it is gone)."""
    return _stat_cpu(f"/proc/{pid}/stat")


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``."""
    children = find_processes(parent=pid)
    return children + [d for child in children for d in descendants(child)]


def is_engine(pid: int) -> bool:
    """Whether ``pid`` is a ViZDoom engine."""
    return command_line_option(pid, "+viz_instance_id") is not None


def children_cpu() -> tuple[float, float]:
    """(engines, other processes): CPU seconds so far of this process's descendants."""
    engines = others = 0.0
    for pid in descendants(os.getpid()):
        if is_engine(pid):
            engines += process_cpu(pid)
        else:
            others += process_cpu(pid)
    return engines, others


def thread_cpu() -> Counter[str]:
    """CPU seconds so far of this process's threads, by Python thread name; threads that
    Python did not start (torch's, for one) are summed under ``"native"``."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    cpu: Counter[str] = Counter()
    for tid in os.listdir("/proc/self/task"):
        cpu[names.get(int(tid), "native")] += _stat_cpu(f"/proc/self/task/{tid}/stat")
    return cpu
