"""A population split into shards on a Ray cluster (``sf-league train --ray``).

Each shard is a Ray actor hosting an ordinary sf-train :class:`~sf_train.run.trainer.Trainer` with
its share of the members and its own vector engine, declaring the CPUs its engine workers use,
so Ray places shards on any nodes. On the driver, :class:`ShardedTrainer` gives
:class:`~sf_league.population.training.PopulationTrainer` the face of one in-process trainer, so the
league, PBT, gauntlets and the live view run there unchanged, and the driver alone writes the
league file.

Members of different shards meet as guests: besides its members, each shard's trainer holds
``guests`` frozen policies (:meth:`~sf_train.run.trainer.Trainer.freeze`) playing with the
weights of other shards' members, drawn anew every ``guest_interval`` frames and
sent through Ray's object store. A match against a guest counts as a match against the member
it copies, so PBT ranks the whole population on one scale; an exploit across shards is one
export and one import, the weights going from shard to shard through the object store.

No filesystem is shared: each shard trains in ``RUN_DIR/shard<k>`` on its own node (its
TensorBoard curves stay there; with ``--wandb`` the driver alone logs to W&B); whenever the
population saves, the shards send every member's state and the driver writes the ordinary
population run folder (``RUN_DIR/p<i>``), which ``sf-train eval``, ``sf-league evaluate`` and a
local ``sf-league train --resume`` take.

Calls from the driver reach a training shard's trainer between two of its batches (the
trainer's ``on_progress``), in the thread that steps it, as they do in one process.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sf_league.tournament.ray_games import ClusterError, import_ray

if TYPE_CHECKING:
    from sf_train.config.schema import Config
    from sf_train.run.checkpoint import Checkpoints
    from sf_train.run.members import TrainResult
    from sf_train.run.population import MatchRecord, PolicyStats
    from sf_train.sampling.protocols import Pairing

__all__ = ["ShardConfig", "ShardedTrainer"]

log = logging.getLogger(__name__)

_POLL_S = 1.0  # how often the driver steers the population while the shards train
_SEED_STRIDE = 1_000_003  # between the seeds of two shards (sf-train derives seed + 1, + 2...)
_CLOSE_TIMEOUT_S = 60.0  # a shard closes its envs within this, else it is killed


@dataclasses.dataclass(frozen=True)
class ShardConfig:
    """How the population is split.

    Attributes:
        shards: Shards (Ray actors); the members, envs and frames are divided among them.
        guests: Guests per shard (frozen copies of other shards' members, exchanged between
            shards); None: as many as the shard has members.
        guest_interval: Frames (of the whole population) between two draws of the guests.
        cpus: CPUs each shard declares to Ray; None: its vector engine's workers.
    """

    shards: int = 2
    guests: int | None = None
    guest_interval: int = 200_000
    cpus: float | None = None

    def problems(self, num_policies: int, num_envs: int) -> list[str]:
        errors = []
        if self.shards < 2:
            errors.append(f"--shards {self.shards}: use at least 2 (one shard is local training)")
        elif num_policies % self.shards or num_envs % self.shards:
            errors.append(
                f"--shards {self.shards} must divide --num-policies ({num_policies}) and "
                f"--num-envs ({num_envs}): each shard trains an equal share"
            )
        if self.guests is not None and self.guests < 1:
            errors.append(f"--guests {self.guests}: use at least 1, so that shards meet")
        if self.guest_interval < 1:
            errors.append(f"--snapshot-interval {self.guest_interval}: use at least 1 frame")
        if self.cpus is not None and self.cpus <= 0:
            errors.append(f"--shard-cpus {self.cpus}: use a positive number")
        return errors


class _Shard:
    """One shard's trainer inside a Ray actor (wrapped by :func:`ray.remote` on the driver)."""

    def __init__(self, cfg: Config, members: int) -> None:
        from sf_train.run.trainer import Trainer

        self.members = members
        self._lock = threading.Lock()
        self._calls: queue.SimpleQueue[tuple[str, tuple, concurrent.futures.Future]] = (
            queue.SimpleQueue()
        )
        self._training = False
        self.trainer = Trainer(cfg, on_progress=self._between_batches)
        for guest in range(members, cfg.algo.num_policies):
            self.trainer.freeze(guest)

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def train(self) -> float:
        """Trains to the shard's frames; returns the seconds it took."""
        with self._lock:
            self._training = True
        try:
            return self.trainer.train().seconds
        finally:
            with self._lock:
                self._training = False
                self._serve()

    def call(self, name: str, *args: Any) -> Any:
        """Runs the trainer's method ``name`` (or :meth:`progress`, :meth:`member_states`):
        at once when the shard is not training, else between its next two batches."""
        with self._lock:
            if not self._training:
                return self._run(name, args)
            done: concurrent.futures.Future = concurrent.futures.Future()
            self._calls.put((name, args, done))
        return done.result()

    def _between_batches(self, progress: Any) -> None:
        with self._lock:
            self._serve()

    def _serve(self) -> None:
        while True:
            try:
                name, args, done = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                done.set_result(self._run(name, args))
            except BaseException as e:  # the caller's to handle
                done.set_exception(e)

    def _run(self, name: str, args: tuple) -> Any:
        if name in ("progress", "member_states"):
            return getattr(self, name)()
        return getattr(self.trainer, name)(*args)

    def progress(self) -> tuple[int, list[int]]:
        """The shard's frames, and each member's."""
        return self.trainer.frames, [m.frames for m in self.trainer.members[: self.members]]

    def member_states(self) -> list[tuple[dict[str, Any], float | None]]:
        """Each member's state (as a checkpoint holds it) and its mean return."""
        states = self.trainer.states()[: self.members]
        members = self.trainer.members[: self.members]
        return [(s, m.returns.mean()) for s, m in zip(states, members, strict=True)]

    def close(self) -> None:
        self.trainer.close()


