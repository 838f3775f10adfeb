"""The short paths taken for speed (issue 39) do what the long ones do.

* ``kahuna_env.env()``'s wrappers (fused ``step``/``observe``/``last``/``agent_iter``) against
  the same stack of PettingZoo's stock wrapper classes, on the same seeded games, masked and
  with illegal actions mixed in;
* the batched engine's observations and random actions of a subset of games against the
  whole-batch ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
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
