"""Observation and stepping options shared by every Doom env (single-agent, vector, matches)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import vizdoom

from sf_envs.actions import ACTION_SETS
from sf_envs.errors import OptionError
from sf_envs.preprocess import INTERPOLATIONS

__all__ = ["DoomOptions", "parse_size"]


def parse_size(value: str | tuple[int, int] | list[int], what: str) -> tuple[int, int]:
    """Parses ``"160x120"`` or ``(160, 120)`` into ``(width, height)``."""
    if isinstance(value, str):
        parts = value.lower().split("x")
        if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
            return int(parts[0]), int(parts[1])
    elif (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        return int(value[0]), int(value[1])
    raise OptionError(f"{what} must be WIDTHxHEIGHT, e.g. '160x120' or (160, 120); got {value!r}")


@dataclass(frozen=True)
class DoomOptions:
    """How a Doom game is stepped and what the agent sees.

    Attributes:
        frame_skip: Game tics per agent step; the action repeats and the last frame is returned.
        resolution: ViZDoom render size ``(width, height)``; must be one of ViZDoom's
            ``RES_WxH`` modes. Smaller renders are the cheapest speed-up there is.
        obs_size: Observation size ``(width, height)`` after resizing; at most the render size.
        grayscale: One luma channel instead of RGB.
        frame_stack: Number of most recent frames stacked along the channel axis.
        measurements: Observations become ``Dict(screen=..., measurements=...)`` with the
            scenario's game variables as float32, which helps agents that must ration health/ammo.
        interpolation: Resize filter, one of ``nearest``, ``bilinear``, ``area``. Nearest is
            the default because it is the cheapest (≈9 µs vs ≈32 µs for area at 160x120 ->
            128x72, see ``benchmarks/preprocess.py``) and is what Sample Factory trains Doom
            agents with; area keeps thin distant sprites visible when shrinking a lot.
        channels_last: Screens shaped ``(H, W, C)`` instead of ``(C, H, W)``, for libraries
            whose CNNs expect channels last (RLlib, Keras/JAX models). The same kernels write
            straight into that layout: no transpose, no extra copy.
        action_set: ``"discrete"`` (no-op, each button and the combos of the scenario or map)
            or ``"sample_factory"`` (Sample Factory's ``MultiDiscrete`` heads with discretised
            turning); see :mod:`sf_envs.actions`.
    """

    frame_skip: int = 4
    resolution: tuple[int, int] = (160, 120)
    obs_size: tuple[int, int] = (128, 72)
    grayscale: bool = False
    frame_stack: int = 1
    measurements: bool = False
    interpolation: str = "nearest"
    channels_last: bool = False
    action_set: str = "discrete"

    @classmethod
    def create(
        cls,
        *,
        frame_skip: int = 4,
        resolution: str | tuple[int, int] = (160, 120),
        obs_size: str | tuple[int, int] = (128, 72),
        grayscale: bool = False,
        frame_stack: int = 1,
        measurements: bool = False,
        interpolation: str = "nearest",
        channels_last: bool = False,
        action_set: str = "discrete",
    ) -> DoomOptions:
        """Builds validated options from user-facing values (sizes as strings or tuples).

        Raises:
            ValueError: listing every invalid option and how to fix it.
        """
        errors = []
        sizes = {}
        for key, value in (("resolution", resolution), ("obs_size", obs_size)):
            try:
                sizes[key] = parse_size(value, key)
            except ValueError as exc:
                errors.append(str(exc))
        options = cls(
            frame_skip=frame_skip,
            resolution=sizes.get("resolution", (160, 120)),
            obs_size=sizes.get("obs_size", (128, 72)),
            grayscale=grayscale,
            frame_stack=frame_stack,
            measurements=measurements,
            interpolation=interpolation,
            channels_last=channels_last,
            action_set=action_set,
        )
        errors += options.problems()
        if errors:
            raise OptionError("invalid Doom options:\n  - " + "\n  - ".join(errors))
        return options

    def problems(self) -> list[str]:
        """Every problem with these options, each naming the fix; empty when valid."""
        errors = []
        if not isinstance(self.frame_skip, int) or self.frame_skip < 1:
            errors.append(f"frame_skip must be an integer >= 1, got {self.frame_skip!r}")
        if not isinstance(self.frame_stack, int) or self.frame_stack < 1:
            errors.append(f"frame_stack must be an integer >= 1, got {self.frame_stack!r}")
        if not isinstance(self.channels_last, bool):
            errors.append(f"channels_last must be True or False, got {self.channels_last!r}")
        if self.action_set not in ACTION_SETS:
            errors.append(
                f"action_set must be one of {', '.join(ACTION_SETS)}, got {self.action_set!r}"
            )
        if self.interpolation not in INTERPOLATIONS:
            errors.append(
                f"interpolation must be one of {', '.join(INTERPOLATIONS)}, "
                f"got {self.interpolation!r}"
            )
        width, height = self.resolution
        if not hasattr(vizdoom.ScreenResolution, self.resolution_mode):
            known = sorted(
                (r[4:].lower() for r in dir(vizdoom.ScreenResolution) if r.startswith("RES_")),
                key=lambda s: tuple(int(p) for p in s.split("x")),
            )
            errors.append(
                f"resolution {width}x{height} is not a ViZDoom render mode; "
                f"use one of {', '.join(known)}"
            )
        obs_w, obs_h = self.obs_size
        if obs_w < 1 or obs_h < 1:
            errors.append(f"obs_size must be positive, got {obs_w}x{obs_h}")
        elif obs_w > width or obs_h > height:
            errors.append(
                f"obs_size {obs_w}x{obs_h} is larger than the render resolution {width}x{height}; "
                "lower obs_size or raise resolution"
            )
        return errors

    @property
    def resolution_mode(self) -> str:
        return f"RES_{self.resolution[0]}X{self.resolution[1]}"

    @property
    def channels(self) -> int:
        """Channels of one observation, frame stack included."""
        return (1 if self.grayscale else 3) * self.frame_stack

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """The screen observation shape: ``(C, H, W)``, or ``(H, W, C)`` with channels_last."""
        width, height = self.obs_size
        if self.channels_last:
            return (height, width, self.channels)
        return (self.channels, height, width)
