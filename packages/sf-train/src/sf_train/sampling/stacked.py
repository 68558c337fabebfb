"""Several policies of one architecture acting in one batched pass.

A population's policies share a vector env, and each ``recv()`` brings a handful of rows for
each of them. Run one forward per policy and the fixed cost of every layer call (it dominates
at a few rows on a CPU) is paid once per policy: with 4 policies on 8 rows, acting took 2.5x
the CPU of one policy's single pass. :class:`StackedRunner` instead keeps every policy's weights
stacked along a leading policy dimension and evaluates all rows at once: the convolutions as
grouped convolutions (one group per policy), the linear layers and the GRU as batched matrix
products. Rows are padded to the same count per policy, which costs less than the calls it
saves.

The network is :class:`~sf_train.model.network.ActorCritic`'s, computed from the same weights and
normalisers; ``tests/train/test_stacked.py`` checks both give the same outputs for every model
option.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sf_train.model.network import ActorCritic
from sf_train.model.normalize import RunningMeanStd
from sf_train.sampling.acting import Decision, ObsBatch, PolicyRunner

__all__ = ["StackedRunner"]

T = TypeVar("T")


def _linear(layers: Sequence[nn.Linear | _Gates]) -> tuple[Tensor, Tensor]:
    """Weights ``[P, in, out]`` and biases ``[P, 1, out]`` of one linear layer of each policy."""
    return (
        torch.stack([layer.weight.detach().t() for layer in layers]),
        torch.stack([layer.bias.detach() for layer in layers]).unsqueeze(1),
    )


def _norm(norms: Sequence[RunningMeanStd]) -> tuple[Tensor, Tensor]:
    """Means and standard deviations ``[P, 1, *shape]`` (float32) of one normaliser of each
    policy."""
    mean = torch.stack([n.mean for n in norms]).unsqueeze(1)
    std = torch.stack([torch.sqrt(n.var + n.eps) for n in norms]).unsqueeze(1)
    return mean.float(), std.float()


def _optional(build: Callable[[list[Any]], T], parts: list[Any]) -> T | None:
    return None if parts[0] is None else build(parts)


class _StackedWeights:
    """Every policy's weights and normalisers, stacked along a leading policy dimension."""

    def __init__(self, models: Sequence[ActorCritic]) -> None:
        first = models[0]
        if first.conv is None or first.fc is None:
            raise ValueError(
                "several policies act together through their conv stacks; a model of vector "
                "observations trains one policy (num_policies=1)"
            )
        convs = [
            [m for m in cast(nn.Sequential, model.conv) if isinstance(m, nn.Conv2d)]
            for model in models
        ]
        # Policy p's output channels are p's group of the next grouped convolution's input.
        self.conv = [
            (
                torch.cat([layers[i].weight.detach() for layers in convs]),
                torch.cat([cast(Tensor, layers[i].bias).detach() for layers in convs]),
                layer.stride,
            )
            for i, layer in enumerate(convs[0])
        ]
        self.fc = _linear([cast(nn.Linear, m.fc) for m in models])
        self.actor = _linear([m.actor for m in models])
        self.critic = _linear([m.critic for m in models])
        self.measurements = _optional(_linear, [m.measurements_mlp for m in models])
        cells = [m.rnn for m in models]
        self.rnn = None
        if cells[0] is not None:
            grus = cast(list[nn.GRUCell], cells)  # the models share one architecture
            self.rnn = (
                *_linear([_Gates(c.weight_ih, c.bias_ih) for c in grus]),
                *_linear([_Gates(c.weight_hh, c.bias_hh) for c in grus]),
            )
        self.screen_norm = _optional(_norm, [m.screen_norm for m in models])
        self.measurements_norm = _optional(_norm, [m.measurements_norm for m in models])
        self.value_norm = _optional(_norm, [m.value_norm for m in models])
        self.screen_clip = first.screen_norm.clip if first.screen_norm is not None else 0.0
        norm = first.measurements_norm
        self.measurements_clip = norm.clip if norm is not None else 0.0
        self.dtype = first.fc.weight.dtype


class _Gates(NamedTuple):
    """A GRU cell's input or hidden weights, shaped as a linear layer's."""

    weight: Tensor
    bias: Tensor


