"""What the command lines print when their output is a pipe or a file (CI, `| tee`, a log)."""

from __future__ import annotations

import io
import logging

from rich.console import Console
from rich.progress import TextColumn

from sf_envs.terminal import PIPE_WIDTH, LineProgress, log_handler, make_console


def test_a_console_on_a_pipe_never_cuts_lines(capsys) -> None:
    console = make_console()
    assert not console.is_terminal and console.width == PIPE_WIDTH
    console.print("x" * 300)
    assert capsys.readouterr().out == "x" * 300 + "\n"


def test_progress_on_a_pipe_prints_a_line_per_interval() -> None:
    out = io.StringIO()
    console = Console(file=out, width=PIPE_WIDTH)
    with LineProgress(TextColumn("{task.completed:.0f} frames"), console=console, every_s=0) as bar:
        task = bar.add_task("train", total=3)
        for done in (1, 2, 3):
            bar.update(task, completed=done)
    lines = out.getvalue().splitlines()
    # One line per update, then the last state once more when the progress stops.
    assert lines == ["1 frames", "2 frames", "3 frames", "3 frames"]


def test_log_records_on_a_pipe_are_plain_unpadded_lines() -> None:
    out = io.StringIO()
    logger = logging.getLogger("sf_envs.test_terminal")
    handler = log_handler(Console(file=out, width=PIPE_WIDTH))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("evaluation at %d frames", 500)
    finally:
        logger.removeHandler(handler)
    assert out.getvalue().endswith(" INFO evaluation at 500 frames\n")
