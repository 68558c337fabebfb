"""One player's DoomGame in a match: configuration, tics, observation and event counters.

A :class:`MatchPlayer` is driven only from its own lock-step thread. It turns the engine's
cumulative game variables into per-step match events (frags, deaths, hits, damage_dealt,
pickups) measured from a baseline taken at the start of each match, because the engine's counters
are not all reset by ``new_episode()`` (deaths accumulate) and bots spawning at the start can
telefrag.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import cast

import numpy as np
import vizdoom

from sf_envs.game import FramePipeline
from sf_envs.kernel import numba_kernel
from sf_envs.match.rewards import EVENTS
from sf_envs.match.scenarios import MatchConfig
from sf_envs.match.scripted import BUTTONS, Enemy, ScriptedBrain, View

__all__ = [
    "MEASUREMENTS",
    "STAT_VARIABLES",
    "MatchPlayer",
    "ScriptedMatchPlayer",
    "game_args",
    "scripted_view",
]

#: Cumulative counters reported per agent, scored from the match-start baseline.
STAT_VARIABLES: tuple[str, ...] = (
    "FRAGCOUNT",
    "DEATHCOUNT",
    "HITCOUNT",
    "DAMAGECOUNT",
    "DAMAGE_TAKEN",
)
#: Game variables in the optional measurements vector.
MEASUREMENTS: tuple[str, ...] = ("HEALTH", "ARMOR", "SELECTED_WEAPON", "SELECTED_WEAPON_AMMO")
_WEAPONS = tuple(f"WEAPON{i}" for i in range(1, 8))
_AMMO = tuple(f"AMMO{i}" for i in range(2, 6))
_VARIABLES = tuple(dict.fromkeys((*STAT_VARIABLES, *MEASUREMENTS, *_WEAPONS, *_AMMO)))
_GAME_VARIABLES = tuple(getattr(vizdoom.GameVariable, v) for v in _VARIABLES)
_IX = {name: i for i, name in enumerate(_VARIABLES)}
_STAT_IX = np.array([_IX[v] for v in STAT_VARIABLES], dtype=np.intp)
_MEAS_IX = np.array([_IX[v] for v in MEASUREMENTS], dtype=np.intp)
_WEAPON_IX = np.array([_IX[v] for v in _WEAPONS], dtype=np.intp)
_AMMO_IX = np.array([_IX[v] for v in _AMMO], dtype=np.intp)
_EVENT_IX = {name: i for i, name in enumerate(EVENTS)}


def game_args(
    config: MatchConfig,
    index: int,
    port: int | None,
    bots_path: str | None,
    connect_timeout: float,
) -> str:
    """Console arguments for player ``index``: the host (0) sets the rules, the others join.

    ``connect_timeout`` is how long the host waits for every player to join (and a joiner for
    the host); running out (like
    any fatal error in ``init()``) segfaults the process that started the host.
    """
    name = f"+name {config.player_names[index]} +colorset {index}"
    connect = f"+viz_connect_timeout {max(round(connect_timeout), 1)}"
    if index > 0:
        return f"-join 127.0.0.1 -port {port} {connect} {name}"
    engines = config.num_engines
    network = f"-host {engines}" + (f" -port {port}" if engines > 1 else "")
    rules = (
        f"-deathmatch +timelimit {config.timelimit:g} +sv_forcerespawn 1 +sv_noautoaim 1 "
        f"+sv_respawnprotect 1 +sv_spawnfarthest 1 +sv_nocrouch 1 +viz_respawn_delay 1 {connect}"
    )
    bots = f" +viz_bots_path {bots_path}" if bots_path else ""
    if config.scenario.spectator_host:
        bots += " +viz_spectator 1"
    return f"{network} {rules}{bots} {config.map.game_args} {name}".replace("  ", " ")


class MatchPlayer:
    """One player of a match; every method runs on this player's lock-step thread.

    Args:
        config: The match config.
        index: Player index; 0 hosts.
        workdir: This player's own folder (ViZDoom's ini, crash logs).
        args: Console arguments from :func:`game_args`.
        engine: The engine executable to start (:func:`~sf_envs.match.spin.engine_path`);
            ViZDoom's own when None.
    """

    def __init__(
        self, config: MatchConfig, index: int, workdir: str, args: str, engine: str | None = None
    ) -> None:
        self.index = index
        self._engine = engine
        self.config = config
        self.ini_path = os.path.join(workdir, "_vizdoom.ini")
        self._args = args
        self.action_set = config.action_set
        self._frames = FramePipeline(config.options)
        # The engine from init() to close(); the methods in between cast it to DoomGame.
        self.game: vizdoom.DoomGame | None = None
        self.values = np.zeros(len(_VARIABLES), dtype=np.float64)
        self._previous = np.zeros_like(self.values)
        self._baseline = np.zeros(len(STAT_VARIABLES), dtype=np.float64)
        #: Cumulative stats since the match start, in :data:`STAT_VARIABLES` order.
        self.stats = np.zeros(len(STAT_VARIABLES), dtype=np.float64)
        #: Event counts of the last step, in :data:`~sf_envs.match.rewards.EVENTS` order.
        self.events = np.zeros(len(EVENTS), dtype=np.float64)
        self._was_dead = False
        #: The latest full-resolution screen, for rendering.
        self.last_screen: np.ndarray | None = None
        self.finished = False
        self.timed_out = False
        #: Whether the engine renders (and reports a state) at the end of the next step. An
        #: agent's always does; a scripted seat skips frames it does not need.
        self.renders = True

    def init(self, seed: int | None = None) -> None:
        """Creates and starts the engine; the host returns once every player has joined.

        ``seed`` reaches the engine's random state only here, at start: a multiplayer map restart
        keeps the state, so :meth:`restart` is the only way to reseed a running game.
        """
        game = vizdoom.DoomGame()
        if self._engine is not None:
            game.set_vizdoom_path(self._engine)
        m = self.config.map
        game.set_doom_game_path(m.iwad_path)
        if m.wad_path is not None:
            game.set_doom_scenario_path(m.wad_path)
        game.set_doom_map(m.doom_map)
        game.set_doom_config_path(self.ini_path)
        game.set_window_visible(False)
        game.set_sound_enabled(False)
        game.set_mode(vizdoom.Mode.PLAYER)
        game.set_screen_format(vizdoom.ScreenFormat.CRCGCB)
        game.set_available_game_variables(list(_GAME_VARIABLES))
        self._configure(game)
        game.set_episode_timeout(0)  # +timelimit ends the match, on the same tic for everyone
        game.add_game_args(self._args)
        if seed is not None:
            game.set_seed(seed)
        self.game = game
        game.init()

    def _configure(self, game: vizdoom.DoomGame) -> None:
        """What this seat sees and presses: the observation settings and the action set."""
        game.set_screen_resolution(
            getattr(vizdoom.ScreenResolution, self.config.options.resolution_mode)
        )
        game.set_render_hud(True)
        game.set_available_buttons([getattr(vizdoom.Button, b) for b in self.action_set.buttons])

    def restart(self, seed: int) -> None:
        """Replaces the engine with a fresh one started with ``seed``."""
        self.close()
        self.init(seed)

    def new_episode(self, seed: int | None) -> None:
        game = cast(vizdoom.DoomGame, self.game)
        if seed is not None:
            game.set_seed(seed)
        game.new_episode()
        self.finished = self.timed_out = False

    def add_bots(self, names: list[str]) -> None:
        game = cast(vizdoom.DoomGame, self.game)
        for name in names:
            game.send_game_command(f"addbot {name}")

    def tics(self, action: int | np.ndarray, count: int, sync: Callable[[], None] | None) -> None:
        """Plays ``action`` for ``count`` tics, meeting the other players after every tic.

        A player whose match already ended still meets the barrier, so nobody waits forever.
        With ``sync=None`` (the only player of its game: bots run inside its engine, there is no
        peer to keep in step with) the tics run in one engine call instead of ``count``.
        """
        game = cast(vizdoom.DoomGame, self.game)
        game.set_action(self._buttons(action))
        render = self.renders
        if sync is None:
            if not self.finished:
                game.advance_action(count, render)
                self.finished = game.is_episode_finished()
        else:
            for t in range(count):
                if not self.finished:
                    game.advance_action(1, render and t == count - 1)
                    self.finished = game.is_episode_finished()
                sync()
        if self.finished:
            self.timed_out = game.is_episode_timeout_reached()

    def _buttons(self, action: int | np.ndarray) -> list[float]:
        return self.action_set.button_values(action)

    def start_match(self, obs_out: np.ndarray | None, meas_out: np.ndarray | None) -> None:
        """Takes the baselines after bots joined and writes the first observation."""
        state = self._read()
        self._baseline[:] = self.values[_STAT_IX]
        self.stats[:] = 0.0
        self.events[:] = 0.0
        self._previous[:] = self.values
        self._was_dead = cast(vizdoom.DoomGame, self.game).is_player_dead()
        self._observe(state, obs_out, meas_out, first=True)

    def finish_step(self, obs_out: np.ndarray | None, meas_out: np.ndarray | None) -> None:
        """Updates stats and events after a step; at the end ``obs_out`` keeps the last frame."""
        state = self._read()
        self.stats[:] = self.values[_STAT_IX] - self._baseline
        self._count_events()
        self._observe(state, obs_out, meas_out, first=False)

    def _count_events(self) -> None:
        """The step's events (what a reward weighs) from the change of the game variables."""
        delta = self.values - self._previous
        ev = self.events
        ev[_EVENT_IX["frags"]] = delta[_IX["FRAGCOUNT"]]
        ev[_EVENT_IX["deaths"]] = delta[_IX["DEATHCOUNT"]]
        ev[_EVENT_IX["hits"]] = delta[_IX["HITCOUNT"]]
        ev[_EVENT_IX["damage_dealt"]] = delta[_IX["DAMAGECOUNT"]]
        ev[_EVENT_IX["damage_taken"]] = delta[_IX["DAMAGE_TAKEN"]]
        dead = cast(vizdoom.DoomGame, self.game).is_player_dead()
        # A respawn refills health, armor and ammo: that is not a pickup.
        alive_through = not (dead or self._was_dead or delta[_IX["DEATHCOUNT"]] > 0)
        if alive_through:
            ev[_EVENT_IX["health"]] = max(delta[_IX["HEALTH"]], 0.0)
            ev[_EVENT_IX["armor"]] = max(delta[_IX["ARMOR"]], 0.0)
            owned = np.count_nonzero(self.values[_WEAPON_IX] > 0)
            before = np.count_nonzero(self._previous[_WEAPON_IX] > 0)
            ev[_EVENT_IX["weapon"]] = owned - before if owned > before else 0
            ev[_EVENT_IX["ammo"]] = np.maximum(delta[_AMMO_IX], 0.0).sum()
        else:
            ev[_EVENT_IX["health"] :] = 0.0
        self._was_dead = dead
        self._previous[:] = self.values

    def _read(self) -> vizdoom.GameState | None:
        game = cast(vizdoom.DoomGame, self.game)
        state = game.get_state() if self.renders else None
        if state is not None:
            self.values[:] = state.game_variables
        else:  # no state after the last tic or an unrendered step; the counters are readable
            for i, variable in enumerate(_GAME_VARIABLES):
                self.values[i] = game.get_game_variable(variable)
        return state

    def _observe(
        self,
        state: vizdoom.GameState | None,
        obs_out: np.ndarray | None,
        meas_out: np.ndarray | None,
        first: bool,
    ) -> None:
        if meas_out is not None:
            meas_out[:] = self.values[_MEAS_IX]
        if state is not None:
            self.last_screen = state.screen_buffer
            # Only a scripted seat has no row, and it observes otherwise.
            self._frames(state.screen_buffer, cast(np.ndarray, obs_out), first)

    def close(self) -> None:
        if self.game is not None:
            self.game.close()
            self.game = None


