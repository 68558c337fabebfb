"""What a :class:`~sf_train.run.trainer.Trainer` tells its watchers about training: TensorBoard
scalars (speed, episodes, game variables, learner stats, faults; CleanRL's tags where it has
one), mirrored to Weights & Biases with ``run.wandb`` (:mod:`sf_train.run.tracking`), and the
:class:`~sf_train.run.members.Progress` handed to ``on_progress`` after every batch. A mixin of
the trainer, whose state it uses, so the training loop reads without its logging."""

from __future__ import annotations

import collections
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sf_train.config.schema import Config, config_to_dict
from sf_train.run.members import Member, Progress
from sf_train.run.tracking import RunWriter, open_run_writer
from sf_train.sampling.batch import CollectResult, Episodes
from sf_train.sampling.protocols import RestartingEnv

if TYPE_CHECKING:
    from sf_train.algo.learner import Learner
    from sf_train.run.population import MatchBook

__all__ = ["Reporting", "open_summary_writer"]

log = logging.getLogger(__name__)


def open_summary_writer(run_dir: Path, cfg: Config, frames: int) -> RunWriter:
    """Opens the run's TensorBoard event file (and its W&B run, with ``run.wandb``) and writes
    the config into it.

    A resumed run (``frames > 0``) purges the steps logged after its checkpoint, which it is
    about to train again, so that no series shows them twice.

    Raises:
        OptionError: If ``run.wandb`` is set and wandb is not installed.
    """
    writer = open_run_writer(
        run_dir, config_to_dict(cfg), purge_step=frames or None, tracked=cfg.run.wandb
    )
    writer.add_text("hyperparameters", _hyperparameter_table(cfg), frames)
    return writer


def _hyperparameter_table(cfg: Config) -> str:
    """The config as the markdown table CleanRL writes to TensorBoard, one ``|param|value|``
    row per field, e.g. ``|algo.gamma|0.99|``."""
    rows = ["|param|value|", "|-|-|"]
    for section, fields in config_to_dict(cfg).items():
        for name, value in fields.items():
            cell = str(value).replace("|", r"\|")  # a bare pipe would end the cell
            rows.append(f"|{section}.{name}|{cell}|")
    return "\n".join(rows)


