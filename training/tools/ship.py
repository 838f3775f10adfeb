"""``python -m training.tools.ship``: turn a training run's agent into a shipped agent file with its provenance.

Usage::

    python -m training.tools.ship RUN_DIR [--name champion] [--eval-json FILE] [--out PATH]

Reads ``RUN_DIR/final_agent.pt`` (the weights), ``RUN_DIR/config.yaml``,
``RUN_DIR/checkpoints/latest.pt`` (the counters: updates, learner decisions,
games, training wall time) and ``RUN_DIR/final_eval.json``, and writes a
policy file (the agent format of :mod:`kahuna_policy.model`: weights and network
shape only, no optimizer or pool) whose ``meta`` holds:

================  ============================================================
key               value
================  ============================================================
``name``          the shipped name (``champion``)
``run``           the run directory's name; ``run_dir`` the path given
``source_file``   ``final_agent.pt``; ``source_meta`` that file's own ``meta``
``config``        the run's config (``config.yaml``), which must describe the network shipped
``reward``        the reward settings of the run (the critic's value semantics, read by
                  :func:`kahuna_policy.search.load_guided_agent`)
``commit``        ``git rev-parse HEAD`` of the code when shipped (``"unknown"``
                  outside a git checkout); ``commit_note`` says what it is
``training``      ``updates``, ``learner_decisions``, ``actions``, ``games``,
                  ``train_seconds`` (wall time of the whole run)
``init_from``     for a run started from another agent (its config's ``init_from``):
                  that agent's name or path (``agent``), its weights key
                  (``weights``) and its own provenance (``run``, ``commit``,
                  ``config``, ``training``, its ``init_from``), as the run's
                  ``init_from.json`` recorded them when it began;
                  ``total_training`` sums ``learner_decisions`` and
                  ``train_seconds`` over the whole chain (absent otherwise)
``final_eval``    the run's final evaluation (``final_eval.json``)
``evaluation``    the ``kahuna-eval --json`` reports given by ``--eval-json`` (repeatable), a list;
                  each is checked whole (:func:`eval_report_problem`)
``shipped_at``    UTC time of shipping (ISO 8601)
================  ============================================================

Beside the agent file it writes its model card, ``NAME.md`` (intended use,
training, evaluation with intervals, limitations, licence), generated from
that ``meta`` by :mod:`training.tools.model_card`.

By default the file goes to the source tree's ``kahuna_policy/agents/`` under its
registered name (:data:`kahuna_policy.agent.SHIPPED_AGENTS`), the package data that
``load_agent(name)`` reads.  Bad input (a missing or incomplete run directory,
a ``config.yaml`` that does not describe the network of ``final_agent.pt``,
an unregistered name without ``--out``, an evaluation file that is not a
complete ``kahuna-eval`` report, an output that is one of the inputs or a
protected file of another kind, an existing file without ``--force``: the
rule of :func:`kahuna_env.cli.check_output_file`) is one line
``kahuna-ship: error: ...`` and exit code 2, before anything is written; a
failed write is one line and exit code 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kahuna_env.cli import (
    AGENT,
    MODEL_CARD,
    OneLineParser,
    add_force_argument,
    check_output_file,
    exit_with_error,
    first_line,
)
from training.ppo.provenance import COUNTERS, START_FILE, read_start_record, start_record, weights_key

PROGRAM = "kahuna-ship"
EVAL_FORMAT = "kahuna-eval-v1"
_NAME = re.compile(r"[A-Za-z0-9_-]+")


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = OneLineParser(
        prog=PROGRAM,
        description="Write a run's final agent as a shipped agent file with its provenance (docs/TRAINING.md).",
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="a finished training run directory")
    parser.add_argument("--name", default="champion", help="the shipped agent's name (default: champion)")
    parser.add_argument(
        "--eval-json",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a kahuna-eval --json report to include (repeat for several)",
    )
    parser.add_argument(
        "--out", type=Path, metavar="PATH", help="where to write (default: kahuna_policy/agents/<file of NAME>)"
    )
    add_force_argument(parser)
    return parser


def git_commit(directory: Path) -> str:
    """``git rev-parse HEAD`` in ``directory``, or ``"unknown"`` (not a checkout, no git)."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", commit) else "unknown"


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{what} not found: {path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{path} is not a readable JSON file: {first_line(error)}") from None


def _plain(value: Any, where: str) -> Any:
    """``value`` if it holds only JSON-like plain values (what ``torch.load(weights_only=True)`` reads back)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(key): _plain(item, where) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item, where) for item in value]
    raise ValueError(f"{where} holds a {type(value).__name__}, not a plain value")


def build_meta(
    run_dir: Path,
    name: str,
    eval_json: Sequence[Path] = (),
    commit: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(agent payload of the run's final agent, provenance meta)``; a one-line ``ValueError`` for bad input.

    In phases: the run's files are there; they are read; they describe one network at one
    point of the run; the evaluations are read and checked; the provenance is assembled.
    """
    files = _run_files(run_dir)
    config, payload, checkpoint = _read_run(files)
    counters = checkpoint["counters"]
    source_meta = payload.get("meta") if isinstance(payload.get("meta"), Mapping) else {}
    reward = _check_run_matches_agent(config, files.config, payload, files.agent)
    _check_same_update(source_meta, counters, files)
    final_eval, evaluation = _read_evaluations(files.final_eval, eval_json)
    training = {
        "updates": counters["update"],
        "learner_decisions": counters["global_step"],
        "actions": counters["actions"],
        "games": counters["games"],
        "train_seconds": float(counters.get("train_seconds", 0.0)),
    }
    meta = {
        "name": name,
        "run": run_dir.resolve().name,
        "run_dir": str(run_dir),
        "source_file": files.agent.name,
        "source_meta": dict(source_meta),
        "config": dict(config),
        "reward": reward,
        "commit": commit if commit is not None else git_commit(Path(__file__).resolve().parent),
        "commit_note": "git HEAD of the code when the agent was shipped (the run directory does not record its own)",
        "training": training,
        **_start_provenance(config.get("init_from"), training, run_dir, payload, files.agent),
        "final_eval": dict(final_eval),
        "evaluation": evaluation,
        "shipped_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    return payload, _plain(meta, "the provenance")


@dataclasses.dataclass(frozen=True)
class _RunFiles:
    """The files of a finished run that shipping reads."""

    agent: Path
    config: Path
    latest: Path
    final_eval: Path


def _run_files(run_dir: Path) -> _RunFiles:
    """The run's files, each checked to exist (a one-line ``ValueError`` naming what is missing)."""
    from training.ppo.checkpoint import LATEST_CHECKPOINT, checkpoint_dir

    if not run_dir.is_dir():
        raise ValueError(
            f"run directory not found: {run_dir}" if not run_dir.exists() else f"{run_dir} is not a directory"
        )
    files = _RunFiles(
        agent=run_dir / "final_agent.pt",
        config=run_dir / "config.yaml",
        latest=checkpoint_dir(run_dir) / LATEST_CHECKPOINT,
        final_eval=run_dir / "final_eval.json",
    )
    for path, why in (
        (files.config, "no config.yaml: not a training run directory"),
        (files.agent, "no final_agent.pt: the run has not finished"),
        (files.latest, f"no checkpoints/{LATEST_CHECKPOINT}: the run's counters are missing"),
        (files.final_eval, "no final_eval.json: the run has not finished, or ran with eval.final_games 0"),
    ):
        if not path.is_file():
            raise ValueError(f"{run_dir} is incomplete: {why}")
    return files


def _read_run(files: _RunFiles) -> tuple[Mapping[str, Any], dict[str, Any], dict[str, Any]]:
    """``(config, agent payload, checkpoint)`` of the run; a one-line ``ValueError`` for an unreadable file."""
    import yaml

    from kahuna_policy.agent import read_policy_file
    from training.ppo.checkpoint import load_checkpoint
    from training.ppo.config import load_yaml_text

    try:
        config = load_yaml_text(files.config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ValueError(f"{files.config} is not readable YAML: {first_line(error)}") from None
    if not isinstance(config, Mapping):
        raise ValueError(f"{files.config} is not a run config (a mapping of options)")
    try:
        payload = read_policy_file(files.agent)
        checkpoint = load_checkpoint(files.latest)
    except (OSError, ValueError) as error:
        raise ValueError(first_line(error)) from None
    return config, payload, checkpoint


def _check_same_update(source_meta: Mapping[str, Any], counters: Mapping[str, Any], files: _RunFiles) -> None:
    """A one-line ``ValueError`` when the agent file and the latest checkpoint are from different updates."""
    agent_update = source_meta.get("update")
    if agent_update is not None and agent_update != counters["update"]:
        raise ValueError(
            f"{files.agent} (update {agent_update!r:.20}) and {files.latest} (update {counters['update']}) are from "
            "different points of the run"
        )


def _read_evaluations(eval_file: Path, eval_json: Sequence[Path]) -> tuple[Mapping[str, Any], list[Any]]:
    """``(the run's final evaluation, the --eval-json reports)``, each checked whole."""
    final_eval = _read_json(eval_file, "final evaluation")
    if not isinstance(final_eval, Mapping):
        raise ValueError(f"{eval_file} is not a final evaluation (a mapping of opponent -> results)")
    return final_eval, _read_reports(eval_json)


def _read_reports(eval_json: Sequence[Path]) -> list[Any]:
    """The ``--eval-json`` reports, each checked to be a complete ``kahuna-eval --json`` report."""
    evaluation = []
    for report_file in eval_json:
        report = _read_json(report_file, "--eval-json file")
        problem = eval_report_problem(report)
        if problem:
            raise ValueError(f"--eval-json {report_file} is not a complete kahuna-eval --json report: {problem}")
        evaluation.append(report)
    return evaluation


def _check_run_matches_agent(
    config: Mapping[str, Any], config_file: Path, payload: Mapping[str, Any], agent_file: Path
) -> dict[str, float]:
    """The run's reward settings, after checking that ``config.yaml`` describes the network it ships.

    A one-line ``ValueError`` when the config is not a valid run config, when its
    ``model`` is not the network of ``final_agent.pt`` (the provenance would be
    false), or when the agent records other reward settings than the config.
    """
    from kahuna_policy.agent import recorded_reward
    from kahuna_policy.model import model_config_from_dict
    from kahuna_policy.reward import reward_record
    from training.ppo.config import config_from_dict

    try:
        run_config = config_from_dict(config)
    except ValueError as error:
        raise ValueError(f"{config_file} is not a valid run config: {first_line(error)}") from None
    try:
        network = model_config_from_dict(payload.get("model_config"))
    except ValueError as error:
        raise ValueError(f"{agent_file}: {first_line(error)}") from None
    if network != run_config.model:
        declared = run_config.to_dict()["model"]
        actual = {**declared, **payload["model_config"]}
        raise ValueError(
            f"{config_file} does not describe the network of {agent_file}: the config says model {declared}, "
            f"the network is {actual}; refusing to write false provenance"
        )
    reward = reward_record(run_config.to_dict()["reward"])
    recorded = payload.get("meta", {}).get("reward") if isinstance(payload.get("meta"), Mapping) else None
    if recorded is not None and recorded_reward({"meta": {"reward": recorded}}, str(agent_file)) != reward:
        raise ValueError(
            f"{agent_file} was trained with reward settings {dict(recorded)} but {config_file} says {reward}; "
            "refusing to write false provenance"
        )
    return reward


def eval_report_problem(report: Any) -> str | None:
    """What makes ``report`` not a complete ``kahuna-eval --json`` report (None when it is one).

    Checks every field :meth:`kahuna_arena.report.EvaluationReport.to_dict` writes:
    the entrants, the pairings (each a pair of entrants with consistent
    wins, draws, losses, score and interval), the totals and the ratings;
    a report of an interrupted evaluation (``"partial": true``) is refused.
    """
    if not isinstance(report, Mapping):
        return f"holds a {type(report).__name__}, not a mapping"
    if report.get("format") != EVAL_FORMAT:
        return f"format is not {EVAL_FORMAT!r}"
    if report.get("partial"):
        return "it is the partial report of an interrupted evaluation"
    missing = [key for key in _REPORT_KEYS if key not in report]
    if missing:
        return f"missing {', '.join(missing)}"
    entrants = report["entrants"]
    if not isinstance(entrants, list) or len(entrants) < 2 or not all(isinstance(e, str) for e in entrants):
        return "entrants must be a list of at least two names"
    games = report["games_per_pairing"]
    if not _count(games) or games < 2:
        return "games_per_pairing must be an integer >= 2"
    pairings = report["pairings"]
    expected = len(entrants) * (len(entrants) - 1) // 2
    if not isinstance(pairings, list) or len(pairings) != expected:
        return f"pairings must be a list of {expected} pairings (every pair of entrants)"
    total = 0
    for index, pairing in enumerate(pairings):
        problem = _pairing_problem(pairing, entrants, games)
        if problem:
            return f"pairings[{index}]: {problem}"
        total += pairing["games"]
    if report["total_games"] != total:
        return f"total_games {report['total_games']!r:.20} is not the sum of the pairings' games ({total})"
    ratings = report["ratings"]
    if len(entrants) >= 3 and not (isinstance(ratings, list) and len(ratings) == len(entrants)):
        return "ratings must list every entrant (three or more entrants)"
    if not isinstance(report["config"], Mapping) or not isinstance(report["sampled"], bool):
        return "config must be a mapping and sampled a bool"
    if not _count(report["seed"]):
        return "seed must be an integer >= 0"
    return None


_REPORT_KEYS = ("entrants", "games_per_pairing", "seed", "config", "sampled", "pairings", "ratings", "total_games")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _pairing_problem(pairing: Any, entrants: list[str], games: int) -> str | None:
    if not isinstance(pairing, Mapping):
        return "not a mapping"
    if pairing.get("a") not in entrants or pairing.get("b") not in entrants or pairing.get("a") == pairing.get("b"):
        return "a and b must be two of the entrants"
    counts = [pairing.get(key) for key in ("games", "wins", "draws", "losses")]
    if not all(_count(value) for value in counts):
        return "games, wins, draws and losses must be integers >= 0"
    played, wins, draws, losses = counts
    if wins + draws + losses != played or played != games:
        return f"wins + draws + losses must equal games = games_per_pairing ({games})"
    score, interval = pairing.get("score"), pairing.get("score_ci95")
    number = isinstance(score, (int, float)) and not isinstance(score, bool)
    if not number or abs(score - (wins + draws / 2) / played) > 1e-9:
        return "score must be (wins + draws / 2) / games"
    numbers = isinstance(interval, list) and len(interval) == 2
    numbers = numbers and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in interval)
    if not numbers or not 0 <= interval[0] <= score <= interval[1] <= 1:
        return "score_ci95 must be [low, high] with 0 <= low <= score <= high <= 1"
    return None


def _start_provenance(
    init_from: Any, training: Mapping[str, Any], run_dir: Path, payload: Mapping[str, Any], agent_file: Path
) -> dict[str, Any]:
    """``{"init_from": ..., "total_training": ...}`` for a run started from an agent; ``{}`` for a fresh one.

    From the run's ``init_from.json`` (written when the run began: :mod:`training.ppo.provenance`)
    when it has one. An older run directory has none: the start agent is then read now (a shipped
    name or a file), a one-line ``ValueError`` if it is gone or if the name now holds the run's own
    final network (``payload``, read from ``agent_file``: the run was shipped under that name since,
    so its start is no longer known).
    ``total_training`` adds its chain's decisions and seconds to this run's ``training``.
    """
    if init_from is None:
        return {}
    record = read_start_record(run_dir, str(init_from))
    if record is None:
        record = _start_from_name(str(init_from), payload, agent_file)
    provenance = {**record["provenance"], "agent": record["agent"], "weights": record["weights"]}
    chain = record["training"]
    return {"init_from": provenance, "total_training": {key: chain[key] + training[key] for key in COUNTERS}}


def _start_from_name(init_from: str, payload: Mapping[str, Any], agent_file: Path) -> dict[str, Any]:
    """The start record of a run without ``init_from.json``, from the agent its ``init_from`` names now."""
    from kahuna_policy.agent import load_agent
    from kahuna_policy.model import model_from_payload

    try:
        start = load_agent(init_from)
    except (OSError, ValueError) as error:
        raise ValueError(f"the run's init_from agent {init_from!r} cannot be read: {first_line(error)}") from None
    record = start_record(init_from, start.model, start.meta or {})
    if record["weights"] == weights_key(model_from_payload(payload, source=str(agent_file))):
        raise ValueError(
            f"the run's init_from agent {init_from!r} now holds this run's own final network (it was shipped "
            f"under that name since), and the run has no {START_FILE} recording its start: set init_from in "
            "its config.yaml to the name or file that holds the weights it started from"
        )
    return record


def ship(
    run_dir: str | Path,
    name: str = "champion",
    eval_json: str | Path | Sequence[str | Path] = (),
    out: str | Path | None = None,
    commit: str | None = None,
    force: bool = False,
) -> Path:
    """Write the run's final agent with its provenance; returns the path.

    ``ValueError`` (one line) for bad input, before anything is written:
    among others an output that is one of the inputs, or an existing file
    (replaced only with ``force``, and never a protected file of another
    kind); ``OSError`` naming the file when the write fails.
    """
    from kahuna_policy.agent import SHIPPED_AGENTS, shipped_agent_names, shipped_agent_source
    from kahuna_policy.model import model_from_payload
    from training.ppo.checkpoint import export_agent

    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"--name must be letters, digits, '_' or '-', got {name!r}")
    if out is None:
        if name not in SHIPPED_AGENTS:
            raise ValueError(
                f"{name!r} is not a registered shipped agent ({', '.join(shipped_agent_names())}); "
                "add it to kahuna_policy.agent.SHIPPED_AGENTS or give --out"
            )
        target = shipped_agent_source(name)
    else:
        target = Path(out)
    reports = [eval_json] if isinstance(eval_json, (str, Path)) else list(eval_json)
    run = Path(run_dir)
    inputs = [run / "final_agent.pt", run / "config.yaml", run / "final_eval.json", *map(Path, reports)]
    inputs += list((run / "checkpoints").glob("*.pt")) if (run / "checkpoints").is_dir() else []
    check_output_file("--out", target, AGENT, inputs=inputs, force=force)
    from training.tools.model_card import card_path

    # The model card written beside the agent.
    check_output_file("--out's model card", card_path(target), MODEL_CARD, inputs=inputs, force=force)
    payload, meta = build_meta(run, name, [Path(report) for report in reports], commit)
    model = model_from_payload(payload, source=str(run / "final_agent.pt"))
    path = export_agent(target, model, meta)
    from training.tools.model_card import write_model_card

    write_model_card(path, meta, name)  # NAME.md beside the agent file (training/tools/model_card.py)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m training.tools.ship``."""
    args = build_parser().parse_args(argv)
    try:
        path = ship(args.run_dir, name=args.name, eval_json=args.eval_json, out=args.out, force=args.force)
    except ValueError as error:
        exit_with_error(PROGRAM, str(error))
    except OSError as error:
        exit_with_error(PROGRAM, str(error), code=1)
    size = path.stat().st_size
    print(f"{args.name}: {args.run_dir}/final_agent.pt written to {path} ({size:,} bytes) with its provenance")
    print(f"{args.name}: model card written to {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
