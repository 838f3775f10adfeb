"""Label a student's own games against ``greedy`` with guided searches, then fit it where they say it erred.

An experiment of docs/TRAINING.md ("The fourteenth attempt"): one step of expert iteration that keeps
only the search's confident corrections.

    python benchmarks/search_labels.py generate --student champion --games 20000 --seed 1000 --out runs/labels/s1000
    python benchmarks/search_labels.py fit --data runs/labels/s1000 --verified --gap 0.05 --out runs/labels/fit
    python benchmarks/loss_overlap.py champion runs/labels/fit/epoch-4.pt --games 40000 --seed 501

**generate** (DAgger-style: the student's positions, not the teacher's).  The raw student (its most
likely move) plays seat-balanced games against ``greedy`` on the deals of
``kahuna_arena.match.schedule(("student.pt", "greedy"), games, seed)`` in ``--workers`` processes, in chunks
of ``--chunk`` games written as ``OUT/chunk-K.npz`` once complete (a chunk already there is skipped,
so a stopped run resumes with the same arguments; ``OUT/generate.json`` records them and other
arguments are refused).  At each student decision with more than one legal action a guided search
(``STUDENT@mcts:N``, its determinizations seeded per game) runs from the student's view.  Where its move
differs from the student's by more than a near tie (its mean value beats the student's move's by more
than ``--verify-gap``, or the student's move was not among its 4 most visited), a second, larger search
(``--verify`` simulations, seeded apart) runs from the same view.  A chunk keeps, per decision: the
observation, the mask, the student's move and its probability, and each search's move and the
visits and mean values (win probability for the student) of its 4 most visited root actions (the
second search's move is -1 where it did not run); and per game whether the student won.

**fit**.  A decision is a *correction* when the search (the second one with ``--verified``) played
another move than the student, both moves were visited at least ``--min-visits`` times and the
search's move's mean value beats the student's by more than ``--gap``.  The student is fitted (Adam,
``--lr``, minibatches of 512) with cross-entropy to the search's move on the corrections (repeated
``--repeat`` times per epoch) and ``--ce-others`` times to its own move elsewhere, plus ``--kl`` times
the KL divergence from its original policy and the squared change of its value on every decision.
A tenth of the games are held out: each epoch prints the share of their corrections the network now
follows and the share of their other decisions it keeps.  For every epoch of ``--evaluate`` it writes
``OUT/epoch-K.pt`` and prints its record in ``--games`` seat-balanced games against ``greedy``
(``training.selfplay.quick_eval.evaluate_policy``, deals from ``--eval-seed``).

Bad arguments, a student that does not load, missing or unreadable chunks are one line
``search_labels: error: ...`` and exit code 2.  The same arguments give the same chunks and networks.
"""

from __future__ import annotations

import json
import math
import sys
import time
import zipfile
from collections.abc import Sequence
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch

from kahuna_arena.entrants import resolve_entrant
from kahuna_arena.match import play_task, schedule
from kahuna_env.agents import Agent
from kahuna_env.cli import OneLineParser, even_games, exit_with_error, first_line, non_negative_int, positive_int
from kahuna_policy.agent import load_agent
from kahuna_policy.search import load_guided_agent
from training.ppo.checkpoint import export_agent
from training.tools.distill import anchor_penalties, anchor_targets

PROGRAM = "search_labels"
TOP = 4
"""Root actions kept per search (the most visited; the guided search compares the policy's top 4)."""
COLUMNS = (
    "observations",
    "masks",
    "raw",
    "raw_probability",
    "search",
    "actions",
    "visits",
    "values",
    "verify",
    "verify_actions",
    "verify_visits",
    "verify_values",
)
"""Per-decision arrays of a chunk, in the order :meth:`_Labeller.act` records them (plus ``games`` and ``won``)."""
GENERATE_KEYS = ("student", "simulations", "verify", "verify_gap", "games", "chunk", "seed")
"""The arguments a data folder's chunks depend on (``OUT/generate.json``)."""


