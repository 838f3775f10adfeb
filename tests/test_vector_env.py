"""The native vector env on the batched engine (:class:`kahuna_env.vector_env.KahunaVectorEnv`).

With a per-game opponent it must play exactly the games of the scalar wrapper's ``sync`` vectorization on
the same seeds; with the batched baselines, every episode it reports must be the scalar engine's game
under the same actions, with the scalar wrapper's reward.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections import defaultdict
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from helpers import final_turns_position

import kahuna_env
from kahuna_env.agents import Agent, RandomAgent
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_env.env import final_rewards
from kahuna_env.gym_vector import KahunaSyncVectorEnv, make_vector_env
from kahuna_env.vector_env import SB3_ADAPTER, KahunaVectorEnv


class PeekingAgent(Agent):
    """An agent whose choice depends on the determinized game it is shown (and on its own generator)."""

    name = "peeking"
    uses_game = True

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: Any, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        assert game is not None
        legal = np.flatnonzero(action_mask)
        hidden = sum(len(hand) for hand in game.to_dict()["hands"]) + len(game.to_dict()["pile"][:3])
        return int(legal[(hidden + int(self.rng.integers(1000))) % len(legal)])


def first_legal(observation: np.ndarray, mask: np.ndarray) -> int:
    """A stateless callable opponent."""
    return int(np.flatnonzero(mask)[-1])


def play(envs: gymnasium.vector.VectorEnv, steps: int, seed: int, illegal_every: int = 0) -> list[Any]:
    """Masked random learner actions (an illegal one every ``illegal_every`` steps in env 0); everything returned."""
    observations, infos = envs.reset(seed=seed)
    rng = np.random.default_rng(seed)
    record: list[Any] = [("reset", observations, infos)]
    for t in range(steps):
        masks = np.stack(envs.call("action_masks"))
        assert masks.dtype == bool and masks.shape == (envs.num_envs, 179)
        assert masks.any(axis=1).all(), "an all-zero mask was handed out"
        assert np.array_equal(infos["action_mask"].astype(bool), masks)
        if isinstance(observations, dict):
            assert np.array_equal(observations["action_mask"].astype(bool), masks)
        assert envs.observation_space.contains(observations)
        actions = np.array([rng.choice(np.flatnonzero(mask)) for mask in masks])
        if illegal_every and t % illegal_every == illegal_every - 1:
            actions[0] = int(np.flatnonzero(~masks[0])[0])
        step = envs.step(actions)
        observations, infos = step[0], step[4]
        record.append(step)
    return record


def assert_same(a: Any, b: Any, where: str = "") -> None:
    """Structural equality of observations, arrays, infos (dicts of arrays, object arrays of observations)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (tuple, list)) or (isinstance(a, np.ndarray) and a.dtype == object):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{k}]")
    else:
        assert np.array_equal(np.asarray(a), np.asarray(b)), f"{where}: {a!r} != {b!r}"


def comparable_final_info(info: dict[str, Any], scalar: bool) -> dict[str, Any]:
    """A final_info with the entries of sub-environments that did not end zeroed.

    The scalar env's object arrays (lists, ``None`` for a draw) become the native env's int64 arrays.
    """
    out = dict(info)
    for key in ("scores", "final_points", "winner"):
        if key in out:
            values = out[key]
            if scalar:
                values = [(-1 if key == "winner" else [0, 0]) if v is None else v for v in values]
                values = np.array(values, dtype=np.int64)
            flags = out[f"_{key}"].reshape(-1, *([1] * (values.ndim - 1)))
            out[key] = np.where(flags, values, 0)
    return out


