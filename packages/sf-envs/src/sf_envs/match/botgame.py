"""Bot-only games: scripted bots play each other while the host only watches.

A match needs a host, and the host is a player. With ``+viz_spectator 1`` the host is
invisible, passes through walls and cannot be shot, so the bots fight only each other; that is
how bots are rated among themselves (sf-league). The host plays no-op actions in lock step;
nothing is learned from its frames, so it renders at the smallest resolution and reads one frame
per game second.

A bot game has one engine and no network (``-host 1`` binds no port), yet engines still fail,
sometimes fatally (a fatal engine error segfaults its Python, see ``VIZDOOM_FACTS.md``; rates in
``docs/benchmarks/matches.md``). So each game runs in a child process of its own: whatever
happens there, the caller gets a result or a :class:`~sf_envs.match.lockstep.MatchError`. A
failed game is replayed in a fresh child, and the child's process group (its engine included) is
killed and its shared memory removed after every game, finished or not.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from sf_envs.errors import OptionError
from sf_envs.lifecycle.procs import run_in_child
from sf_envs.match.bots import bot_ladder
from sf_envs.match.core import MatchCore
from sf_envs.match.lockstep import MatchError
from sf_envs.match.maps import get_map
from sf_envs.match.scenarios import MatchConfig, MatchScenario

__all__ = ["BOT_GAME", "bot_game_config", "play_bot_game"]

logger = logging.getLogger(__name__)

#: Games tried (each in a fresh child process) before a failure is reported to the caller.
_ATTEMPTS = 3
#: Seconds a child may take on top of the game itself: a fresh Python imports sf_envs, the
#: engine starts, and a loaded machine plays slower than real time.
_CHILD_ALLOWANCE_S = 60.0
#: The child's program: plays the pickled ``(config, seed)`` read from stdin and writes the
#: result as JSON to the file named by its first argument. Tests replace it to stage crashes.
_CHILD_CODE = "from sf_envs.match.botgame import _main; _main()"
#: Tics per host step: one game second. Bots think every tic whatever the host's step.
_HOST_FRAME_SKIP = 35

#: The scenario of a bot-only game; not in ``MATCH_SCENARIOS`` (nothing there to learn).
BOT_GAME = MatchScenario(
    "bot_game",
    map="cig_map02",
    num_agents=1,
    num_bots=2,
    agents_range=(1, 1),
    bots_range=(2, 7),
    timelimit=2.0,
    description="Scripted bots only, free for all; the host spectates.",
    spectator_host=True,
)


def bot_game_config(
    map_name: str, bot_levels: Sequence[int], *, timelimit: float, timeout: float = 30.0
) -> MatchConfig:
    """Validates a bot-only game; every problem is reported in one ValueError.

    Args:
        map_name: A match map (:data:`~sf_envs.match.maps.MAPS`).
        bot_levels: One skill level per bot, from the map's ladder; at least two bots.
        timelimit: Minutes of game time.
        timeout: Seconds before a wait on the engine counts as a hang.

    Raises:
        ValueError: naming every invalid setting and its fix.
    """
    errors = []
    try:
        match_map = get_map(map_name)
    except ValueError as exc:
        raise OptionError(f"invalid bot game:\n  - {exc}") from None
    if isinstance(bot_levels, (str, bytes)) or not isinstance(bot_levels, Sequence):
        raise OptionError(
            f"invalid bot game:\n  - bot_levels must be a list of levels, one per bot, "
            f"got {bot_levels!r}"
        )
    levels = list(bot_levels)
    if len(levels) < 2:
        errors.append(f"a bot game needs at least 2 bots, got {len(levels)}; add bot levels")
    # The spectating host takes a player slot like any other player.
    most = min(match_map.max_players - 1, BOT_GAME.bots_range[1])
    if len(levels) > most:
        errors.append(
            f"map {map_name} holds at most {most} bots besides the spectating host (more crash "
            f"the engine), got {len(levels)}; drop bots or play on cig_map01/cig_map02"
        )
    ladder = bot_ladder(map_name)
    bad = [
        lv
        for lv in levels
        if not isinstance(lv, (int, np.integer)) or isinstance(lv, bool) or lv not in ladder
    ]
    if bad:
        errors.append(
            f"bot levels on {map_name} are {', '.join(map(str, sorted(ladder)))} (only levels "
            f"measured to differ in strength; see sf_envs.match.bots), got {bad}"
        )
    if errors:
        raise OptionError("invalid bot game:\n  - " + "\n  - ".join(errors))
    try:
        return MatchConfig.create(
            BOT_GAME,
            num_bots=len(levels),
            bot_skill=[int(lv) for lv in levels],
            map=map_name,
            timelimit=timelimit,
            timeout=timeout,
            frame_skip=_HOST_FRAME_SKIP,
            resolution=(160, 120),
            obs_size=(16, 12),
            grayscale=True,
        )
    except ValueError as exc:
        raise OptionError(str(exc).replace("invalid bot_game match", "invalid bot game")) from None


def play_bot_game(
    map_name: str,
    bot_levels: Sequence[int],
    *,
    timelimit: float,
    seed: int | None = None,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Plays one free-for-all game of scripted bots until the time limit; returns the result.

    The host spectates, and the game runs in a child process (see the module docstring).
    Frags are counted as in agent matches: from a baseline taken just after the bots join
    (spawn telefrags do not count), suicides -1.

    Args:
        map_name: A match map, e.g. ``"cig_map02"`` (stable with many bots) or ``"multi_duel"``
            (2 bots at most).
        bot_levels: One level per bot from ``bot_ladder(map_name)``; bots are named as
            :func:`~sf_envs.match.bots.bot_specs` names them (``bot1_L3``, ...).
        timelimit: Minutes of game time.
        seed: Seed of the game; a game replayed after a failure uses ``seed + attempt``.
        timeout: Seconds any wait on the engine may take before the game counts as hung.

    Returns:
        The same shape as an agent match's final ``info["match"]``: ``{"frags": {bot name:
        frags}, "winner": name or None, "draw": bool, "bots": [{"name", "level"}, ...]}``.

    Raises:
        ValueError: for an unknown map, a level not on the map's ladder, fewer than 2 bots or
            more than the map holds; raised before any engine starts.
        MatchError: when the game failed (engine crash, hang, dead child) in each of 3
            attempts.

    Example:
        >>> from sf_envs.match import play_bot_game
        >>> result = play_bot_game("cig_map02", [1, 1], timelimit=0.05, seed=0)
        >>> sorted(result["frags"])
        ['bot1_L1', 'bot2_L1']
    """
    config = bot_game_config(map_name, bot_levels, timelimit=timelimit, timeout=timeout)
    failures = []
    for attempt in range(_ATTEMPTS):
        game_seed = None if seed is None else seed + attempt
        result, why = _play_in_child(config, game_seed)
        if result is not None:
            return result
        failures.append(f"attempt {attempt + 1}: {why}")
        logger.warning("bot game on %s failed (%s); replaying in a fresh process", map_name, why)
    raise MatchError(
        f"the bot game on {map_name} with levels {list(bot_levels)} failed {_ATTEMPTS} times, "
        "each in a fresh process:\n  - " + "\n  - ".join(failures)
    )


