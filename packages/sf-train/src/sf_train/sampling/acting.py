"""The acting loop: observations -> model -> actions, with each env's recurrent memory.

Training (:class:`~sf_train.sampling.sampler.Sampler`), evaluation, videos and league games all act
through :class:`PolicyRunner`, so a change of the model's interface is made here once.

A runner keeps one recurrent state per env id of the vector env and reads or writes only the
rows it is given, so several runners can share one vector env, each acting for the envs its
policy controls: the learning policy and a frozen opponent in self-play today, the members of
a population later. Observation normalisation lives inside the model (its buffers), so the
runner passes observations through as the envs give them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from sf_train.model.network import ActorCritic, Obs

__all__ = ["Decision", "ObsBatch", "PolicyRunner", "stack_obs"]

ObsBatch = np.ndarray | dict[str, np.ndarray]
"""Observations of ``N`` envs as the envs give them: an ``[N, ...]`` array, or a dict of them."""


class Decision(NamedTuple):
    """Actions and what the learner needs stored beside them.

    Attributes:
        actions: ``[N, *action_shape]`` int64, on the runner's device.
        log_probs: Log-probabilities of ``actions`` under the acting policy, ``[N]``.
        values: The critic's values of the observations, ``[N]``.
    """

    actions: Tensor
    log_probs: Tensor
    values: Tensor


class PolicyRunner:
    """Picks actions with one policy for any subset of a vector env's envs.

    Args:
        model: The policy to act with (its acting copy, when acting runs in another precision
            or beside a learner). The runner never changes its weights.
        num_envs: Env ids run from 0 to ``num_envs - 1``; each has its own recurrent state.
        device: Device of ``model``; observations and env ids are moved there.
        generator: Random generator of the action sampling, for reproducible runs.
        greedy: Take the most likely action instead of sampling (deterministic evaluation).

    Attributes:
        rnn_state: ``[num_envs, rnn_size]``; row ``e`` is env ``e``'s memory before its next
            step (zeros at an episode's start).

    Example:
        >>> obs_space = spaces.Box(0, 255, (1, 36, 64), dtype="uint8")
        >>> model = ActorCritic(obs_space, spaces.Discrete(3), ModelConfig(rnn=True))
        >>> runner = PolicyRunner(model, num_envs=4, device="cpu")
        >>> runner.act(np.zeros((2, 1, 36, 64), np.uint8), np.array([3, 1])).shape
        torch.Size([2])
        >>> runner.reset(np.array([3]))  # env 3's episode ended: its next step starts afresh
    """

    def __init__(
        self,
        model: ActorCritic,
        num_envs: int,
        device: torch.device | str,
        generator: torch.Generator | None = None,
        greedy: bool = False,
    ) -> None:
        self.model = model
        self.device = torch.device(device)
        self.generator = generator
        self.greedy = greedy
        self.rnn_state = model.initial_state(num_envs, self.device)

    def act(self, obs: ObsBatch, env_ids: np.ndarray) -> Tensor:
        """The actions of the envs ``env_ids`` for their observations ``obs`` (row ``i`` is
        env ``env_ids[i]``'s), advancing their memories by one step.

        Returns:
            ``[N, *action_shape]`` int64 actions on the runner's device.
        """
        return self.decide(obs, env_ids).actions

    @torch.no_grad()
    def decide(self, obs: ObsBatch, env_ids: np.ndarray) -> Decision:
        """:meth:`act`, with the log-probabilities and values that training stores."""
        ids = self._ids(env_ids)
        out = self.model(self._tensors(obs), self.rnn_state[ids])
        self.rnn_state[ids] = out.rnn_state
        actions, log_probs = self.model.action_dist.choose(out.logits, self.generator, self.greedy)
        return Decision(actions, log_probs, out.values)

    @torch.no_grad()
    def values(self, obs: ObsBatch, env_ids: np.ndarray) -> Tensor:
        """The critic's values ``[N]`` of ``obs`` seen with the envs' current memories, which
        stay as they are (to bootstrap a final observation with its own episode's memory)."""
        return self.model(self._tensors(obs), self.rnn_state[self._ids(env_ids)]).values

    def reset(self, env_ids: np.ndarray) -> None:
        """Zeroes the memories of ``env_ids``: their episodes ended, or another policy takes
        them over. Ids this runner does not act for may be included; their rows are unused."""
        if len(env_ids):
            self.rnn_state[self._ids(env_ids)] = 0.0

    def _ids(self, env_ids: np.ndarray) -> Tensor:
        return torch.from_numpy(env_ids).to(self.device)

    def _tensors(self, obs: ObsBatch) -> Obs:
        # Zero-copy on the CPU: callers pass arrays that stay valid until the actions are sent.
        if isinstance(obs, dict):
            return {k: self._tensor(v) for k, v in obs.items()}
        return self._tensor(obs)

    def _tensor(self, x: np.ndarray) -> Tensor:
        return torch.as_tensor(np.ascontiguousarray(x)).to(self.device, non_blocking=True)


def stack_obs(observations: Sequence[Any]) -> ObsBatch:
    """One batch from single-env observations (arrays, or dicts of arrays), e.g. the agents of
    a PettingZoo match."""
    first = observations[0]
    if isinstance(first, dict):
        return {k: np.stack([o[k] for o in observations]) for k in first}
    return np.stack(observations)
