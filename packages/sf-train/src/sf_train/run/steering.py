"""The league's side of a :class:`~sf_train.run.trainer.Trainer`: what a population driver reads
(stats, matches) and steers (hyperparameters, shaping, copies of policies between trainers,
frozen policies) between batches.

- :class:`SteerableTrainer`: that face as a Protocol, all a driver may rely on. The trainer of
  one process satisfies it, and so may any class that spreads a population over processes or
  machines (sf-league's shards), which sf-train need not know.
- :func:`end_training`: how every ``train()`` call of such a trainer ends.
- :class:`PopulationControl`: the face's per-policy controls, a mixin of the trainer, whose
  state it uses.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from sf_train.algo.learner import learning_rate
from sf_train.config.schema import Config, ConfigError, validate
from sf_train.run.checkpoint import Checkpoints
from sf_train.run.members import Counts, Member, TrainResult
from sf_train.run.population import HYPERPARAMETERS, MatchBook, MatchRecord, PolicyStats
from sf_train.sampling.protocols import Pairing

if TYPE_CHECKING:
    from sf_train.sampling.pool import SamplerPool
    from sf_train.sampling.sampler import Sampler

__all__ = [
    "PopulationControl",
    "SteerableTrainer",
    "SteeredMember",
    "end_training",
    "tree_map",
]

log = logging.getLogger(__name__)


class SteeredMember(Protocol):
    """What a population driver reads of one policy of a :class:`SteerableTrainer`."""

    @property
    def index(self) -> int:
        """The policy's index in its trainer."""
        ...

    @property
    def frames(self) -> int:
        """Env frames it played in the whole run."""
        ...

    @property
    def checkpoints(self) -> Checkpoints:
        """Its checkpoints (``latest()`` after :meth:`SteerableTrainer.save_checkpoint`)."""
        ...

    @property
    def mean_return(self) -> float | None:
        """Its mean return over the last episodes of every env (None before there are any)."""
        ...


class SteerableTrainer(Protocol):
    """What a population driver needs of a trainer, called between two of its batches (from
    ``on_progress``) or around :meth:`train`; see :mod:`sf_train.run.population` for the data
    it exchanges. :class:`~sf_train.run.trainer.Trainer` satisfies it."""

    @property
    def frames(self) -> int:
        """Env frames trained on so far, over every session and policy."""
        ...

    @property
    def members(self) -> Sequence[SteeredMember]:
        """Every policy, in order."""
        ...

    @property
    def writer(self) -> SummaryWriter:
        """The run's event file, which the driver logs into too."""
        ...

    def take_stats(self) -> list[PolicyStats]: ...

    def take_matches(self) -> list[MatchRecord]: ...

    def hyperparameters(self, policy: int) -> dict[str, float]: ...

    def set_hyperparameters(self, policy: int, values: dict[str, float]) -> None: ...

    def shaping(self, policy: int) -> dict[str, float]: ...

    def set_shaping(self, policy: int, weights: dict[str, float]) -> None: ...

    def copy_policy(self, source: int, target: int) -> None: ...

    def freeze(self, policy: int, frozen: bool = True) -> None: ...

    def set_pairing(self, pairing: Pairing) -> None: ...

    @property
    def eval_seconds(self) -> float:
        """Wall time spent evaluating checkpoints in this session."""
        ...

    @property
    def best_evaluation(self) -> tuple[int, dict[str, Any]] | None:
        """(frames, summary) of the evaluation behind the first policy's ``best.pt``, when this
        session made it."""
        ...

    def save_checkpoint(self, final: bool = False) -> Path:
        """Writes every policy's checkpoint; returns the first policy's. A ``final`` one (the
        run's last) is evaluated whenever the trainer evaluates checkpoints at all."""
        ...

    def request_stop(self) -> None: ...

    def train(self) -> TrainResult: ...

    def close(self) -> None: ...


def end_training(
    trainer: SteerableTrainer,
    started: float,
    start_frames: int,
    worker_restarts: int = 0,
    dropped_frames: int = 0,
) -> TrainResult:
    """The end of a ``train()`` call: every policy's final checkpoint, the event file flushed,
    and what the call did.

    Args:
        trainer: The trainer whose call ends.
        started: ``time.perf_counter()`` when the call started.
        start_frames: ``trainer.frames`` then.
        worker_restarts: Vector workers restarted in the call.
        dropped_frames: Frames of the call's experience discarded because of faults.
    """
    seconds = time.perf_counter() - started
    checkpoint = trainer.save_checkpoint(final=True)
    if trainer.eval_seconds:
        wall = time.perf_counter() - started
        log.info(
            "evaluating checkpoints took %.1f s, %.1f%% of %.1f s of wall time",
            trainer.eval_seconds,
            100 * trainer.eval_seconds / wall,
            wall,
        )
    trainer.writer.flush()
    returns = tuple(m.mean_return for m in trainer.members)
    frames = trainer.frames
    return TrainResult(
        frames=frames,
        seconds=seconds,
        fps=(frames - start_frames) / seconds if seconds > 0 else 0.0,
        mean_return=returns[0],
        checkpoint=checkpoint,
        worker_restarts=worker_restarts,
        dropped_frames=dropped_frames,
        returns=returns,
        eval_seconds=trainer.eval_seconds,
        best=trainer.best_evaluation,
    )