@pytest.mark.parametrize(
    ("opponent", "seat", "observation", "reward", "rules"),
    [
        (PeekingAgent(), "random", "dict", "win_loss", {}),
        (RandomAgent(), 1, "flat", "score", {"variant": "planning", "discard_rule": "hand_limit"}),
        (first_legal, 0, "dict", "win_loss", {"handicap": (1, 2), "first_player": 1}),
    ],
)
def test_a_per_game_opponent_plays_exactly_the_games_of_the_sync_scalar_envs(
    opponent: Any, seat: Any, observation: str, reward: str, rules: dict
) -> None:
    options = {"opponent": opponent, "seat": seat, "observation": observation, "reward": reward, **rules}
    native = make_vector_env(3, backend="batch", **options)
    scalar = make_vector_env(3, backend="scalar", **options)
    assert isinstance(native, KahunaVectorEnv) and isinstance(scalar, KahunaSyncVectorEnv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kahuna_env.IllegalActionWarning)
        got = play(native, 300, seed=11, illegal_every=97)
        want = play(scalar, 300, seed=11, illegal_every=97)
    episodes = 0
    for k, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        if k == 0:
            assert_same(mine[1], theirs[1], "reset obs")
            assert_same(mine[2], theirs[2], "reset info")
            continue
        observations, rewards, terminated, truncated, infos = mine
        assert_same(observations, theirs[0], f"step {k} obs")
        assert np.array_equal(rewards, theirs[1]) and rewards.dtype == theirs[1].dtype
        assert np.array_equal(terminated, theirs[2]) and np.array_equal(truncated, theirs[3])
        top = {key: value for key, value in infos.items() if "final" not in key}
        assert_same(top, {key: value for key, value in theirs[4].items() if "final" not in key}, f"step {k} info")
        if terminated.any():
            episodes += int(terminated.sum())
            assert_same(infos["final_obs"], theirs[4]["final_obs"], f"step {k} final_obs")
            assert_same(
                comparable_final_info(infos["final_info"], scalar=False),
                comparable_final_info(theirs[4]["final_info"], scalar=True),
                f"step {k} final_info",
            )
    assert episodes >= 6
    # A reset without a seed goes on with each sub-environment's generator, as the sync env's resets do.
    for seed in (None, [3, None, 4]):
        assert_same(native.reset(seed=seed), scalar.reset(seed=seed), f"reset(seed={seed})")


def test_gymnasiums_sync_mode_with_same_step_autoreset_plays_the_same_games() -> None:
    """The literal ``vectorization_mode="sync"`` (a stateless callable: sharing it across sub-envs is harmless)."""
    sync = gymnasium.make_vec(
        "Kahuna-v0",
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        opponent=first_legal,
        seat="random",
    )
    native = gymnasium.make_vec(
        "Kahuna-v0", num_envs=2, vectorization_mode="vector_entry_point", opponent=first_legal, seat="random"
    )
    assert isinstance(native.unwrapped, KahunaSyncVectorEnv)  # the default for a callable opponent
    native = make_vector_env(2, backend="batch", opponent=first_legal, seat="random")
    got, want = play(native, 200, seed=5), play(sync, 200, seed=5)
    for mine, theirs in zip(got[1:], want[1:], strict=True):
        assert_same(mine[:4], theirs[:4])


# ---------------------------------------------------------------------------------------------- batched opponents
def spy_on_batch(envs: KahunaVectorEnv) -> dict[tuple[int, int], list[int]]:
    """Record every action the batch applies, by (slot, game seed): the learner's and the opponent's.

    The ``random`` opponent's fused loop steps the batch inside compiled code, unseen here, so the
    spied env plays it tick by tick (the two are held equal by ``test_the_fused_random_opponent_...``).
    """
    log: dict[tuple[int, int], list[int]] = defaultdict(list)
    envs.fused_random = False
    batch = envs.batch
    step = batch.step

    def recording_step(actions: Any, active: np.ndarray | None = None) -> Any:
        acting = ~batch.over if active is None else ~batch.over & active
        for i in np.flatnonzero(acting).tolist():
            log[(i, batch.game_seeds[i])].append(int(np.asarray(actions)[i]))
        return step(actions, active)

    batch.step = recording_step  # type: ignore[method-assign]
    return log


@pytest.mark.parametrize(("opponent", "config"), [("greedy", {}), ("random", {"variant": "planning"})])
def test_batched_opponents_play_scalar_games_and_pay_the_scalar_rewards(opponent: str, config: dict) -> None:
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=16, opponent=opponent, seat="random", reward="score", **config)
    assert isinstance(envs.unwrapped, KahunaVectorEnv)
    native = envs.unwrapped
    kconfig = KahunaConfig(**config)
    log = spy_on_batch(native)
    observations, infos = envs.reset(seed=7)
    rng = np.random.default_rng(7)
    ended = 0
    seats_seen = set()
    for _ in range(400):
        masks = native.action_masks()
        assert masks.any(axis=1).all()
        assert np.array_equal(observations["action_mask"].astype(bool), masks)
        before = [(s.game, s.seat) for s in native.episode_seeds]  # type: ignore[union-attr]
        observations, rewards, terminated, _, infos = envs.step([rng.choice(np.flatnonzero(m)) for m in masks])
        for i in np.flatnonzero(terminated).tolist():
            game_seed, seat = before[i]
            game = KahunaGame(kconfig, seed=game_seed)
            for action in log.pop((i, game_seed)):
                game.step(action)
            assert game.is_over
            assert rewards[i] == final_rewards(game, "score")[seat]
            final = infos["final_info"]
            assert final["_scores"][i] and final["scores"][i].tolist() == game.scores
            assert final["final_points"][i].tolist() == game.final_points
            assert final["winner"][i] == (-1 if game.winner is None else game.winner)
            assert final["seat"][i] == seat
            final_vector = infos["final_obs"][i]["observation"]
            assert np.array_equal(final_vector, kahuna_env.observation.encode_observation(game, seat))
            seats_seen.add(seat)
            ended += 1
        assert (rewards[~terminated] == 0).all()
    assert ended >= 10 and seats_seen == {0, 1}
    # The live games are the scalar engine's games under the same actions (positions and observations).
    for i in range(native.num_envs):
        seeds = native.episode_seeds[i]
        assert seeds is not None
        game = KahunaGame(kconfig, seed=seeds.game)
        for action in log[(i, seeds.game)]:
            game.step(action)
        assert game.to_dict() == native.batch.to_dicts([i])[0]
        assert game.current_player == seeds.seat
        assert np.array_equal(
            observations["observation"][i], kahuna_env.observation.encode_observation(game, seeds.seat)
        )
        mask = native.action_masks()[i]
        assert mask.any() and np.array_equal(mask, game.action_mask())


