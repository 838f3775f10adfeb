"""Fast batched evaluation of a policy network against a baseline, used during and at the end of training.

All games run side by side on the seated-play driver
(:func:`kahuna_env.seated.play_seated`): the policy's moves of all games are
one forward pass per tick; a baseline named ``"greedy"`` or ``"random"`` plays
all its games at once (:mod:`kahuna_env.agents.batched`; greedy decides from
the public state and its own hand only), an :class:`~kahuna_env.agents.Agent`
with ``act_batch`` (an agent file, a ``py:`` agent) all its games of a tick in
one call, any other opponent (``mcts``, a guided search) game by game through
:func:`kahuna_env.agents.choose_action` on a determinization
(:class:`~training.selfplay.policies.EntrantPolicy`).
Games are seat-balanced: games ``2k`` and ``2k+1`` share a deal, with the
policy first in one and second in the other.  The same ``seed`` gives the
same games, so evaluations during a run are comparable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import torch

from kahuna_arena.stats import Tally
from kahuna_env.agents import Agent, make_agent
from kahuna_env.agents.batched import BATCHED_BASELINES, make_batched_agent
from kahuna_env.engine import KahunaConfig
from kahuna_env.seated import BaselinePolicy, BatchPolicy, play_seated, seating_of
from kahuna_env.vector import KahunaBatch, StepResult
from kahuna_policy.model import ActorCritic
from training.selfplay.policies import EntrantPolicy, NetworkPolicy, TickObservations


@dataclasses.dataclass(frozen=True)
class QuickEvalResult(Tally):
    """Outcome of a match from the policy's side: an :class:`kahuna_arena.stats.Tally` that knows its opponent.

    The score ((wins + draws / 2) / games) and its 95% Wilson interval are
    those every evaluation of the project reports (``kahuna-eval`` too).

    Attributes:
        opponent: the opponent's name.
    """

    opponent: str = "opponent"

    def summary(self) -> str:
        """``vs greedy: score 0.850 [0.827, 0.871] over 1000 games; 849 W / 2 D / 149 L; mean margin +4.37``."""
        return f"vs {self.opponent}: {super().summary()}"

    def to_dict(self) -> dict[str, object]:
        """Plain values for ``final_eval.json``."""
        low, high = self.interval
        return {
            "opponent": self.opponent,
            "games": self.games,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "win_rate": self.win_rate,
            "score": self.score,
            "score_ci95": [low, high],
            "mean_margin": self.mean_margin,
        }


@dataclasses.dataclass(frozen=True)
class FinishedGame:
    """One game of :func:`evaluate_policy`, for ``on_game``.

    Attributes:
        index: game number (games ``2k`` and ``2k+1`` share a deal).
        policy_seat: the seat the policy played.
        deal_seed: the game's seed.
        policy_score: 1, 0.5 or 0 for the policy.
        score0, score1: final points of seat 0 and seat 1.
        moves: actions played.
    """

    index: int
    policy_seat: int
    deal_seed: int
    policy_score: float
    score0: int
    score1: int
    moves: int


def evaluate_policy(
    model: ActorCritic,
    opponent: str | Agent,
    games: int,
    seed: int = 0,
    deterministic: bool = True,
    game_config: KahunaConfig | None = None,
    on_game: Callable[[FinishedGame], None] | None = None,
    opponent_seed: int | None = None,
) -> QuickEvalResult:
    """Play ``games`` seat-balanced games of ``model`` against ``opponent`` (a baseline name or an :class:`Agent`).

    With ``deterministic`` the policy plays its most likely legal action,
    otherwise it samples (seeded from ``seed``).  ``on_game`` receives every
    game once all are over (the results store of ``eval.db`` keeps them).
    ``opponent_seed`` seeds the opponent's own choices (``greedy``'s tie-breaks,
    ``random``'s moves) apart from the deals; default ``seed``.
    """
    # Seats: the policy (0) in seat g % 2 of game g, the opponent (1) in the other; deals shared by pairs.
    rng = np.random.default_rng([seed, 1])
    generator = torch.Generator().manual_seed(seed)
    deal_seeds = np.random.default_rng([seed, 0]).integers(2**63, size=(games + 1) // 2)
    policy_seat = np.arange(games) % 2
    batch = KahunaBatch(games, game_config or KahunaConfig(), seed=0)
    batch.reset(game_seeds=[int(deal_seeds[g // 2]) for g in range(games)])
    model.eval()
    observations = TickObservations()
    policies = [
        NetworkPolicy(model, generator, argmax=deterministic, observations=observations),
        _opponent_policy(opponent, seed if opponent_seed is None else opponent_seed, rng, observations),
    ]
    seating = seating_of(np.arange(2)[None, :] == policy_seat[:, None], 0, 1)
    # Play: every game to its end, counting each game's actions.
    moves = np.zeros(games, dtype=np.int64)

    def count(result: StepResult) -> None:
        moves[result.player >= 0] += 1
        observations.clear()

    play_seated(batch, policies, seating, on_step=count)
    # Tally: the policy's score and margin in every game.
    tally = Tally()
    for g in range(games):
        seat = int(policy_seat[g])
        winner = int(batch.winner[g])
        outcome = 0.5 if winner < 0 else float(winner == seat)
        scores = batch.scores[g].tolist()
        tally = tally.add(outcome, scores[seat] - scores[1 - seat])
        if on_game is not None:
            on_game(FinishedGame(g, seat, int(deal_seeds[g // 2]), outcome, scores[0], scores[1], int(moves[g])))
    name = opponent if isinstance(opponent, str) else getattr(opponent, "name", "opponent")
    return QuickEvalResult(tally.wins, tally.draws, tally.losses, tally.margin_sum, opponent=name)


def _opponent_policy(
    opponent: str | Agent, seed: int, rng: np.random.Generator, observations: TickObservations
) -> BatchPolicy:
    """The opponent as a seat of the driver: a batched baseline for its name, else an :class:`EntrantPolicy`."""
    if isinstance(opponent, str) and opponent in BATCHED_BASELINES:
        return BaselinePolicy(make_batched_agent(opponent, seed=seed))
    agent = make_agent(opponent, seed=seed) if isinstance(opponent, str) else opponent
    return EntrantPolicy(agent, rng, observations)
