"""The docs site reads the code's docstrings as they are written (mkdocs.yml loads this griffe extension).

The docstrings use Google-style sections (``Args:``, ``Returns:``) with
reStructuredText inline markup: roles (``:class:`ActorCritic```,
``:func:`~kahuna_arena.stats.wilson_interval```), double-backtick literals and
simple tables ruled with ``====``.  mkdocstrings renders Markdown, where
roles and table rules would show as text, so before a docstring is rendered
this extension writes each role as inline code (the target's last part when
it starts with ``~``, as Sphinx shows it) and each simple table as a Markdown
table.  Nothing else changes: double backticks are Markdown code already.
``tests/test_docs_site.py`` fails the build if a role or a table rule is
left in the HTML.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const|ref|doc|term|envvar|option):`([^`]+)`")
"""An inline role and its content: ``:class:`~a.B``` -> ``~a.B``."""
RULE = re.compile(r"^(\s*)(=+)((?: +=+)+)\s*$")
"""A simple table's rule: runs of ``=`` separated by spaces (two columns at least)."""


def role_text(content: str) -> str:
    """What a role shows: ``text`` of ``text <target>``, the last part of ``~a.b.C``, else the target."""
    labelled = re.fullmatch(r"(.+?)\s*<[^>]+>", content)
    if labelled:
        return labelled.group(1)
    if content.startswith("~"):
        return content[1:].rsplit(".", 1)[-1]
    return content.lstrip("!")


def _columns(rule: str) -> list[tuple[int, int]]:
    """The (start, end) of each column of a table rule."""
    return [match.span() for match in re.finditer(r"=+", rule)]


def _cells(line: str, columns: list[tuple[int, int]]) -> list[str]:
    """A row's cells: each column's text, the last one running to the end of the line."""
    cells = []
    for index, (start, _) in enumerate(columns):
        stop = columns[index + 1][0] if index + 1 < len(columns) else len(line)
        cells.append(line[start:stop].strip().replace("|", "\\|"))
    return cells


def tables_to_markdown(text: str) -> str:
    """Each simple reST table written as a Markdown table.

    A table is a rule, rows and a rule; with a header, a rule, the header, a
    rule, rows, a rule.  A row whose first cell is empty continues the row
    above (its cells' text is added to that row's); a table without a header
    gets an empty one (Markdown tables have one).
    """
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        match = RULE.match(lines[index])
        rules = [i for i in range(index + 1, len(lines)) if RULE.match(lines[i])]
        if not match or not rules:
            out.append(lines[index])
            index += 1
            continue
        headed = rules[0] == index + 2 and len(rules) > 1
        end = rules[1] if headed else rules[0]
        columns = _columns(lines[index])
        header = _cells(lines[index + 1], columns) if headed else [""] * len(columns)
        rows: list[list[str]] = []
        for line in lines[(index + 3 if headed else index + 1) : end]:
            if not line.strip():
                continue
            cells = _cells(line, columns)
            if rows and not cells[0]:
                rows[-1] = [" ".join(part for part in pair if part) for pair in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
        indent = match.group(1)
        out.append(indent + "| " + " | ".join(header) + " |")
        out.append(indent + "|" + "---|" * len(columns))
        out.extend(indent + "| " + " | ".join(row) + " |" for row in rows)
        index = end + 1
    return "\n".join(out)


def to_markdown(docstring: str) -> str:
    """A docstring as the site renders it: roles as inline code, simple tables as Markdown tables."""
    return ROLE.sub(lambda match: f"`{role_text(match.group(1))}`", tables_to_markdown(docstring))


class RstToMarkdown(griffe.Extension):
    """Rewrites every docstring griffe reads (:func:`to_markdown`) before mkdocstrings renders it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring, if it has one."""
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)
