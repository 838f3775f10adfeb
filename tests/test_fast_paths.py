"""The short paths taken for speed (issue 39) do what the long ones do.

* ``kahuna_env.env()``'s wrappers (fused ``step``/``observe``/``last``/``agent_iter``) against
  the same stack of PettingZoo's stock wrapper classes, on the same seeded games, masked and
  with illegal actions mixed in, and on every method and attribute PettingZoo's wrappers and
  ``AECEnv`` define (listed from the classes themselves, so a new one fails until it is probed);
* the batched engine's observations and random actions of a subset of games against the
  whole-batch ones.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import pytest
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

import kahuna_env
from kahuna_env.engine import KahunaConfig
from kahuna_env.vector import KahunaBatch


def stock_env(**options: Any) -> Any:
    """``raw_env`` under PettingZoo's own wrapper classes, stacked as ``kahuna_env.env()`` stacks them."""
    environment = kahuna_env.raw_env(**options)
    environment = wrappers.TerminateIllegalWrapper(environment, illegal_reward=-1)
    environment = wrappers.AssertOutOfBoundsWrapper(environment)
    return wrappers.OrderEnforcingWrapper(environment)


def play(environment: Any, seed: int, illegal_rate: float) -> list[tuple[Any, ...]]:
    """Seeded games through the AEC loop (an illegal action now and then); every ``last()`` and the rewards."""
    rng = np.random.default_rng(seed)
    log: list[tuple[Any, ...]] = []
    for game in range(3):
        environment.reset(seed=seed + game)
        for agent in environment.agent_iter():
            observation, reward, termination, truncation, info = environment.last()
            mask = observation["action_mask"] if isinstance(observation, dict) else info["action_mask"]
            vector = observation["observation"] if isinstance(observation, dict) else observation
            log.append((agent, vector.tobytes(), mask.tobytes(), reward, termination, truncation, sorted(info)))
            if termination or truncation:
                action = None
            elif rng.random() < illegal_rate and not mask.all():
                action = int(rng.choice(np.flatnonzero(mask == 0)))
            else:
                action = int(rng.choice(np.flatnonzero(mask)))
            environment.step(action)
            log.append(("rewards", dict(environment.rewards), dict(environment.terminations)))
    return log


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "options",
    [{}, {"observation": "flat"}, {"closing_step": True}, {"max_cycles": 40}],
    ids=["dict", "flat", "closing_step", "max_cycles"],
)
def test_env_wrappers_play_exactly_as_pettingzoos_stock_wrappers(options: dict[str, Any]) -> None:
    assert play(kahuna_env.env(**options), 7, 0.01) == play(stock_env(**options), 7, 0.01)


def test_env_wrappers_keep_the_order_checks_of_pettingzoo() -> None:
    environment = kahuna_env.env()
    with pytest.raises(AttributeError, match="before reset"):
        environment.last()
    with pytest.raises(AssertionError, match="reset"):
        environment.agent_iter()
    environment.reset(seed=0)
    iterator = iter(environment.agent_iter())
    next(iterator)
    with pytest.raises(AssertionError, match="step"):
        next(iterator)  # no step() in between


# ------------------------------------------------------------------------------------ every name PettingZoo defines
STOCK_CLASSES = (
    AECEnv,
    wrappers.BaseWrapper,
    wrappers.OrderEnforcingWrapper,
    wrappers.AssertOutOfBoundsWrapper,
    wrappers.TerminateIllegalWrapper,
)
"""What ``kahuna_env.env()``'s stack stands in for: ``AECEnv`` and PettingZoo's three wrappers with their base."""


def stock_names() -> set[str]:
    """Every method and property the stock classes define (but ``__init__``) and every attribute ``AECEnv`` declares."""
    names = {
        name
        for cls in STOCK_CLASSES
        for name, value in vars(cls).items()
        if name != "__init__" and (inspect.isfunction(value) or isinstance(value, property))
    }
    return names | set(AECEnv.__annotations__)


def _first_legal(environment: Any) -> int | None:
    observation, _, termination, truncation, info = environment.last()
    if termination or truncation:
        return None
    mask = observation["action_mask"] if isinstance(observation, dict) else info["action_mask"]
    return int(np.flatnonzero(mask)[0])


def _agent_iter_twice(environment: Any) -> tuple[Any, Any]:
    iterator = iter(environment.agent_iter())
    return outcome(lambda: next(iterator)), outcome(lambda: next(iterator))  # no step() in between: refused


def _step_and_look(environment: Any) -> Any:
    environment.step(_first_legal(environment))
    return snapshot(environment)


def _reset_and_look(environment: Any) -> Any:
    environment.reset(seed=11)
    return snapshot(environment)


def _close(environment: Any) -> Any:
    environment.close()
    return snapshot(environment)


def _through_getattr(environment: Any) -> Any:
    """Names found on the raw env through the wrappers' ``__getattr__``: public, private (refused) and missing."""
    return [
        outcome(lambda name=name: getattr(environment, name))
        for name in ("config", "reward_mode", "_np_random", "nope")
    ]