def _random_play_record(fused: bool, n: int, steps: int, options: dict) -> list:
    """What a vector env against ``random`` returns over ``steps`` masked random steps, then its games and opponent."""
    envs = KahunaVectorEnv(n, opponent="random", **options)
    envs.fused_random = fused
    record: list = [envs.reset(seed=3)]
    rng = np.random.default_rng(1)
    for _ in range(steps):
        record.append(envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in envs.action_masks()])))
    assert envs.batched_opponent is not None
    record.append(envs.batch.to_dicts(range(n)))
    record.append(envs.batched_opponent.rng.bit_generator.state)
    return record


def _assert_same_record(got: Any, want: Any) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys()
        for key in want:
            _assert_same_record(got[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for mine, theirs in zip(got, want, strict=True):
            _assert_same_record(mine, theirs)
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype
        if want.dtype == object:
            _assert_same_record(list(got), list(want))
        else:
            assert np.array_equal(got, want)
    else:
        assert got == want


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"seat": "random"},
        {"seat": 1, "variant": "planning"},
        {"seat": "random", "handicap": (1, 2), "reward": "score"},
    ],
)
def test_the_fused_random_opponent_plays_the_drivers_games(options: dict) -> None:
    """The ``random`` opponent's fused loop returns what the tick-by-tick driver returns, draw for draw."""
    fused = _random_play_record(True, 48, 150, options)
    driver = _random_play_record(False, 48, 150, options)
    _assert_same_record(fused, driver)
    ended = sum(int(step[2].sum()) for step in fused[1:-2])
    assert ended >= 48  # episodes ended, on the learner's moves and the opponent's


def test_the_fused_random_opponent_with_few_draws_and_unseeded_reshuffles() -> None:
    """Its edge paths: more uniforms drawn mid-loop, and an interim scoring of a game set from a position."""
    game = KahunaGame(seed=4)
    rng = np.random.default_rng(0)
    while not (game.round == 1 and game.pile_size <= 1 and game.current_player == 0):
        game.step(int(rng.choice(np.flatnonzero(game.action_mask()))))
    position = {"position": game.to_dict()}
    records = []
    for fused in (True, False):
        envs = KahunaVectorEnv(16, opponent="random")
        envs.fused_random = fused
        if fused:
            # draws=1: n uniforms at a time, at most one tick's worth, so the loop asks for more again and again
            envs.batch._play_random = functools.partial(envs.batch._play_random, draws=1)  # type: ignore[method-assign]
        observations, _ = envs.reset(seed=0, options=position)
        unseeded = int((~envs.batch._pcg_ready).sum())
        record: list = [observations]
        step_rng = np.random.default_rng(2)
        for _ in range(40):
            masks = envs.action_masks()
            record.append(envs.step(np.array([step_rng.choice(np.flatnonzero(m)) for m in masks])))
        record.append(envs.batch.to_dicts(range(16)))
        record.append(envs.batched_opponent.rng.bit_generator.state)  # type: ignore[union-attr]
        records.append(record)
        assert unseeded == 16  # the positions' generators start unseeded: the loop hands their reshuffles back
        assert all(d["round"] >= 2 or d["over"] for d in record[-2])  # every game went through the reshuffle
    _assert_same_record(records[0], records[1])


