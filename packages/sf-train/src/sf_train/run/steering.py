"""The league's side of a :class:`~sf_train.run.trainer.Trainer`: what a population driver reads
(stats, matches) and steers (hyperparameters, shaping, copies of policies between trainers,
frozen policies) between batches. A mixin of the trainer, whose state it uses."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from sf_train.algo.learner import learning_rate
from sf_train.config.schema import ConfigError, validate
from sf_train.run.members import Counts
from sf_train.run.population import HYPERPARAMETERS, MatchRecord, PolicyStats

__all__ = ["PopulationControl", "tree_map"]


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
            algo = dataclasses.replace(learner.cfg, **{k: float(v) for k, v in values.items()})
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
        normalisers, optimiser state, learning rate, hyperparameters and shaping weights
        (copies, tensors on the CPU: picklable, to send to another process)."""
        member = self.members[policy]
        with self._learn_lock:
            learner = member.learner
            state = {
                "model": learner.model.state_dict(),
                "optimizer": learner.optimizer.state_dict(),
                "lr": learner.lr,
            }
            state = tree_map(state, _cpu_copy)
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
            learner.model.load_state_dict(state["model"])
            learner.optimizer.load_state_dict(state["optimizer"])
            learner.cfg = dataclasses.replace(learner.cfg, **state["hyperparameters"])
            learner.lr = float(state["lr"])
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