class StackedRunner:
    """Acts for the rows of several policies at once, each row with its own policy.

    Args:
        runners: One runner per policy, all of one architecture (same model config and spaces)
            on one device. Their models' weights are read, never changed; their recurrent
            states are read and advanced for the rows acted on, exactly as their own
            :meth:`~sf_train.sampling.acting.PolicyRunner.decide` would. Action sampling uses the first
            runner's generator and greediness.

    A model's weights are re-read whenever any of its tensors changed in place since the last
    pass (every optimiser step, weight copy and normaliser update does so), so the caller only
    has to hold them fixed during :meth:`decide`, as for a runner of its own.
    """

    def __init__(self, runners: Sequence[PolicyRunner]) -> None:
        models = [r.model for r in runners]
        first = models[0]
        for model in models[1:]:
            if model.cfg != first.cfg or model.layout != first.layout:
                raise ValueError(
                    "stacked policies need one architecture: every model must share the "
                    "model config and observation space"
                )
        self.runners = list(runners)
        self.models = models
        self._dist = first.action_dist
        self._weights = _StackedWeights(models)
        # Every tensor of every model; a tensor's version counter grows with each in-place
        # change of it (the only way weights reach an acting copy), so comparing the
        # counters tells whether the stack is stale.
        self._tensors = [[*m.parameters(), *m.buffers()] for m in models]
        self._seen = self._stamps()

    def _stamps(self) -> list[int]:
        return [t._version for tensors in self._tensors for t in tensors]

    def _refresh(self) -> None:
        stamps = self._stamps()
        if stamps != self._seen:
            self._weights = _StackedWeights(self.models)
            self._seen = stamps

    @torch.no_grad()
    def decide(self, obs: ObsBatch, env_ids: np.ndarray, policies: np.ndarray) -> Decision:
        """Actions, log-probabilities and values for rows acted on by ``policies[i]``.

        Args:
            obs: Observations, row ``i`` env ``env_ids[i]``'s.
            env_ids: The rows' env ids (each policy's runner holds their memories).
            policies: The policy index of each row.
        """
        device = self.runners[0].device
        P = len(self.runners)
        counts = np.bincount(policies, minlength=P)
        width = int(counts.max())
        # Row i goes to place (policies[i], rank of i among its policy's rows).
        order = np.argsort(policies, kind="stable")
        rank = np.empty(len(policies), dtype=np.int64)
        rank[order] = np.arange(len(policies)) - np.repeat(np.cumsum(counts) - counts, counts)
        places = torch.from_numpy(policies * width + rank).to(device)

        def padded(x: np.ndarray) -> Tensor:
            out = torch.zeros((P * width, *x.shape[1:]), dtype=torch.from_numpy(x[:0]).dtype)
            out = out.to(device)
            out[places] = torch.as_tensor(np.ascontiguousarray(x)).to(device)
            return out.view(P, width, *x.shape[1:])

        screens, vectors = self.models[0].layout.split(obs)
        screen = padded(screens)
        measurements = None if vectors is None else padded(vectors)
        rnn_size = self.models[0].rnn_size
        memory = torch.zeros((P * width, rnn_size), device=device)
        for p, runner in enumerate(self.runners):
            mine = policies == p
            if rnn_size and mine.any():
                memory[places[torch.from_numpy(mine)]] = runner.rnn_state[
                    torch.from_numpy(env_ids[mine]).to(device)
                ]
        self._refresh()
        logits, values, memory = self._forward(screen, measurements, memory.view(P, width, -1))
        logits = logits.reshape(P * width, -1)[places]
        values = values.reshape(P * width)[places]
        if rnn_size:
            memory = memory.reshape(P * width, -1)[places]
            for p, runner in enumerate(self.runners):
                mine = torch.from_numpy(policies == p)
                runner.rnn_state[torch.from_numpy(env_ids).to(device)[mine]] = memory[mine]
        lead = self.runners[0]
        actions, log_probs = self._dist.choose(logits, lead.generator, lead.greedy)
        return Decision(actions, log_probs, values)

    def _forward(
        self, screen: Tensor, measurements: Tensor | None, memory: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`ActorCritic.forward` of every policy: inputs ``[P, N, ...]``."""
        w = self._weights
        P, N = screen.shape[:2]
        if w.screen_norm is not None:
            # [P, 1] (one scalar) or [P, 1, C, H, W] (per pixel), broadcast over the screens.
            mean, std = (
                s.reshape(*s.shape, *[1] * (screen.dim() - s.dim())) for s in w.screen_norm
            )
            x = torch.clamp((screen.float() - mean) / std, -w.screen_clip, w.screen_clip)
        else:
            x = screen.float() * (1.0 / 255.0)
        # [P, N, C, H, W] -> [N, P*C, H, W]: one group of channels per policy.
        x = x.to(w.dtype).transpose(0, 1).reshape(N, P * screen.shape[2], *screen.shape[3:])
        for weight, bias, stride in w.conv:
            x = F.elu(F.conv2d(x, weight, bias, stride, groups=P))
        x = x.reshape(N, P, -1).transpose(0, 1)
        fc_w, fc_b = w.fc
        x = F.elu(torch.baddbmm(fc_b, x, fc_w))
        if w.measurements is not None and measurements is not None:
            m = measurements.float()
            if w.measurements_norm is not None:
                mean, std = w.measurements_norm
                m = torch.clamp((m - mean) / std, -w.measurements_clip, w.measurements_clip)
            mlp_w, mlp_b = w.measurements
            x = torch.cat([x, F.elu(torch.baddbmm(mlp_b, m.to(w.dtype), mlp_w))], dim=-1)
        if w.rnn is not None:
            x = self._gru(x, memory.to(x.dtype))
            memory = x.float()
        actor_w, actor_b = w.actor
        critic_w, critic_b = w.critic
        values = torch.baddbmm(critic_b, x, critic_w).squeeze(-1)
        if w.value_norm is not None:
            mean, std = (s.view(P, 1) for s in w.value_norm)
            values = values.float() * std + mean
        logits = torch.baddbmm(actor_b, x, actor_w)
        return logits.float(), values.float(), memory

    def _gru(self, x: Tensor, h: Tensor) -> Tensor:
        """One step of :class:`torch.nn.GRUCell` per policy: ``[P, N, in]``, ``[P, N, H]``."""
        w_ih, b_ih, w_hh, b_hh = self._weights.rnn  # type: ignore[misc]
        gi_r, gi_z, gi_n = torch.baddbmm(b_ih, x, w_ih).chunk(3, dim=-1)
        gh_r, gh_z, gh_n = torch.baddbmm(b_hh, h, w_hh).chunk(3, dim=-1)
        reset = torch.sigmoid(gi_r + gh_r)
        update = torch.sigmoid(gi_z + gh_z)
        new = torch.tanh(gi_n + reset * gh_n)
        return (1 - update) * new + update * h
