"""Search-improved policy targets (training/selfplay/search_targets.py) and the batch copies they search on."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.vector import KahunaBatch
from policy.model import ActorCritic, ModelConfig
from training.cli import main
from training.league.pool import KIND_GREEDY, KIND_LATEST
from training.ppo.config import ConfigError, PPOConfig, load_config
from training.ppo.metrics import read_metrics
from training.ppo.trainer import ppo_update, search_settings
from training.selfplay.batched_rollout import play_games_batched
from training.selfplay.rollout import GameBatch, finish_rollout
from training.selfplay.search_targets import GumbelSettings, GumbelTargets, outcome_estimates

SMOKE = "configs/smoke.yaml"
SETTINGS = GumbelSettings(fraction=0.5, candidates=4, island_shaping=1.0)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py: no OpenMP spinning on a busy machine


def small_model(seed: int = 0) -> ActorCritic:
    torch.manual_seed(seed)
    return ActorCritic(ModelConfig(architecture="board", hidden_sizes=(32,), line_width=8)).eval()


def played_batch(n: int = 6, steps: int = 30, seed: int = 0) -> KahunaBatch:
    """``n`` games, each some random actions in (none over)."""
    batch = KahunaBatch(n, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        batch.step(batch.random_actions(rng), active=~batch.over)
    assert not batch.over.any()
    return batch


def game_batch(n: int = 16) -> GameBatch:
    kinds = np.array([KIND_LATEST] * (n // 2) + [KIND_GREEDY] * (n - n // 2))
    seats = np.zeros((n, 2), dtype=bool)
    seats[: n // 2] = True
    seats[n // 2 :, 0] = True
    return GameBatch(
        games=np.arange(n),
        seeds=np.arange(n) + 100,
        kinds=kinds,
        learner_seats=seats,
        snapshots=np.full(n, -1),
        rng_seed=5,
        torch_seed=6,
    )


# ------------------------------------------------------------------ KahunaBatch.take
def test_take_copies_the_games_and_the_copies_step_as_the_scalar_engine_without_touching_the_originals():
    batch = played_batch()
    before = batch.to_dicts()
    rows = [3, 3, 0, 5]
    copies = batch.take(rows, seeds=[11, 12, 13, 14])
    assert copies.to_dicts() == [before[i] for i in rows]
    assert copies.game_seeds == [11, 12, 13, 14]
    # Each copy is KahunaGame.from_dict(position, seed=its seed), reshuffles included.
    games = [KahunaGame.from_dict(before[i], seed=s) for i, s in zip(rows, [11, 12, 13, 14], strict=True)]
    rng = np.random.default_rng(1)
    for _ in range(300):
        live = ~copies.over
        if not live.any():
            break
        actions = copies.random_actions(rng)
        copies.step(actions, active=live)
        for k in np.flatnonzero(live).tolist():
            games[k].step(int(actions[k]))
        assert copies.to_dicts() == [game.to_dict() for game in games]
    assert copies.over.all()
    assert batch.to_dicts() == before


def test_take_refuses_bad_indices_and_seeds_in_one_line():
    batch = played_batch(n=3)
    with pytest.raises(IndexError, match="3"):
        batch.take([0, 3], seeds=[1, 2])
    with pytest.raises(ValueError, match="seed"):
        batch.take([0, 1], seeds=[1])
    with pytest.raises(ValueError, match="seed"):
        batch.take([0], seeds=[-1])


# ------------------------------------------------------------------ the targets
def test_collection_with_search_plays_the_same_games_and_gives_distributions_over_legal_actions():
    model = small_model()
    plain = play_games_batched(game_batch(8), model, [], KahunaConfig(), 1.0, True)
    searched = play_games_batched(game_batch(8), model, [], KahunaConfig(), 1.0, True, search=SETTINGS)
    again = play_games_batched(game_batch(8), model, [], KahunaConfig(), 1.0, True, search=SETTINGS)
    assert plain.search_targets is None and plain.searched is None
    for name in ("actions", "log_probs", "values", "observations", "masks", "rewards", "trajectory"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(searched, name))
    np.testing.assert_array_equal(searched.searched, again.searched)  # reproducible
    np.testing.assert_array_equal(searched.search_targets, again.search_targets)
    chosen = searched.searched
    choice = searched.masks.sum(1) >= 2
    assert not chosen[~choice].any()  # a forced move is never searched
    assert 0.4 < chosen.sum() / choice.sum() < 0.6
    targets = searched.search_targets[chosen]
    np.testing.assert_allclose(targets.sum(1), 1.0, atol=1e-5)
    assert (targets[~searched.masks[chosen]] == 0).all()
    assert (searched.search_targets[~chosen] == 0).all()
    rollout = finish_rollout([searched, searched], 1.0, 0.95, 1.0)
    assert rollout.searched.sum() == 2 * chosen.sum() and len(rollout.search_targets) == 2 * len(searched)


def test_the_improved_policy_raises_the_better_candidate_and_keeps_the_prior_among_equals():
    search = GumbelTargets(small_model(), SETTINGS, np.random.default_rng(0))
    legal = np.zeros((2, 179), dtype=bool)
    legal[:, [3, 7, 9]] = True
    logits = np.where(legal, 0.0, -1e9)
    logits[:, 9] = 1.0  # the policy's favourite
    ranked = np.array([[3, 7, 9, 0], [3, 7, 9, 0]])
    valid = np.array([[True, True, False, False], [True, True, False, False]])
    scores = np.array([[0.9, -0.9, np.nan, np.nan], [0.2, 0.2, np.nan, np.nan]])
    root = np.array([0.0, 0.2])
    target = search._improved(logits, legal, ranked, valid, scores, root)
    prior = np.exp(logits[0, [3, 7, 9]]) / np.exp(logits[0, [3, 7, 9]]).sum()
    assert target[0, 3] > prior[0] and target[0, 7] < prior[1]
    assert target[0, 3] > target[0, 9] > target[0, 7]  # the unvisited favourite gets the mixed value, in between
    # Every legal action valued alike (the candidates' score equals the mixed value): the prior comes back.
    np.testing.assert_allclose(target[1, [3, 7, 9]], prior, atol=1e-6)
    assert (target[:, ~legal[0]] == 0).all()


def ending_position() -> tuple[dict, int]:
    """A position and an action of its player to move that ends the game (found by random play)."""
    rng = np.random.default_rng(0)
    for seed in range(50):
        game = KahunaGame(seed=seed)
        while not game.is_over:
            for action in game.legal_actions():
                trial = game.clone()
                trial.step(action)
                if trial.is_over and trial.winner is not None:
                    return game.to_dict(), action
            legal = game.legal_actions()
            game.step(legal[rng.integers(len(legal))])
    raise AssertionError("no game-ending action found")


def test_scores_are_the_learners_a_finished_game_its_result_and_the_opponents_turn_negated():
    position, ending = ending_position()
    batch = KahunaBatch.from_dicts([position], seeds=[3])
    mover = int(batch.current[0])
    final = KahunaGame.from_dict(position, seed=3)
    final.step(ending)
    model = small_model()
    search = GumbelTargets(model, SETTINGS, np.random.default_rng(0))
    legal = np.flatnonzero(batch.legal_masks()[0])
    scores = search._score(batch, np.zeros(len(legal), dtype=np.intp), legal)
    assert scores[legal.tolist().index(ending)] == (1.0 if final.winner == mover else -1.0)
    for k, action in enumerate(legal.tolist()):
        after = KahunaGame.from_dict(position, seed=3)
        after.step(action)
        if after.is_over:
            continue
        copy = KahunaBatch.from_dicts([after.to_dict()])
        observation = copy.observations()
        with torch.inference_mode():
            _, value = model(torch.from_numpy(observation), torch.from_numpy(copy.legal_masks().copy()))
        estimate = outcome_estimates(value.numpy().astype(np.float64), observation, SETTINGS)[0]
        expected = estimate if after.current_player == mover else -estimate
        assert scores[k] == pytest.approx(expected, abs=1e-5)
    assert batch.to_dicts()[0] == KahunaBatch.from_dicts([position]).to_dicts()[0]  # the original is untouched


# ------------------------------------------------------------------ learning from them
def test_the_update_moves_the_policy_towards_the_search_targets():
    model = small_model()
    played = play_games_batched(game_batch(), model, [], KahunaConfig(), 1.0, True, search=SETTINGS)
    rollout = finish_rollout([played], 1.0, 0.95, 1.0)
    chosen = torch.from_numpy(rollout.searched)
    targets = torch.from_numpy(rollout.search_targets)[chosen]

    own_entropy = float(-(targets * torch.log(targets.clamp_min(1e-30))).sum(-1).mean())

    def divergence(network: ActorCritic) -> float:
        """The mean KL divergence from the targets to the network's policy on the searched decisions."""
        with torch.no_grad():
            logits, _ = network(torch.from_numpy(rollout.observations), torch.from_numpy(rollout.masks))
        return float(-(targets * torch.log_softmax(logits[chosen], -1)).sum(-1).mean()) - own_entropy

    ppo = PPOConfig(update_epochs=12, minibatch_size=256, ent_coef=0.0)
    results = {}
    for coef in (0.0, 5.0):
        trained = small_model()
        optimizer = torch.optim.Adam(trained.parameters(), lr=1e-2)
        stats = ppo_update(trained, optimizer, rollout, ppo, torch.Generator().manual_seed(0), search_coef=coef)
        results[coef] = (divergence(trained), stats)
    start = divergence(model)
    assert start > 0.05  # the targets differ from the policy that collected them
    assert "search_loss" not in results[0.0][1] and results[5.0][1]["search_loss"] > 0
    assert results[5.0][0] < 0.6 * start and results[5.0][0] < 0.6 * results[0.0][0], (start, results)


