"""Command-line arguments generated from the config dataclasses.

Every field becomes one ``--flag`` (its name with dashes), grouped by section, with the field's
docstring and its default as its help text. Flags are unprefixed (``--num-envs``, not ``--env.num-envs``), so
field names must be unique across sections; :func:`add_config_arguments` checks this.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import itertools
import textwrap
import types
import typing
from typing import Any, Literal

from sf_train.config.schema import Config, validate

__all__ = ["add_config_arguments", "config_from_args", "field_docs"]


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Docstrings of a dataclass's fields: the string literal right after each annotation."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _parse_float(text: str) -> float:
    # float() already accepts "inf", which V-trace's rho_bar / c_bar use to disable truncation.
    return float(text)


def _argument_kwargs(tp: Any, default: Any) -> dict[str, Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        return _argument_kwargs(inner, default)
    if tp is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is Literal:
        return {"choices": list(args), "type": type(args[0])}
    if origin is tuple:
        item = args[0]
        nargs: int | str = "+" if args[-1] is Ellipsis else len(args)
        metavar = "N" if item is int else "X"
        return {"nargs": nargs, "type": _parse_float if item is float else item, "metavar": metavar}
    return {"type": _parse_float if tp is float else tp}


def add_config_arguments(parser: argparse.ArgumentParser, defaults: Config | None = None) -> None:
    """Adds one flag per config field to ``parser``, with the field docstrings as help.

    Args:
        parser: The parser (or subcommand parser) to extend.
        defaults: Values shown and used when a flag is absent; the dataclass defaults if None.

    Raises:
        ValueError: If two sections share a field name (their flags would collide).
    """
    defaults = defaults or Config()
    seen: dict[str, str] = {}
    for section in dataclasses.fields(Config):
        section_cfg = getattr(defaults, section.name)
        section_type: type = type(section_cfg)
        group = parser.add_argument_group(section.name, section_type.__doc__)
        docs = field_docs(section_type)
        hints = typing.get_type_hints(section_type)
        for f in dataclasses.fields(section_type):
            if f.name in seen:
                raise ValueError(
                    f"config field {section.name}.{f.name} collides with {seen[f.name]}.{f.name}: "
                    "rename one, flags are unprefixed"
                )
            seen[f.name] = section.name
            default = getattr(section_cfg, f.name)
            group.add_argument(
                f"--{f.name.replace('_', '-')}",
                dest=f"{section.name}.{f.name}",
                default=default,
                # argparse %-formats help texts: escape the docs' own percent signs.
                help=f"{docs.get(f.name, '')} (default: {_show(default)})".replace("%", "%%"),
                **_argument_kwargs(hints[f.name], default),
            )


def _show(value: Any) -> str:
    """A default as it is typed: a tuple's items separated by spaces ("none" if empty), None as
    "unset"."""
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "none"
    return "unset" if value is None else str(value)


def config_from_args(args: argparse.Namespace) -> Config:
    """Builds and validates a config from arguments added by :func:`add_config_arguments`.

    Raises:
        ConfigError: Listing every invalid value.
    """
    values = vars(args)
    sections = {}
    for section in dataclasses.fields(Config):
        section_type = typing.get_type_hints(Config)[section.name]
        kwargs = {}
        for f in dataclasses.fields(section_type):
            value = values[f"{section.name}.{f.name}"]
            kwargs[f.name] = tuple(value) if isinstance(value, list) else value
        sections[section.name] = section_type(**kwargs)
    cfg = Config(**sections)
    validate(cfg)
    return cfg
