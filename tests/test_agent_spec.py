"""Agent specs (``kahuna_env.agents.spec``): one grammar, one reader, written back canonically.

Every form parses to the kind, source and budget it names, and ``str()`` of a
spec parses back to the same spec (canonical forms are their own ``str()``).
The arena's entrants are these specs with the shipped agents named.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from kahuna_env.agents import make_agent
from kahuna_env.agents.search import DEFAULT_SIMULATIONS
from kahuna_env.agents.spec import (
    ANYWHERE,
    EntrantRefused,
    EntrantSpec,
    UnknownEntrant,
    looks_like_path,
    parse_baseline,
    split_search,
)

NAMED = ("champion", "champion-v5")

CANONICAL = [
    ("random", EntrantSpec("baseline", "random", "random", None)),
    ("greedy", EntrantSpec("baseline", "greedy", "greedy", None)),
    ("mcts:37", EntrantSpec("baseline", "mcts", "mcts", 37)),
    ("champion", EntrantSpec("named", "champion", "champion", None)),
    ("champion-v5@mcts:8", EntrantSpec("named", "champion-v5", "champion-v5", 8)),
    ("runs/a/final_agent.pt", EntrantSpec("file", "runs/a/final_agent.pt", "runs/a/final_agent.pt", None)),
    ("agent.pt@mcts:50", EntrantSpec("file", "agent.pt", "agent.pt", 50)),
]


@pytest.mark.parametrize(("text", "expected"), CANONICAL, ids=[text for text, _ in CANONICAL])
def test_every_canonical_form_parses_to_what_it_names_and_writes_back_as_itself(text, expected):
    spec = EntrantSpec.parse(text, named=NAMED)
    assert spec == expected
    assert str(spec) == text
    assert EntrantSpec.parse(str(spec), named=NAMED) == spec


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("mcts", f"mcts:{DEFAULT_SIMULATIONS}"),
        ("champion@mcts", f"champion@mcts:{DEFAULT_SIMULATIONS}"),
        ("py:my_agents:act@mcts", f"py:my_agents:act@mcts:{DEFAULT_SIMULATIONS}"),
    ],
)
def test_a_default_budget_is_written_out_and_parses_back_to_the_same_spec(text, canonical):
    spec = EntrantSpec.parse(text, named=NAMED)
    assert str(spec) == canonical
    assert EntrantSpec.parse(canonical, named=NAMED) == spec


@pytest.mark.parametrize("text", ["mcts:05", "mcts:0050", "champion@mcts:007", "py:my_agents:act@mcts:016"])
def test_a_budget_with_leading_zeros_is_refused_so_one_agent_never_has_two_names(text):
    with pytest.raises(ValueError, match="without leading zeros") as error:
        EntrantSpec.parse(text, named=NAMED)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("text", "source"),
    [("py:my_agents.kahuna:act", "my_agents.kahuna:act"), ("py:pkg:Agent.build", "pkg:Agent.build")],
)
def test_a_python_agent_names_a_module_and_an_attribute_without_importing_it(text, source):
    spec = EntrantSpec.parse(text, named=NAMED)
    assert (spec.kind, spec.source, spec.simulations, str(spec)) == ("python", source, None, text)
    assert "my_agents" not in sys.modules


@pytest.mark.parametrize("text", ["py:", "py:module", "py::act", "py:mod:1abc", "py:not a module:act", "py:m:act@x"])
def test_a_malformed_python_agent_is_one_line(text):
    with pytest.raises(ValueError) as error:
        EntrantSpec.parse(text, named=NAMED)
    assert "\n" not in str(error.value)


def test_a_python_agent_file_must_exist_and_is_refused_where_code_may_not_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        EntrantSpec.parse("py:missing.py:act", named=NAMED)
    (tmp_path / "mine.py").write_text("def act(observation, action_mask):\n    return 0\n")
    assert EntrantSpec.parse("py:mine.py:act", named=NAMED).source == "mine.py:act"
    with pytest.raises(EntrantRefused, match="not allowed"):
        EntrantSpec.parse("py:mine.py:act", agents_dir=tmp_path, named=NAMED, python=False)


def test_a_file_with_an_at_sign_in_its_name_is_a_file_not_a_search(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent@mcts:5").write_bytes(b"")
    spec = EntrantSpec.parse("agent@mcts:5", named=NAMED)
    assert (spec.kind, spec.source, spec.simulations) == ("file", "agent@mcts:5", None)
    assert split_search("agent@mcts:5") == ("agent@mcts:5", None)
    assert split_search("other.pt@mcts:5") == ("other.pt", 5)


def test_a_file_of_a_folder_is_written_from_the_folder_and_never_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "x.pt").write_bytes(b"")
    spec = EntrantSpec.parse("x.pt@mcts:3", tmp_path / "agents")
    assert spec.source == str((tmp_path / "agents" / "x.pt").resolve())
    assert str(spec) == "agents/x.pt@mcts:3"
    assert EntrantSpec.parse(str(spec), tmp_path / "agents") == spec


def test_a_network_spec_gives_its_search_and_a_baseline_does_not():
    champion = EntrantSpec.parse("champion", named=NAMED)
    assert champion.network and str(champion.with_search(9)) == "champion@mcts:9"
    with pytest.raises(ValueError, match="only a network guides a search"):
        EntrantSpec.parse("greedy").with_search(9)


def test_only_the_names_the_caller_passes_are_named_agents():
    with pytest.raises(UnknownEntrant, match="unknown entrant 'champion'"):
        EntrantSpec.parse("champion")
    assert EntrantSpec.parse("champion", named=NAMED).kind == "named"


@pytest.mark.parametrize(
    ("text", "agents_dir", "error", "words"),
    [
        ("", ANYWHERE, ValueError, "non-empty string"),
        ("gre\nedy", ANYWHERE, ValueError, "control characters"),
        ("alphazero", ANYWHERE, UnknownEntrant, "unknown entrant 'alphazero'"),
        ("greedy:3", ANYWHERE, UnknownEntrant, "unknown agent 'greedy:3'; baseline agents are"),
        ("mcts:0", ANYWHERE, ValueError, "bad simulation budget in 'mcts:0'"),
        ("mcts:²", ANYWHERE, ValueError, "bad simulation budget"),
        ("mcts:1000001", ANYWHERE, ValueError, "at most 1000000"),
        ("champion@foo", ANYWHERE, ValueError, "bad search in 'champion@foo'"),
        ("@mcts:5", ANYWHERE, ValueError, "give a policy file or champion / champion-v5 before @mcts"),
        ("x.pt", None, EntrantRefused, "agent files are not allowed"),
    ],
)
def test_a_bad_spec_is_one_line_of_the_documented_exception(text, agents_dir, error, words):
    with pytest.raises(error, match=words) as raised:
        EntrantSpec.parse(text, agents_dir, named=NAMED)
    assert "\n" not in str(raised.value)


def test_the_baseline_reader_says_none_for_other_forms_and_caps_only_when_asked():
    assert parse_baseline("champion") is None and parse_baseline("x.pt") is None
    assert parse_baseline("mcts:2000000", max_simulations=None).simulations == 2_000_000
    with pytest.raises(ValueError, match="at most 10"):
        parse_baseline("mcts:11", max_simulations=10)


def test_make_agent_builds_a_parsed_baseline_spec():
    assert make_agent(EntrantSpec.parse("mcts:12"), seed=0).simulations == 12
    assert type(make_agent(EntrantSpec.parse("greedy"))).__name__ == "GreedyAgent"
    with pytest.raises(ValueError, match="baseline agents are"):
        make_agent(EntrantSpec.parse("champion", named=NAMED))


def test_a_path_is_written_with_a_separator_or_a_suffix():
    assert looks_like_path("runs/x") and looks_like_path("x.pt") and looks_like_path("a\\b")
    assert not looks_like_path("champion")


def test_the_arena_reads_entrants_with_this_type_and_the_shipped_names():
    from kahuna_arena.entrants import NAMED_AGENTS, parse_entrant
    from kahuna_arena.entrants import EntrantSpec as ArenaSpec
    from kahuna_policy.registry import SHIPPED_AGENTS

    assert ArenaSpec is EntrantSpec and set(NAMED_AGENTS) == set(SHIPPED_AGENTS)
    assert parse_entrant("champion@mcts:4") == EntrantSpec("named", "champion", "champion", 4)


def test_parsing_a_spec_imports_no_torch():
    code = (
        "import sys; from kahuna_env.agents.spec import EntrantSpec; "
        "EntrantSpec.parse('x.pt@mcts:3'); EntrantSpec.parse('mcts:5'); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("agents_dir", [None, "folder"])
def test_a_python_agent_is_refused_where_agent_files_must_come_from_a_folder(agents_dir, tmp_path):
    """The web's readers pass a folder (or None): code is never run there unless asked for explicitly."""
    folder = None if agents_dir is None else tmp_path
    with pytest.raises(EntrantRefused, match="not allowed"):
        EntrantSpec.parse("py:os.path:join", agents_dir=folder, named=NAMED)
    assert EntrantSpec.parse("py:os.path:join", agents_dir=folder, named=NAMED, python=True).kind == "python"
