"""``kahuna-distill``: distil a network-guided search into its own network (one step of expert iteration).

Usage::

    kahuna-distill --student champion --simulations 50 --games 600 --out runs/distill

1. **Generate.** The teacher is the student's network guiding the search
   (``STUDENT@mcts:N``, :class:`kahuna_policy.search.GuidedMCTSAgent` with its
   defaults).  It plays ``--games`` games, a third each against ``greedy``,
   against ``mcts:N`` and against itself (``--opponents``), seats alternating,
   on deals of their own (never the deals of ``kahuna-eval --seed 0``).  At
   every teacher decision with more than one legal action the position's
   observation (what the player to move may know), its action mask and the
   search's move are recorded.  Games run in ``--workers`` processes; the
   same ``--seed`` and ``--games`` give the same data.
2. **Fit.** The student's network is trained on those decisions:
   cross-entropy to the search's move, plus ``--kl`` times the KL divergence
   from the student's original policy and ``--value-coef`` times the squared
   change of its value (so the policy moves where the search disagreed and
   stays put elsewhere, and the critic the search relies on is kept).  The
   games are split 90/10; after every epoch the held-out loss is measured and
   the epoch with the lowest one is kept.
3. **Write** ``OUT/agent.pt`` (the agent file format of :mod:`kahuna_policy.model`)
   whose ``meta`` records the student's own provenance, the teacher, the
   data, the fit and the wall time of both stages (``distill``), and in
   ``total_training`` the student's whole training (:func:`training.ppo.provenance.whole_training`)
   plus that time and the positions;
   ``OUT/data.npz`` (the decisions) and ``OUT/distill.json`` (the summary:
   held-out agreement with the search before and after, per epoch).

Bad input (an unknown student, a bad number, an output directory that cannot
be created or already holds one of the outputs, unless ``--force``) is one
line ``kahuna-distill: error: ...`` and exit code 2 before anything is
written; a failed write is one line and exit code 1.  The teacher's search
reads the student's values with the reward settings its file records, and
``agent.pt`` records them too (``meta["reward"]``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent, make_agent
from kahuna_env.agents.spec import parse_baseline, search_spec
from kahuna_env.cli import (
    AGENT,
    FileKind,
    OneLineParser,
    add_force_argument,
    check_output_file,
    check_writable,
    exit_with_error,
    first_line,
    non_negative_int,
    positive_int,
    replacing,
    write_text_atomic,
)
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import OBSERVATION_SIZE
from kahuna_env.seated import PerGamePolicy, play_seated, seating_of
from kahuna_env.vector import KahunaBatch
from kahuna_env.workers import WorkerFailed, Workers
from kahuna_policy.agent import DEFAULT_REWARD, load_agent
from kahuna_policy.model import ActorCritic
from kahuna_policy.search import GuidedMCTSAgent
from training.cli import describe_os_error
from training.ppo.checkpoint import export_agent
from training.ppo.provenance import whole_training
from training.tools.ship import git_commit

PROGRAM = "kahuna-distill"
SELF = "self"
OPPONENTS = ("greedy", "mcts:N", SELF)
_DEAL_TAG = 0x44_49_53_54  # "DIST": keeps these deals apart from kahuna-eval's


@dataclasses.dataclass(frozen=True)
class Decisions:
    """Recorded teacher decisions: observations ``(n, 246)``, masks ``(n, 179)``, actions, and each one's game."""

    observations: np.ndarray
    masks: np.ndarray
    actions: np.ndarray
    games: np.ndarray

    def __len__(self) -> int:
        return len(self.actions)

    @staticmethod
    def concatenate(parts: Sequence[Decisions]) -> Decisions:
        if not parts:
            return Decisions(
                np.zeros((0, OBSERVATION_SIZE), np.float32),
                np.zeros((0, NUM_ACTIONS), np.bool_),
                np.zeros(0, np.int64),
                np.zeros(0, np.int64),
            )
        fields = [field.name for field in dataclasses.fields(Decisions)]
        return Decisions(*(np.concatenate([getattr(part, name) for part in parts]) for name in fields))

    def subset(self, rows: np.ndarray) -> Decisions:
        return Decisions(self.observations[rows], self.masks[rows], self.actions[rows], self.games[rows])