def root_statistics(result) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The :data:`TOP` most visited root actions of a search, their visits and mean values (-1, 0, NaN padded)."""
    actions = np.full(TOP, -1, np.int16)
    counts = np.zeros(TOP, np.int16)
    means = np.full(TOP, np.nan, np.float32)
    if result is not None:
        visits, values = result.visit_counts(), result.mean_values()
        for k, action in enumerate(sorted(visits, key=lambda a: (-visits[a], a))[:TOP]):
            actions[k], counts[k], means[k] = action, visits[action], values.get(action, np.nan)
    return actions, counts, means


def _value_of(action: int, statistics: tuple[np.ndarray, np.ndarray, np.ndarray]) -> float:
    hits = np.flatnonzero(statistics[0] == action)
    return float(statistics[2][hits[0]]) if len(hits) else math.nan


class _Labeller(Agent):
    """Plays the raw student's move; records the position and the searches' root statistics."""

    uses_game = True
    uses_observation = True

    def __init__(self, student: str, simulations: int, verify: int, verify_gap: float) -> None:
        self.raw = load_agent(student)
        self.search = load_guided_agent(student, simulations, seed=1)
        self.verify = load_guided_agent(student, verify, seed=2)
        self.verify_gap = verify_gap
        self.name = "student"
        self.rows: list[tuple] = []

    def reset(self, seed: int | None = None) -> None:
        self.raw.reset(seed)
        self.search.reset(None if seed is None else seed + 1)
        self.verify.reset(None if seed is None else seed + 2)

    @staticmethod
    def _searched(search, observation, action_mask, game) -> tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
        move = int(search.act(observation, action_mask, game.clone()))
        return move, root_statistics(search.last_search)

    def act(self, observation, action_mask, game=None) -> int:
        probabilities, _ = self.raw.probabilities_and_value(observation, action_mask)
        action = int(np.argmax(probabilities))
        if int(np.count_nonzero(action_mask)) > 1:
            move, first = self._searched(self.search, observation, action_mask, game)
            checked, second = -1, root_statistics(None)
            # The second search checks every disagreement but the near ties (NaN: the student's move not kept).
            gap = _value_of(move, first) - _value_of(action, first)
            if move != action and not gap <= self.verify_gap:
                checked, second = self._searched(self.verify, observation, action_mask, game)
            row = (np.asarray(observation, np.float32), np.asarray(action_mask, bool), action)
            self.rows.append((*row, float(probabilities[action]), move, *first, checked, *second))
        return action


def _play(task: tuple[dict, list[int], Path]) -> int:
    settings, indices, path = task
    torch.set_num_threads(1)
    labeller = _Labeller(settings["student"], settings["simulations"], settings["verify"], settings["verify_gap"])
    greedy = resolve_entrant("greedy", seed=0, sampled=False)
    tasks = schedule(("student.pt", "greedy"), settings["games"], settings["seed"])
    rows, game_ids, won = [], [], []
    for index in indices:
        game = tasks[index]
        seat = game.seats.index(0)
        labeller.rows = []
        result = play_task([labeller, greedy] if seat == 0 else [greedy, labeller], game)
        rows += labeller.rows
        game_ids += [index] * len(labeller.rows)
        won.append((index, int(result.winner == seat)))
    arrays = {name: np.stack(column) for name, column in zip(COLUMNS, zip(*rows, strict=True), strict=True)}
    partial = path.with_name(path.stem + ".partial.npz")
    np.savez_compressed(partial, games=np.asarray(game_ids, np.int64), won=np.asarray(won, np.int64), **arrays)
    partial.rename(path)
    return len(rows)


def chunk_paths(folder: Path) -> list[Path]:
    return sorted(path for path in folder.glob("chunk-*.npz") if path.name.count(".") == 1)


def generate(args) -> int:
    settings = {key: getattr(args, key) for key in GENERATE_KEYS}
    record = args.out / "generate.json"
    if record.exists():
        recorded = json.loads(record.read_text())
        if recorded != settings:
            changed = sorted(key for key in settings if recorded.get(key) != settings[key])
            exit_with_error(PROGRAM, f"{args.out} holds chunks made with other arguments ({', '.join(changed)})")
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(settings, indent=2) + "\n")
    tasks = []
    for number, first in enumerate(range(0, args.games, args.chunk)):
        path = args.out / f"chunk-{number:05d}.npz"
        if not path.exists():
            tasks.append((settings, list(range(first, min(first + args.chunk, args.games))), path))
    started = time.perf_counter()

    def report(counts) -> None:
        for done, count in enumerate(counts, start=1):
            print(f"chunk {done}/{len(tasks)}: {count} decisions, {time.perf_counter() - started:.0f} s", flush=True)

    if args.workers == 1 or len(tasks) <= 1:
        threads = torch.get_num_threads()
        report(map(_play, tasks))  # in this process (_play sets one thread; put back after)
        torch.set_num_threads(threads)
    else:
        with get_context("spawn").Pool(min(args.workers, len(tasks))) as pool:
            report(pool.imap_unordered(_play, tasks))
    return 0


def load_chunks(folder: Path) -> dict[str, np.ndarray]:
    """Every complete chunk of ``folder``, concatenated (a one-line ``ValueError`` for none or a broken one)."""
    paths = chunk_paths(folder)
    if not paths:
        raise ValueError(f"no chunks in {folder}")
    parts = []
    for path in paths:
        try:
            with np.load(path) as chunk:
                parts.append({key: chunk[key] for key in ("games", "won", *COLUMNS)})
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            raise ValueError(f"chunk {path.name} cannot be read: {first_line(error)}") from None
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def corrections(data: dict[str, np.ndarray], gap: float, min_visits: int, verified: bool = False) -> np.ndarray:
    """Decisions where the (second) search's move beats the student's by more than ``gap``, both visited enough."""
    prefix = "verify_" if verified else ""
    actions, visits, values = data[prefix + "actions"], data[prefix + "visits"], data[prefix + "values"]
    raw, move = data["raw"], data["verify" if verified else "search"]
    rows = np.arange(len(raw))

    def statistic(which: np.ndarray, table: np.ndarray, missing: float) -> np.ndarray:
        hit = actions == which[:, None]
        return np.where(hit.any(axis=1), table[rows, hit.argmax(axis=1)], missing)

    enough = (statistic(raw, visits, 0) >= min_visits) & (statistic(move, visits, 0) >= min_visits)
    with np.errstate(invalid="ignore"):
        better = statistic(move, values, np.nan) - statistic(raw, values, np.nan) > gap
    return (move >= 0) & (move != raw) & enough & better


def held_out_rows(games: np.ndarray, seed: int) -> np.ndarray:
    """The decisions of a tenth of the games (at least one), drawn with ``seed``: the fit's held-out set."""
    ids = np.unique(games)
    return np.isin(games, np.random.default_rng(seed).choice(ids, max(1, len(ids) // 10), replace=False))


def fit_corrections(
    model: torch.nn.Module, data: dict[str, np.ndarray], chosen: np.ndarray, args
) -> tuple[list[dict], list[dict]]:
    """Fit ``model`` in place (see the module docstring); every epoch's held-out figures and weights."""
    generator = torch.Generator().manual_seed(args.seed)
    held = held_out_rows(data["games"], args.seed)
    labels = np.where(chosen, data["verify" if args.verified else "search"], data["raw"]).astype(np.int64)
    observations, masks = torch.from_numpy(data["observations"]), torch.from_numpy(data["masks"])
    targets = torch.from_numpy(labels)
    weights = torch.from_numpy(np.where(chosen, 1.0, args.ce_others).astype(np.float32))
    old_log_policy, old_values = anchor_targets(model, data["observations"], data["masks"])
    train = np.concatenate([np.flatnonzero(~held)] + [np.flatnonzero(~held & chosen)] * (args.repeat - 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    def held_out(epoch: int) -> dict:
        model.eval()
        with torch.inference_mode():
            moves = model(observations[held], masks[held])[0].argmax(dim=1).numpy()
        fixed = chosen[held]
        followed = float(np.mean(moves[fixed] == labels[held][fixed])) if fixed.any() else None
        return {
            "epoch": epoch,
            "corrections_followed": followed,
            "others_kept": float(np.mean(moves[~fixed] == labels[held][~fixed])),
        }

    history, states = [held_out(0)], [{k: v.clone() for k, v in model.state_dict().items()}]
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = torch.from_numpy(train)[torch.randperm(len(train), generator=generator)]
        for start in range(0, len(order), 512):
            rows = order[start : start + 512]
            logits, values = model(observations[rows], masks[rows])
            log_policy = torch.log_softmax(logits, dim=1)
            cross_entropy = -(weights[rows] * log_policy.gather(1, targets[rows].unsqueeze(1)).squeeze(1)).mean()
            anchor = (old_log_policy[rows], old_values[rows])
            kl, value_change = anchor_penalties(log_policy, values, anchor, masks[rows])
            loss = cross_entropy + args.kl * kl + value_change
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
        history.append(held_out(epoch))
        states.append({k: v.clone() for k, v in model.state_dict().items()})
        print(json.dumps(history[-1]), flush=True)
    model.eval()
    return history, states


def fit(args) -> int:
    from training.selfplay.quick_eval import evaluate_policy

    try:
        data = load_chunks(args.data)
    except ValueError as error:
        exit_with_error(PROGRAM, first_line(error))
    try:
        student = load_agent(args.student)
    except (OSError, ValueError) as error:
        exit_with_error(PROGRAM, f"student {args.student!r}: {first_line(error)}")
    chosen = corrections(data, args.gap, args.min_visits, args.verified)
    summary = {
        "decisions": len(chosen),
        "games": len(data["won"]),
        "student_won": round(float(np.mean(data["won"][:, 1])), 4),
        "search_differs": round(float(np.mean(data["search"] != data["raw"])), 4),
        "verified": int(np.sum(data["verify"] >= 0)),
        "corrections": int(chosen.sum()),
    }
    print(json.dumps(summary), flush=True)
    torch.manual_seed(args.seed)
    _, states = fit_corrections(student.model, data, chosen, args)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"search_labels": {key: str(value) for key, value in vars(args).items()} | summary}
    if student.reward is not None:
        meta["reward"] = dict(student.reward)
    for epoch in args.evaluate:
        student.model.load_state_dict(states[epoch])
        export_agent(args.out / f"epoch-{epoch}.pt", student.model, meta | {"epoch": epoch})
        if args.games:
            result = evaluate_policy(student.model, "greedy", args.games, seed=args.eval_seed)
            score = (result.wins + result.draws / 2) / args.games
            print(
                f"epoch {epoch}: {result.wins}-{result.draws}-{result.losses} against greedy, {score:.4f}", flush=True
            )
    return 0


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


_finite.__name__ = "non-negative number"


def _parser() -> OneLineParser:
    parser = OneLineParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    gen = commands.add_parser("generate", help="label the student's games")
    gen.add_argument("--student", default="champion")
    gen.add_argument("--simulations", type=positive_int, default=50)
    gen.add_argument("--verify", type=positive_int, default=200, help="simulations of the second search")
    gen.add_argument("--verify-gap", type=_finite, default=0.03)
    gen.add_argument("--games", type=even_games, default=20000)
    gen.add_argument("--chunk", type=even_games, default=100, help="games per chunk file (even)")
    gen.add_argument("--seed", type=int, default=1000)
    gen.add_argument("--workers", type=positive_int, default=2)
    gen.add_argument("--out", type=Path, required=True)
    fitting = commands.add_parser("fit", help="fit the student to the corrections")
    fitting.add_argument("--student", default="champion")
    fitting.add_argument("--data", type=Path, required=True)
    fitting.add_argument("--verified", action="store_true", help="corrections from the second search")
    fitting.add_argument("--gap", type=_finite, default=0.05)
    fitting.add_argument("--min-visits", type=non_negative_int, default=10)
    fitting.add_argument("--repeat", type=positive_int, default=10)
    fitting.add_argument("--ce-others", type=_finite, default=0.0)
    fitting.add_argument("--kl", type=_finite, default=1.0)
    fitting.add_argument("--epochs", type=positive_int, default=4)
    fitting.add_argument("--lr", type=_finite, default=1e-4)
    fitting.add_argument("--seed", type=int, default=0)
    fitting.add_argument("--evaluate", type=non_negative_int, nargs="*", default=[4], help="epochs to write")
    fitting.add_argument("--games", type=non_negative_int, default=10000, help="games against greedy (0: none)")
    fitting.add_argument("--eval-seed", type=int, default=500)
    fitting.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "generate":
        try:
            load_agent(args.student)
        except (OSError, ValueError) as error:
            exit_with_error(PROGRAM, f"student {args.student!r}: {first_line(error)}")
        if args.out.exists() and not args.out.is_dir():
            exit_with_error(PROGRAM, f"--out {args.out} is not a directory")
        return generate(args)
    if any(epoch > args.epochs for epoch in args.evaluate):
        exit_with_error(PROGRAM, f"--evaluate names an epoch past --epochs {args.epochs}")
    if args.games % 2:
        exit_with_error(PROGRAM, f"--games must be even, got {args.games}")
    if args.out.exists() and any(args.out.glob("epoch-*.pt")):
        exit_with_error(PROGRAM, f"--out {args.out} already holds fitted networks")
    return fit(args)


if __name__ == "__main__":
    sys.exit(main())
