"""Training-time returns are unbiased: they agree with the evaluator, not with the order in
which parallel envs happen to finish their episodes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sf_train.evaluation import evaluate
from sf_train.run.episodes import EpisodeWindow
from sf_train.run.trainer import Trainer


def test_each_env_weighs_the_same_whatever_its_episode_lengths():
    window = EpisodeWindow([3, 7], window=6)
    assert window.per_env == 3
    window.add([3] * 5, [1.0, 1.0, 1.0, 1.0, 1.0])
    assert not window.ready and window.mean() is None
    window.add([7], [10.0])
    assert window.mean() == pytest.approx(5.5)  # (1 + 10) / 2, not (3 * 1 + 10) / 4
    window.add([3], [4.0])  # env 3 keeps only its last three: 1, 1, 4
    assert window.mean() == pytest.approx((2.0 + 10.0) / 2)


def test_the_window_survives_a_checkpoint():
    window = EpisodeWindow([0, 1], window=4)
    window.add([0, 1, 1, 1], [1.0, 2.0, 3.0, 4.0])
    restored = EpisodeWindow([0, 1], window=4)
    restored.load_state_dict(window.state_dict())
    assert restored.mean() == window.mean() == pytest.approx((1.0 + 3.5) / 2)


def test_bad_windows_are_refused():
    with pytest.raises(ValueError, match="at least one env"):
        EpisodeWindow([], window=10)
    with pytest.raises(ValueError, match="window=0"):
        EpisodeWindow([0], window=0)


def test_training_return_agrees_with_the_evaluator_on_bimodal_episodes(toy_config):
    """A fixed (untrained) policy on a toy task whose episodes last 2 or 30 steps. A random
    policy earns 1 per step half the time: 1 in short episodes, 15 in long ones, 8 on average;
    the trainer's return must be the evaluator's."""
    cfg = toy_config(frames=12_000)
    cfg.env = dataclasses.replace(
        cfg.env, num_envs=8, batch_size=4, env_options=("episode_lengths=[2, 30]",)
    )
    cfg.algo = dataclasses.replace(cfg.algo, learning_rate=1e-12)  # the policy stays fixed
    cfg.run = dataclasses.replace(cfg.run, eval_episodes=0)
    with Trainer(cfg) as trainer:
        result = trainer.train()
    evaluation = evaluate(cfg.run.run_dir, episodes=400, num_envs=8)
    assert abs(np.mean(evaluation.returns) - 8.0) < 1.0, "the fixture's policy is not random"
    assert result.mean_return == pytest.approx(np.mean(evaluation.returns), abs=2.5), (
        f"training return {result.mean_return:.2f} vs evaluation {np.mean(evaluation.returns):.2f}"
    )
