"""Prints the compatibility table from a run of the compatibility suite.

Runs ``tests/integrations`` with pytest (each library's tests under the interpreter that has it
installed: RLlib pins its own Gymnasium, so it usually lives in an env of its own), reads the
JUnit results and writes one row per library: the version tested, each use the suite exercises
with its outcome, and the adapter needed, if any. ``--write`` also puts the table between the
markers of the pages that carry it (the front page and the docs' integrations page)::

    python tools/compatibility.py --write \
        --rllib-python "$(hatch env find hatch-test.py3.11-rllib)/bin/python"
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "integrations"
PAGES = (ROOT / "README.md", ROOT / "docs" / "integrations.md")
BEGIN = "<!-- compatibility table: tools/compatibility.py -->"
END = "<!-- end of compatibility table -->"


@dataclass(frozen=True)
class Library:
    name: str
    distributions: tuple[str, ...]
    test_file: str
    adapter: str


LIBRARIES = [
    Library("Gymnasium", ("gymnasium",), "test_gymnasium.py", "none"),
    Library(
        "PettingZoo / SuperSuit",
        ("pettingzoo", "supersuit"),
        "test_pettingzoo.py",
        "none (SuperSuit: `channels_last=True`)",
    ),
    Library(
        "Stable-Baselines3",
        ("stable-baselines3",),
        "test_sb3.py",
        "none; faster: `sf_envs.integrations.sb3`",
    ),
    Library("TorchRL", ("torchrl",), "test_torchrl.py", "none (`autoreset_mode=SAME_STEP`)"),
    Library(
        "RLlib",
        ("ray",),
        "test_rllib.py",
        "none (`channels_last=True`, screens as floats: RLlib's `NormalizedImageEnv`)",
    ),
    Library(
        "CleanRL-style PPO",
        ("torch",),
        "test_cleanrl_example.py",
        "none (`examples/cleanrl_ppo_doom.py`)",
    ),
]


def _run(python: str, files: list[str], junit: str) -> None:
    """Runs the files' tests; their outcomes go to ``junit`` (failures are results, not errors)."""
    paths = [str(SUITE / f) for f in files]
    command = [
        python,
        "-m",
        "pytest",
        *paths,
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
    ]
    subprocess.run(command, cwd=ROOT, check=False, stdout=subprocess.DEVNULL)


def _version(python: str, distributions: tuple[str, ...]) -> str:
    versions = []
    for name in distributions:
        code = f"import importlib.metadata as m; print(m.version({name!r}))"
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
        versions.append(done.stdout.strip() or "not installed")
    return " / ".join(versions)


def _outcomes(junit: str) -> dict[str, list[tuple[str, str]]]:
    """``{test file: [(test name, "passed" | "failed" | "skipped: reason"), ...]}``, the cases
    of one parametrized test merged into one row (``passed 11/11``)."""
    by_file: dict[str, list[tuple[str, str]]] = {}
    if not os.path.exists(junit) or os.path.getsize(junit) == 0:
        return by_file
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1] + ".py"
        skipped = case.find("skipped")
        if skipped is not None:
            outcome = "skipped: " + (skipped.get("message") or "").removeprefix("could not import ")
        elif case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        else:
            outcome = "passed"
        by_file.setdefault(module, []).append((case.get("name", ""), outcome))
    return {module: _merged(cases) for module, cases in by_file.items()}


def _merged(cases: list[tuple[str, str]]) -> list[tuple[str, str]]:
    by_test: dict[str, list[str]] = {}
    for name, outcome in cases:
        by_test.setdefault(name.partition("[")[0], []).append(outcome)
    rows = []
    for test, outcomes in by_test.items():
        if len(outcomes) == 1:
            rows.append((test, outcomes[0]))
            continue
        passed = outcomes.count("passed")
        others = sorted({o for o in outcomes if o != "passed"})
        rows.append((test, "; ".join([f"passed {passed}/{len(outcomes)}", *others])))
    return rows


def _use(test_name: str) -> str:
    """``test_ppo_cnn_policy_through_x`` -> ``ppo cnn policy through x``."""
    return test_name.removeprefix("test_").replace("_", " ")


def _table(pythons: dict[str, str], outcomes: dict[str, list[tuple[str, str]]]) -> list[str]:
    lines = [
        "| library | version tested | use (from `tests/integrations`) | result | adapter |",
        "|---|---|---|---|---|",
    ]
    for lib in LIBRARIES:
        version = _version(pythons[lib.test_file], lib.distributions)
        rows = outcomes.get(lib.test_file) or [("(no results)", "not run")]
        for i, (test, outcome) in enumerate(rows):
            head = (lib.name, version) if i == 0 else ("", "")
            tail = lib.adapter if i == 0 else ""
            lines.append(f"| {head[0]} | {head[1]} | {_use(test)} | {outcome} | {tail} |")
    return lines


def write_table(page: Path, table: list[str]) -> None:
    """Replaces what lies between the markers of ``page`` with ``table``, atomically."""
    text = page.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{page}: the markers {BEGIN!r} and {END!r} are missing: add them")
    updated = text[: start + len(BEGIN)] + "\n" + "\n".join(table) + "\n" + text[end:]
    partial = page.with_suffix(".md.partial")
    partial.write_text(updated, encoding="utf-8")
    partial.replace(page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rllib-python", help="interpreter with ray[rllib] installed")
    parser.add_argument(
        "--write",
        action="store_true",
        help="also write the table into README.md and docs/integrations.md",
    )
    args = parser.parse_args()
    pythons = {lib.test_file: sys.executable for lib in LIBRARIES}
    if args.rllib_python:
        pythons["test_rllib.py"] = args.rllib_python
    outcomes: dict[str, list[tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="sf_compat_") as folder:
        for python in sorted(set(pythons.values())):
            files = [f for f, p in pythons.items() if p == python]
            junit = os.path.join(folder, f"{len(outcomes)}.xml")
            _run(python, files, junit)
            outcomes.update({f: o for f, o in _outcomes(junit).items() if f in files})
    table = _table(pythons, outcomes)
    print("\n".join(table))
    if args.write:
        for page in PAGES:
            write_table(page, table)


if __name__ == "__main__":
    main()
