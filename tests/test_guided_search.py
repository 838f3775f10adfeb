"""The search guided by a network (``SOURCE@mcts:N``): legality, seeds, hidden information, priors, entrants."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import midgame_positions

from kahuna_arena.entrants import entrant_label, is_checkpoint_spec, resolve_entrant, split_search
from kahuna_arena.eval_cli import main as eval_main
from kahuna_arena.evaluation import run_evaluation
from kahuna_env.agents import MCTSAgent, RandomAgent, choose_action
from kahuna_env.agents.mcts import action_priors
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import OBSERVATION_LAYOUT, encode_observation
from kahuna_policy.agent import PolicyAgent
from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload
from kahuna_policy.search import GuidedMCTSAgent, NetworkEvaluator, load_guided_agent


@pytest.fixture(scope="module")
def model() -> ActorCritic:
    torch.manual_seed(0)
    return ActorCritic(ModelConfig(hidden_sizes=(32,))).eval()


@pytest.fixture(scope="module")
def policy_file(tmp_path_factory, model):
    path = tmp_path_factory.mktemp("guided") / "tiny.pt"
    torch.save(agent_payload(model, {"run": "test"}), path)
    return path


def _one_hot_model(action: int, value: float = 0.0) -> ActorCritic:
    """An MLP network whose policy puts (almost) all mass on ``action`` when legal, and whose value is ``value``."""
    net = ActorCritic(ModelConfig(hidden_sizes=(8,)))
    with torch.no_grad():
        net.policy_head.weight.zero_()
        net.policy_head.bias.zero_()
        net.policy_head.bias[action] = 50.0
        net.value_head.weight.zero_()
        net.value_head.bias.fill_(value)
    return net.eval()


class RecordingEvaluator(NetworkEvaluator):
    """Keeps every state the search asks about."""

    def __init__(self, model):
        super().__init__(model)
        self.seen: list[KahunaGame] = []

    def evaluate(self, states, legal):
        self.seen.extend(states)
        return super().evaluate(states, legal)


# ---------------------------------------------------------------------------------------------- the search
def test_guided_search_plays_only_legal_actions_through_a_whole_game(model):
    agent = GuidedMCTSAgent(model, simulations=6, seed=0)
    game = KahunaGame(seed=2)
    players = (agent, RandomAgent(seed=1))
    rng = np.random.default_rng(0)
    while not game.is_over:
        action = choose_action(players[game.current_player], game, rng)
        assert action in game.legal_actions()
        game.step(action)
    assert agent.searched_moves > 10


def test_the_same_seed_gives_the_same_moves_and_the_same_tree(model):
    for game in midgame_positions(6, seed=3):
        roots, moves = [], []
        for _ in range(2):
            agent = GuidedMCTSAgent(model, simulations=24, seed=9)
            moves.append(choose_action(agent, game, np.random.default_rng(4)))
            root = agent.search(game.determinize(game.current_player, np.random.default_rng(5)))
            roots.append({a: (c.visits, round(c.value, 9), c.available) for a, c in root.children.items()})
        assert moves[0] == moves[1] and roots[0] == roots[1]


@pytest.mark.parametrize("batch_size", [1, 5])
def test_every_simulation_is_counted_once_after_the_virtual_losses(model, batch_size):
    game = midgame_positions(1, seed=11)[0]
    agent = GuidedMCTSAgent(model, simulations=23, batch_size=batch_size, seed=0)
    root = agent.search(game.determinize(game.current_player, np.random.default_rng(0)))
    assert root.visits == 23 == sum(child.visits for child in root.children.values())

    def check(node):
        for child in node.children.values():
            assert 0.0 <= child.value <= child.visits + 1e-9
            assert child.visits >= sum(grandchild.visits for grandchild in child.children.values())
            check(child)

    check(root)
    # Batching really happens: fewer forward passes than positions (the root's pass is alone).
    evaluator = agent.evaluator
    assert (evaluator.calls < evaluator.positions) == (batch_size > 1)


def test_the_agent_gets_a_determinization_and_never_the_real_game(model):
    game = midgame_positions(1, seed=5)[0]
    evaluator = RecordingEvaluator(model)
    agent = MCTSAgent(simulations=16, seed=0, evaluator=evaluator, batch_size=4)
    received = []
    original = agent.act

    def act(observation, mask, view=None):
        received.append(view)
        return original(observation, mask, view)

    agent.act = act
    choose_action(agent, game, np.random.default_rng(0))
    assert received and received[0] is not game
    assert evaluator.seen and all(state is not game for state in evaluator.seen)


def test_guided_decisions_do_not_depend_on_the_true_hidden_cards(model):
    """Mirror of test_agents.py: a twin game with re-dealt hidden cards gets the same decision."""
    changed = 0
    for k, game in enumerate(midgame_positions(16)):
        player = game.current_player
        twin = game.determinize(player, np.random.default_rng(100 + k))  # a real game, hidden cards re-dealt
        changed += twin.hand(1 - player) != game.hand(1 - player) or twin.to_dict()["pile"] != game.to_dict()["pile"]
        assert np.array_equal(encode_observation(twin, player), encode_observation(game, player))
        decisions = [
            choose_action(GuidedMCTSAgent(model, simulations=10, seed=7), real, np.random.default_rng(11))
            for real in (game, twin)
        ]
        assert decisions[0] == decisions[1]
    assert changed >= 10, "the twins must really differ in hidden cards for the test to mean anything"


def test_with_budget_one_the_choice_follows_a_one_hot_prior():
    game = KahunaGame(seed=1)
    legal = game.legal_actions()
    # The action the heuristic likes least: the baseline does not play it, the guided search must.
    target = min(zip(action_priors(game, legal), legal, strict=True))[1]
    baseline = choose_action(MCTSAgent(simulations=1, seed=0), game, np.random.default_rng(0))
    assert baseline != target
    guided = GuidedMCTSAgent(_one_hot_model(target), simulations=1, seed=0)
    assert choose_action(guided, game, np.random.default_rng(0)) == target
    # A plain LeafEvaluator (no torch) works the same way.
    evaluator = OneHotEvaluator(target)
    assert (
        choose_action(MCTSAgent(simulations=1, seed=0, evaluator=evaluator), game, np.random.default_rng(0)) == target
    )


class OneHotEvaluator:
    """All prior mass on one action (uniform when it is not legal); every position a draw."""

    def __init__(self, action):
        self.action = action

    def evaluate(self, states, legal):
        priors = []
        for actions in legal:
            if self.action in actions:
                priors.append([1.0 if a == self.action else 0.0 for a in actions])
            else:
                priors.append([1.0 / len(actions)] * len(actions))
        return priors, [0.5] * len(states)


def test_the_value_is_the_critic_undone_of_its_island_shaping():
    game = midgame_positions(20, seed=2)
    game = next(g for g in game if g.control_mask(g.current_player) != g.control_mask(1 - g.current_player))
    observation = encode_observation(game, game.current_player)
    phi = (
        observation[OBSERVATION_LAYOUT["control_mine"]].sum()
        - observation[OBSERVATION_LAYOUT["control_opponent"]].sum()
    ) / 12
    assert phi != 0
    legal = game.legal_actions()
    for shaping in (0.0, 1.0):
        evaluator = NetworkEvaluator(_one_hot_model(legal[0], value=0.2), island_shaping=shaping, prior_temperature=1)
        priors, (value,) = evaluator.evaluate([game], [legal])
        assert value == pytest.approx(min(1.0, max(0.0, (0.2 + shaping * phi + 1) / 2)), abs=1e-6)
        assert sum(priors[0]) == pytest.approx(1.0, abs=1e-5) and priors[0][0] > 0.99


def test_the_prior_temperature_flattens_the_policy_but_keeps_its_order():
    game = KahunaGame(seed=3)
    legal = game.legal_actions()
    assert len(legal) > 2
    model = _one_hot_model(legal[1])  # logit 50 on legal[1], 0 elsewhere
    for temperature in (1.0, 10.0, 50.0):
        (priors,), _ = NetworkEvaluator(model, prior_temperature=temperature).evaluate([game], [legal])
        others = [prior for action, prior in zip(legal, priors, strict=True) if action != legal[1]]
        # softmax(logits / T): the favourite's prior over any other is exp(50 / T).
        assert priors[1] / others[0] == pytest.approx(np.exp(50.0 / temperature), rel=1e-3)
        assert max(others) == pytest.approx(min(others)) and sum(priors) == pytest.approx(1.0, abs=1e-5)
    # The default is the tuned, nearly flat prior (docs/EVALUATION.md).
    assert NetworkEvaluator(model).prior_temperature == 20.0
    assert GuidedMCTSAgent(model).exploration == 0.5
    assert GuidedMCTSAgent(model).opponent_prior_power == 20.0 / 5.0  # opponent nodes at temperature 5


def test_mixing_with_the_heuristic_and_bad_options(model):
    game = midgame_positions(1, seed=8)[0]
    agent = GuidedMCTSAgent(model, simulations=12, value_weight=0.5, rollout_depth=4, seed=0)
    assert choose_action(agent, game, np.random.default_rng(0)) in game.legal_actions()
    for options, message in (
        ({"value_weight": 1.5}, "value_weight"),
        ({"batch_size": 0}, "batch_size"),
        ({"simulations": 0}, "simulations"),
        ({"island_shaping": float("nan")}, "island_shaping"),
        ({"prior_temperature": 0}, "prior_temperature"),
        ({"prior_temperature": float("inf")}, "prior_temperature"),
        ({"exploration": 0}, "exploration"),
    ):
        with pytest.raises(ValueError, match=message):
            GuidedMCTSAgent(model, **options)
    with pytest.raises(ValueError, match="evaluator"):
        MCTSAgent(evaluator=object())


# ---------------------------------------------------------------------------------------------- entrants
def test_search_entrants_resolve_to_the_guided_search(policy_file):
    agent = resolve_entrant(f"{policy_file}@mcts:7", seed=0)
    assert isinstance(agent, GuidedMCTSAgent) and agent.simulations == 7 and agent.name == "tiny@mcts:7"
    assert resolve_entrant(f"{policy_file}@mcts", seed=0).simulations == 200
    assert split_search(f"{policy_file}@mcts:7") == (str(policy_file), 7)
    assert split_search("mcts:7") == ("mcts:7", None)
    assert entrant_label(f"{policy_file}@mcts:7") == "tiny-mcts_7"
    assert entrant_label(f"{policy_file}@mcts") == "tiny-mcts_200"
    assert isinstance(load_guided_agent(policy_file, simulations=3), GuidedMCTSAgent)


def test_champion_is_a_named_network_entrant():
    # Needs kahuna_policy.agent.load_agent("champion") (the shipped agent).
    assert is_checkpoint_spec("champion") and is_checkpoint_spec("champion@mcts:5")
    agent = resolve_entrant("champion", seed=0)
    assert isinstance(agent, PolicyAgent) and agent.name == "champion"
    searcher = resolve_entrant("champion@mcts:5", seed=0)
    assert isinstance(searcher, GuidedMCTSAgent) and searcher.simulations == 5
    assert searcher.name == "champion@mcts:5" and entrant_label("champion@mcts:5") == "champion-mcts_5"
    game = KahunaGame(seed=0)
    assert choose_action(searcher, game, np.random.default_rng(0)) in game.legal_actions()


@pytest.mark.parametrize(
    ("suffix", "error", "message"),
    [
        ("@mcts:0", ValueError, "bad simulation budget"),
        ("@mcts:abc", ValueError, "bad simulation budget"),
        ("@mcts:-3", ValueError, "bad simulation budget"),
        ("@foo", ValueError, "bad search"),
        ("@mcts:", ValueError, "bad simulation budget"),
    ],
)
def test_malformed_search_entrants_are_one_line_errors(policy_file, suffix, error, message):
    for source in (str(policy_file), "x.pt", "champion"):
        with pytest.raises(error, match=message) as info:
            resolve_entrant(source + suffix)
        assert "\n" not in str(info.value)


def test_missing_files_and_unknown_sources_of_a_search(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        resolve_entrant(str(tmp_path / "missing.pt") + "@mcts:5")
    for spec in ("@mcts", "alphazero@mcts:3", "greedy@mcts"):
        with pytest.raises(ValueError) as info:
            resolve_entrant(spec)
        assert "\n" not in str(info.value)


def test_kahuna_eval_plays_a_small_match_with_a_search_entrant(policy_file, capsys):
    report = run_evaluation([f"{policy_file}@mcts:4", "random"], games=2, seed=0)
    assert report.pairings[0].games == 2
    assert eval_main([f"{policy_file}@mcts:3", "greedy", "--games", "2", "--no-progress"]) == 0
    assert "tiny.pt@mcts:3 vs greedy" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        eval_main([f"{policy_file}@mcts:0", "greedy"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad simulation budget" in err


def test_opponent_prior_temperature_sharpens_only_the_opponents_nodes(model):
    from kahuna_env import actions as A
    from kahuna_env.agents.evaluators import _sharpen

    logits = np.array([2.0, 0.5, -1.0, 0.1])
    flat = np.exp(logits / 20) / np.exp(logits / 20).sum()
    assert np.allclose(_sharpen(flat.tolist(), 20.0), np.exp(logits) / np.exp(logits).sum())
    assert _sharpen([1e-300, 1.0], 50.0) == [0.0, 1.0]  # relative to the largest: no 0/0
    game = KahunaGame(seed=4)
    trees = {}
    for temperature in (None, 1.0):
        agent = GuidedMCTSAgent(model, simulations=200, seed=0, opponent_prior_temperature=temperature)
        assert agent.opponent_prior_power == (1.0 if temperature is None else 20.0)
        trees[temperature] = agent.search(game.determinize(game.current_player, np.random.default_rng(0)))
    # The root (the searcher's own node) keeps the flat prior; the opponent's replies after a draw
    # (which ends the turn) get the sharp one.
    roots = [[c.prior for c in trees[t].children.values()] for t in (None, 1.0)]
    assert roots[0] == roots[1]
    replies = {
        t: [c.prior for c in trees[t].children[A.DRAW].children.values()]
        for t in (None, 1.0)
        if A.DRAW in trees[t].children
    }
    assert len(replies) == 2 and all(len(r) > 3 for r in replies.values())
    assert max(replies[1.0]) > max(replies[None])
    with pytest.raises(ValueError, match="opponent_prior_temperature"):
        GuidedMCTSAgent(model, opponent_prior_temperature=0)
    with pytest.raises(ValueError, match="mcts opponent_prior_power"):
        MCTSAgent(opponent_prior_power=float("nan"))


def test_root_candidates_halve_the_root_by_mean_value(model, monkeypatch):
    """Sequential halving: the top-m prior actions share the phases evenly, the better half goes on."""
    game = midgame_positions(1, seed=11)[0]
    view = game.determinize(game.current_player, np.random.default_rng(0))
    agent = GuidedMCTSAgent(model, simulations=50, seed=0, root_candidates=8)
    root = agent.search(view)
    assert root.visits == 50 == sum(child.visits for child in root.children.values())
    by_prior = sorted(root.children, key=lambda a: -root.children[a].prior)
    candidates, others = by_prior[:8], by_prior[8:]
    assert len(candidates) == 8 and all(root.children[a].visits == 0 for a in others)
    visits = sorted((root.children[a].visits for a in candidates), reverse=True)
    # 3 phases: 8 x 2 simulations, then 4 x 4, then the 18 left over to the last 2
    # (2 + 4 + 9 = 15 visits each).
    assert visits == [15, 15, 6, 6, 2, 2, 2, 2]
    finalists = agent.root_finalists
    assert len(finalists) == 2 and {root.children[a].visits for a in finalists} == {15}
    means = [root.children[a].value / root.children[a].visits for a in finalists]
    assert means[0] >= means[1] and agent.choose_move(root) == finalists[0]
    # Same seed, same tree; a legal move through choose_action.
    again = GuidedMCTSAgent(model, simulations=50, seed=0, root_candidates=8).search(view)
    assert {a: c.visits for a, c in again.children.items()} == {a: c.visits for a, c in root.children.items()}
    assert choose_action(agent, game, np.random.default_rng(1)) in game.legal_actions()
    # Each phase keeps the better half by the mean values at the end of the phase before.
    from kahuna_env.agents.selectors import SequentialHalving

    phases = []
    original = SequentialHalving.next_phase

    def next_phase(self, node, done):
        fresh = not self.queue
        means = {a: node.children[a].value / max(node.children[a].visits, 1) for a in self.candidates}
        queue = original(self, node, done)
        if fresh:
            phases.append((means, list(self.candidates)))
        return queue

    monkeypatch.setattr(SequentialHalving, "next_phase", next_phase)
    GuidedMCTSAgent(model, simulations=50, seed=0, root_candidates=8).search(view)
    assert [len(kept) for _, kept in phases] == [8, 4, 2]
    for means, kept in phases[1:]:
        dropped = [a for a in means if a not in kept]
        assert min(means[a] for a in kept) >= max(means[a] for a in dropped)


@pytest.mark.parametrize("bad", [1, -2, 2.0, True, "4"])
def test_bad_root_candidates_are_one_line_errors(model, bad):
    with pytest.raises(ValueError, match="mcts root_candidates must be 0 or an integer >= 2"):
        GuidedMCTSAgent(model, root_candidates=bad)


def test_root_candidates_need_the_guided_search():
    with pytest.raises(ValueError, match="root_candidates needs an evaluator"):
        MCTSAgent(root_candidates=4)


def test_the_guided_search_gives_its_visit_counts_values_and_policy(model):
    game = midgame_positions(1, seed=11)[0]
    agent = GuidedMCTSAgent(model, simulations=20, seed=0, root_candidates=0)
    move = choose_action(agent, game, np.random.default_rng(0))
    result = agent.last_search
    counts = result.visit_counts()
    assert result.move == move and sum(counts.values()) == 20 == result.simulations
    vector = result.policy_vector()
    assert vector.sum() == pytest.approx(1.0) and vector[move] == pytest.approx(max(result.policy.values()))
    assert set(result.mean_values()) == {action for action, visits in counts.items() if visits}