def test_the_fused_random_loop_hands_a_game_without_legal_actions_back_unchanged() -> None:
    """A game to move with no legal action (never in a valid position): nothing of that tick is done."""
    envs = KahunaVectorEnv(4, opponent="random", seat=1)  # the opponent moves first
    envs.reset(seed=0)
    batch = envs.batch
    batch.reset(np.arange(4), game_seeds=[1, 2, 3, 4])  # every game waits for its player 0, the opponent
    batch._legal_words()
    batch._words[2] = 0  # game 2's player has "no legal action"
    before = batch.to_dicts(range(4))
    rng = np.random.default_rng(9)
    state = rng.bit_generator.state
    waiting = np.zeros((4, 2), dtype=bool)
    waiting[:, 1] = True
    assert batch._play_random(rng, waiting) is None
    assert batch.to_dicts(range(4)) == before and rng.bit_generator.state == state


def test_episode_seeds_drawn_raw_are_numpys_integers() -> None:
    """The vector env draws an episode's seeds as raw 64-bit outputs, halved: numpy's ``integers(2**63)``."""
    envs = KahunaVectorEnv(3, opponent="random")
    envs.reset(seed=11)
    for i in range(3):
        rng = envs._env_rngs[i]
        assert rng is not None
        twin = np.random.Generator(np.random.PCG64())
        twin.bit_generator.state = rng.bit_generator.state
        seeds = [envs._draw_seeds(i) for _ in range(50)]
        assert [(s.game, s.opponent, s.opponent_rng) for s in seeds] == [
            tuple(twin.integers(2**63, size=3).tolist()) for _ in range(50)
        ]
        assert twin.bit_generator.state == rng.bit_generator.state


def test_greedy_beats_random_learner_and_seeding_is_reproducible() -> None:
    def run(seed: int) -> tuple[float, int, list]:
        envs = make_vector_env(32, opponent="greedy", seat="random", observation="flat")
        observations, _ = envs.reset(seed=seed)
        rng = np.random.default_rng(0)
        total = episodes = 0
        trace = []
        for _ in range(300):
            masks = envs.action_masks()
            observations, rewards, terminated, _, _ = envs.step([rng.choice(np.flatnonzero(m)) for m in masks])
            total += rewards.sum()
            episodes += int(terminated.sum())
            trace.append(observations.sum())
        return total, episodes, trace

    total, episodes, trace = run(3)
    assert episodes >= 30 and total / episodes < -0.5  # greedy wins most games against a random learner
    assert run(3)[2] == trace and run(4)[2] != trace


def test_env_checker_spaces_and_make_vec() -> None:
    envs = gymnasium.make_vec(
        "Kahuna-v0", num_envs=4, vectorization_mode="vector_entry_point", opponent="greedy", seat=1
    )
    native = envs.unwrapped
    assert isinstance(native, KahunaVectorEnv)
    assert native.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert envs.spec is not None and envs.spec.kwargs["opponent"] == "greedy"
    assert envs.single_action_space == gymnasium.spaces.Discrete(179)
    assert envs.action_space.shape == (4,)
    observations, infos = envs.reset(seed=0)
    assert envs.observation_space.contains(observations)
    assert (infos["seat"] == 1).all() and infos["_seat"].all()
    assert len(envs.call("action_masks")) == 4
    observations, *_ = envs.step(envs.action_space.sample(mask=tuple(native.action_masks().view(np.int8))))
    assert envs.observation_space.contains(observations)
    flat = KahunaVectorEnv(2, observation="flat")
    assert flat.reset(seed=0)[0].shape == (2, 246)
    envs.close()


def test_unmasked_random_actions_as_a_checker_sends_them_forfeit_and_stay_in_the_spaces() -> None:
    envs = KahunaVectorEnv(8, opponent="greedy", seat="random")
    envs.action_space.seed(0)
    observations, _ = envs.reset(seed=0)
    forfeits = 0
    with pytest.warns(kahuna_env.IllegalActionWarning):
        for _ in range(50):
            observations, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
            assert envs.observation_space.contains(observations) and not truncated.any()
            assert rewards.dtype == np.float64 and terminated.dtype == bool
            assert envs.action_masks().any(axis=1).all()
            if terminated.any():
                illegal = infos["final_info"].get("illegal_action", np.zeros(8, dtype=bool))
                assert (rewards[illegal] == -1.0).all() and (illegal <= terminated).all()
                forfeits += int(illegal.sum())
                for i in np.flatnonzero(terminated).tolist():
                    assert envs.single_observation_space.contains(infos["final_obs"][i])
    assert forfeits >= 50


