"""Map knowledge for scripted players: where a player can walk and what it can see, on a grid.

Someone who plays a deathmatch map knows its layout; a scripted player that hunts is given the
same knowledge and nothing more: the map's walls, floors and ceilings, read once from the engine,
turned into a grid of square cells. It tells the player how to walk from one place to another
(around walls, up steps no higher than a player can climb) and which cells it has just looked
at, so that it can search the places it has not seen for the longest time. It never tells where
the enemy is: that the player learns only from its screen.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import tempfile
import zipfile
from dataclasses import dataclass

import numpy as np
import vizdoom

from sf_envs.cache import user_cache
from sf_envs.kernel import numba_kernel
from sf_envs.match.maps import MatchMap

__all__ = ["CELL", "Geometry", "NavGrid", "map_geometry", "nav_grid"]

logger = logging.getLogger(__name__)

CELL = 32.0  # map units per grid cell
_STEP_UP = 24.0  # the highest step a player climbs
_HEIGHT = 56.0  # a player's height: lower openings stop it
_CLEARANCE = 14.0  # a cell whose centre is this close to a wall is not walked through
_FOV = 90.0  # degrees a player's screen spans
_RAYS = 24  # rays cast across the screen to find what it sees
# Grid steps, counterclockwise from east; moves 0-7 go to these neighbours.
_STEPS = np.array([(0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1), (-1, 0), (-1, 1)])
# The move to a neighbour, by its row and column offset plus one (-1: the cell itself).
_MOVE_OF = np.full((3, 3), -1)
_MOVE_OF[_STEPS[:, 0] + 1, _STEPS[:, 1] + 1] = np.arange(8)
_NO_SEEN = np.zeros((1, 1), dtype=np.int64)  # what a way to a given goal reads of ``seen``


@dataclass(frozen=True)
class Geometry:
    """A map's walls and floors, as the engine reports them.

    Attributes:
        floors, ceilings: Per sector, its floor and ceiling height.
        lines: One row per side of a line: ``x1, y1, x2, y2, blocking, sector``. A line between
            two sectors has a row in each; a wall (one-sided) only one.
    """

    floors: np.ndarray
    ceilings: np.ndarray
    lines: np.ndarray


def _read_geometry(match_map: MatchMap) -> Geometry:
    """Starts the map in an engine of its own, once, to read its sectors."""
    with tempfile.TemporaryDirectory(prefix="sf_geometry_") as folder:
        game = vizdoom.DoomGame()
        game.set_doom_game_path(match_map.iwad_path)
        if match_map.wad_path is not None:
            game.set_doom_scenario_path(match_map.wad_path)
        game.set_doom_map(match_map.doom_map)
        game.set_doom_config_path(os.path.join(folder, "_vizdoom.ini"))
        game.set_window_visible(False)
        game.set_screen_resolution(vizdoom.ScreenResolution.RES_160X120)
        game.set_sectors_info_enabled(True)
        game.add_game_args("-deathmatch")
        try:
            game.init()
            sectors = game.get_state().sectors
        finally:
            game.close()
    rows = [
        (line.x1, line.y1, line.x2, line.y2, float(line.is_blocking), float(s))
        for s, sector in enumerate(sectors)
        for line in sector.lines
    ]
    return Geometry(
        floors=np.array([s.floor_height for s in sectors], dtype=np.float64),
        ceilings=np.array([s.ceiling_height for s in sectors], dtype=np.float64),
        lines=np.array(rows, dtype=np.float64).reshape(-1, 6),
    )


def _cache_path(match_map: MatchMap) -> str:
    """Where a map's geometry is kept: named by the map file's content, so an edited wad is
    read again."""
    digest = hashlib.sha256()
    for path in (match_map.iwad_path, match_map.wad_path):
        if path is not None:
            with open(path, "rb") as f:
                digest.update(f.read())
    digest.update(match_map.doom_map.encode())
    return str(user_cache("maps") / f"{match_map.name}-{digest.hexdigest()[:16]}.npz")


def map_geometry(match_map: MatchMap) -> Geometry:
    """The map's geometry, from the user cache, read from the engine on first use (and again
    when the cached file cannot be read)."""
    path = _cache_path(match_map)
    if os.path.exists(path):
        try:
            with np.load(path) as saved:
                return Geometry(saved["floors"], saved["ceilings"], saved["lines"])
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            logger.warning("unreadable map cache %s (%s); reading the map again", path, exc)
    geometry = _read_geometry(match_map)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".npz.partial")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, floors=geometry.floors, ceilings=geometry.ceilings, lines=geometry.lines)
        os.replace(partial, path)  # workers reading it meanwhile see the old file or none
    except BaseException:
        os.unlink(partial)
        raise
    return geometry


def _crosses(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, lines: np.ndarray
) -> np.ndarray:
    """Per segment ``a -> b`` (arrays of one shape), whether it crosses any of ``lines``."""
    hit = np.zeros(ax.shape, dtype=bool)
    for x1, y1, x2, y2 in lines[:, :4]:
        d1 = (x2 - x1) * (ay - y1) - (y2 - y1) * (ax - x1)
        d2 = (x2 - x1) * (by - y1) - (y2 - y1) * (bx - x1)
        d3 = (bx - ax) * (y1 - ay) - (by - ay) * (x1 - ax)
        d4 = (bx - ax) * (y2 - ay) - (by - ay) * (x2 - ax)
        hit |= (d1 * d2 < 0) & (d3 * d4 < 0)
    return hit


def _distance_to(px: np.ndarray, py: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """Per point, its distance to the nearest of ``lines``."""
    nearest = np.full(px.shape, np.inf)
    for x1, y1, x2, y2 in lines[:, :4]:
        dx, dy = x2 - x1, y2 - y1
        length2 = max(dx * dx + dy * dy, 1e-9)
        t = np.clip(((px - x1) * dx + (py - y1) * dy) / length2, 0.0, 1.0)
        nearest = np.minimum(nearest, np.hypot(px - x1 - t * dx, py - y1 - t * dy))
    return nearest


class NavGrid:
    """A map as a grid: which cell is inside which sector, where a player may step, and where
    its sight passes.

    Args:
        geometry: The map's walls and floors.
        cell: The cells' size in map units.
    """

    def __init__(self, geometry: Geometry, cell: float = CELL) -> None:
        lines = geometry.lines
        self.cell = cell
        self.x0 = lines[:, [0, 2]].min() - cell
        self.y0 = lines[:, [1, 3]].min() - cell
        width = int((lines[:, [0, 2]].max() + cell - self.x0) // cell) + 1
        height = int((lines[:, [1, 3]].max() + cell - self.y0) // cell) + 1
        cx = self.x0 + (np.arange(width) + 0.5) * cell
        cy = self.y0 + (np.arange(height) + 0.5) * cell
        px, py = np.meshgrid(cx, cy)  # (height, width): rows go north
        sector = np.full(px.shape, -1)
        for s in range(len(geometry.floors)):
            own = lines[lines[:, 5] == s]
            inside = np.zeros(px.shape, dtype=bool)
            for x1, y1, x2, y2 in own[:, :4]:
                if y1 == y2:
                    continue
                spans = (y1 > py) != (y2 > py)
                inside ^= spans & (px < x1 + (py - y1) * (x2 - x1) / (y2 - y1))
            sector[inside] = s
        inside = sector >= 0
        # Outside every sector: a floor no one climbs to and no room under the ceiling.
        floor = np.where(inside, geometry.floors[sector], 1e9)
        ceiling = np.where(inside, geometry.ceilings[sector], -1e9)
        # A wall is one-sided: its line has no row for a sector on the other side.
        ends = [tuple(sorted(((x1, y1), (x2, y2)))) for x1, y1, x2, y2 in lines[:, :4]]
        sides: dict[tuple, int] = {}
        for e in ends:
            sides[e] = sides.get(e, 0) + 1
        wall = np.array([sides[e] == 1 for e in ends], dtype=bool)
        blocking = lines[(lines[:, 4] > 0) | wall]
        roomy = inside & (ceiling - floor >= _HEIGHT)
        walkable = roomy & (_distance_to(px, py, blocking) >= _CLEARANCE)
        moves = np.zeros((*px.shape, 8), dtype=np.bool_)
        sight = np.zeros((*px.shape, 8), dtype=np.bool_)
        for k, (di, dj) in enumerate(_STEPS):
            to = (
                np.clip(np.arange(height)[:, None] + di, 0, height - 1),
                np.clip(np.arange(width)[None, :] + dj, 0, width - 1),
            )
            bx, by = px + dj * cell, py + di * cell
            open_line = ~_crosses(px, py, bx, by, lines[wall])
            sight[..., k] = inside & inside[to] & (ceiling[to] > floor[to]) & open_line
            moves[..., k] = (
                walkable
                & walkable[to]
                & (floor[to] - floor <= _STEP_UP)
                & (np.minimum(ceiling, ceiling[to]) - np.maximum(floor, floor[to]) >= _HEIGHT)
                & ~_crosses(px, py, bx, by, blocking)
            )
        edge = np.zeros(px.shape, dtype=bool)
        edge[[0, -1], :] = edge[:, [0, -1]] = True
        moves[edge] = False
        sight[edge] = False
        self.walkable = walkable
        self.sight = sight
        self._flat_moves = moves.reshape(-1, 8)
        self._offsets = _STEPS[:, 0] * width + _STEPS[:, 1]  # flat index change per move

    @property
    def shape(self) -> tuple[int, int]:
        return self.walkable.shape

    def cell_of(self, x: float, y: float) -> tuple[int, int]:
        """The (row, column) of the cell holding map point ``(x, y)``, clipped to the grid."""
        h, w = self.shape
        i = min(max(int((y - self.y0) // self.cell), 0), h - 1)
        j = min(max(int((x - self.x0) // self.cell), 0), w - 1)
        return i, j

    def centre(self, i: int, j: int) -> tuple[float, float]:
        """The map point at the centre of cell ``(i, j)``."""
        return self.x0 + (j + 0.5) * self.cell, self.y0 + (i + 0.5) * self.cell

    def distances(self, i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Steps from cell ``(i, j)`` (or the nearest walkable cell, for a player pressed
        against a wall) to every cell (-1: unreachable), and each cell's previous cell on a
        shortest way there (as a flat index; -1 for the start)."""
        steps, previous = _walk(self._flat_moves, self._start(i, j), self._offsets, -1)
        return steps.reshape(self.shape), previous

    def way_to(self, i: int, j: int, goal: int) -> list[int]:
        """The cells (flat indices) of a shortest way from cell ``(i, j)`` (as in
        :meth:`distances`) to cell ``goal``, both ends included; empty when it cannot be
        reached."""
        return _way(
            self._flat_moves,
            self._start(i, j),
            self._offsets,
            goal,
            self.walkable,
            _NO_SEEN,
            0,
            0,
            0.0,
        ).tolist()

    def way_to_stalest(
        self, i: int, j: int, seen: np.ndarray, tic: int, cap: int, speed: float
    ) -> list[int]:
        """The cells of a shortest way from cell ``(i, j)`` to the walkable cell more than one
        step away that is most worth searching: unseen longest (``seen`` holds the tic each cell
        was last seen; up to ``cap`` tics count), less the tics it takes to get there at
        ``speed`` map units per tic; the first such cell in row order on a tie. Empty when
        there is none."""
        return _way(
            self._flat_moves,
            self._start(i, j),
            self._offsets,
            -1,
            self.walkable,
            seen,
            tic,
            cap,
            self.cell / speed,
        ).tolist()

    def _start(self, i: int, j: int) -> int:
        """Cell ``(i, j)`` as a flat index, or the nearest walkable cell within two."""
        if not self.walkable[i, j]:
            near = self.walkable[max(i - 2, 0) : i + 3, max(j - 2, 0) : j + 3]
            found = np.argwhere(near)
            if len(found):
                di, dj = found[np.argmin(np.abs(found - 2).sum(axis=1))]
                i, j = max(i - 2, 0) + int(di), max(j - 2, 0) + int(dj)
        return i * self.shape[1] + j

    def look(self, seen: np.ndarray, x: float, y: float, angle: float, tic: int) -> None:
        """Marks in ``seen`` (per cell, the tic it was last seen) the cells on screen of a player
        at ``(x, y)`` facing ``angle`` degrees."""
        _look(
            self.sight, seen, x, y, angle, tic, self.x0, self.y0, self.cell, _MOVE_OF, _FOV, _RAYS
        )


