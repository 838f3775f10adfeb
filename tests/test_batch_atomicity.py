"""A refused call changes nothing: ``KahunaBatch.set_positions``/``reset`` and the vector envs' ``reset``/``step``.

Each bad call is checked the same way: snapshot the whole object (every array, list, generator state and
seat), make the call, assert its one-line error, assert the snapshot is bit-identical afterwards, then play
on beside a twin that never saw the call and assert both play the same games (docs/RELIABILITY.md, section 2).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
from helpers import final_turns_position, position

import kahuna_env  # noqa: F401  (registers Kahuna-v0)
from kahuna_env.engine import IllegalActionError, KahunaGame
from kahuna_env.gym_vector import KahunaSyncVectorEnv, make_vector_env
from kahuna_env.vector import MAX_GAMES, KahunaBatch
from kahuna_env.vector_env import KahunaVectorEnv

CACHES = frozenset({"_mask", "_words", "_raw", "_mask_valid", "_stale"})
"""Derived arrays of a batch (recomputed from the state on demand): not part of its state."""


def frozen(value: Any, depth: int = 0) -> Any:
    """A comparable, bit-exact image of ``value``: arrays as bytes, generators as their state, objects by field."""
    assert depth < 12, "unexpectedly deep object"
    if isinstance(value, np.ndarray):
        if value.dtype == object:  # e.g. info["final_obs"]: compare the objects, not their addresses
            return ("objects", value.shape, frozen(value.tolist(), depth + 1))
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.random.Generator):
        return ("generator", repr(value.bit_generator.state))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(frozen(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), frozen(v, depth + 1)) for k, v in value.items() if k not in CACHES)))
    if hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
        return (type(value).__name__, frozen(vars(value), depth + 1))
    if isinstance(value, (np.generic, int, float, str, bool, type(None))):
        return (type(value).__name__, repr(value))
    return (type(value).__name__, id(value))  # functions, classes: the same object


def play_batch_pair(batch: KahunaBatch, twin: KahunaBatch, steps: int = 120, seed: int = 5) -> None:
    """Step both batches with the same random legal actions (reshuffles and auto-resets included); equal throughout."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        assert np.array_equal(batch.legal_masks(), twin.legal_masks())
        actions = batch.random_actions(rng)
        first, second = batch.step(actions), twin.step(actions)
        for a, b in zip(first, second, strict=True):
            assert np.array_equal(a, b)
    assert batch.to_dicts() == twin.to_dicts()
    assert frozen(vars(batch)) == frozen(vars(twin))


def played_batch(auto_reset: bool = True) -> KahunaBatch:
    """Eight games of mixed rules, 40 random steps in (so slots differ: rounds, loaded rules, reshuffles)."""
    batch = KahunaBatch(8, [None, {"variant": "planning"}] * 4, seed=21, auto_reset=auto_reset)
    rng = np.random.default_rng(3)
    for _ in range(40):
        batch.step(batch.random_actions(rng))
    return batch


PLANNING = KahunaGame({"variant": "planning"}, seed=5).to_dict()
BAD_POSITION = {**KahunaGame(seed=1).to_dict(), "round": 7}

