"""sf_train: asynchronous APPO with V-trace for pixel-based Doom RL on one machine.

The folders follow the data: a config makes envs and a model; the sampler acts and fills
trajectory batches; the learner turns them into gradient steps; the run folder keeps what
survives the process.

- :mod:`sf_train.config`: typed configuration, its command-line arguments and presets.
- :mod:`sf_train.envs`: the one place that makes envs from the config.
- :mod:`sf_train.model`: the actor-critic network and the pieces it is built of.
- :mod:`sf_train.sampling`: acting and filling trajectory batches, in this process or in
  sampler processes.
- :mod:`sf_train.algo`: the APPO learner step and its maths (losses, V-trace).
- :mod:`sf_train.run`: the trainer that ties sampling and learning together, its reports,
  checkpoints and run folder, the policies it holds and the league's face on it.
- :mod:`sf_train.evaluation`: evaluation and videos from a run folder; :mod:`sf_train.scores`,
  its interquartile mean and bootstrap intervals.
- :mod:`sf_train.export`: a run's acting policy as an ONNX file that plays without torch.
- :mod:`sf_train.cli`: the ``sf-train`` command (train, eval, enjoy, export).

What users need is importable from here (``from sf_train import Config, train, evaluate``);
the names load on first use, so ``import sf_train.config`` alone never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sf_envs.exports import lazy_exports

if TYPE_CHECKING:
    from sf_train.config.presets import sample_factory
    from sf_train.config.schema import (
        AlgoConfig,
        Config,
        ConfigError,
        EnvConfig,
        ModelConfig,
        RunConfig,
        load_config,
        save_config,
    )
    from sf_train.envs import make_env
    from sf_train.evaluation import EvalResult, evaluate, evaluate_policy, load_policy, record_video
    from sf_train.run.trainer import Trainer, train

_EXPORTS = {
    "AlgoConfig": "sf_train.config.schema",
    "Config": "sf_train.config.schema",
    "ConfigError": "sf_train.config.schema",
    "EnvConfig": "sf_train.config.schema",
    "ModelConfig": "sf_train.config.schema",
    "RunConfig": "sf_train.config.schema",
    "load_config": "sf_train.config.schema",
    "save_config": "sf_train.config.schema",
    "sample_factory": "sf_train.config.presets",
    "make_env": "sf_train.envs",
    "EvalResult": "sf_train.evaluation",
    "evaluate": "sf_train.evaluation",
    "evaluate_policy": "sf_train.evaluation",
    "load_policy": "sf_train.evaluation",
    "record_video": "sf_train.evaluation",
    "Trainer": "sf_train.run.trainer",
    "train": "sf_train.run.trainer",
}

__all__ = [
    "AlgoConfig",
    "Config",
    "ConfigError",
    "EnvConfig",
    "EvalResult",
    "ModelConfig",
    "RunConfig",
    "Trainer",
    "evaluate",
    "evaluate_policy",
    "load_config",
    "load_policy",
    "make_env",
    "record_video",
    "sample_factory",
    "save_config",
    "train",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
