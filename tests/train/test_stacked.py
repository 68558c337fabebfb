"""Stacked acting: every row decided in one batched pass gives what its own policy's runner
gives, for every model option, and follows weight changes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from sf_train.config.schema import ModelConfig
from sf_train.model.network import ActorCritic
from sf_train.sampling.acting import PolicyRunner
from sf_train.sampling.stacked import StackedRunner

SCREEN = spaces.Box(0, 255, (2, 24, 32), np.uint8)
WITH_MEASUREMENTS = spaces.Dict(
    {"screen": SCREEN, "measurements": spaces.Box(-np.inf, np.inf, (3,), np.float32)}
)
SMALL = dict(conv_channels=(4, 8), conv_kernels=(4, 3), conv_strides=(2, 2), fc_size=16)
CASES = {
    "plain": (SCREEN, ModelConfig(**SMALL)),
    "rnn": (SCREEN, ModelConfig(**SMALL, rnn=True, rnn_size=8)),
    "measurements": (WITH_MEASUREMENTS, ModelConfig(**SMALL, measurements_size=4)),
    "normalisers": (
        WITH_MEASUREMENTS,
        ModelConfig(**SMALL, rnn=True, rnn_size=8, screen_norm="running", normalize_values=True),
    ),
    "per-pixel": (SCREEN, ModelConfig(**SMALL, screen_norm="per_pixel")),
}
ACTIONS = spaces.MultiDiscrete([3, 2])
NUM_ENVS = 10


def _observations(space: spaces.Space, rows: int, rng: np.random.Generator):
    screen = rng.integers(0, 256, (rows, *SCREEN.shape), dtype=np.uint8)
    if isinstance(space, spaces.Dict):
        return {"screen": screen, "measurements": rng.normal(size=(rows, 3)).astype(np.float32)}
    return screen


def _runners(space, cfg, count: int, precision="float32") -> list[PolicyRunner]:
    rng = np.random.default_rng(0)
    runners = []
    for seed in range(count):
        torch.manual_seed(seed)
        model = ActorCritic(space, ACTIONS, cfg)
        # Normalisers away from their start, different per policy.
        model.update_normalizers(
            {k: torch.as_tensor(v) for k, v in _observations(space, 6, rng).items()}
            if isinstance(space, spaces.Dict)
            else torch.as_tensor(_observations(space, 6, rng))
        )
        if model.value_norm is not None:
            model.value_norm.update(torch.randn(50, dtype=torch.float64) * (seed + 2) + seed)
        acting = model.acting_copy(precision)
        runners.append(PolicyRunner(acting, NUM_ENVS, "cpu", greedy=True))
        runners[-1].rnn_state.normal_()
    return runners


def _decide_each(runners, obs, env_ids, policies):
    """The reference: every policy's own runner on its own rows."""
    actions = torch.zeros(len(env_ids), 2, dtype=torch.int64)
    log_probs = torch.zeros(len(env_ids))
    values = torch.zeros(len(env_ids))
    for p, runner in enumerate(runners):
        rows = np.flatnonzero(policies == p)
        if not len(rows):
            continue
        mine = {k: v[rows] for k, v in obs.items()} if isinstance(obs, dict) else obs[rows]
        decision = runner.decide(mine, env_ids[rows])
        actions[rows], log_probs[rows], values[rows] = decision
    return actions, log_probs, values


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("policies", [[0, 1, 2, 1, 0, 2, 2], [2, 2, 0, 2], [1]])
def test_a_stacked_pass_decides_as_each_policy_would(case, policies):
    space, cfg = CASES[case]
    policies = np.array(policies)
    env_ids = np.random.default_rng(1).permutation(NUM_ENVS)[: len(policies)]
    obs = _observations(space, len(policies), np.random.default_rng(2))
    reference = _runners(space, cfg, 3)
    stacked_runners = _runners(space, cfg, 3)
    expected = _decide_each(reference, obs, env_ids, policies)
    got = StackedRunner(stacked_runners).decide(obs, env_ids, policies)
    assert torch.equal(got.actions, expected[0])
    torch.testing.assert_close(got.log_probs, expected[1], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.values, expected[2], rtol=1e-5, atol=1e-5)
    # Memories advanced for exactly the rows acted on, by their own policy.
    for ref, mine in zip(reference, stacked_runners, strict=True):
        torch.testing.assert_close(mine.rnn_state, ref.rnn_state, rtol=1e-5, atol=1e-5)


def test_bfloat16_acting_copies_stack_too():
    space, cfg = CASES["rnn"]
    policies = np.array([0, 1, 1, 0, 1])
    env_ids = np.arange(5)
    obs = _observations(space, 5, np.random.default_rng(3))
    reference = _runners(space, cfg, 2, "bfloat16")
    expected = _decide_each(reference, obs, env_ids, policies)
    got = StackedRunner(_runners(space, cfg, 2, "bfloat16")).decide(obs, env_ids, policies)
    torch.testing.assert_close(got.values, expected[2], rtol=0.05, atol=0.05)
    torch.testing.assert_close(got.log_probs, expected[1], rtol=0.05, atol=0.05)


def test_weights_changed_in_place_are_used_at_the_next_pass():
    space, cfg = CASES["plain"]
    runners = _runners(space, cfg, 2)
    stacked = StackedRunner(runners)
    obs = _observations(space, 4, np.random.default_rng(4))
    env_ids, policies = np.arange(4), np.array([0, 1, 0, 1])
    before = stacked.decide(obs, env_ids, policies).values
    with torch.no_grad():
        runners[1].model.critic.bias.add_(10.0)  # as an optimiser step or a weight copy would
    after = stacked.decide(obs, env_ids, policies).values
    torch.testing.assert_close(after[[0, 2]], before[[0, 2]])
    torch.testing.assert_close(after[[1, 3]], before[[1, 3]] + 10.0)


def test_policies_of_different_architectures_are_refused():
    runners = _runners(*CASES["plain"], 1) + _runners(*CASES["rnn"], 1)
    with pytest.raises(ValueError, match="one architecture"):
        StackedRunner(runners)