BAD_SET_POSITIONS = {
    "an index past the end (issue 34: slot 0 became planning first)": (
        ([0, 8], [PLANNING, PLANNING], [1, 2]),
        IndexError,
        "game index 8 out of range 0..7",
    ),
    "fewer seeds than slots (issue 34: slot 0 changed first)": (
        ([0, 1], [PLANNING, PLANNING], [7]),
        ValueError,
        "seeds must be a sequence of 2 seeds",
    ),
    "a negative index (was the last slot)": (([-1], [PLANNING], None), IndexError, "game index -1 out of range"),
    "a float index (was slot 0)": (([0.9], [PLANNING], None), ValueError, "must be an integer, got 0.9"),
    "a bool index": (([True], [PLANNING], None), ValueError, "must be an integer, got True"),
    "a float array": ((np.array([0.5]), [PLANNING], None), ValueError, "integer game indices"),
    "a 2-D array": ((np.array([[0]]), [PLANNING], None), ValueError, "1-D array"),
    "an array past the end": ((np.array([1, 8]), [PLANNING, PLANNING], None), IndexError, "game index 8"),
    "a str of indices": (("01", [PLANNING, PLANNING], None), ValueError, "sequence of game indices"),
    "the same index twice": (([3, 3], [PLANNING, PLANNING], None), ValueError, "game index 3 given twice"),
    "a bad last position": (([0, 1], [PLANNING, BAD_POSITION], None), ValueError, r"positions\[1\]: .*round"),
    "one dict instead of a list": (([0], PLANNING, None), ValueError, "sequence of position dicts"),
    "more positions than indices": (([0], [PLANNING, PLANNING], None), ValueError, "1 indices but 2 positions"),
    "a float seed": (([0, 1], [PLANNING, PLANNING], [1, 1.5]), ValueError, r"seeds\[1\]: seed must be None or a"),
    "a str seed": (([0], [PLANNING], ["3"]), ValueError, r"seeds\[0\]: seed must be None or a non-negative"),
    "a negative seed": (([0], [PLANNING], [-3]), ValueError, r"seeds\[0\]: .*got -3"),
    "a bool seed": (([0], [PLANNING], [False]), ValueError, r"seeds\[0\]: .*got False"),
}


@pytest.mark.parametrize("name", list(BAD_SET_POSITIONS))
def test_a_refused_set_positions_changes_nothing(name):
    (indices, positions, seeds), error, message = BAD_SET_POSITIONS[name]
    batch, twin = played_batch(), played_batch()
    before = frozen(vars(batch))
    with pytest.raises(error, match=message) as raised:
        batch.set_positions(indices, positions, seeds=seeds)
    assert "\n" not in str(raised.value)
    assert frozen(vars(batch)) == before
    play_batch_pair(batch, twin)


BAD_RESETS = {
    "a negative index (was the last slot)": (([-1], None), IndexError, "game index -1 out of range 0..7"),
    "a float index (was slot 0)": (([0.9], None), ValueError, "must be an integer, got 0.9"),
    "a numpy bool index": (([np.True_], None), ValueError, "must be an integer, got"),
    "an index past the end after good ones": (([0, 1, 8], None), IndexError, "game index 8"),
    "a bool array": ((np.array([True, False]), None), ValueError, "integer game indices"),
    "the same index twice": ((np.array([2, 2]), None), ValueError, "game index 2 given twice"),
    "too few seeds": (([0, 1], [4]), ValueError, "game_seeds must be a sequence of 2 seeds"),
    "a float seed last": (([0, 1], [4, 2.7]), ValueError, r"game_seeds\[1\]: seed must be None or a"),
    "a None seed": (([0], [None]), ValueError, r"game_seeds\[0\]: seed must be a non-negative integer"),
    "one seed for one slot as a scalar": (([0], 4), ValueError, "game_seeds must be a sequence of 1 seeds"),
}


@pytest.mark.parametrize("name", list(BAD_RESETS))
def test_a_refused_reset_changes_nothing(name):
    (indices, game_seeds), error, message = BAD_RESETS[name]
    batch, twin = played_batch(), played_batch()
    before = frozen(vars(batch))
    with pytest.raises(error, match=message):
        batch.reset(indices, game_seeds=game_seeds)
    assert frozen(vars(batch)) == before
    play_batch_pair(batch, twin)


def test_refused_reads_name_the_index_and_change_nothing():
    batch, twin = played_batch(), played_batch()
    before = frozen(vars(batch))
    with pytest.raises(IndexError, match="game index -1 out of range"):
        batch.to_dicts([-1])
    with pytest.raises(IndexError, match="game index -1 out of range"):
        batch.game(-1)
    with pytest.raises(ValueError, match=r"must be an integer, got 1\.5"):
        batch.game(1.5)
    assert batch.to_dicts([2, 2]) == [batch.to_dicts([2])[0]] * 2  # a read may repeat an index
    assert frozen(vars(batch)) == before
    play_batch_pair(batch, twin, steps=30)


