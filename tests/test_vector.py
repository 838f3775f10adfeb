"""The batched engine (kahuna_env.vector) against the scalar reference, kahuna_env.engine.KahunaGame.

Differential: random batched play in which, after every step, every game's
``to_dicts`` entry equals the scalar engine's ``to_dict`` after the same
actions, and the legal masks and observations (both seats) agree bit for bit.
Chance is compared exactly, pile order included: each batched game draws from
the same generator stream as its scalar twin.  ``benchmarks/vector.py
--differential N`` runs the same check over more actions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import LINE, final_turns_position, position

from kahuna_env import actions as A
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_env.observation import encode_observation, encode_state
from kahuna_env.vector import KahunaBatch

ALL_CONFIGS = [
    KahunaConfig(variant=variant, discard_rule=rule, handicap=handicap, first_player=first)
    for variant, rule, handicap, first in itertools.product(
        ("standard", "planning"), ("instead_of_play", "hand_limit"), (None, (0, 1), (1, 3)), (0, 1)
    )
]
"""Every variant and option: 2 variants x 2 discard rules x 3 handicaps x 2 first players."""


def uniform_actions(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row (rows without a legal action get 0)."""
    counts = mask.sum(1)
    pick = (rng.random(len(mask)) * counts).astype(np.int64)
    cumulative = mask.cumsum(1)
    return np.argmax(cumulative > pick[:, None], axis=1)


def assert_same(batch: KahunaBatch, games: list[KahunaGame], context: str = "") -> None:
    """Positions, legal masks, observations (player to act, seat 0, seat 1) and states of every game agree."""
    dicts = batch.to_dicts()
    masks = batch.legal_masks()
    observations = {seat: batch.observations(seat) for seat in (None, 0, 1)}
    states = batch.states()
    for i, game in enumerate(games):
        expected = game.to_dict()
        if dicts[i] != expected:
            diff = {key: (dicts[i][key], expected[key]) for key in expected if dicts[i].get(key) != expected[key]}
            pytest.fail(f"{context} game {i}: positions differ (batch, scalar): {diff}")
        if not np.array_equal(masks[i], game.action_mask()):
            pytest.fail(f"{context} game {i}: masks differ: {np.flatnonzero(masks[i])} vs {game.legal_actions()}")
        for seat, obs in observations.items():
            reference = encode_observation(game, game.current_player if seat is None else seat)
            if obs[i].tobytes() != reference.tobytes():
                where = np.flatnonzero(obs[i] != reference)
                pytest.fail(f"{context} game {i}: observation (seat {seat}) differs at {where}")
        if states[i].tobytes() != encode_state(game).tobytes():
            pytest.fail(f"{context} game {i}: state differs at {np.flatnonzero(states[i] != encode_state(game))}")


def play_differential(configs: list[KahunaConfig], seeds: list[int], steps: int, rng_seed: int) -> int:
    """Random batched play with auto-reset, checked against scalar twins after every step; returns actions."""
    n = len(configs)
    batch = KahunaBatch(n, configs, seeds, auto_reset=True)
    games = [KahunaGame(configs[i], seed=batch.game_seeds[i]) for i in range(n)]
    rng = np.random.default_rng(rng_seed)
    assert_same(batch, games, "start")
    finished = 0
    for step in range(steps):
        actions = uniform_actions(batch.legal_masks(), rng)
        result = batch.step(actions)
        assert result.player.tolist() == [game.current_player for game in games]
        for i, game in enumerate(games):
            game.step(int(actions[i]))
            assert bool(result.terminated[i]) == game.is_over, f"step {step} game {i}"
            if game.is_over:
                finished += 1
                assert (None if result.winner[i] < 0 else int(result.winner[i])) == game.winner
                assert result.scores[i].tolist() == game.scores
                assert result.final_points[i].tolist() == game.final_points
                assert result.reset[i]
                games[i] = KahunaGame(configs[i], seed=batch.game_seeds[i])
        assert_same(batch, games, f"step {step}")
        assert batch.legal_masks().any(1).all(), "auto-reset: every slot offers an action after a step"
    assert finished > n, "the run must cover many complete games"
    return n * steps


def test_differential_random_play_over_every_variant_and_option():
    configs = [ALL_CONFIGS[i % len(ALL_CONFIGS)] for i in range(72)]
    actions = play_differential(configs, list(range(1000, 1072)), steps=1400, rng_seed=1)
    assert actions >= 100_000


