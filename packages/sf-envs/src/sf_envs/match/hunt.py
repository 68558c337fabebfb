"""Where a scripted player goes when no enemy is in view.

On an open map two players meet by themselves; on a big one (dwango5) a player that only runs
toward open space can spend a whole match without meeting a player that stands still. A
:class:`Hunter` uses the map's layout (:mod:`sf_envs.match.navigation`) the way a human who knows
the map would: it walks the shortest way to where it last saw its enemy, and otherwise to the
nearest places it has not looked at for the longest time, marking what its screen shows as it
goes. What it knows of the enemy still comes only from the screen.
"""

from __future__ import annotations

import numpy as np

from sf_envs.match.navigation import NavGrid

__all__ = ["Hunter"]

_NEVER = -(10**9)  # the tic a cell never seen was "seen" at
_STALE_TICS = 35 * 60  # a cell unseen this long is as worth searching as one never seen
_RUN_UNITS_PER_TIC = 16.0  # roughly how fast a player runs
_REPLAN_TICS = 105  # a plan is remade this often at least (the view has changed meanwhile)
_AHEAD = 3  # cells along the way the player steers toward, cutting corners a little


class Hunter:
    """Chooses where to walk on a map, and the next point on the way there.

    Args:
        grid: The map's grid.
    """

    def __init__(self, grid: NavGrid) -> None:
        self.grid = grid
        self.seen = np.full(grid.shape, _NEVER, dtype=np.int64)
        self._path: list[int] = []  # flat cell indices, the player's end first
        self._chasing: tuple[float, float] | None = None
        self._planned_at = _NEVER

    def reset(self) -> None:
        """Forgets what it has seen (a new match)."""
        self.seen[:] = _NEVER
        self.forget_way()

    def forget_way(self) -> None:
        """Drops the current way (the player respawned, or is stuck)."""
        self._path = []
        self._chasing = None

    def look(self, x: float, y: float, angle: float, tic: int) -> None:
        """Marks the cells on the screen of a player at ``(x, y)`` facing ``angle``."""
        self.grid.look(self.seen, x, y, angle, tic)

    def waypoint(
        self, x: float, y: float, tic: int, chase: tuple[float, float] | None = None
    ) -> tuple[float, float] | None:
        """The point to run toward next: on the way to ``chase`` (where the enemy was last
        seen) when given, else to the best place to search; None when there is nowhere to go."""
        grid = self.grid
        w = grid.shape[1]
        i, j = grid.cell_of(x, y)
        here = i * w + j
        if chase != self._chasing or not self._on_way(here) or self._arrived(here, tic):
            self._plan(i, j, tic, chase)
        if not self._path:
            return None
        at = self._path.index(here) if here in self._path[: _AHEAD + 2] else 0
        target = self._path[min(at + _AHEAD, len(self._path) - 1)]
        del self._path[:at]
        return grid.centre(target // w, target % w)

    def _on_way(self, here: int) -> bool:
        """Whether the player is on (or next to) its way."""
        if not self._path:
            return False
        w = self.grid.shape[1]
        hi, hj = divmod(here, w)
        return any(abs(c // w - hi) <= 1 and abs(c % w - hj) <= 1 for c in self._path[: _AHEAD + 2])

    def _arrived(self, here: int, tic: int) -> bool:
        """Whether the plan is done: goal reached, or (searching) the goal is now seen, or it
        is old."""
        if tic - self._planned_at >= _REPLAN_TICS or len(self._path) <= 1:
            return True
        goal = self._path[-1]  # the way is trimmed from the player's end only
        w = self.grid.shape[1]
        return self._chasing is None and self.seen[goal // w, goal % w] > self._planned_at

    def _plan(self, i: int, j: int, tic: int, chase: tuple[float, float] | None) -> None:
        grid = self.grid
        self._planned_at = tic
        self._chasing = chase
        path: list[int] = []
        if chase is not None:
            gi, gj = grid.cell_of(*chase)
            path = grid.way_to(i, j, gi * grid.shape[1] + gj)
        if not path:  # searching, or the enemy was last seen where no way leads (a ledge)
            path = grid.way_to_stalest(i, j, self.seen, tic, _STALE_TICS, _RUN_UNITS_PER_TIC)
        self._path = path