def test_search_settings_come_from_the_config_and_bad_values_are_one_line_errors():
    assert search_settings(load_config(SMOKE)) is None  # off by default
    settings = search_settings(load_config(SMOKE, ["search.fraction=0.25", "search.candidates=6"]))
    assert settings == GumbelSettings(0.25, 6, 50.0, 0.1, 1.0, 1.0)
    for override, message in (
        ("search.fraction=1.5", "search.fraction: must be in [0, 1]"),
        ("search.candidates=1", "search.candidates: must be in [2, 32]"),
        ("search.coef=-1", "search.coef: must be >= 0"),
        ("search.c_scale=0", "search.c_scale: must be > 0"),
        ("search.budget=3", "budget"),
    ):
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")) as error:
            load_config(SMOKE, [override])
        assert "\n" not in str(error.value)


def test_a_training_run_with_search_targets_logs_them_and_is_reproducible(tmp_path):
    overrides = ["--set", "search.fraction=0.3", "--set", "total_updates=2", "--set", "eval.every=0"]
    for name in ("a", "b"):
        assert main(["--config", SMOKE, "--run-dir", str(tmp_path / name), *overrides]) == 0
    first, second = (read_metrics(tmp_path / name / "metrics.jsonl") for name in ("a", "b"))
    assert len(first) == 2
    for record, again in zip(first, second, strict=True):
        assert record["search/searched_decisions"] > 0 and record["losses/search_loss"] > 0
        assert record["losses/search_loss"] == again["losses/search_loss"]
        assert record["losses/policy_loss"] == again["losses/policy_loss"]
