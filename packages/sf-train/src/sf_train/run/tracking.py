"""Experiment tracking: the run's TensorBoard event file, mirrored to Weights & Biases on request.

:class:`RunWriter` is the ``SummaryWriter`` that a trainer logs into; given a W&B run
(``run.wandb``, ``--wandb``), each scalar and text it writes goes to that run too, under the
same tag, with the same step (frames) and value, so both show the same curves. The W&B run also
gets the config and a table of the checkpoint evaluations (:meth:`RunWriter.add_evaluation`).

Why forwarding rather than W&B's own TensorBoard sync (``sync_tensorboard=True``): the sync
patches ``SummaryWriter`` for the whole process and reads the event files back in a background
thread, so what arrives and when depends on that thread, and a resumed run's purged steps are
not purged there. Forwarding each call is synchronous and works offline like any other W&B
logging.

Why the frames are a ``global_step`` value rather than W&B's own step: W&B keeps one history row
per step, and a second value of a tag at the same step replaces the first, while TensorBoard
keeps both (a trainer logs two learner updates at the same frames when both finish during one
batch). So every series is plotted against ``global_step`` (``define_metric``, as W&B's
TensorBoard sync does too), and the writer gathers the values of one step into one row, starting
a new row when a tag comes again.

``wandb`` is an optional dependency (``pip install 'sf-train[wandb]'``), imported only when
a run asks for it. Where the W&B run lives and is called follows the usual ``WANDB_*``
environment variables; unset, it is named after the run folder and writes its files inside
it (``RUN_DIR/wandb/``), not into the working directory.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from torch.utils.tensorboard import SummaryWriter

from sf_envs.errors import OptionError

__all__ = [
    "WANDB_PROJECT",
    "RunWriter",
    "finish_wandb_run",
    "log_video",
    "open_run_writer",
    "require_wandb",
    "start_wandb_run",
    "wandb_run",
]

WANDB_PROJECT = "sf"
"""The W&B project of a run when ``WANDB_PROJECT`` is not set."""


def require_wandb() -> ModuleType:
    """The ``wandb`` module.

    Raises:
        OptionError: If it is not installed, naming the fix.
    """
    try:
        import wandb
    except ImportError as e:
        raise OptionError(
            f"--wandb needs the wandb package ({e.name} is missing): pip install 'sf-train[wandb]'"
        ) from e
    return wandb


def _unless_set(variable: str, value: str) -> str | None:
    """``value``, or None where the environment sets ``variable``: W&B's arguments outrank its
    environment variables, so a default is passed only where the user has not chosen."""
    return None if os.environ.get(variable) else value


def start_wandb_run(
    run_dir: str | os.PathLike[str], config: Mapping[str, Any], job_type: str
) -> Any:
    """Starts a W&B run for the run folder ``run_dir``: named and grouped after the folder (a
    resumed run's sessions and its videos share a group), its files in ``run_dir/wandb/``,
    in project :data:`WANDB_PROJECT`, each only where no ``WANDB_*`` variable says otherwise.

    Args:
        run_dir: The run folder.
        config: What the W&B run records as its config (the run's ``config_to_dict``).
        job_type: What the run does, e.g. ``"train"`` or ``"enjoy"``.

    Returns:
        The ``wandb`` run, a run of its own even if another one is active in this process;
        end it with :func:`finish_wandb_run` (or use :func:`wandb_run`).

    Raises:
        OptionError: If wandb is not installed.
    """
    wandb = require_wandb()
    folder = Path(run_dir).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    return wandb.init(
        project=_unless_set("WANDB_PROJECT", WANDB_PROJECT),
        name=_unless_set("WANDB_NAME", folder.name),
        group=_unless_set("WANDB_RUN_GROUP", folder.name),
        job_type=_unless_set("WANDB_JOB_TYPE", job_type),
        dir=_unless_set("WANDB_DIR", str(folder)),
        config=dict(config),
        reinit="create_new",
    )


def finish_wandb_run(run: Any, failed: bool = False) -> None:
    """Finishes ``run`` (marked failed if ``failed``) and, unless another run is still active
    in this process, ends W&B's service process too, so none outlives the caller's work."""
    wandb = require_wandb()
    try:
        run.finish(exit_code=1 if failed else 0)
    finally:
        if wandb.run is None:
            wandb.teardown()


@contextlib.contextmanager
def wandb_run(
    run_dir: str | os.PathLike[str], config: Mapping[str, Any], job_type: str
) -> Iterator[Any]:
    """:func:`start_wandb_run` as a context manager that finishes the run however the block
    ends (marked failed on an exception, Ctrl-C included)."""
    run = start_wandb_run(run_dir, config, job_type)
    failed = True
    try:
        yield run
        failed = False
    finally:
        finish_wandb_run(run, failed)


def log_video(
    run_dir: str | os.PathLike[str], config: Mapping[str, Any], video: Path, caption: str
) -> None:
    """Logs a video of the run's policy (``sf-train enjoy --wandb``) as ``enjoy/video`` in a
    W&B run of its own (job type ``enjoy``, in the training run's group), finished at once.

    Raises:
        OptionError: If wandb is not installed.
    """
    wandb = require_wandb()
    with wandb_run(run_dir, config, "enjoy") as run:
        run.log({"enjoy/video": wandb.Video(str(video), caption=caption)})


class RunWriter(SummaryWriter):
    """The run's TensorBoard event file, each scalar and text also logged to ``wandb_run``
    with its step as ``global_step`` (see the module docstring).

    Args:
        log_dir: The folder of the event file (the run folder).
        purge_step: Steps from this one on that the event file drops (a resumed run trains
            them again); the W&B run, a new one per session, has none to drop.
        wandb_run: The W&B run to mirror to (:func:`start_wandb_run`), which :meth:`close`
            finishes; None: TensorBoard alone.
    """

    STEP = "global_step"
    """The W&B key of the steps, which every series of the W&B run is plotted against."""

    def __init__(
        self, log_dir: str | os.PathLike[str], purge_step: int | None = None, wandb_run: Any = None
    ) -> None:
        super().__init__(str(log_dir), purge_step=purge_step)
        self.wandb_run = wandb_run
        self._row: dict[str, Any] = {}  # the W&B history row being gathered: one step's values
        self._row_lock = threading.Lock()
        self._evaluations: dict[str, list[list[Any]]] = {}
        if wandb_run is not None:
            wandb_run.define_metric(self.STEP)
            wandb_run.define_metric("*", step_metric=self.STEP)

    def _mirror(self, tag: str, value: Any, step: int | None) -> None:
        if self.wandb_run is None:
            return
        with self._row_lock:
            if self._row and (self._row[self.STEP] != step or tag in self._row):
                self._send_row()
            self._row[self.STEP] = step
            self._row[tag] = value

    def _send_row(self) -> None:
        if self._row and self.wandb_run is not None:
            self.wandb_run.log(self._row)
        self._row = {}

    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        super().add_scalar(tag, scalar_value, global_step, walltime, new_style, double_precision)
        self._mirror(tag, float(scalar_value), global_step)

    def add_text(
        self,
        tag: str,
        text_string: str,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        super().add_text(tag, text_string, global_step, walltime)
        self._mirror(tag, text_string, global_step)

    def add_evaluation(self, tag: str, summary: Mapping[str, Any], global_step: int) -> None:
        """Logs a checkpoint evaluation's summary (:meth:`EvalResult.summary`) to the W&B run
        as the table of every evaluation so far under ``tag``, one row each (frames first);
        TensorBoard has its ``eval/`` scalars already."""
        if self.wandb_run is None:
            return
        rows = self._evaluations.setdefault(tag, [])
        rows.append([global_step, *(_cell(v) for v in summary.values())])
        table = require_wandb().Table(columns=["frames", *summary], data=rows)
        self._mirror(tag, table, global_step)

    def flush(self) -> None:
        """Writes what is pending to the event file and sends the row being gathered to W&B."""
        super().flush()
        with self._row_lock:
            self._send_row()

    def close(self, failed: bool = False) -> None:
        """Closes the event file and finishes the W&B run (marked failed if ``failed``)."""
        try:
            super().close()
            with self._row_lock:
                self._send_row()
        finally:
            run, self.wandb_run = self.wandb_run, None
            if run is not None:
                finish_wandb_run(run, failed)


def _cell(value: Any) -> Any:
    """A table cell: a list (e.g. a confidence interval) as its text, which every table shows."""
    return str(value) if isinstance(value, list | tuple) else value


def open_run_writer(
    run_dir: str | os.PathLike[str],
    config: Mapping[str, Any],
    purge_step: int | None = None,
    tracked: bool = False,
) -> RunWriter:
    """The run's :class:`RunWriter`: with ``tracked``, mirrored to a new W&B run
    (:func:`start_wandb_run`, job type ``train``) that records ``config``.

    Raises:
        OptionError: If ``tracked`` and wandb is not installed.
    """
    run = start_wandb_run(run_dir, config, "train") if tracked else None
    try:
        return RunWriter(run_dir, purge_step, run)
    except BaseException:
        if run is not None:
            finish_wandb_run(run, failed=True)
        raise