def _play_in_child(
    config: MatchConfig, seed: int | None
) -> tuple[dict[str, Any] | None, str | None]:
    """Plays one game in a child process; returns ``(result, None)`` or ``(None, why not)``."""
    limit = config.timelimit * 60.0 + config.timeout + _CHILD_ALLOWANCE_S
    # The engine's _vizdoom/ and crash logs stay in the temporary folder too.
    with tempfile.TemporaryDirectory(prefix="sf_botgame_") as workdir:
        out_path = os.path.join(workdir, "result.json")
        payload = pickle.dumps((config, seed))
        why = run_in_child(_CHILD_CODE, [out_path], payload, workdir, limit, "the game")
        if why is not None:
            return None, why
        with open(out_path, encoding="utf-8") as f:
            return json.load(f), None


def _play(config: MatchConfig, seed: int | None) -> dict[str, Any]:
    """Plays one game in this process (the child's side of :func:`play_bot_game`)."""
    screens = np.zeros((1, *config.options.obs_shape), dtype=np.uint8)
    noop = np.zeros(1, dtype=np.int64)
    with MatchCore(config) as core:
        core.reset(seed, screens, None)
        truncated = core.truncated
        while not truncated[0]:
            _, _, truncated = core.step(noop, screens, None)
        scoreboard = core.result()["frags"]
    frags = {b.name: scoreboard[b.name] for b in config.bots}
    best = max(frags.values())
    leaders = [name for name, f in frags.items() if f == best]
    return {
        "frags": frags,
        "winner": leaders[0] if len(leaders) == 1 else None,
        "draw": len(leaders) != 1,
        "bots": [{"name": b.name, "level": b.level} for b in config.bots],
    }


def _main() -> None:
    config, seed = pickle.loads(sys.stdin.buffer.read())
    result = _play(config, seed)
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(result, f)
