"""The one search and its plug-ins: the options' checks, evaluators, root selectors, results, a stopped search."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import midgame_positions

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.agents import MCTSAgent, choose_action
from kahuna_env.agents.evaluators import GuidedEvaluator, RolloutEvaluator, action_priors, win_probability
from kahuna_env.agents.search import Search, SearchCancelled, SearchConfig
from kahuna_env.agents.selectors import PUCTRoot, SequentialHalving, most_visited, visit_policy
from kahuna_env.engine import KahunaGame


class HeuristicLeaves:
    """A torch-free leaf evaluator (the baseline's prior and evaluation) that records each call's batch size."""

    def __init__(self):
        self.batches: list[int] = []

    def evaluate(self, states, legal):
        self.batches.append(len(states))
        priors = [action_priors(state, actions) for state, actions in zip(states, legal, strict=True)]
        return priors, [win_probability(s) if s.current_player == 0 else 1.0 - win_probability(s) for s in states]


class FlagAfter:
    """A cancel flag that turns set after ``n`` readings."""

    def __init__(self, n):
        self.n = n
        self.readings = 0

    def is_set(self):
        self.readings += 1
        return self.readings > self.n


def _view(seed=11):
    game = midgame_positions(1, seed=seed)[0]
    return game.determinize(game.current_player, np.random.default_rng(0))


def _check_counts(node):
    """Every edge's visits cover its children's and its value lies within [0, visits]."""
    for child in node.children.values():
        assert 0.0 <= child.value <= child.visits + 1e-9
        assert child.visits >= sum(grandchild.visits for grandchild in child.children.values())
        _check_counts(child)


def _bare_nodes(node):
    """Visited nodes without children, below ``node``."""
    return sum((child.visits > 0 and not child.children) + _bare_nodes(child) for child in node.children.values())


# ---------------------------------------------------------------------------------------------- the options
@pytest.mark.parametrize(
    ("option", "bad"),
    [
        ("simulations", 0),
        ("simulations", True),
        ("exploration", float("nan")),
        ("rollout", ["heuristic"]),
        ("rollout_depth", 1.0),
        ("value_weight", -0.5),
        ("batch_size", 0),
        ("first_play_penalty", "0.1"),
        ("lcb_weight", float("inf")),
        ("opponent_prior_power", 0),
        ("root_candidates", 1),
        ("root_candidates", 0.0),
    ],
)
def test_a_bad_option_is_a_one_line_error_naming_it(option, bad):
    with pytest.raises(ValueError, match=f"^mcts {option} must be ") as info:
        SearchConfig(**{option: bad})
    assert "\n" not in str(info.value) and repr(bad) in str(info.value)


def test_the_config_holds_the_agents_options_as_numbers():
    config = SearchConfig(exploration=2, lcb_weight=1, opponent_prior_power=3)
    assert config.exploration == 2.0 and isinstance(config.exploration, float)
    assert isinstance(config.lcb_weight, float) and isinstance(config.opponent_prior_power, float)
    agent = MCTSAgent(simulations=7, exploration=2, batch_size=3, seed=0)
    assert agent.config == SearchConfig(simulations=7, exploration=2.0, batch_size=3)
    assert (agent.simulations, agent.exploration, agent.batch_size, agent.rollout_depth) == (7, 2.0, 3, 12)


# ---------------------------------------------------------------------------------------------- plug-ins
def test_the_rollout_evaluator_expands_as_it_walks_and_the_guided_one_stops_for_priors():
    view = _view()
    rollout = Search(SearchConfig(simulations=30), RolloutEvaluator(), PUCTRoot(1.0)).run(
        view, np.random.default_rng(0)
    )
    leaves = HeuristicLeaves()
    guided = Search(SearchConfig(simulations=30), GuidedEvaluator(leaves), PUCTRoot(1.0)).run(
        view, np.random.default_rng(0)
    )
    for result in (rollout, guided):
        assert result.simulations == result.root.visits == 30 == sum(result.visit_counts().values())
        _check_counts(result.root)
    # A rollout leaf is the position after an untried edge, left without children (they come with the
    # next visit); a guided leaf gets its children with its value, so no visited node stays bare.
    assert _bare_nodes(rollout.root) >= 10 and _bare_nodes(guided.root) == 0
    # The guided search asked the leaf evaluator for the root first, then once per (non-final) leaf.
    assert leaves.batches[0] == 1 and sum(leaves.batches) <= 31


def test_a_leaf_batch_evaluates_up_to_batch_size_leaves_per_call_for_either_evaluator():
    view = _view()
    leaves = HeuristicLeaves()
    MCTSAgent(simulations=40, batch_size=5, evaluator=leaves, seed=0).search(view)
    assert max(leaves.batches) == 5 and len(leaves.batches) < 40

    class CountingRollouts(RolloutEvaluator):
        def __init__(self):
            super().__init__()
            self.batches = []

        def evaluate(self, states, legal, searcher, rng):
            self.batches.append(len(states))
            return super().evaluate(states, legal, searcher, rng)

    counting = CountingRollouts()
    result = Search(SearchConfig(simulations=40, batch_size=5), counting, PUCTRoot(1.0)).run(
        view, np.random.default_rng(0)
    )
    assert max(counting.batches) == 5 and result.root.visits == 40
    _check_counts(result.root)


class Always:
    """A selector that sends every simulation through one root action and plays it."""

    needs_root_children = True

    def __init__(self, action):
        self.action = action

    def start(self, root, simulations, rng):
        assert len(root.children) > 1  # the root was expanded first, as asked

    def room(self, root, done):
        return None

    def select(self, root, legal):
        return self.action

    def finish(self, root):
        pass

    def best(self, root):
        return self.action

    def policy(self, root):
        return {self.action: 1.0}


def test_a_root_selector_chooses_every_simulations_root_action():
    view = _view()
    action = view.legal_actions()[-1]
    result = Search(SearchConfig(simulations=12), RolloutEvaluator(), Always(action)).run(
        view, np.random.default_rng(0)
    )
    assert result.visit_counts()[action] == 12 and result.move == action
    assert result.policy_vector()[action] == 1.0 and result.policy_vector().shape == (NUM_ACTIONS,)


def test_an_agent_plays_through_a_root_selector_of_its_own():
    game = midgame_positions(1, seed=11)[0]
    action = game.legal_actions()[-1]
    agent = MCTSAgent(simulations=10, seed=0, root_selector=Always(action))
    assert choose_action(agent, game, np.random.default_rng(0)) == action
    assert agent.last_search.visit_counts()[action] == 10 and agent.root_selector.action == action
    with pytest.raises(ValueError, match="mcts root_selector must be a RootSelector"):
        MCTSAgent(root_selector=object())
    with pytest.raises(ValueError, match="root_selector and root_candidates"):
        MCTSAgent(evaluator=HeuristicLeaves(), root_candidates=4, root_selector=Always(action))


def test_sequential_halving_never_lets_a_batch_span_two_phases():
    view = _view()
    leaves = HeuristicLeaves()
    agent = MCTSAgent(simulations=50, batch_size=16, evaluator=leaves, root_candidates=8, seed=0)
    agent.search(view)
    # Phases of 16, 16 and 18 simulations (8 x 2, 4 x 4, then the rest): no call holds more than a phase.
    assert max(leaves.batches[1:]) <= 16 and agent.root_finalists
    assert isinstance(agent.root_selector, SequentialHalving)


def test_the_result_gives_visit_counts_mean_values_and_the_policy():
    view = _view()
    agent = MCTSAgent(simulations=60, seed=3)
    root = agent.search(view)
    result = agent.last_search
    assert result.root is root and result.player == view.current_player
    assert result.move == agent.choose_move(root) == most_visited(root)
    counts = result.visit_counts()
    assert sum(counts.values()) == 60
    assert result.policy == pytest.approx({a: n / 60 for a, n in counts.items()}) == visit_policy(root)
    for action, mean in result.mean_values().items():
        assert mean == pytest.approx(root.children[action].value / counts[action]) and 0.0 <= mean <= 1.0


# ---------------------------------------------------------------------------------------------- a stopped search
@pytest.mark.parametrize(
    ("evaluator", "batch_size"), [(None, 1), (None, 4), (HeuristicLeaves(), 1), (HeuristicLeaves(), 4)]
)
def test_a_stopped_search_keeps_its_best_move_so_far(evaluator, batch_size):
    view = _view()
    agent = MCTSAgent(simulations=10_000, batch_size=batch_size, evaluator=evaluator, seed=0)
    agent.cancel = FlagAfter(23)
    with pytest.raises(SearchCancelled) as info:
        agent.search(view)
    result = info.value.result
    assert result is agent.last_search and result.move in view.legal_actions()
    # Only the completed simulations count: the pending leaves' virtual losses are undone.
    root = result.root
    assert result.simulations == root.visits == sum(child.visits for child in root.children.values())
    assert 23 - batch_size < root.visits <= 23
    _check_counts(root)
    assert result.move == most_visited(root, tie_break="value" if evaluator is None else "prior")


def test_a_search_stopped_before_its_first_simulation_has_no_move():
    agent = MCTSAgent(simulations=50, seed=0)
    agent.cancel = FlagAfter(0)
    with pytest.raises(SearchCancelled) as info:
        agent.search(KahunaGame(seed=1))
    assert info.value.result.move is None and info.value.result.simulations == 0


def test_the_same_seed_gives_the_same_moves_through_the_one_search():
    game = midgame_positions(1, seed=4)[0]
    moves = {
        choose_action(MCTSAgent(simulations=25, batch_size=3, seed=8), game, np.random.default_rng(1)) for _ in range(3)
    }
    assert len(moves) == 1