def test_illegal_actions_lose_with_a_warning_or_raise_changing_nothing() -> None:
    envs = KahunaVectorEnv(3, opponent="greedy")
    envs.reset(seed=1)
    masks = envs.action_masks()
    actions = np.array([np.flatnonzero(m)[0] for m in masks])
    actions[1] = int(np.flatnonzero(~masks[1])[0])
    with pytest.warns(kahuna_env.IllegalActionWarning, match="sub-environment 1"):
        _, rewards, terminated, _, infos = envs.step(actions)
    assert terminated.tolist() == [False, True, False] and rewards[1] == -1.0
    assert infos["final_info"]["illegal_action"].tolist() == [False, True, False]
    assert "scores" not in infos["final_info"]
    strict = KahunaVectorEnv(3, opponent="greedy", illegal_action="raise")
    strict.reset(seed=1)
    before = strict.batch.to_dicts()
    with pytest.raises(IllegalActionError, match="game 1"):
        strict.step(actions)
    with pytest.raises(IllegalActionError, match="game 2"):
        strict.step(np.array([actions[0], actions[0], 179]))
    assert strict.batch.to_dicts() == before


def test_positions_terminal_mask_and_bad_options() -> None:
    envs = KahunaVectorEnv(2, opponent="random", terminal_mask="zeros", seat=0)
    position = final_turns_position(2)
    observations, _ = envs.reset(seed=0, options={"position": position})
    scalar = kahuna_env.KahunaSingleAgentEnv(opponent="random", seat=0)
    scalar_observation, _ = scalar.reset(seed=0, options={"position": position})
    assert np.array_equal(observations["observation"][0], scalar_observation["observation"])
    rng = np.random.default_rng(0)
    for _ in range(200):
        _, _, terminated, _, infos = envs.step([rng.choice(np.flatnonzero(m)) for m in envs.action_masks()])
        if terminated.any():
            i = int(np.flatnonzero(terminated)[0])
            assert not infos["final_obs"][i]["action_mask"].any() and infos["action_mask"][i].any()
            break
    else:
        pytest.fail("no episode ended")
    for bad, match in [({"seat": 2}, "seat"), ({"render_mode": "ansi"}, "render"), ({"opponent": 3}, "opponent")]:
        with pytest.raises(ValueError, match=match):
            KahunaVectorEnv(2, **bad)
    with pytest.raises(ValueError, match="backend"):
        make_vector_env(2, backend="gpu")
    with pytest.raises(ValueError, match="same-step"):
        make_vector_env(2, backend="batch", asynchronous=True)


def test_maskable_ppo_trains_on_the_native_vector_env() -> None:
    pytest.importorskip("sb3_contrib")
    torch = pytest.importorskip("torch")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from kahuna_env.sb3 import VecEnv

    torch.set_num_threads(1)
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=8, opponent="greedy", seat="random", observation="flat")
    vec_env = VecMonitor(VecEnv(envs))  # the public adapter (kahuna_env.sb3)
    model = MaskablePPO("MlpPolicy", vec_env, n_steps=32, batch_size=64, n_epochs=1, seed=0)
    model.learn(512)
    assert model.num_timesteps >= 512 and len(model.ep_info_buffer) >= 1


@pytest.mark.parametrize(
    "options",
    [{"opponent": "greedy"}, {"opponent": "mcts:2"}, {"opponent": "random", "asynchronous": True}],
    ids=["batch", "scalar", "async"],
)
def test_maskable_ppo_on_make_vec_without_the_adapter_is_an_error_naming_it(options: dict[str, Any]) -> None:
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    module, name = SB3_ADAPTER.rsplit(".", 1)
    assert SB3_ADAPTER == "kahuna_env.sb3.VecEnv" and getattr(importlib.import_module(module), name)
    envs = gymnasium.make_vec("Kahuna-v0", num_envs=2, observation="flat", **options)
    try:
        with pytest.raises(ValueError, match=r"Stable-Baselines3 takes it wrapped, kahuna_env\.sb3\.VecEnv\(envs\)"):
            MaskablePPO("MlpPolicy", envs)
    finally:
        envs.close()


@pytest.mark.parametrize("num_envs", [2**40, 2**21, 0, True, 2.0])
def test_a_vector_env_beyond_max_games_is_refused_before_anything_is_allocated(num_envs: object) -> None:
    from kahuna_env.vector import MAX_GAMES

    message = rf"^KahunaVectorEnv: num_envs must be an integer in 1\.\.{MAX_GAMES} \(MAX_GAMES\), got "
    with pytest.raises(ValueError, match=message):
        KahunaVectorEnv(num_envs)


def test_a_vector_env_takes_a_numpy_integer_count() -> None:
    envs = KahunaVectorEnv(np.int64(3))
    assert envs.num_envs == 3 and type(envs.num_envs) is int
