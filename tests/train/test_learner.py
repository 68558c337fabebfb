from __future__ import annotations

import numpy as np
import pytest
import torch
from support.toy_env import ToyVecEnv

from sf_train.algo.learner import (
    LR_MAX,
    LR_MIN,
    Learner,
    adapt_learning_rate,
    explained_variance,
    learning_rate,
)
from sf_train.config.schema import AlgoConfig, ModelConfig
from sf_train.model.network import ActorCritic
from sf_train.sampling.sampler import Sampler

TINY = ModelConfig(
    conv_channels=(8,), conv_kernels=(4,), conv_strides=(2,), fc_size=32, rnn=True, rnn_size=16
)
CPU = torch.device("cpu")


def make(num_envs, batch_size, algo, model_cfg=TINY, T=8, seed=0, **env_kwargs):
    torch.manual_seed(seed)
    venv = ToyVecEnv(num_envs, batch_size, seed=seed, **env_kwargs)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, model_cfg)
    sampler = Sampler(
        venv, model, T=T, B=num_envs, device=CPU, bootstrap_truncations=algo.value_bootstrap
    )
    sampler.start(seed=seed)
    return venv, sampler, Learner(model, algo, CPU)


def test_sync_mode_has_zero_policy_lag():
    venv, sampler, learner = make(4, 4, AlgoConfig(num_epochs=1, num_minibatches=1))
    try:
        for _ in range(3):
            collected = sampler.collect(learner.version)
            stats = learner.train(collected.batch)
            sampler.release(collected.batch)
            assert stats["train/policy_lag_max"] == 0.0
            assert stats["train/stale_fraction"] == 0.0
    finally:
        venv.close()
    assert learner.version == 3


def test_async_lag_is_measured_and_stale_samples_masked():
    venv, sampler, learner = make(4, 2, AlgoConfig(max_policy_lag=0, num_minibatches=2))
    try:
        lags = []
        for _ in range(3):
            collected = sampler.collect(learner.version)
            stats = learner.train(collected.batch)
            sampler.release(collected.batch)
            lags.append(stats["train/policy_lag_max"])
    finally:
        venv.close()
    assert max(lags) >= 1  # half the envs acted before the last update; minibatch 2 lags too
    assert stats["train/stale_fraction"] > 0.0
    assert set(stats) >= {
        "losses/policy_loss",
        "losses/value_loss",
        "losses/entropy",
        "losses/approx_kl",
        "losses/clipfrac",
        "losses/explained_variance",
        "train/grad_norm",
        "train/lr",
        "train/policy_lag_avg",
    }
    assert all(np.isfinite(v) for v in stats.values())


def _critic(targets: list[float], predictions: list[float]) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.tensor(targets)
    return t, t - torch.tensor(predictions)


def test_explained_variance_is_over_the_whole_batch():
    """Targets 0, 0, 0, 4 (variance 3) predicted as 0, 0, 1, 3: residuals 0, 0, -1, 1
    (variance 0.5), so 1 - 0.5 / 3. Split in two minibatches, the first's targets do not
    vary at all: averaging per minibatch would give a hugely negative figure."""
    assert explained_variance(*_critic([0.0, 0.0, 0.0, 4.0], [0.0, 0.0, 1.0, 3.0])) == (
        pytest.approx(1.0 - 0.5 / 3.0)
    )
    assert explained_variance(*_critic([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])) == pytest.approx(1.0)
    assert explained_variance(*_critic([1.0, 3.0], [2.0, 2.0])) == pytest.approx(0.0)


def test_explained_variance_keeps_its_precision_far_from_zero():
    """Targets around 1e4 that vary by 1e-2: sums of squares in float32 would cancel to
    noise."""
    rng = np.random.default_rng(0)
    targets = torch.tensor(1e4 + 1e-2 * rng.standard_normal(4096), dtype=torch.float32)
    residuals = torch.tensor(1e-3 * rng.standard_normal(4096), dtype=torch.float32)
    expected = 1.0 - residuals.double().var() / targets.double().var()
    assert explained_variance(targets, residuals) == pytest.approx(float(expected), abs=1e-3)


def test_learning_rate_schedules():
    assert learning_rate(AlgoConfig(learning_rate=1e-3, lr_schedule="constant"), 0.7) == 1e-3
    linear = AlgoConfig(learning_rate=1e-3, lr_schedule="linear")
    assert learning_rate(linear, 0.0) == 1e-3
    assert learning_rate(linear, 0.75) == pytest.approx(2.5e-4)
    assert learning_rate(linear, 1.2) == 0.0


def test_kl_adaptive_rule():
    assert adapt_learning_rate(1e-3, 0.05, 0.01) == pytest.approx(1e-3 / 1.5)
    assert adapt_learning_rate(1e-3, 0.001, 0.01) == pytest.approx(1.5e-3)
    assert adapt_learning_rate(1e-3, 0.01, 0.01) == 1e-3
    assert adapt_learning_rate(LR_MIN, 1.0, 0.01) == LR_MIN
    assert adapt_learning_rate(LR_MAX, 0.0, 0.01) == LR_MAX


