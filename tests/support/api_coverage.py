"""Which public classes and functions the three packages define, and whether the API reference has them.

Read from the sources with :mod:`ast` (nothing is imported, so neither torch nor ViZDoom is
needed). A module's public names are its ``__all__`` when it has one, else its names without a
leading underscore; of those, the classes and functions the module itself defines must be in
the reference (re-exports are documented where they are defined).

Run after ``mkdocs build`` to check the built site's inventory (``hatch run docs:build`` does)::

    python tests/support/api_coverage.py site/objects.inv
"""

from __future__ import annotations

import argparse
import ast
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {
    "sf_envs": ROOT / "packages" / "sf-envs" / "src",
    "sf_train": ROOT / "packages" / "sf-train" / "src",
    "sf_league": ROOT / "packages" / "sf-league" / "src",
}
API_PAGES = ROOT / "docs" / "api"


def modules(package: str) -> Iterator[tuple[str, Path]]:
    """``(dotted module name, source file)`` of every module of ``package``, sorted."""
    src = SOURCES[package]
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _declared_all(tree: ast.Module) -> set[str] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return set(ast.literal_eval(node.value))
    return None


def public_definitions(path: Path) -> list[str]:
    """The public classes and functions that the module at ``path`` defines itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported = _declared_all(tree)
    defined = [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    if exported is None:
        return [name for name in defined if not name.startswith("_")]
    return [name for name in defined if name in exported]


def documented_modules(package: str) -> list[str]:
    """The modules that ``docs/api/<package>.md`` renders (its ``::: name`` lines), in order."""
    page = API_PAGES / f"{package}.md"
    return [
        line.removeprefix(":::").split()[0]
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith(":::")
    ]


def inventory_names(objects_inv: Path) -> set[str]:
    """The object names in a Sphinx-format inventory (what mkdocstrings writes to the site)."""
    data = objects_inv.read_bytes()
    header_lines = 4
    body = data.split(b"\n", header_lines)[header_lines]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines() if line}


def missing_from(names: set[str]) -> list[str]:
    """Every public class or function of the three packages that ``names`` lacks."""
    return [
        f"{module}.{name}"
        for package in SOURCES
        for module, path in modules(package)
        for name in public_definitions(path)
        if f"{module}.{name}" not in names
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inventory", type=Path, help="the built site's objects.inv")
    args = parser.parse_args()
    if not args.inventory.exists():
        parser.error(f"{args.inventory} does not exist: build the site first (mkdocs build)")
    missing = missing_from(inventory_names(args.inventory))
    for name in missing:
        print(f"not in the API reference: {name}", file=sys.stderr)
    if missing:
        print(
            f"{len(missing)} public objects are missing: give each a docstring, or list its "
            "module in docs/api/<package>.md",
            file=sys.stderr,
        )
        return 1
    total = sum(len(public_definitions(p)) for pkg in SOURCES for _, p in modules(pkg))
    print(f"API reference: all {total} public classes and functions are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
