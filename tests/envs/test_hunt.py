"""Map knowledge and hunting: the grid of a made-up map, ways around walls, what a player sees,
and a hunting scripted player finding a still agent on a big map."""

from __future__ import annotations

import itertools
import logging
import math

import numpy as np
import pytest

from sf_envs.match import MatchConfig, MatchCore
from sf_envs.match.hunt import Hunter
from sf_envs.match.maps import get_map
from sf_envs.match.navigation import Geometry, NavGrid, map_geometry
from sf_envs.match.player import STAT_VARIABLES
from sf_envs.match.scripted import SCRIPTED_LEVELS, ScriptedBrain, View, scripted_ladder


def sectors(polygons: list[list[tuple[float, float]]], floors: list[float]) -> Geometry:
    """Geometry of sectors given as polygons; an edge that no other sector shares is a wall."""
    edges = [
        (a, b, s)
        for s, poly in enumerate(polygons)
        for a, b in itertools.pairwise([*poly, poly[0]])
    ]
    count: dict[frozenset, int] = {}
    for a, b, _ in edges:
        count[frozenset((a, b))] = count.get(frozenset((a, b)), 0) + 1
    rows = [(*a, *b, float(count[frozenset((a, b))] == 1), float(s)) for a, b, s in edges]
    return Geometry(np.array(floors), np.array(floors) + 128.0, np.array(rows))


def two_rooms(step: float = 0.0) -> Geometry:
    """Two 240x512 rooms (west, east) joined by a 64-unit corridor at y 200-312; the east
    room's floor is ``step`` higher than the rest."""
    west = [(0, 0), (240, 0), (240, 200), (240, 312), (240, 512), (0, 512)]
    corridor = [(240, 200), (304, 200), (304, 312), (240, 312)]
    east = [(304, 0), (544, 0), (544, 512), (304, 512), (304, 312), (304, 200)]
    return sectors([west, corridor, east], [0.0, 0.0, step])


