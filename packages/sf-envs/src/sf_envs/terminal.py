"""What the command lines of the three packages print through: consoles, progress, log lines
and ``--help``.

Rich lays out for a terminal's width, and assumes 80 columns when the output is a pipe or a
file, which cuts progress lines to "…" and breaks ids in tables mid-word exactly where people
keep logs (CI, ``| tee``, ``> run.log``). So when the output is not a terminal, lines keep their
full length, progress is printed as a plain line every few seconds (a live bar cannot redraw in
a file), and log records are plain lines.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from typing import Any

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import Progress, ProgressColumn, TaskID

__all__ = ["PIPE_WIDTH", "DefaultsHelpFormatter", "LineProgress", "log_handler", "make_console"]

#: Columns assumed for output that is not a terminal (unless COLUMNS says otherwise): wide
#: enough that no line of ours is cut or wrapped.
PIPE_WIDTH = 1000


def make_console(*, stderr: bool = False) -> Console:
    """A console for ``stdout`` (or ``stderr``) that never cuts lines going to a pipe or a file."""
    console = Console(stderr=stderr)
    if console.is_terminal or "COLUMNS" in os.environ:
        return console
    return Console(stderr=stderr, width=PIPE_WIDTH)


def log_handler(console: Console) -> logging.Handler:
    """Rich's handler on a terminal; plain timestamped lines (never padded or wrapped) elsewhere."""
    if console.is_terminal:
        return RichHandler(console=console, show_path=False)
    handler = logging.StreamHandler(console.file)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    return handler


class LineProgress(Progress):
    """A rich ``Progress`` that also reports to pipes and files: there, every ``every_s`` seconds
    an update prints the current line (a live bar only shows on a terminal), and the last line
    is printed when the progress stops, as rich does.
    """

    def __init__(self, *columns: str | ProgressColumn, every_s: float = 10.0, **kwargs: Any):
        super().__init__(*columns, **kwargs)
        self.every_s = every_s
        self._printed_at = time.monotonic()

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        if self.console.is_terminal or self.disable:
            return
        now = time.monotonic()
        if now - self._printed_at >= self.every_s:
            self._printed_at = now
            self.console.print(self.make_tasks_table(self.tasks))


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Argparse help that ends each option's help with its default, as ``(default: X)``.

    Nothing is added to help that already says ``(default``, to options that are required or
    default to None (their help says what leaving them out does), to required positionals, or
    to switches that are off unless given (``store_true``). A list prints as its items
    separated by spaces, as it is typed.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        default = action.default
        if (
            text is None
            or text == argparse.SUPPRESS
            or "(default" in text
            or default is None
            or default is argparse.SUPPRESS
            or action.required
            or (not action.option_strings and action.nargs not in ("?", "*"))
            or (action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction))
        ):
            return text
        items = default if isinstance(default, list | tuple) else [default]
        shown = " ".join(map(str, items))
        # argparse %-formats help texts: escape the default's own percent signs.
        return f"{text} (default: {shown.replace('%', '%%')})"
