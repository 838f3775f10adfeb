"""Fast batched evaluation of a policy network against a baseline, used during and at the end of training.

All games run side by side; the policy's moves of all games are one forward
pass per tick, the baseline moves go through
:func:`kahuna_env.agents.choose_action` (a determinization for ``greedy``).
Games are seat-balanced: games ``2k`` and ``2k+1`` share a deal, with the
policy first in one and second in the other.  The same ``seed`` gives the
same games, so evaluations during a run are comparable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import torch

from arena.stats import Tally
from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import Agent, choose_action, make_agent
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import OBSERVATION_SIZE, encode_observation
from policy.model import ActorCritic, sample_actions


@dataclasses.dataclass(frozen=True)
class QuickEvalResult(Tally):
    """Outcome of a match from the policy's side: an :class:`arena.stats.Tally` that knows its opponent.

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


@torch.inference_mode()
def _greedy_actions(model: ActorCritic, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    logits, _ = model(torch.from_numpy(observations), torch.from_numpy(masks))
    return logits.argmax(dim=1).numpy()


def evaluate_policy(
    model: ActorCritic,
    opponent: str | Agent,
    games: int,
    seed: int = 0,
    deterministic: bool = True,
    game_config: KahunaConfig | None = None,
    on_game: Callable[[FinishedGame], None] | None = None,
) -> QuickEvalResult:
    """Play ``games`` seat-balanced games of ``model`` against ``opponent`` (a baseline name or an :class:`Agent`).

    With ``deterministic`` the policy plays its most likely legal action,
    otherwise it samples (seeded from ``seed``).  ``on_game`` receives every
    game once all are over (the results store of ``eval.db`` keeps them).
    """
    rng = np.random.default_rng([seed, 1])
    agent = make_agent(opponent, seed=seed) if isinstance(opponent, str) else opponent
    generator = torch.Generator().manual_seed(seed)
    config = game_config or KahunaConfig()
    deal_seeds = np.random.default_rng([seed, 0]).integers(2**63, size=(games + 1) // 2)
    boards = [KahunaGame(config, seed=int(deal_seeds[g // 2])) for g in range(games)]
    policy_seat = [g % 2 for g in range(games)]
    observations = np.zeros((games, OBSERVATION_SIZE), dtype=np.float32)
    masks = np.zeros((games, NUM_ACTIONS), dtype=bool)
    model.eval()
    moves = [0] * games
    active = list(range(games))
    while active:
        policy_games = [g for g in active if boards[g].current_player == policy_seat[g]]
        opponent_games = [g for g in active if boards[g].current_player != policy_seat[g]]
        if policy_games:
            n = len(policy_games)
            masks[:n] = False
            for j, g in enumerate(policy_games):
                game = boards[g]
                encode_observation(game, game.current_player, out=observations[j])
                masks[j, game.legal_actions()] = True
            if deterministic:
                actions = _greedy_actions(model, observations[:n], masks[:n])
            else:
                actions = sample_actions(model, observations[:n], masks[:n], generator)[0]
            for g, action in zip(policy_games, actions.tolist(), strict=True):
                boards[g].step(action)
                moves[g] += 1
        for g in opponent_games:
            boards[g].step(choose_action(agent, boards[g], rng))
            moves[g] += 1
        active = [g for g in active if not boards[g].is_over]
    tally = Tally()
    for g, game in enumerate(boards):
        seat = policy_seat[g]
        outcome = 0.5 if game.winner is None else float(game.winner == seat)
        tally = tally.add(outcome, game.scores[seat] - game.scores[1 - seat])
        if on_game is not None:
            on_game(FinishedGame(g, seat, int(deal_seeds[g // 2]), outcome, game.scores[0], game.scores[1], moves[g]))
    name = opponent if isinstance(opponent, str) else getattr(agent, "name", "opponent")
    return QuickEvalResult(tally.wins, tally.draws, tally.losses, tally.margin_sum, opponent=name)
