"""Which games do agents lose to a baseline, and do they lose the same ones? (docs/TRAINING.md, "The thirteenth run")

    python benchmarks/loss_overlap.py champion runs/champion-v12/final_agent.pt --games 10000 --seed 500 --ensemble

Every agent (a shipped name or a policy file) plays the same ``--games`` seat-balanced games against
``--opponent`` (``greedy`` or ``random``, batched) with its most likely move:
:func:`training.selfplay.quick_eval.evaluate_policy`, whose deals come from ``--seed`` alone, so game
``g`` is the same deal and seat for every agent.  Prints:

* each agent's W-D-L and score with its 95% Wilson interval;
* for each pair of agents, the games both lost, beside the number expected if their losses were
  independent of the game (``losses_a * losses_b / games``);
* how many games were lost by exactly k of the agents;
* with ``--opponent-seeds S ...``: every agent plays the games once per seed of the opponent's own
  random choices (``greedy`` breaks ties at random), the deals unchanged, and each (agent, seed) is
  one entry of the comparisons above: an agent against itself shows how much of *which* games are
  lost comes from the opponent's tie-breaks rather than from the deal;
* with ``--ensemble``: the ensemble that plays the argmax of the agents' mean log-probabilities
  (each agent's masked log-softmax, averaged), on the same games;
* with ``--snapshots``: each agent is a training checkpoint (``RUN/checkpoints/latest.pt``) and also
  enters with every league snapshot it stores (``AGENT@uN``, the snapshot of update N), so one
  command shows whether any of a run's recent networks loses fewer games than its last one, and
  how far apart they are; it ends with the lowest count and the mean and spread of the counts.

With more than 8 entries the pairs are left out of the printout (``--json`` has them all).

``--json FILE`` also writes those figures.  Single-threaded, no search: 10,000 games take about
10 seconds per agent on a 2-core machine.  The same arguments give the same games and figures.
"""

from __future__ import annotations

import collections
import itertools
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from kahuna_env.cli import OneLineParser, even_games, exit_with_error, first_line, same_file, write_text_atomic
from kahuna_policy.model import masked_logits

PROGRAM = "loss_overlap"
OPPONENTS = ("greedy", "random")
MAX_PRINTED_ENTRIES = 8


def checkpoint_snapshots(path: str) -> list[tuple[str, torch.nn.Module]]:
    """The league snapshots a training checkpoint stores, as ``(f"{path}@u{update}", network)``, in its order.

    Each snapshot is checked as an agent file is (:func:`kahuna_policy.model.model_from_payload`: the
    checkpoint's network, or the one the snapshot's own ``model_config`` names, with the snapshot's
    weights); a file with no snapshot, or a malformed one, is
    a one-line ``ValueError``.
    """
    from kahuna_policy.agent import read_policy_file
    from kahuna_policy.model import model_from_payload

    if not Path(path).is_file():
        raise ValueError(f"--snapshots reads training checkpoints, and {path} is not a file")
    payload = read_policy_file(path)
    pool = payload.get("pool")
    if not isinstance(pool, list) or not pool:
        raise ValueError(f"{path} stores no league snapshots (RUN/checkpoints/latest.pt does)")
    snapshots = []
    for k, entry in enumerate(pool):
        update = entry.get("update") if isinstance(entry, Mapping) else None
        if not isinstance(update, int) or isinstance(update, bool) or "model_state" not in entry:
            raise ValueError(f"{path}: league snapshot {k} is not an update number with weights")
        snapshot = dict(payload, model_state=entry["model_state"])
        if "model_config" in entry:  # a snapshot of another architecture records its own (OpponentPool.state)
            snapshot["model_config"] = entry["model_config"]
        network = model_from_payload(snapshot, source=f"{path} snapshot {k}")
        snapshots.append((f"{path}@u{update}", network))
    return snapshots


