"""Shared-memory buffers, one array per field shaped ``[num_envs, ...]``.

The parent creates a single POSIX shared-memory segment and carves every field out of it at
aligned offsets; workers attach the same segment by name and build identical views. One segment
instead of one per field keeps cleanup to a single ``unlink`` (nothing to leak half-way) while each
field still reads as its own ``[num_envs, ...]`` array, so a batch of consecutive envs is a plain
slice of every field.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
from dataclasses import dataclass
from multiprocessing import shared_memory
from typing import cast

import numpy as np
from gymnasium import spaces

from sf_envs.errors import OptionError

__all__ = [
    "SHM_PREFIX",
    "BufferLayout",
    "FieldSpec",
    "SharedBuffers",
    "action_field",
    "observation_fields",
    "observation_names",
    "observation_of",
]

#: Prefix of every segment this package creates; tests list ``/dev/shm`` for it to find leaks.
SHM_PREFIX = "sf_vec_"

# Cache-line alignment keeps two fields from sharing a line that two processes write.
_ALIGN = 64


@dataclass(frozen=True)
class FieldSpec:
    """One shared field: ``shape`` excludes the leading env axis."""

    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class BufferLayout:
    """The fields and the env count; picklable, sent to workers so they rebuild the same views."""

    num_envs: int
    fields: tuple[FieldSpec, ...]

    def offsets(self) -> tuple[dict[str, int], int]:
        """Byte offset of every field and the total segment size."""
        offsets, cursor = {}, 0
        for spec in self.fields:
            offsets[spec.name] = cursor
            nbytes = self.num_envs * int(np.prod(spec.shape, dtype=np.int64))
            cursor += -(-nbytes * np.dtype(spec.dtype).itemsize // _ALIGN) * _ALIGN
        return offsets, max(cursor, _ALIGN)


class _Mapping:
    """This process's mapping of a segment, invisible to any resource tracker.

    Workers are plain ``python -m`` processes, not multiprocessing children, so before Python
    3.13 ``SharedMemory(name)`` would register the segment with a fresh tracker of the worker's
    own, which unlinks it (and warns about a "leak") when the worker exits: a restarted worker
    could then no longer attach. Mapping ``/dev/shm/<name>`` directly avoids the tracker. The
    parent maps it the same way, because ``SharedMemory`` complains from ``__del__`` when a
    caller still holds a view at close; a bare mmap just lives on until the last view dies.
    """

    def __init__(self, name: str) -> None:
        fd = os.open(os.path.join("/dev/shm", name), os.O_RDWR)
        try:
            self._mmap = mmap.mmap(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        self.buf = memoryview(self._mmap)

    def close(self) -> None:
        try:
            self.buf.release()
            self._mmap.close()
        except BufferError:
            pass  # a caller still holds a view: the mapping goes when that view does


class SharedBuffers:
    """Named numpy views over one shared-memory segment.

    Args:
        layout: The fields to lay out.
        name: Attach to this existing segment (workers); create a new one when None (parent).

    Only the creator unlinks the segment; its Python resource tracker also unlinks it if the
    creator dies without closing (even by SIGKILL), so a crashed run leaves no segment behind.
    """

    def __init__(self, layout: BufferLayout, name: str | None = None) -> None:
        self.layout = layout
        offsets, size = layout.offsets()
        self._owned: shared_memory.SharedMemory | None = None
        if name is None:
            name = f"{SHM_PREFIX}{secrets.token_hex(6)}"
            # Created through SharedMemory so the resource tracker unlinks it if we crash.
            self._owned = shared_memory.SharedMemory(name=name, create=True, size=size)
            self._owned.close()
        self.owner = self._owned is not None
        self.name = name
        self._map: _Mapping | None = _Mapping(name)
        self.arrays: dict[str, np.ndarray] = {}
        for spec in layout.fields:
            count = layout.num_envs * int(np.prod(spec.shape, dtype=np.int64))
            flat = np.frombuffer(
                self._map.buf, dtype=spec.dtype, count=count, offset=offsets[spec.name]
            )
            self.arrays[spec.name] = flat.reshape((layout.num_envs, *spec.shape))

    def __getitem__(self, field: str) -> np.ndarray:
        return self.arrays[field]

    def close(self) -> None:
        """Drops the views, unmaps, and unlinks when this process created the segment."""
        if self._map is None:
            return
        self.arrays.clear()
        self._map.close()
        self._map = None
        if self._owned is not None:
            with contextlib.suppress(FileNotFoundError):
                self._owned.unlink()


def observation_fields(space: spaces.Space) -> dict[str, FieldSpec]:
    """The shared fields that hold an observation of ``space``, by Dict key (``""`` for a Box):
    ``obs`` for a Box, ``obs.KEY`` for each Box of a Dict.

    Raises:
        OptionError: For any other space, naming the ones the engine holds.
    """
    if isinstance(space, spaces.Box):
        return {"": FieldSpec("obs", space.shape, space.dtype.str)}
    if isinstance(space, spaces.Dict):
        boxes = {k: s for k, s in space.spaces.items() if isinstance(s, spaces.Box)}
        if len(boxes) == len(space.spaces):
            return {k: FieldSpec(f"obs.{k}", s.shape, s.dtype.str) for k, s in boxes.items()}
    raise OptionError(
        f"the vector engine holds Box observations (any shape and dtype) or a Dict of Boxes, "
        f"got {space}; wrap the env (e.g. gymnasium.wrappers.FlattenObservation) to give one"
    )


def action_field(space: spaces.Space) -> FieldSpec:
    """The shared field of the actions of ``space``.

    Raises:
        OptionError: For a space other than Discrete, MultiDiscrete or Box.
    """
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return FieldSpec("actions", cast(tuple[int, ...], space.shape), "int64")
    if isinstance(space, spaces.Box):
        return FieldSpec("actions", space.shape, space.dtype.str)
    raise OptionError(
        f"the vector engine takes Discrete, MultiDiscrete or Box actions, got {space}; wrap the "
        "env to give one of them"
    )


def observation_names(space: spaces.Space) -> dict[str, str]:
    """The shared field of each Dict key of ``space`` (``""`` for a Box): see
    :func:`observation_fields`."""
    return {key: spec.name for key, spec in observation_fields(space).items()}


def observation_of(
    arrays: dict[str, np.ndarray],
    names: dict[str, str],
    rows: slice | None = None,
    prefix: str = "",
) -> np.ndarray | dict[str, np.ndarray]:
    """The observation held in ``arrays`` (the fields ``names`` gives, each with ``prefix``, e.g.
    ``final_``), as its space has it: one array for a Box, a dict by key for a Dict; only
    ``rows`` of each when given (views, not copies)."""
    if "" in names:  # a Box: one lookup, no dict built (the faces call this every recv)
        array = arrays[prefix + names[""]]
        return array if rows is None else array[rows]
    return {
        key: arrays[prefix + name] if rows is None else arrays[prefix + name][rows]
        for key, name in names.items()
    }
