"""One ViZDoom game plus preprocessing, writing observations straight into caller buffers.

:class:`DoomCore` is the engine-facing heart shared by the gymnasium env and the vector engine's
workers: the caller owns the output buffers (for workers, shared memory), so stepping allocates
nothing and copies each frame once, from ViZDoom's screen buffer through the numba kernels.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import cast

import numpy as np
import vizdoom
from gymnasium import spaces

from sf_envs.actions import ActionSet, make_action_set
from sf_envs.lifecycle import watchdog
from sf_envs.options import DoomOptions
from sf_envs.preprocess import FrameStack, Resizer, rgb_to_gray, rgb_to_gray_unchecked
from sf_envs.scenarios import COMMON_GAME_VARIABLES, Scenario, get_scenario

__all__ = ["DoomCore", "FramePipeline", "create_game", "scenario_action_set"]


def scenario_action_set(scenario: Scenario, options: DoomOptions) -> ActionSet:
    """The action set ``options`` asks for, over ``scenario``'s buttons and combos."""
    return make_action_set(options.action_set, scenario.buttons, scenario.actions, match=False)


def _release(game: list[vizdoom.DoomGame], own_workdir: str | None) -> None:
    """Closes the engine and removes the private folder: at :meth:`DoomCore.close`, or at
    garbage collection or interpreter exit for a core never closed."""
    if game:
        game.pop().close()
    if own_workdir is not None:
        shutil.rmtree(own_workdir, ignore_errors=True)
        watchdog.release(own_workdir)


def create_game(
    scenario: Scenario, options: DoomOptions, workdir: str, variables: tuple[str, ...]
) -> vizdoom.DoomGame:
    """Configures (but does not start) a headless DoomGame for a single-player scenario."""
    game = vizdoom.DoomGame()
    game.load_config(scenario.config_path)
    game.set_doom_config_path(os.path.join(workdir, "_vizdoom.ini"))
    game.set_window_visible(False)
    game.set_sound_enabled(False)
    game.set_mode(vizdoom.Mode.PLAYER)
    game.set_screen_format(vizdoom.ScreenFormat.CRCGCB)
    game.set_screen_resolution(getattr(vizdoom.ScreenResolution, options.resolution_mode))
    buttons = scenario_action_set(scenario, options).buttons
    game.set_available_buttons([getattr(vizdoom.Button, b) for b in buttons])
    game.set_available_game_variables([getattr(vizdoom.GameVariable, v) for v in variables])
    game.set_episode_timeout(scenario.episode_timeout)
    return game


class FramePipeline:
    """Resize, optional grayscale and optional frame stack from a ViZDoom screen into a buffer.

    Shared by every core that turns ViZDoom screens into observations (single-player games and
    each player of a match), so they all produce identical observations for identical options.
    The scratch frames are allocated once here; a call allocates nothing.
    """

    def __init__(self, options: DoomOptions) -> None:
        width, height = options.resolution
        out_w, out_h = options.obs_size
        self._resize = Resizer((height, width), (out_h, out_w), options.interpolation)
        frame_channels = 1 if options.grayscale else 3
        self._frame = np.empty((frame_channels, out_h, out_w), dtype=np.uint8)
        self._rgb = np.empty((3, out_h, out_w), dtype=np.uint8) if options.grayscale else None
        self._stack = (
            FrameStack(options.frame_stack, self._frame.shape) if options.frame_stack > 1 else None
        )
        self._channels_last = options.channels_last

    def __call__(self, screen: np.ndarray, obs_out: np.ndarray, first: bool) -> None:
        """Writes the observation for ``screen`` into ``obs_out``; ``first`` restarts the stack.

        A channels-last ``obs_out`` is written through its ``(C, H, W)`` view by the same kernels.
        """
        if self._channels_last:
            obs_out = obs_out.transpose(2, 0, 1)
        frame = self._frame if self._stack is not None else obs_out
        resized = self._rgb if self._rgb is not None else frame
        if first:  # validates the caller's buffers once per episode; steps skip the checks
            self._resize(screen, resized)
            if self._rgb is not None:
                rgb_to_gray(self._rgb, frame)
        else:
            self._resize.resize_unchecked(screen, resized)
            if self._rgb is not None:
                rgb_to_gray_unchecked(self._rgb, frame)
        if self._stack is not None:
            (self._stack.reset if first else self._stack.push)(frame, obs_out)


