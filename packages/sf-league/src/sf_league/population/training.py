"""``sf-league train``: a population of policies trained by self-play in one sf-train trainer,
judged by the league and improved by population-based training.

The trainer (``algo.num_policies`` members sharing the envs) does the learning. Between its
batches this driver:

- records every finished training match between different members in the league file as a
  game between them (one player per member and generation, ``RUN/p2.g1``; scenario ``training``, so
  those games are rated apart from evaluations), with the policy versions in its settings;
- every ``pbt.interval`` frames (each member's), ranks the members by their win rate over their
  last training matches against each other, as stored in the league, lets the worst copy the
  best when the gap is significant and mutates the copies (:mod:`sf_league.population.pbt`), storing every
  exploit and explore event (``sf-league lineage``);
- with frozen opponents (:mod:`sf_league.population.frozen`), every ``frozen.interval`` frames
  freezes a copy of the next member in the oldest frozen slot (a league player of its own,
  ``RUN/p2.g1@4000000``) and draws members' opponents among members and frozen opponents;
  games against frozen opponents are recorded too, but PBT ranks on games between members only;
- every ``gauntlet.every`` frames, writes a gauntlet checkpoint of every member and plays it against
  fixed opponents (baselines, bots, scripted players) in an ordinary tournament of the same
  league (:mod:`sf_league.population.gauntlets`).

Resuming reads the generations back from the league's events and the ranking windows from its
games: the league file is the population's memory besides the checkpoints.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sf_league.population.frozen import (
    FREEZE_EVENT,
    FrozenConfig,
    FrozenOpponents,
    FrozenPairing,
)
from sf_league.population.gauntlets import GauntletConfig, play_gauntlet
from sf_league.population.pbt import (
    PBTConfig,
    explore,
    mutate_shaping,
    ranked_scores,
    select_exploits,
)
from sf_league.population.run_file import LeagueSettings, run_layout, write_population_file
from sf_league.store import (
    GameRecord,
    LeagueStore,
    LeagueStoreError,
    PBTEvent,
    PlayerRecord,
    Seat,
)
from sf_train.run.interrupts import stop_on_signals

if TYPE_CHECKING:
    from sf_train.config.schema import Config
    from sf_train.run.members import Progress, TrainResult
    from sf_train.run.steering import SteerableTrainer

    MakeTrainer = Callable[[Config, bool, Callable[[Progress | None], None]], SteerableTrainer]
    """Builds a trainer as ``make_trainer(train_config, resume, on_progress)``."""

__all__ = [
    "TRAINING",
    "PopulationConfig",
    "PopulationTrainer",
    "member_name",
]

log = logging.getLogger(__name__)

TRAINING = "training"
"""The stored scenario of training matches: rated apart from evaluation games."""


def member_name(run_dir: str | Path, policy: int, generation: int) -> str:
    """The league name of a member in one generation, e.g. ``pop/p2.g1``."""
    return f"{Path(run_dir).name}/p{policy}.g{generation}"


def gauntlet_checkpoint_name(run_dir: str | Path, policy: int, frames: int) -> str:
    """The league name of a member's gauntlet checkpoint, e.g. ``pop/p2@4000000``."""
    return f"{Path(run_dir).name}/p{policy}@{frames}"


@dataclass
class PopulationConfig:
    """A population run.

    Attributes:
        train: The sf-train configuration (``algo.num_policies`` is the population's size:
            its members, without the frozen slots).
        db: The league file.
        pbt: When and how members are replaced and mutated.
        frozen: Frozen opponents, past members (the trainer holds them as policies
            after the members').
        gauntlet: Members' games against fixed opponents during training.
    """

    train: Config
    db: str
    pbt: PBTConfig = field(default_factory=PBTConfig)
    frozen: FrozenConfig = field(default_factory=FrozenConfig)
    gauntlet: GauntletConfig = field(default_factory=GauntletConfig)


@dataclass
class MemberView:
    """One line of the live view (``win_rate``: the rate PBT ranks the member on)."""

    policy: int
    generation: int
    frames: int
    fps: float | None
    mean_return: float | None
    objective: float | None
    win_rate: float | None
    matches: int
    entropy: float | None