def test_good_calls_still_work_after_the_checks():
    batch = played_batch(auto_reset=False)
    batch.set_positions(np.array([1, 6]), [PLANNING, PLANNING], seeds=[None, 9])
    assert batch.to_dicts([1, 6]) == [KahunaGame.from_dict(PLANNING).to_dict()] * 2
    assert batch.game_seeds[6] == 9 and batch.planning[[1, 6]].all()
    batch.reset(np.array([6], dtype=np.uint8), game_seeds=[np.int64(11)])
    assert batch.to_dicts([6])[0] == KahunaGame(batch.configs[6], seed=11).to_dict()
    batch.reset([])  # nothing to deal
    batch.set_positions((np.int32(0),), (PLANNING,))
    assert batch.to_dicts([0])[0] == KahunaGame.from_dict(PLANNING).to_dict()


def _kahuna_game_refusal(seed: object) -> str:
    with pytest.raises(ValueError) as raised:
        KahunaGame(seed=seed)  # type: ignore[arg-type]
    return str(raised.value)


@pytest.mark.parametrize("seed", ["12", 1.5, True, -1, np.float64(2.0), np.bool_(False)])
def test_a_bad_batch_seed_is_refused_with_kahuna_games_own_message(seed):
    with pytest.raises(ValueError) as raised:
        KahunaBatch(2, seed=seed)
    assert str(raised.value) == _kahuna_game_refusal(seed)


@pytest.mark.parametrize(
    ("seeds", "k", "bad"), [([1.5, 2.7], 0, 1.5), ([1, True], 1, True), ([1, None], 1, None), ([3, -2], 1, -2)]
)
def test_a_bad_entry_of_a_batch_seed_list_is_refused_naming_it(seeds, k, bad):
    with pytest.raises(ValueError) as raised:
        KahunaBatch(2, seed=seeds)
    message = str(raised.value)
    assert message.startswith(f"seed[{k}]: ")
    if bad is not None:
        assert message.endswith(_kahuna_game_refusal(bad))
    with pytest.raises(ValueError, match=rf"seeds\[{k}\]: "):
        KahunaBatch.from_dicts([PLANNING, PLANNING], seeds=seeds)


@pytest.mark.parametrize("n", [2**40, MAX_GAMES + 1, 0, -3, 2.0, True, "8"])
def test_a_batch_size_out_of_range_is_one_line_naming_the_maximum(n):
    with pytest.raises(ValueError, match=rf"n must be an integer in 1\.\.{MAX_GAMES} \(MAX_GAMES\), got"):
        KahunaBatch(n)


def test_from_dicts_refuses_more_positions_than_the_maximum_before_validating_them():
    class Huge(list):
        def __len__(self) -> int:
            return MAX_GAMES + 1

    with pytest.raises(ValueError, match=r"needs 1\.\.1048576 \(MAX_GAMES\) positions, got 1048577"):
        KahunaBatch.from_dicts(Huge())


# --------------------------------------------------------------------------- the vector envs


def env_pair(**options: Any) -> tuple[Any, Any]:
    """Two identical vector envs after ``reset(seed=3)``: the one under test and its twin."""
    options = {"num_envs": 8, "opponent": "greedy", "seat": "random", **options}
    envs = [gymnasium.make_vec("Kahuna-v0", **options) for _ in range(2)]
    for env in envs:
        env.reset(seed=3)
    return envs[0], envs[1]


