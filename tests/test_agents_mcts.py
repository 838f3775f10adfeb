"""The ``mcts`` search baseline: strength, determinizations, hidden information and value backup."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from helpers import LINE, check_invariants, game_at

from kahuna_env import actions as A
from kahuna_env.agents import GreedyAgent, MCTSAgent, choose_action
from kahuna_env.agents.mcts import action_priors, win_probability
from kahuna_env.engine import KahunaGame
from kahuna_env.observation import encode_observation


class RecordingMCTS(MCTSAgent):
    """Keeps every determinization the search samples."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.samples: list[KahunaGame] = []

    def sample_determinization(self, view, player):
        sample = super().sample_determinization(view, player)
        self.samples.append(sample.clone())
        return sample


def _position_with_public_knowledge() -> KahunaGame:
    """Player 0 to act; player 1 is known to hold a KAHU (taken face up) and discarded a JOJO face down."""
    return game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1},
        hands=(["ALOA", "DUDA"], ["KAHU", "GOLA", "COCO"]),
        discard=["JOJO", "BARI"],
        face_down=[[], ["JOJO"]],
        known=[[], ["KAHU"]],
    )


def test_mcts_with_a_modest_budget_beats_greedy():
    score = 0.0
    games = 16
    for k in range(games):
        mcts, greedy = MCTSAgent(simulations=20, seed=k), GreedyAgent(seed=1000 + k)
        seat = k % 2
        players = (mcts, greedy) if seat == 0 else (greedy, mcts)
        game = KahunaGame(seed=500 + k // 2)
        rng = np.random.default_rng(k)
        while not game.is_over:
            game.step(choose_action(players[game.current_player], game, rng))
        score += 0.5 if game.winner is None else float(game.winner == seat)
    assert score / games > 0.5


def test_every_simulation_samples_a_fresh_determinization():
    game = KahunaGame(seed=3)
    agent = RecordingMCTS(simulations=40, seed=0)
    choose_action(agent, game, np.random.default_rng(0))
    assert len(agent.samples) == 40
    assert len({tuple(sample.hand(1)) for sample in agent.samples}) > 5, "the opponent's hand is resampled"


def test_determinizations_keep_the_viewers_hand_and_everything_public():
    game = _position_with_public_knowledge()
    player = game.current_player
    agent = RecordingMCTS(simulations=30, seed=1)
    choose_action(agent, game, np.random.default_rng(2))
    for sample in agent.samples:
        assert sample.hand(player) == game.hand(player)
        assert np.array_equal(encode_observation(sample, player), encode_observation(game, player))


def test_determinizations_conserve_every_card_and_hidden_pile_sizes():
    game = _position_with_public_knowledge()
    opponent = 1 - game.current_player
    agent = RecordingMCTS(simulations=30, seed=1)
    choose_action(agent, game, np.random.default_rng(2))
    for sample in agent.samples:
        check_invariants(sample)  # 24 cards, two of each island
        assert sample.hand_size(opponent) == game.hand_size(opponent)
        assert sample.pile_size == game.pile_size
        assert sum(sample.face_down_discards(opponent)) == sum(game.face_down_discards(opponent))


def test_determinizations_respect_the_opponents_known_face_up_takes():
    game = _position_with_public_knowledge()
    opponent = 1 - game.current_player
    known = Counter({island: n for island, n in enumerate(game.known_cards(opponent)) if n})
    assert known, "the position must hold public knowledge about the opponent's hand"
    agent = RecordingMCTS(simulations=30, seed=1)
    choose_action(agent, game, np.random.default_rng(2))
    for sample in agent.samples:
        assert not known - Counter(sample.hand(opponent))


def test_mcts_decisions_do_not_depend_on_the_true_hidden_cards():
    # The same public position with a different opponent hand and pile order.
    first = game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1},
        hands=(["ALOA", "DUDA", "ELAI"], ["COCO", "GOLA"]),
        pile=["HUNA", "IFFI", "JOJO", "BARI"],
    )
    second = game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1},
        hands=(["ALOA", "DUDA", "ELAI"], ["IFFI", "HUNA"]),
        pile=["GOLA", "BARI", "COCO", "JOJO"],
    )
    roots = []
    for game in (first, second):
        agent = MCTSAgent(simulations=60, seed=5)
        view = game.determinize(0, np.random.default_rng(8))
        root = agent.search(view)
        roots.append({action: (child.visits, round(child.value, 9)) for action, child in root.children.items()})
    assert roots[0] == roots[1]


def test_search_backs_up_values_for_the_player_who_moved_through_consecutive_own_actions():
    # Player 0's last turn: placing ALOA-DUDA takes ALOA and DUDA (2 islands to 1) and wins once the
    # turn ends with a pass -- two actions in a row by the same player.  Anything else loses.
    game = game_at(
        bridges={
            "ALOA-BARI": 0,
            "DUDA-ELAI": 0,
            "DUDA-HUNA": 0,
            "HUNA-LALE": 1,
            "KAHU-LALE": 1,
            "BARI-COCO": 1,
            "FAAA-GOLA": 1,
            "ELAI-JOJO": 1,
        },
        hands=(["ALOA"], ["KAHU"]),
        face_up=[None, None, None],
        pile=[],
        round=3,
        final_turns_left=1,
    )
    winning = A.place_action(LINE["ALOA-DUDA"], "ALOA")
    agent = MCTSAgent(simulations=50, seed=0)
    root = agent.search(game.determinize(0, np.random.default_rng(0)))
    assert max(root.children, key=lambda a: root.children[a].visits) == winning
    child = root.children[winning]
    assert child.value / child.visits == pytest.approx(1.0)
    assert all(c.value == 0.0 for a, c in root.children.items() if a != winning)


