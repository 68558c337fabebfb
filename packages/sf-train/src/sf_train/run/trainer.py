"""The training loop: the sampler and the learner, concurrent (default) or synchronous.

Asynchronous mode runs the learner in a thread beside the sampler (torch releases the GIL in
its kernels, and ViZDoom runs in the engine's worker processes). The sampler acts with its own
copy of the policy, :class:`SharedWeights`, which the learner overwrites under a lock after each
training step; every step is tagged with the version it was sampled with, so the learner
measures policy lag and masks samples older than ``max_policy_lag``. A queue of one batch
between them bounds the lag to about two batches of updates.

The default is asynchronous with one torch thread per side: the learner's work overlaps the
sampler's, and more torch threads only fight the env workers for the cores (the measurements:
``docs/benchmarks/training.md``).

Synchronous mode (``run.sync``) steps all envs together, then learns, with zero policy lag; it
is for debugging and for exact resumption, which needs an env that can save its state
(:class:`~sf_train.sampling.protocols.StatefulEnv`; Doom episodes restart on resume).

What the loop logs and reports lives in :mod:`sf_train.run.reporting`, what a league steers in
:mod:`sf_train.run.steering`; both are mixins of :class:`Trainer`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sf_train.algo.learner import Learner
from sf_train.config.schema import Config, ConfigError, shaping_weights, validate
from sf_train.envs import agents_per_game, frames_per_step, game_variable_names, make_env
from sf_train.model.device import resolve_device
from sf_train.model.int8 import check_int8_support
from sf_train.model.network import ActorCritic
from sf_train.run.checkpointing import Checkpointing
from sf_train.run.episodes import EpisodeWindow
from sf_train.run.folder import checkpoints_of, policy_folder, prepare_run_folder
from sf_train.run.members import Member, Progress, SharedWeights, TrainResult
from sf_train.run.opponents import OpponentPool, opponent_envs_of
from sf_train.run.population import MatchBook
from sf_train.run.reporting import Reporting, open_summary_writer
from sf_train.run.steering import PopulationControl, end_training, tree_map
from sf_train.run.tracking import require_wandb
from sf_train.sampling.batch import CollectResult, TrajectoryBatch
from sf_train.sampling.pool import ProcessWeights, SamplerPool, resolve_num_samplers
from sf_train.sampling.protocols import (
    AsyncVectorEnv,
    Pairing,
    PolicySource,
    StatefulEnv,
    UniformPairing,
)
from sf_train.sampling.sampler import Sampler

__all__ = ["Progress", "SharedWeights", "TrainResult", "Trainer", "train"]

log = logging.getLogger(__name__)

WAIT_S = 0.1
"""Poll interval of every wait between the two threads, so errors and stops are seen quickly."""
JOIN_TIMEOUT_S = 60.0


def _to_torch(tree: Any) -> Any:
    # Checkpoints are loaded with weights_only=True, which accepts tensors but not arrays.
    return tree_map(tree, lambda x: torch.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x)


def _to_numpy(tree: Any) -> Any:
    return tree_map(tree, lambda x: x.numpy() if isinstance(x, torch.Tensor) else x)


class Trainer(Checkpointing, PopulationControl, Reporting):
    """Trains a policy, or a population of them, with APPO / V-trace into a run folder.

    Asynchronous with one torch thread per side is the default (see the module docstring).
    With ``algo.num_policies > 1`` the policies share the envs (each game's seats are drawn
    anew at every episode start) and the learner thread trains whichever policy's batch is
    ready; a league steers them between batches (from ``on_progress``) through
    :meth:`take_stats`, :meth:`take_matches`, :meth:`set_hyperparameters`,
    :meth:`set_shaping`, :meth:`copy_policy` (:meth:`export_policy` and :meth:`import_policy`
    across trainers), :meth:`freeze` and :meth:`set_pairing`.

    Args:
        cfg: The run's configuration (validated here).
        resume: Continue the run in ``cfg.run.run_dir`` from its latest checkpoint: frames,
            weights, optimiser, normalisers, learning rate, policy version and RNG states
            (and every policy's hyperparameters and shaping weights).
        on_progress: Called in the caller's thread after every batch.

    Raises:
        ConfigError: If ``cfg`` is invalid, or its shaping names variables the env lacks.
        RunFolderError: If the run folder does not fit ``resume`` (see
            :func:`~sf_train.run.folder.prepare_run_folder`).
        CheckpointError: If the checkpoint to resume from is unreadable.

    Example:
        >>> with Trainer(cfg) as trainer:  # doctest: +SKIP
        ...     result = trainer.train()
    """

    def __init__(
        self,
        cfg: Config,
        resume: bool = False,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        validate(cfg)
        self._created = time.perf_counter()  # the envs' start-up is priced from here
        if cfg.run.wandb:
            require_wandb()  # before any env starts
        opponent_envs = opponent_envs_of(cfg)
        self.cfg = cfg
        self.on_progress = on_progress
        self.device = resolve_device(cfg.run.device)
        self.run_dir = Path(cfg.run.run_dir)
        self._learn_lock = threading.Lock()  # held while a policy's weights change
        states = prepare_run_folder(cfg, resume)
        self._closed = False
        sync = cfg.run.sync
        batch_size = cfg.env.num_envs if sync else cfg.env.batch_size
        agents = agents_per_game(cfg.env)
        self.frame_skip = frames_per_step(cfg.env)
        """Env frames an agent step counts for (1 for envs that are not Doom)."""
        self.num_samplers = resolve_num_samplers(cfg, agents)
        """Sampler processes (1: the sampler runs in this process's main thread)."""
        envs: AsyncVectorEnv | SamplerPool = (
            SamplerPool(cfg, self.num_samplers, opponent_envs, agents)
            if self.num_samplers > 1
            else make_env(cfg.env, batch_size=batch_size)
        )
        self.venv = None if isinstance(envs, SamplerPool) else envs
        """The vector env this process steps; None with sampler processes (each steps its
        own, and :attr:`sampler` is their pool)."""
        try:
            self.variable_names = (
                envs.variable_names if isinstance(envs, SamplerPool) else game_variable_names(envs)
            )
            count = cfg.algo.num_policies
            torch.manual_seed(cfg.run.seed)
            learning_envs = np.setdiff1d(np.arange(cfg.env.num_envs), opponent_envs)
            shaping = self._checked_shaping(shaping_weights(cfg.algo))
            self.members = [
                self._new_member(p, sync, learning_envs, dict(shaping), envs) for p in range(count)
            ]
            self.generator = torch.Generator(self.device).manual_seed(cfg.run.seed + 1)
            B = len(learning_envs) // count
            # Async: one batch filling (two when envs straddle), one queued, one learning;
            # in a population one policy may hold every row, which fills n / B batches at once.
            spare = -(-len(learning_envs) // B) - 1
            num_batches = (3 if sync else 5) + spare
            self.sampler: Sampler | SamplerPool
            """Fills the trajectory batches: in this process, or a pool of sampler processes."""
            if isinstance(envs, SamplerPool):
                envs.attach(cfg.algo.rollout, B, num_batches)
                self.sampler = envs
            else:
                self.sampler = self._local_sampler(envs, B, num_batches, opponent_envs, agents)
            self.matches = MatchBook(agents, self.variable_names)
            self._opponents = OpponentPool(cfg.algo, cfg.run.seed) if len(opponent_envs) else None
            self.frames = 0
            self._start_checkpointing()
            if states is None:
                self.sampler.start(seed=cfg.run.seed)
            else:
                self._load_states(states)
            for member in self.members:
                self.set_shaping(member.index, member.shaping)
            self.writer = open_summary_writer(self.run_dir, cfg, self.frames)
            # A resumed run starts its pool anew, from the weights it resumes with.
            self._update_opponent(force=True)
        except BaseException:
            try:
                writer = getattr(self, "writer", None)  # set once the event file is open
                if writer is not None:
                    writer.close(failed=True)
            finally:
                envs.close()
            raise
        self._start_reporting(envs)
        self._next_checkpoint = self.frames + cfg.run.checkpoint_every
        self._last_checkpoint: Path | None = None
        self._stop_requested = False

    def _local_sampler(
        self,
        venv: AsyncVectorEnv,
        B: int,
        num_batches: int,
        opponent_envs: np.ndarray,
        agents: int,
    ) -> Sampler:
        """The sampler of this process, acting from its main thread."""
        return Sampler(
            venv,
            [m.weights.model for m in self.members],
            self.cfg.algo.rollout,
            B,
            self.device,
            num_batches=num_batches,
            generator=self.generator,
            bootstrap_truncations=self.cfg.algo.value_bootstrap,
            life_loss_ends=self.cfg.algo.life_loss_ends,
            opponent_envs=opponent_envs,
            pairing=UniformPairing(self.cfg.algo.num_policies, self.cfg.run.seed + 2),
            agents_per_game=agents,
        )

    def _new_member(
        self,
        index: int,
        sync: bool,
        learning_envs: np.ndarray,
        shaping: dict[str, float],
        envs: AsyncVectorEnv | SamplerPool,
    ) -> Member:
        cfg = self.cfg
        model = ActorCritic(envs.single_observation_space, envs.single_action_space, cfg.model).to(
            self.device
        )
        learner = Learner(model, cfg.algo, self.device)
        # Sync mode acts with the learner's own model, unless acting needs its own precision.
        precision = cfg.algo.precision
        if precision == "int8":
            check_int8_support(self.device)
        weights: SharedWeights | ProcessWeights
        if isinstance(envs, SamplerPool):  # each sampler process makes its acting copy
            weights = envs.weights_for(model)
        else:
            acting = model if sync and precision == "float32" else model.acting_copy(precision)
            weights = SharedWeights(acting)
        folder = policy_folder(self.run_dir, index, cfg.algo.num_policies)
        checkpoints = checkpoints_of(folder, cfg.run.keep_checkpoints)
        return Member(index, learner, weights, learning_envs, checkpoints, shaping)

    def _checked_shaping(self, weights: dict[str, float]) -> dict[str, float]:
        unknown = sorted(weights.keys() - set(self.variable_names))
        if unknown:
            known = ", ".join(self.variable_names) or "none"
            raise ConfigError(
                [
                    f"algo.shaping names {', '.join(unknown)}, which {self.cfg.env.env} does "
                    f"not report: use its game variables ({known})"
                ]
            )
        return weights

    # -- the first policy (the only one, unless a population) ----------------------------

    @property
    def learner(self) -> Learner:
        return self.members[0].learner

    @property
    def weights(self) -> SharedWeights:
        return self.members[0].weights

    @property
    def returns(self) -> EpisodeWindow:
        return self.members[0].returns

    @property
    def mean_return(self) -> float | None:
        """Mean return of the last episodes, an equal share from every env, or None until
        every env has ended one (:class:`~sf_train.run.episodes.EpisodeWindow`); the first
        policy's in a population."""
        return self.returns.mean()

    @property
    def num_policies(self) -> int:
        return len(self.members)

    def set_pairing(self, pairing: Pairing) -> None:
        """Chooses who plays each game's next episode (see
        :data:`~sf_train.sampling.protocols.Pairing`)."""
        self.sampler.set_pairing(pairing)

    # -- state ---------------------------------------------------------------------------

    @property
    def _exact(self) -> tuple[StatefulEnv, Sampler] | None:
        """The env and the sampler whose states a checkpoint keeps when the run can resume
        exactly: in sync mode (the only deterministic interleaving of envs and learner), with
        one policy and an env that can save its state; else None."""
        venv, sampler = self.venv, self.sampler
        if (
            self.cfg.run.sync
            and self.num_policies == 1
            and isinstance(venv, StatefulEnv)
            and isinstance(sampler, Sampler)
        ):
            return venv, sampler
        return None

    def state_dict(self, policy: int = 0) -> dict[str, Any]:
        """Everything needed to continue this run's ``policy`` (with one policy: the run);
        tensors are live (copy before writing)."""
        member = self.members[policy]
        learner = member.learner
        state: dict[str, Any] = {
            **learner.state_dict(),
            "version": learner.version,
            "frames": self.frames,
            "policy_frames": member.frames,
            "hyperparameters": self.hyperparameters(policy),
            "shaping": dict(member.shaping),
            "episode_returns": member.returns.state_dict(),
            "episode_lengths": member.lengths.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "sampler_rng": self.generator.get_state(),
        }
        if torch.cuda.is_available():
            state["cuda_rng"] = torch.cuda.get_rng_state_all()
        exact = self._exact
        if exact is not None:
            venv, sampler = exact
            state["env"] = _to_torch(venv.state_dict())
            state["sampler"] = _to_torch(sampler.state_dict())
        return state

    def load_policy(self, policy: int, state: dict[str, Any]) -> None:
        """Restores ``policy`` from a checkpoint's state (:meth:`state_dict`), e.g. of a run
        resumed in another trainer: weights, optimiser, version, learning rate,
        hyperparameters, shaping, its frames and episode windows. The run's own frames and
        random states are not touched."""
        member = self.members[policy]
        with self._learn_lock:
            learner = member.learner
            learner.load_state_dict(state)
            learner.version = int(state["version"])
            if "hyperparameters" in state:  # older checkpoints kept the config's values
                learner.cfg = dataclasses.replace(learner.cfg, **state["hyperparameters"])
            member.weights.publish(learner.model, learner.version)
        member.frames = int(state.get("policy_frames", state["frames"]))
        if "episode_returns" in state:  # older checkpoints kept no per-env window
            member.returns.load_state_dict(state["episode_returns"])
            member.lengths.load_state_dict(state["episode_lengths"])
        member.checkpoints.best_return = state.get("best_return")
        self.set_shaping(policy, dict(state.get("shaping", member.shaping)))

    def _load_states(self, states: list[dict[str, Any]]) -> None:
        for member, state in zip(self.members, states, strict=True):
            self.load_policy(member.index, state)
        state = states[0]
        self.frames = int(state["frames"])
        torch.set_rng_state(state["torch_rng"])
        self.generator.set_state(state["sampler_rng"])
        if "cuda_rng" in state and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        exact = self._exact
        if "sampler" in state and exact is not None:
            venv, sampler = exact
            venv.load_state_dict(_to_numpy(state["env"]))
            sampler.load_state_dict(_to_numpy(state["sampler"]))
        else:
            # An env that cannot save its state (Doom) starts fresh episodes, seeded apart.
            self.sampler.start(seed=self.cfg.run.seed + self.frames)
        log.info(
            "resumed %s at %d frames, policy versions %s",
            self.run_dir,
            self.frames,
            ", ".join(str(m.learner.version) for m in self.members),
        )

    def _update_opponent(self, force: bool = False) -> None:
        """With an opponent pool: adds a frozen copy of the sampler's weights every
        ``opponent_snapshot_every`` versions and draws the next opponent from the pool."""
        pool = self._opponents
        if pool is None:
            return
        with self.weights.acting() as version:
            if not (force or pool.due(version)):
                return
            frozen = copy.deepcopy(self.weights.model.state_dict())
        drawn_version, weights = pool.add_and_draw(version, frozen)
        self.sampler.set_opponent(weights)
        self.writer.add_scalar("self_play/opponent_age", version - drawn_version, self.frames)
        self.writer.add_scalar("self_play/pool_size", len(pool), self.frames)

    # -- loops ---------------------------------------------------------------------------

    def _progress(self) -> float:
        """How far training is, 0 to 1: by frames, or by seconds when those run out first."""
        progress = self.frames / self.cfg.run.frames
        if self.cfg.run.seconds > 0 and self._train_started is not None:
            progress = max(
                progress, (time.perf_counter() - self._train_started) / self.cfg.run.seconds
            )
        return min(1.0, progress)

    def request_stop(self) -> None:
        """Ends :meth:`train` after the current batch (e.g. from ``on_progress``), which then
        writes its final checkpoint as usual."""
        self._stop_requested = True

    def _running(self) -> bool:
        return self._progress() < 1.0 and not self._stop_requested

    def _collected(self, sources: Sequence[int | PolicySource]) -> CollectResult:
        """The next complete trajectory batch, its frames counted (the run's and each policy's:
        nowhere else) and logged."""
        collected = self.sampler.collect(sources)
        if self._startup_seconds is None:
            self._startup_seconds = time.perf_counter() - self._created
        frame_skip = self.frame_skip
        self.frames += collected.env_steps * frame_skip
        for member, steps in zip(self.members, collected.policy_steps.tolist(), strict=True):
            member.frames += steps * frame_skip
            member.since.frames += steps * frame_skip
        self._record_batch(collected)
        return collected

    def _learn(self, member: Member, batch: TrajectoryBatch) -> dict[str, float]:
        """One learner update of ``member`` on ``batch``, then its weights published to the
        copy the sampler acts with (a no-op copy where that is the learner's own model), in
        both modes: a copy left unpublished plays the initial weights all run."""
        with self._learn_lock:
            stats = member.learner.train(batch, self._progress())
            member.weights.publish(member.learner.model, member.learner.version)
        return stats

    def _train_sync(self) -> None:
        while self._running():
            collected = self._collected([m.learner.version for m in self.members])
            self._update_opponent()
            member = self.members[collected.policy]
            if not member.frozen:
                self._record_stats(collected.policy, self._learn(member, collected.batch))
            self.sampler.release(collected.batch)
            self._report()
            self._maybe_checkpoint()

    def _train_async(self, threads: int) -> None:
        batches: queue.Queue[CollectResult | None] = queue.Queue(maxsize=1)
        results: queue.Queue[tuple[int, dict[str, float]]] = queue.Queue()
        failure: list[BaseException] = []
        stop = threading.Event()

        def learn() -> None:
            torch.set_num_threads(threads)
            try:
                while not stop.is_set():
                    try:
                        collected = batches.get(timeout=WAIT_S)
                    except queue.Empty:
                        continue
                    if collected is None:
                        return
                    member = self.members[collected.policy]
                    if not member.frozen:
                        results.put((member.index, self._learn(member, collected.batch)))
                    self.sampler.release(collected.batch)
            except BaseException as e:  # re-raised in the sampler's thread
                failure.append(e)
                stop.set()

        def drain() -> None:
            while True:
                try:
                    self._record_stats(*results.get_nowait())
                except queue.Empty:
                    return

        def hand_over(item: CollectResult | None) -> None:
            while not stop.is_set():
                try:
                    batches.put(item, timeout=WAIT_S)
                    return
                except queue.Full:
                    continue

        thread = threading.Thread(target=learn, name="sf-train-learner", daemon=True)
        thread.start()
        try:
            while self._running() and not stop.is_set():
                collected = self._collected([m.weights.acting for m in self.members])
                self._update_opponent()
                hand_over(collected)
                drain()
                self._report()
                self._maybe_checkpoint()
            hand_over(None)
            thread.join(JOIN_TIMEOUT_S)
            if thread.is_alive():
                raise RuntimeError(
                    f"the learner thread did not finish within {JOIN_TIMEOUT_S:.0f} s; "
                    "a training step is hung (check the device)"
                )
            drain()
        finally:
            stop.set()
            thread.join(JOIN_TIMEOUT_S)
        if failure:
            raise RuntimeError("the learner thread failed") from failure[0]

    def train(self) -> TrainResult:
        """Trains until ``cfg.run.frames``, then writes a final checkpoint."""
        if self._closed:
            raise RuntimeError("this Trainer is closed; create a new one (with resume=True)")
        threads = self.cfg.run.torch_threads or 1
        previous = torch.get_num_threads()
        start_frames, start = self.frames, time.perf_counter()
        self._train_started, self._train_started_frames = start, start_frames
        self._fps_window.append((start, self.frames))
        self._next_checkpoint_time = start + self.cfg.run.checkpoint_seconds
        if self.frames >= self.cfg.run.frames:
            log.warning("run already at %d frames: raise --frames to train longer", self.frames)
        try:
            torch.set_num_threads(threads)
            if self.cfg.run.sync:
                self._train_sync()
            else:
                self._train_async(threads)
        finally:
            torch.set_num_threads(previous)
        return end_training(self, start, start_frames, self.worker_restarts, self.dropped_frames)

    def close(self, failed: bool = False) -> None:
        """Closes the envs and the event file, and finishes the W&B run (marked failed if
        ``failed``) with ``run.wandb``; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.writer.close(failed)
        finally:
            # What steps the envs: the sampler processes, or this process's vector env.
            close = getattr(self.venv if self.venv is not None else self.sampler, "close", None)
            if close is not None:
                close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close(failed=exc_type is not None)


def train(
    cfg: Config, resume: bool = False, on_progress: Callable[[Progress], None] | None = None
) -> TrainResult:
    """Builds a :class:`Trainer`, trains it to ``cfg.run.frames`` and closes it."""
    with Trainer(cfg, resume=resume, on_progress=on_progress) as trainer:
        return trainer.train()