def play_env_pair(env: Any, twin: Any, steps: int = 25, seed: int = 8) -> None:
    """Step both envs with the same random legal actions; every output equal (episode ends included)."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        mask = env.action_masks()
        assert np.array_equal(mask, twin.action_masks())
        actions = np.array([rng.choice(np.flatnonzero(row)) for row in mask])
        first, second = env.step(actions), twin.step(actions)
        assert frozen(first) == frozen(second)
    if isinstance(env, KahunaVectorEnv):  # the spaces' samplers are unseeded, so they differ between twins
        assert frozen(env_state(env)) == frozen(env_state(twin))


def env_state(env: KahunaVectorEnv) -> dict[str, Any]:
    """The env's attributes but its spaces (their samplers, seeded from fresh entropy, are no part of the games)."""
    return {key: value for key, value in vars(env).items() if not key.endswith("_space")}


def test_a_refused_position_keeps_the_seats_and_the_next_steps_equal_a_twin():
    """Issue 34: a refused ``reset(options={"position": bad})`` swapped seats and generators before its error."""
    env, twin = env_pair()
    assert isinstance(env, KahunaVectorEnv)
    seats = env.seats.copy()
    before = frozen(vars(env))
    with pytest.raises(ValueError, match="round' must be 1, 2 or 3, got 7") as raised:
        env.reset(options={"position": BAD_POSITION})
    assert "\n" not in str(raised.value)
    assert np.array_equal(env.seats, seats)
    assert frozen(vars(env)) == before
    play_env_pair(env, twin)


BAD_ENV_RESETS = {
    "a seed list with a bad last entry": ({"seed": [0, 1, 2, 3, 4, 5, 6, -1]}, r"seed\[7\]: .*got -1"),
    "a float in the seed list": ({"seed": [0, 1, 2, 3, 4, 5, 6, 1.5]}, r"seed\[7\]: .*got 1.5"),
    "a bool in the seed list": ({"seed": [True] + [None] * 7}, r"seed\[0\]: .*got True"),
    "a short seed list": ({"seed": [1, 2]}, "seed must be a sequence of 8 seeds"),
    "a str seed": ({"seed": "12"}, "seed must be None or a non-negative integer, got '12'"),
    "a float seed": ({"seed": 1.5}, "seed must be None or a non-negative integer, got 1.5"),
    "a negative seed": ({"seed": -4}, "got -4"),
    "options that are not a dict": ({"options": "position"}, "options must be a dict"),
    "a position that is not a dict": ({"options": {"position": [1]}}, "the position must be a dict"),
    "a finished position": (
        {"options": {"position": position(bridges={"ALOA-BARI": 0}, round=2, over=True, winner=0)}},
        "finished game|malformed position",
    ),
    "a position the opponent finishes (found only by playing it)": (
        {"seed": 11, "options": {"position": final_turns_position(1)}},
        "the game ended before the learning seat could act",
    ),
}


@pytest.mark.parametrize("name", list(BAD_ENV_RESETS))
def test_a_refused_vector_env_reset_changes_nothing(name):
    kwargs, message = BAD_ENV_RESETS[name]
    env, twin = env_pair()
    before = frozen(vars(env))
    with pytest.raises(ValueError, match=message):
        env.reset(**kwargs)
    assert frozen(vars(env)) == before
    play_env_pair(env, twin)


def test_a_reset_whose_opponent_raises_puts_everything_back():
    """A per-game opponent failing half-way through a reset: the seats, generators and games are restored."""
    failing = [False]

    def opponent(observation: np.ndarray, mask: np.ndarray) -> int:
        if failing[0]:
            raise RuntimeError("opponent failed")
        return int(np.flatnonzero(mask)[0])

    env, twin = (KahunaVectorEnv(6, opponent=opponent, seat="random") for _ in range(2))
    env.reset(seed=5)
    twin.reset(seed=5)
    before = frozen(vars(env))
    failing[0] = True
    with pytest.raises(RuntimeError, match="opponent failed"):
        env.reset(seed=9)
    failing[0] = False
    assert frozen(vars(env)) == before
    play_env_pair(env, twin, steps=10)


