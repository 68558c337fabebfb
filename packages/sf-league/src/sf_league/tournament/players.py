"""Who can play in a league: engine bots, scripted players, baselines and sf-train checkpoints.

A player is named on the command line as ``bot:N`` (an engine bot at the map's skill level N),
``scripted:N`` (our rule-based player at level N, :mod:`sf_envs.match.scripted`), ``random``
(uniform random actions), ``noop`` (never acts), a run folder (its latest checkpoint) or a
checkpoint file, optionally as ``NAME=PATH`` to choose the league name.

Everything about a player is checked here, before any game runs: bot levels exist on the map
(each map has its own measured ladder, :func:`sf_envs.match.bot_ladder`), scripted levels
exist, checkpoints exist, and a checkpoint's network accepts the match's observation and
action spaces.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from gymnasium import spaces

from sf_envs.match import bot_ladder
from sf_envs.match.scripted import scripted_ladder
from sf_league.store import PlayerRecord

__all__ = [
    "BASELINES",
    "Player",
    "PlayerError",
    "check_checkpoint",
    "checkpoint_obs_settings",
    "parse_player",
]

BASELINES = ("random", "noop")
_BOT = re.compile(r"bot:(\d+)")
_SCRIPTED = re.compile(r"scripted:(\d+)")


class PlayerError(ValueError):
    """A player cannot take part; the message names the player and the fix."""


@dataclass(frozen=True)
class Player:
    """One league player.

    Attributes:
        name: Name in the league (unique).
        kind: ``bot``, ``scripted``, ``baseline`` or ``checkpoint``.
        level: Skill level (bots and scripted players only).
        checkpoint: Checkpoint file (checkpoints only).
        run_dir: Run folder holding the checkpoint's ``config.json`` (checkpoints only).
        fingerprint: Content hash of a checkpoint; the spec for others.
    """

    name: str
    kind: str
    level: int | None = None
    checkpoint: Path | None = None
    run_dir: Path | None = None
    fingerprint: str = ""

    @property
    def is_agent(self) -> bool:
        """Whether it takes an agent seat (acts from observations), rather than a bot slot or
        a scripted player's seat (which acts on its own inside the match)."""
        return self.kind in ("baseline", "checkpoint")

    def record(self) -> PlayerRecord:
        if self.checkpoint:
            spec = str(self.checkpoint)
        else:  # a level; a baseline's fingerprint is its spec, whatever its NAME=
            spec = str(self.level) if self.level is not None else self.fingerprint
        return PlayerRecord(self.name, self.kind, spec, self.fingerprint or spec)


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _offered_level(spec: str, level: int, ladder: dict[int, Any], map_name: str, kind: str) -> int:
    """``level`` if the map's ladder of ``kind`` players offers it; a PlayerError otherwise."""
    if level not in ladder:
        raise PlayerError(
            f"{spec}: map {map_name} has {kind} levels {', '.join(map(str, sorted(ladder)))} "
            "(only levels measured to differ in strength there; see "
            f"sf_envs.match.{'bots' if kind == 'bot' else 'scripted'}); use "
            f"{kind}:{max(ladder)} for the strongest"
        )
    return level


def _params_hash(params: object) -> str:
    return hashlib.sha256(repr(params).encode()).hexdigest()[:8]


def parse_player(text: str, map_name: str) -> Player:
    """Parses one ``--players`` entry for a tournament on ``map_name``.

    Raises:
        PlayerError: For an unknown player, a bot level the map lacks, or a missing checkpoint.
    """
    name, sep, spec = text.partition("=")
    if not sep:
        name, spec = "", text
    if m := _BOT.fullmatch(spec):
        ladder = bot_ladder(map_name)
        level = _offered_level(spec, int(m[1]), ladder, map_name, "bot")
        # The level's engine parameters are part of its identity: a recalibrated ladder makes
        # a different bot, which must not be pooled with the games of the old one.
        params = _params_hash(ladder[level])
        return Player(name or spec, "bot", level=level, fingerprint=f"{map_name}:{level}:{params}")
    if m := _SCRIPTED.fullmatch(spec):
        scripted = scripted_ladder(map_name)
        level = _offered_level(spec, int(m[1]), scripted, map_name, "scripted")
        # As for bots: retuned knobs make a different player.
        params = _params_hash(scripted[level].knobs())
        return Player(name or spec, "scripted", level=level, fingerprint=f"scripted:{params}")
    if spec in BASELINES:
        return Player(name or spec, "baseline", fingerprint=spec)
    path = Path(spec)
    if not path.exists():
        looks_like_path = "/" in spec or spec.endswith(".pt")
        raise PlayerError(
            f"unknown player {text!r}"
            + (": no such checkpoint file or run folder" if looks_like_path else "")
            + f"; use bot:N, scripted:N, {' or '.join(BASELINES)}, an sf-train run folder or a "
            "checkpoint file (NAME=PATH names it)"
        )
    from sf_train.run.checkpoint import CheckpointError
    from sf_train.run.folder import find_checkpoint

    if path.is_dir():
        run_dir = path
        try:
            checkpoint = find_checkpoint(path, "latest")
        except CheckpointError as e:
            raise PlayerError(f"player {text!r}: {e}") from e
    else:
        checkpoint, run_dir = path, path.parent.parent
    if not (run_dir / "config.json").is_file():
        raise PlayerError(
            f"player {text!r}: {run_dir / 'config.json'} is missing; a checkpoint must sit in "
            "an sf-train run folder (RUN/checkpoints/FILE.pt) whose config builds its network"
        )
    default_name = f"{run_dir.resolve().name}/{checkpoint.stem}"
    return Player(
        name or default_name,
        "checkpoint",
        checkpoint=checkpoint.resolve(),
        run_dir=run_dir.resolve(),
        fingerprint=_file_hash(checkpoint),
    )


def checkpoint_obs_settings(player: Player) -> dict[str, object]:
    """The observation settings and action set a checkpoint was trained with (from its run's
    config)."""
    from sf_train.run.folder import RunFolderError, load_run_config

    try:
        env = load_run_config(cast(Path, player.run_dir)).env  # a checkpoint's
    except RunFolderError as e:
        raise PlayerError(f"player {player.name}: {e}") from e
    return {
        "obs_size": tuple(env.obs_size),
        "grayscale": bool(env.grayscale),
        "frame_skip": int(env.frame_skip),
        "action_set": str(env.options().get("action_set", "discrete")),
    }


def check_checkpoint(
    player: Player, observation_space: spaces.Space, action_space: spaces.Space
) -> None:
    """Loads the checkpoint's network for the match's spaces; refuses one that does not fit.

    Raises:
        PlayerError: If the checkpoint is unreadable or its network was built for other
            observation or action spaces (e.g. trained on a scenario with other controls).
    """
    from sf_train.evaluation import load_policy
    from sf_train.run.checkpoint import CheckpointError
    from sf_train.run.folder import RunFolderError

    try:
        run_dir = cast(Path, player.run_dir)  # a checkpoint's
        load_policy(run_dir, observation_space, action_space, str(player.checkpoint))
    except (CheckpointError, RunFolderError) as e:
        raise PlayerError(f"player {player.name}: {e}") from e
    except (RuntimeError, ValueError) as e:
        first = (str(e).splitlines() or [""])[0][:200]
        raise PlayerError(
            f"player {player.name} ({player.checkpoint}) does not fit this match: its network "
            f"does not accept observations {observation_space} and actions {action_space} "
            f"({type(e).__name__}: {first}); use a checkpoint trained with the match's "
            "controls and observation settings (--obs-size, --grayscale, --action-set)"
        ) from e