class MeanLogProbEnsemble(torch.nn.Module):
    """Networks that play together: logits are the members' masked log-softmax averaged, values averaged."""

    def __init__(self, members: Sequence[torch.nn.Module]) -> None:
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one network")
        self.members = torch.nn.ModuleList(members)

    def forward(self, observation: torch.Tensor, action_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        outputs = [member(observation, action_mask) for member in self.members]
        log_probs = torch.stack([torch.log_softmax(logits.float(), dim=-1) for logits, _ in outputs]).mean(0)
        return masked_logits(log_probs, action_mask), torch.stack([values.float() for _, values in outputs]).mean(0)


def overlap_table(lost: Mapping[str, set[int]], games: int) -> dict[str, object]:
    """Pairwise losses in common (with the count expected under independence) and how many agents lost each game."""
    pairs = [
        {
            "agents": [first, second],
            "both_lost": len(lost[first] & lost[second]),
            "expected_if_independent": len(lost[first]) * len(lost[second]) / games,
        }
        for first, second in itertools.combinations(lost, 2)
    ]
    per_game = collections.Counter(game for games_lost in lost.values() for game in games_lost)
    lost_by = collections.Counter(per_game.values())
    return {"pairs": pairs, "games_lost_by_k_agents": {k: lost_by[k] for k in sorted(lost_by)}}


def spread_line(lost: Mapping[str, set[int]]) -> str:
    """The lowest count of games lost (and by whom), and the mean and standard deviation of the counts."""
    counts = {name: len(games) for name, games in lost.items()}
    best = min(counts, key=counts.__getitem__)
    values = list(counts.values())
    mean = statistics.fmean(values)
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return (
        f"games lost over {len(values)} entries: lowest {counts[best]} ({best}), mean {mean:.1f}, "
        f"standard deviation {spread:.1f} (binomial noise alone: {mean**0.5:.1f} at low loss rates)"
    )


def _parser() -> OneLineParser:
    parser = OneLineParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    parser.add_argument("agents", nargs="+", help="shipped agent names or policy files")
    parser.add_argument("--opponent", choices=OPPONENTS, default="greedy")
    parser.add_argument("--games", type=even_games, default=10000, help="seat-balanced games (even)")
    parser.add_argument("--seed", type=int, default=500, help="the deals (the same for every agent)")
    parser.add_argument(
        "--opponent-seeds",
        type=int,
        nargs="+",
        help="play every agent once per seed of the opponent's own choices (greedy's tie-breaks), same deals",
    )
    parser.add_argument("--ensemble", action="store_true", help="also play the agents' mean-log-probability ensemble")
    parser.add_argument(
        "--snapshots", action="store_true", help="the agents are training checkpoints: also play their league snapshots"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if len(set(args.agents)) != len(args.agents):
        exit_with_error(PROGRAM, "an agent is named twice")
    if args.json is not None and any(Path(spec).exists() and same_file(Path(spec), args.json) for spec in args.agents):
        exit_with_error(PROGRAM, f"--json {args.json} is one of the agents")
    from kahuna_policy.agent import load_agent
    from training.selfplay.quick_eval import evaluate_policy

    torch.set_num_threads(1)
    models = {}
    for spec in args.agents:
        try:
            models[spec] = load_agent(spec).model
        except (OSError, ValueError) as error:
            exit_with_error(PROGRAM, f"agent {spec!r}: {first_line(error)}")
        if args.snapshots:
            try:
                models.update(checkpoint_snapshots(spec))
            except (OSError, ValueError) as error:
                exit_with_error(PROGRAM, first_line(error))
    results: dict[str, dict[str, object]] = {}
    lost: dict[str, set[int]] = {}

    def play(name: str, model: torch.nn.Module, opponent_seed: int | None) -> dict[str, object]:
        """Play the games; record the result and the games lost under ``name``; return the result."""
        games_lost: set[int] = set()
        result = evaluate_policy(
            model,
            args.opponent,
            args.games,
            seed=args.seed,
            on_game=lambda game: games_lost.add(game.index) if game.policy_score < 0.5 else None,
            opponent_seed=opponent_seed,
        )
        print(f"{name}: {result.summary()}", flush=True)
        lost[name] = games_lost
        return result.to_dict()

    opponent_seeds = args.opponent_seeds or [None]

    def entry(name: str, opponent_seed: int | None) -> str:
        return name if args.opponent_seeds is None else f"{name} (opponent seed {opponent_seed})"

    for spec, model in models.items():
        for opponent_seed in opponent_seeds:
            name = entry(spec, opponent_seed)
            results[name] = play(name, model, opponent_seed)
    table = overlap_table(lost, args.games)
    if len(lost) <= MAX_PRINTED_ENTRIES:
        for pair in table["pairs"]:
            first, second = pair["agents"]
            expected = pair["expected_if_independent"]
            print(f"lost by both {first} and {second}: {pair['both_lost']} (independent: {expected:.1f})")
    else:
        pairs = len(table["pairs"])
        print(f"{pairs} pairs of entries: not printed for more than {MAX_PRINTED_ENTRIES} entries (--json)")
    counts = table["games_lost_by_k_agents"]
    print("games lost by exactly k agents: " + ", ".join(f"k={k}: {n}" for k, n in counts.items()))
    if args.snapshots:
        print(spread_line(lost))
    report: dict[str, object] = {"opponent": args.opponent, "games": args.games, "seed": args.seed}
    report.update(agents=results, opponent_seeds=args.opponent_seeds, **table)
    if args.ensemble:
        ensemble = MeanLogProbEnsemble(list(models.values())).eval()
        names = [entry("ensemble", opponent_seed) for opponent_seed in opponent_seeds]
        played = {name: play(name, ensemble, seed) for name, seed in zip(names, opponent_seeds, strict=True)}
        report["ensemble"] = {"members": list(models), "results": played}
    if args.json is not None:
        try:
            write_text_atomic(args.json, json.dumps(report, indent=1) + "\n")
        except OSError as error:
            exit_with_error(PROGRAM, f"cannot write {args.json}: {first_line(error)}", code=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
