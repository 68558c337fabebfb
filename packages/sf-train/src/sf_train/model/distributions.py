"""Action distributions: categorical for Discrete, MultiDiscrete and Tuple-of-Discrete spaces,
Gaussian for Box spaces.

The three discrete spaces are handled as a product of independent categoricals over one flat
logits vector split into ``nvec`` groups, so the model's actor head is a single linear layer of
``sum(nvec)`` outputs whatever the space. Doom's composite actions (move x turn x attack) are
MultiDiscrete or Tuple spaces; plain scenarios use Discrete. A Box space gets a diagonal
Gaussian whose "logits" are its means and log standard deviations, both from the actor head
(the spread follows the state, as Sample Factory's default for continuous actions does).
:func:`action_distribution` picks the one a space needs.
"""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import torch
from gymnasium import spaces
from torch import Tensor

__all__ = ["ActionDistribution", "GaussianDistribution", "action_distribution"]


class ActionDistribution:
    """Maps batched logits to actions, log-probs and entropies for one action space.

    Actions are ``int64`` tensors of shape ``[N]`` for Discrete and ``[N, K]`` for MultiDiscrete
    and Tuple (``K`` sub-actions); values include the space's ``start`` offsets, so they can be
    sent to the env as they are. Logits have shape ``[N, num_logits]``; any leading shape
    (e.g. ``[T, B]``) works in place of ``N``.

    Example:
        >>> dist = ActionDistribution(spaces.MultiDiscrete([3, 2]))
        >>> logits = torch.zeros(5, dist.num_logits)
        >>> dist.sample(logits).shape
        torch.Size([5, 2])
    """

    nvec: tuple[int, ...]
    """Number of choices of each sub-action."""
    num_logits: int
    """Width of the logits vector, ``sum(nvec)``."""
    starts: tuple[int, ...]
    """The space's ``start`` of each sub-action: action ``k`` of a head is ``starts[i] + k``."""
    action_shape: tuple[int, ...]
    """Shape of one action: ``()`` for Discrete, ``(K,)`` otherwise."""
    action_dtype = torch.int64
    """The dtype of the actions it gives."""

    def __init__(self, space: spaces.Space) -> None:
        if isinstance(space, spaces.Discrete):
            nvec, starts, self.action_shape = [int(space.n)], [int(space.start)], ()
        elif isinstance(space, spaces.MultiDiscrete):
            if space.nvec.ndim != 1:
                raise ValueError(
                    f"MultiDiscrete with nvec of shape {space.nvec.shape} is not supported; "
                    "flatten it to a 1-D nvec"
                )
            nvec = [int(n) for n in space.nvec]
            starts = [int(s) for s in np.broadcast_to(space.start, space.nvec.shape)]
            self.action_shape = (len(nvec),)
        elif isinstance(space, spaces.Tuple) and all(
            isinstance(s, spaces.Discrete) for s in space.spaces
        ):
            heads = cast(tuple[spaces.Discrete, ...], space.spaces)  # checked above
            nvec = [int(s.n) for s in heads]
            starts = [int(s.start) for s in heads]
            self.action_shape = (len(nvec),)
        else:
            raise TypeError(
                f"unsupported action space {space}: use Discrete, MultiDiscrete or a Tuple of "
                "Discrete spaces (a Box takes GaussianDistribution: see action_distribution)"
            )
        self.nvec = tuple(nvec)
        self.starts = tuple(starts)
        self.num_logits = sum(nvec)
        self._starts = torch.tensor(starts, dtype=torch.int64)

    def _log_softmax(self, logits: Tensor) -> list[Tensor]:
        if logits.shape[-1] != self.num_logits:
            raise ValueError(
                f"logits have {logits.shape[-1]} entries in the last dimension but the action "
                f"space needs {self.num_logits} (nvec={self.nvec})"
            )
        # torch.split takes any sequence of sizes; its stubs name only int and list.
        groups = torch.split(logits, self.nvec, dim=-1)  # type: ignore[arg-type]
        return [torch.log_softmax(g, dim=-1) for g in groups]

    def _pack(self, indices: list[Tensor]) -> Tensor:
        actions = torch.stack(indices, dim=-1) + self._starts.to(indices[0].device)
        return actions.squeeze(-1) if self.action_shape == () else actions

    def _unpack(self, actions: Tensor) -> list[Tensor]:
        actions = actions.long()
        if self.action_shape == ():
            actions = actions.unsqueeze(-1)
        indices = actions - self._starts.to(actions.device)
        return list(indices.unbind(-1))

    def for_env(self, actions: Tensor) -> Tensor:
        """The actions as the env takes them: these are already in the space."""
        return actions

    def sample(self, logits: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Samples one action per row of ``logits`` (Gumbel-max, no grad)."""
        return self.choose(logits, generator)[0]

    def mode(self, logits: Tensor) -> Tensor:
        """The most likely action per row; for deterministic evaluation."""
        return self.choose(logits, greedy=True)[0]

    def choose(
        self, logits: Tensor, generator: torch.Generator | None = None, greedy: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Actions for the rows of ``logits`` (sampled by Gumbel-max, or the most likely ones
        with ``greedy``) and their log-probabilities, from one log-softmax per sub-action:
        acting needs both every step, and each log-softmax is a few small ops per head."""
        with torch.no_grad():
            groups = self._log_softmax(logits)
            indices = [self._pick(log_p, generator, greedy) for log_p in groups]
            return self._pack(indices), _summed_log_probs(groups, indices)

    @staticmethod
    def _pick(log_p: Tensor, generator: torch.Generator | None, greedy: bool) -> Tensor:
        """One sub-action's index per row: the most likely, or sampled by Gumbel-max
        (argmax(log p - log E) with E ~ Exp(1) samples from p)."""
        if greedy:
            return torch.argmax(log_p, dim=-1)
        e = torch.empty_like(log_p).exponential_(generator=generator)
        return torch.argmax(log_p - torch.log(e), dim=-1)

    def log_prob(self, logits: Tensor, actions: Tensor) -> Tensor:
        """Log-probability of ``actions``, summed over sub-actions; shape ``logits.shape[:-1]``."""
        return _summed_log_probs(self._log_softmax(logits), self._unpack(actions))

    def uniform_divergence(self, logits: Tensor) -> Tensor:
        """``KL(pi || uniform) + KL(uniform || pi)``, summed over the sub-actions; shape
        ``logits.shape[:-1]``.

        Zero for a uniform policy; unlike the entropy, whose gradient vanishes as a policy
        turns deterministic, the second term grows without bound as any action's
        probability goes to 0, so a penalty on it keeps every action possible.
        """
        # KL(pi||u) = sum pi log pi + log k = -H + log k; KL(u||pi) = -log k - mean log pi.
        # sum over the heads (at least one) is a Tensor, never its start value 0.
        return -self.entropy(logits) - cast(
            Tensor, sum(g.mean(-1) for g in self._log_softmax(logits))
        )

    def entropy(self, logits: Tensor) -> Tensor:
        """Entropy, summed over the independent sub-actions; shape ``logits.shape[:-1]``."""
        # Clamping keeps 0 * log(0) at 0 when a logit is -inf (a masked action).
        return cast(
            Tensor,
            sum(
                -(g.exp() * g.clamp(min=torch.finfo(g.dtype).min)).sum(-1)
                for g in self._log_softmax(logits)
            ),
        )


def _summed_log_probs(groups: list[Tensor], indices: list[Tensor]) -> Tensor:
    """The log-probabilities ``groups`` give the chosen ``indices``, summed over sub-actions."""
    return cast(
        Tensor,
        sum(
            torch.gather(g, -1, i.unsqueeze(-1)).squeeze(-1)
            for g, i in zip(groups, indices, strict=True)
        ),
    )


#: The range a Gaussian's log standard deviation is held to: from a near-deterministic policy
#: to one that spreads over several units of a typical [-1, 1] action.
_LOG_STD_RANGE = (-5.0, 2.0)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class GaussianDistribution:
    """A diagonal Gaussian over a Box space's actions; the same interface as
    :class:`ActionDistribution`.

    Logits are ``[..., 2 * D]``: the means, then the log standard deviations (clamped to
    ``[-5, 2]``). Actions are float32 ``[..., D]``, unbounded, so that their log-probabilities
    stay those of the Gaussian that drew them; :meth:`for_env` clips what is sent to the env to
    the space's bounds.

    Example:
        >>> dist = GaussianDistribution(spaces.Box(-2, 2, (1,)))
        >>> dist.sample(torch.zeros(5, dist.num_logits)).shape
        torch.Size([5, 1])
    """

    action_dtype = torch.float32

    def __init__(self, space: spaces.Box) -> None:
        if len(space.shape) != 1:
            raise ValueError(f"Box actions of shape {space.shape}: use a 1-D Box (D,)")
        self.action_shape: tuple[int, ...] = space.shape
        self.num_logits = 2 * space.shape[0]
        self._low = torch.as_tensor(space.low, dtype=torch.float32)
        self._high = torch.as_tensor(space.high, dtype=torch.float32)

    def for_env(self, actions: Tensor) -> Tensor:
        """The actions clipped to the space's bounds, as the env takes them."""
        return torch.clamp(actions, self._low.to(actions.device), self._high.to(actions.device))

    def _split(self, logits: Tensor) -> tuple[Tensor, Tensor]:
        if logits.shape[-1] != self.num_logits:
            raise ValueError(
                f"logits have {logits.shape[-1]} entries in the last dimension but "
                f"{self.action_shape} Gaussian actions need {self.num_logits}"
            )
        mean, log_std = logits.float().chunk(2, dim=-1)
        return mean, log_std.clamp(*_LOG_STD_RANGE)

    def choose(
        self, logits: Tensor, generator: torch.Generator | None = None, greedy: bool = False
    ) -> tuple[Tensor, Tensor]:
        """Actions (sampled, or the means with ``greedy``) and their log-probabilities."""
        with torch.no_grad():
            mean, log_std = self._split(logits)
            if greedy:
                actions = mean
            else:
                noise = torch.randn(mean.shape, generator=generator, device=mean.device)
                actions = mean + noise * log_std.exp()
            return actions, self._log_prob(mean, log_std, actions)

    def sample(self, logits: Tensor, generator: torch.Generator | None = None) -> Tensor:
        return self.choose(logits, generator)[0]

    def mode(self, logits: Tensor) -> Tensor:
        return self.choose(logits, greedy=True)[0]

    @staticmethod
    def _log_prob(mean: Tensor, log_std: Tensor, actions: Tensor) -> Tensor:
        z = (actions - mean) * torch.exp(-log_std)
        return (-0.5 * z.square() - log_std - _HALF_LOG_2PI).sum(-1)

    def log_prob(self, logits: Tensor, actions: Tensor) -> Tensor:
        """Log-density of ``actions``, summed over their dimensions."""
        return self._log_prob(*self._split(logits), actions.float())

    def entropy(self, logits: Tensor) -> Tensor:
        """Differential entropy, summed over the action's dimensions."""
        return (self._split(logits)[1] + 0.5 + _HALF_LOG_2PI).sum(-1)

    def uniform_divergence(self, logits: Tensor) -> Tensor:
        """Not defined: there is no uniform policy over an unbounded Gaussian."""
        raise ValueError(
            "exploration='uniform_kl' needs discrete actions; use exploration='entropy' for Box "
            "actions"
        )


def action_distribution(space: spaces.Space) -> ActionDistribution | GaussianDistribution:
    """The distribution for ``space``: Gaussian for a Box, categorical otherwise."""
    if isinstance(space, spaces.Box):
        return GaussianDistribution(space)
    return ActionDistribution(space)