def test_slots_seed_their_games_as_the_env_does():
    """Slot seed s: the game seed is default_rng(s).integers(2**63), as kahuna_env.env's reset(seed=s)."""
    seeds = [5, 17, 2**40 + 3]
    config = KahunaConfig(variant="planning")
    batch = KahunaBatch(3, config, seeds)
    for i, seed in enumerate(seeds):
        seeder = np.random.default_rng(seed)
        game_seed = int(seeder.integers(2**63))
        assert batch.game_seeds[i] == game_seed
        assert batch.to_dicts([i])[0] == KahunaGame(config, seed=game_seed).to_dict()
        batch.reset([i])
        assert batch.game_seeds[i] == int(seeder.integers(2**63)), "the next game: the seeder's next draw"
        assert batch.to_dicts([i])[0] == KahunaGame(config, seed=batch.game_seeds[i]).to_dict()
    assert KahunaBatch(3, config, seed=5).seeds == [5, 6, 7]
    batch.reset([0, 2], game_seeds=[11, 12])
    assert batch.game_seeds[0] == 11 and batch.to_dicts([2])[0] == KahunaGame(config, seed=12).to_dict()
    with pytest.raises(ValueError, match="game_seeds"):
        batch.reset([0], game_seeds=[1, 2])


def test_a_slot_deals_the_games_of_the_aec_env_reset_with_its_seed():
    import kahuna_env

    env = kahuna_env.raw_env(variant="planning", handicap=(1, 2))
    batch = KahunaBatch(3, KahunaConfig(variant="planning", handicap=(1, 2)), seed=40)
    env.reset(seed=42)
    assert env.game.to_dict() == batch.to_dicts([2])[0]
    for _ in range(3):
        env.reset()
        batch.reset([2])
        assert env.game.to_dict() == batch.to_dicts([2])[0]


def test_finished_games_ignore_their_actions_without_auto_reset():
    n = 16
    configs = [ALL_CONFIGS[i] for i in range(n)]
    batch = KahunaBatch(n, configs, list(range(n)))
    games = [KahunaGame(configs[i], seed=batch.game_seeds[i]) for i in range(n)]
    rng = np.random.default_rng(3)
    terminated_once = np.zeros(n, dtype=bool)
    while not batch.over.all():
        actions = uniform_actions(batch.legal_masks(), rng)
        actions[batch.over] = -5  # anything: ignored
        result = batch.step(actions)
        assert not (result.terminated & terminated_once).any(), "a game terminates once"
        terminated_once |= result.terminated
        for i, game in enumerate(games):
            if not game.is_over:
                game.step(int(actions[i]))
        assert_same(batch, games)
    assert terminated_once.all()
    assert not batch.legal_masks().any()


def test_only_active_games_act():
    n = 24
    batch = KahunaBatch(n, ALL_CONFIGS, seed=60, auto_reset=True)
    games = [KahunaGame(ALL_CONFIGS[i], seed=batch.game_seeds[i]) for i in range(n)]
    rng = np.random.default_rng(8)
    for step in range(300):
        active = rng.random(n) < 0.5
        if step % 2:
            active = batch.current_player == 0  # e.g. the games in which seat 0 is to move
        actions = uniform_actions(batch.legal_masks(), rng)
        actions[~active] = -1  # ignored
        result = batch.step(actions, active=active)
        assert result.player.tolist() == [g.current_player if a else -1 for g, a in zip(games, active, strict=True)]
        for i in np.flatnonzero(active):
            games[i].step(int(actions[i]))
            if games[i].is_over:
                assert result.terminated[i] and result.reset[i]
                games[i] = KahunaGame(ALL_CONFIGS[i], seed=batch.game_seeds[i])
        assert not result.terminated[~active].any()
        assert_same(batch, games, f"step {step}")
    with pytest.raises(ValueError, match="active"):
        batch.step(actions, active=np.ones(n, dtype=int))


# --- hand-built edge positions --------------------------------------------------------------------


def _round_end(round_number: int, **extra):
    return position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0, "BARI-COCO": 0, "BARI-FAAA": 0, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA", "HUNA"], ["KAHU"]),
        face_up=[None, "GOLA", None],
        pile=[],
        round=round_number,
        **extra,
    )