@functools.lru_cache(maxsize=8)
def nav_grid(match_map: MatchMap) -> NavGrid:
    """The map's grid, built once per process."""
    return NavGrid(map_geometry(match_map))


@numba_kernel
def _walk(moves, start, offsets, goal):
    """Breadth-first from ``start``: steps to each cell (-1: not reached) and the cell before
    it; stops once ``goal`` is reached (``goal`` < 0: every cell)."""
    cells = moves.shape[0]
    dist = np.full(cells, -1, dtype=np.int32)
    previous = np.full(cells, -1, dtype=np.int32)
    queue = np.empty(cells, dtype=np.int32)
    dist[start] = 0
    queue[0] = start
    head, tail = 0, 1
    while head < tail and (goal < 0 or dist[goal] < 0):
        c = queue[head]
        head += 1
        for k in range(8):
            if moves[c, k]:
                n = c + offsets[k]
                if dist[n] < 0:
                    dist[n] = dist[c] + 1
                    previous[n] = c
                    queue[tail] = n
                    tail += 1
    return dist, previous


@numba_kernel
def _way(moves, start, offsets, goal, walkable, seen, tic, cap, tics_per_step):
    """A shortest way from ``start`` to ``goal``, or (``goal`` < 0) to the stalest cell."""
    cells = moves.shape[0]
    dist, previous = _walk(moves, start, offsets, goal)
    if goal < 0:
        flat_walkable = walkable.ravel()
        flat_seen = seen.ravel()
        best_score = -np.inf
        for c in range(cells):
            if dist[c] > 1 and flat_walkable[c]:
                score = min(tic - flat_seen[c], cap) - dist[c] * tics_per_step
                if score > best_score:
                    goal, best_score = c, score
    if goal < 0 or dist[goal] < 0:
        return np.empty(0, dtype=np.int32)
    way = np.empty(dist[goal] + 1, dtype=np.int32)
    c = goal
    for k in range(dist[goal], -1, -1):
        way[k] = c
        c = previous[c]
    return way


@numba_kernel
def _look(sight, seen, x, y, angle, tic, x0, y0, cell, move_of, fov, rays):
    h, w = sight.shape[0], sight.shape[1]
    i0 = min(max(int((y - y0) // cell), 0), h - 1)
    j0 = min(max(int((x - x0) // cell), 0), w - 1)
    seen[i0, j0] = tic
    for r in range(rays):
        a = np.radians(angle + fov / 2 - fov * (r + 0.5) / rays)
        dx, dy = np.cos(a), np.sin(a)
        i, j = i0, j0
        fx, fy = (x - x0) / cell, (y - y0) / cell  # position in cells
        for _ in range(96):
            fx += dx * 0.5
            fy += dy * 0.5
            ni, nj = int(fy), int(fx)
            if ni == i and nj == j:
                continue
            di, dj = ni - i, nj - j
            if abs(di) > 1 or abs(dj) > 1:
                break
            k = move_of[di + 1, dj + 1]
            if not sight[i, j, k]:
                break
            i, j = ni, nj
            seen[i, j] = tic