def test_refused_steps_change_nothing():
    env, twin = env_pair(illegal_action="raise")
    before = frozen(vars(env))
    mask = env.action_masks()
    illegal = np.array([np.flatnonzero(row)[0] for row in mask])
    illegal[7] = int(np.flatnonzero(~mask[7])[0])
    for actions, error, message in (
        (illegal, IllegalActionError, "game 7"),
        (illegal[:3], ValueError, "shape"),
        (illegal.astype(float), ValueError, "integers"),
        (np.full(8, 179), IllegalActionError, "0..178"),
    ):
        with pytest.raises(error, match=message):
            env.step(actions)
        assert frozen(vars(env)) == before
    play_env_pair(env, twin)


def test_a_scalar_vector_env_checks_every_seed_and_the_position_before_resetting_any():
    """The scalar backend resets sub-environments one by one: a bad last seed must not reseed the first ones."""
    env, twin = (make_vector_env(3, backend="scalar", opponent="random", seat="random") for _ in range(2))
    assert isinstance(env, KahunaSyncVectorEnv)
    env.reset(seed=4)
    twin.reset(seed=4)

    def generators(vector_env: KahunaSyncVectorEnv) -> list[str]:
        return [repr(sub.unwrapped.np_random.bit_generator.state) for sub in vector_env.envs]

    before = generators(env)
    for kwargs, message in (
        ({"seed": [1, 2, -1]}, r"KahunaSyncVectorEnv\.reset\(\): seed\[2\]: .*got -1"),
        ({"seed": [1, 2]}, "seed must be a sequence of 3 seeds"),
        ({"seed": 2.5}, "got 2.5"),
        ({"options": {"position": BAD_POSITION}}, "got 7"),
    ):
        with pytest.raises(ValueError, match=message):
            env.reset(**kwargs)
        assert generators(env) == before
    play_env_pair(env, twin, steps=10)


# ------------------------------------------------------------------------------------ the scalar Gymnasium wrapper
BAD_SCALAR_RESETS = {
    "a malformed position": ({"options": {"position": BAD_POSITION}}, "round' must be 1, 2 or 3, got 7"),
    "options that are not a dict": ({"options": "position"}, "options must be a dict"),
    "a position the opponent finishes (found only by playing it)": (
        {"seed": 11, "options": {"position": final_turns_position(1)}},
        "the game ended before the learning seat could act",
    ),
}


def scalar_state(env: Any, identity: bool = False) -> dict[str, Any]:
    """The wrapper's attributes but its spaces (unseeded samplers) and the renderer; the game as a position."""
    state = {key: value for key, value in vars(env).items() if not key.endswith("_space") and key != "_renderer"}
    if identity:
        state["game_object"] = id(state["game"])  # the same game object, not only an equal one
    state["game"] = state["game"].to_dict()
    return state


def play_scalar_pair(env: Any, twin: Any, steps: int = 60, seed: int = 8) -> None:
    """Step both wrappers with the same random legal actions (resetting at episode ends); every output equal."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        mask = env.action_masks()
        assert np.array_equal(mask, twin.action_masks())
        action = int(rng.choice(np.flatnonzero(mask)))
        first, second = env.step(action), twin.step(action)
        assert frozen(first) == frozen(second)
        if first[2] or first[3]:
            assert frozen(env.reset()) == frozen(twin.reset())
    assert frozen(scalar_state(env)) == frozen(scalar_state(twin))


@pytest.mark.parametrize("name", list(BAD_SCALAR_RESETS))
def test_a_refused_scalar_wrapper_reset_changes_nothing(name):
    """Issue 34's rule for the scalar wrapper too: it drew seeds and set the game before finding the problem."""
    kwargs, message = BAD_SCALAR_RESETS[name]
    env, twin = (gymnasium.make("Kahuna-v0", opponent="greedy", seat="random").unwrapped for _ in range(2))
    env.reset(seed=3)
    twin.reset(seed=3)
    before = frozen(scalar_state(env, identity=True))
    with pytest.raises(ValueError, match=message) as raised:
        env.reset(**kwargs)
    assert "\n" not in str(raised.value)
    assert frozen(scalar_state(env, identity=True)) == before
    play_scalar_pair(env, twin)