class DoomCore:
    """A single-player Doom game stepped with frame skip, observations written into buffers.

    Args:
        scenario: A :class:`~sf_envs.scenarios.Scenario` or its name.
        options: Frame skip, sizes and the rest; validated by the caller.
        workdir: Folder for ViZDoom's ini file; a private temporary folder when None.

    The output buffers passed to :meth:`reset` and :meth:`step` must have shape
    :attr:`obs_shape` (uint8) and, with measurements, ``(len(measurement_names),)`` float32.
    """

    def __init__(
        self, scenario: Scenario | str, options: DoomOptions, workdir: str | None = None
    ) -> None:
        self.scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        self.options = options
        self.workdir = tempfile.mkdtemp(prefix="sf_vizdoom_") if workdir is None else workdir
        own_workdir = self.workdir if workdir is None else None
        if own_workdir is not None:
            watchdog.guard(own_workdir)  # the engine runs from it: both go when we do
        self._game: list[vizdoom.DoomGame] = []  # the finalizer's handle on the game
        self._finalizer = weakref.finalize(self, _release, self._game, own_workdir)
        self.variable_names: tuple[str, ...] = tuple(
            dict.fromkeys(COMMON_GAME_VARIABLES + self.scenario.measurements)
        )
        self.measurement_index = np.array(
            [self.variable_names.index(m) for m in self.scenario.measurements], dtype=np.intp
        )
        # The engine until close(); the methods before then cast it to DoomGame.
        self.game: vizdoom.DoomGame | None = create_game(
            self.scenario, options, self.workdir, self.variable_names
        )
        self._game.append(self.game)
        self.game.init()
        watchdog.note_engines()
        self.action_set = scenario_action_set(self.scenario, options)
        self._frames = FramePipeline(options)
        #: Latest values of :attr:`variable_names`, refreshed every step (float64, engine order).
        self.variables = np.zeros(len(self.variable_names), dtype=np.float64)
        self._variable_enums = [getattr(vizdoom.GameVariable, v) for v in self.variable_names]
        self.last_screen: np.ndarray | None = None
        self.episode_return = 0.0
        self.episode_length = 0

    @property
    def action_space(self) -> spaces.Discrete | spaces.MultiDiscrete:
        return self.action_set.space

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        return self.options.obs_shape

    @property
    def measurement_names(self) -> tuple[str, ...]:
        return self.scenario.measurements

    def reset(self, seed: int | None, obs_out: np.ndarray, meas_out: np.ndarray | None) -> None:
        """Starts a new episode (seeded when ``seed`` is given) and writes its first observation."""
        game = cast(vizdoom.DoomGame, self.game)
        if seed is not None:
            game.set_seed(int(seed) % (2**31))
        game.new_episode()
        self.episode_return = 0.0
        self.episode_length = 0
        self._observe(obs_out, meas_out, first=True)

    def step(
        self, action: int | np.ndarray, obs_out: np.ndarray, meas_out: np.ndarray | None
    ) -> tuple[float, bool, bool]:
        """Repeats ``action`` for ``frame_skip`` tics; returns ``(reward, terminated, truncated)``.

        At the end of an episode ViZDoom has no state any more: ``obs_out`` then keeps the last
        real frame (never zeros), while the variables are read one by one from the game so the
        final step reports the final tallies (the kill that ended the episode, say).
        """
        game = cast(vizdoom.DoomGame, self.game)
        buttons = self.action_set.button_values(action)
        reward = game.make_action(buttons, self.options.frame_skip)
        self.episode_return += reward
        self.episode_length += 1
        if game.is_episode_finished():
            for i, variable in enumerate(self._variable_enums):
                self.variables[i] = game.get_game_variable(variable)
            truncated = game.is_episode_timeout_reached()
            return reward, not truncated, truncated
        self._observe(obs_out, meas_out, first=False)
        return reward, False, False

    def _observe(self, obs_out: np.ndarray, meas_out: np.ndarray | None, first: bool) -> None:
        state = cast(vizdoom.DoomGame, self.game).get_state()
        screen = state.screen_buffer
        self.last_screen = screen
        self.variables[:] = state.game_variables
        if meas_out is not None:
            meas_out[:] = self.variables[self.measurement_index]
        self._frames(screen, obs_out, first)

    def close(self) -> None:
        """Stops the engine and removes the private working folder. Idempotent."""
        self.game = None
        self._finalizer()
