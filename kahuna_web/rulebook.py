"""The rules panel of the page: the players' rulebook as sections ``[{"title", "text", "html"}]``, built once at start.

The panel shows ``kahuna_web/static/RULEBOOK.md`` (package data, so an
installed ``kahuna-serve`` has it too): the rules of docs/RULES.md written
for players (what a turn is, placing, removing, control, scoring, the end),
without the engine's names, the tests or the formulas, which stay in
docs/RULES.md (not shipped: the package holds no second copy of it).  ``text``
is a section's Markdown as written; ``html`` a small, safe rendering of it for the
page (every character of the file escaped first; headings, paragraphs, lists,
tables, ``code``, **bold**, *emphasis* and link texts; bracketed names of
tests are left out: they are for developers).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

RULEBOOK_FILE = Path(__file__).resolve().parent / "static" / "RULEBOOK.md"
"""The players' rulebook the rules panel shows."""

_TEST_REFERENCE = re.compile(r"\s*\[(?:also\s+)?`(?:tests/)?test_[^\]]*\]")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


def rule_sections(text: str) -> list[dict[str, Any]]:
    """The ``##`` sections of a Markdown rule page (the part before the first one is the introduction)."""
    sections: list[dict[str, Any]] = []
    title = "Introduction"
    lines: list[str] = []
    for line in [*text.splitlines(), "## "]:
        if line.startswith("## ") or line.startswith("# "):
            body = "\n".join(lines).strip()
            if body:
                sections.append({"title": title, "text": body, "html": markdown_html(body)})
            title, lines = line.lstrip("#").strip(), []
        else:
            lines.append(line)
    return sections


def read_rules(path: Path = RULEBOOK_FILE) -> list[dict[str, Any]]:
    """:func:`rule_sections` of the players' rulebook (empty when the file is missing: the panel then says so)."""
    try:
        return rule_sections(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def _inline(text: str) -> str:
    text = _LINK.sub(r"\1", _TEST_REFERENCE.sub("", text))
    escaped = html.escape(text, quote=False)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    escaped = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"<em>\1</em>", escaped)


def markdown_html(text: str) -> str:
    """A small Markdown subset as HTML (see the module docstring); never passes the file's own tags through."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        if lines[0].startswith("### "):
            out.append(f"<h4>{_inline(lines[0][4:].strip())}</h4>")
            lines = lines[1:]
            if not lines:
                continue
        if lines[0].startswith("```"):
            code = "\n".join(line for line in lines if not line.startswith("```"))
            out.append(f"<pre>{html.escape(code, quote=False)}</pre>")
        elif all(line.lstrip().startswith("|") for line in lines):
            out.append(_table(lines))
        elif re.match(r"\s*([-*]|\d+\.) ", lines[0]):
            out.append(_list(lines))
        else:
            out.append(f"<p>{_inline(' '.join(line.strip() for line in lines))}</p>")
    return "\n".join(out)


def _list(lines: list[str]) -> str:
    items: list[str] = []
    ordered = bool(re.match(r"\s*\d+\. ", lines[0]))
    for line in lines:
        marker = re.match(r"\s*([-*]|\d+\.) (.*)", line)
        if marker:
            items.append(marker.group(2).strip())
        elif items:
            items[-1] += " " + line.strip()
    tag = "ol" if ordered else "ul"
    return f"<{tag}>" + "".join(f"<li>{_inline(item)}</li>" for item in items) + f"</{tag}>"


def _table(lines: list[str]) -> str:
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]
    rows = [row for row in rows if not all(re.fullmatch(r":?-+:?", cell) for cell in row if cell)]
    if not rows:
        return ""
    head = "".join(f"<th>{_inline(cell)}</th>" for cell in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{_inline(cell)}</td>" for cell in row) + "</tr>" for row in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
