"""Matches: the play loop every arena tool uses, and the seeded games of an evaluation.

:func:`play` is the loop, :func:`kahuna_env.match.play` (the one scalar play loop,
re-exported here with :func:`agent_chooser`): it asks the chooser of the player
to move for an action, applies it with the rules engine and reports it to a
callback, until the game is over or a chooser gives up (returns ``None``).  The
tools differ only in their choosers and callbacks:

* ``kahuna-eval`` — agents (:func:`agent_chooser`), timed; :func:`play_task`.
* ``kahuna-play`` — a human reading stdin in one seat, an agent in the other.
* ``kahuna-replay`` — the recorded actions (:func:`kahuna_arena.replay.replay`).
* ``kahuna-demo`` — two baselines, one printed line per turn.

Seeds of an evaluation (:func:`schedule`): games ``2m`` and ``2m+1`` of a
pairing share a deal (the same game seed) with the seats swapped, so every
entrant plays each seat exactly ``games / 2`` times and luck of the deal
cancels out between the two.  Every seed of game ``k`` of the pairing
``(A, B)`` (the deal, the agents' own generators, the determinizations
handed to search agents) is derived with :class:`numpy.random.SeedSequence`
from ``(seed, A, B, k)``, so a game is a pure function of those and the
rules: results are identical for any number of workers and whatever other
entrants take part.

With ``common_deals=True`` (``kahuna-eval --common-deals``) the seeds no
longer depend on the pairing: the deal of game ``k`` comes from
``(seed, k // 2)``, each agent's own generator from ``(seed, its name, k)``
and the determinizations from ``(seed, k)``.  Every pairing, and every
evaluation with the same seed, then plays the same deals against the same
opponent behaviour: ``A`` against ``greedy`` and ``B`` against ``greedy``
are paired game by game.
"""

from __future__ import annotations

import dataclasses
import time
import zlib
from collections.abc import Sequence

import numpy as np

from kahuna_env.agents import Agent
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.match import Chooser, agent_chooser, play
from kahuna_env.match import OnAction as OnAction  # the arena's tools import the loop's names from here too


# ---------------------------------------------------------------------------------------------- evaluation games
@dataclasses.dataclass(frozen=True)
class GameTask:
    """One game of a pairing: who sits where and every seed it uses.

    Attributes:
        pairing: index of the pairing in the report.
        index: game number within the pairing (0-based).
        seats: entrant indices in seat 0 and seat 1.
        game_seed: seeds the deal and the reshuffles (shared by games ``2m`` and ``2m+1``).
        agent_seeds: seeds the agents in seat 0 and seat 1 are reset with.
        choice_seed: seeds the determinizations handed to search agents.
    """

    pairing: int
    index: int
    seats: tuple[int, int]
    game_seed: int
    agent_seeds: tuple[int, int]
    choice_seed: int


@dataclasses.dataclass(frozen=True)
class GameResult:
    """Outcome of one game.

    Attributes:
        task: the game that was played.
        scores: final points of seats 0 and 1.
        final_points: points of the final scoring, seats 0 and 1.
        winner: winning seat, or ``None`` for a draw.
        actions: every action of the game (empty unless recorded).
        moves: number of actions played.
        decisions: actions chosen by the agents of seat 0 and seat 1.
        seconds: wall time of the game in its worker (not part of the result's identity).
        think_seconds: time the agents of seat 0 and seat 1 spent choosing (not part of the identity).
    """

    task: GameTask
    scores: tuple[int, int]
    final_points: tuple[int, int]
    winner: int | None
    actions: tuple[int, ...]
    moves: int
    decisions: tuple[int, int]
    seconds: float = dataclasses.field(compare=False)
    think_seconds: tuple[float, float] = dataclasses.field(compare=False, default=(0.0, 0.0))


def _stable_id(spec: str) -> int:
    return zlib.crc32(spec.encode("utf-8"))


MAX_GAMES = 100_000
"""The most games one evaluation plays, all pairings together (its whole schedule is seeded and held in memory
before the first game is played, and its results after)."""
MAX_WORKERS = 256
"""The most worker processes an evaluation starts."""
MAX_BASE_SEED = 2**63 - 1
"""The largest base seed of an evaluation (the results store keeps it as a 64-bit signed integer)."""


def check_games(games: int) -> None:
    """Raise ``ValueError`` unless ``games`` is a positive even integer (seat balance needs pairs of games)
    of at most :data:`MAX_GAMES`."""
    if isinstance(games, bool) or not isinstance(games, int) or games < 2 or games % 2:
        raise ValueError(
            "games per pairing must be a positive even number (each deal is played twice, seats swapped), "
            f"got {games!r}"
        )
    if games > MAX_GAMES:
        raise ValueError(f"games per pairing must be at most {MAX_GAMES:,}, got {games:,}")


