"""A test double: a tiny in-process env with the engine's asynchronous ``send``/``recv`` face.

Each observation is a dark image with one bright pixel in its left or right half; action 0
("left") or 1 ("right") matching the side earns +1. A policy learns it in seconds, which makes
it a fast end-to-end check of the sampler, the model and the learner without ViZDoom.

Importing this module registers :data:`TOY_ENV` with gymnasium, so sf-train makes it as it
makes any env: ``--env support.toy_env:Toy-v0`` imports the module (as ``gymnasium.make`` does), and
``gym.make_vec`` / ``gym.make`` call :func:`make_toy_vec` / :class:`ToyEnv` with the keyword
arguments sf-train gives every env.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from sf_envs.errors import OptionError

__all__ = ["TOY_ENV", "ToyEnv", "ToyVecEnv", "make_toy_vec"]

_STATE_ARRAYS = ("_side", "_col", "_final_col", "_t", "_return", "_reward", "_ended")
_STATE_ARRAYS += ("_episode_r", "_episode_l", "_length")


class ToyVecEnv:
    """Vector of "bright pixel" envs behind the EnvPool-style async face.

    Follows the contract of the sf-envs engine: ``recv()`` returns ``batch_size`` ready envs
    (views valid until the next call), ``info["env_id"]`` names them, autoreset happens in the
    same step and finished episodes are reported in ``info["episode_summary"]`` under
    ``info["_episode_summary"]``.

    Args:
        num_envs: Number of envs.
        batch_size: Envs returned per ``recv()``; less than ``num_envs`` is asynchronous.
        obs_shape: ``(C, H, W)`` of the uint8 screen.
        episode_length: Steps per episode (the last one is ``terminated``).
        episode_lengths: If given, each episode's length is drawn uniformly from these
            instead, e.g. ``(2, 30)``: bimodal lengths, whose short episodes end more often
            than a fair share (what biased completion-order statistics show).
        time_limit: End episodes by a time limit instead: the last step is ``truncated``, and
            the observation it led to comes in ``info["final_obs"]`` (masked by
            ``info["_final_obs"]``), as the sf-envs engine reports it.
        measurements: Emit Dict observations with a ``"measurements"`` vector
            (the episode's progress) besides the ``"screen"``.
        shuffle: Return ready envs in random order, as envs of uneven speed would be.
        seed: Seed of the env's own random generator.
        variables: Report one game variable, ``"episode_return"``: the return so far in
            ``info["variables"]`` every step, and the episode's in
            ``info["final_info"]["variables"]`` at its end (a view of one buffer that every
            ``recv`` rewrites, as the sf-envs engine's, with ``copy=False``, is).

    Example:
        >>> venv = ToyVecEnv(num_envs=4, batch_size=2)
        >>> venv.async_reset(seed=0)
        >>> obs, rew, term, trunc, info = venv.recv()
        >>> venv.send(np.zeros(2, dtype=np.int64), info["env_id"])
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self,
        num_envs: int,
        batch_size: int | None = None,
        obs_shape: tuple[int, int, int] = (1, 12, 16),
        episode_length: int = 16,
        measurements: bool = False,
        shuffle: bool = False,
        seed: int | None = None,
        time_limit: bool = False,
        episode_lengths: Sequence[int] = (),
        variables: bool = False,
    ) -> None:
        if any(length < 1 for length in episode_lengths):
            raise OptionError(f"episode_lengths={episode_lengths}: every length must be >= 1")
        self.num_envs = num_envs
        self.episode_lengths = np.asarray(episode_lengths or [episode_length], dtype=np.int64)
        self.time_limit = time_limit
        self.batch_size = num_envs if batch_size is None else batch_size
        if not 1 <= self.batch_size <= num_envs:
            raise OptionError(f"batch_size={batch_size}: use 1..num_envs ({num_envs})")
        self.episode_length = episode_length
        self.shuffle = shuffle
        screen = spaces.Box(0, 255, obs_shape, dtype=np.uint8)
        self.single_observation_space: spaces.Space = (
            spaces.Dict(
                {"screen": screen, "measurements": spaces.Box(0.0, 1.0, (1,), dtype=np.float32)}
            )
            if measurements
            else screen
        )
        self.single_action_space = spaces.Discrete(2)
        self._rng = np.random.default_rng(seed)
        self._side = np.zeros(num_envs, dtype=np.int64)
        self._col = np.zeros(num_envs, dtype=np.int64)
        self._final_col = np.zeros(num_envs, dtype=np.int64)  # target shown after a time limit
        self._t = np.zeros(num_envs, dtype=np.int64)
        self._length = np.full(num_envs, episode_length, dtype=np.int64)
        self._return = np.zeros(num_envs, dtype=np.float32)
        self._ready: list[int] = []
        # Per-env result of the last step, returned by recv().
        self._reward = np.zeros(num_envs, dtype=np.float32)
        self._ended = np.zeros(num_envs, dtype=bool)  # the episode ended on the last step
        self._episode_r = np.zeros(num_envs, dtype=np.float32)
        self._episode_l = np.zeros(num_envs, dtype=np.int32)
        self.variable_names: tuple[str, ...] = ("episode_return",) if variables else ()
        self._final_variables = np.zeros((self.batch_size, len(self.variable_names)))
        self._closed = False

    def _new_target(self, env_ids: np.ndarray) -> None:
        half = self.single_screen_shape[2] // 2
        self._side[env_ids] = self._rng.integers(0, 2, len(env_ids))
        self._col[env_ids] = self._side[env_ids] * half + self._rng.integers(0, half, len(env_ids))

    def _new_lengths(self, env_ids: np.ndarray) -> None:
        if len(self.episode_lengths) > 1:
            self._length[env_ids] = self._rng.choice(self.episode_lengths, len(env_ids))

    @property
    def unwrapped(self) -> ToyVecEnv:
        """Itself, as gymnasium's ``make_vec`` expects of a vector env."""
        return self

    @property
    def single_screen_shape(self) -> tuple[int, ...]:
        space = self.single_observation_space
        return (space["screen"] if isinstance(space, spaces.Dict) else space).shape

    def async_reset(self, seed: int | None = None) -> None:
        """Starts every env; all become ready for ``recv()``."""
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        ids = np.arange(self.num_envs)
        self._t[:] = 0
        self._return[:] = 0
        self._reward[:] = 0
        self._ended[:] = False
        self._new_lengths(ids)
        self._new_target(ids)
        self._ready = list(ids)

    def recv(self) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Returns ``batch_size`` ready envs: ``(obs, reward, terminated, truncated, info)``."""
        if self._closed:
            raise RuntimeError("recv() on a closed ToyVecEnv")
        if len(self._ready) < self.batch_size:
            raise RuntimeError(
                f"recv() needs {self.batch_size} ready envs but only {len(self._ready)} were sent "
                "actions; send() an action for every env returned by recv()"
            )
        if self.shuffle:
            self._rng.shuffle(self._ready)
        ids = np.array(self._ready[: self.batch_size], dtype=np.int32)
        del self._ready[: self.batch_size]

        screen = self._screens(self._col[ids])
        obs: Any = self._observation(screen, self._t[ids])
        episode_mask = self._ended[ids].copy()
        info: dict[str, Any] = {
            "env_id": ids,
            "_episode_summary": episode_mask,
            "episode_summary": {"r": self._episode_r[ids].copy(), "l": self._episode_l[ids].copy()},
        }
        if self.variable_names:
            self._final_variables[:, 0] = np.where(episode_mask, self._episode_r[ids], 0.0)
            info["final_info"] = {"variables": self._final_variables}
            info["_final_info"] = episode_mask
            info["variables"] = self._return[ids, None].astype(np.float64)
        if self.time_limit:
            final = self._screens(self._final_col[ids]) * episode_mask[:, None, None, None]
            info["final_obs"] = self._observation(final, np.full(len(ids), self.episode_length))
            info["_final_obs"] = episode_mask
            return obs, self._reward[ids].copy(), np.zeros_like(episode_mask), episode_mask, info
        truncated = np.zeros(len(ids), dtype=bool)
        return obs, self._reward[ids].copy(), episode_mask, truncated, info

    def _screens(self, cols: np.ndarray) -> np.ndarray:
        """Dark screens with one bright pixel in column ``cols[i]`` of the middle row."""
        shape = self.single_screen_shape
        screen = np.zeros((len(cols), *shape), dtype=np.uint8)
        screen[np.arange(len(cols)), :, shape[1] // 2, cols] = 255
        return screen

    def _observation(self, screen: np.ndarray, t: np.ndarray) -> Any:
        if isinstance(self.single_observation_space, spaces.Dict):
            progress = (t / self.episode_length).astype(np.float32)[:, None]
            return {"screen": screen, "measurements": progress}
        return screen

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        """Steps the envs ``env_ids`` with ``actions``; they become ready for ``recv()``."""
        actions = np.asarray(actions)
        env_ids = np.asarray(env_ids)
        if actions.shape != env_ids.shape:
            raise ValueError(
                f"actions of shape {actions.shape} for env_ids of shape {env_ids.shape}: "
                "send one action per env id"
            )
        ids = env_ids.astype(np.int64)
        self._reward[ids] = (actions == self._side[ids]).astype(np.float32)
        self._return[ids] += self._reward[ids]
        self._t[ids] += 1
        done = self._t[ids] >= self._length[ids]
        self._ended[ids] = done
        finished = ids[done]
        self._episode_r[finished] = self._return[finished]
        self._episode_l[finished] = self._t[finished]
        self._t[finished] = 0
        self._return[finished] = 0
        self._new_lengths(finished)
        self._new_target(ids)
        if self.time_limit:  # the target just drawn is what the cut episode would have seen
            self._final_col[finished] = self._col[finished]
            self._new_target(finished)
        self._ready.extend(int(i) for i in ids)

    def state_dict(self) -> dict[str, Any]:
        """Everything that decides future steps, so a trainer can resume a run exactly
        (:class:`sf_train.sampling.protocols.StatefulEnv`)."""
        state: dict[str, Any] = {k: getattr(self, k).copy() for k in _STATE_ARRAYS}
        state["rng"] = self._rng.bit_generator.state
        state["ready"] = list(self._ready)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores :meth:`state_dict`; the env continues as the saved one would have."""
        for k in _STATE_ARRAYS:
            getattr(self, k)[:] = state[k]
        self._rng.bit_generator.state = state["rng"]
        self._ready = list(state["ready"])

    def close(self) -> None:
        """Idempotent; the env holds no external resources."""
        self._closed = True


def _screen_shape(
    obs_size: tuple[int, int], grayscale: bool, frame_skip: int
) -> tuple[int, int, int]:
    """``(C, H, W)`` from the options sf-train gives every env."""
    if frame_skip != 1:
        raise OptionError(f"frame_skip={frame_skip}: the toy env has no frames to skip; use 1")
    width, height = obs_size
    return (1 if grayscale else 3, height, width)


def make_toy_vec(
    num_envs: int,
    batch_size: int | None = None,
    num_workers: int = 1,
    obs_size: tuple[int, int] = (16, 12),
    grayscale: bool = True,
    frame_skip: int = 1,
    copy: bool = True,
    **kwargs: Any,
) -> ToyVecEnv:
    """The vector entry point of :data:`TOY_ENV`: a :class:`ToyVecEnv` from the options that
    sf-train gives every env (``num_workers`` is unused: the toy steps in-process; ``copy`` too:
    every ``recv`` returns fresh arrays, which either value allows); ``kwargs`` are
    :class:`ToyVecEnv`'s own."""
    if num_workers < 1:
        raise OptionError(f"num_workers={num_workers}: use at least 1")
    shape = _screen_shape(obs_size, grayscale, frame_skip)
    return ToyVecEnv(num_envs, batch_size, obs_shape=shape, **kwargs)


class ToyEnv(gym.Env):
    """One "bright pixel" env as a ``gymnasium.Env``, for evaluation videos of toy runs.

    Args:
        render_mode: None or ``"rgb_array"`` (the screen, 8x enlarged, as RGB).
        obs_size: Screen width and height.
        grayscale: One channel, else three.
        frame_skip: Must be 1: the toy has no frames to skip.
        **kwargs: :class:`ToyVecEnv`'s own options, e.g. ``episode_length``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 8}

    def __init__(
        self,
        render_mode: str | None = None,
        obs_size: tuple[int, int] = (16, 12),
        grayscale: bool = True,
        frame_skip: int = 1,
        **kwargs: Any,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise OptionError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        shape = _screen_shape(obs_size, grayscale, frame_skip)
        self._vec = ToyVecEnv(1, obs_shape=shape, **kwargs)
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space
        self._screen = np.zeros(shape, dtype=np.uint8)

    def _observe(self) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._vec.recv()
        self._screen = obs[0].copy()
        out: dict[str, Any] = {}
        if info["_episode_summary"][0]:
            out["episode_summary"] = {
                "r": float(info["episode_summary"]["r"][0]),
                "l": int(info["episode_summary"]["l"][0]),
            }
        return self._screen.copy(), float(reward[0]), bool(terminated[0]), bool(truncated[0]), out

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._vec.async_reset(seed=seed)
        return self._observe()[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._vec.send(np.array([int(action)]), np.array([0]))
        return self._observe()

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        gray = self._screen.max(axis=0)
        return np.repeat(np.repeat(gray, 8, axis=0), 8, axis=1)[..., None].repeat(3, axis=-1)


TOY_ENV = f"{__name__}:Toy-v0"
"""The ``--env`` of toy runs: gymnasium imports this module, which registers ``Toy-v0``."""

if "Toy-v0" not in gym.registry:
    gym.register(
        "Toy-v0",
        entry_point=f"{__name__}:ToyEnv",
        vector_entry_point=f"{__name__}:make_toy_vec",
    )
