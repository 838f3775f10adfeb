"""``python -m training.tools.ship``: turn a training run's agent into a shipped agent file with its provenance.

Usage::

    python -m training.tools.ship RUN_DIR [--name champion] [--eval-json FILE] [--out PATH]
    python -m training.tools.ship SOUP_FILE --soup [--name champion] [--eval-json FILE] [--out PATH]

Reads ``RUN_DIR/final_agent.pt`` (the weights), ``RUN_DIR/config.yaml``,
``RUN_DIR/checkpoints/latest.pt`` (the counters: updates, learner decisions,
games, training wall time) and ``RUN_DIR/final_eval.json``, and writes a
policy file (the agent format of :mod:`policy.model`: weights and network
shape only, no optimizer or pool) whose ``meta`` holds:

================  ============================================================
key               value
================  ============================================================
``name``          the shipped name (``champion``)
``run``           the run directory's name; ``run_dir`` the path given
``source_file``   ``final_agent.pt``; ``source_meta`` that file's own ``meta``
``config``        the run's config (``config.yaml``), which must describe the network shipped
``reward``        the reward settings of the run (the critic's value semantics, read by
                  :func:`policy.search.load_guided_agent`)
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

With ``--soup`` the source is a weight soup (an agent file written by
:mod:`training.tools.soup`) instead of a run: every ingredient its ``meta["soup"]``
lists is read again from the name or path it records and must still hold the
weights recorded (their sha256), and the soup's weights must be their weighted
average (recomputed), so the provenance cannot name other networks than the
ones averaged. Its ``meta`` then holds ``name``, ``kind: "soup"``,
``agent_file`` (the soup file as given: the entrant name of its evaluations),
``soup`` (each ingredient's ``agent``, ``weight``, ``weights`` and
``provenance``: the ingredient's run as above when it is a run directory's
``final_agent.pt``, else what its own file's ``meta`` records), ``run`` (the
ingredients' runs, ``+``-joined), ``config`` (the first ingredient run's: the
network, rules and reward they share), ``reward``, ``commit``, ``training``
(the counters of the ingredients' own runs added up, each run once;
``training_note`` names the runs counted and the ingredients whose files record
no counters), ``evaluation`` and ``shipped_at``.

By default the file goes to the source tree's ``policy/agents/`` under its
registered name (:data:`policy.agent.SHIPPED_AGENTS`), the package data that
``load_agent(name)`` reads.  Bad input (a missing or incomplete run directory,
a ``config.yaml`` that does not describe the network of ``final_agent.pt``,
an unregistered name without ``--out``, an evaluation file that is not a
complete ``kahuna-eval`` report, with ``--soup`` a file that is not a soup, an
ingredient that is gone or changed, a soup that is not the average of its
ingredients or ingredients of different rules, an output that is one of the inputs or an
existing file that is not an agent file, unless ``--force``) is one line
``kahuna-ship: error: ...`` and exit code 2, before anything is written; a
failed write is one line and exit code 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kahuna_env.cli import (
    OneLineParser,
    add_force_argument,
    check_output_file,
    exit_with_error,
    file_starts_with,
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
    parser.add_argument(
        "run_dir", type=Path, metavar="RUN_DIR", help="a finished training run directory (with --soup: a soup file)"
    )
    parser.add_argument(
        "--soup",
        action="store_true",
        help="RUN_DIR is a weight soup written by python -m training.tools.soup, shipped with its ingredients' runs",
    )
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
        "--out", type=Path, metavar="PATH", help="where to write (default: policy/agents/<file of NAME>)"
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

    from policy.agent import read_policy_file
    from training.ppo.checkpoint import load_checkpoint

    try:
        config = yaml.safe_load(files.config.read_text(encoding="utf-8"))
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
    from policy.agent import recorded_reward
    from policy.model import model_config_from_dict
    from policy.reward import reward_record
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

    Checks every field :meth:`arena.report.EvaluationReport.to_dict` writes:
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
    from policy.agent import load_agent
    from policy.model import model_from_payload

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


_INGREDIENT_RUN_KEYS = ("run", "config", "reward", "training", "init_from", "total_training", "final_eval")
"""What a soup's shipped ``meta`` keeps of an ingredient shipped from its run directory."""
_INGREDIENT_FILE_KEYS = ("name", "update", "global_step", "soup", *_INGREDIENT_RUN_KEYS)
"""What it keeps of an ingredient's own file ``meta`` otherwise."""


