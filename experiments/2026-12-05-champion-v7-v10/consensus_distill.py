"""Distil the guided search into an agent on the agent's own games against ``greedy``, keeping only the
moves two independent searches agree on (an experiment of docs/TRAINING.md, "The tenth attempts").

    python benchmarks/consensus_distill.py --student champion --games 1600 --seed 100 --out runs/consensus
    kahuna-eval runs/consensus/agent.pt greedy --games 2000 --seed 0 --workers 2

1. **Data** (DAgger-style: the student's own positions, not the teacher's).  The raw student
   (its most likely move) plays ``--games`` seat-balanced games against ``greedy`` on the deals
   of ``kahuna_arena.match.schedule(("student.pt", "greedy"), games, seed)``, in two processes.  At each
   of its decisions with more than one legal action, two guided searches with the student's
   network (``STUDENT@mcts:N``, seeded apart) choose a move from the same position.
2. **Labels.**  Where the two searches agree, their move; elsewhere the student's own move.
3. **Fit** (``training.tools.distill.fit_student``): cross-entropy to the labels, ``--kl`` times
   the KL divergence from the student's original policy, its value kept; the epoch with the
   lowest held-out loss (10% of the games) is kept.

Writes ``OUT/agent.pt``, ``OUT/data.npz`` and ``OUT/summary.json`` (agreement rates, the fit's
epochs).  The same arguments give the same data and the same network.
"""

from __future__ import annotations

import argparse
import json
import time
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import torch

from kahuna_arena.entrants import resolve_entrant
from kahuna_arena.match import play_task, schedule
from kahuna_env.agents import Agent
from kahuna_policy.agent import load_agent
from kahuna_policy.search import load_guided_agent
from training.ppo.checkpoint import export_agent
from training.tools.distill import Decisions, FitSettings, fit_student


class _Labeller(Agent):
    """Plays the raw student's move; records the position and both searches' moves."""

    uses_game = True
    uses_observation = True

    def __init__(self, student: str, simulations: int) -> None:
        self.raw = load_agent(student)
        self.searches = [load_guided_agent(student, simulations, seed=k) for k in (1, 2)]
        self.name = "student"
        self.rows: list[tuple[np.ndarray, np.ndarray, int, int, int]] = []

    def reset(self, seed: int | None = None) -> None:
        self.raw.reset(seed)
        for k, search in enumerate(self.searches, start=1):
            search.reset(None if seed is None else seed + k)

    def act(self, observation, action_mask, game=None) -> int:
        action = int(self.raw.act(observation, action_mask, game))
        if int(np.count_nonzero(action_mask)) > 1:
            first, second = (int(s.act(observation, action_mask, game.clone())) for s in self.searches)
            position = (np.asarray(observation, np.float32), np.asarray(action_mask, bool))
            self.rows.append((*position, action, first, second))
        return action


def _play(task: tuple[str, int, int, int, list[int]]) -> tuple[list, list[int], int]:
    student, simulations, seed, games, indices = task
    torch.set_num_threads(1)
    labeller = _Labeller(student, simulations)
    greedy = resolve_entrant("greedy", seed=0, sampled=False)
    tasks = schedule(("student.pt", "greedy"), games, seed)
    rows, game_ids, wins = [], [], 0
    for index in indices:
        task_ = tasks[index]
        seat = task_.seats.index(0)
        labeller.rows = []
        result = play_task([labeller, greedy] if seat == 0 else [greedy, labeller], task_)
        wins += result.winner == seat
        rows += labeller.rows
        game_ids += [index] * len(labeller.rows)
    return rows, game_ids, wins


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="champion")
    parser.add_argument("--simulations", type=int, default=50)
    parser.add_argument("--games", type=int, default=1600, help="an even number")
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--kl", type=float, default=1.0)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    if args.games < 2 or args.games % 2:
        parser.error(f"--games must be an even number >= 2, got {args.games}")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    tasks = [(args.student, args.simulations, args.seed, args.games, list(range(k, args.games, 2))) for k in range(2)]
    with get_context("spawn").Pool(2) as pool:
        parts = pool.map(_play, tasks)
    rows = [row for part in parts for row in part[0]]
    games = np.asarray([game for part in parts for game in part[1]], np.int64)
    observations, masks, raw, first, second = (np.stack(column) for column in zip(*rows, strict=True))
    np.savez_compressed(
        args.out / "data.npz", observations=observations, masks=masks, raw=raw, s1=first, s2=second, games=games
    )
    generated = time.perf_counter() - started
    labels = np.where(first == second, first, raw).astype(np.int64)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    student = load_agent(args.student)
    model, report = fit_student(
        student.model,
        Decisions(observations, masks, labels, games),
        FitSettings(epochs=args.epochs, kl=args.kl, lr=args.lr),
    )
    meta = {"consensus_distill": vars(args) | {"out": str(args.out)}}
    if student.reward is not None:
        meta["reward"] = dict(student.reward)
    export_agent(args.out / "agent.pt", model, meta)
    summary = {
        "games": args.games,
        "student_wins": int(sum(part[2] for part in parts)),
        "decisions": len(raw),
        "generate_seconds": round(generated, 1),
        "searches_agree": float(np.mean(first == second)),
        "student_agrees_with_first_search": float(np.mean(raw == first)),
        "consensus_differs_from_student": float(np.mean((first == second) & (raw != first))),
        "fit": [
            (e["epoch"], round(e["held_out_loss"], 3), round(e["held_out_agreement"], 3)) for e in report["epochs"]
        ],
        "best_epoch": report["best_epoch"],
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
