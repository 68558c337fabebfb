"""Sample Factory 2.1.1's own venv for the peers benchmark: it pins gymnasium < 1 and
numpy < 2, so it cannot share sf's environment; built once, then reused while it imports."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

SF_PACKAGES = ("sample-factory==2.1.1", "gymnasium<1", "numpy<2", "vizdoom")
TORCH = "torch==2.13.0"  # the CPU wheel on local disk (Python 3.11 only)
DEFAULT_VENV = Path.home() / ".cache/sf/peers/sample-factory-2.1.1"


def say(message: str) -> None:
    """A progress line: these jobs run for tens of minutes."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _run(command: list[str]) -> None:
    say("  $ " + " ".join(command))
    subprocess.run(command, check=True)


def build_venv(venv: Path, peer: str, packages: Sequence[str]) -> Path:
    """A peer's venv with the CPU torch wheel and ``packages``, made once (a marker file says
    it is complete); returns its python."""
    python = venv / "bin/python"
    marker = venv / ".sf-peers-complete"
    if not marker.exists():
        base = shutil.which("python3.11")
        if base is None:
            raise SystemExit(f"python3.11 not found: {peer}'s venv needs it (the torch wheel)")
        say(f"creating {peer}'s venv at {venv} (about a minute)")
        _run([base, "-m", "venv", str(venv)])
        _run([str(python), "-m", "pip", "install", "-q", TORCH])
        _run([str(python), "-m", "pip", "install", "-q", *packages])
        marker.touch()
    return python


def ensure_venv(venv: Path) -> dict[str, str]:
    """Creates Sample Factory's venv unless it is complete; returns its package versions."""
    python = str(build_venv(venv, "Sample Factory", SF_PACKAGES))
    names = ("sample-factory", "torch", "vizdoom", "gymnasium", "numpy", "faster-fifo")
    probe = (
        "import importlib.metadata as m, json, sf_examples.vizdoom.train_vizdoom; "
        f"print(json.dumps({{n: m.version(n) for n in {names!r}}}))"
    )
    result = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(
            f"Sample Factory's venv {venv} does not import ({result.stderr.strip()[-300:]}): "
            f"delete it and run again to rebuild it"
        )
    return json.loads(result.stdout)