def test_kl_adaptive_learner_moves_the_rate():
    algo = AlgoConfig(
        lr_schedule="kl_adaptive",
        learning_rate=1e-4,
        target_kl=1.0,
        num_epochs=1,
        num_minibatches=1,
    )
    venv, sampler, learner = make(4, 4, algo)
    try:
        collected = sampler.collect(learner.version)
        stats = learner.train(collected.batch)
    finally:
        venv.close()
    assert stats["train/lr"] == pytest.approx(1e-4)
    assert learner.lr == pytest.approx(1.5e-4)  # a tiny KL against a large target speeds up


@pytest.mark.parametrize(
    "rnn,measurements,precision,exploration,advantage_stats",
    [
        (False, False, "float32", "entropy", "minibatch"),
        (True, True, "float32", "entropy", "minibatch"),
        (True, False, "bfloat16", "entropy", "minibatch"),
        (False, False, "float32", "uniform_kl", "minibatch"),
        (False, False, "float32", "entropy", "running"),
    ],
)
def test_short_synchronous_run_learns_the_toy_env(
    rnn, measurements, precision, exploration, advantage_stats
):
    """A random policy scores 8 of 16; the right action is visible in every frame.

    Each step's reward depends only on its own action, so a short horizon (gamma 0.5) keeps the
    value targets' variance low and the run short; typically ~30-60 updates. In bfloat16 the
    learner's products are rounded, its weights and optimiser state are not.
    """
    algo = AlgoConfig(
        learning_rate=5e-3,
        gamma=0.5,
        entropy_coef=0.001,
        precision=precision,
        exploration=exploration,
        advantage_stats=advantage_stats,
    )
    model_cfg = ModelConfig(**{**TINY.__dict__, "rnn": rnn})
    venv, sampler, learner = make(
        8, 4, algo, model_cfg, T=16, seed=1, measurements=measurements, shuffle=True
    )
    recent: list[float] = []
    try:
        for _ in range(150):
            collected = sampler.collect(learner.version)
            learner.train(collected.batch)
            sampler.release(collected.batch)
            recent = (recent + list(collected.episodes.returns))[-16:]
            if len(recent) == 16 and np.mean(recent) >= 14.5:
                break
    finally:
        venv.close()
    assert np.mean(recent) >= 14.5
    assert all(p.dtype == torch.float32 for p in learner.model.parameters())


def learn_time_limit_task(
    algo: AlgoConfig, normalize_values: bool = False
) -> tuple[np.ndarray, list[float], Learner]:
    """100 synchronous updates on the toy task of reward 1 per right action, episodes cut
    after 4 steps by a time limit; returns the last batch's episode returns, each batch's
    mean recorded value and the learner."""
    model_cfg = ModelConfig(**{**TINY.__dict__, "rnn": False, "normalize_values": normalize_values})
    venv, sampler, learner = make(
        8, 8, algo, model_cfg, T=16, seed=1, episode_length=4, time_limit=True
    )
    values: list[float] = []
    try:
        for _ in range(100):
            collected = sampler.collect(learner.version)
            learner.train(collected.batch)
            values.append(float(collected.batch.values.mean()))
            sampler.release(collected.batch)
    finally:
        venv.close()
    return collected.episodes.returns, values, learner


@pytest.mark.parametrize("bootstrap", [True, False])
def test_a_time_limit_is_not_the_end_of_the_world_for_the_critic(bootstrap):
    """Reward 1 per right action, gamma 0.5, episodes cut after 4 steps by a time limit.

    The screen does not show the time, so a critic that bootstraps the cuts learns the
    task's true value, 1 / (1 - gamma) = 2 for a perfect policy; one that treats them as the end
    learns the average of 1.875, 1.75, 1.5 and 1 over an episode's steps, about 1.53.
    """
    algo = AlgoConfig(
        learning_rate=5e-3,
        gamma=0.5,
        entropy_coef=0.001,
        reward_scale=1.0,
        value_bootstrap=bootstrap,
    )
    returns, values, _ = learn_time_limit_task(algo)
    assert (returns == 4).all()  # the policy is perfect by now
    expected = 2.0 if bootstrap else (1.875 + 1.75 + 1.5 + 1.0) / 4
    assert np.mean(values[-10:]) == pytest.approx(expected, abs=0.1)


@pytest.mark.parametrize("reward_scale", [1e-3, 1e3])
def test_normalized_values_learn_at_any_reward_scale(reward_scale):
    """The critic of the time-limit task above (true value 2 per unit of reward) learns it
    whatever the task pays: in units of its targets' running std, its loss has the same scale
    at 1e-3 and at 1e3 (unnormalised, one is lost under the gradient clip, the other in noise)."""
    algo = AlgoConfig(learning_rate=5e-3, gamma=0.5, entropy_coef=0.001, reward_scale=reward_scale)
    returns, values, learner = learn_time_limit_task(algo, normalize_values=True)
    assert (returns == 4).all()
    assert np.mean(values[-10:]) / reward_scale == pytest.approx(2.0, abs=0.1)
    assert learner.model.value_std == pytest.approx(float(learner.model.value_norm.std))
