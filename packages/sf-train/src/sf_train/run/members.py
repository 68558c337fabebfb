"""The policies of a run as the trainer holds them: the sampler's copy of each one's weights
(:class:`SharedWeights`), each one's learner and statistics (:class:`Member`), and what a
training call reports (:class:`Progress`, :class:`TrainResult`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sf_train.algo.learner import Learner
from sf_train.model.network import ActorCritic
from sf_train.run.checkpoint import Checkpoints
from sf_train.run.episodes import EpisodeWindow

__all__ = ["RETURN_WINDOW", "Counts", "Member", "Progress", "SharedWeights", "TrainResult"]


RETURN_WINDOW = 100
"""Episodes (over all envs, an equal share each) in the mean return shown, logged and
compared for ``best.pt``; see :class:`~sf_train.run.episodes.EpisodeWindow`."""


class SharedWeights:
    """The sampler's copy of the policy and its version, updated by the learner.

    The lock is held by the sampler during each forward pass and by the learner while it
    copies new weights in, so no action is ever chosen by half-updated weights.
    """

    def __init__(self, model: ActorCritic, version: int = 0) -> None:
        self.model = model
        self.version = version
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def acting(self) -> Iterator[int]:
        """Holds the weights fixed and yields their version (a :data:`PolicySource`)."""
        with self._lock:
            yield self.version

    @torch.no_grad()
    def publish(self, source: ActorCritic, version: int) -> None:
        """Copies ``source``'s parameters and buffers (normalisers) in as ``version``; an int8
        copy's weights are packed from ``source`` before the lock is taken."""
        int8 = None
        if self.model.int8 is not None and source is not self.model:
            int8 = source.pack_int8()
        with self._lock:
            if source is not self.model:
                for dst, src in zip(
                    self.model.state_dict().values(), source.state_dict().values(), strict=True
                ):
                    dst.copy_(src)
                if int8 is not None:
                    self.model.int8 = int8
            self.version = version


@dataclass
class Progress:
    """The progress so far, for displays, passed to ``on_progress`` after every batch.

    ``mean_return`` is the policy's (the first policy's, in a population); ``returns`` has
    every policy's, in order. ``done`` is the fraction of the run behind it, by frames or by
    the ``run.seconds`` budget when that runs out first: what a display's time left follows,
    since a wall-clock budget can end a run long before ``total_frames``."""

    frames: int
    total_frames: int
    fps: float
    mean_return: float | None
    policy_lag: float | None
    version: int
    returns: tuple[float | None, ...] = ()
    done: float = 0.0


@dataclass
class TrainResult:
    """How a :meth:`Trainer.train` call ended.

    Attributes:
        frames: Env frames trained on in total (over all resumed sessions and all policies).
        seconds: Wall time of this session's training loop.
        fps: Env frames per second of this session.
        mean_return: Mean return of the last episodes, an equal share from every env (see
            :class:`~sf_train.run.episodes.EpisodeWindow`); None until every env ended one. The
            first policy's in a population (``returns`` has every policy's).
        checkpoint: The last checkpoint written (the first policy's in a population).
        worker_restarts: Vector workers restarted in this session after a fault.
        dropped_frames: Frames of this session's experience discarded because of faults (not
            counted in ``frames``).
        returns: Every policy's mean return, in order.
        eval_seconds: Wall time this session spent evaluating checkpoints (its final one
            included).
        best: (frames, :meth:`~sf_train.evaluation.EvalResult.summary`) of the evaluation that
            made the first policy's ``best.pt`` in this session; None when ``best.pt`` is from
            an earlier session or nothing was evaluated.
    """

    frames: int
    seconds: float
    fps: float
    mean_return: float | None
    checkpoint: Path
    worker_restarts: int = 0
    dropped_frames: int = 0
    returns: tuple[float | None, ...] = ()
    eval_seconds: float = 0.0
    best: tuple[int, dict[str, Any]] | None = None


class Member:
    """One policy of the run: its learner, the sampler's copy of its weights, its episode
    statistics and its checkpoints, and what it did since the league last asked."""

    def __init__(
        self,
        index: int,
        learner: Learner,
        weights: SharedWeights,
        learning_envs: np.ndarray,
        checkpoints: Checkpoints,
        shaping: dict[str, float],
    ) -> None:
        self.index = index
        self.learner = learner
        self.weights = weights
        self.returns = EpisodeWindow(learning_envs, RETURN_WINDOW)
        self.lengths = EpisodeWindow(learning_envs, RETURN_WINDOW)
        self.checkpoints = checkpoints
        self.shaping = shaping
        self.frames = 0
        self.entropy: float | None = None
        self.since = Counts()
        self.frozen = False  # plays, does not learn (Trainer.freeze)

    @property
    def mean_return(self) -> float | None:
        """Its mean return over the last episodes, an equal share from every env; None until
        every env ended one (:class:`~sf_train.run.episodes.EpisodeWindow`)."""
        return self.returns.mean()


@dataclass
class Counts:
    """A policy's counts since the previous :meth:`Trainer.take_stats`."""

    frames: int = 0
    episodes: int = 0
    shaping: float = 0.0
    objective: float = 0.0
    objectives: int = 0
