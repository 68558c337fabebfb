"""The single-agent gymnasium env over :class:`~sf_envs.game.DoomCore`."""

from __future__ import annotations

from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sf_envs.errors import ClosedEnvError, OptionError
from sf_envs.game import DoomCore
from sf_envs.options import DoomOptions
from sf_envs.scenarios import Scenario, get_scenario

__all__ = ["DoomEnv", "observation_space"]


def observation_space(options: DoomOptions, measurement_count: int) -> spaces.Box | spaces.Dict:
    """The observation space an env with these options exposes."""
    screen = spaces.Box(0, 255, options.obs_shape, dtype=np.uint8)
    if not options.measurements:
        return screen
    low = np.full(measurement_count, -np.inf, dtype=np.float32)
    return spaces.Dict({"screen": screen, "measurements": spaces.Box(low, -low, dtype=np.float32)})


class DoomEnv(gym.Env):
    """A ViZDoom scenario as a ``gymnasium.Env`` with channels-first uint8 observations.

    Made with ``gym.make("sf/DoomBasic-v0", frame_skip=4, obs_size=(128, 72))``; see
    :class:`~sf_envs.options.DoomOptions` for every option. Reaching the scenario's time limit
    returns ``truncated=True, terminated=False``; the last observation is the real last frame.
    ``info`` holds the scenario's game variables (lower-case names) every step, and on the last
    step ``info["episode_summary"] = {"r": return, "l": length}``.

    Example:
        >>> import gymnasium as gym, sf_envs
        >>> env = gym.make("sf/DoomBasic-v0")
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape
        (3, 72, 128)
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 35}  # noqa: RUF012  (as gymnasium declares it)

    def __init__(
        self,
        scenario: Scenario | str,
        render_mode: str | None = None,
        workdir: str | None = None,
        **options: Any,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise OptionError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        scenario = get_scenario(scenario) if isinstance(scenario, str) else scenario
        try:
            self.options = DoomOptions.create(**options)
        except TypeError as exc:
            raise OptionError(f"{exc}; valid options: {', '.join(_OPTION_NAMES)}") from None
        self.render_mode = render_mode
        self._core: DoomCore | None = DoomCore(scenario, self.options, workdir)
        self.scenario = scenario
        self.action_space = self._core.action_space
        self.observation_space = observation_space(self.options, len(scenario.measurements))
        self._screen = np.zeros(self.options.obs_shape, dtype=np.uint8)
        self._meas = (
            np.zeros(len(scenario.measurements), dtype=np.float32)
            if self.options.measurements
            else None
        )
        self._names = tuple(v.lower() for v in self._core.variable_names)
        self._needs_reset = True

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        core = self._live_core()
        # Draw the game seed from np_random so unseeded resets after a seeded one stay
        # reproducible, as gymnasium's seeding contract asks.
        core.reset(int(self.np_random.integers(2**31)), self._screen, self._meas)
        self._needs_reset = False
        return self._observation(), self._info()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        core = self._live_core()
        if self._needs_reset:
            raise RuntimeError(
                "step() called before reset() or after the episode ended; call reset()"
            )
        reward, terminated, truncated = core.step(
            core.action_set.check(action, self.scenario.env_id), self._screen, self._meas
        )
        info = self._info()
        if terminated or truncated:
            self._needs_reset = True
            info["episode_summary"] = {"r": core.episode_return, "l": core.episode_length}
        return self._observation(), reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        screen = self._live_core().last_screen
        if screen is None:
            return None
        return np.ascontiguousarray(screen.transpose(1, 2, 0))

    def close(self) -> None:
        if self._core is not None:
            self._core.close()
            self._core = None
        super().close()

    def _live_core(self) -> DoomCore:
        if self._core is None:
            raise ClosedEnvError(
                f"{self.scenario.env_id} is closed; create a new env with gym.make()"
            )
        return self._core

    def _observation(self) -> Any:
        # Copies, so that observations a caller keeps are not overwritten by the next step.
        if self._meas is None:
            return self._screen.copy()
        return {"screen": self._screen.copy(), "measurements": self._meas.copy()}

    def _info(self) -> dict[str, Any]:
        variables = cast(DoomCore, self._core).variables  # open: called by reset and step
        return dict(zip(self._names, variables.tolist(), strict=True))


_OPTION_NAMES = (
    "frame_skip",
    "resolution",
    "obs_size",
    "grayscale",
    "frame_stack",
    "measurements",
    "interpolation",
    "render_mode",
)
