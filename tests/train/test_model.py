from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from support.model import ACTIONS, DICT, MIXED, SCREEN, VECTORS, make_obs

from sf_train.config.schema import ModelConfig
from sf_train.model.network import ActorCritic
from sf_train.model.normalize import RunningMeanStd

SMALL = ModelConfig(conv_channels=(8, 16), fc_size=32, rnn=True, rnn_size=16, measurements_size=8)


@pytest.mark.parametrize("rnn", [True, False])
@pytest.mark.parametrize("space", [SCREEN, DICT], ids=["screen", "dict"])
def test_forward_shapes(rnn, space):
    cfg = ModelConfig(**{**SMALL.__dict__, "rnn": rnn})
    model = ActorCritic(space, ACTIONS, cfg)
    state = model.initial_state(4)
    assert state.shape == (4, 16 if rnn else 0)
    out = model(make_obs(space, 4), state)
    assert out.logits.shape == (4, 5)
    assert out.values.shape == (4,)
    assert out.rnn_state.shape == state.shape

    seq = model.forward_sequence(make_obs(space, 6, 4), state, torch.zeros(6, 4, dtype=torch.bool))
    assert seq.logits.shape == (6, 4, 5)
    assert seq.values.shape == (6, 4)
    assert seq.rnn_state.shape == state.shape


@pytest.mark.parametrize(
    "space", [SCREEN, DICT, MIXED, VECTORS], ids=["screen", "dict", "mixed", "vectors"]
)
def test_sequence_equals_steps_with_resets(space):
    model = ActorCritic(space, ACTIONS, SMALL)
    T, B = 5, 3
    obs = make_obs(space, T, B)
    resets = torch.zeros(T, B, dtype=torch.bool)
    resets[2, 1] = resets[4, 0] = True
    h = torch.randn(B, 16)
    seq = model.forward_sequence(obs, h, resets)
    for t in range(T):
        step_obs = {k: v[t] for k, v in obs.items()} if isinstance(obs, dict) else obs[t]
        h = torch.where(resets[t].unsqueeze(-1), torch.zeros_like(h), h)
        out = model(step_obs, h)
        h = out.rnn_state
        torch.testing.assert_close(out.logits, seq.logits[t])
        torch.testing.assert_close(out.values, seq.values[t])
    torch.testing.assert_close(h, seq.rnn_state)


def test_normalizers_live_in_the_state_dict():
    cfg = ModelConfig(**{**SMALL.__dict__, "screen_norm": "running"})
    model = ActorCritic(DICT, spaces.Discrete(3), cfg)
    model.update_normalizers(make_obs(DICT, 10))
    state = model.state_dict()
    for key in ("screen_norm.mean", "screen_norm.var", "measurements_norm.count"):
        assert key in state
    clone = ActorCritic(DICT, spaces.Discrete(3), cfg)
    clone.load_state_dict(state)
    obs = make_obs(DICT, 2)
    torch.testing.assert_close(
        clone(obs, clone.initial_state(2)).logits, model(obs, model.initial_state(2)).logits
    )


def test_per_pixel_screen_statistics_match_numpy_and_fade_a_static_screen():
    """'per_pixel' keeps a mean and std for every pixel of every channel; a pixel that never
    changes normalises to zero, one that does keeps its contrast."""
    cfg = ModelConfig(**{**SMALL.__dict__, "screen_norm": "per_pixel"})
    model = ActorCritic(SCREEN, spaces.Discrete(3), cfg)
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, 256, (n, *SCREEN.shape), dtype=np.uint8) for n in (7, 1, 30)]
    for screens in batches:
        screens[:, :, 0, 0] = 90  # a static pixel in every channel
        model.update_normalizers(torch.from_numpy(screens))
    full = np.concatenate(batches).astype(np.float64)
    norm = model.screen_norm
    assert norm.mean.shape == SCREEN.shape
    np.testing.assert_allclose(norm.mean.numpy(), full.mean(0), rtol=1e-6)
    np.testing.assert_allclose(norm.var.numpy(), full.var(0), rtol=1e-5, atol=1e-6)
    x = norm(torch.from_numpy(batches[0]))
    assert torch.all(x[:, :, 0, 0] == 0)
    assert x[:, :, 1:, 1:].std() > 0.9
    channels_last = torch.from_numpy(batches[0]).contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(norm(channels_last), x)


def test_per_entry_byte_statistics_stay_exact_past_float32_integers():
    """Sums of squared bytes pass 2**24 (float32's last exact integer) beyond 258 rows; the
    statistics of 700 rows of near-255 bytes still equal numpy's in float64."""
    rng = np.random.default_rng(1)
    rows = rng.integers(250, 256, (700, 2, 3), dtype=np.uint8)
    rms = RunningMeanStd((2, 3))
    rms.update(torch.from_numpy(rows))
    np.testing.assert_allclose(rms.mean.numpy(), rows.mean(0), rtol=1e-12)
    np.testing.assert_allclose(rms.var.numpy(), rows.astype(np.float64).var(0), rtol=1e-9)