PROBES: dict[str, Callable[[Any], Any]] = {
    "step": _step_and_look,
    "reset": _reset_and_look,
    "observe": lambda environment: [environment.observe(agent) for agent in ("player_0", "player_1")],
    "render": lambda environment: environment.render(),
    "state": lambda environment: environment.state(),
    "close": _close,
    "observation_space": lambda environment: environment.observation_space("player_1"),
    "action_space": lambda environment: environment.action_space("player_0"),
    "num_agents": lambda environment: environment.num_agents,
    "max_num_agents": lambda environment: environment.max_num_agents,
    "agent_iter": _agent_iter_twice,
    "last": lambda environment: [environment.last(), environment.last(observe=False)],
    "unwrapped": lambda environment: type(environment.unwrapped).__qualname__,
    "__str__": str,
    "__getattr__": _through_getattr,
    # AECEnv's own helpers for environments, reached through the wrappers as AECEnv methods.
    **{
        name: (lambda environment, name=name: getattr(environment, name).__qualname__)
        for name in ("_deads_step_first", "_clear_rewards", "_accumulate_rewards", "_was_dead_step")
    },
    # AECEnv's declared attributes.
    **{name: (lambda environment, name=name: getattr(environment, name)) for name in AECEnv.__annotations__},
}
"""How each stock name is exercised on an environment (the call, then what it left behind where it changes it)."""


def plain(value: Any) -> Any:
    """``value`` in a form ``==`` compares exactly: arrays by dtype, shape and bytes; spaces by ``repr``."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, gymnasium.spaces.Space):
        return ("space", repr(value))
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(item) for item in value)
    return value


def outcome(call: Callable[[], Any]) -> Any:
    """What ``call()`` returns (see :func:`plain`), or the type and message of what it raises."""
    try:
        return plain(call())
    except Exception as error:
        return ("raised", type(error).__name__, str(error))


def snapshot(environment: Any) -> Any:
    """Everything an agent loop reads after a call: ``last()`` and the AEC dicts."""
    names = ("agent_selection", "agents", "rewards", "_cumulative_rewards", "terminations", "truncations", "infos")
    return [outcome(environment.last)] + [outcome(lambda name=name: getattr(environment, name)) for name in names]


PHASES = ("before reset", "reset", "mid-game", "after an illegal action", "game over")


def bring_to(environment: Any, phase: str) -> Any:
    """``environment`` in ``phase``, reached by the same seeded calls whatever the wrapper classes."""
    if phase == "before reset":
        return environment
    environment.reset(seed=5)
    if phase == "reset":
        return environment
    for _ in range(30):
        environment.step(_first_legal(environment))
    if phase == "after an illegal action":
        observation, _, _, _, info = environment.last()
        mask = observation["action_mask"] if isinstance(observation, dict) else info["action_mask"]
        environment.step(int(np.flatnonzero(mask == 0)[0]))
    elif phase == "game over":
        for _agent in environment.agent_iter():
            environment.step(_first_legal(environment))
    return environment


def test_every_name_pettingzoos_wrappers_define_is_probed() -> None:
    # A method or attribute PettingZoo adds to AECEnv or its wrappers fails here until it has a probe below.
    assert stock_names() == set(PROBES)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("options", "phase"),
    list(itertools.product([{}, {"observation": "flat"}, {"closing_step": True, "render_mode": "ansi"}], PHASES)),
    ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items()) or "default" if isinstance(value, dict) else value,
)
def test_env_wrappers_answer_every_stock_name_as_pettingzoos_wrappers_do(options: dict[str, Any], phase: str) -> None:
    for name, probe in PROBES.items():
        ours = outcome(lambda probe=probe: probe(bring_to(kahuna_env.env(**options), phase)))
        stock = outcome(lambda probe=probe: probe(bring_to(stock_env(**options), phase)))
        assert ours == stock, f"{name} ({phase}): {ours!r:.300} != {stock!r:.300}"


def batch_in_play(seed: int) -> KahunaBatch:
    configs = [KahunaConfig(), KahunaConfig(variant="planning"), KahunaConfig(discard_rule="hand_limit")]
    batch = KahunaBatch(48, [configs[i % 3] for i in range(48)], seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(30 + seed):
        batch.step(batch.random_actions(rng))
    return batch


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_observations_of_some_games_are_those_rows_of_all(seed: int) -> None:
    batch = batch_in_play(seed)
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(rng.random(batch.n) < 0.3)
    seats = rng.integers(0, 2, batch.n)
    for player in (None, 1, seats):
        part = batch.observations(player, rows=rows)
        assert part.shape == (len(rows), 246)
        assert part.tobytes() == batch.observations(player)[rows].tobytes()


def test_random_actions_of_some_games_draw_for_those_games_only() -> None:
    batch = batch_in_play(3)
    rows = np.array([2, 5, 11, 40])
    rng, twin = np.random.default_rng(4), np.random.default_rng(4)
    actions = batch.random_actions(rng, rows=rows)
    masks = batch.legal_masks()
    assert masks[rows, actions[rows]].all()
    assert not np.delete(actions, rows).any()
    twin.random(len(rows))  # one draw per asked game, nothing more
    assert rng.random() == twin.random()
