"""Which trajectory batch, column and step each env writes its trajectory into.

Each policy has a ring of :class:`~sf_train.sampling.batch.TrajectoryBatch` objects of ``B``
columns of ``T`` steps. Trajectories are assigned to columns first-come first-served: an env that
finishes its ``T`` steps takes the next free column, in the oldest batch that still has one.
A batch is handed out when all of its ``B`` columns are complete, so envs of uneven speed never
stall each other and every batch holds exactly ``B`` whole trajectories. :class:`Columns` keeps
this bookkeeping for the :class:`~sf_train.sampling.sampler.Sampler`, which writes each step into the
cell it names: the sampler is the one writer of the batches' tensors, :class:`Columns` only
says where.

Faults are handled by dropping, never by patching, the trajectories they touch:

- A dropped trajectory (:meth:`Columns.drop`; the sampler drops those of the envs of a
  restarted worker) leaves its column a *hole*, which the next env needing a column fills from
  step 0.
- A failed worker's envs are silent until the engine declares it dead and while a replacement
  starts (a second or two), and the oldest batch waits for their columns while the learner has
  nothing to train on. The engine declares a hung worker dead only after its
  ``step_timeout_s`` (a minute by default, so that a slow but healthy game is not killed), so
  waiting is no option: an env not heard from for :data:`STUCK_ROUNDS` rounds of ``recv()`` is
  *stuck*, and the next env that needs a column takes over the column it writes in the oldest
  batch (the stuck env's trajectory is dropped, the column rewritten from step 0), so that
  batch completes ``T`` steps later. Healthy envs answer every round, so they never take
  columns from each other; in a run without faults no env is stuck and nothing is dropped.
- A stuck env that answers again (or its replacement) takes the next free column. If the
  healthy envs have filled every trajectory batch meanwhile, an env without a column keeps acting (its
  recurrent state stays in step) but records nothing until a column is free.

In a population, a row that changes policy closes its column at the episode's end
(:meth:`Columns.leave`): the rest of the column is padding that the learner ignores
(``TrajectoryBatch.valid``), so the batch completes without waiting. On a duel of 1,000-step
episodes and ``T = 32`` that pads about 1.5% of the learner's work and wastes no env step.
(Handing the rest of the column to the next row that starts an episode with that policy wastes
nothing, but on long episodes such columns wait so long that every batch fills: a quarter of
the steps went unrecorded in a measurement with 300-step episodes.)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sf_train.sampling.batch import TrajectoryBatch

__all__ = ["STUCK_ROUNDS", "Columns", "Filling"]


STUCK_ROUNDS = 8
"""An env not heard from for this many rounds of ``recv()`` (a round: ``num_envs / batch_size``
calls, in which every healthy env answers once) counts as stuck, and the oldest batch's column
it writes goes to another env. Rounds, not seconds, so that a pause of the whole sampler (a
checkpoint's evaluation) makes no env stuck; 8 leaves room for healthy envs of uneven speed,
and at thousands of steps per second it is still a fraction of a second."""


@dataclass
class Filling:
    """A trajectory batch being filled: how many columns are handed to envs and how many are
    complete.

    Attributes:
        batch: The trajectory batch.
        owners: The env that writes or wrote each column (-1: none yet, or dropped).
        writing: Whether each column's trajectory is being written (assigned, not complete).
        holes: Columns (below ``assigned``) whose trajectories were dropped, to hand out again.
    """

    batch: TrajectoryBatch
    owners: np.ndarray
    writing: np.ndarray
    assigned: int = 0
    complete: int = 0
    holes: list[int] = field(default_factory=list)


class Columns:
    """Where each env writes its trajectory: a trajectory batch being filled
    (:class:`Filling`), a column and a step; and the count of recorded and dropped steps that
    each :class:`~sf_train.sampling.batch.CollectResult` reports.

    Args:
        batches: Each policy's ring of trajectory batches, all of ``T`` steps by ``B``
            columns; a batch is filled, handed out by :meth:`take` and returned by
            :meth:`release`.
        num_envs: Envs (rows) of the vector env.
        recvs_per_round: ``recv()`` calls in which every healthy env answers once, the unit of
            :data:`STUCK_ROUNDS`.

    Attributes:
        col: Each env's column in its trajectory batch (meaningless while it has none).
        t: Each env's step in its column: the next to record.
    """

    def __init__(
        self,
        batches: Sequence[Sequence[TrajectoryBatch]],
        num_envs: int,
        recvs_per_round: int,
    ) -> None:
        self.T, self.B = batches[0][0].T, batches[0][0].B
        self._free = [deque(ring) for ring in batches]
        self._filling: list[list[Filling]] = [[] for _ in batches]
        # Each env's batch being filled; None before its start and while it has no column.
        self._writes: list[Filling | None] = [None] * num_envs
        self.col = np.zeros(num_envs, dtype=np.int64)
        self.t = np.zeros(num_envs, dtype=np.int64)
        self._steps = np.zeros(len(batches), dtype=np.int64)
        self._dropped = 0
        # The recv() count when each env last answered, to tell stuck envs.
        self._recvs = 0
        self._heard = np.zeros(num_envs, dtype=np.int64)
        self._stuck_after = STUCK_ROUNDS * recvs_per_round

    @property
    def untouched(self) -> bool:
        """Whether no env has been given a column yet."""
        return all(f is None for f in self._writes)

    def answered(self, env_ids: np.ndarray) -> None:
        """Notes a ``recv()``: ``env_ids`` answered in it (none of them is stuck)."""
        self._recvs += 1
        self._heard[env_ids] = self._recvs

    def refill(self, env_ids: np.ndarray, policy_of_env: np.ndarray) -> None:
        """Gives each of ``env_ids`` that has no column, or has filled its own, a column of its
        policy (``policy_of_env[env]``) to write its next trajectory into, or none (it records
        nothing for now) when every batch is taken by envs that answer."""
        for e in env_ids.tolist():
            if self._writes[e] is None or self.t[e] == self.T:
                self._assign(e, int(policy_of_env[e]))

    def by_batch(self, env_ids: np.ndarray, rows: np.ndarray) -> list[tuple[Filling, np.ndarray]]:
        """Groups recv() rows by the trajectory batch their env writes into (vectorised writes
        per group); rows of envs without a column are left out."""
        groups: dict[int, tuple[Filling, list[int]]] = {}
        for r in rows:
            filling = self._writes[env_ids[r]]
            if filling is not None:
                groups.setdefault(id(filling), (filling, []))[1].append(int(r))
        return [(filling, np.array(rs)) for filling, rs in groups.values()]

    def advance(self, filling: Filling, env_ids: np.ndarray) -> np.ndarray:
        """Moves ``env_ids`` (all writing in ``filling``) past the step just recorded; returns
        which of them completed their column (a mask over ``env_ids``)."""
        self.t[env_ids] += 1
        full = self.t[env_ids] == self.T
        if full.any():
            done = env_ids[full]
            filling.complete += len(done)
            filling.writing[self.col[done]] = False
        return full

    def count(self, policy: int, acted: int, written: int) -> None:
        """Counts one ``recv()``'s actions of ``policy``: ``acted`` rows chose one, ``written``
        of them into a column (the rest, without a column after a fault, are dropped)."""
        self._steps[policy] += written
        self._dropped += acted - written

    def counts(self) -> tuple[np.ndarray, int]:
        """The steps recorded (per policy) and dropped since the last call, which restarts
        both counts."""
        steps, dropped = self._steps.copy(), self._dropped
        self._steps[:] = 0
        self._dropped = 0
        return steps, dropped

    def drop(self, env_ids: np.ndarray) -> None:
        """Discards the unfinished trajectories of ``env_ids`` (their columns become holes);
        they record nothing until :meth:`refill` gives them a column again."""
        for e in env_ids.tolist():
            filling = self._writes[e]
            if filling is None:
                continue
            col = int(self.col[e])
            filling.holes.append(col)
            filling.owners[col] = -1
            filling.writing[col] = False
            # Steps 0..t hold actions (step t's is in flight or was lost), all counted.
            lost = int(self.t[e]) + 1
            self._steps[filling.batch.policy] -= lost
            self._dropped += lost
            self._writes[e] = None

    def leave(self, env_id: int) -> tuple[TrajectoryBatch, int, int] | None:
        """``env_id`` ended an episode and changes policy: its column counts as complete.

        Returns:
            ``(batch, column, t)`` when steps ``t`` to ``T - 1`` of that column are to be
            padded (the sampler writes the padding), else None.
        """
        filling = self._writes[env_id]
        self._writes[env_id] = None
        if filling is None:
            return None
        col, t = int(self.col[env_id]), int(self.t[env_id])
        if t == self.T:
            return None
        filling.writing[col] = False
        filling.complete += 1
        return filling.batch, col, t

    def ready(self) -> int | None:
        """A policy whose oldest batch is complete, if any."""
        for policy, filling in enumerate(self._filling):
            if filling and filling[0].complete == self.B:
                return policy
        return None

    def take(self, policy: int) -> TrajectoryBatch:
        """Hands out ``policy``'s oldest trajectory batch, which :meth:`ready` found complete."""
        return self._filling[policy].pop(0).batch

    def release(self, batch: TrajectoryBatch) -> None:
        """Returns a trajectory batch handed out by :meth:`take` to its policy's ring."""
        self._free[batch.policy].append(batch)

    def _assign(self, env_id: int, policy: int) -> None:
        found = self._free_column(policy)
        if found is None:
            self._writes[env_id] = None
            return
        filling, col = found
        self._writes[env_id] = filling
        self.col[env_id] = col
        self.t[env_id] = 0
        filling.owners[col] = env_id
        filling.writing[col] = True

    def _free_column(self, policy: int) -> tuple[Filling, int] | None:
        """In order: a hole; a stuck env's column in the oldest batch (which the learner is
        waiting for); the next column of the oldest batch that has one; a fresh batch."""
        filling = self._filling[policy]
        for f in filling:
            if f.holes:
                return f, f.holes.pop()
        if filling:
            stuck = self._stuck_column(filling[0])
            if stuck is not None:
                return stuck
        for f in filling:
            if f.assigned < self.B:
                f.assigned += 1
                return f, f.assigned - 1
        free = self._free[policy]
        if free:
            f = Filling(free.popleft(), np.full(self.B, -1, np.int64), np.zeros(self.B, bool))
            filling.append(f)
            f.assigned = 1
            return f, 0
        if not filling:
            raise RuntimeError(
                "every trajectory batch is in use: release() each collected batch after "
                "training on it, or raise num_batches"
            )
        return None

    def _stuck_column(self, filling: Filling) -> tuple[Filling, int] | None:
        """Frees the column of ``filling`` whose env has been silent longest, if that env is
        stuck (silent for more than STUCK_ROUNDS rounds of recv() calls); drops its
        trajectory."""
        cols = np.flatnonzero(filling.writing)
        if not len(cols):
            return None
        silent = self._recvs - self._heard[filling.owners[cols]]
        i = int(np.argmax(silent))
        if silent[i] <= self._stuck_after:
            return None
        self.drop(filling.owners[cols[i : i + 1]])
        return filling, filling.holes.pop()