def test_running_mean_std_matches_numpy_over_all_batches():
    rms = RunningMeanStd((3,))
    data = [np.random.default_rng(i).normal(i, i + 1, (n, 3)) for i, n in enumerate((5, 1, 40))]
    for x in data:
        rms.update(torch.tensor(x))
    full = np.concatenate(data)
    np.testing.assert_allclose(rms.mean.numpy(), full.mean(0), rtol=1e-10)
    np.testing.assert_allclose(rms.var.numpy(), full.var(0), rtol=1e-10)
    assert rms.count.item() == len(full)
    with pytest.raises(ValueError, match="normalised shape"):
        rms.update(torch.zeros(4, 2))


@pytest.mark.parametrize("channels_last", [False, True])
def test_normalising_follows_every_change_of_the_statistics(channels_last):
    """forward() keeps its scale and shift between calls; each way the statistics change (an
    update, a loaded state dict, a copy into the buffers as a publish does, a replaced
    buffer) must show in the next call."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (4, 3, 5, 6), dtype=torch.uint8, generator=gen)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    rms = RunningMeanStd((3, 5, 6))

    def expected() -> torch.Tensor:
        y = (x.double() - rms.mean) / torch.sqrt(rms.var + rms.eps)
        return y.clamp(-rms.clip, rms.clip).float()

    torch.testing.assert_close(rms(x), expected())
    rms.update(x)
    torch.testing.assert_close(rms(x), expected())
    other = RunningMeanStd((3, 5, 6))
    other.update(x[:2] // 2)
    rms.load_state_dict(other.state_dict())
    torch.testing.assert_close(rms(x), expected())
    rms.var.copy_(rms.var * 4)
    torch.testing.assert_close(rms(x), expected())
    rms.mean = rms.mean + 1.0
    torch.testing.assert_close(rms(x), expected())
    torch.testing.assert_close(rms(x.double()), expected().double())


def test_screen_statistics_from_bytes_equal_those_from_floats():
    """uint8 screens take a histogram path; it must give the float path's numbers."""
    gen = torch.Generator().manual_seed(0)
    by_bytes, by_floats = RunningMeanStd(), RunningMeanStd()
    for size in (5, 700, 3):
        x = torch.randint(0, 256, (size, 3, 4), dtype=torch.uint8, generator=gen)
        by_bytes.update(x)
        by_floats.update(x.double())
    for name in ("mean", "var", "count"):
        assert torch.allclose(getattr(by_bytes, name), getattr(by_floats, name), rtol=1e-12)


def test_dict_observations_take_any_keys_the_vectors_concatenated():
    mixed = ActorCritic(MIXED, ACTIONS, SMALL)
    assert (mixed.layout.screen, mixed.layout.vector) == ("pixels", ("ammo", "speed"))  # sorted
    assert mixed.measurements_mlp is not None and mixed.measurements_mlp.in_features == 5
    vectors = ActorCritic(VECTORS, ACTIONS, SMALL)
    assert vectors.conv is None and vectors.vector_mlp is not None
    assert vectors.vector_mlp[0].in_features == 5
    obs = make_obs(VECTORS, 4)
    # The vector is the keys' concatenation, in the space's order: swapping parts changes it.
    swapped = {"cart": obs["pole"][:, :2], "pole": torch.cat([obs["cart"], obs["pole"][:, 2:]], 1)}
    state = vectors.initial_state(4)
    assert not torch.allclose(vectors(obs, state).logits, vectors(swapped, state).logits)
    numpy_obs = {k: v.numpy() for k, v in obs.items()}
    _, joined = vectors.layout.split(numpy_obs)
    np.testing.assert_array_equal(joined, torch.cat([obs["cart"], obs["pole"]], 1).numpy())


def test_bad_spaces_and_sizes_raise_with_a_fix():
    two_screens = spaces.Dict({"a": SCREEN, "b": SCREEN})
    with pytest.raises(ValueError, match="it has several screens: flatten or drop them"):
        ActorCritic(two_screens, ACTIONS, SMALL)
    flat_image = spaces.Dict({"pos": spaces.Box(0, 1, (2,)), "map": spaces.Box(0, 1, (4, 4))})
    with pytest.raises(ValueError, match=r"keys \['map'\] are neither"):
        ActorCritic(flat_image, ACTIONS, SMALL)
    with pytest.raises(ValueError, match="uint8 Box of shape"):
        ActorCritic(spaces.Box(0, 1, (36, 64), dtype=np.float32), ACTIONS, SMALL)
    with pytest.raises(ValueError, match="does not fit"):
        ActorCritic(spaces.Box(0, 255, (1, 8, 8), dtype=np.uint8), ACTIONS, SMALL)
