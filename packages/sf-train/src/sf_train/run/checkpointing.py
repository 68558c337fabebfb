"""When a :class:`~sf_train.run.trainer.Trainer` writes checkpoints and how it judges them: every
``run.checkpoint_every`` frames (or ``run.checkpoint_seconds``), each policy's copy evaluated
without bias to decide ``best.pt``, within ``run.eval_share`` of the wall time. A mixin of the
trainer, whose state it uses."""

from __future__ import annotations

import copy
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sf_train.evaluation import evaluate_policy
from sf_train.model.network import ActorCritic
from sf_train.run.members import Member

if TYPE_CHECKING:
    import torch

    from sf_train.config.schema import Config
    from sf_train.run.tracking import RunWriter

__all__ = ["Checkpointing"]

log = logging.getLogger(__name__)


class Checkpointing:
    """Checkpoints and their evaluations (see the module docstring)."""

    eval_seconds: float
    """Wall time spent evaluating checkpoints in this session."""
    evaluations: list[tuple[int, dict[str, Any]]]
    """(frames, :meth:`EvalResult.summary`) of each checkpoint evaluated this session (of the
    first policy, in a population)."""
    best_evaluation: tuple[int, dict[str, Any]] | None
    """(frames, :meth:`EvalResult.summary`) of the evaluation that made the first policy's
    current ``best.pt`` in this session; None while it is from an earlier session or none."""

    if TYPE_CHECKING:  # the trainer's state that this mixin reads
        cfg: Config
        members: list[Member]
        frames: int
        frame_skip: int
        device: torch.device
        writer: RunWriter
        _learn_lock: threading.Lock
        _next_checkpoint: int
        _next_checkpoint_time: float
        _last_checkpoint: Path | None

        @property
        def num_policies(self) -> int: ...
        def state_dict(self, policy: int = 0) -> dict[str, Any]: ...
        def _progress(self) -> float: ...
        def _tag(self, member: Member, tag: str) -> str: ...

    def _start_checkpointing(self) -> None:
        """Sets what this mixin keeps (from the trainer's ``__init__``)."""
        self.eval_seconds = 0.0
        self.evaluations = []
        self.best_evaluation = None
        self._saved: tuple[int, bool] | None = None  # (frames, evaluated) of the last save
        self._last_eval_seconds = 0.0
        self._last_eval_steps = 0.0  # of every policy's episodes
        self._last_eval_episodes = 0  # of each policy
        self._train_started: float | None = None
        self._train_started_frames = 0
        # Seconds from the trainer's creation to its first batch: what starting a vector env
        # of these games costs, which every evaluation pays again before its first step (16
        # duels with scripted players take tens of seconds).
        self._startup_seconds: float | None = None

    def states(self) -> list[dict[str, Any]]:
        """Every policy's :meth:`state_dict`, copied while the learner pauses (what a checkpoint
        holds, e.g. for a caller that writes it elsewhere)."""
        with self._learn_lock:
            return self._copied_states()

    def _copied_states(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(self.state_dict(m.index)) for m in self.members]

    def save_checkpoint(self, final: bool = False) -> Path:
        """Writes a checkpoint of every policy atomically (the learner pauses only while they
        are copied), after evaluating each (``run.eval_episodes``) to decide whether it is
        that policy's best so far; returns the first policy's. Within ``run.eval_share`` of
        the wall time a checkpoint may go unevaluated (and cannot become best); a ``final``
        one is always evaluated, and not again if the last checkpoint is of the same frames."""
        evaluating = self.cfg.run.eval_episodes > 0
        if final and self._last_checkpoint is not None and self._saved is not None:
            frames, was_evaluated = self._saved
            if frames == self.frames and (was_evaluated or not evaluating):
                return self._last_checkpoint
        evaluated = evaluating and (final or self._evaluation_fits())
        episodes = self._final_episodes() if final and evaluated else self.cfg.run.eval_episodes
        with self._learn_lock:
            states = self._copied_states()
            models = [copy.deepcopy(m.learner.model) if evaluated else None for m in self.members]
        started = time.perf_counter()
        paths = []
        steps = 0.0
        for member, state, model in zip(self.members, states, models, strict=True):
            summary = self._evaluate(model, member, episodes) if model is not None else None
            if summary is not None:
                steps += summary["episodes"] * summary["length_mean"]
                score: float | None = summary["return_mean"]
            else:
                score = None if evaluating else member.returns.mean()
            best_before = member.checkpoints.best_return
            paths.append(member.checkpoints.save(state, self.frames, score))
            made_best = score is not None and member.checkpoints.best_return != best_before
            if member.index == 0 and made_best and summary is not None:
                self.best_evaluation = (self.frames, summary)
        if evaluated:
            self._last_eval_seconds = time.perf_counter() - started
            self._last_eval_steps = steps
            self._last_eval_episodes = episodes
            self.eval_seconds += self._last_eval_seconds
        self._saved = (self.frames, evaluated)
        self._last_checkpoint = paths[0]
        return paths[0]

    def _evaluation_fits(self) -> bool:
        """Whether one more evaluation keeps all of them within ``run.eval_share`` of the wall
        time since training started, and leaves room in that share of the whole run for a
        full final one (the run's length projected from its progress)."""
        share = self.cfg.run.eval_share
        if share >= 1 or self._train_started is None:
            return True
        elapsed = time.perf_counter() - self._train_started
        projected = elapsed / max(self._progress(), 1e-9)
        cost = self._startup() + self.cfg.run.eval_episodes * self._episode_seconds()
        return (
            self.eval_seconds + cost <= share * elapsed
            and self.eval_seconds + 2 * cost <= share * projected
        )

    def _final_episodes(self) -> int:
        """Episodes of the final evaluation, which is always made: ``run.eval_episodes``, or as
        many whole rounds (every env one episode) as the rest of ``run.eval_share`` of the run
        pays for, at least one. Long matches on a short run cannot afford a full one: 100
        two-minute bot matches would take more of a five-minute run than its training."""
        episodes = self.cfg.run.eval_episodes
        share = self.cfg.run.eval_share
        per_episode = self._episode_seconds()
        if share >= 1 or self._train_started is None or per_episode <= 0:
            return episodes
        room = share * (time.perf_counter() - self._train_started) - self.eval_seconds
        room -= self._startup()
        round_ = min(self.cfg.env.num_envs, episodes)
        fitting = min(episodes, max(round_, int(room / per_episode) // round_ * round_))
        if fitting < episodes:
            log.info(
                "final evaluation over %d episodes, not run.eval_episodes=%d: more would take "
                "evaluations past run.eval_share=%g of the wall time",
                fitting,
                episodes,
                share,
            )
        return fitting

    def _episode_seconds(self) -> float:
        """What evaluating one more episode of every policy should take: at the last
        evaluation's seconds per step (before any, training's: an evaluation steps as many
        envs and does not learn), for episodes as long as the training episodes now are and
        no shorter than the last evaluation's. An agent that learns to survive makes each
        evaluation longer than the last (on health gathering, tenfold in a few minutes)."""
        lengths = [m.lengths.mean() for m in self.members]
        if any(length is None for length in lengths):
            # No episode has ended yet: each is at least as long as training has gone on.
            lengths = [self._steps_trained() / self.cfg.env.num_envs] * len(lengths)
        steps = float(sum(lengths))  # type: ignore[arg-type]
        if self._last_eval_episodes:
            stepping = max(self._last_eval_seconds - self._startup(), 0.0)
            per_step = stepping / max(self._last_eval_steps, 1.0)
            return per_step * max(steps, self._last_eval_steps / self._last_eval_episodes)
        trained = self._steps_trained()
        if self._train_started is None or trained <= 0:
            return 0.0
        return (time.perf_counter() - self._train_started) / trained * steps

    def _startup(self) -> float:
        """What an evaluation's envs should take to start (see ``_startup_seconds``)."""
        return self._startup_seconds or 0.0

    def _steps_trained(self) -> float:
        """Env steps (of all envs) trained in this session."""
        return (self.frames - self._train_started_frames) / self.frame_skip

    def _evaluate(self, model: ActorCritic, member: Member, episodes: int) -> dict[str, Any]:
        """An unbiased evaluation of ``model`` (:meth:`EvalResult.summary`), logged under
        ``eval/`` (and to the W&B run as a table, ``eval/summaries``)."""
        result = evaluate_policy(
            self.cfg,
            model.eval(),
            episodes,
            device=self.device,
            greedy=self.cfg.run.eval_greedy,
            seed=self.cfg.run.seed + self.frames,  # apart from `sf-train eval`'s 12345
        )
        summary = result.summary()
        if member.index == 0:
            self.evaluations.append((self.frames, summary))
        for key in ("return_mean", "return_median", "length_mean", "timeout_fraction"):
            self.writer.add_scalar(self._tag(member, f"eval/{key}"), summary[key], self.frames)
        self.writer.add_evaluation(self._tag(member, "eval/summaries"), summary, self.frames)
        log.info(
            "%sevaluation%s at %d frames: return %.2f ± %.2f (median %.2f, %.0f%% time-outs, %d "
            "episodes)",
            "greedy " if result.greedy else "",
            f" of policy {member.index}" if self.num_policies > 1 else "",
            self.frames,
            summary["return_mean"],
            summary["return_std"],
            summary["return_median"],
            100 * summary["timeout_fraction"],
            summary["episodes"],
        )
        return summary

    def _maybe_checkpoint(self) -> None:
        seconds = self.cfg.run.checkpoint_seconds
        due_by_time = seconds > 0 and time.perf_counter() >= self._next_checkpoint_time
        if self.frames >= self._next_checkpoint or due_by_time:
            self.save_checkpoint()
            every = self.cfg.run.checkpoint_every
            self._next_checkpoint = (self.frames // every + 1) * every
            if seconds > 0:
                # On a fixed grid from the start, however long the save took.
                now = time.perf_counter()
                while self._next_checkpoint_time <= now:
                    self._next_checkpoint_time += seconds
