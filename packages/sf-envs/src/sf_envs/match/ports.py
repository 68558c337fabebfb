"""UDP ports for match hosts, allocated without races between threads and processes.

Two hosts on one port is fatal (the second engine segfaults its Python), so a port is handed out
only when (1) an exclusive ``flock`` on a per-port lock file succeeds, which excludes every other
sf match on the machine — other threads, processes and parallel test runs — for as long as the
lease is held, and (2) binding the port succeeds, which shows that nothing else holds it. The
lease keeps that socket bound, so no other program can take the port either, until the match
host is about to bind it (:meth:`PortLease.unbind`). Ports come from a range below Linux's
ephemeral range (32768-60999), so the kernel never hands them to outgoing sockets.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import socket
import tempfile

__all__ = ["PORT_RANGE", "PortLease", "PortsExhaustedError", "lease_port"]

#: Ports tried, inclusive; below the ephemeral range and above common service ports.
PORT_RANGE: tuple[int, int] = (23000, 32000)

# One folder per machine whatever TMPDIR a process has: leases only exclude each other when every
# process locks the same files.
_LOCK_DIR = os.path.join(
    "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir(), "sf_vizdoom_ports"
)


class PortsExhaustedError(RuntimeError):
    """No port in :data:`PORT_RANGE` could be leased."""


def _bind(port: int) -> socket.socket | None:
    """A UDP socket bound to ``port`` on all interfaces (as the engine binds), or None if taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind(("", port))
    except OSError:
        sock.close()
        return None
    return sock


class PortLease:
    """A port reserved for one match host until :meth:`release` (or garbage collection).

    While :attr:`bound`, the lease's own socket occupies the port so that no program outside sf
    can take it; :meth:`unbind` frees it for the engine just before the engine binds it.
    The lock file stays on disk on purpose: deleting it while another process opens it would let
    two processes lock different inodes for the same port.
    """

    def __init__(self, port: int, fd: int, sock: socket.socket) -> None:
        self.port = port
        self._fd: int | None = fd
        self._sock: socket.socket | None = sock

    @property
    def bound(self) -> bool:
        return self._sock is not None

    def unbind(self) -> None:
        """Lets an engine bind the port; the lock still keeps other sf matches off it."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def rebind(self) -> bool:
        """Occupies the port again (after a start probe); False when someone else took it."""
        if self._sock is None:
            self._sock = _bind(self.port)
        return self._sock is not None

    def release(self) -> None:
        """Frees the port for other matches. Idempotent."""
        self.unbind()
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __del__(self) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"PortLease(port={self.port}, held={self._fd is not None}, bound={self.bound})"


def lease_port(port_range: tuple[int, int] = PORT_RANGE, attempts: int = 200) -> PortLease:
    """Leases a free UDP port from ``port_range``, bound by the lease until it is unbound.

    Starting points are random so that concurrent allocators rarely contend for the same lock.

    Raises:
        PortsExhaustedError: after ``attempts`` ports were locked or busy.
    """
    low, high = port_range
    os.makedirs(_LOCK_DIR, exist_ok=True)
    rng = random.Random()  # seeded from os.urandom: independent of the user's global seed
    for _ in range(attempts):
        port = rng.randint(low, high)
        fd = os.open(os.path.join(_LOCK_DIR, f"{port}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                continue
            raise
        sock = _bind(port)
        if sock is not None:
            return PortLease(port, fd, sock)
        os.close(fd)
    raise PortsExhaustedError(
        f"no free UDP port in {low}-{high} after {attempts} tries; close finished matches "
        f"or free ports in that range (lock files in {_LOCK_DIR})"
    )