_POSITION = (vizdoom.GameVariable.POSITION_X, vizdoom.GameVariable.POSITION_Y)
_DEPTH_BAND = slice(50, 70)  # the rows at eye level of a 160x120 screen
_DEPTH_COLUMNS = 32
_NO_DEPTH = np.zeros(_DEPTH_COLUMNS)


@numba_kernel
def depth_columns(depth, top, bottom):
    """Per screen column band (left to right, :data:`_DEPTH_COLUMNS` of them), the mean depth of
    rows ``top:bottom``: how far the open space goes at eye level. Compiled: the numpy version
    cost a scripted player ~30 µs per step."""
    width = depth.shape[1] // _DEPTH_COLUMNS
    rows = bottom - top
    out = np.empty(_DEPTH_COLUMNS)
    for c in range(_DEPTH_COLUMNS):
        band = 0.0
        for k in range(c * width, (c + 1) * width):
            column = 0.0
            for r in range(top, bottom):
                column += depth[r, k]
            band += column / rows
        out[c] = band / width
    return out


_SEEN = {"DoomPlayer": True, "Rocket": False}  # labels a scripted player reacts to: enemy?


def scripted_view(game: vizdoom.DoomGame, depth: bool) -> None:
    """What a scripted seat's engine renders: the labels (and depth, if asked) at the smallest
    resolution, without HUD, weapon or effects."""
    game.set_screen_resolution(vizdoom.ScreenResolution.RES_160X120)
    game.set_render_hud(False)
    for switch in (
        game.set_render_decals,
        game.set_render_particles,
        game.set_render_effects_sprites,
        game.set_render_messages,
        game.set_render_corpses,
        game.set_render_screen_flashes,
        game.set_render_weapon,
    ):
        switch(False)
    game.set_labels_buffer_enabled(True)
    game.set_depth_buffer_enabled(depth)