class Reporting:
    """TensorBoard logging and progress reports of a trainer (see the module docstring)."""

    writer: RunWriter
    """The run's event file (:func:`open_summary_writer`); a league logs into it too."""
    worker_restarts: int
    """Vector workers restarted in this session (logged, and ``perf/worker_restarts``)."""
    dropped_frames: int
    """Frames discarded because of faults in this session (``perf/dropped_frames``)."""

    if TYPE_CHECKING:  # the trainer's state that this mixin reads
        cfg: Config
        members: list[Member]
        frames: int
        frame_skip: int
        variable_names: tuple[str, ...]
        matches: MatchBook
        on_progress: Callable[[Progress], None] | None

        @property
        def num_policies(self) -> int: ...
        @property
        def mean_return(self) -> float | None: ...
        @property
        def learner(self) -> Learner: ...
        def _progress(self) -> float: ...

    def _start_reporting(self, envs: object) -> None:
        """Sets the counters and windows this mixin keeps (from the trainer's ``__init__``);
        ``envs`` steps the envs (the vector env, or the sampler processes) and may count
        restarts (:class:`~sf_train.sampling.protocols.RestartingEnv`)."""
        self._fps_window: collections.deque[tuple[float, int]] = collections.deque(maxlen=20)
        self._last_lag: float | None = None
        self.worker_restarts = 0
        self.dropped_frames = 0
        self._restarting = envs if isinstance(envs, RestartingEnv) else None

    def _tag(self, member: Member, tag: str) -> str:
        """TensorBoard tag of a policy's series: as is for one policy, ``p<i>/...`` else."""
        return tag if self.num_policies == 1 else f"p{member.index}/{tag}"

    def _record_batch(self, collected: CollectResult) -> None:
        """Logs what collecting a trajectory batch did (the trainer has counted its frames)."""
        frame_skip = self.frame_skip
        self._record_faults(collected)
        now = time.perf_counter()
        self._fps_window.append((now, self.frames))
        (t0, f0) = self._fps_window[0]
        write = self.writer.add_scalar
        if now > t0:
            fps = (self.frames - f0) / (now - t0)
            write("perf/fps", fps, self.frames)
            write("charts/SPS", fps / frame_skip, self.frames)  # CleanRL's tag
        episodes = collected.episodes
        if not len(episodes):
            return
        variables = episodes.variables
        if variables is not None and variables.shape[1] != len(self.variable_names):
            variables = None
        self.matches.add(
            episodes.env_ids, episodes.policies, episodes.versions, episodes.returns, variables
        )
        for member in self.members:
            ended = episodes.policies == member.index
            if ended.any():
                self._record_episodes(member, episodes, ended, variables)

    def _record_episodes(
        self, member: Member, episodes: Episodes, ended: np.ndarray, variables: np.ndarray | None
    ) -> None:
        """Logs one policy's episodes that ended (``ended``: their rows in ``episodes``)."""
        write = self.writer.add_scalar
        tag = functools.partial(self._tag, member)
        env_ids, returns = episodes.env_ids[ended], episodes.returns[ended]
        member.returns.add(env_ids, returns)
        member.lengths.add(env_ids, episodes.lengths[ended])
        if member.returns.ready:
            write(tag("charts/episodic_return"), member.returns.mean(), self.frames)
            write(tag("charts/episodic_length"), member.lengths.mean(), self.frames)
        # The plain mean of the episodes in the order they ended, for comparison.
        write(tag("charts/episodic_return_by_completion"), float(returns.mean()), self.frames)
        shaping = episodes.shaping[ended]
        member.since.episodes += len(returns)
        member.since.shaping += float(shaping.sum())
        if any(w for w in member.shaping.values()):
            write(tag("charts/shaping_return"), float(shaping.mean()), self.frames)
        if variables is None:
            return
        columns = dict(zip(self.variable_names, variables[ended].T, strict=True))
        for name, column in columns.items():
            write(tag(f"game/{name}"), float(column.mean()), self.frames)
        if "frags" in columns and "deaths" in columns:
            objective = columns["frags"] - columns["deaths"]
            member.since.objective += float(objective.sum())
            member.since.objectives += len(objective)
            write(tag("charts/true_objective"), float(objective.mean()), self.frames)

    def _record_faults(self, collected: CollectResult) -> None:
        """Logs worker restarts and the experience they cost (also to TensorBoard)."""
        self.dropped_frames += collected.dropped_steps * self.frame_skip
        self.writer.add_scalar("perf/dropped_frames", self.dropped_frames, self.frames)
        if self._restarting is None:
            return
        restarts = self._restarting.worker_restarts
        if restarts > self.worker_restarts:
            log.warning(
                "%d vector worker restart(s) at %d frames (%d in this session): their envs' "
                "unfinished trajectories are dropped (%d frames of experience so far) and "
                "training goes on",
                restarts - self.worker_restarts,
                self.frames,
                restarts,
                self.dropped_frames,
            )
            self.worker_restarts = restarts
        self.writer.add_scalar("perf/worker_restarts", restarts, self.frames)

    def _record_stats(self, policy: int, stats: dict[str, float]) -> None:
        member = self.members[policy]
        for tag, value in stats.items():
            self.writer.add_scalar(self._tag(member, tag), value, self.frames)
        # CleanRL's tag
        self.writer.add_scalar(
            self._tag(member, "charts/learning_rate"), stats["train/lr"], self.frames
        )
        member.entropy = stats.get("losses/entropy")
        self._last_lag = stats.get("train/policy_lag_avg")

    def _report(self) -> None:
        if self.on_progress is None:
            return
        (t0, f0), (t1, f1) = self._fps_window[0], self._fps_window[-1]
        self.on_progress(
            Progress(
                frames=self.frames,
                total_frames=self.cfg.run.frames,
                fps=(f1 - f0) / (t1 - t0) if t1 > t0 else 0.0,
                mean_return=self.mean_return,
                policy_lag=self._last_lag,
                version=self.learner.version,
                returns=tuple(m.returns.mean() for m in self.members),
                done=self._progress(),
            )
        )
