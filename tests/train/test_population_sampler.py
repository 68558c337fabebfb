"""The sampler with several policies: each row acts with its own policy's weights and is
recorded only into that policy's trajectories; games are re-paired at episode starts; shaping
weights change what each policy's learner sees."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.sampling import TINY, ActionRecordingToyVecEnv, assert_aligned_and_replayable
from support.toy_env import ToyVecEnv

from sf_train.model.network import ActorCritic
from sf_train.sampling.protocols import UniformPairing
from sf_train.sampling.sampler import Sampler

CPU = torch.device("cpu")


def _models(venv: ToyVecEnv, count: int) -> list[ActorCritic]:
    models = []
    for seed in range(count):
        torch.manual_seed(seed)  # different weights: a step recorded by the wrong one shows
        models.append(ActorCritic(venv.single_observation_space, venv.single_action_space, TINY))
    return models


class _RecordingPairing:
    """Uniform pairings that remember every (game, seats) they gave."""

    def __init__(self, num_policies: int) -> None:
        self.rng = np.random.default_rng(7)
        self.num_policies = num_policies
        self.given: list[tuple[int, list[int]]] = []

    def __call__(self, game: int, seats: int) -> list[int]:
        drawn = self.rng.integers(self.num_policies, size=seats).tolist()
        self.given.append((game, drawn))
        return drawn


@pytest.mark.parametrize("batch_size,shuffle", [(8, False), (4, True)])
def test_every_policy_records_only_its_own_steps(batch_size, shuffle):
    venv = ActionRecordingToyVecEnv(8, batch_size, episode_length=5, shuffle=shuffle)
    models = _models(venv, 3)
    pairing = _RecordingPairing(3)
    # Enough trajectory batches for one policy to hold every row (ceil(8 / 3)) and hand one out.
    sampler = Sampler(
        venv, models, T=4, B=3, device=CPU, num_batches=4, pairing=pairing, agents_per_game=2
    )
    sampler.start(seed=0)
    batches = np.zeros(3, dtype=int)
    steps = np.zeros(3, dtype=int)
    dropped = 0
    episodes = np.zeros(3, dtype=int)
    try:
        for _ in range(24):
            collected = sampler.collect([10, 20, 30])
            p = collected.policy
            assert collected.batch.policy == p
            # Replaying with this policy's own weights reproduces every recorded step.
            assert_aligned_and_replayable(models[p], collected.batch)
            assert (collected.batch.policy_versions == 10 * (p + 1)).all()
            assert set(collected.episodes.versions.tolist()) <= {10, 20, 30}
            np.testing.assert_array_equal(
                collected.episodes.versions, 10 * (collected.episodes.policies + 1)
            )
            batches[p] += 1
            steps += collected.policy_steps
            dropped += collected.dropped_steps
            # A row that left for another policy closed its column at its episode's end.
            valid = collected.batch.valid
            assert (valid[0]).all() and (valid[1:] <= valid[:-1]).all()
            ends = collected.batch.dones
            for c in torch.nonzero(~valid.all(0)).flatten().tolist():
                last = int(valid[:, c].sum()) - 1
                assert ends[last, c]
            episodes += np.bincount(collected.episodes.policies, minlength=3)
            sampler.release(collected.batch)
    finally:
        venv.close()
    assert (batches > 0).all()
    # Every action sent is recorded (none for want of a column); the last recv is in flight.
    assert dropped == 0
    assert steps.sum() == sum(len(a) for a in venv.sent.values())
    assert (episodes > 0).all()
    # Games are re-paired at every episode start: several pairings per game, seats together.
    games = [g for g, _ in pairing.given]
    assert set(games) == {0, 1, 2, 3}
    assert len(games) > 4 * 3


def test_rows_change_policy_only_at_episode_starts():
    venv = ActionRecordingToyVecEnv(4, 2, episode_length=3, shuffle=True)
    models = _models(venv, 2)
    for action, model in enumerate(models):  # policy p always plays action p
        with torch.no_grad():
            model.actor.weight.zero_()
            model.actor.bias[:] = torch.tensor([30.0, -30.0] if action == 0 else [-30.0, 30.0])
    # A seeded draw: unseeded, an env that happened to play only a few episodes could draw
    # the same policy for all of them (a test that failed one run in many).
    pairing = UniformPairing(2, seed=0)
    sampler = Sampler(
        venv, models, T=4, B=2, device=CPU, num_batches=4, agents_per_game=2, pairing=pairing
    )
    sampler.start(seed=0)
    try:
        for _ in range(20):
            sampler.release(sampler.collect([0, 0]).batch)
    finally:
        venv.close()
    for env, actions in venv.sent.items():
        episodes = np.array(actions[: len(actions) // 3 * 3]).reshape(-1, 3)
        # One policy plays a whole episode; over many episodes both play every env.
        assert (episodes == episodes[:, :1]).all(), env
        assert set(episodes[:, 0]) == {0, 1}, env


def test_shaping_weights_change_the_reward_the_learner_sees():
    venv = ToyVecEnv(4, 4, episode_length=4, variables=True)
    models = _models(venv, 2)
    sampler = Sampler(venv, models, T=4, B=2, device=CPU)
    sampler.set_shaping(1, np.array([0.5]))  # +0.5 per point of return gained
    sampler.start(seed=0)
    shaped_episodes = []
    try:
        for _ in range(12):
            collected = sampler.collect([0, 0])
            buf = collected.batch
            earned = (buf.actions == _bright_side(buf.obs[: buf.T])).float()
            factor = 1.5 if collected.policy == 1 else 1.0
            played = buf.valid
            torch.testing.assert_close(buf.rewards[played], (earned * factor)[played])
            for policy, shaping, ret in zip(
                collected.episodes.policies,
                collected.episodes.shaping,
                collected.episodes.returns,
                strict=True,
            ):
                assert shaping == pytest.approx(0.5 * ret if policy == 1 else 0.0)
                shaped_episodes.append(policy)
            sampler.release(buf)
    finally:
        venv.close()
    assert 1 in shaped_episodes


def test_shaping_needs_per_step_variables():
    venv = ToyVecEnv(2, 2, episode_length=3)
    sampler = Sampler(venv, _models(venv, 1), T=3, B=2, device=CPU)
    sampler.set_shaping(0, np.array([1.0]))
    sampler.start(seed=0)
    with pytest.raises(ValueError, match=r"info\['variables'\]"):
        sampler.collect(0)


def test_a_pairing_outside_the_population_is_an_error():
    venv = ToyVecEnv(4, 4, episode_length=3)
    sampler = Sampler(
        venv, _models(venv, 2), T=3, B=2, device=CPU, pairing=lambda g, s: [0, 5], agents_per_game=2
    )
    with pytest.raises(ValueError, match=r"one policy index in 0\.\.1 per seat"):
        sampler.start(seed=0)


def _bright_side(screen: torch.Tensor) -> torch.Tensor:
    cols = screen.flatten(-3, -2).amax(-2).argmax(-1)
    return (cols >= screen.shape[-1] // 2).long()
