"""Model cards: a human-readable ``NAME.md`` beside every shipped agent, generated from its ``meta``.

``kahuna-ship`` writes the card next to the agent file it ships
(``kahuna_policy/agents/champion.md`` beside ``champion.pt``); ``python -m
training.tools.model_card NAME...`` regenerates the cards of shipped agents from
their files.  A card has the sections of the usual model-card template:
intended use, training (the run, its network, its schedule and its chain of
starting agents), evaluation (every result the meta holds, with its 95%
Wilson interval), limitations and licence.  Everything in it comes from the
agent's ``meta`` (what :mod:`training.tools.ship` records) and the network's shape,
so a card never says more than the file can back.
"""

from __future__ import annotations

import posixpath
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from kahuna_env.agents.spec import split_search
from kahuna_env.version import __version__

LICENCE = "MIT"
"""The licence of the code and of the shipped weights (``[project] license`` in pyproject.toml)."""


def _number(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "unknown"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def _interval(result: Mapping[str, Any]) -> str:
    interval = result.get("score_ci95")
    if isinstance(interval, (list, tuple)) and len(interval) == 2:
        return f"{_number(interval[0])}–{_number(interval[1])}"
    return "not recorded"


def _record(result: Mapping[str, Any]) -> str:
    return "-".join(_number(result.get(key)) for key in ("wins", "draws", "losses"))


def _entrant(name: Any, agent_file: str) -> str:
    """An evaluation entrant's name, the agent itself (its run's ``final_agent.pt``) shown as ``this agent``.

    The same run directory's name and file, however the path was written (relative, absolute, with
    ``./``), is this agent; another run's ``final_agent.pt`` (a best response trained against it,
    say) is an opponent like any other.  The agent guiding a search (``FILE@mcts:50``) is ``this
    agent@mcts:50``: its rows are shown too, with the search named.
    """
    text = str(name)
    try:
        source, _ = split_search(text)
    except ValueError:  # no entrant: shown as it stands
        source = text
    this = PurePosixPath(posixpath.normpath(agent_file)).parts[-2:]
    if PurePosixPath(posixpath.normpath(source)).parts[-2:] == this:
        return "this agent" + text[len(source) :]  # the search as the report wrote it, if any
    return f"`{text}`"


def _is_self(entrant: str) -> bool:
    return entrant == "this agent" or entrant.startswith("this agent@")


def evaluation_rows(meta: Mapping[str, Any]) -> list[str]:
    """Markdown table rows ``| opponent | games | W-D-L | score | 95% interval | source |`` from ``meta``."""
    rows = []
    final_eval = meta.get("final_eval")
    if isinstance(final_eval, Mapping):
        for opponent, result in final_eval.items():
            if isinstance(result, Mapping):
                rows.append(
                    f"| `{opponent}` | {_number(result.get('games'))} | {_record(result)} | "
                    f"{_number(result.get('score'))} | {_interval(result)} | the run's final evaluation |"
                )
    evaluation = meta.get("evaluation")
    source_file = str(meta.get("agent_file") or str(meta.get("run_dir", "")) + "/final_agent.pt")
    for report in evaluation if isinstance(evaluation, list) else []:
        if not isinstance(report, Mapping):
            continue
        seed = report.get("seed")
        for pairing in report.get("pairings") or []:
            if not isinstance(pairing, Mapping):
                continue
            a, b = _entrant(pairing.get("a"), source_file), _entrant(pairing.get("b"), source_file)
            if not (_is_self(a) or _is_self(b)):
                continue
            player, opponent = (a, b) if _is_self(a) else (b, a)
            flipped = not _is_self(a)
            result = dict(pairing)
            if flipped:  # the table is from this agent's side
                result["wins"], result["losses"] = pairing.get("losses"), pairing.get("wins")
                score, interval = pairing.get("score"), pairing.get("score_ci95")
                result["score"] = 1 - score if isinstance(score, (int, float)) else None
                if isinstance(interval, (list, tuple)) and len(interval) == 2:
                    result["score_ci95"] = [1 - interval[1], 1 - interval[0]]
            guided = "" if player == "this agent" else f" (as `{player}`)"
            rows.append(
                f"| {opponent}{guided} | {_number(result.get('games'))} | {_record(result)} | "
                f"{_number(result.get('score'))} | {_interval(result)} | `kahuna-eval` (seed {seed}) |"
            )
    return rows


def _network(config: Mapping[str, Any]) -> str:
    model = config.get("model") if isinstance(config.get("model"), Mapping) else {}
    architecture = model.get("architecture", "unknown")
    hidden = model.get("hidden_sizes", "unknown")
    text = f"`{architecture}` network, trunk {hidden}"
    if architecture == "board":
        text += f", per-line width {model.get('line_width', 'unknown')}"
    return text + f", `{model.get('activation', 'unknown')}` activations"


def _chain(meta: Mapping[str, Any]) -> list[str]:
    lines = []
    start = meta.get("init_from")
    while isinstance(start, Mapping):
        training = start.get("training") if isinstance(start.get("training"), Mapping) else {}
        lines.append(
            f"- started from `{start.get('agent', start.get('name', 'unknown'))}` "
            f"(run `{start.get('run', 'unknown')}`, "
            f"commit `{str(start.get('commit', 'unknown'))[:12]}`, "
            f"{_number(training.get('learner_decisions'))} learner decisions)"
        )
        start = start.get("init_from")
    return lines


def model_card(meta: Mapping[str, Any], name: str | None = None) -> str:
    """The Markdown model card of an agent whose provenance is ``meta`` (a shipped agent file's ``meta``).

    The sections in order: header, intended use, training, evaluation, limitations, licence.
    """
    name = name or str(meta.get("name", "agent"))
    config = _section(meta, "config")
    lines = [
        *_header(name),
        *_intended_use(name, _section(config, "env")),
        *_training(meta, config),
        *_evaluation(meta),
        *_limitations(name),
        *_licence(),
    ]
    return "\n".join(lines)


def _section(values: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``values[key]`` when it is a mapping, else ``{}`` (an agent's ``meta`` may lack any part)."""
    value = values.get(key)
    return value if isinstance(value, Mapping) else {}


def _header(name: str) -> list[str]:
    return [
        f"# Model card: `{name}`",
        "",
        f"Generated by `training/tools/model_card.py` (kahuna-rl {__version__}) from the `meta` of the agent file; "
        "regenerate with `python -m training.tools.model_card " + name + "`.",
        "",
    ]


def _intended_use(name: str, env: Mapping[str, Any]) -> list[str]:
    return [
        "## Intended use",
        "",
        f"A policy for the two-player board game *Kahuna* as implemented by `kahuna_env` (docs/RULES.md), "
        f"variant `{env.get('variant', 'standard')}`, discard rule `{env.get('discard_rule', 'instead_of_play')}`: "
        "an opponent to play against (`kahuna-play`, `kahuna-serve`), a baseline for evaluations (`kahuna-eval "
        f'{name}`), an opponent or starting point for training (`gymnasium.make("Kahuna-v0", opponent="{name}")`, '
        f'`init_from: {name}`).  Load it with `training.load_agent("{name}")`; export it with '
        f"`kahuna-export {name} --format onnx`.  It is a research and game-playing artefact, not for any decision "
        "that matters outside the game.",
        "",
    ]


def _reward_line(reward: Mapping[str, Any]) -> str:
    settings = ", ".join(f"`{key}: {value}`" for key, value in reward.items()) if reward else "not recorded"
    return f"- reward settings: {settings} (docs/TRAINING.md)"


def _training(meta: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    training = _section(meta, "training")
    total = meta.get("total_training") if isinstance(meta.get("total_training"), Mapping) else None
    reward = _section(config, "reward")
    hours = training.get("train_seconds")
    lines = [
        "## Training",
        "",
        f"- run `{meta.get('run', 'unknown')}`, shipped {meta.get('shipped_at', 'at an unknown time')} from commit "
        f"`{meta.get('commit', 'unknown')}`",
        f"- self-play PPO (`training/ppo/trainer.py`, docs/TRAINING.md), {_network(config)}",
        f"- {_number(training.get('updates'))} updates, {_number(training.get('learner_decisions'))} learner "
        f"decisions, {_number(training.get('games'))} games, "
        + (f"{hours / 3600:.2f} hours of wall time" if isinstance(hours, (int, float)) else "wall time unknown"),
        _reward_line(reward),
        f"- seed {config.get('seed', 'unknown')}; the whole config is in the file's `meta['config']`",
        *_chain(meta),
    ]
    if total:
        lines.append(
            f"- over the whole chain: {_number(total.get('learner_decisions'))} learner decisions, "
            + (
                f"{total['train_seconds'] / 3600:.2f} hours"
                if isinstance(total.get("train_seconds"), (int, float))
                else "time unknown"
            )
        )
    if meta.get("note"):
        lines += ["", f"Note recorded with the agent: {meta['note']}"]
    return lines


def _evaluation(meta: Mapping[str, Any]) -> list[str]:
    rows = evaluation_rows(meta)
    lines = [
        "",
        "## Evaluation",
        "",
        "Score = (wins + draws/2) / games, from this agent's side; 95% Wilson intervals.  Seats are balanced "
        "(each deal played from both seats).",
        "",
    ]
    if rows:
        lines += ["| opponent | games | W-D-L | score | 95% interval | source |", "|---|---|---|---|---|---|", *rows]
    else:
        lines.append("No evaluation is recorded in the file's `meta`.")
    return lines


def _limitations(name: str) -> list[str]:
    return [
        "",
        "## Limitations",
        "",
        "- Trained and evaluated only on the rules and options above; other variants, handicaps or a different "
        "first player are out of its training distribution.",
        "- Its strength is measured against the baselines and agents in the table, not against strong human "
        "players; scores against other opponents may differ.",
        "- It sees only a player's observation (no hidden cards) and plays without search; a search guided by "
        f"it (`{name}@mcts:N`, docs/TRAINING.md) is a different entrant with its own results.",
        "- The results above are the ones recorded when it was shipped, on the code of that commit.",
        "",
    ]


def _licence() -> list[str]:
    return [
        "## Licence",
        "",
        f"{LICENCE}, like the rest of kahuna-rl (pyproject.toml).  *Kahuna* is a game by Günter Cornett; this "
        "project is not affiliated with its publishers.",
        "",
    ]


def card_path(agent_file: str | Path) -> Path:
    """Where the card of ``agent_file`` goes: the same name with ``.md``."""
    return Path(agent_file).with_suffix(".md")


def write_model_card(agent_file: str | Path, meta: Mapping[str, Any], name: str | None = None) -> Path:
    """Write the card of ``agent_file`` (provenance ``meta``) beside it; returns its path."""
    path = card_path(agent_file)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(model_card(meta, name), encoding="utf-8")
    temporary.replace(path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m training.tools.model_card NAME...``: regenerate the cards of shipped agents from their files."""
    from kahuna_env.cli import OneLineParser, exit_with_error, first_line
    from kahuna_policy.agent import read_policy_file, shipped_agent_names, shipped_agent_source

    parser = OneLineParser(prog="python -m training.tools.model_card", description=main.__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help="shipped agents (default: all)")
    args = parser.parse_args(argv)
    for name in args.names or shipped_agent_names():
        try:
            source = shipped_agent_source(name)
            meta = read_policy_file(source).get("meta") or {}
            path = write_model_card(source, meta, name)
        except (OSError, ValueError) as error:
            exit_with_error(parser.prog, first_line(error), code=1)
        print(f"{name}: model card written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