@dataclasses.dataclass
class _Mirror:
    """The driver's view of one member: its index, frames, checkpoints (on the driver) and the
    mean return its latest checkpoint was saved with (a
    :class:`~sf_train.run.steering.SteeredMember`)."""

    index: int
    checkpoints: Checkpoints
    frames: int = 0
    mean_return: float | None = None


class ShardedTrainer:
    """The members of ``cfg`` trained in ``split.shards`` Ray actors, with the face of one
    :class:`~sf_train.run.trainer.Trainer` that :class:`~sf_league.population.training.PopulationTrainer`
    uses (:class:`~sf_train.run.steering.SteerableTrainer`). Needs a connected Ray session
    (:func:`sf_league.tournament.ray_games.ray_session`).

    Args:
        cfg: The whole population's sf-train config (``num_envs``, ``frames`` and
            ``num_policies`` are totals, divided among the shards).
        split: How to shard it.
        on_progress: Called about every second while the shards train (with None).
        resume: Continue the population in ``cfg.run.run_dir`` (a Ray run's or a local one's)
            from the latest checkpoint every member has: each shard loads its members' states
            (sent through the object store) and trains the frames still to go.

    Raises:
        ConfigError: If the split or a shard's config is invalid.
        RunFolderError: If the run folder does not fit ``resume``.
        CheckpointError: If a checkpoint to resume from is unreadable.
    """

    def __init__(
        self,
        cfg: Config,
        split: ShardConfig,
        on_progress: Callable[[None], None] | None = None,
        resume: bool = False,
    ) -> None:
        from sf_train.config.schema import ConfigError, config_to_dict, validate
        from sf_train.run.folder import checkpoints_of, policy_folder, prepare_run_folder
        from sf_train.run.tracking import open_run_writer

        ray = import_ray()
        self._ray = ray
        total, shards = cfg.algo.num_policies, split.shards
        errors = split.problems(total, cfg.env.num_envs)
        if errors:
            raise ConfigError(errors)
        self.per_shard = total // shards
        guests = split.guests or self.per_shard
        run_dir = Path(cfg.run.run_dir)
        validate(cfg)  # the population's own config, which a local --resume continues
        states = prepare_run_folder(cfg, resume)  # the population's folder, on the driver
        #: Frames trained before this session (the shards count theirs from 0).
        self.start_frames = int(states[0]["frames"]) if states else 0
        to_go = max(0, cfg.run.frames - self.start_frames)
        if resume and not to_go:
            log.warning(
                "run already at %d frames: raise --frames to train longer", self.start_frames
            )
        # A session's shards train in folders of their own: they may land on other nodes.
        session = time.strftime("%Y%m%d-%H%M%S")
        configs = [
            self._shard_config(cfg, split, guests, to_go, run_dir / f"shard{k}" / session, k)
            for k in range(shards)
        ]
        validate(configs[0])  # here, before any actor starts
        self.cfg, self.split, self.on_progress = cfg, split, on_progress
        self.members = [
            _Mirror(g, checkpoints_of(policy_folder(run_dir, g, total), cfg.run.keep_checkpoints))
            for g in range(total)
        ]
        self.frames = self.start_frames
        self._shards: list[Any] = []
        self.writer = open_run_writer(run_dir, config_to_dict(cfg), tracked=cfg.run.wandb)
        self._rng = np.random.default_rng(cfg.run.seed + 3)
        #: For each shard, the member each of its guests copies.
        self.guests: list[list[int]] = [[-1] * guests for _ in range(shards)]
        self._next_exchange = _next(self.frames, split.guest_interval)
        # The driver's copy of every member.
        self._next_checkpoint = _next(self.frames, cfg.run.checkpoint_every)
        actor = ray.remote(
            num_cpus=split.cpus or cfg.env.num_workers, max_concurrency=4, max_restarts=0
        )(_Shard)
        self._shards = [actor.remote(c, self.per_shard) for c in configs]
        try:
            #: The Ray node of each shard.
            self.nodes: list[str] = ray.get([s.node.remote() for s in self._shards])
            if states:
                self._load(states)
            self.exchange_guests()
        except ray.exceptions.RayError as e:
            self.close()
            # Its last line names the error inside the shard (e.g. an env option that does not fit).
            raise ClusterError(f"a shard failed to start: {str(e).strip().splitlines()[-1]}") from e
        except BaseException:
            self.close()
            raise

    def _load(self, states: list[dict[str, Any]]) -> None:
        loading = []
        for policy, state in enumerate(states):
            shard, local = self._where(policy)
            loading.append(shard.call.remote("load_policy", local, state))
            self.members[policy].frames = int(state.get("policy_frames", state["frames"]))
        self._ray.get(loading)
        log.info(
            "resumed %s at %d frames in %d shards",
            self.cfg.run.run_dir,
            self.frames,
            len(self._shards),
        )

    @staticmethod
    def _shard_config(
        cfg: Config, split: ShardConfig, guests: int, frames: int, folder: Path, shard: int
    ) -> Config:
        from sf_train.envs import agents_per_game

        shards = split.shards
        env, algo, run = cfg.env, cfg.algo, cfg.run
        return dataclasses.replace(
            cfg,
            env=dataclasses.replace(
                env,
                num_envs=env.num_envs // shards,
                batch_size=max(env.batch_size // shards, agents_per_game(env)),
            ),
            algo=dataclasses.replace(algo, num_policies=algo.num_policies // shards + guests),
            # Shards of one seed would start from the same weights and play the same games.
            run=dataclasses.replace(
                run,
                run_dir=str(folder),
                frames=max(1, frames // shards),
                seed=run.seed + _SEED_STRIDE * shard,
                wandb=False,  # the driver's writer is the population's W&B run
            ),
        )

    # -- routing -----------------------------------------------------------------------

    @property
    def num_policies(self) -> int:
        return len(self.members)

    def _where(self, policy: int) -> tuple[Any, int]:
        shard, local = divmod(policy, self.per_shard)
        return self._shards[shard], local

    def _call(self, policy: int, name: str, *args: Any) -> Any:
        shard, local = self._where(policy)
        return self._ray.get(shard.call.remote(name, local, *args))

    def _on_every_shard(self, name: str, *args: Any) -> list[Any]:
        return self._ray.get([s.call.remote(name, *args) for s in self._shards])

    def _global(self, shard: int, local: int) -> int:
        if local < self.per_shard:
            return shard * self.per_shard + local
        return self.guests[shard][local - self.per_shard]

    # -- the population API of sf_train.run.steering.SteerableTrainer -----------------------

    def take_stats(self) -> list[PolicyStats]:
        stats = []
        for shard, found in enumerate(self._on_every_shard("take_stats")):
            for s in found[: self.per_shard]:
                policy = self._global(shard, s.policy)
                self.members[policy].frames = s.total_frames
                stats.append(dataclasses.replace(s, policy=policy))
        return stats

    def take_matches(self) -> list[MatchRecord]:
        matches = []
        for shard, found in enumerate(self._on_every_shard("take_matches")):
            for m in found:
                policies = tuple(self._global(shard, p) for p in m.policies)
                matches.append(dataclasses.replace(m, policies=policies))
        return matches

    def hyperparameters(self, policy: int) -> dict[str, float]:
        return self._call(policy, "hyperparameters")

    def set_hyperparameters(self, policy: int, values: dict[str, float]) -> None:
        self._call(policy, "set_hyperparameters", values)

    def shaping(self, policy: int) -> dict[str, float]:
        return self._call(policy, "shaping")

    def set_shaping(self, policy: int, weights: dict[str, float]) -> None:
        self._call(policy, "set_shaping", weights)

    def copy_policy(self, source: int, target: int) -> None:
        """PBT's exploit: within a shard its own copy; across shards the source's state goes to
        the target's shard through the object store, never through the driver."""
        (from_shard, from_local), (to_shard, to_local) = self._where(source), self._where(target)
        if from_shard is to_shard:
            self._ray.get(to_shard.call.remote("copy_policy", from_local, to_local))
            return
        state = from_shard.call.remote("export_policy", from_local)
        self._ray.get(to_shard.call.remote("import_policy", to_local, state))

    def freeze(self, policy: int, frozen: bool = True) -> None:
        self._call(policy, "freeze", frozen)

    def set_pairing(self, pairing: Pairing) -> None:
        """Refused: each shard pairs its own games; other shards' members come as guests."""
        from sf_train.config.schema import ConfigError

        raise ConfigError(
            [
                "a custom pairing with shards: each shard pairs its own games and meets the "
                "other shards' members as guests; train without --ray to choose the pairing"
            ]
        )

    def exchange_guests(self) -> None:
        """Draws each shard's guests anew among the other shards' members and sends them their
        weights (each member exported at most once per exchange)."""
        exported: dict[int, Any] = {}
        imports = []
        for shard, guests in enumerate(self.guests):
            others = [g for g in range(self.num_policies) if g // self.per_shard != shard]
            drawn = self._rng.choice(others, size=len(guests), replace=len(others) < len(guests))
            for slot, member in enumerate(drawn.tolist()):
                if member not in exported:
                    source, local = self._where(member)
                    exported[member] = source.call.remote("export_policy", local)
                target = self._shards[shard]
                local_guest = self.per_shard + slot
                imports.append(target.call.remote("import_policy", local_guest, exported[member]))
                guests[slot] = member
        self._ray.get(imports)
        log.info(
            "guests: %s",
            "; ".join(f"shard {k}: {g}" for k, g in enumerate(self.guests)),
        )

    #: Shards checkpoint without evaluating (members are judged by the league's games).
    eval_seconds = 0.0
    best_evaluation = None

    def save_checkpoint(self, final: bool = False) -> Path:
        """Writes every member's checkpoint into the population's run folder on the driver;
        returns the first member's. Nothing is evaluated, ``final`` or not."""
        self._refresh()
        paths = []
        for shard, states in enumerate(self._on_every_shard("member_states")):
            for local, (state, score) in enumerate(states):
                member = self.members[shard * self.per_shard + local]
                state["frames"] = self.frames
                paths.append(member.checkpoints.save(state, self.frames, score))
                member.mean_return = score
        return paths[0]

    def _refresh(self) -> None:
        frames = self.start_frames
        for shard, (shard_frames, member_frames) in enumerate(self._on_every_shard("progress")):
            frames += shard_frames
            for local, f in enumerate(member_frames):
                self.members[shard * self.per_shard + local].frames = f
        self.frames = frames

    def request_stop(self) -> None:
        self._on_every_shard("request_stop")

    def train(self) -> TrainResult:
        """Trains every shard to its share of the frames, steering the population from here
        meanwhile (``on_progress``, guest exchanges, a checkpoint of every member on the
        driver every ``checkpoint_every`` frames); then saves every member."""
        from sf_train.run.steering import end_training

        start, start_frames = time.perf_counter(), self.frames
        pending = [s.train.remote() for s in self._shards]
        while pending:
            done, pending = self._ray.wait(pending, num_returns=len(pending), timeout=_POLL_S)
            self._ray.get(done)  # a shard that failed raises here
            self._refresh()
            if pending and self.frames >= self._next_exchange:
                self.exchange_guests()
                self._next_exchange = _next(self.frames, self.split.guest_interval)
            if pending and self.frames >= self._next_checkpoint:
                self.save_checkpoint()
                self._next_checkpoint = _next(self.frames, self.cfg.run.checkpoint_every)
            if self.on_progress is not None:
                self.on_progress(None)
        return end_training(self, start, start_frames)

    def close(self) -> None:
        """Closes every shard's envs, then ends the actors; idempotent."""
        shards, self._shards = self._shards, []
        if shards:
            closing = [s.close.remote() for s in shards]
            self._ray.wait(closing, num_returns=len(closing), timeout=_CLOSE_TIMEOUT_S)
            for shard in shards:
                with contextlib.suppress(Exception):  # already dead
                    self._ray.kill(shard)
        self.writer.close()


def _next(frames: int, interval: int) -> int:
    """The first multiple of ``interval`` after ``frames``."""
    return (frames // interval + 1) * interval
