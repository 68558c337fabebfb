"""The one place that turns an :class:`EnvConfig` into environments.

Two kinds of gymnasium ids (``MODULE:ID`` first imports MODULE so that it registers ID, as
``gymnasium.make`` does):

- *engine ids*, whose registration has a ``vector_entry_point`` that takes ``batch_size`` and
  gives the engine's async ``send``/``recv`` face
  (:class:`~sf_train.sampling.protocols.AsyncVectorEnv`): the ``sf/Doom*-v0`` ids of sf-envs. Every env is given the same keyword arguments:
  ``frame_skip``, ``obs_size``, ``grayscale`` and the ``env_options``; frames are counted as
  agent steps x ``frame_skip``.
- *any other id* (``CartPole-v1``, a user's own env): the sf-envs engine hosts it
  (:func:`sf_envs.vector.make_gym_vec`), made with the ``env_options`` alone; the Doom options
  do not apply, and a frame is an agent step (:func:`frames_per_step`).

The vector env also gets ``step_timeout_s`` and ``max_restarts`` (the sf-envs engine's names)
when ``worker_timeout`` / ``worker_max_restarts`` are set.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any, cast

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, load_env_creator

from sf_envs.errors import OptionError
from sf_envs.vector.gym_unit import make_gym_env
from sf_envs.vector.make import make_gym_vec
from sf_train.config.schema import EnvConfig
from sf_train.sampling.protocols import AsyncVectorEnv

__all__ = [
    "agents_per_game",
    "env_kwargs",
    "env_spec",
    "frames_per_step",
    "game_variable_names",
    "hosted_by_engine",
    "make_env",
    "make_match_env",
    "make_single_env",
]


@functools.lru_cache(maxsize=64)
def hosted_by_engine(env_id: str) -> bool:
    """Whether ``env_id`` brings its own engine (its vector entry point takes ``batch_size``
    for the async face, as the sf-envs Doom ids' does), rather than being hosted through
    :func:`sf_envs.vector.make_gym_vec` (e.g. CartPole, whose own vector env is synchronous)."""
    entry = env_spec(env_id).vector_entry_point
    if entry is None:
        return False
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    return "batch_size" in inspect.signature(creator).parameters


def frames_per_step(cfg: EnvConfig) -> int:
    """Env frames one agent step counts for: ``frame_skip`` for engine ids, else 1."""
    return cfg.frame_skip if hosted_by_engine(cfg.env) else 1


def env_kwargs(cfg: EnvConfig) -> dict[str, Any]:
    """The keyword arguments every env of ``cfg`` is made with (for engine ids ``frame_skip``,
    ``obs_size``, ``grayscale`` and the ``env_options``; else the ``env_options``): an
    exported policy carries them, so that what plays it makes the env it was trained on."""
    if not hosted_by_engine(cfg.env):
        return cfg.options()
    return {
        **cfg.options(),
        "frame_skip": cfg.frame_skip,
        "obs_size": cfg.obs_size,
        "grayscale": cfg.grayscale,
    }


def env_spec(env_id: str) -> EnvSpec:
    """The registration of ``env_id``; ``MODULE:ID`` first imports MODULE (which registers ID).

    Raises:
        OptionError: If the id is not registered (or MODULE cannot be imported).
    """
    import sf_envs  # noqa: F401  (registers the sf/Doom*-v0 ids)

    module, _, name = env_id.rpartition(":")
    try:
        if module:
            importlib.import_module(module)
        return gym.spec(name)
    except (ImportError, gym.error.Error) as e:
        doom = sorted(k for k in gym.registry if k.startswith("sf/Doom"))
        raise OptionError(
            f"unknown env {env_id!r} ({e}): use a registered gymnasium id, e.g. one of "
            f"{', '.join(doom)}, an Atari game as sf/Atari-<Game>-v0 (sf/Atari-Pong-v0; "
            "sf_envs.atari_env_ids() lists them), or MODULE:ID for an id that MODULE registers "
            "when imported"
        ) from e


def make_env(
    cfg: EnvConfig,
    num_envs: int | None = None,
    batch_size: int | None = None,
) -> AsyncVectorEnv:
    """The vector env with the async face that the sampler drives; ``async_reset`` seeds it.

    Args:
        cfg: Env id, sizes and engine settings.
        num_envs: Overrides ``cfg.num_envs`` (evaluation uses fewer).
        batch_size: Overrides ``cfg.batch_size``.

    Raises:
        OptionError: If the id is not registered (see :func:`env_spec`).
    """
    env_spec(cfg.env)
    n = cfg.num_envs if num_envs is None else num_envs
    b = min(cfg.batch_size if batch_size is None else batch_size, n)
    # Engine settings go only where set, so an env without workers need not accept them.
    engine: dict[str, Any] = {}
    if cfg.worker_timeout is not None:
        engine["step_timeout_s"] = cfg.worker_timeout
    if cfg.worker_max_restarts is not None:
        engine["max_restarts"] = cfg.worker_max_restarts
    workers = max(1, min(cfg.num_workers, n // agents_per_game(cfg)))
    # copy=False: the sampler consumes each batch before sending its actions.
    if not hosted_by_engine(cfg.env):
        hosted = make_gym_vec(
            cfg.env, n, b, env_kwargs=cfg.options(), num_workers=workers, copy=False, **engine
        )
        return cast(AsyncVectorEnv, hosted)
    venv = gym.make_vec(
        cfg.env,
        num_envs=n,
        batch_size=b,
        copy=False,
        num_workers=workers,
        **engine,
        **env_kwargs(cfg),
    )
    return cast(AsyncVectorEnv, venv)  # with batch_size, sf's vector entry point's engine


def agents_per_game(cfg: EnvConfig) -> int:
    """Rows one game gives the vector env: its learning agents (``sf/DoomDuel-v0``: 2, played
    by the one policy, i.e. self-play), else 1. Env counts are multiples of it."""
    from sf_envs.match.scenarios import MATCH_SCENARIOS, MatchConfig

    scenario = env_spec(cfg.env).kwargs.get("scenario")
    if scenario not in MATCH_SCENARIOS:
        return 1
    return MatchConfig.create(scenario, **cfg.options()).num_agents


def make_single_env(cfg: EnvConfig, render_mode: str | None = "rgb_array") -> gym.Env:
    """One env with the same observations as training, rendering full-size frames.

    Raises:
        ValueError: For a game of several learning agents: use :func:`make_match_env`.
    """
    if agents_per_game(cfg) > 1:
        raise ValueError(f"{cfg.env} has several agents per game: use make_match_env")
    if not hosted_by_engine(cfg.env):
        return make_gym_env(cfg.env, {"render_mode": render_mode, **cfg.options()})
    return gym.make(cfg.env, render_mode=render_mode, **env_kwargs(cfg))


def make_match_env(cfg: EnvConfig, render_mode: str | None = "rgb_array") -> Any:
    """The PettingZoo match behind a self-play id (``sf/DoomDuel-v0``), with the training
    observations; it renders ``player_0``'s view."""
    import sf_envs

    scenario = env_spec(cfg.env).kwargs["scenario"]
    return sf_envs.make_match(scenario, render_mode=render_mode, **env_kwargs(cfg))


def game_variable_names(venv: object) -> tuple[str, ...]:
    """Names of the columns of ``info["final_info"]["variables"]`` (lower case), or ``()``.

    The engine reports game variables as one array; sf-envs keeps the names beside it.
    """
    return tuple(str(n).lower() for n in getattr(venv, "variable_names", ()))