def build_soup_meta(
    soup_file: Path,
    name: str,
    eval_json: Sequence[Path] = (),
    commit: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(agent payload of the soup, provenance meta)``; a one-line ``ValueError`` for bad input.

    Every ingredient is read again and checked against the sha256 the soup recorded, and the
    soup's weights against their weighted average (:func:`training.tools.soup.soup`, recomputed).
    """
    from policy.agent import load_agent, read_policy_file
    from policy.model import model_from_payload
    from training.tools.soup import soup

    try:
        payload = read_policy_file(soup_file)
    except (OSError, ValueError) as error:
        raise ValueError(first_line(error)) from None
    soup_meta = payload.get("meta") if isinstance(payload.get("meta"), Mapping) else {}
    entries = _soup_entries(soup_meta.get("soup"), soup_file)
    models, ingredients = [], []
    for index, entry in enumerate(entries, start=1):
        spec = entry["agent"]
        try:
            agent = load_agent(spec)
        except (OSError, ValueError) as error:
            raise ValueError(f"ingredient {index} of the soup ({spec}) cannot be read: {first_line(error)}") from None
        if weights_key(agent.model) != entry["weights"]:
            raise ValueError(
                f"ingredient {index} of the soup ({spec}) no longer holds the weights the soup recorded "
                f"({entry['weights'][:19]}...); refusing to write false provenance"
            )
        models.append(agent.model)
        provenance = _ingredient_provenance(spec, agent.meta or {})
        ingredients.append({**entry, "provenance": provenance})
    model = model_from_payload(payload, source=str(soup_file))
    if weights_key(soup(models, [entry["weight"] for entry in entries])) != weights_key(model):
        raise ValueError(f"{soup_file}'s weights are not the weighted average of the ingredients it names")
    configs = [item["provenance"].get("config") for item in ingredients]
    runs = [config for config in configs if isinstance(config, Mapping)]
    if not runs:
        raise ValueError(f"no ingredient of {soup_file} records its run config: the network's rules are unknown")
    for config in runs[1:]:
        if config.get("env") != runs[0].get("env"):
            raise ValueError(f"the ingredients of {soup_file} were trained on different rules (their configs' env)")
    training, note = _soup_counters(ingredients)
    meta = {
        "name": name,
        "kind": "soup",
        "agent_file": str(soup_file),
        "run": "+".join(str(item["provenance"].get("run", item["agent"])) for item in ingredients),
        "soup": ingredients,
        "config": dict(runs[0]),
        "commit": commit if commit is not None else git_commit(Path(__file__).resolve().parent),
        "commit_note": "git HEAD of the code when the agent was shipped (the soup file does not record its own)",
        "training": training,
        "training_note": note,
        "evaluation": _read_reports(eval_json),
        "shipped_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if isinstance(soup_meta.get("reward"), Mapping):
        meta["reward"] = dict(soup_meta["reward"])
    return payload, _plain(meta, "the provenance")


def _soup_entries(entries: Any, soup_file: Path) -> list[dict[str, Any]]:
    """The ``meta["soup"]`` list of a soup file, checked: two or more ``{agent, weight, weights}``."""
    if not isinstance(entries, list):
        raise ValueError(f"{soup_file} is not a weight soup: its meta has no 'soup' list (training.tools.soup)")
    if len(entries) < 2:
        raise ValueError(f"{soup_file}'s soup lists {len(entries)} ingredient(s), a soup has two or more")
    checked = []
    for index, entry in enumerate(entries, start=1):
        ok = isinstance(entry, Mapping) and isinstance(entry.get("agent"), str) and entry["agent"]
        ok = ok and isinstance(entry.get("weights"), str) and entry["weights"].startswith("sha256:")
        weight = entry.get("weight") if isinstance(entry, Mapping) else None
        number = isinstance(weight, (int, float)) and not isinstance(weight, bool) and math.isfinite(weight)
        if not (ok and number and weight > 0):
            raise ValueError(
                f"{soup_file}'s soup ingredient {index} is damaged: it needs an agent, a positive weight "
                "and a sha256: weights key"
            )
        checked.append({"agent": entry["agent"], "weight": float(weight), "weights": entry["weights"]})
    return checked


def _ingredient_provenance(spec: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """An ingredient's provenance: its run's, when it is a run directory's ``final_agent.pt``; else its file's."""
    path = Path(spec)
    if path.name == "final_agent.pt" and (path.parent / "config.yaml").is_file():
        _payload, run_meta = build_meta(path.parent, "ingredient", commit="")
        return {"source": "run directory", **{key: run_meta[key] for key in _INGREDIENT_RUN_KEYS if key in run_meta}}
    return {"source": "agent file", **{key: meta[key] for key in _INGREDIENT_FILE_KEYS if key in meta}}


def _soup_counters(ingredients: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], str]:
    """The counters of the ingredients' own runs added up (each run once), and a note saying which."""
    keys = ("updates", "learner_decisions", "actions", "games", "train_seconds")
    total: dict[str, Any] = {key: 0 for key in keys}
    total["train_seconds"] = 0.0
    counted: list[str] = []
    missing: list[str] = []
    for item in ingredients:
        provenance = item["provenance"]
        training = provenance.get("training")
        run = str(provenance.get("run", item["agent"]))
        if not (isinstance(training, Mapping) and all(isinstance(training.get(key), (int, float)) for key in keys)):
            missing.append(item["agent"])
        elif run not in counted:
            counted.append(run)
            for key in keys:
                total[key] += training[key]
    note = f"the sum of the runs {', '.join(counted) or '(none)'}"
    if missing:
        note += f"; not counted, their files record no counters: {', '.join(missing)}"
    return total, note


def ship(
    run_dir: str | Path,
    name: str = "champion",
    eval_json: str | Path | Sequence[str | Path] = (),
    out: str | Path | None = None,
    commit: str | None = None,
    force: bool = False,
    soup: bool = False,
) -> Path:
    """Write the run's final agent (with ``soup``: the soup file ``run_dir``) with its provenance; returns the path.

    ``ValueError`` (one line) for bad input, before anything is written:
    among others an output that is one of the inputs, or an existing file
    that is not an agent file (without ``force``); ``OSError`` naming the
    file when the write fails.
    """
    from policy.agent import SHIPPED_AGENTS, shipped_agent_names, shipped_agent_source
    from policy.model import model_from_payload
    from training.ppo.checkpoint import export_agent

    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"--name must be letters, digits, '_' or '-', got {name!r}")
    if out is None:
        if name not in SHIPPED_AGENTS:
            raise ValueError(
                f"{name!r} is not a registered shipped agent ({', '.join(shipped_agent_names())}); "
                "add it to policy.agent.SHIPPED_AGENTS or give --out"
            )
        target = shipped_agent_source(name)
    else:
        target = Path(out)
    reports = [eval_json] if isinstance(eval_json, (str, Path)) else list(eval_json)
    run = Path(run_dir)
    if soup:
        inputs = [run, *map(Path, reports), *_soup_inputs(run)]
    else:
        inputs = [run / "final_agent.pt", run / "config.yaml", run / "final_eval.json", *map(Path, reports)]
        inputs += list((run / "checkpoints").glob("*.pt")) if (run / "checkpoints").is_dir() else []
    check_output_file("--out", target, inputs=inputs, own_kind=is_agent_file, kind="an agent file", force=force)
    from training.tools.model_card import card_path

    check_output_file(  # the model card written beside the agent
        "--out's model card",
        card_path(target),
        inputs=inputs,
        own_kind=lambda path: file_starts_with(path, b"# Model card: "),
        kind="a model card",
        force=force,
    )
    build = build_soup_meta if soup else build_meta
    payload, meta = build(run, name, [Path(report) for report in reports], commit)
    model = model_from_payload(payload, source=str(run if soup else run / "final_agent.pt"))
    path = export_agent(target, model, meta)
    from training.tools.model_card import write_model_card

    write_model_card(path, meta, name)  # NAME.md beside the agent file (training/tools/model_card.py)
    return path