class PopulationTrainer:
    """Trains a population into ``cfg.train.run.run_dir`` and keeps its league in ``cfg.db``.

    Args:
        cfg: The run.
        resume: Continue the run from its checkpoints and league.
        on_view: Called with every member's :class:`MemberView` after each PBT step and at
            least every ``view_seconds``.
        view_seconds: Seconds between two calls of ``on_view``.
        make_trainer: Builds the trainer as ``make_trainer(train_config, resume, on_progress)``,
            any :class:`~sf_train.run.steering.SteerableTrainer`; None: one sf-train
            :class:`~sf_train.run.trainer.Trainer` in this process
            (:class:`sf_league.population.shards.ShardedTrainer` spreads it over a Ray cluster).
    """

    def __init__(
        self,
        cfg: PopulationConfig,
        resume: bool = False,
        on_view: Callable[[list[MemberView]], None] | None = None,
        view_seconds: float = 30.0,
        make_trainer: MakeTrainer | None = None,
    ) -> None:
        from sf_envs.match.scenarios import MatchConfig
        from sf_train.config.schema import ConfigError, shaping_weights
        from sf_train.envs import env_spec
        from sf_train.run.trainer import Trainer

        train_cfg = cfg.train
        problems = cfg.pbt.problems() + cfg.frozen.problems()
        scenario = env_spec(train_cfg.env.env).kwargs.get("scenario")
        if scenario is None:
            problems.append(
                f"--env {train_cfg.env.env} is not a match: population training needs an env of "
                "several learning agents per game, e.g. sf/DoomDuel-v0"
            )
        if problems or scenario is None:
            raise ConfigError(problems)
        match = MatchConfig.create(scenario, **train_cfg.env.options())
        self.cfg = cfg
        self.run_dir = Path(train_cfg.run.run_dir)
        self.run_key = str(self.run_dir.resolve())
        self.settings: dict[str, Any] = {
            "map": match.map.name,
            "timelimit": match.timelimit,
            "frame_skip": train_cfg.env.frame_skip,
            "env": train_cfg.env.env,
            "run": self.run_key,
        }
        self.start_shaping = shaping_weights(train_cfg.algo)
        self.on_view = on_view
        self.view_seconds = view_seconds
        self._rng = np.random.default_rng(cfg.pbt.seed)
        self._session = f"{time.time():.6f}"
        self._recorded = 0  # training games stored this session: their keys
        count, slots = run_layout(self.run_dir, train_cfg.algo.num_policies, cfg.frozen, resume)
        envs = train_cfg.env.num_envs
        if slots and envs % (count + slots):
            raise ConfigError(
                [
                    f"--snapshots {slots} with {count} members: the trainer holds {count + slots} "
                    f"policies, which must divide --num-envs ({envs}); change one of the three"
                ]
            )
        self.frozen = FrozenOpponents(count, dataclasses.replace(cfg.frozen, count=slots))
        train_cfg = dataclasses.replace(
            train_cfg, algo=dataclasses.replace(train_cfg.algo, num_policies=count + slots)
        )
        self.store = LeagueStore(cfg.db)
        try:
            self.trainer: SteerableTrainer = (make_trainer or Trainer)(
                train_cfg, resume, self._between_batches
            )
        except BaseException:
            self.store.close()
            raise
        #: The live members (the trainer's first policies; the frozen slots follow).
        self.members = self.trainer.members[:count]
        write_population_file(
            self.run_dir, count, slots, LeagueSettings(cfg.pbt, cfg.frozen, cfg.gauntlet)
        )
        self.generations = [0] * count
        for event in self.store.pbt_events(self.run_key):
            if event.kind == FREEZE_EVENT:
                slot = event.policy - count
                if event.parent is None:
                    raise LeagueStoreError(f"freeze event of policy {event.policy} names no member")
                name = _frozen_player(self.run_dir, event.parent, event.generation, event.frames)
                self.frozen.fill(slot, name)
            else:
                self.generations[event.policy] = max(
                    self.generations[event.policy], event.generation
                )
        if slots:
            for slot in range(slots):
                self.trainer.freeze(self.frozen.policy(slot))
            # Slots start as copies of the members as they start: every seat the pairing
            # gives is someone, and early opponents are as weak as the members.
            empty = [k for k, slot in enumerate(self.frozen.slots) if slot.name is None]
            if empty:
                self.trainer.save_checkpoint()
                for slot in empty:
                    self._fill(slot, slot % count)
            self.trainer.set_pairing(FrozenPairing(self.frozen, cfg.pbt.seed))
        self.scores: list[deque[float]] = [deque(maxlen=cfg.pbt.window) for _ in range(count)]
        self._load_scores()
        self._register_members()
        self._policy_frames = [0] * count
        self._view_frames = [0] * count
        self._last_view = time.perf_counter()
        self._returns: list[float | None] = [None] * count
        self._objectives: list[float | None] = [None] * count
        self._entropies: list[float | None] = [None] * count
        frames = self.trainer.frames
        interval = cfg.pbt.interval
        self._next_pbt = (min(self._member_frames()) // interval + 1) * interval
        every = cfg.gauntlet.every
        self._next_gauntlet = (frames // every + 1) * every if every else None
        interval = cfg.frozen.interval
        self._next_freeze = (frames // interval + 1) * interval if slots else None
        self._stop_requested = False

    # -- the league's memory -----------------------------------------------------------

    def _member_frames(self) -> list[int]:
        return [m.frames for m in self.members]

    def _player(self, policy: int) -> PlayerRecord:
        name = member_name(self.run_dir, policy, self.generations[policy])
        spec = str(self.run_dir / f"p{policy}")
        return PlayerRecord(
            name, "member", spec, f"{self.run_key}:p{policy}:g{self.generations[policy]}"
        )

    def _register_members(self) -> None:
        self.store.add_players([self._player(p) for p in range(len(self.members))])

    def _load_scores(self) -> None:
        """Rebuilds each member's ranking window from the league's stored training games."""
        current = {member_name(self.run_dir, p, g): p for p, g in enumerate(self.generations)}
        every = {
            member_name(self.run_dir, p, g): p
            for p, latest in enumerate(self.generations)
            for g in range(latest + 1)
        }
        for game in self.store.games():
            if game.scenario != TRAINING or game.settings.get("run") != self.run_key:
                continue
            for policy, score in _member_scores(game, every, current):
                self.scores[policy].append(score)
            self._record_frozen_game(game, current)

    def _record_frozen_game(self, game: GameRecord, current: dict[str, int]) -> None:
        """Counts a two-seat game of a ``current`` member against a frozen opponent held now."""
        if len(game.seats) != 2:
            return
        for mine, theirs in (game.seats, game.seats[::-1]):
            slot = self.frozen.slot_of(theirs.player)
            if mine.player in current and slot is not None:
                self.frozen.record(current[mine.player], slot, _score(mine, theirs))

    def _record_matches(self) -> None:
        for match in self.trainer.take_matches():
            if len(set(match.policies)) < len(match.policies):
                continue  # a member against itself: no information for the league
            seats = []
            for policy, variables in zip(match.policies, match.variables, strict=True):
                seats.append(
                    Seat(
                        self._name(policy),
                        float(variables.get("frags", 0.0)),
                        variables.get("deaths"),
                    )
                )
            record = GameRecord(
                key=f"{TRAINING}:{self.run_key}:{self._session}:{self._recorded}",
                scenario=TRAINING,
                seats=tuple(seats),
                settings={**self.settings, "versions": list(match.versions)},
            )
            self.store.record_game(record)
            self._recorded += 1
            names = {
                s.player: p
                for s, p in zip(seats, match.policies, strict=True)
                if p < len(self.members)
            }
            for policy, score in _member_scores(record, names, names):
                self.scores[policy].append(score)
            self._record_frozen_game(record, names)

    def _name(self, policy: int) -> str:
        """The league player that ``policy`` of the trainer is now."""
        if policy < len(self.members):
            return member_name(self.run_dir, policy, self.generations[policy])
        name = self.frozen.slots[policy - len(self.members)].name
        if name is None:
            raise RuntimeError(f"policy {policy} played before its frozen slot was filled")
        return name

    # -- population-based training -----------------------------------------------------

    def pbt_step(self) -> None:
        """Ranks the members on their recent matches, lets the worst copy the best where the
        gap is significant and mutates the copies; logs every member's state to TensorBoard.

        After a change every member's checkpoint is written before the events are stored, so
        the league never names a generation that the checkpoints do not hold.
        """
        trainer, pbt = self.trainer, self.cfg.pbt
        frames = trainer.frames
        events: list[tuple[int, str, int | None, dict]] = []
        for exploit in select_exploits([list(s) for s in self.scores], pbt, self._rng):
            target, source = exploit.target, exploit.source
            before = trainer.hyperparameters(target)
            before_shaping = trainer.shaping(target)
            trainer.copy_policy(source, target)
            self.generations[target] += 1
            self.scores[target].clear()
            copied = _changes(before, trainer.hyperparameters(source))
            copied |= _changes(before_shaping, trainer.shaping(source), prefix="shaping.")
            copied["score"] = [exploit.target_score, exploit.source_score]
            events.append((target, "exploit", source, copied))
            values = trainer.hyperparameters(target)
            mutated = explore(values, pbt, self._rng)
            if mutated:
                trainer.set_hyperparameters(target, mutated)
            shaping = trainer.shaping(target)
            mutated_shaping = mutate_shaping(shaping, self.start_shaping, pbt, self._rng)
            if mutated_shaping:
                trainer.set_shaping(target, shaping | mutated_shaping)
            changes = _changes(values, trainer.hyperparameters(target))
            changes |= _changes(shaping, trainer.shaping(target), prefix="shaping.")
            events.append((target, "explore", None, changes))
            log.info(
                "PBT at %d frames: p%d (win rate %.2f) copies p%d (%.2f), now generation %d%s",
                frames,
                target,
                exploit.target_score,
                source,
                exploit.source_score,
                self.generations[target],
                "; mutated " + ", ".join(changes) if changes else "",
            )
        if events:
            trainer.save_checkpoint()
        for event in events:
            self._event(*event)
        self._register_members()
        write = trainer.writer.add_scalar
        for p in range(len(self.members)):
            write(f"p{p}/pbt/generation", self.generations[p], frames)
            if self.scores[p]:
                write(f"p{p}/pbt/win_rate", self._win_rate(p), frames)
            for name, value in trainer.hyperparameters(p).items():
                write(f"p{p}/pbt/{name}", value, frames)
            for name, value in trainer.shaping(p).items():
                write(f"p{p}/pbt/shaping_{name}", value, frames)

    def _event(self, policy: int, kind: str, parent: int | None, changes: dict) -> None:
        event = PBTEvent(
            self.run_key,
            self.trainer.frames,
            policy,
            self.generations[policy],
            kind,
            parent,
            changes,
        )
        self.store.record_pbt_event(event)
        self.trainer.writer.add_text(
            f"p{policy}/pbt/events", f"{kind} from p{parent}: {changes}", self.trainer.frames
        )

    # -- frozen opponents -------------------------------------------------------------

    def freeze_next(self) -> str:
        """Freezes a copy of the next member in the oldest frozen slot (see :meth:`_fill`);
        returns the frozen opponent's league name."""
        slot, member = self.frozen.next()
        self.trainer.save_checkpoint()
        return self._fill(slot, member)

    def _fill(self, slot: int, member: int) -> str:
        """Makes ``slot`` a frozen copy of ``member`` as its latest checkpoint: registered as
        a league player (``RUN/p2.g1@FRAMES``), the slot's weights made the member's and the
        event stored (``sf-league lineage``)."""
        from sf_league.tournament.players import parse_player

        trainer = self.trainer
        generation = self.generations[member]
        name = _frozen_player(self.run_dir, member, generation, trainer.frames)
        latest = self.members[member].checkpoints.latest()
        self.store.add_players([parse_player(f"{name}={latest}", self.settings["map"]).record()])
        policy = self.frozen.policy(slot)
        trainer.copy_policy(member, policy)
        self.frozen.fill(slot, name)
        event = PBTEvent(self.run_key, trainer.frames, policy, generation, FREEZE_EVENT, member, {})
        self.store.record_pbt_event(event)
        log.info("frozen opponent %s now plays as policy %d", name, policy)
        return name

    # -- gauntlets ---------------------------------------------------------------------

    def gauntlet(self) -> None:
        """Writes a gauntlet checkpoint of every member and plays it against the fixed opponents."""
        trainer = self.trainer
        trainer.save_checkpoint()
        checkpoints = {
            # Just written, so every member has one.
            gauntlet_checkpoint_name(self.run_dir, m.index, trainer.frames): cast(
                Path, m.checkpoints.latest()
            )
            for m in self.members
        }
        play_gauntlet(
            self.cfg.gauntlet,
            checkpoints,
            self.store,
            self.settings["map"],
            float(self.settings["timelimit"]),
        )

    # -- the loop ----------------------------------------------------------------------

    def _between_batches(self, progress: Progress | None) -> None:
        self._record_matches()
        trainer = self.trainer
        for s in trainer.take_stats():
            if s.policy >= len(self.members):
                continue  # a frozen slot
            self._policy_frames[s.policy] += s.frames
            self._returns[s.policy] = s.mean_return
            if s.mean_objective is not None:
                self._objectives[s.policy] = s.mean_objective
            self._entropies[s.policy] = s.entropy
        pbt_due = min(self._member_frames()) >= self._next_pbt
        if pbt_due:
            self.pbt_step()
            interval = self.cfg.pbt.interval
            self._next_pbt = (min(self._member_frames()) // interval + 1) * interval
        if self._next_freeze is not None and trainer.frames >= self._next_freeze:
            self.freeze_next()
            interval = self.cfg.frozen.interval
            self._next_freeze = (trainer.frames // interval + 1) * interval
        if self._next_gauntlet is not None and trainer.frames >= self._next_gauntlet:
            self.gauntlet()
            every = self.cfg.gauntlet.every
            self._next_gauntlet = (trainer.frames // every + 1) * every
        now = time.perf_counter()
        if self.on_view is not None and (pbt_due or now - self._last_view >= self.view_seconds):
            self.on_view(self.view(now - self._last_view))
            self._view_frames = list(self._policy_frames)
            self._last_view = now
        if self._stop_requested:
            trainer.request_stop()

    def view(self, seconds: float = 0.0) -> list[MemberView]:
        """Every member's line of the live view (``seconds`` since the previous one, for the
        frame rates)."""
        members = self.members
        return [
            MemberView(
                policy=m.index,
                generation=self.generations[m.index],
                frames=m.frames,
                fps=(self._policy_frames[m.index] - self._view_frames[m.index]) / seconds
                if seconds > 0
                else None,
                mean_return=self._returns[m.index],
                objective=self._objectives[m.index],
                win_rate=self._win_rate(m.index) if self.scores[m.index] else None,
                matches=len(self.scores[m.index]),
                entropy=self._entropies[m.index],
            )
            for m in members
        ]

    def _win_rate(self, policy: int) -> float:
        """The rate PBT ranks ``policy`` on (a draw counting ``--pbt-draw-score``)."""
        return float(np.mean(ranked_scores(self.scores[policy], self.cfg.pbt)))

    def request_stop(self) -> None:
        """Ends :meth:`train` after the current batch; every member's checkpoint is written."""
        self._stop_requested = True

    def train(self) -> TrainResult:
        """Trains to the configured frames (or until :meth:`request_stop`, e.g. on the first
        Ctrl-C or SIGTERM); the trainer writes every member's final checkpoint. Returns its
        ``TrainResult``."""
        with stop_on_signals(self.request_stop):
            result = self.trainer.train()
        self._record_matches()
        return result

    def close(self) -> None:
        try:
            self.trainer.close()
        finally:
            self.store.close()

    def __enter__(self) -> PopulationTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _frozen_player(run_dir: Path, member: int, generation: int, frames: int) -> str:
    """The league name of a frozen copy of ``member`` in ``generation`` at the run's ``frames``,
    e.g. ``pop/p2.g1@3000000`` (apart from a gauntlet checkpoint's ``pop/p2@3000000``)."""
    return f"{member_name(run_dir, member, generation)}@{frames}"


def _score(seat: Seat, other: Seat) -> float:
    """``seat``'s result against ``other`` in a duel: 1 won, 0.5 drawn, 0 lost (on frags)."""
    return 0.5 if seat.frags == other.frags else float(seat.frags > other.frags)


def _member_scores(
    game: GameRecord, members: dict[str, int], current: dict[str, int]
) -> list[tuple[int, float]]:
    """The scores (1 win, 0.5 draw, 0 loss) of the ``current`` members (league name: policy)
    in a two-seat game between two different ``members`` (any generation); nothing for other
    games."""
    if len(game.seats) != 2:
        return []
    (a, b) = game.seats
    if a.player not in members or b.player not in members:
        return []
    if members[a.player] == members[b.player]:
        return []
    score = _score(a, b)
    results = ((a.player, score), (b.player, 1.0 - score))
    return [(current[name], s) for name, s in results if name in current]


def _changes(
    old: dict[str, float], new: dict[str, float], prefix: str = ""
) -> dict[str, list[float]]:
    """``{prefix + name: [old, new]}`` of every value that differs (a missing one is 0)."""
    return {
        f"{prefix}{k}": [old.get(k, 0.0), new.get(k, 0.0)]
        for k in sorted(old.keys() | new.keys())
        if old.get(k, 0.0) != new.get(k, 0.0)
    }
