"""sf-train on Atari: the ids start from the ``atari`` preset, a lost life ends what is learnt
(not the game nor its reported score), and clipped rewards are what the learner sees."""

from __future__ import annotations

import copy
import logging

import numpy as np
import pytest
import torch
from support.toy_env import ToyVecEnv

from sf_train.algo.learner import Learner
from sf_train.cli import main
from sf_train.config.presets import preset_for
from sf_train.config.schema import AlgoConfig, EnvConfig, ModelConfig
from sf_train.envs import make_env
from sf_train.model.network import ActorCritic
from sf_train.sampling.lives import LifeLosses
from sf_train.sampling.sampler import Sampler

TINY = ModelConfig(conv_channels=(8,), conv_kernels=(8,), conv_strides=(4,), fc_size=32)
CPU = torch.device("cpu")


def test_atari_ids_start_from_the_atari_preset(tmp_path, caplog) -> None:
    assert preset_for("sf/Atari-Pong-v0") == preset_for("sf/Atari-Breakout-v0") == "atari"
    run = tmp_path / "pong"
    flags = ["--env", "sf/Atari-Pong-v0", "--run-dir", str(run), "--frames", "2048"]
    flags += ["--num-envs", "4", "--batch-size", "4", "--num-workers", "1", "--eval-episodes", "0"]
    flags += ["--rollout", "16", "--fc-size", "32", "--conv-channels", "8", "--conv-kernels", "8"]
    flags += ["--conv-strides", "4"]
    with caplog.at_level(logging.INFO):
        assert main(["train", *flags]) == 0
    assert "preset 'atari'" in caplog.text
    saved = (run / "config.json").read_text()
    settings = ('"reward_clip": 1.0', '"life_loss_ends": true', '"frame_skip": 4')
    settings += ('"value_clip": 0.1', '"sync": true')
    for setting in settings:
        assert setting in saved


def test_a_lost_life_ends_what_is_learnt_not_the_game() -> None:
    """Random Breakout: five lives a game, so the trajectories hold about five ends for every
    game the env reports, and every reported return is a whole game's raw score."""
    venv = make_env(EnvConfig(env="sf/Atari-Breakout-v0", num_envs=4, batch_size=4, num_workers=2))
    torch.manual_seed(0)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=32, B=4, device=CPU, life_loss_ends=True)
    ends, games = 0, []
    try:
        sampler.start(seed=0)
        for _ in range(60):
            collected = sampler.collect(0)
            ends += int(collected.batch.dones.sum())
            games += collected.episodes.returns.tolist()
            sampler.release(collected.batch)
            if len(games) >= 2:
                break
    finally:
        venv.close()
    assert len(games) >= 2
    assert ends >= 4 * len(games)  # at least the four lost lives before each game's end
    assert all(r >= 0 and float(r).is_integer() for r in games)


def test_life_loss_ends_needs_a_lives_variable() -> None:
    venv = ToyVecEnv(2, 2, variables=True)
    with pytest.raises(ValueError, match="needs an env that reports a 'lives' game variable"):
        LifeLosses(venv, 2)


def test_life_losses_are_drops_in_lives_within_a_game() -> None:
    class Lives:
        variable_names = ("lives", "episode_frame_number")

    tracker = LifeLosses(Lives(), 3)
    ids = np.arange(3)
    no_end = np.zeros(3, dtype=bool)

    def lost(lives, done=no_end):
        return tracker.lost({"variables": np.array([[x, 0.0] for x in lives])}, ids, done).tolist()

    assert lost([5, 3, 0]) == [False, False, False]  # the first step compares with nothing
    assert lost([4, 3, 0]) == [True, False, False]
    # Env 1's game ended: its variables are the next game's first, not a gain or a loss.
    assert lost([4, 5, 0], np.array([False, True, False])) == [False, False, False]
    assert lost([4, 4, 0]) == [False, True, False]


def test_the_learner_sees_clipped_rewards() -> None:
    """Rewards of +-50 clipped to 1 teach exactly what rewards of +-1 teach unclipped."""
    venv = ToyVecEnv(4, 4, seed=0)
    torch.manual_seed(0)
    model = ActorCritic(venv.single_observation_space, venv.single_action_space, TINY)
    sampler = Sampler(venv, model, T=8, B=4, device=CPU)
    try:
        sampler.start(seed=0)
        batch = sampler.collect(0).batch
    finally:
        venv.close()
    signs = torch.sign(torch.randn_like(batch.rewards))
    stats = []
    for scale, clip in ((1.0, 0.0), (50.0, 1.0)):
        learner = Learner(copy.deepcopy(model), AlgoConfig(reward_clip=clip, num_epochs=1), CPU)
        batch.rewards[:] = signs * scale
        torch.manual_seed(1)  # the same minibatches
        stats.append(learner.train(batch))
    assert stats[0]["losses/value_loss"] == pytest.approx(stats[1]["losses/value_loss"])
    assert stats[0]["losses/policy_loss"] == pytest.approx(stats[1]["losses/policy_loss"])
    torch.manual_seed(1)
    unclipped = Learner(copy.deepcopy(model), AlgoConfig(num_epochs=1), CPU).train(batch)
    assert unclipped["losses/value_loss"] != pytest.approx(stats[1]["losses/value_loss"])