def way(grid: NavGrid, start: tuple[float, float], goal: tuple[float, float]) -> list[tuple]:
    """The map points of the shortest way from ``start`` to ``goal`` (empty: none)."""
    steps, previous = grid.distances(*grid.cell_of(*start))
    gi, gj = grid.cell_of(*goal)
    if steps[gi, gj] < 0:
        return []
    w = grid.shape[1]
    cells = [gi * w + gj]
    while previous[cells[-1]] >= 0:
        cells.append(int(previous[cells[-1]]))
    return [grid.centre(c // w, c % w) for c in reversed(cells)]


def test_the_way_between_two_rooms_goes_through_the_corridor() -> None:
    grid = NavGrid(two_rooms())
    points = way(grid, (64.0, 64.0), (480.0, 64.0))
    crossing = [(a, b) for a, b in itertools.pairwise(points) if (a[0] - 256) * (b[0] - 256) < 0]
    assert len(crossing) == 1
    (a, b) = crossing[0]
    assert 200.0 < (a[1] + b[1]) / 2 < 312.0  # through the corridor, not the wall
    # Longer than the straight line (416 units): it had to go round.
    length = sum(math.dist(a, b) for a, b in itertools.pairwise(points))
    assert length > 416.0 + 100.0


def test_a_step_too_high_is_climbed_down_but_not_up() -> None:
    grid = NavGrid(two_rooms(step=40.0))
    assert way(grid, (64.0, 64.0), (480.0, 64.0)) == []  # 40 units up: no way
    assert way(grid, (480.0, 64.0), (64.0, 64.0))  # down is fine
    low = NavGrid(two_rooms(step=16.0))
    assert way(low, (64.0, 64.0), (480.0, 64.0))


def test_a_player_sees_what_is_in_front_of_it_and_not_through_walls() -> None:
    grid = NavGrid(two_rooms())
    seen = np.full(grid.shape, -1, dtype=np.int64)
    grid.look(seen, 32.0, 256.0, 0.0, tic=7)  # west room, facing the corridor
    assert seen[grid.cell_of(200.0, 256.0)] == 7  # ahead
    assert seen[grid.cell_of(400.0, 256.0)] == 7  # through the corridor
    assert seen[grid.cell_of(400.0, 60.0)] == -1  # east room, behind the wall
    assert seen[grid.cell_of(16.0, 480.0)] == -1  # behind its back


def test_a_hunter_searches_unseen_places_and_chases_around_walls() -> None:
    grid = NavGrid(two_rooms())
    hunter = Hunter(grid)
    # Having looked all over the west room, it heads for the corridor to the east room.
    for angle in range(0, 360, 30):
        hunter.look(128.0, 256.0, float(angle), tic=1)
    point = hunter.waypoint(128.0, 256.0, tic=2)
    assert point is not None and point[0] > 128.0 and 160.0 < point[1] < 352.0
    # Chasing an enemy last seen in the east room's corner from the west room's corner: the
    # first steps go north, toward the corridor, not east into the wall.
    hunter.forget_way()
    point = hunter.waypoint(200.0, 48.0, tic=3, chase=(480.0, 48.0))
    assert point is not None and point[1] > 48.0 + 2 * grid.cell


def test_a_hunter_chasing_toward_a_ledge_it_cannot_climb_searches_instead() -> None:
    grid = NavGrid(two_rooms(step=40.0))  # the east room is out of reach from the west
    hunter = Hunter(grid)
    point = hunter.waypoint(128.0, 256.0, tic=1, chase=(480.0, 64.0))
    assert point is not None and point[0] < 240.0  # a place to search in its own room


def test_a_hunting_brain_walks_its_way_and_turns_around_when_hit_from_out_of_view() -> None:
    level = SCRIPTED_LEVELS[3]
    brain = ScriptedBrain(level, frame_skip=4, seed=0, hunter=Hunter(NavGrid(two_rooms())))

    def seen(tic: int, health: float = 100.0) -> View:
        return View(tic, 128.0, 256.0, 0.0, health, False, [], np.zeros(32))

    forward, _, _, fire = brain.decide(seen(0))
    assert forward > 0 and fire == 0.0
    hit = brain.decide(seen(4, health=80.0))
    assert hit[0] == 0.0 and abs(hit[2]) == level.turn_speed  # spins in place
    assert brain.decide(seen(8, health=80.0))[2] == hit[2]  # and keeps spinning


def test_what_a_hunter_did_not_look_at_is_not_searched_and_a_hit_waits_for_a_look() -> None:
    level = SCRIPTED_LEVELS[3]
    hunter = Hunter(NavGrid(two_rooms()))
    brain = ScriptedBrain(level, frame_skip=4, seed=0, hunter=hunter)

    def view(tic: int, health: float, looked: bool) -> View:
        return View(tic, 128.0, 256.0, 0.0, health, False, [], np.zeros(32), looked=looked)

    brain.decide(view(0, 100.0, looked=False))
    assert (hunter.seen < 0).all()  # a step it did not read its screen searched nothing
    brain.decide(view(4, 100.0, looked=True))
    searched = hunter.seen.copy()
    assert (searched == 4).any()
    # Hit on a step it did not look: it turns around only once a look shows nobody in view.
    assert brain.decide(view(8, 80.0, looked=False))[0] > 0.0  # walks on
    spin = brain.decide(view(12, 80.0, looked=True))
    assert spin[0] == 0.0 and abs(spin[2]) == level.turn_speed


def test_the_grid_of_a_real_map_is_read_from_the_engine_and_cached(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    geometry = map_geometry(get_map("cig_map02"))
    assert list((tmp_path / "sf-envs" / "maps").iterdir())
    again = map_geometry(get_map("cig_map02"))
    np.testing.assert_array_equal(geometry.lines, again.lines)
    # A damaged cache file is read again from the engine and replaced, not trusted.
    (cached,) = (tmp_path / "sf-envs" / "maps").iterdir()
    cached.write_bytes(b"not a numpy file")
    with caplog.at_level(logging.WARNING, logger="sf_envs.match.navigation"):
        np.testing.assert_array_equal(map_geometry(get_map("cig_map02")).lines, geometry.lines)
    assert "unreadable map cache" in caplog.text
    np.testing.assert_array_equal(map_geometry(get_map("cig_map02")).lines, geometry.lines)
    grid = NavGrid(geometry)
    # Most walkable cells reach each other: one connected arena.
    start = tuple(np.argwhere(grid.walkable)[0])
    steps, _ = grid.distances(*start)
    assert (steps >= 0).sum() > 0.8 * grid.walkable.sum()


@pytest.mark.usefixtures("scenario_pack")
def test_a_hunting_player_finds_and_beats_a_still_agent_on_a_big_map() -> None:
    # Measured on dwango5 (4-minute duels): without hunting level 3 beat a still agent in 16
    # of 96 games (80 draws: it did not find it); hunting, in 8 of 8, by 6.8 frags a game. Here,
    # 6-minute games ended 3-12 frags to 0 (15 seeds). Three CI runs read 0 to 0, never seen on
    # this machine: both counts zero, as when the host's last state lacked the players and the
    # scoreboard fell back to zero (it now keeps the last count); the message names both the
    # scoreboard and the seat's own frag counter, and the match must have run to its time limit.
    level = scripted_ladder("dwango5")[3]
    assert level.hunt
    config = MatchConfig.create("duel_scripted", map="dwango5", timelimit=6.0, scripted_skill=3)
    screens = np.zeros((1, *config.options.obs_shape), dtype=np.uint8)
    renders = []  # whether the scripted seat's engine rendered, step by step
    with MatchCore(config) as core:
        core.reset(0, screens, None)
        seat = core.players[1]
        assert not seat.game.is_depth_buffer_enabled()  # a hunter walks ways, not depth
        while not core.finished:
            renders.append(seat.renders)
            core.step(np.zeros(1, dtype=np.int64), screens, None)
        frags = core.result()["frags"]
        scripted_frags = seat.stats[STAT_VARIABLES.index("FRAGCOUNT")]
        timed_out = core.players[0].timed_out
    assert timed_out, f"the match ended before its time limit after {len(renders)} steps"
    assert frags["scripted1_L3"] > frags["player_0"], (frags, scripted_frags)
    # dwango5's levels look at every other frame while nobody is in view, never fewer; the
    # counters are read on every step all the same.
    assert level.look_every == 2
    skipped = renders.count(False)
    assert 0 < skipped <= len(renders) / 2, (skipped, len(renders))
    assert all(a or b for a, b in itertools.pairwise(renders))  # never two unrendered in a row
    assert scripted_frags == frags["scripted1_L3"], (scripted_frags, frags)