EDGE_POSITIONS = {
    "cascade": position(
        bridges={"ALOA-BARI": 0, "ALOA-HUNA": 1, "HUNA-IFFI": 1, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA", "HUNA", "IFFI"], ["LALE"]),
    ),
    "double capture": position(
        bridges={"ALOA-BARI": 0, "BARI-DUDA": 0, "DUDA-ELAI": 0, "ALOA-HUNA": 1, "DUDA-HUNA": 1, "HUNA-IFFI": 1},
        hands=(["ALOA", "DUDA", "DUDA"], []),
    ),
    "capture ends round 2": position(
        bridges={"ALOA-BARI": 0, "ALOA-HUNA": 1},
        hands=(["ALOA", "DUDA"], ["LALE"]),
        round=2,
    ),
    "removal ends round 3": position(
        bridges={"ALOA-BARI": 0, "ELAI-JOJO": 1},
        hands=(["ELAI", "JOJO", "ELAI"], ["LALE"]),
        round=3,
        scores=[2, 1],
    ),
    "round 1 end, reshuffle": _round_end(1),
    "round 2 end, reshuffle": _round_end(2, scores=[1, 0]),
    "round 3 end, final turns": _round_end(3, scores=[1, 2]),
    "round 1 end, premature": position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0}, hands=(["ALOA"], ["KAHU"]), face_up=[None, "GOLA", None], pile=[]
    ),
    "round 1 end, nobody has bridges": position(hands=(["ALOA"], ["KAHU"]), face_up=[None, "GOLA", None], pile=[]),
    "round 2 end by drawing the last card": position(
        bridges={"ALOA-BARI": 0, "HUNA-LALE": 1, "IFFI-LALE": 1},
        hands=(["ALOA"], ["KAHU", "KAHU"]),
        face_up=[None, None, None],
        pile=["GOLA"],
        discard=["DUDA"],
        face_down=[[], ["DUDA"]],
        current_player=1,
        round=2,
        scores=[0, 1],
        must_draw=True,
    ),
    "last slot with a pile card": position(hands=(["ALOA"], ["KAHU"]), face_up=[None, "GOLA", None], pile=["BARI"]),
    "final turns, 2 left": final_turns_position(2),
    "final turns, 1 left": final_turns_position(1),
    "final turns, tie on bridges": position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0, "HUNA-LALE": 1, "IFFI-LALE": 1, "GOLA-KAHU": 1},
        hands=(["ALOA"], ["KAHU"]),
        face_up=[None, None, None],
        pile=[],
        round=3,
        scores=[0, 0],
        final_turns_left=1,
        current_player=1,
    ),
    "must draw with five cards": position(
        bridges={"ALOA-BARI": 1},
        hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []),
        must_draw=True,
    ),
    "hand limit discard": position(
        hands=(["ALOA", "BARI", "COCO", "DUDA", "ELAI"], []),
        config={"discard_rule": "hand_limit"},
    ),
    "hand limit after a discard": position(
        hands=(["ALOA", "BARI", "COCO", "DUDA"], []),
        discard=["ELAI"],
        face_down=[["ELAI"], []],
        discarded_this_turn=1,
        known=[["ALOA"], []],
        config={"discard_rule": "hand_limit"},
    ),
    "planning removal": position(
        bridges={"ELAI-HUNA": 1, "ELAI-IFFI": 1, "ALOA-HUNA": 1},
        hands=(["ELAI", "HUNA", "HUNA", "ALOA"], []),
        config={"variant": "planning"},
    ),
    "planning claim pending": position(
        bridges={"ALOA-HUNA": 1},
        hands=(["ELAI", "HUNA"], []),
        played_this_turn=2,
        claim_line=LINE["ELAI-HUNA"],
        config={"variant": "planning"},
    ),
    "planning claim that captures": position(
        bridges={"ALOA-DUDA": 0, "ALOA-HUNA": 1},
        hands=(["BARI"], []),
        played_this_turn=2,
        claim_line=LINE["ALOA-BARI"],
        config={"variant": "planning"},
    ),
    "handicap setup": position(
        bridges={"ALOA-BARI": 1},
        hands=(["ALOA"], ["KAHU"]),
        current_player=1,
        setup_left=2,
        config={"handicap": [1, 3], "first_player": 0},
    ),
    "handicap last setup bridge": position(
        bridges={"ALOA-BARI": 0, "ALOA-DUDA": 0},
        hands=(["ALOA"], ["KAHU"]),
        setup_left=1,
        config={"handicap": [0, 3], "first_player": 1},
    ),
    "no supply": position(
        bridges={name: 0 if line < 25 else 1 for name, line in LINE.items()},
        hands=(["ALOA", "KAHU", "LALE"], ["JOJO"]),
        round=2,
    ),
}


