"""One APPO learner step over a ``[T, B]`` trajectory batch.

The current model recomputes log-probs and values for the whole batch; V-trace corrects for
the gap between the behaviour policy (that sampled) and the current one; the PPO-clipped
surrogate, the value loss and the entropy bonus are combined and minimised with Adam.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from sf_train.algo.losses import (
    AdvantageMoments,
    entropy_bonus,
    masked_mean,
    normalize_advantages,
    policy_lag_mask,
    policy_loss,
    value_loss,
)
from sf_train.algo.vtrace import vtrace
from sf_train.config.schema import AlgoConfig
from sf_train.model.network import ActorCritic
from sf_train.sampling.batch import TrajectoryBatch

__all__ = [
    "LR_MAX",
    "LR_MIN",
    "Learner",
    "adapt_learning_rate",
    "explained_variance",
    "learning_rate",
]


LR_MIN, LR_MAX = 1e-6, 1e-2
"""Bounds of the KL-adaptive learning rate, so a few odd batches cannot stall or blow it up."""


def learning_rate(cfg: AlgoConfig, progress: float) -> float:
    """The scheduled learning rate at ``progress`` (fraction of the run's frames, 0 to 1).

    For 'kl_adaptive' this is the starting rate; :func:`adapt_learning_rate` moves it.
    """
    if cfg.lr_schedule == "linear":
        return cfg.learning_rate * max(0.0, 1.0 - progress)
    return cfg.learning_rate


def adapt_learning_rate(lr: float, approx_kl: float, target_kl: float) -> float:
    """One step of the KL-adaptive rule: slow down when the policy moved too far, speed up
    when it barely moved, keep the rate otherwise."""
    if approx_kl > 2.0 * target_kl:
        return max(lr / 1.5, LR_MIN)
    if approx_kl < 0.5 * target_kl:
        return min(lr * 1.5, LR_MAX)
    return lr


def _select(x: Tensor | dict[str, Tensor], cols: Tensor) -> Tensor | dict[str, Tensor]:
    if isinstance(x, dict):
        return {k: v[:, cols] for k, v in x.items()}
    return x[:, cols]


def _select_columns(data: dict, cols: Tensor) -> dict:
    """The trajectories ``cols`` of a batch (the states are ``[B, H]``, the rest ``[T, B, ...]``)."""
    return {k: (v[cols] if k == "rnn_state" else _select(v, cols)) for k, v in data.items()}


class Learner:
    """Trains an :class:`ActorCritic` on trajectory batches and counts policy versions.

    The version increases by one per optimiser step; the sampler tags every step with the
    version that produced it, so the learner can measure and bound policy lag.

    Args:
        model: The network to train (on the learner's device).
        cfg: Loss, optimiser and V-trace settings.
        device: Where to compute; batches are moved there.
    """

    def __init__(self, model: ActorCritic, cfg: AlgoConfig, device: torch.device) -> None:
        self.model = model
        self.cfg = cfg
        self.device = device
        self.version = 0
        self._bfloat16 = cfg.precision == "bfloat16"
        self.lr = cfg.learning_rate
        """Current learning rate; the state of the 'kl_adaptive' schedule."""
        self.advantage_moments = AdvantageMoments()
        """The running statistics of advantage_stats='running' (unused otherwise)."""
        self.optimizer = torch.optim.Adam(
            model.parameters(), lr=cfg.learning_rate, eps=cfg.adam_eps
        )

    def state_dict(self) -> dict[str, Any]:
        """What continues this learner's training elsewhere: weights and normalisers, the
        optimiser's state, the running advantage moments and the learning rate (live tensors;
        the policy version is the caller's to keep or move on)."""
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "advantage_moments": self.advantage_moments.state_dict(),
            "lr": self.lr,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores what :meth:`state_dict` gave (states saved before the running advantage
        moments existed start them afresh)."""
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.advantage_moments.load_state_dict(state.get("advantage_moments", {}))
        self.lr = float(state["lr"])

    def _minibatch_loss(
        self, mb: dict, first_epoch: bool
    ) -> tuple[Tensor, dict[str, Tensor], tuple[Tensor, Tensor]]:
        """The loss, its statistics, and the critic's targets and residuals on the played
        samples, for the batch's :func:`explained_variance`."""
        cfg, model = self.cfg, self.model
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self._bfloat16):
            out = model.forward_sequence(mb["obs"], mb["rnn_state"], mb["resets"])
        T = mb["rewards"].shape[0]
        logits, values = out.logits[:T].float(), out.values.float()
        log_probs = model.action_dist.log_prob(logits, mb["actions"])
        entropy = model.action_dist.entropy(logits)
        recent, lag = policy_lag_mask(mb["policy_versions"], self.version, cfg.max_policy_lag)
        mask = recent & mb["valid"]

        with torch.no_grad():
            discounts = cfg.gamma * (~mb["dones"]).float()
            log_rhos = log_probs.detach() - mb["log_probs"]
            rewards = mb["rewards"]
            if cfg.reward_clip > 0:
                rewards = rewards.clamp(-cfg.reward_clip, cfg.reward_clip)
            vs, pg_advantages = vtrace(
                log_rhos,
                discounts,
                rewards * cfg.reward_scale,
                values[:T].detach(),
                values[T].detach(),
                rho_bar=cfg.rho_bar,
                c_bar=cfg.c_bar,
                trace_lambda=cfg.trace_lambda,
                # Zero where nothing was cut (and where value_bootstrap is off).
                truncation_bootstrap=cfg.gamma * mb["truncation_values"],
            )
            if cfg.normalize_advantages:
                standardise = (
                    self.advantage_moments.normalize
                    if cfg.advantage_stats == "running"
                    else normalize_advantages
                )
                pg_advantages = standardise(pg_advantages, mask)
            if model.value_norm is not None and first_epoch:  # every target counted once
                model.value_norm.update(vs[mask])

        l_policy, clip_fraction = policy_loss(
            log_probs, mb["log_probs"], pg_advantages, cfg.clip_ratio, mask
        )
        unit = model.value_std  # the critic learns in units of its targets' std
        l_value = value_loss(
            values[:T] / unit, vs / unit, mb["values"] / unit, cfg.value_clip, mask
        )
        h = entropy_bonus(entropy, mask)
        if cfg.exploration == "uniform_kl":
            explore = masked_mean(model.action_dist.uniform_divergence(logits), mask)
        else:
            explore = -h
        loss = l_policy + cfg.value_coef * l_value + cfg.entropy_coef * explore

        with torch.no_grad():
            log_ratio = log_probs - mb["log_probs"]
            approx_kl = masked_mean(torch.exp(log_ratio) - 1.0 - log_ratio, mask)
            played = mb["valid"]
            critic = (vs[played], (vs - values[:T])[played])
        stats = {
            "losses/policy_loss": l_policy.detach(),
            "losses/value_loss": l_value.detach(),
            "losses/entropy": h.detach(),
            "losses/approx_kl": approx_kl,
            "losses/clipfrac": clip_fraction,
            "train/policy_lag_min": lag[played].min().float(),
            "train/policy_lag_avg": lag[played].float().mean(),
            "train/policy_lag_max": lag[played].max().float(),
            "train/stale_fraction": 1.0 - mask.sum() / played.sum(),
        }
        return loss, stats, critic

    def train(self, batch: TrajectoryBatch, progress: float = 0.0) -> dict[str, float]:
        """Runs ``num_epochs`` x ``num_minibatches`` optimiser steps on ``batch``.

        Args:
            batch: A complete trajectory batch from the sampler.
            progress: Fraction of the run done (0 to 1), for the LR schedule.

        Returns:
            Statistics over the steps under TensorBoard-style tags (means; the policy-lag
            ``_min``/``_max`` are extremes), plus ``train/lr`` (mean rate used),
            ``train/grad_norm``, ``train/version`` and ``losses/explained_variance`` (of
            the critic over the whole batch, see :func:`explained_variance`).
        """
        cfg = self.cfg
        adaptive = cfg.lr_schedule == "kl_adaptive"
        if not adaptive:
            self.lr = learning_rate(cfg, progress)
        data = batch.to(self.device)
        self.model.update_normalizers(_first_rows(data["obs"], batch.T))

        totals: dict[str, Tensor] = {}
        targets: list[Tensor] = []
        residuals: list[Tensor] = []
        steps = 0
        for epoch in range(cfg.num_epochs):
            perm = torch.randperm(batch.B, device=self.device)
            for cols in perm.chunk(cfg.num_minibatches):
                # One minibatch is the whole batch: no shuffled copy of its screens.
                mb = data if cfg.num_minibatches == 1 else _select_columns(data, cols)
                for group in self.optimizer.param_groups:
                    group["lr"] = self.lr
                loss, stats, (target, residual) = self._minibatch_loss(mb, epoch == 0)
                targets.append(target)
                residuals.append(residual)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                stats["train/grad_norm"] = nn.utils.clip_grad_norm_(
                    self.model.parameters(), cfg.max_grad_norm
                )
                self.optimizer.step()
                self.version += 1
                stats["train/lr"] = torch.tensor(self.lr)
                if adaptive:
                    self.lr = adapt_learning_rate(
                        self.lr, float(stats["losses/approx_kl"]), cfg.target_kl
                    )
                for k, v in stats.items():
                    v = v.detach()
                    if k not in totals:
                        totals[k] = v
                    elif k.endswith("_min"):
                        totals[k] = torch.minimum(totals[k], v)
                    elif k.endswith("_max"):
                        totals[k] = torch.maximum(totals[k], v)
                    else:
                        totals[k] = totals[k] + v
                steps += 1
        # Extremes over all steps, means of everything else.
        result = {
            k: float(v) if k.endswith(("_min", "_max")) else float(v) / steps
            for k, v in totals.items()
        }
        result["losses/explained_variance"] = explained_variance(
            torch.cat(targets), torch.cat(residuals)
        )
        result["train/version"] = float(self.version)
        return result


def explained_variance(targets: Tensor, residuals: Tensor) -> float:
    """1 - Var(residuals) / Var(targets), over every sample of a batch.

    Over the whole batch rather than averaged over minibatches: on a sparse-reward task most
    minibatches hold targets that barely vary, where the ratio is huge for any residual and one
    such minibatch would drag a mean of per-minibatch values far below zero. In float64, so
    targets far from zero keep their precision.
    """
    target_var = float(targets.double().var(unbiased=False))
    residual_var = float(residuals.double().var(unbiased=False))
    return 1.0 - residual_var / max(target_var, 1e-12)


def _first_rows(obs: Tensor | dict[str, Tensor], T: int) -> Tensor | dict[str, Tensor]:
    # Row T repeats the next batch's row 0; leave it out so no observation is counted twice.
    if isinstance(obs, dict):
        return {k: v[:T] for k, v in obs.items()}
    return obs[:T]
