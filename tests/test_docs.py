"""The front page and the documentation site agree with the repository.

Every relative link in README.md, the package READMEs and docs/ points at a file that exists
and, with an ``#anchor``, at a heading of that page; the API reference renders every module of
the three packages; the front page's results each name a command and a docs page that holds
the same figures; the compatibility table is the same on the front page and its docs page.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from support import api_coverage

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_INLINE_CODE = re.compile(r"`[^`]*`")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ATTR_ID = re.compile(r"\{[^}]*#([\w-]+)[^}]*\}\s*$")
_HTML_ID = re.compile(r"""<a\s+(?:name|id)=["']([^"']+)["']""")


def markdown_files() -> list[Path]:
    """The pages whose links are checked: the front page, the package READMEs, docs/."""
    return [README, *sorted(ROOT.glob("packages/*/README.md")), *sorted(DOCS.rglob("*.md"))]


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of the lines outside fenced code blocks."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def _slugs(title: str) -> set[str]:
    """The anchors MkDocs (python-markdown's toc) and GitHub give a heading titled ``title``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link's text
    text = re.sub(r"<[^>]+>|[`*_]", "", text).strip()
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    mkdocs = re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", ascii_text).strip().lower())
    github = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
    return {mkdocs, github}


def anchors(page: Path) -> set[str]:
    """Every anchor a link may name on ``page``: its headings (repeats numbered as MkDocs and
    GitHub number them), ``{#id}`` attributes and ``<a id>`` tags."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose_lines(page.read_text(encoding="utf-8")):
        found.update(_HTML_ID.findall(line))
        heading = _HEADING.match(line)
        if not heading:
            continue
        title = heading.group(2)
        custom = _ATTR_ID.search(title)
        if custom:
            found.add(custom.group(1))
            title = title[: custom.start()]
        for slug in _slugs(title):
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}_{count}")  # MkDocs
            found.add(slug if count == 0 else f"{slug}-{count}")  # GitHub
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links on ``page`` whose file or anchor does not exist, as readable lines."""
    problems = []
    for number, line in _prose_lines(page.read_text(encoding="utf-8")):
        for target in _LINK.findall(_INLINE_CODE.sub("``", line)):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            linked = (page.parent / path_part).resolve() if path_part else page
            if not linked.exists():
                problems.append(f"{page.name}:{number}: {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{page.name}:{number}: {target}: no heading #{anchor}")
    return problems


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_broken_files_and_anchors_are_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The `sf-train` CLI\n\ntext\n")
    (tmp_path / "page.md").write_text(
        "# Page\n\n"
        "[fine](other.md) [anchor](other.md#the-sf-train-cli) [self](#page)\n"
        "[gone](missing.md) [bad anchor](other.md#nowhere) ![image](gone.png)\n"
        "```\n[in code](ignored.md)\n```\n"
        "`[inline](ignored.md)` [web](https://example.org/x.md)\n"
    )
    assert broken_links(tmp_path / "page.md") == [
        "page.md:4: missing.md: no such file",
        "page.md:4: other.md#nowhere: no heading #nowhere",
        "page.md:4: gone.png: no such file",
    ]


def test_repeated_headings_get_numbered_anchors(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Results\n\n## Results\n\n## Custom {#mine}\n")
    assert {"results", "results_1", "mine"} <= anchors(page)


@pytest.mark.parametrize("package", sorted(api_coverage.SOURCES))
def test_api_reference_renders_every_module(package: str) -> None:
    """A new module must get its ``::: name`` line, and a removed one lose it; the built
    site's inventory is checked object by object in ``hatch run docs:build``."""
    in_sources = [name for name, _ in api_coverage.modules(package)]
    assert api_coverage.documented_modules(package) == in_sources


def test_api_coverage_finds_public_definitions(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '__all__ = ["Listed", "shown", "imported"]\n'
        "from os import path as imported\n"
        "class Listed: ...\n"
        "def shown(): ...\n"
        "def unlisted(): ...\n"
    )
    assert api_coverage.public_definitions(module) == ["Listed", "shown"]
    module.write_text("class Open: ...\ndef _private(): ...\ndef visible(): ...\n")
    assert api_coverage.public_definitions(module) == ["Open", "visible"]


def _section(text: str, heading: str) -> str:
    """The lines under ``heading`` up to the next heading of the same or a higher level."""
    lines = text.splitlines()
    level = heading.split()[0]
    start = lines.index(heading) + 1
    end = next(
        (i for i in range(start, len(lines)) if re.match(rf"#{{1,{len(level)}}}\s", lines[i])),
        len(lines),
    )
    return "\n".join(lines[start:end])


def results_rows() -> list[list[str]]:
    """The cells of each row of the front page's results table."""
    table = [
        line
        for line in _section(README.read_text(encoding="utf-8"), "## Results").splitlines()
        if line.startswith("|")
    ]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in table[2:]]


def _figures(cell: str) -> list[str]:
    """The numbers a cell states (``1.89x``, ``2,768``, ``78.1``)."""
    return re.findall(r"\d[\d,]*(?:\.\d+)?x?", re.sub(r"\([^)]*\.md[^)]*\)", "", cell))


def test_front_page_results_have_a_command_and_match_their_page() -> None:
    rows = results_rows()
    assert rows, "README.md has a '## Results' table"
    for what, figure, command, page in rows:
        assert re.search(r"`[^`]+`", command), f"{what}: no command beside the figure"
        targets = _LINK.findall(page)
        assert len(targets) == 1, f"{what}: link one docs page"
        linked = (ROOT / targets[0].partition("#")[0]).resolve()
        assert linked.is_relative_to(DOCS), f"{what}: the page must be in docs/"
        text = linked.read_text(encoding="utf-8")
        figures = _figures(figure)
        assert figures, f"{what}: no figure"
        for number in figures:
            assert number in text, f"{what}: {number} is not on {linked.relative_to(ROOT)}"


def _compatibility_table(page: Path) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index("<!-- compatibility table: tools/compatibility.py -->")
    return text[start : text.index("<!-- end of compatibility table -->", start)]


def test_compatibility_table_is_the_same_on_both_pages() -> None:
    assert _compatibility_table(README) == _compatibility_table(DOCS / "integrations.md")
