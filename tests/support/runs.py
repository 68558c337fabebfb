"""What the trainer tests share: a run's TensorBoard scalars, and the config of the fault runs
(real Doom workers, trained until the test stops them)."""

from __future__ import annotations

from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from sf_train.config.schema import AlgoConfig, Config, EnvConfig, ModelConfig, RunConfig

__all__ = ["LIMIT", "faults_config", "scalars"]

LIMIT = 400_000
"""Frame budget of the fault runs: never reached, each test stops its run."""


def scalars(run_dir) -> dict[str, list[float]]:
    """Every scalar tag of the run's TensorBoard events, with its values in order."""
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def faults_config(run_dir: Path, env: EnvConfig) -> Config:
    """A small Doom run that trains until stopped (its budget, :data:`LIMIT`, is never reached),
    without evaluation or checkpoints on the way."""
    return Config(
        env=env,
        model=ModelConfig(conv_channels=(8,), conv_kernels=(8,), conv_strides=(4,), fc_size=32),
        algo=AlgoConfig(rollout=16, num_minibatches=2, num_epochs=1),
        run=RunConfig(
            run_dir=str(run_dir),
            frames=LIMIT,
            torch_threads=1,
            eval_episodes=0,
            checkpoint_every=LIMIT,
        ),
    )