class ScriptedMatchPlayer(MatchPlayer):
    """A seat played by a :class:`~sf_envs.match.scripted.ScriptedBrain`, not by the caller.

    Its engine renders only what the brain reads, at the smallest resolution: the labels (the
    players on its screen, with their map positions) and the depth buffer; no HUD, effects or
    decals. It decides after every step, on its own lock-step thread, so the caller's loop
    carries no work for it.

    With nobody in view, a level with :attr:`~sf_envs.match.scripted.ScriptedLevel.look_every`
    above 1 renders only every that many steps: its position, health and the game's counters
    come from the engine without rendering, and on the other steps it decides as if its screen
    showed nobody (with the depth of its last look).

    Args:
        brain: Its decisions.

    The other arguments are as for :class:`MatchPlayer`.
    """

    def __init__(
        self,
        config: MatchConfig,
        index: int,
        workdir: str,
        args: str,
        brain: ScriptedBrain,
        engine: str | None = None,
    ) -> None:
        super().__init__(config, index, workdir, args, engine)
        self.brain = brain
        self._decision = [0.0] * len(BUTTONS)
        self._depth = _NO_DEPTH
        self._unlooked = 0  # steps since it last read its screen

    def _configure(self, game: vizdoom.DoomGame) -> None:
        # Depth steers only a player that explores without a map (a hunter walks ways), and
        # only one that may turn.
        scripted_view(game, depth=self.brain.can_turn and self.brain.hunter is None)
        game.set_available_buttons([getattr(vizdoom.Button, b) for b in BUTTONS])

    def new_episode(self, seed: int | None) -> None:
        super().new_episode(seed)
        self.brain.reset(None if seed is None else seed + self.index)
        self.renders = True
        self._depth = _NO_DEPTH
        self._unlooked = 0

    def _buttons(self, action: int | np.ndarray) -> list[float]:
        return self._decision

    def _count_events(self) -> None:
        """Nothing to count: a scripted seat earns no reward (its stats are still kept)."""

    def _observe(
        self,
        state: vizdoom.GameState | None,
        obs_out: np.ndarray | None,
        meas_out: np.ndarray | None,
        first: bool,
    ) -> None:
        if self.finished:
            return
        game = cast(vizdoom.DoomGame, self.game)
        enemies: list[Enemy] = []
        rockets: list[Enemy] = []
        self._unlooked = 0 if state is not None else self._unlooked + 1
        if state is not None:
            for label in cast(list[vizdoom.Label], state.labels):  # on (scripted_view)
                seen = _SEEN.get(label.object_name)
                if seen is not None:
                    (enemies if seen else rockets).append(
                        Enemy(
                            label.object_position_x,
                            label.object_position_y,
                            label.object_velocity_x,
                            label.object_velocity_y,
                        )
                    )
            if state.depth_buffer is not None:
                self._depth = depth_columns(state.depth_buffer, _DEPTH_BAND.start, _DEPTH_BAND.stop)
        view = View(
            tic=game.get_episode_time() if state is None else state.tic,
            x=game.get_game_variable(_POSITION[0]),
            y=game.get_game_variable(_POSITION[1]),
            angle=game.get_game_variable(vizdoom.GameVariable.ANGLE),
            health=self.values[_IX["HEALTH"]],
            weapon=int(self.values[_IX["SELECTED_WEAPON"]]),
            dead=game.is_player_dead(),
            enemies=enemies,
            rockets=rockets,
            depth=self._depth,
            looked=state is not None,
        )
        self._decision = self.brain.decide(view)
        self.renders = bool(enemies) or self._unlooked + 1 >= self.brain.level.look_every