def check_evaluation_size(entrants: int, games: int) -> None:
    """Raise ``ValueError`` unless a round robin of ``entrants`` with ``games`` per pairing is within the bounds.

    At most :data:`MAX_GAMES` games in all (checked before any entrant is built or any seed drawn).
    """
    check_games(games)
    pairings = entrants * (entrants - 1) // 2
    if pairings * games > MAX_GAMES:
        raise ValueError(
            f"{entrants} entrants play {pairings:,} pairings of {games:,} games, {pairings * games:,} games in all; "
            f"one evaluation plays at most {MAX_GAMES:,} (play several, with other --seed values, into one --db)"
        )


COMMON_DEALS_TAG = 0xC0DE_DEA1
"""The last entropy word of every common-deals seed: no default seed's entropy ends with it (see :func:`schedule`)."""
_DEAL, _AGENT, _CHOICE = 0, 1, 2  # what a common-deals seed is for: the word before the tag


def _common_seed(seed: int, role: int, *fields: int) -> int:
    """A common-deals seed: ``SeedSequence([seed, *fields, role, COMMON_DEALS_TAG])``, one 64-bit word."""
    entropy = [seed, *fields, role, COMMON_DEALS_TAG]
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint64)[0])


def schedule(entrants: Sequence[str], games: int, seed: int, common_deals: bool = False) -> list[GameTask]:
    """Every game of a round robin over ``entrants`` with ``games`` (even) games per pairing.

    Game ``k`` of a pairing puts its first-named entrant in seat 0 when ``k``
    is even, and games ``2m`` and ``2m+1`` share a deal.  By default every
    seed of game ``k`` of the pairing ``(A, B)`` comes from ``(seed, A, B,
    k)`` (the agent seeds by seat).  With ``common_deals`` the game seed
    comes from ``(seed, k // 2)``, each entrant's agent seed from ``(seed,
    its name, k)`` and the choice seed from ``(seed, k)``, so every pairing
    plays the same deals and an entrant behaves alike against any opponent.

    The two schemes cannot share a seed's entropy: :class:`numpy.random.SeedSequence`
    reads its entropy as a run of 32-bit words (zero-padded to four), the
    default scheme's runs end in ``k // 2`` or ``1`` and are at least four
    words long, and the common-deals runs are too and end in
    :data:`COMMON_DEALS_TAG` (above ``k // 2`` for fewer than ``2**32`` games).
    """
    check_evaluation_size(len(entrants), games)
    tasks = []
    pairing = 0
    for a in range(len(entrants)):
        for b in range(a + 1, len(entrants)):
            ids = (_stable_id(entrants[a]), _stable_id(entrants[b]))
            for k in range(games):
                seats = (a, b) if k % 2 == 0 else (b, a)
                if common_deals:
                    game_seed = _common_seed(seed, _DEAL, k // 2)
                    seat_ids = ids if k % 2 == 0 else ids[::-1]
                    agent_seeds = (
                        _common_seed(seed, _AGENT, seat_ids[0], k),
                        _common_seed(seed, _AGENT, seat_ids[1], k),
                    )
                    choice_seed = _common_seed(seed, _CHOICE, k)
                else:
                    deal = np.random.SeedSequence([seed, *ids, k // 2]).generate_state(1, dtype=np.uint64)[0]
                    own = np.random.SeedSequence([seed, *ids, k, 1]).generate_state(3, dtype=np.uint64)
                    game_seed, agent_seeds, choice_seed = int(deal), (int(own[0]), int(own[1])), int(own[2])
                tasks.append(
                    GameTask(
                        pairing=pairing,
                        index=k,
                        seats=seats,
                        game_seed=game_seed,
                        agent_seeds=agent_seeds,
                        choice_seed=choice_seed,
                    )
                )
            pairing += 1
    return tasks


def play_task(
    agents: Sequence[Agent],
    task: GameTask,
    config: KahunaConfig | None = None,
    record: bool = False,
) -> GameResult:
    """Play the game ``task`` between ``agents`` (the agents of seat 0 and seat 1), resetting them with its seeds."""
    started = time.perf_counter()
    for agent, agent_seed in zip(agents, task.agent_seeds, strict=True):
        agent.reset(agent_seed)
    game = KahunaGame(config, seed=task.game_seed)
    rng = np.random.default_rng(task.choice_seed)
    decisions = [0, 0]
    think = [0.0, 0.0]

    def timed(seat: int) -> Chooser:
        choose = agent_chooser(agents[seat], rng)

        def chooser(game: KahunaGame) -> int:
            before = time.perf_counter()
            action = choose(game)
            think[seat] += time.perf_counter() - before
            decisions[seat] += 1
            return action

        return chooser

    actions = play(game, (timed(0), timed(1)))
    scores = game.scores
    final = game.final_points
    return GameResult(
        task=task,
        scores=(scores[0], scores[1]),
        final_points=(final[0], final[1]),
        winner=game.winner,
        actions=tuple(actions) if record else (),
        moves=len(actions),
        decisions=(decisions[0], decisions[1]),
        seconds=time.perf_counter() - started,
        think_seconds=(think[0], think[1]),
    )
