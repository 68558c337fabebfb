"""Shared settings for the sf-train tests: few threads, so the suite stays fast on a shared CPU,
and a toy-env run (:mod:`support.toy_env`, which sf-train makes as it makes any env) small enough to
train in about a second."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from support.toy_env import TOY_ENV

from sf_train.config.schema import AlgoConfig, Config, EnvConfig, ModelConfig, RunConfig

TOY_FLAGS = [
    "--env",
    TOY_ENV,
    "--frame-skip",
    "1",
    "--num-envs",
    "4",
    "--batch-size",
    "2",
    "--obs-size",
    "16",
    "12",
    "--conv-channels",
    "8",
    "--conv-kernels",
    "4",
    "--conv-strides",
    "2",
    "--fc-size",
    "32",
    "--rnn",
    "--rnn-size",
    "16",
    "--rollout",
    "8",
    "--torch-threads",
    "1",
]


@pytest.fixture(autouse=True)
def _few_threads() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)


@pytest.fixture
def toy_config(tmp_path) -> Callable[..., Config]:
    """Builds the toy run config; keyword arguments set :class:`RunConfig` fields."""

    def make(run_dir=None, frames: int = 2048, **run) -> Config:
        return Config(
            env=EnvConfig(env=TOY_ENV, num_envs=4, batch_size=2, obs_size=(16, 12), frame_skip=1),
            model=ModelConfig(
                conv_channels=(8,),
                conv_kernels=(4,),
                conv_strides=(2,),
                fc_size=32,
                rnn=True,
                rnn_size=16,
            ),
            # One update per batch keeps "zero lag" literal in sync mode; tests that need
            # several minibatches or epochs set them.
            algo=AlgoConfig(
                rollout=8, learning_rate=5e-3, gamma=0.5, num_epochs=1, num_minibatches=1
            ),
            run=RunConfig(
                run_dir=str(run_dir or tmp_path / "run"), frames=frames, torch_threads=1, **run
            ),
        )

    return make


@pytest.fixture
def toy_flags() -> list[str]:
    """The CLI flags of :func:`toy_config` (without --run-dir and --frames)."""
    return list(TOY_FLAGS)
