"""Action sets: how an agent's action becomes the values of the engine's buttons.

Two sets, chosen with the ``action_set`` option of every env:

- ``"discrete"`` (the default): ``Discrete(n)`` over no-op, each button of the scenario or map,
  and its multi-button combos (``Scenario.actions`` / ``MatchMap.actions``).
- ``"sample_factory"``: the action set of the Sample Factory work, a ``MultiDiscrete`` space of
  independent heads — move forward/back, strafe, attack, sprint, and for matches weapon selection
  (slots 1-7) and use — plus turning discretised over ViZDoom's ``TURN_LEFT_RIGHT_DELTA`` (11
  steps in [-10, 10] degrees per tic single-player, 21 in [-12.5, 12.5] in matches). Choice 0
  of every head is its no-op (turning: 0 degrees), so the zero action does nothing.

Both are a table of button values per choice: the buttons of an action are the sum of the rows
its choices pick (one row for ``Discrete``, one per head for ``MultiDiscrete``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium import spaces

from sf_envs.errors import OptionError

__all__ = [
    "ACTION_SETS",
    "ActionSet",
    "combo_action_set",
    "make_action_set",
    "sample_factory_set",
]

ACTION_SETS = ("discrete", "sample_factory")

TURN_BUTTON = "TURN_LEFT_RIGHT_DELTA"


class ActionSet:
    """The engine's buttons, the agent's action space, and the map between them.

    Args:
        heads: Every head's choices; one head makes a ``Discrete`` space, several a
            ``MultiDiscrete`` one. A choice is a tuple of ``(button, value)`` pairs (a combo
            presses several buttons); choice 0 of every head must be the no-op ``()``.
        names: One name per head (for listings).
        buttons: The engine's buttons in order; by default those the choices press, in the
            order they first appear.
    """

    def __init__(
        self,
        heads: Sequence[Sequence[tuple[tuple[str, float], ...]]],
        names: Sequence[str],
        buttons: Sequence[str] | None = None,
    ) -> None:
        pressed = dict.fromkeys(b for head in heads for choice in head for b, _ in choice)
        self.buttons: tuple[str, ...] = tuple(pressed if buttons is None else buttons)
        stray = set(pressed) - set(self.buttons)
        if stray or any(head[0] != () for head in heads):
            raise ValueError(f"heads {names}: choice 0 must be () and buttons {stray} be listed")
        self.head_names = tuple(names)
        self.nvec = tuple(len(head) for head in heads)
        column = {b: i for i, b in enumerate(self.buttons)}
        table = np.zeros((sum(self.nvec), len(self.buttons)), dtype=np.float64)
        row = 0
        for head in heads:
            for choice in head:
                for button, value in choice:
                    table[row, column[button]] += value
                row += 1
        self._offsets = np.cumsum((0, *self.nvec[:-1]))
        self._high = np.asarray(self.nvec)
        self._table = table
        # One head: the rows as ready lists (what DoomGame.make_action takes), no numpy per step.
        self._rows = table.tolist() if len(self.nvec) == 1 else None
        self.space: spaces.Discrete | spaces.MultiDiscrete = (
            spaces.Discrete(self.nvec[0])
            if len(self.nvec) == 1
            else spaces.MultiDiscrete(np.array(self.nvec, dtype=np.int64))
        )

    def button_values(self, action: int | np.ndarray) -> list[float]:
        """The value of every button of :attr:`buttons` for ``action`` (checked beforehand)."""
        if self._rows is not None:
            return self._rows[int(action)]
        return self._table[self._offsets + np.asarray(action)].sum(axis=0).tolist()

    def check(self, action: object, who: str) -> int | np.ndarray:
        """``action`` as an int (Discrete) or int64 array (MultiDiscrete) of this space.

        Raises:
            ValueError: Naming ``who`` and the space, if ``action`` is not in it.
        """
        # The common case, checked without building arrays (every step checks every action).
        if (
            self._rows is not None
            and isinstance(action, (int, np.integer))
            and not isinstance(action, bool)
            and 0 <= action < self.nvec[0]
        ):
            return int(action)
        array = np.asarray(action)
        if (
            array.shape == self.space.shape
            and array.dtype.kind in "iu"
            and (array >= 0).all()
            and (array < self._high).all()
        ):
            return int(array) if array.shape == () else array.astype(np.int64)
        hint = (
            f"an integer in [0, {self.nvec[0]})"
            if len(self.nvec) == 1
            else f"{len(self.nvec)} integers, head k in [0, nvec[k]) ({', '.join(self.head_names)})"
        )
        raise ValueError(f"action {action!r} of {who} is not in {self.space}: pass {hint}")


def combo_action_set(buttons: Sequence[str], actions: Sequence[Sequence[str]]) -> ActionSet:
    """The ``"discrete"`` set: one choice per entry of ``actions`` (each presses its buttons),
    over the engine buttons ``buttons`` in that order."""
    return ActionSet([[tuple((b, 1.0) for b in a) for a in actions]], ["action"], buttons)


def _binary(*buttons: str) -> tuple[tuple[tuple[str, float], ...], ...]:
    return ((), *(((b, 1.0),) for b in buttons))


def _turn(steps: int, max_degrees: float) -> tuple[tuple[tuple[str, float], ...], ...]:
    """``steps`` turns evenly spaced in [-max, max] degrees per tic, as Sample Factory's
    discretised turning; the middle one (0 degrees) comes first, as every head's no-op."""
    values = np.linspace(-max_degrees, max_degrees, steps)
    return ((), *(((TURN_BUTTON, float(v)),) for v in values if v != 0))


def sample_factory_set(match: bool) -> ActionSet:
    """Sample Factory's heads: its battle set single-player, its full duel/deathmatch set
    (weapon slots 1-7 and use) in matches."""
    heads = [
        ("move", _binary("MOVE_FORWARD", "MOVE_BACKWARD")),
        ("strafe", _binary("MOVE_RIGHT", "MOVE_LEFT")),
    ]
    if match:
        heads.append(("weapon", _binary(*(f"SELECT_WEAPON{i}" for i in range(1, 8)))))
    heads += [("attack", _binary("ATTACK")), ("sprint", _binary("SPEED"))]
    if match:
        heads.append(("use", _binary("USE")))
    heads.append(("turn", _turn(21, 12.5) if match else _turn(11, 10.0)))
    return ActionSet([choices for _, choices in heads], [name for name, _ in heads])


def make_action_set(
    name: str, buttons: Sequence[str], actions: Sequence[Sequence[str]], match: bool
) -> ActionSet:
    """The action set called ``name`` for a scenario or map with these buttons and actions."""
    if name == "discrete":
        return combo_action_set(buttons, actions)
    if name == "sample_factory":
        return sample_factory_set(match)
    raise OptionError(f"action_set must be one of {', '.join(ACTION_SETS)}, got {name!r}")
