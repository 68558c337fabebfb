"""``RUN_DIR/population.json``: what a population run is, beyond its sf-train config.

The trainer's ``config.json`` says how each policy learns; this file says how many of its
policies are members and how many frozen slots, and the league settings the run was started
with (PBT, frozen opponents, gauntlets). Its keys keep their first spelling (``snapshots`` for
the frozen opponents), so that the files of older runs load. ``--resume`` reads both back, so a resumed run goes
on as it was started unless a flag says otherwise.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sf_league.population.frozen import FrozenConfig
from sf_league.population.gauntlets import GauntletConfig
from sf_league.population.pbt import PBTConfig

__all__ = [
    "FILE",
    "LeagueSettings",
    "run_layout",
    "saved_layout",
    "saved_settings",
    "write_population_file",
]

FILE = "population.json"

T = TypeVar("T")

_NOT_SAVED = {"pbt": ("seed",), "frozen": ("count",), "gauntlet": ("workers",)}
"""Left out of the saved settings: the seed is the run's (``config.json``), the slot count is
the layout's, and a gauntlet's worker processes are this session's resources."""

_KEYS = {"frozen": "snapshots"}
"""Keys of the file that differ from the names in code: the frozen opponents' settings and
slot count are stored under ``snapshots``, their first name, so older runs' files load."""


@dataclass
class LeagueSettings:
    """The league side of a population run: what PBT does, the frozen opponents, gauntlets."""

    pbt: PBTConfig = dataclasses.field(default_factory=PBTConfig)
    frozen: FrozenConfig = dataclasses.field(default_factory=FrozenConfig)
    gauntlet: GauntletConfig = dataclasses.field(default_factory=GauntletConfig)


def _read(run_dir: str | Path, parse: Callable[[dict[str, Any]], T]) -> T | None:
    """``parse`` of the saved file; None if there is none.

    Raises:
        RunFolderError: The file is not what this module writes (edited or damaged).
    """
    path = Path(run_dir) / FILE
    if not path.exists():
        return None
    try:
        return parse(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError) as e:
        from sf_train.run.folder import RunFolderError

        raise RunFolderError(
            f"{path} cannot be read ({type(e).__name__}: {e}): restore the file (it is "
            "written by sf-league train) or train a new --run-dir"
        ) from e


def saved_layout(run_dir: str | Path) -> tuple[int, int] | None:
    """``(members, frozen slots)`` of the population run in ``run_dir``; None if none was
    started there. Its trainer's ``num_policies`` is their sum."""
    return _read(run_dir, lambda saved: (int(saved["members"]), int(saved[_KEYS["frozen"]])))


def _settings(saved: dict[str, Any]) -> LeagueSettings | None:
    if "settings" not in saved:
        return None  # a run started before the settings were saved
    settings = saved["settings"]
    return LeagueSettings(
        pbt=PBTConfig(**{**settings["pbt"], "mutate": tuple(settings["pbt"]["mutate"])}),
        frozen=FrozenConfig(**settings[_KEYS["frozen"]]),
        gauntlet=GauntletConfig(
            **{**settings["gauntlet"], "players": tuple(settings["gauntlet"]["players"])}
        ),
    )


def saved_settings(run_dir: str | Path) -> LeagueSettings | None:
    """The league settings the run in ``run_dir`` last trained with; None if it saved none
    (no run there, or one started before they were saved)."""
    return _read(run_dir, _settings)


def run_layout(run_dir: Path, members: int, frozen: FrozenConfig, resume: bool) -> tuple[int, int]:
    """``(members, frozen slots)`` of a population run of ``members`` members: a resumed run
    keeps the slots it was started with."""
    from sf_train.config.schema import ConfigError

    saved = saved_layout(run_dir) if resume else None
    if saved is None:
        return members, frozen.count or 0
    slots = saved[1]
    if frozen.count is not None and frozen.count != slots:
        raise ConfigError(
            [
                f"--snapshots {frozen.count}: this run was started with {slots}; resume "
                "it without --snapshots (or with the same count), or train a new --run-dir"
            ]
        )
    return members, slots


def write_population_file(
    run_dir: str | Path, members: int, slots: int, settings: LeagueSettings
) -> None:
    """Writes the layout and the league settings of the run in ``run_dir`` (atomically)."""
    from sf_train.config.schema import write_atomic

    saved = {
        _KEYS.get(part, part): {
            key: value
            for key, value in dataclasses.asdict(getattr(settings, part)).items()
            if key not in left_out
        }
        for part, left_out in _NOT_SAVED.items()
    }
    text = json.dumps({"members": members, _KEYS["frozen"]: slots, "settings": saved}, indent=1)
    write_atomic(Path(run_dir) / FILE, text)