def test_mcts_is_reproducible_with_a_seed():
    def actions(seed):
        game = KahunaGame(seed=9)
        players = (MCTSAgent(simulations=8, seed=seed), GreedyAgent(seed=0))
        rng = np.random.default_rng(0)
        played = []
        while not game.is_over:
            played.append(choose_action(players[game.current_player], game, rng))
            game.step(played[-1])
        return played

    assert actions(4) == actions(4)


def test_mcts_answers_a_forced_move_without_searching():
    game = game_at(
        bridges={"ALOA-BARI": 0, "KAHU-LALE": 1},
        hands=(["ALOA"], []),
        face_up=[None, None, None],
        pile=[],
        round=3,
        final_turns_left=1,
    )
    game.step(A.DISCARD + 0)  # a discard leaves only PASS (nothing to draw, no card to play)
    agent = MCTSAgent(simulations=50, seed=0)
    assert game.legal_actions() == [A.PASS]
    assert choose_action(agent, game, np.random.default_rng(0)) == A.PASS
    assert agent.searched_moves == 0


@pytest.mark.parametrize(
    "options",
    [
        {"simulations": 0},
        {"simulations": 2.5},
        {"exploration": 0},
        {"rollout": "smart"},
        {"rollout_depth": -1},
        {"first_play_penalty": -0.1},
        {"first_play_penalty": 1.5},
        {"first_play_penalty": True},
    ],
)
def test_mcts_rejects_bad_parameters(options):
    with pytest.raises(ValueError, match="mcts"):
        MCTSAgent(**options)


def test_action_priors_favour_taking_control_over_discarding():
    game = game_at(bridges={"ALOA-BARI": 0}, hands=(["ALOA", "KAHU"], ["LALE"]))
    legal = game.legal_actions()
    priors = dict(zip(legal, action_priors(game, legal), strict=True))
    assert sum(priors.values()) == pytest.approx(1.0)
    assert priors[A.place_action(LINE["ALOA-DUDA"], "ALOA")] > priors[A.DISCARD + 0]


def test_evaluation_is_exact_for_finished_games_and_symmetric_otherwise():
    game = KahunaGame(seed=1)
    assert win_probability(game) == pytest.approx(1.0 - win_probability(_swapped(game)))
    while not game.is_over:
        game.step(game.legal_actions()[-1])
    assert win_probability(game) == (0.5 if game.winner is None else float(game.winner == 0))


def _swapped(game: KahunaGame) -> KahunaGame:
    """The same position with the players' roles exchanged."""
    d = game.to_dict()
    d["bridges"] = [None if owner is None else 1 - owner for owner in d["bridges"]]
    for key in ("hands", "face_down", "known", "scores", "final_points"):
        d[key] = d[key][::-1]
    d["current_player"] = 1 - d["current_player"]
    d["config"] = {**d["config"], "first_player": 1 - d["config"]["first_player"]}
    return KahunaGame.from_dict(d)


def test_mcts_module_does_not_import_torch():
    code = "import sys, kahuna_env.agents.mcts; sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_first_play_penalty_decides_how_soon_unvisited_moves_are_tried():
    # An unvisited child counts as the parent's mean less the penalty: a large penalty keeps the
    # search on the children it has already visited, so fewer distinct root moves get a visit.
    game = KahunaGame(seed=3)
    assert len(game.legal_actions()) > 10
    tried = {}
    for penalty in (0.0, 0.5):
        agent = MCTSAgent(simulations=60, seed=0, first_play_penalty=penalty)
        root = agent.search(game.determinize(game.current_player, np.random.default_rng(0)))
        tried[penalty] = sum(child.visits > 0 for child in root.children.values())
    assert MCTSAgent().first_play_penalty == 0.05
    assert tried[0.5] < tried[0.0]


def test_lcb_weight_plays_the_best_lower_bound_instead_of_the_most_visits():
    from kahuna_env.agents.mcts import SearchNode

    root = SearchNode(1.0)
    root.children = {1: SearchNode(0.5), 2: SearchNode(0.3), 3: SearchNode(0.2)}
    for action, visits, value in ((1, 10, 5.0), (2, 8, 6.4), (3, 0, 0.0)):
        root.children[action].visits, root.children[action].value = visits, value
    assert MCTSAgent(lcb_weight=0.0).choose_move(root) == 1  # most visits
    # lower bounds: 0.5 - 0.1/sqrt(10) = 0.468 against 0.8 - 0.1/sqrt(8) = 0.765; unvisited never chosen
    assert MCTSAgent(lcb_weight=0.1).choose_move(root) == 2
    root.children[3].value = 100.0
    assert MCTSAgent(lcb_weight=5.0).choose_move(root) in (1, 2)
    for bad in (-0.1, float("inf"), True):
        with pytest.raises(ValueError, match="mcts lcb_weight"):
            MCTSAgent(lcb_weight=bad)
