"""One Atari game over ale-py's ``ALEInterface``, writing its preprocessed observations into a
caller's array (the engine's shared memory, or a single env's buffer).

The episode is the whole game, every life of it, and its reward the raw game score: what
Atari results report. Learners that end value estimates at a lost life or clip rewards do so
themselves from ``lives`` (sf-train: ``--life-loss-ends``, ``--reward-clip``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sf_envs.atari.kernels import area_weights, pool_and_resize
from sf_envs.atari.options import AtariOptions
from sf_envs.errors import OptionError

__all__ = ["VARIABLES", "AtariCore", "game_names"]

#: The game variables every step reports: lives left and raw frames since the episode began.
VARIABLES = ("lives", "episode_frame_number")

_SCREEN = (210, 160)


def _ale() -> Any:
    try:
        import ale_py
    except ImportError as e:
        raise OptionError(
            "Atari games need ale-py: pip install 'sf-envs[atari]' (or ale-py itself)"
        ) from e
    return ale_py


def game_names() -> list[str]:
    """Every ROM ale-py ships (``"pong"``, ``"breakout"``, ...), sorted."""
    return sorted(_ale().roms.get_all_rom_ids())


class AtariCore:
    """One game and its preprocessing; ``reset``/``step`` write the stacked frames to ``out``.

    ``out`` is the stack itself: ``step`` shifts the frames the last ``reset``/``step`` wrote
    there and adds the new one, so the caller passes the same array (an env's row of shared
    memory, a single env's buffer) every time and keeps no other copy.

    Args:
        options: The game and its preprocessing.
    """

    def __init__(self, options: AtariOptions) -> None:
        ale_py = _ale()
        if options.game not in ale_py.roms.get_all_rom_ids():
            raise OptionError(
                f"unknown Atari game {options.game!r}; ale-py has: {', '.join(game_names())}"
            )
        self.options = options
        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # before the banner
        self.ale = ale_py.ALEInterface()
        self.ale.setFloat("repeat_action_probability", float(options.sticky_actions))
        self.ale.setInt("max_num_frames_per_episode", options.max_frames)
        self._rom = ale_py.roms.get_rom_path(options.game)
        self._rng = np.random.default_rng()
        self._seed(int(self._rng.integers(2**31)))  # unseeded games differ
        ale = self.ale
        self.actions = list(
            ale.getLegalActionSet() if options.full_action_space else ale.getMinimalActionSet()
        )
        self._noop = self.actions[0]  # NOOP heads both sets
        width, height = options.obs_size
        self._cols = area_weights(_SCREEN[1], width)
        self._rows = area_weights(_SCREEN[0], height)
        self._tall = np.zeros((height, _SCREEN[1] + self._cols[1].shape[1]), dtype=np.float32)
        self._raw = np.zeros((2, *_SCREEN), dtype=np.uint8)
        self.episode_return = 0.0
        self.episode_length = 0

    def _seed(self, seed: int) -> None:
        """Seeds the game's own randomness (sticky actions, the games' RNG): ALE reads its seed
        when a ROM loads."""
        self.ale.setInt("random_seed", seed % 2**31)
        self.ale.loadROM(self._rom)

    @property
    def variables(self) -> np.ndarray:
        """The :data:`VARIABLES` now, as float64."""
        return np.array([self.ale.lives(), self.ale.getEpisodeFrameNumber()], dtype=np.float64)

    def reset(self, seed: int | None, out: np.ndarray) -> None:
        """A new game (reseeded when ``seed`` is given), after up to ``noop_max`` no-op frames;
        ``out`` gets the first observation (every stacked frame the first one)."""
        if seed is not None:
            self._seed(seed)
            self._rng = np.random.default_rng(seed)
        self.ale.reset_game()
        for _ in range(int(self._rng.integers(self.options.noop_max + 1))):
            self.ale.act(self._noop)
            if self.ale.game_over():
                self.ale.reset_game()
        self.ale.getScreenGrayscale(self._raw[0])
        self._raw[1] = self._raw[0]
        self._frame(out[-1])
        out[:-1] = out[-1]
        self.episode_return = 0.0
        self.episode_length = 0

    def step(self, action: int, out: np.ndarray) -> tuple[float, bool, bool]:
        """Plays ``action`` for ``frame_skip`` raw frames; returns (reward, terminated,
        truncated) and writes the next observation to ``out``, which holds the last one."""
        ale, skip = self.ale, self.options.frame_skip
        chosen = self.actions[action]
        reward = 0
        for k in range(skip):
            reward += ale.act(chosen)
            if ale.game_over():
                ale.getScreenGrayscale(self._raw[1])
                self._raw[0] = self._raw[1]  # the last frame alone: the game stopped on it
                break
            if k >= skip - 2:
                ale.getScreenGrayscale(self._raw[k - skip + 2])
        if skip == 1:
            self._raw[0] = self._raw[1]
        out[:-1] = out[1:]
        self._frame(out[-1])
        terminated = ale.game_over(with_truncation=False)
        truncated = not terminated and ale.game_truncated()
        self.episode_return += reward
        self.episode_length += 1
        return float(reward), bool(terminated), bool(truncated)

    def _frame(self, into: np.ndarray) -> None:
        first = self._raw[0] if self.options.max_pool else self._raw[1]
        pool_and_resize(first, self._raw[1], *self._cols, *self._rows, self._tall, into)

    def render(self) -> np.ndarray:
        """The full-size RGB screen, ``(210, 160, 3)``."""
        return self.ale.getScreenRGB()

    def close(self) -> None:
        """Releases the emulator."""
        del self.ale