def _legal(pos) -> list[int]:
    return KahunaGame.from_dict(pos).legal_actions()


@pytest.mark.parametrize("name", list(EDGE_POSITIONS))
def test_every_legal_action_from_an_edge_position_matches_the_scalar_engine(name):
    pos = EDGE_POSITIONS[name]
    legal = _legal(pos)
    assert legal, name
    seeds = [7 + k for k in range(len(legal))]
    batch = KahunaBatch.from_dicts([pos] * len(legal), seeds=seeds)
    games = [KahunaGame.from_dict(pos, seed=seed) for seed in seeds]
    assert_same(batch, games, name)
    batch.step(np.array(legal))
    for game, action in zip(games, legal, strict=True):
        game.step(action)
    assert_same(batch, games, name)
    # Then play every copy to its end at random (reshuffles and final scorings on the way).
    rng = np.random.default_rng(11)
    while not batch.over.all():
        actions = uniform_actions(batch.legal_masks(), rng)
        batch.step(actions)
        for game, action in zip(games, actions.tolist(), strict=True):
            if not game.is_over:
                game.step(action)
        assert_same(batch, games, name)


def test_edge_positions_reach_the_events_they_are_built_for():
    def after(name, action):
        batch = KahunaBatch.from_dicts([EDGE_POSITIONS[name]], seeds=[3])
        batch.step([action])
        return batch

    cascade = after("cascade", A.place_action(LINE["ALOA-DUDA"], "ALOA"))
    assert cascade.owner[0, LINE["ALOA-HUNA"]] == -1 and cascade.owner[0, LINE["HUNA-IFFI"]] == 1
    assert cascade.controllers()[0].tolist()[7] == -1  # HUNA lost, LALE kept
    assert cascade.controllers()[0].tolist()[11] == 1
    ended = after("capture ends round 2", A.place_action(LINE["ALOA-DUDA"], "ALOA"))
    assert ended.over[0] and ended.winner[0] == 0
    reshuffled = after("round 1 end, reshuffle", A.TAKE + 1)
    assert reshuffled.round[0] == 2 and reshuffled.pile_size[0] > 0 and reshuffled.scores[0].tolist() == [1, 0]
    final = after("round 3 end, final turns", A.TAKE + 1)
    assert final.final_turns_left[0] == 2 and not final.over[0]
    drawn = after("round 2 end by drawing the last card", A.DRAW)
    assert drawn.round[0] == 3 and drawn.scores[0].tolist() == [0, 3] and drawn.current_player[0] == 0
    assert drawn.pile_size[0] + (drawn.face_up[0] >= 0).sum() == 24 - 4, "all but the 4 cards in hand reshuffled"
    premature = after("round 1 end, premature", A.TAKE + 1)
    assert premature.over[0] and premature.winner[0] == 0
    draw = after("round 1 end, nobody has bridges", A.TAKE + 1)
    assert draw.over[0] and draw.winner[0] == -1
    tie = after("final turns, tie on bridges", A.PASS)
    assert tie.over[0] and tie.winner[0] == 1 and tie.final_points[0].tolist() == [0, 0]
    claim = after("planning removal", A.remove_action(LINE["ELAI-HUNA"], "ELAI", "HUNA"))
    assert claim.claim_line[0] == LINE["ELAI-HUNA"]
    assert claim.legal_masks()[0, A.FREE_BRIDGE + LINE["ELAI-HUNA"]]
    setup = after("handicap last setup bridge", A.FREE_BRIDGE + LINE["ALOA-HUNA"])
    assert setup.current_player[0] == 1 and setup.setup_left[0] == 0


def test_reshuffles_draw_the_scalar_engines_permutation():
    pos = EDGE_POSITIONS["round 1 end, reshuffle"]
    for seed in range(5):
        batch = KahunaBatch.from_dicts([pos], seeds=[seed])
        batch.step([A.TAKE + 1])
        game = KahunaGame.from_dict(pos, seed=seed)
        game.step(A.TAKE + 1)
        assert batch.to_dicts()[0]["pile"] == game.to_dict()["pile"]
        assert batch.to_dicts()[0]["face_up"] == game.to_dict()["face_up"]


