"""Quick evaluation (``training.selfplay.quick_eval``) on the seated-play driver, against the scalar engine."""

from __future__ import annotations

import numpy as np
import torch

from kahuna_env.agents import GreedyAgent, choose_action
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation
from kahuna_policy.model import ActorCritic, ModelConfig, sample_actions
from training.selfplay.quick_eval import FinishedGame, evaluate_policy


def _model(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(ModelConfig(hidden_sizes=(32,))).eval()


def scalar_evaluation(model: ActorCritic, agent, games: int, seed: int, deterministic: bool) -> list[tuple]:
    """The oracle: the same match played in ``KahunaGame`` objects, a tick at a time (policy games first)."""
    rng = np.random.default_rng([seed, 1])
    generator = torch.Generator().manual_seed(seed)
    deal_seeds = np.random.default_rng([seed, 0]).integers(2**63, size=(games + 1) // 2)
    boards = [KahunaGame(KahunaConfig(), seed=int(deal_seeds[g // 2])) for g in range(games)]
    moves = [0] * games
    active = list(range(games))
    while active:
        mine = [g for g in active if boards[g].current_player == g % 2]
        if mine:
            observations = np.stack([encode_observation(boards[g], boards[g].current_player) for g in mine])
            masks = np.stack([boards[g].action_mask().astype(bool) for g in mine])
            if deterministic:
                with torch.inference_mode():
                    logits, _ = model(torch.from_numpy(observations), torch.from_numpy(masks))
                actions = logits.argmax(dim=1).numpy()
            else:
                actions = sample_actions(model, observations, masks, generator)[0]
            for g, action in zip(mine, actions.tolist(), strict=True):
                boards[g].step(action)
                moves[g] += 1
        for g in active:
            if g not in mine:
                boards[g].step(choose_action(agent, boards[g], rng))
                moves[g] += 1
        active = [g for g in active if not boards[g].is_over]
    finished = []
    for g, game in enumerate(boards):
        outcome = 0.5 if game.winner is None else float(game.winner == g % 2)
        finished.append((g, g % 2, int(deal_seeds[g // 2]), outcome, game.scores[0], game.scores[1], moves[g]))
    return finished


def test_an_agent_opponent_plays_the_scalar_engines_games():
    for deterministic in (True, False):
        games: list[FinishedGame] = []
        result = evaluate_policy(
            _model(1), GreedyAgent(seed=5), 8, seed=3, deterministic=deterministic, on_game=games.append
        )
        expected = scalar_evaluation(_model(1), GreedyAgent(seed=5), 8, seed=3, deterministic=deterministic)
        assert [tuple(vars(game).values()) for game in games] == expected
        assert result.games == 8 and result.opponent == "greedy"
        assert result.wins + result.draws / 2 == sum(game[3] for game in expected)


def test_named_baselines_play_batched_seat_balanced_and_the_same_games_for_the_same_seed():
    runs = []
    for seed in (4, 4, 5):
        games: list[FinishedGame] = []
        result = evaluate_policy(_model(2), "greedy", 10, seed=seed, deterministic=False, on_game=games.append)
        runs.append((result, [tuple(vars(game).values()) for game in games]))
        assert [game.policy_seat for game in games] == [g % 2 for g in range(10)]
        assert all(games[2 * k].deal_seed == games[2 * k + 1].deal_seed for k in range(5))
        assert all(game.moves > 20 for game in games)
        margins = sum((g.score0 - g.score1) * (1 if g.policy_seat == 0 else -1) for g in games)
        assert result.margin_sum == margins
    assert runs[0] == runs[1]
    assert runs[0][1] != runs[2][1]