class _Recorder(Agent):
    """The teacher, recording every decision it makes with more than one legal action."""

    uses_game = True
    uses_observation = True

    def __init__(self, teacher: Agent) -> None:
        self.teacher = teacher
        self.name = teacher.name
        self.rows: list[tuple[np.ndarray, np.ndarray, int]] = []

    def reset(self, seed: int | None = None) -> None:
        self.teacher.reset(seed)

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        action = int(self.teacher.act(observation, action_mask, game))
        if int(np.count_nonzero(action_mask)) > 1:
            self.rows.append((np.asarray(observation, np.float32), np.asarray(action_mask, bool), action))
        return action


def game_seeds(seed: int, game: int) -> tuple[int, int, int, int]:
    """Deal, teacher, opponent and determinization seeds of data game ``game``."""
    state = np.random.SeedSequence([seed, _DEAL_TAG, game]).generate_state(4, dtype=np.uint64)
    return tuple(int(value) for value in state)  # type: ignore[return-value]


def opponent_of(game: int, opponents: Sequence[str]) -> str:
    """The opponent of data game ``game``: the opponents in turn, two games (both seats) each."""
    return opponents[(game // 2) % len(opponents)]


def _play_games(task: tuple[str, int, int, list[str], list[int]]) -> Decisions:
    """Worker: play the data games ``games`` side by side and return the teacher's decisions.

    The games share one :class:`~kahuna_env.vector.KahunaBatch` played by
    :func:`kahuna_env.seated.play_seated`; each has its own teacher, opponent and
    determinization generator (:func:`game_seeds`), so its moves do not depend on
    which other games share the batch.
    """
    student, simulations, seed, opponents, games = task
    torch.set_num_threads(1)
    policy = load_agent(student)
    network = policy.model
    reward = policy.reward or DEFAULT_REWARD  # the value semantics of the student's critic
    teachers, others, rngs, deals = [], [], [], []
    for game in games:
        deal, teacher_seed, opponent_seed, choice_seed = game_seeds(seed, game)
        teacher = _Recorder(
            GuidedMCTSAgent(
                network,
                simulations=simulations,
                seed=teacher_seed,
                island_shaping=reward["island_shaping"],
                win_reward=reward["win"],
            )
        )
        name = opponent_of(game, opponents)
        teachers.append(teacher)
        others.append(teacher if name == SELF else make_agent(name, seed=opponent_seed))
        rngs.append(np.random.default_rng(choice_seed))
        deals.append(deal)
    # Seats: the teacher (policy 0) in seat 0 of even games and seat 1 of odd ones, the opponent (1) in the other.
    board = KahunaBatch(len(games), seed=0)
    board.reset(game_seeds=deals)
    teacher_seat = np.asarray(games, dtype=np.int64) % 2
    seating = seating_of(np.arange(2)[None, :] == teacher_seat[:, None], 0, 1)
    play_seated(board, [PerGamePolicy(teachers, rngs), PerGamePolicy(others, rngs)], seating)
    parts = []
    for game, teacher in zip(games, teachers, strict=True):
        if teacher.rows:
            observations, masks, actions = zip(*teacher.rows, strict=True)
            parts.append(
                Decisions(
                    np.stack(observations),
                    np.stack(masks),
                    np.asarray(actions, np.int64),
                    np.full(len(actions), game, np.int64),
                )
            )
    return Decisions.concatenate(parts)


def _play_games_in_worker(state: dict, task: tuple[str, int, int, list[str], list[int]]) -> Decisions:
    return _play_games(task)


def generate(
    student: str, simulations: int, games: int, seed: int, opponents: Sequence[str], workers: int
) -> Decisions:
    """Play ``games`` data games (see the module docstring) in ``workers`` processes (0: this one)."""
    chunks = [list(range(start, games, max(1, workers))) for start in range(max(1, workers))]
    tasks = [(student, simulations, seed, list(opponents), chunk) for chunk in chunks if chunk]
    if workers <= 1:
        parts = [_play_games(task) for task in tasks]
    else:
        with Workers(workers) as pool:  # the project's one process-pool helper
            parts = pool.map(_play_games_in_worker, tasks)
    data = Decisions.concatenate(parts)
    return data.subset(np.argsort(data.games, kind="stable"))  # game order, whatever the chunking


@dataclasses.dataclass(frozen=True)
class FitSettings:
    """The fit's settings (see the module docstring)."""

    epochs: int = 6
    lr: float = 1e-4
    batch_size: int = 512
    kl: float = 1.0
    value_coef: float = 1.0
    holdout: float = 0.1
    seed: int = 0


def anchor_targets(
    model: ActorCritic, observations: np.ndarray, masks: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """The original network's log-policy and values on the decisions (the fit's anchors)."""
    with torch.inference_mode():
        logits, values = model(torch.from_numpy(observations), torch.from_numpy(masks))
    return torch.log_softmax(logits, dim=1).clone(), values.clone()


def anchor_penalties(
    log_policy: torch.Tensor,
    values: torch.Tensor,
    anchor: tuple[torch.Tensor, torch.Tensor],
    legal: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean KL divergence from the anchor's policy over the legal actions, mean squared change of the value)."""
    old_log_policy, old_values = anchor
    kl = torch.where(legal, old_log_policy.exp() * (old_log_policy - log_policy), 0.0).sum(dim=1).mean()
    return kl, F.mse_loss(values, old_values)


def _losses(
    model: ActorCritic, data: Decisions, rows: torch.Tensor, anchor: tuple[torch.Tensor, torch.Tensor], fit: FitSettings
) -> tuple[torch.Tensor, torch.Tensor]:
    """(total loss, agreement with the search) on ``rows``."""
    logits, values = model(torch.from_numpy(data.observations[rows]), torch.from_numpy(data.masks[rows]))
    log_policy = torch.log_softmax(logits, dim=1)
    actions = torch.from_numpy(data.actions[rows])
    cross_entropy = -log_policy.gather(1, actions.unsqueeze(1)).mean()
    legal = torch.from_numpy(data.masks[rows])
    kl, value_change = anchor_penalties(log_policy, values, (anchor[0][rows], anchor[1][rows]), legal)
    agreement = (logits.argmax(dim=1) == actions).float().mean()
    return cross_entropy + fit.kl * kl + fit.value_coef * value_change, agreement


def fit_student(model: ActorCritic, data: Decisions, fit: FitSettings) -> tuple[ActorCritic, dict[str, Any]]:
    """Fit ``model`` (in place) to the search's moves in ``data``; returns it at its best held-out epoch + a report."""
    generator = torch.Generator().manual_seed(fit.seed)
    game_ids = np.unique(data.games)
    held = set(game_ids[: max(1, round(len(game_ids) * fit.holdout))].tolist()) if len(game_ids) > 1 else set()
    is_held = np.isin(data.games, list(held))
    train_rows = torch.from_numpy(np.flatnonzero(~is_held))
    held_rows = torch.from_numpy(np.flatnonzero(is_held))
    if len(train_rows) == 0 or len(held_rows) == 0:
        raise ValueError(f"too little data to fit: {len(data)} decisions in {len(game_ids)} game(s); play more games")
    anchor = anchor_targets(model, data.observations, data.masks)
    optimizer = torch.optim.Adam(model.parameters(), lr=fit.lr)

    def held_out() -> tuple[float, float]:
        model.eval()
        with torch.inference_mode():
            loss, agreement = _losses(model, data, held_rows, anchor, fit)
        return float(loss), float(agreement)

    loss, agreement = held_out()
    history = [{"epoch": 0, "held_out_loss": loss, "held_out_agreement": agreement}]
    best = (loss, 0, {k: v.clone() for k, v in model.state_dict().items()})
    for epoch in range(1, fit.epochs + 1):
        model.train()
        permutation = train_rows[torch.randperm(len(train_rows), generator=generator)]
        for start in range(0, len(permutation), fit.batch_size):
            batch_loss, _ = _losses(model, data, permutation[start : start + fit.batch_size], anchor, fit)
            optimizer.zero_grad()
            batch_loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
        loss, agreement = held_out()
        history.append({"epoch": epoch, "held_out_loss": loss, "held_out_agreement": agreement})
        if loss < best[0]:
            best = (loss, epoch, {k: v.clone() for k, v in model.state_dict().items()})
    model.load_state_dict(best[2])
    model.eval()
    report = {
        "train_decisions": len(train_rows),
        "held_out_decisions": len(held_rows),
        "held_out_games": len(held),
        "best_epoch": best[1],
        "epochs": history,
    }
    return model, report


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=PROGRAM, description="Distil a network-guided search into its own network.")
    parser.add_argument("--student", default="champion", help="shipped agent name or policy file (default champion)")
    parser.add_argument("--simulations", type=positive_int, default=50, help="the teacher's simulations (default 50)")
    parser.add_argument("--games", type=positive_int, default=600, help="data games (default 600)")
    parser.add_argument(
        "--opponents",
        default="greedy,mcts,self",
        help="comma-separated opponents of the teacher, in turn: greedy, random, mcts (mcts:N at the teacher's "
        "simulations), mcts:K, self (default greedy,mcts,self)",
    )
    parser.add_argument("--workers", type=non_negative_int, default=2, help="processes (default 2; 0 = this one)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seeds the deals, agents and the fit")
    defaults = FitSettings()
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=defaults.epochs,
        help=f"passes over the training decisions; the best held-out epoch is kept (default {defaults.epochs})",
    )
    parser.add_argument("--lr", type=float, default=defaults.lr, help=f"Adam's learning rate (default {defaults.lr:g})")
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=defaults.batch_size,
        help=f"decisions per gradient step (default {defaults.batch_size})",
    )
    parser.add_argument(
        "--kl",
        type=float,
        default=defaults.kl,
        help=f"weight of the KL to the original policy (default {defaults.kl:g})",
    )
    parser.add_argument(
        "--value-coef",
        type=float,
        default=defaults.value_coef,
        help=f"weight of the squared change of the original critic's values (default {defaults.value_coef:g})",
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory (agent.pt, data.npz, distill.json)")
    add_force_argument(parser)
    return parser


def _opponents(text: str, simulations: int) -> list[str]:
    """The opponents of ``--opponents`` in canonical form (``mcts`` alone searches with the teacher's budget)."""
    resolved = []
    for name in (name.strip() for name in text.split(",")):
        try:
            baseline = None if name == SELF else parse_baseline(name, max_simulations=None)
        except ValueError:  # a bad budget or suffix
            baseline = None
        if name != SELF and baseline is None:
            raise ValueError(f"--opponents: unknown opponent {name!r}; expected greedy, random, mcts, mcts:K or self")
        if name == "mcts":
            baseline = dataclasses.replace(baseline, simulations=simulations)
        resolved.append(name if baseline is None else str(baseline))
    return resolved


OUTPUTS: dict[str, FileKind | None] = {"agent.pt": AGENT, "data.npz": None, "distill.json": None}
"""The files ``kahuna-distill`` writes in ``--out``, with their kinds (:data:`kahuna_env.cli.FILE_KINDS`)."""


def check_outputs(out: Path, student: str, force: bool) -> None:
    """``ValueError`` (one line) unless ``--out`` may receive :data:`OUTPUTS`; nothing is created.

    The folder must be writable; each output follows
    :func:`kahuna_env.cli.check_output_file`: never the student's file, never
    a protected file of another kind, an existing one only with ``force``
    (an earlier distillation is never replaced by accident).
    """
    from kahuna_policy.agent import agent_file

    check_writable("--out", out, directory=True)
    for name, kind in OUTPUTS.items():
        check_output_file("--out", out / name, kind, inputs=[agent_file(student)], force=force)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    opponents, student, fit = _check_arguments(args)
    out: Path = args.out
    if student.reward is None:
        print(
            f"{PROGRAM}: warning: {args.student} does not record the reward settings it was trained with; the "
            f"search reads its values with the default ones {DEFAULT_REWARD}",
            file=sys.stderr,
        )
    started = time.perf_counter()
    try:
        data = generate(args.student, args.simulations, args.games, args.seed, opponents, args.workers)
    except WorkerFailed as error:  # a data game failed in a worker, or a worker died: one line
        exit_with_error(PROGRAM, f"the data games failed: {error}", code=1)
    generate_seconds = time.perf_counter() - started
    print(f"{PROGRAM}: {args.games} games, {len(data):,} teacher decisions in {generate_seconds:.0f} s", flush=True)
    try:
        with replacing(out / "data.npz") as temporary:
            np.savez_compressed(temporary, **dataclasses.asdict(data))
    except OSError as error:
        exit_with_error(PROGRAM, f"cannot write {out / 'data.npz'}: {error.strerror or first_line(error)}", code=1)
    started = time.perf_counter()
    torch.manual_seed(args.seed)
    try:
        model, report = fit_student(student.model, data, fit)
    except ValueError as error:
        exit_with_error(PROGRAM, first_line(error))
    fit_seconds = time.perf_counter() - started
    first, best = report["epochs"][0], report["epochs"][report["best_epoch"]]
    print(
        f"{PROGRAM}: held-out agreement with the search {first['held_out_agreement']:.3f} -> "
        f"{best['held_out_agreement']:.3f} (epoch {report['best_epoch']} of {fit.epochs}), fit {fit_seconds:.0f} s",
        flush=True,
    )
    distill = {
        "student": str(args.student),
        "teacher": search_spec(str(args.student), args.simulations),
        "games": args.games,
        "opponents": opponents,
        "seed": args.seed,
        "decisions": len(data),
        "fit": dataclasses.asdict(fit),
        "report": report,
        "generate_seconds": generate_seconds,
        "fit_seconds": fit_seconds,
        "workers": args.workers,
    }
    meta = _distilled_meta(out, student, distill)
    try:
        export_agent(out / "agent.pt", model, meta)
        write_text_atomic(out / "distill.json", json.dumps(distill, indent=2) + "\n")
    except OSError as error:
        exit_with_error(PROGRAM, describe_os_error(error), code=1)
    print(f"{PROGRAM}: agent written to {out / 'agent.pt'}")
    return 0


def _check_arguments(args: argparse.Namespace) -> tuple[list[str], Any, FitSettings]:
    """Every check before the first game (exit 2, one line): the numbers, the opponents, the student, ``--out``."""
    numbers = (("--lr", args.lr, True), ("--kl", args.kl, False), ("--value-coef", args.value_coef, False))
    for label, number, positive in numbers:
        if not np.isfinite(number) or number < 0 or (positive and number == 0):
            exit_with_error(PROGRAM, f"{label} must be a finite number {'> 0' if positive else '>= 0'}, got {number}")
    try:
        opponents = _opponents(args.opponents, args.simulations)
        student = load_agent(args.student)
    except (FileNotFoundError, ValueError) as error:
        exit_with_error(PROGRAM, first_line(error))
    try:
        check_outputs(args.out, args.student, args.force)
        args.out.mkdir(parents=True, exist_ok=True)
    except ValueError as error:
        exit_with_error(PROGRAM, first_line(error))
    except OSError as error:  # e.g. --out /proc/x: a folder that cannot hold new entries
        exit_with_error(PROGRAM, f"cannot create --out {args.out}: {error.strerror or first_line(error)}")
    fit = FitSettings(args.epochs, args.lr, args.batch_size, args.kl, args.value_coef, seed=args.seed)
    return opponents, student, fit


def _distilled_meta(out: Path, student: Any, distill: dict[str, Any]) -> dict[str, Any]:
    """The distilled agent's provenance: the distillation, the student's own meta and the whole training behind it."""
    source_meta = dict(student.meta or {})
    meta: dict[str, Any] = {
        "name": out.name,
        "commit": git_commit(Path(__file__).resolve().parent),
        "distill": distill,
        "student_meta": source_meta,
        # The fit keeps the critic (value_coef), so the value semantics are the student's.
        "reward": student.reward,
        "made_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    total = whole_training(source_meta)
    if isinstance(total, dict) and total:
        meta["total_training"] = {
            **total,
            "train_seconds": float(total.get("train_seconds", 0.0))
            + distill["generate_seconds"]
            + distill["fit_seconds"],
            "distill_decisions": distill["decisions"],
        }
    if student.reward is None:
        del meta["reward"]  # an old student that records none: so does its distillation
    return meta


if __name__ == "__main__":
    sys.exit(main())
