"""int8 acting copies (``--precision int8``): close to the float policy, and following it."""

from __future__ import annotations

import copy

import pytest
import torch
from support.model import ACTIONS, DICT, SCREEN, make_obs
from torch import nn

from sf_train.config.schema import AlgoConfig, Config, ConfigError, EnvConfig, ModelConfig, validate
from sf_train.model.int8 import Int8Layers, check_int8_support
from sf_train.model.network import ActorCritic
from sf_train.run.members import SharedWeights

SMALL = ModelConfig(conv_channels=(8, 16), fc_size=64, rnn=True, rnn_size=32, measurements_size=8)


def _close_to(got: torch.Tensor, want: torch.Tensor, tolerance: float = 0.03) -> None:
    """Within ``tolerance`` of the float result's largest magnitude: the rounding of 8-bit
    weights and 7-bit inputs (a few percent once it passed the FC layer and the GRU), and
    nothing more."""
    error = (got - want).abs().max().item()
    assert error <= tolerance * want.abs().max().item(), error


def test_linear_and_cell_match_their_float_layers():
    torch.manual_seed(0)
    linear, cell = nn.Linear(256, 64), nn.GRUCell(64, 32)
    x, h = torch.randn(4, 256), torch.randn(4, 32)
    layers = Int8Layers(linear, cell)
    with torch.no_grad():
        _close_to(layers.fc(x), linear(x))
        _close_to(layers.cell(x[:, :64], h), cell(x[:, :64], h))


@pytest.mark.parametrize("space", [SCREEN, DICT], ids=["screen", "dict"])
def test_an_int8_acting_copy_acts_like_the_float_model(space):
    torch.manual_seed(0)
    model = ActorCritic(space, ACTIONS, SMALL)
    acting = model.acting_copy("int8")
    obs, state = make_obs(space, 8), torch.randn(8, 32)
    with torch.no_grad():
        want, got = model(obs, state), acting(obs, state)
    _close_to(got.logits, want.logits, 0.06)
    _close_to(got.values, want.values, 0.06)
    _close_to(got.rnn_state, want.rnn_state, 0.06)
    assert not torch.equal(got.rnn_state, want.rnn_state)  # it did run in int8
    assert {p.dtype for p in acting.parameters()} == {torch.float32}
    assert acting.state_dict().keys() == model.state_dict().keys()


def _outputs(model: ActorCritic, obs: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(obs, torch.zeros(len(obs), 32)).logits


def test_published_and_loaded_weights_are_requantized():
    torch.manual_seed(0)
    learner_model = ActorCritic(SCREEN, ACTIONS, SMALL)
    weights = SharedWeights(learner_model.acting_copy("int8"))
    obs = make_obs(SCREEN, 8)
    before = _outputs(weights.model, obs)
    with torch.no_grad():
        for param in learner_model.parameters():
            param.mul_(-2.0)
    weights.publish(learner_model, 1)
    after = _outputs(weights.model, obs)
    _close_to(after, _outputs(learner_model, obs), 0.06)
    assert not torch.allclose(after, before, atol=1e-3)

    other = ActorCritic(SCREEN, ACTIONS, SMALL).acting_copy("int8")
    other.load_state_dict(learner_model.state_dict())
    _close_to(_outputs(other, obs), _outputs(learner_model, obs), 0.06)


def test_a_deep_copy_is_an_independent_int8_policy():
    """The sampler's frozen opponent is a deep copy of the acting model."""
    torch.manual_seed(0)
    acting = ActorCritic(SCREEN, ACTIONS, SMALL).acting_copy("int8")
    frozen = copy.deepcopy(acting)
    obs = make_obs(SCREEN, 8)
    torch.testing.assert_close(_outputs(frozen, obs), _outputs(acting, obs))
    with torch.no_grad():
        acting.fc.weight.mul_(-1.0)
    acting.requantize()
    assert not torch.allclose(_outputs(frozen, obs), _outputs(acting, obs), atol=1e-3)


def test_int8_is_refused_where_it_cannot_act():
    with pytest.raises(ConfigError, match="precision float32"):  # a user error for the CLI
        check_int8_support(torch.device("meta"))
    cfg = Config(env=EnvConfig(num_envs=8), algo=AlgoConfig(precision="int8", num_policies=2))
    with pytest.raises(ValueError, match="precision='int8' with num_policies=2"):
        validate(cfg)
