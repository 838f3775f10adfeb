"""Counts behind "one name, one place" (issue 78): run on a checkout, before and after a change.

    python tools/name_census.py [ROOT]      # ROOT: a checkout (default: this one)

Prints, for the product's packages (not tests, not docs):

* names per state field: which of a field's known spellings appear in the code as an identifier
  (an attribute, a parameter, a function) or a string key, outside the schema's ``formerly`` lists and the
  shims that answer a former name for one release;
* hand-written field lists: functions or calls that spell out 10 or more state fields by hand
  (position writer/reader, web view, the loops' one-game calls);
* the engine's hand-written one-value queries (properties that read a record offset);
* places restating a rule outside the loops (the reason words' own checks, a control computation).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import game_calls  # the generator's markers (tools/, beside this script)

PACKAGES = ("kahuna_env", "kahuna_web", "kahuna_policy", "kahuna_arena", "policy", "arena", "training")
SPELLINGS = {
    "player to act": ("current", "current_player", "to_act"),
    "cards played this turn": ("played", "played_this_turn", "cards_played", "cards_played_this_turn"),
    "face-down discards this turn": (
        "discarded",
        "discarded_this_turn",
        "discarding",
        "cards_discarded_this_turn",
        "cards_discarded",
    ),
    "open discards": ("open_discard", "discard_open", "open_discards"),
    "round-3 extra turns": ("final_turns", "final_turns_left"),
    "cards in the pile": ("pile_len", "pile_size"),
    "setup bridges left": ("setup_left", "setup_bridges_left"),
}
STATE_WORDS = {"owner", "hand", "face_up", "pile", "open_discard", "current", "current_player", "round", "scores",
               "played", "played_this_turn", "discarded", "discarded_this_turn", "must_draw", "claim_line",
               "setup_left", "final_turns", "final_turns_left", "face_down", "known", "final_points", "over", "winner",
               "pile_len", "pile_size", "count", "bridges", "lines"}  # fmt: skip


def files(root: Path) -> list[Path]:
    return sorted(p for package in PACKAGES if (root / package).is_dir() for p in (root / package).rglob("*.py"))


def spellings(root: Path) -> dict[str, list[str]]:
    """Per field, the spellings used as code (attribute, name, string), ``formerly`` rows and warnings aside."""
    used: dict[str, set[str]] = {field: set() for field in SPELLINGS}
    every = {name: field for field, names in SPELLINGS.items() for name in names}
    for path in files(root):
        text = path.read_text()
        skip_lines = {  # the schema's former names and the shims answering them for one release
            n
            for n, line in enumerate(text.splitlines(), 1)
            if "formerly=" in line or "renamed(" in line or "_FORMER_METHODS" in line or "def open_discards" in line
        }
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] in skip_lines:
                continue
            word = token.string.strip("\"'") if token.type == tokenize.STRING else token.string
            if token.type in (tokenize.NAME, tokenize.STRING) and word in every:
                if (
                    token.type == tokenize.NAME
                    and word in ("current", "played", "discarded")
                    and path.name
                    not in (
                        "kernels.py",
                        "schema.py",
                        "vector.py",
                        "arrays.py",
                        "observation.py",
                        "engine.py",
                        "positions.py",
                    )
                ):
                    continue  # the common words elsewhere are other things (a current game, games played)
                used[every[word]].add(word)
    return {field: sorted(names) for field, names in used.items()}


def generated_lines(text: str) -> range:
    """The line numbers of the generated block in ``text`` (empty if it has none)."""
    lines = text.splitlines()
    begin = next((n for n, line in enumerate(lines, 1) if line == game_calls.BEGIN), 0)
    end = next((n for n, line in enumerate(lines, 1) if line == game_calls.END), 0)
    return range(begin, end + 1) if begin and end > begin else range(0)


def field_lists(root: Path, generated: bool = False) -> list[str]:
    """Dict displays, calls and functions spelling out >= 10 state fields by hand (``generated``: those a
    generator writes instead)."""
    found = []
    for path in files(root):
        text = path.read_text()
        skip = generated_lines(text)
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Dict, ast.Call)) and (node.lineno in skip) != generated:
                continue
            names: set[str] = set()
            if isinstance(node, ast.Dict):
                names = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                names |= {
                    v.slice.value
                    for v in node.values
                    if isinstance(v, ast.Subscript) and isinstance(v.slice, ast.Constant)
                    and isinstance(v.slice.value, str)
                }  # fmt: skip
            elif isinstance(node, ast.Call):
                names = {k.arg for k in node.keywords if k.arg}
                names |= {a.attr for a in node.args if isinstance(a, ast.Attribute)}
            hits = {n for n in names if n in STATE_WORDS}
            if len(hits) >= 10:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def engine_accessors(root: Path) -> int:
    """Properties of the engine that read one record offset by hand (``self._bytes[_AT[...]]``)."""
    path = root / "kahuna_env" / "engine.py"
    tree = ast.parse(path.read_text())
    count = 0
    for node in ast.walk(tree):
        is_property = isinstance(node, ast.FunctionDef) and any(
            isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list
        )
        if is_property and "_AT[" in ast.unparse(node) and "_code" not in ast.unparse(node):
            count += 1
    return count


def rule_restatements(root: Path) -> list[str]:
    """Functions outside the loops that compute legality reasons or control from the board tables."""
    found = []
    for path in files(root):
        if path.name in ("kernels.py", "rules.py", "render.py"):  # the loops, the readable oracle, the pictures
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                body = ast.unparse(node)
                reason = path.name == "engine.py" and node.name == "_reason" and "illegal_reason" not in body
                control = "MAJORITY" in body and ("ISLAND_LINE_MASK" in body or "count" in body)
                if reason or control:
                    found.append(f"{path.relative_to(root)}: {node.name}")
    return found


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    print(f"checkout: {root}")
    for field, names in spellings(root).items():
        print(f"  names for {field}: {len(names)} {names}")
    lists = field_lists(root)
    print(f"  hand-written lists of >= 10 state fields: {len(lists)} {lists}")
    print(f"  generated lists of >= 10 state fields (tools/game_calls.py): {len(field_lists(root, generated=True))}")
    print(f"  engine properties reading a record offset by hand: {engine_accessors(root)}")
    rules = rule_restatements(root)
    print(f"  rule computations outside the loops (rules.py aside): {len(rules)} {rules}")


if __name__ == "__main__":
    main()