# --- seeding, errors, positions -----------------------------------------------------------------


def _random_play(batch: KahunaBatch, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        batch.step(uniform_actions(batch.legal_masks(), rng))


def test_same_seed_same_batch_and_different_seeds_differ():
    first = KahunaBatch(32, ALL_CONFIGS[:8] * 4, seed=123, auto_reset=True)
    second = KahunaBatch(32, ALL_CONFIGS[:8] * 4, seed=123, auto_reset=True)
    other = KahunaBatch(32, ALL_CONFIGS[:8] * 4, seed=124, auto_reset=True)
    assert first.seeds == second.seeds and first.seeds != other.seeds
    assert first.to_dicts() == second.to_dicts()
    assert first.to_dicts() != other.to_dicts()
    assert len(set(first.seeds)) == 32
    _random_play(first, 400, 9)
    _random_play(second, 400, 9)
    assert first.to_dicts() == second.to_dicts()
    assert np.array_equal(first.observations(), second.observations())
    with pytest.raises(ValueError, match="sequence of 3"):
        KahunaBatch(3, seed=[1, 2])


def test_an_illegal_action_in_one_game_raises_and_changes_nothing():
    batch = KahunaBatch(8, ALL_CONFIGS[:8], seed=5)
    _random_play(batch, 30, 2)
    before = batch.to_dicts()
    masks = batch.legal_masks().copy()
    actions = uniform_actions(masks, np.random.default_rng(0))
    bad = int(np.flatnonzero(~masks[5])[0])
    actions[5] = bad
    with pytest.raises(IllegalActionError, match=rf"game 5: action {bad} \(") as error:
        batch.step(actions)
    assert "illegal for player" in str(error.value)
    assert batch.to_dicts() == before
    assert np.array_equal(batch.legal_masks(), masks)
    actions[5] = 179
    with pytest.raises(IllegalActionError, match=r"game 5: action must be an integer in 0\.\.178, got 179"):
        batch.step(actions)
    with pytest.raises(IllegalActionError, match="shape"):
        batch.step(actions[:3])
    with pytest.raises(IllegalActionError, match="integers"):
        batch.step(actions.astype(float))
    assert batch.to_dicts() == before
    actions[5] = uniform_actions(masks, np.random.default_rng(1))[5]
    batch.step(actions)  # and the batch still works


def test_from_dicts_round_trips_a_mid_game_batch():
    batch = KahunaBatch(48, ALL_CONFIGS * 2, seed=77)
    _random_play(batch, 100, 4)
    assert batch.over.any() and (~batch.over).any() and (batch.round > 1).any()
    positions = batch.to_dicts()
    copy = KahunaBatch.from_dicts(positions, seeds=batch.seeds)
    assert copy.to_dicts() == positions
    assert np.array_equal(copy.legal_masks(), batch.legal_masks())
    for seat in (None, 0, 1):
        assert np.array_equal(copy.observations(seat), batch.observations(seat))
    for name in ("owner", "count", "bridges", "hand", "known", "face_down", "open_discard", "pile_size", "face_up"):
        assert np.array_equal(getattr(copy, name), getattr(batch, name)), name


def test_game_returns_the_position_and_game_seeds_replay_it():
    batch = KahunaBatch(24, ALL_CONFIGS, seed=8)
    rng = np.random.default_rng(12)
    history = []
    for _ in range(150):  # far enough for reshuffles and finished games
        actions = uniform_actions(batch.legal_masks(), rng)
        batch.step(actions)
        history.append(actions)
    assert batch.over.any() and (batch.round > 1).any()
    for i in range(24):
        game = batch.game(i, seed=1)
        assert game.to_dict() == batch.to_dicts([i])[0]
        assert np.array_equal(game.action_mask(), batch.legal_masks()[i])
        replay = KahunaGame(ALL_CONFIGS[i], seed=batch.game_seeds[i])
        for actions in history:
            if not replay.is_over:
                replay.step(int(actions[i]))
        assert replay.to_dict() == batch.to_dicts([i])[0]
    with pytest.raises(IndexError):
        batch.game(24)


def test_legal_actions_stay_right_when_only_some_games_step():
    """Each game's legal actions are recomputed only after it changed: partial steps, per-row queries,
    reloaded slots and auto-resets never leave a game with another state's actions."""
    batch = KahunaBatch(24, ALL_CONFIGS, seed=4, auto_reset=True)
    rng = np.random.default_rng(9)
    for tick in range(300):
        if tick % 50 == 25:  # a reloaded slot is recomputed too
            batch.set_positions([int(rng.integers(24))], [EDGE_POSITIONS["cascade"]], seeds=[tick])
        active = rng.random(24) < (0.15 if tick % 3 else 0.9)  # mostly a few games, as the opponents' tails
        rows = np.flatnonzero(active)
        if tick % 2:  # ask for the rows only, before anything asks for the whole batch
            masks = batch.legal_masks(rows)
            actions = batch.random_actions(rng, rows)
            assert masks[np.arange(len(rows)), actions[rows]].all()
        else:
            actions = batch.random_actions(rng)
        batch.step(actions, active=active)
        check = rng.choice(24, size=3, replace=False)
        fresh = KahunaBatch.from_dicts(batch.to_dicts(check))
        assert np.array_equal(batch.legal_masks(check), fresh.legal_masks())
        if tick % 7 == 0:
            games = [batch.game(i) for i in range(24)]
            assert np.array_equal(batch.legal_masks(), np.array([game.action_mask() for game in games]) > 0)
    assert (batch.round > 1).any()


def test_auto_reset_replaces_a_loaded_finished_game_at_the_next_step():
    finished = KahunaGame.from_dict(EDGE_POSITIONS["final turns, 1 left"])
    finished.step(A.PASS)
    done = finished.to_dict()
    running = EDGE_POSITIONS["cascade"]
    batch = KahunaBatch.from_dicts([done, running], seeds=[1, 2], auto_reset=True)
    assert batch.over.tolist() == [True, False]
    result = batch.step([0, A.place_action(LINE["ALOA-DUDA"], "ALOA")])  # the finished game's action is ignored
    assert result.reset.tolist() == [True, False] and not result.terminated.any()
    assert not batch.over.any() and batch.round[0] == 1 and batch.legal_masks().any(1).all()
    assert batch.to_dicts([0])[0] == KahunaGame(KahunaConfig(), seed=batch.game_seeds[0]).to_dict()
    with pytest.raises(ValueError, match="read-only"):
        batch.legal_masks()[0, 0] = True


def test_set_positions_and_reset_replace_single_slots():
    batch = KahunaBatch(4, seed=1)
    pos = EDGE_POSITIONS["planning removal"]
    batch.set_positions([2], [pos])
    assert batch.to_dicts([2])[0] == KahunaGame.from_dict(pos).to_dict()
    assert batch.planning.tolist() == [False, False, True, False]
    before = batch.to_dicts([0, 1, 3])
    batch.reset([2])
    assert batch.to_dicts([0, 1, 3]) == before
    assert batch.to_dicts([2])[0]["round"] == 1 and len(batch.to_dicts([2])[0]["pile"]) == 15
    with pytest.raises(ValueError, match="hands"):
        KahunaBatch.from_dicts([{**pos, "hands": [["ALOA"] * 6, []]}])


def test_random_actions_are_legal_and_uniform():
    batch = KahunaBatch(64, (ALL_CONFIGS * 3)[:64], seed=3)
    rng = np.random.default_rng(0)
    _random_play(batch, 40, 5)
    mask = batch.legal_masks().copy()
    counts = np.zeros(mask.shape)
    draws = 2000
    for _ in range(draws):
        counts[np.arange(64), batch.random_actions(rng)] += 1
    assert not counts[~mask].any(), "only legal actions"
    expected = draws / mask.sum(1, keepdims=True)
    z = (counts - expected) / np.sqrt(expected)
    assert np.abs(z[mask]).max() < 5.5, "every legal action about equally often"
    assert (counts[mask] > 0).all()


def test_observations_for_an_array_of_seats():
    batch = KahunaBatch(10, seed=3)
    _random_play(batch, 25, 1)
    seats = np.array([0, 1] * 5)
    obs = batch.observations(seats)
    for i in range(10):
        assert np.array_equal(obs[i], batch.observations(int(seats[i]))[i])
    assert obs.dtype == np.float32 and obs.shape == (10, 246)