def _soup_inputs(soup_file: Path) -> list[Path]:
    """The ingredient files a soup names (those that are paths), to keep the output off them."""
    from policy.agent import SHIPPED_AGENTS, read_policy_file, shipped_agent_source

    try:
        entries = read_policy_file(soup_file).get("meta", {}).get("soup")
    except (OSError, ValueError, AttributeError):
        return []  # build_soup_meta says what is wrong
    specs = [entry.get("agent") for entry in entries if isinstance(entry, Mapping)] if isinstance(entries, list) else []
    return [
        shipped_agent_source(spec) if spec in SHIPPED_AGENTS else Path(spec) for spec in specs if isinstance(spec, str)
    ]


def is_agent_file(path: Path) -> bool:
    """Whether ``path`` is an exported agent file (the agent format, not a training checkpoint): ship's own kind."""
    from policy.agent import read_policy_file
    from policy.model import AGENT_FORMAT

    try:
        payload = read_policy_file(path)
    except (OSError, ValueError):
        return False
    return payload.get("format") == AGENT_FORMAT and "checkpoint_format" not in payload


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m training.tools.ship``."""
    args = build_parser().parse_args(argv)
    try:
        path = ship(
            args.run_dir, name=args.name, eval_json=args.eval_json, out=args.out, force=args.force, soup=args.soup
        )
    except ValueError as error:
        exit_with_error(PROGRAM, str(error))
    except OSError as error:
        exit_with_error(PROGRAM, str(error), code=1)
    size = path.stat().st_size
    source = args.run_dir if args.soup else f"{args.run_dir}/final_agent.pt"
    print(f"{args.name}: {source} written to {path} ({size:,} bytes) with its provenance")
    print(f"{args.name}: model card written to {path.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