def tree_map(tree: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied to every leaf of nested dicts, lists and tuples."""
    if isinstance(tree, dict):
        return {k: tree_map(v, fn) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(tree_map(v, fn) for v in tree)
    return fn(tree)


def _cpu_copy(leaf: Any) -> Any:
    return leaf.detach().to("cpu", copy=True) if isinstance(leaf, torch.Tensor) else leaf


class PopulationControl:
    """Stats, matches and per-policy controls of a trainer (see the module docstring)."""

    if TYPE_CHECKING:  # the trainer's state that this mixin reads and steers
        cfg: Config
        members: list[Member]
        matches: MatchBook
        variable_names: tuple[str, ...]
        sampler: Sampler | SamplerPool
        _learn_lock: threading.Lock

        def _progress(self) -> float: ...
        def _checked_shaping(self, weights: dict[str, float]) -> dict[str, float]: ...

    # -- the population API ------------------------------------------------------------

    def take_stats(self) -> list[PolicyStats]:
        """Every policy's :class:`PolicyStats` since the previous call."""
        stats = []
        for m in self.members:
            since, m.since = m.since, Counts()
            stats.append(
                PolicyStats(
                    policy=m.index,
                    frames=since.frames,
                    total_frames=m.frames,
                    episodes=since.episodes,
                    mean_return=m.returns.mean(),
                    mean_shaping=since.shaping / since.episodes if since.episodes else None,
                    mean_objective=(
                        since.objective / since.objectives if since.objectives else None
                    ),
                    version=m.learner.version,
                    entropy=m.entropy,
                )
            )
        return stats

    def take_matches(self) -> list[MatchRecord]:
        """The games' episodes that ended since the previous call, every seat's policy with
        its result."""
        return self.matches.take()

    def hyperparameters(self, policy: int) -> dict[str, float]:
        """The policy's current values of :data:`~sf_train.run.population.HYPERPARAMETERS`."""
        algo = self.members[policy].learner.cfg
        return {name: float(getattr(algo, name)) for name in HYPERPARAMETERS}

    def set_hyperparameters(self, policy: int, values: dict[str, float]) -> None:
        """Changes some of a policy's :data:`~sf_train.run.population.HYPERPARAMETERS` from its
        next training step on.

        Raises:
            ConfigError: For a name outside HYPERPARAMETERS or an invalid value.
        """
        unknown = sorted(values.keys() - set(HYPERPARAMETERS))
        if unknown:
            raise ConfigError(
                [f"{', '.join(unknown)}: not a policy hyperparameter; use {HYPERPARAMETERS}"]
            )
        member = self.members[policy]
        with self._learn_lock:
            learner = member.learner
            changes: dict[str, Any] = {k: float(v) for k, v in values.items()}
            algo = dataclasses.replace(learner.cfg, **changes)
            validate(dataclasses.replace(self.cfg, algo=algo))
            learner.cfg = algo
            if "learning_rate" in values:
                learner.lr = learning_rate(algo, self._progress())

    def shaping(self, policy: int) -> dict[str, float]:
        """The policy's shaping weights by game variable (absent: 0)."""
        return dict(self.members[policy].shaping)

    def set_shaping(self, policy: int, weights: dict[str, float]) -> None:
        """Sets the policy's shaping weights (variables not named get 0) from its next step.

        Raises:
            ConfigError: For a variable the env does not report.
        """
        member = self.members[policy]
        member.shaping = self._checked_shaping(dict(weights))
        vector = np.array([member.shaping.get(n, 0.0) for n in self.variable_names])
        self.sampler.set_shaping(policy, vector if vector.any() else None)

    def export_policy(self, policy: int) -> dict[str, Any]:
        """What makes a policy of this trainer or of another one a copy of ``policy``: weights,
        normalisers, optimiser state, running advantage moments, learning rate, hyperparameters
        and shaping weights
        (copies, tensors on the CPU: picklable, to send to another process)."""
        member = self.members[policy]
        with self._learn_lock:
            learner = member.learner
            state = tree_map(learner.state_dict(), _cpu_copy)
        return state | {
            "hyperparameters": self.hyperparameters(policy),
            "shaping": dict(member.shaping),
        }

    def import_policy(self, policy: int, state: dict[str, Any]) -> None:
        """Makes ``policy`` what :meth:`export_policy` gave (PBT's exploit step). Its version
        jumps past ``max_policy_lag``, so the experience its old weights sampled is not
        learned from."""
        member = self.members[policy]
        with self._learn_lock:
            learner = member.learner
            learner.load_state_dict(state)
            learner.cfg = dataclasses.replace(learner.cfg, **state["hyperparameters"])
            learner.version += self.cfg.algo.max_policy_lag + 1
            member.weights.publish(learner.model, learner.version)
        self.set_shaping(policy, state["shaping"])

    def copy_policy(self, source: int, target: int) -> None:
        """Makes ``target`` a copy of ``source`` (:meth:`export_policy`, :meth:`import_policy`)."""
        if source != target:
            self.import_policy(target, self.export_policy(source))

    def freeze(self, policy: int, frozen: bool = True) -> None:
        """Stops (or resumes) learning for ``policy``: it still plays its seats, with the
        weights it has (e.g. a copy of another trainer's policy, :meth:`import_policy`),
        and its batches are dropped unlearned."""
        self.members[policy].frozen = frozen
