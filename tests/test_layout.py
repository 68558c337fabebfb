"""The layout shows the architecture: every module is on its package's map, none is too long,
the packages' tops give what users import, and the trainer's configuration needs no torch."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys

import api_coverage
import pytest

MAX_LINES = 600


def _modules() -> list[tuple[str, str, object]]:
    return [
        (package, name, path)
        for package in sorted(api_coverage.SOURCES)
        for name, path in api_coverage.modules(package)
    ]


@pytest.mark.parametrize(("package", "name", "path"), _modules(), ids=lambda v: str(v))
def test_every_module_is_on_its_package_map(package: str, name: str, path: object) -> None:
    if name == package:
        return
    parent, _, short = name.rpartition(".")
    init = api_coverage.SOURCES[package] / parent.replace(".", "/") / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    assert re.search(rf"(``{short}``|:mod:`{re.escape(name)}`)", docstring), (
        f"{name} is missing from the map in {parent}'s docstring"
    )


@pytest.mark.parametrize(("package", "name", "path"), _modules(), ids=lambda v: str(v))
def test_no_module_is_too_long(package: str, name: str, path: object) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())  # type: ignore[attr-defined]
    assert lines <= MAX_LINES, f"{name} has {lines} lines: split it by concept"


@pytest.mark.parametrize("package", ["sf_envs", "sf_train", "sf_league"])
def test_the_top_gives_every_exported_name(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_the_trainer_config_imports_without_torch() -> None:
    code = (
        "import sys, sf_train.config, sf_train.config.arguments, sf_train.config.presets; "
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
