"""The Atari options: the standard preprocessing (Machado et al. 2018, as ALE v5 and EnvPool have
it), each part switchable."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from sf_envs.errors import OptionError
from sf_envs.options import parse_size

__all__ = ["AtariOptions"]


@dataclass(frozen=True)
class AtariOptions:
    """How one Atari game is played and seen.

    Attributes:
        game: The ROM, as ale-py names it (``"pong"``, ``"breakout"``, ``"space_invaders"``).
        frame_skip: Raw frames one action is repeated for; the rewards of all of them are summed.
        obs_size: Observation size ``(width, height)`` after resizing the 160x210 screen.
        grayscale: Gray screens (the only kind supported: the standard preprocessing's).
        frame_stack: Most recent observations stacked along the channel axis.
        max_pool: Each observation is the pixel-wise max of the last two raw frames of its step
            (some sprites are drawn on alternate frames only).
        noop_max: An episode starts after a random number, 0 to ``noop_max``, of raw no-op frames
            (random starts even with deterministic play; 0 turns it off).
        sticky_actions: Probability that the game repeats the previous action on a raw frame
            instead of the chosen one (ALE v5: 0.25; 0 for deterministic games).
        max_frames: Raw frames after which an episode is truncated (ALE v5: 108,000, 30 minutes
            of play); 0 for no limit.
        full_action_space: All 18 actions instead of the game's minimal set.
    """

    game: str = "pong"
    frame_skip: int = 4
    obs_size: tuple[int, int] = (84, 84)
    grayscale: bool = True
    frame_stack: int = 4
    max_pool: bool = True
    noop_max: int = 30
    sticky_actions: float = 0.25
    max_frames: int = 108_000
    full_action_space: bool = False

    @classmethod
    def create(cls, **options: Any) -> AtariOptions:
        """Options from keyword arguments, ``obs_size`` also as ``"84x84"``.

        Raises:
            OptionError: For an unknown option or an invalid value, listing every problem.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise OptionError(
                f"unknown Atari option(s) {', '.join(unknown)}; valid: {', '.join(sorted(known))}"
            )
        if "obs_size" in options:
            options["obs_size"] = parse_size(options["obs_size"], "obs_size")
        created = cls(**options)
        created.validate()
        return created

    def validate(self) -> None:
        """Raises OptionError naming every invalid value and its fix."""
        errors = []
        for name in ("frame_skip", "frame_stack"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                errors.append(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("noop_max", "max_frames"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                errors.append(f"{name} must be an integer >= 0, got {value!r}")
        if not 0.0 <= self.sticky_actions <= 1.0:
            errors.append(f"sticky_actions is a probability in [0, 1], got {self.sticky_actions!r}")
        width, height = self.obs_size
        if min(width, height) < 1 or width > 160 or height > 210:
            errors.append(
                f"obs_size must be positive and at most the screen's 160x210, got "
                f"{width}x{height}; 84x84 is the standard"
            )
        if not self.grayscale:
            errors.append("grayscale=False: Atari observations here are gray; drop the option")
        if errors:
            raise OptionError("invalid Atari options:\n  - " + "\n  - ".join(errors))

    @property
    def obs_shape(self) -> tuple[int, int, int]:
        """``(frame_stack, height, width)``."""
        width, height = self.obs_size
        return (self.frame_stack, height, width)
