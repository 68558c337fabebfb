"""The parent-worker command protocol: one-byte opcodes plus uint16 group ids, no payloads.

Everything a step needs (actions, seeds, results) already sits in shared memory, so a message
only says *what* to do to *which* groups. Messages travel over an ``AF_UNIX`` ``SOCK_SEQPACKET``
socket pair: it keeps message boundaries (no framing code), a worker's death closes its end so the
parent's wait wakes up at once (EOF), and ``selectors`` lets the parent sleep on all workers at
once with a timeout. One message per group, not per env: waking a sleeping process costs the
parent about as much CPU as one ViZDoom step (numbers in ``docs/benchmarks/env-speed.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sf_envs.vector.buffers import BufferLayout
from sf_envs.vector.units import UnitFactory

__all__ = [
    "DONE",
    "ERROR",
    "QUIT",
    "READY",
    "RESET",
    "STEP",
    "WORKER_LOG",
    "WorkerConfig",
    "decode_groups",
    "encode",
]

# Parent -> worker.
STEP = b"S"
RESET = b"R"
QUIT = b"Q"
# Worker -> parent.
READY = b"O"
DONE = b"D"
ERROR = b"E"

#: Largest message; an error carries a traceback, everything else is a few bytes.
MAX_MESSAGE = 1 << 16

#: The worker's stdout and stderr, in its workdir: ViZDoom's engines inherit them and print their
#: console there (network sync, map loads, fatal errors) instead of on the caller's terminal.
WORKER_LOG = "worker.log"


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker needs, sent once (pickled) right after it starts.

    Attributes:
        worker_index: Position of the worker, for error messages.
        factory: Builds the units; pickled by reference, so it must be importable.
        layout: The shared buffer layout to attach to.
        shm_name: The shared-memory segment name.
        groups: For every group this worker steps, ``(group_id, unit_start, unit_stop)``.
        same_step: Reset an ended episode within the step (SAME_STEP) instead of on the next one.
        restarted: This worker replaces a failed one: its units start "lost" and report a
            truncation with ``restarted`` set on their next step.
        workdir: Private folder for the engines' files (the worker also chdirs into it).
        cpu: The CPU the worker pins itself (and so the engines it starts) to; None: not pinned.
    """

    worker_index: int
    factory: UnitFactory
    layout: BufferLayout
    shm_name: str
    groups: tuple[tuple[int, int, int], ...]
    same_step: bool
    restarted: bool
    workdir: str
    cpu: int | None = None


def encode(opcode: bytes, groups: list[int] | tuple[int, ...]) -> bytes:
    """One message: the opcode then the group ids as little-endian uint16."""
    return opcode + np.asarray(groups, dtype="<u2").tobytes()


def decode_groups(message: bytes) -> np.ndarray:
    """The group ids of a message built by :func:`encode`."""
    return np.frombuffer(message, dtype="<u2", offset=1)
