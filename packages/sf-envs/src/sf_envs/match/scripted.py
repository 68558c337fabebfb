"""Scripted players: rule-based opponents with skill knobs, playing a match as players.

The engine's own bots are poor anchors for a rating: in one-on-one games they rarely seek their
opponent, and their skill fields act differently per map (``VIZDOOM_FACTS.md``). A scripted
player is a player of our own making. It sees only what is on its screen: the engine's labels
list the visible players with their map positions, and the depth buffer shows where open space
is; objects behind walls stay unknown to it. From that it turns toward the nearest visible enemy,
fires when its aim is close enough, strafes, keeps its distance, retreats when hurt, and explores
when nobody is in sight: toward open space, or, for a level that hunts, by the map's layout to
where it last saw its enemy or to the places it has not looked at for longest
(:mod:`sf_envs.match.hunt`).

Its strength comes from knobs that matter in a gunfight (:class:`ScriptedLevel`): how long it
takes to react to an enemy coming into view, how far its aim is off, how fast it can turn, how
close its aim must be before it fires, how far ahead of a moving enemy it aims a rocket, whether
it dodges, and whether it retreats when hurt.
The levels of :data:`SCRIPTED_LEVELS` were ordered by measurement, not assumed from the numbers,
and a map whose fights differ gets a ladder of its own (:data:`SCRIPTED_LADDERS`).

:class:`ScriptedBrain` is the decision alone (no engine), so it can be tested on made-up views;
:class:`~sf_envs.match.player.ScriptedMatchPlayer` gives it an engine seat in a match.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, fields, replace

import numpy as np

from sf_envs.match.hunt import Hunter

__all__ = [
    "BUTTONS",
    "HUNTING_LEVELS",
    "HUNTING_REVISION",
    "MULTI_DUEL_LEVELS",
    "SCRIPTED_LADDERS",
    "SCRIPTED_LEVELS",
    "Enemy",
    "ScriptedBrain",
    "ScriptedLevel",
    "ScriptedSpec",
    "View",
    "scripted_ladder",
    "scripted_specs",
]

#: What a scripted player presses: forward/back speed, strafe speed, turn (degrees per tic,
#: positive turns right) and fire.
BUTTONS = (
    "MOVE_FORWARD_BACKWARD_DELTA",
    "MOVE_LEFT_RIGHT_DELTA",
    "TURN_LEFT_RIGHT_DELTA",
    "ATTACK",
)
_SPEED = 50.0  # a delta move button's full running speed
_SPLASH_DISTANCE = 160.0  # closer than this a rocket hurts its shooter too
_ROCKET_LAUNCHER = 5  # the weapon slot whose shots explode
# Map units per tic of the projectiles of the weapon slots that fire them (Doom's rocket and
# plasma ball; the BFG's ball flies like plasma).
_PROJECTILE_SPEED = {5: 20.0, 6: 25.0, 7: 25.0}
_PLAYER_RADIUS = 16.0  # map units: how wide a target is
_STUCK_TICS = 24  # a player that moved less than _STUCK_UNITS in this long is blocked
_STUCK_UNITS = 12.0
_MEMORY_TICS = 70  # how long an enemy that went out of view is still chased
_DODGE_TICS = 40  # rockets that pass close within this many tics are dodged
# How fast a player that may not turn steps sideways to aim: faster only overshoots (measured
# on multi_duel: at full speed level 5 lost 0/1/15 to the slower level 3).
_AIM_STRAFE = 20.0
_GLIDE_TICS = 8.0  # how far ahead a strafing player's momentum carries it, in tics


@dataclass(frozen=True)
class ScriptedLevel:
    """The skill knobs of one scripted level.

    Attributes:
        level: The level's number (higher is stronger, by measurement).
        reaction_tics: Tics an enemy must be in view before the player reacts to it.
        aim_noise: Standard deviation of the aim error, in degrees; a new error is drawn when
            an enemy comes into view and every ``reaction_tics + 35`` tics after.
        turn_speed: Most degrees turned per tic.
        fire_cone: The player fires only when its aim is within this many degrees of where it
            wants to aim, or within the target's own width when that is wider (up close).
        strafe: Whether it strafes (changing side at random) while fighting, where it may
            turn (elsewhere stepping aside would spoil its aim).
        dodge_distance: It steps aside from rockets on its screen that would pass within this
            many map units (0: never; a rocket's blast reaches 128).
        retreat_health: Below this health it backs away while fighting (0: never).
        lead: How far ahead of a moving enemy it aims a projectile, as a fraction of the
            projectile's flight time (0: at where the enemy is; 1: at where it will be if it
            keeps its velocity). Hitscan weapons need no lead.
        hunt: Whether it knows the map's layout and searches it for its enemy (the shortest
            way to where it last saw it, else the places it has not looked at for longest), and
            turns around when hit from out of view; without it, it runs toward open space.
        look_every: With nobody in view it reads its screen only every this many steps, and
            its engine renders nothing in between (1: every step). Rendering is most of what a
            scripted seat costs its engine; the price is an enemy coming into view being seen
            up to ``look_every - 1`` steps late.
    """

    level: int
    reaction_tics: int
    aim_noise: float
    turn_speed: float
    fire_cone: float
    strafe: bool = False
    dodge_distance: float = 0.0
    retreat_health: float = 0.0
    lead: float = 0.0
    hunt: bool = False
    look_every: int = 1

    def knobs(self) -> dict[str, object]:
        """The level's number and the knobs it sets away from their defaults, and for a hunting
        level :data:`HUNTING_REVISION`: what makes it the player it is. A knob added later, at a
        default that plays as before, leaves the levels that do not use it the same players."""
        knobs = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.default is MISSING or getattr(self, f.name) != f.default
        }
        if self.hunt:
            knobs["hunting_revision"] = HUNTING_REVISION
        return knobs


#: How hunting plays beyond the knobs (the way finding, what a hunter renders and when): raised
#: whenever that changes, and part of a hunting level's identity (:meth:`ScriptedLevel.knobs`),
#: so that a league never pools the games of two different players under one name.
HUNTING_REVISION = 2

#: The measured ladder (strongest last); see the module docstring.
SCRIPTED_LEVELS: dict[int, ScriptedLevel] = {
    lv.level: lv
    for lv in (
        ScriptedLevel(
            1,
            reaction_tics=40,
            aim_noise=9.0,
            turn_speed=3.0,
            fire_cone=14.0,
            dodge_distance=60.0,
        ),
        ScriptedLevel(
            2,
            reaction_tics=25,
            aim_noise=5.0,
            turn_speed=5.0,
            fire_cone=10.0,
            dodge_distance=100.0,
        ),
        ScriptedLevel(
            3,
            reaction_tics=16,
            aim_noise=3.0,
            turn_speed=8.0,
            fire_cone=8.0,
            dodge_distance=140.0,
        ),
        ScriptedLevel(
            4,
            reaction_tics=8,
            aim_noise=2.0,
            turn_speed=12.0,
            fire_cone=8.0,
            strafe=True,
            dodge_distance=160.0,
        ),
        ScriptedLevel(
            5,
            reaction_tics=0,
            aim_noise=0.3,
            turn_speed=20.0,
            fire_cone=8.0,
            strafe=True,
            dodge_distance=160.0,
            retreat_health=40.0,
        ),
    )
}


#: The ladder of multi_duel, where players strafe and shoot rockets across a gap and cannot
#: turn. The default levels hardly separate there (random's rocket spam beat level 1, level 5
#: lost to 4). What decides a rocket duel was measured knob by knob: dodging (but dodging wider
#: than about 140 units leaves no time to aim, and two such players only draw), leading a
#: strafing enemy, and firing only when the aim is close; aim noise hardly matters.
#: Numbers in ``docs/benchmarks/matches.md``.
MULTI_DUEL_LEVELS: dict[int, ScriptedLevel] = {
    lv.level: lv
    for lv in (
        ScriptedLevel(
            1, reaction_tics=12, aim_noise=2.0, turn_speed=8.0, fire_cone=10.0, dodge_distance=125.0
        ),
        ScriptedLevel(
            2, reaction_tics=8, aim_noise=1.0, turn_speed=8.0, fire_cone=10.0, dodge_distance=140.0
        ),
        ScriptedLevel(
            3,
            reaction_tics=4,
            aim_noise=1.0,
            turn_speed=12.0,
            fire_cone=10.0,
            dodge_distance=140.0,
            lead=0.5,
        ),
        ScriptedLevel(
            4,
            reaction_tics=0,
            aim_noise=0.3,
            turn_speed=16.0,
            fire_cone=6.0,
            dodge_distance=140.0,
            lead=0.6,
        ),
    )
}

#: The default levels, hunting (:attr:`ScriptedLevel.hunt`): on maps where finding the enemy
#: decides more than fighting it. On dwango5 the levels that ran toward open space mostly failed
#: to find a still agent in a 4-minute duel (level 3: 16 wins, 80 draws in 96 games); hunting,
#: levels 1-5 beat it in 39 of 40.
HUNTING_LEVELS: dict[int, ScriptedLevel] = {
    k: replace(lv, hunt=True) for k, lv in SCRIPTED_LEVELS.items()
}

#: Per map, the levels that differ from each other there, when not all of
#: :data:`SCRIPTED_LEVELS`: multi_duel has a ladder of its own; on ssl2 level 4 lay between 3
#: and 5 with a 95% interval overlapping both; dwango5 and cig_map01 hunt, and there level 4
#: (dwango5) or 3 (cig_map01) overlapped its neighbours, and level 5 (which backs away when
#: hurt and holds its rockets up close) fell below 2 on cig_map01; on cig_map02 levels 1, 2 and
#: 3 could not be told apart, and level 5 lost to 4 (numbers in ``docs/benchmarks/matches.md``).
SCRIPTED_LADDERS: dict[str, dict[int, ScriptedLevel]] = {
    "multi_duel": MULTI_DUEL_LEVELS,
    "ssl2": {k: SCRIPTED_LEVELS[k] for k in (1, 2, 3, 5)},
    "dwango5": {k: replace(HUNTING_LEVELS[k], look_every=2) for k in (1, 2, 3, 5)},
    "cig_map01": {k: HUNTING_LEVELS[k] for k in (1, 2, 4)},
    "cig_map02": {k: SCRIPTED_LEVELS[k] for k in (3, 4)},
}


def scripted_ladder(map_name: str) -> dict[int, ScriptedLevel]:
    """The scripted levels offered on ``map_name``, by level number."""
    return dict(SCRIPTED_LADDERS.get(map_name, SCRIPTED_LEVELS))


@dataclass(frozen=True)
class ScriptedSpec:
    """One scripted player of a match: its in-game name (unique in the match) and level."""

    name: str
    level: int


def scripted_specs(levels: Sequence[int]) -> list[ScriptedSpec]:
    """Names one scripted player per entry of ``levels``: ``scripted1_L3`` is the first, at 3."""
    return [ScriptedSpec(f"scripted{i + 1}_L{level}", level) for i, level in enumerate(levels)]


@dataclass(frozen=True)
class Enemy:
    """A visible enemy or projectile: map position and velocity (map units, units per tic)."""

    x: float
    y: float
    vx: float = 0.0
    vy: float = 0.0


@dataclass
class View:
    """What a scripted player knows after a step.

    Attributes:
        tic: The game tic.
        x, y: Its map position.
        angle: Its facing, degrees counterclockwise from east (the engine's ``ANGLE``).
        health: Its health.
        weapon: Its selected weapon's slot (5: rockets, whose blast hurts the shooter too).
        dead: Whether it is dead (waiting to respawn).
        enemies: The enemies on its screen.
        rockets: The rockets on its screen (its own too: those fly away from it).
        depth: Per screen column (left to right), how far the open space goes at eye level.
        looked: Whether it read its screen this step (:attr:`ScriptedLevel.look_every`); if
            not, ``enemies`` and ``rockets`` are empty and ``depth`` is from its last look.
    """

    tic: int
    x: float
    y: float
    angle: float
    health: float
    dead: bool
    enemies: Sequence[Enemy]
    depth: np.ndarray
    rockets: Sequence[Enemy] = ()
    weapon: int = 0
    looked: bool = True


def _wrap(degrees: float) -> float:
    """``degrees`` in [-180, 180)."""
    return (degrees + 180.0) % 360.0 - 180.0


class ScriptedBrain:
    """Chooses a scripted player's buttons, one decision per step.

    Args:
        level: The skill knobs.
        frame_skip: Tics per step: a decision holds for that many tics.
        seed: Seed of its random choices (aim errors, strafing, exploring).
        turn: Whether it may turn. Maps restrict the agents' controls where a move is unsafe
            or pointless (multi_duel: strafe and shoot, since stepping forward falls off the
            ledge), and a scripted player keeps the same rules: without turning it aims by
            strafing.
        advance: Whether it may move forward and backward.
        hunter: Knows the map's layout: with it the player searches the map for its enemy
            (and turns around when hit from out of view) instead of running toward open space.
    """

    def __init__(
        self,
        level: ScriptedLevel,
        frame_skip: int,
        seed: int = 0,
        *,
        turn: bool = True,
        advance: bool = True,
        hunter: Hunter | None = None,
    ) -> None:
        self.hunter = hunter
        self.level = level
        self.frame_skip = frame_skip
        self.can_turn = turn
        self.can_advance = advance
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Forgets what it saw (a new match, or it died); ``seed`` reseeds its choices."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        if self.hunter is not None:
            self.hunter.reset()
        self._forget()

    def _forget(self) -> None:
        """Forgets the fight and the way (it died)."""
        if self.hunter is not None:
            self.hunter.forget_way()
        self._seen_since: int | None = None
        self._last_seen: tuple[float, float, int] | None = None
        self._aim_error = 0.0
        self._aim_drawn_at = 0
        self._strafe = 1.0
        self._strafe_until = 0
        self._trail: list[tuple[int, float, float]] = []
        self._escape_turn = 0.0
        self._escape_until = 0
        self._velocity = (0.0, 0.0)
        self._previous: tuple[int, float, float] | None = None
        self._health: float | None = None  # at the last decision it looked
        self._look_back_until = 0
        self._look_back = 0.0

    def decide(self, view: View) -> list[float]:
        """The buttons (in :data:`BUTTONS` order) to hold until the next decision."""
        if view.dead:
            self._forget()
            return [0.0, 0.0, 0.0, 0.0]
        if self._previous is not None and view.tic > self._previous[0]:
            t, x, y = self._previous
            self._velocity = ((view.x - x) / (view.tic - t), (view.y - y) / (view.tic - t))
        self._previous = (view.tic, view.x, view.y)
        hurt = False
        if view.looked:
            # Only what it looked at counts as searched, and a hit counts once it can tell
            # whether the shooter is in view.
            hurt = self._health is not None and view.health < self._health
            self._health = view.health
            if self.hunter is not None:
                self.hunter.look(view.x, view.y, view.angle, view.tic)
        target = self._target(view)
        if target is not None:
            return self._fight(view, target)
        if not self.can_turn:
            return [0.0, 0.0, 0.0, 0.0]  # nobody in view and nowhere to look: wait
        if self.hunter is not None and hurt and not view.enemies:
            # Hit by someone out of view: turn around to find the shooter.
            speed = self.level.turn_speed
            self._look_back = float(self.rng.choice((-1.0, 1.0))) * speed
            self._look_back_until = view.tic + math.ceil(180.0 / speed)
        if view.tic < self._look_back_until:
            return self._moves(0.0, 0.0, self._look_back, 0.0)
        chase = None
        if self._last_seen is not None and view.tic - self._last_seen[2] < _MEMORY_TICS:
            chase = self._last_seen[:2]
            if self.hunter is None:
                return self._moves(_SPEED, 0.0, self._turn_toward(view, *chase), 0.0)
        return self._explore(view, chase)

    def _moves(self, forward: float, strafe: float, turn: float, fire: float) -> list[float]:
        """The buttons, without the moves the map does not allow."""
        return [
            forward if self.can_advance else 0.0,
            strafe,
            turn if self.can_turn else 0.0,
            fire,
        ]

    def _target(self, view: View) -> Enemy | None:
        """The nearest visible enemy once the reaction delay has passed, else None."""
        if not view.enemies:
            self._seen_since = None
            return None
        enemy = min(view.enemies, key=lambda e: math.hypot(e.x - view.x, e.y - view.y))
        self._last_seen = (enemy.x, enemy.y, view.tic)
        lv = self.level
        if self._seen_since is None:
            self._seen_since = view.tic
            self._draw_aim_error(view.tic)
        elif view.tic - self._aim_drawn_at >= lv.reaction_tics + 35:
            self._draw_aim_error(view.tic)
        if view.tic - self._seen_since < lv.reaction_tics:
            return None
        return enemy

    def _draw_aim_error(self, tic: int) -> None:
        self._aim_error = float(self.rng.normal(0.0, self.level.aim_noise))
        self._aim_drawn_at = tic

    def _fight(self, view: View, enemy: Enemy) -> list[float]:
        lv = self.level
        distance = math.hypot(enemy.x - view.x, enemy.y - view.y)
        enemy = self._led(view, enemy, distance)
        wanted = math.degrees(math.atan2(enemy.y - view.y, enemy.x - view.x)) + self._aim_error
        error = _wrap(wanted - view.angle)  # positive: the aim point is to the left
        turn = self._turn_toward(view, enemy.x, enemy.y, error=self._aim_error)
        if not self.can_turn:
            turn = 0.0
        # Where the aim will be after this step's turn, against where the player wants it.
        left_over = _wrap(error + turn * self.frame_skip)
        width = math.degrees(math.atan2(_PLAYER_RADIUS, max(distance, 1.0)))
        fire = abs(left_over) <= max(lv.fire_cone, width)
        if lv.retreat_health and view.weapon == _ROCKET_LAUNCHER and distance < _SPLASH_DISTANCE:
            fire = False  # a strong player does not blow itself up
        forward = 0.0
        if lv.retreat_health and view.health < lv.retreat_health:
            forward = -_SPEED
        elif distance > 3 * _SPLASH_DISTANCE:
            forward = _SPEED
        elif distance < _SPLASH_DISTANCE:
            forward = -_SPEED
        strafe = 0.0
        dodge = self._dodge(view) if lv.dodge_distance else 0.0
        if dodge:
            strafe = dodge
        elif not self.can_turn and not fire:
            # Aiming by stepping sideways: in proportion to how far the aim line will pass the
            # enemy once its momentum has carried it on (so it does not overshoot).
            rad = math.radians(view.angle)
            drift = self._velocity[0] * math.sin(rad) - self._velocity[1] * math.cos(rad)
            miss = distance * math.sin(math.radians(error)) + drift * _GLIDE_TICS
            most = _AIM_STRAFE
            strafe = -min(max(miss / self.frame_skip, -most), most)
        elif lv.strafe and self.can_turn:  # without turning, a sidestep would spoil the aim
            if view.tic >= self._strafe_until:
                self._strafe = float(self.rng.choice((-1.0, 1.0)))
                self._strafe_until = view.tic + int(self.rng.integers(10, 40))
            strafe = self._strafe * _SPEED
        return self._moves(forward, strafe, turn, float(fire))

    def _led(self, view: View, enemy: Enemy, distance: float) -> Enemy:
        """Where to aim at ``enemy``: ahead of it by the level's lead, for a projectile."""
        speed = _PROJECTILE_SPEED.get(view.weapon)
        if not self.level.lead or speed is None:
            return enemy
        ahead = self.level.lead * distance / speed
        return Enemy(enemy.x + enemy.vx * ahead, enemy.y + enemy.vy * ahead, enemy.vx, enemy.vy)

    def _dodge(self, view: View) -> float:
        """Strafe speed that steps away from the rocket about to pass closest, or 0."""
        right = (math.sin(math.radians(view.angle)), -math.cos(math.radians(view.angle)))
        closest, step = self.level.dodge_distance, 0.0
        for r in view.rockets:
            dx, dy = r.x - view.x, r.y - view.y
            speed2 = r.vx * r.vx + r.vy * r.vy
            if speed2 < 1.0:
                continue
            t = -(dx * r.vx + dy * r.vy) / speed2  # tics to its closest approach
            if not 0.0 < t < _DODGE_TICS:
                continue
            cx, cy = dx + r.vx * t, dy + r.vy * t  # where it passes, relative to the player
            miss = math.hypot(cx, cy)
            if miss < closest:
                closest = miss
                side = -(cx * right[0] + cy * right[1])  # away from where it passes
                step = math.copysign(_SPEED, side if side else self.rng.choice((-1.0, 1.0)))
        return step

    def _turn_toward(self, view: View, x: float, y: float, error: float = 0.0) -> float:
        """Degrees per tic (positive: right) that bring the aim toward ``(x, y)`` this step."""
        wanted = math.degrees(math.atan2(y - view.y, x - view.x)) + error
        per_tic = _wrap(wanted - view.angle) / self.frame_skip
        speed = self.level.turn_speed
        return -min(max(per_tic, -speed), speed)

    def _explore(self, view: View, chase: tuple[float, float] | None = None) -> list[float]:
        """Runs toward ``chase`` or searches the map with a hunter, else toward open space;
        turns away when blocked."""
        trail = self._trail
        trail.append((view.tic, view.x, view.y))
        while trail and view.tic - trail[0][0] > _STUCK_TICS:
            trail.pop(0)
        speed = self.level.turn_speed
        if view.tic < self._escape_until:
            return [-_SPEED / 2, 0.0, self._escape_turn, 0.0]
        t0, x0, y0 = trail[0]
        if (
            view.tic - t0 >= _STUCK_TICS - self.frame_skip
            and math.hypot(view.x - x0, view.y - y0) < _STUCK_UNITS
        ):
            self._escape_turn = float(self.rng.choice((-1.0, 1.0))) * speed
            self._escape_until = view.tic + int(self.rng.integers(8, 24))
            trail.clear()
            if self.hunter is not None:
                self.hunter.forget_way()
            return [-_SPEED / 2, 0.0, self._escape_turn, 0.0]
        if self.hunter is not None:
            point = self.hunter.waypoint(view.x, view.y, view.tic, chase)
            if point is not None:
                turn = self._turn_toward(view, *point)
                off = abs(
                    _wrap(
                        math.degrees(math.atan2(point[1] - view.y, point[0] - view.x)) - view.angle
                    )
                )
                return [_SPEED if off < 45.0 else _SPEED / 4, 0.0, turn, 0.0]
            # Off every way (pressed into a corner the grid leaves out): run straight on; being
            # stuck turns it around.
            return [_SPEED, 0.0, 0.0, 0.0]
        depth = view.depth
        columns = len(depth)
        # The deepest column steers; the screen spans 90 degrees, right is a positive turn.
        deepest = int(np.argmax(depth + self.rng.uniform(0.0, 0.5, columns)))
        offset = (deepest + 0.5) / columns - 0.5
        turn = min(max(offset * 90.0 / self.frame_skip, -speed), speed)
        return [_SPEED, 0.0, turn, 0.0]
