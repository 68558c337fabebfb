"""The trainer's configuration, importable without torch.

- :mod:`sf_train.config.schema`: the dataclasses, validation (every problem reported at once)
  and JSON persistence.
- :mod:`sf_train.config.arguments`: command-line arguments generated from the dataclasses.
- :mod:`sf_train.config.presets`: named starting configurations (``--preset``).
"""

from __future__ import annotations

from sf_train.config.schema import (
    AlgoConfig,
    Config,
    ConfigError,
    EnvConfig,
    ModelConfig,
    RunConfig,
    load_config,
    save_config,
    validate,
)

__all__ = [
    "AlgoConfig",
    "Config",
    "ConfigError",
    "EnvConfig",
    "ModelConfig",
    "RunConfig",
    "load_config",
    "save_config",
    "validate",
]
