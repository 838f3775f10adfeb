"""
# Kahuna

A PettingZoo AEC environment for *Kahuna*, Günter Cornett's two-player game
of bridges, island cards and majorities.

| Creation           | `from kahuna_env import env; e = env()` (or `kahuna_env.raw_env(...)`) |
|--------------------|--------------------------------------------------------------------------|
| Actions            | Discrete                                                                 |
| Parallel API       | `kahuna_env.parallel_env()` (turn based: one action applied per step)     |
| PettingZoo id      | `pettingzoo.make("aec", "kahuna-v0")`, `"parallel"`; `from kahuna_env import kahuna_v0` |
| Manual Control     | No                                                                       |
| Agents             | `agents = ['player_0', 'player_1']`                                      |
| Num Agents         | 2                                                                        |
| Action Shape       | `()` (one integer)                                                       |
| Action Values      | `Discrete(179)`                                                          |
| Observation Shape  | `{'observation': (246,), 'action_mask': (179,)}`; `(246,)` if flat       |
| Observation Values | `observation`: float32 in [0, 1]; `action_mask`: int8 in {0, 1}          |
| State Shape        | `(283,)` float32 in [0, 1] (`env.state()`, `env.state_space`)            |
| Import             | `import kahuna_env` (no torch needed)                                    |

Kahuna is played on an archipelago of 12 islands joined by 27 possible
bridges.  On their turn players pay island cards to place bridges (one card
naming either end of a free line) or to remove an opponent bridge (two cards
naming its ends), or discard cards face down instead, and end the turn by
drawing from the pile, taking one of three face-up cards, or passing.  Holding
a strict majority of an island's lines controls it; taking control removes
every opponent bridge on that island's lines.  Controlled islands are scored
after each of three rounds; the higher total wins.  The rules as implemented
are in `docs/RULES.md`.

## Creation and options

```python
import kahuna_env

env = kahuna_env.env(
    variant="standard",          # or "planning" (restricted placement, free claim after a removal)
    handicap=None,               # or (player, n): that player places n (1..3) free bridges first
    discard_rule="instead_of_play",  # or "hand_limit" (the printed Kosmos rule)
    first_player=0,              # 0 or 1
    reward="win_loss",           # or "score" (final point difference)
    render_mode=None,            # "ansi", "rgb_array" or "human"
    render_viewer=None,          # or 0 / 1: render that player's view (nothing it cannot see)
    observation="dict",          # or "flat": the Box alone, the mask in infos[agent]["action_mask"]
    closing_step=False,          # or True: the player who did not end the game gets one closing step
    max_cycles=None,             # or n: both agents truncated after n actions of an unfinished game
)
env.reset(seed=42)
for agent in env.agent_iter():
    observation, reward, termination, truncation, info = env.last()
    if termination or truncation:
        action = None
    else:
        mask = observation["action_mask"]
        action = env.action_space(agent).sample(mask)  # or your policy
    env.step(action)
env.close()
```

Every keyword is checked at construction: a bad value is a `ValueError`
naming the keyword, the value given and the values allowed; an unknown keyword
is a `TypeError`.  `kahuna_env.env()` stacks PettingZoo's
`TerminateIllegalWrapper` (an illegal action ends the game with -1 for the
offender and 0 for the other player), `AssertOutOfBoundsWrapper` and
`OrderEnforcingWrapper` over `raw_env`: the env's own versions of them, on
PettingZoo's public `BaseWrapper`, with PettingZoo's checks and messages
(tests/test_fast_paths.py holds them equal to PettingZoo's classes), that read
`agent_selection`, `terminations`, `rewards`, ... straight from the raw env
instead of through one `__getattr__` call per layer, which alone cost more
than a Kahuna step.  The raw environment raises the engine's
`IllegalActionError` (a `ValueError` naming the action and the reason) on an
illegal action and leaves the game unchanged.

`reset(seed=s)` makes the game reproducible: the deal and every later
reshuffle come from a generator seeded from `s` (no global random state);
`reset()` without a seed continues that generator.  `reset(options={"position":
d})` starts from a position dict in the format of docs/RULES.md "Positions" (as written by
`KahunaGame.to_dict()`): for curricula, endgame drills and bug reports.  A
position without a `"config"` key is played under the environment's options;
a position with one is played under the config it records.  A malformed
position, or one whose game is already over, is a `ValueError`.  Other option
keys are ignored with a warning (PettingZoo's `api_test` passes arbitrary
options).  The rules engine is `env.unwrapped.game` (a `KahunaGame`).
`copy.deepcopy(env)` and `pickle` keep the game: the copy (of `env()` or
`raw_env`, mid-game or not) steps on exactly as the original would, later
unseeded resets included (search-based tools copy environments).

## Turns

A turn is several actions by the same player: any number of card plays (or,
instead, face-down discards, one per action), then a draw, a take or a pass.
The player to act keeps `agent_selection` for every action of its turn, so
`agent_iter()` yields the same agent several times in a row.  With a handicap,
the handicap player first places its free bridges (one action each).  Tools
that assume alternating turns must read `agent_selection` after every step;
docs/ECOSYSTEM.md states the whole contract and each RL library's recipe.

`closing_step=True` is for tools that record a reward only in the transitions
of the agent that acted (Tianshou's `PettingZooEnv`): the step that ends the
game gives its mover its final reward (the other player gets 0 on that step)
and terminates the mover only; the other player is then selected for one
closing step, whose mask allows `CLOSING_ACTION` (PASS) alone and whose action
is ignored, whatever it is (even under `env()`'s illegal-move check); that
step gives it its final reward and terminates it.  Each seat thus gets its
result on a step of its own; the rewards of the whole game are unchanged.

## Observation Space

`observe(agent)` (and `last()`) return a dict with an `'observation'` element,
the agent's view as a flat `float32` vector of 246 entries in [0, 1], and an
`'action_mask'` element described below.  The view is from the agent's side
("mine" / "opponent's"): the owner of every line and the controller of every
island, the agent's hand (cards per island), the face-up row, the pile size,
the discard pile (openly played cards, the agent's own face-down discards, the
number of opponent face-down discards), the opponent's hand size and the cards
it is publicly known to hold, scores, round, final-turns phase, bridge supplies
and the turn state.  It never contains the opponent's hidden cards, the pile
order or which cards the opponent discarded face down: two games with the same
public history give the same observation.

The layout (name -> slice) is importable as
`kahuna_env.observation.OBSERVATION_LAYOUT` and documented, with the scaling
of every feature, in `kahuna_env.observation`;
`kahuna_env.observation.describe_layout()` prints it.

`state()` returns the full state for centralized critics: player 0's
observation followed by player 1's hand, the pile's cards per island, player
1's face-down discards and the player to act (`STATE_LAYOUT` in
`kahuna_env.observation`; `env.state_space` is `Box(0, 1, (283,), float32)`).

### Legal Actions Mask

`observation["action_mask"]` is an `int8` vector of 179 entries, 1 where the
action is legal.  It is all zeros for the agent that is not to act (as in
PettingZoo's classic games: that agent is never asked to act here), and for
both agents once the game is over or truncated (except a pending closing
step's `CLOSING_ACTION`).  After the end, however it came (a win, an illegal
move, `max_cycles`), `observe(agent)` keeps answering for both agents with the
final observation, also once both have taken their final `step(None)`
(SuperSuit's wrappers observe then).  The parallel env, where every agent hands in an
action on every step, gives the waiting agent `WAITING_MASK` instead
(`CLOSING_ACTION` alone; its action is ignored), so that a masked sampler
there always has a choice.
`env.unwrapped.action_mask(agent)` returns it too.

With `observation="flat"` the observation space is the `Box` alone
(`Box(0, 1, (246,), float32)`, what SuperSuit's observation wrappers need) and
the mask is `infos[agent]["action_mask"]`, kept up to date for both agents
after every reset and step (PettingZoo's `TerminateIllegalWrapper` and
TorchRL's `PettingZooWrapper(use_mask=True)` read it there).

## Action Space

One `Discrete(179)` space (`kahuna_env.actions`); `a`/`b` are the
line's first/second island (alphabetically):

| indices  | action                                                          |
|----------|-----------------------------------------------------------------|
| 0..26    | PLACE on line i, paying a card of `a`                           |
| 27..53   | PLACE on line i-27, paying a card of `b`                        |
| 54..80   | REMOVE the opponent bridge on line i-54, paying `a` + `b`       |
| 81..107  | REMOVE on line i-81, paying `a` + `a`                           |
| 108..134 | REMOVE on line i-108, paying `b` + `b`                          |
| 135..146 | DISCARD face down one card of island i-135                      |
| 147      | DRAW the top card of the pile                                   |
| 148..150 | TAKE face-up slot i-148                                         |
| 151      | PASS (end the turn without drawing)                             |
| 152..178 | FREE_BRIDGE on line i-152 (handicap setup, planning-variant claim) |

`kahuna_env.actions.describe_action(a)` gives the text of an action, e.g.
`place ALOA-BARI paying ALOA`.

## Rewards

Rewards are given once, when the game ends; every other step gives 0.

| `reward=`    | winner | loser | draw |
|--------------|--------|-------|------|
| `"win_loss"` | +1     | -1    | 0    |
| `"score"`    | own total points minus the opponent's (e.g. +3 / -3) | | 0 |

In `"score"` mode the reward is the difference of the final point totals,
whatever decided the game: a tie on points decided by a tie-break, or a
premature end (a player without bridges from round 2 on loses at once), gives
the point difference, which may be 0 or even favour the loser.  Use
`"win_loss"` when winning is what counts.  Both modes sum to zero.  With
`env()`, an illegal action ends the game with -1 for the offender and 0 for
the other player instead.

At the end, `infos[agent]` holds `{"scores": [p0, p1], "final_points": [p0,
p1], "winner": 0 | 1 | -1}` (player indices, -1 for a draw: always an int, so
that frameworks stacking infos into arrays can store every game); before that
it is an empty dict (with `observation="flat"`, plus `"action_mask"` always).

## Truncation

`max_cycles=n` (PettingZoo's keyword; `None`, the default, means no limit)
truncates an unfinished game after `n` actions (the actions of both players
counted together, one per `step`; a turn is several actions): both agents get
`truncations[agent] = True`, a reward of 0 and all-zero masks, and the
`agent_iter()` loop ends as after a finished game.  `pettingzoo.make("aec",
"kahuna-v0", max_cycles=n)` passes it through.  PettingZoo's
`max_cycles_test` itself does not apply to a game like Kahuna: it steps with
unmasked random actions (an illegal action ends a Kahuna game at once) and
expects every agent to act once per cycle, while a Kahuna turn is several
actions by one player.

## Rendering

`render_mode="ansi"` returns a compact text board; `"rgb_array"` a picture of
the archipelago; `"human"` shows that picture in a pygame window when a display
exists (`DISPLAY` or `WAYLAND_DISPLAY` set) and prints the text board otherwise.
With `render_viewer=None` (the default) every rendering is the spectator's,
omniscient view: both hands are shown, and the last action names the card of a
face-down discard.  `render_viewer=0` or `1` renders that player's view and
nothing it cannot see: the opponent's hand as card backs (the cards it took face
up named), the pile and the discards as counts, and the opponent's face-down
discard as "discard a card face down"; two games that differ only in cards the
viewer cannot see render identically.  See `kahuna_env.render`, which can also
save a whole game as an animated GIF (from either view).

## Version History

* v0: Initial release (0.1.0); `max_cycles`; `render_viewer`.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import EzPickle, seeding
from pettingzoo import AECEnv
from pettingzoo.utils import BaseWrapper
from pettingzoo.utils.env_logger import EnvLogger

from kahuna_env.actions import NUM_ACTIONS, PASS, check_viewer
from kahuna_env.config import RULE_OPTIONS, is_integer, shown
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.observation import OBSERVATION_SIZE, STATE_SIZE, encode_observation, encode_state
from kahuna_env.render import EnvRenderer

AGENTS: tuple[str, str] = ("player_0", "player_1")
"""Agent names; ``AGENTS[p]`` plays as engine player ``p``."""
AGENT_INDEX: dict[str, int] = {agent: player for player, agent in enumerate(AGENTS)}
"""Agent name -> engine player (0 or 1)."""
REWARD_MODES: tuple[str, ...] = ("win_loss", "score")
"""Values of the ``reward`` keyword."""
RENDER_MODES: tuple[str, ...] = ("ansi", "rgb_array", "human")
"""Values of the ``render_mode`` keyword (besides ``None``)."""
OBSERVATION_MODES: tuple[str, ...] = ("dict", "flat")
"""Values of the ``observation`` keyword: a ``Dict`` with the mask, or the ``Box`` alone (mask in the infos)."""
CLOSING_ACTION = PASS
"""The one action the mask allows on a closing step (``closing_step=True``) and to the agent that is not to act.

Whatever action is given there is ignored: the game is over (closing step) or it is not the agent's turn.
"""


def _waiting_mask() -> np.ndarray:
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[CLOSING_ACTION] = 1
    mask.flags.writeable = False
    return mask


WAITING_MASK = _waiting_mask()
"""The parallel env's mask of the agent that is not to act (read-only): :data:`CLOSING_ACTION` alone.

The AEC env gives that agent an all-zero mask (PettingZoo's classic convention): it is never asked to act.
"""


def env(**kwargs: Any) -> AECEnv:
    """The Kahuna AEC environment with PettingZoo's standard wrappers (see the module docstring).

    Keywords are those of :class:`raw_env`.  The stack is PettingZoo's
    ``TerminateIllegalWrapper`` (an illegal action ends the game with -1 for
    the offender and 0 for the other player), ``AssertOutOfBoundsWrapper`` and
    ``OrderEnforcingWrapper``, each with direct attribute forwarding (see
    :class:`DirectAttributes`).
    """
    environment: AECEnv = raw_env(**kwargs)
    environment = TerminateIllegalWrapper(environment, illegal_reward=-1)
    environment = AssertOutOfBoundsWrapper(environment)
    environment = OrderEnforcingWrapper(environment)
    return environment


def _forwarded(name: str, holder: str = "_raw") -> property:
    """A property reading (one C-level ``attrgetter``) and writing ``name`` on the env held in ``self.<holder>``."""

    def set_(self: Any, value: Any) -> None:
        setattr(getattr(self, holder), name, value)

    return property(operator.attrgetter(f"{holder}.{name}"), set_, doc=f"``{name}`` of the raw environment.")


class DirectAttributes:
    """Mixin for PettingZoo wrappers over :class:`raw_env`: the AEC attributes come straight from the raw env.

    PettingZoo's ``BaseWrapper`` finds ``agent_selection``, ``terminations``,
    ``rewards`` and the like through a chain of ``__getattr__`` calls, one per
    wrapper layer; with three layers that costs more than a Kahuna step
    itself.  These properties read (and write) the raw environment's
    attributes directly; the wrappers' own logic is PettingZoo's, unchanged.
    """

    def __init__(self, env: AECEnv, *args: Any, **kwargs: Any) -> None:
        super().__init__(env, *args, **kwargs)  # type: ignore[call-arg]
        self._raw = env.unwrapped

    agent_selection = _forwarded("agent_selection")
    agents = _forwarded("agents")
    rewards = _forwarded("rewards")
    terminations = _forwarded("terminations")
    truncations = _forwarded("truncations")
    infos = _forwarded("infos")
    _cumulative_rewards = _forwarded("_cumulative_rewards")

    def observation_space(self, agent: str) -> spaces.Space:
        """The raw environment's observation space of ``agent``."""
        return self._raw.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        """The raw environment's action space of ``agent``."""
        return self._raw.action_space(agent)


class TerminateIllegalWrapper(DirectAttributes, BaseWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` (the same behaviour, on PettingZoo's public API only).

    An action the mask of the selected agent's last observation forbids ends the game:
    ``illegal_reward`` for the offender, 0 for the other player, PettingZoo's warning line
    (:meth:`raw_env.forfeit`).  On a closing step (``closing_step=True``) the game is already over
    and the action is ignored, so it is passed through unchecked: no action can turn the result
    into a forfeit.  ``tests/test_fast_paths.py`` holds it equal to PettingZoo's own class.
    """

    def __init__(self, env: AECEnv, illegal_reward: float) -> None:
        super().__init__(env)
        self.illegal_reward = illegal_reward
        """The offender's reward for an illegal action."""
        self._kept: tuple[Any, Any] | None = None  # the selected agent's last observation and info
        self._forfeited = False  # the game was ended by an illegal action

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Reset the game and forget the kept observation."""
        self._forfeited = False
        self._kept = None
        self.env.reset(seed=seed, options=options)

    def observe(self, agent: str) -> Any:
        """The wrapped env's observation of ``agent``; the selected agent's is kept (with its info) for
        :meth:`step`'s check."""
        observation = self.env.observe(agent)
        raw = self._raw
        if agent == raw.agent_selection:
            self._kept = (observation, raw.infos.get(agent, {}))
        return observation

    def step(self, action: Any) -> None:
        """Step the wrapped env, or end the game on an action the kept mask forbids (see the class)."""
        raw = self._raw
        selected = raw.agent_selection
        if raw.closing_agent is not None and selected == raw.closing_agent:
            self._kept = None
            self.env.step(action)
            return
        if self._kept is None:
            self.observe(selected)
        observation, info = self._kept
        self._kept = None
        if isinstance(observation, dict):
            assert "action_mask" in observation, f"`action_mask` not found in dictionary observation: {observation}"
            mask = observation["action_mask"]
        else:
            assert info is not None and "action_mask" in info, f"`action_mask` not found in info: {info}"
            mask = info["action_mask"]
        done = raw.terminations[selected] or raw.truncations[selected]
        if self._forfeited and done:
            raw.dead_step(action)
        elif not done and not mask[action]:
            raw.forfeit(selected, float(self.illegal_reward))
            self._forfeited = True
        else:
            self.env.step(action)

    def __str__(self) -> str:
        return str(self.env)


class AssertOutOfBoundsWrapper(DirectAttributes, BaseWrapper):
    """PettingZoo's ``AssertOutOfBoundsWrapper`` (the same check, on PettingZoo's public API only)."""

    def __init__(self, env: AECEnv) -> None:
        assert isinstance(env, AECEnv), "AssertOutOfBoundsWrapper is only compatible with AEC environments"
        super().__init__(env)

    def observe(self, agent: str) -> Any:
        """The wrapped env's observation of ``agent`` (this wrapper checks actions only)."""
        return self.env.observe(agent)

    def step(self, action: Any) -> None:
        """Assert that ``action`` is in the action space (or ``None`` for a done agent), then step."""
        raw = self._raw
        agent = raw.agent_selection
        assert (action is None and (raw.terminations[agent] or raw.truncations[agent])) or raw.action_space(
            agent
        ).contains(action), "action is not in action space"
        self.env.step(action)

    def __str__(self) -> str:
        return str(self.env)


ORDER_GUARDED = frozenset(
    {"rewards", "terminations", "truncations", "infos", "agent_selection", "num_agents", "agents"}
)
"""The attributes :class:`OrderEnforcingWrapper` refuses before the first reset (PettingZoo's list)."""


class OrderEnforcingWrapper(DirectAttributes, BaseWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` (the same checks and messages, on PettingZoo's public API only).

    Before the first reset the attributes of :data:`ORDER_GUARDED` raise ``AttributeError`` and
    ``step``, ``observe``, ``state``, ``render`` and ``agent_iter`` raise PettingZoo's errors; a step
    after the game ended warns; ``agent_iter()`` asserts a ``step()`` or ``reset()`` between two agents.
    The guarded attributes are read through ``_reset_raw``, which is ``None`` until the first reset:
    the lookup then fails and :meth:`__getattr__` raises the "cannot be accessed before reset" error.
    """

    def __init__(self, env: AECEnv) -> None:
        assert isinstance(env, AECEnv), "OrderEnforcingWrapper is only compatible with AEC environments"
        self._reset_raw: raw_env | None = None
        self._stepped = False  # a step() or reset() since agent_iter() last gave an agent
        super().__init__(env)

    agent_selection = _forwarded("agent_selection", holder="_reset_raw")
    agents = _forwarded("agents", holder="_reset_raw")
    rewards = _forwarded("rewards", holder="_reset_raw")
    terminations = _forwarded("terminations", holder="_reset_raw")
    truncations = _forwarded("truncations", holder="_reset_raw")
    infos = _forwarded("infos", holder="_reset_raw")

    def __getattr__(self, name: str) -> Any:
        """PettingZoo's refusal before reset of :data:`ORDER_GUARDED`; else the wrapped env's attribute."""
        if name in ORDER_GUARDED and self._reset_raw is None:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return super().__getattr__(name)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Reset the game and open the guarded attributes."""
        self._reset_raw = self._raw
        self._stepped = True
        self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        """Step the wrapped env once reset and while agents are left (else PettingZoo's error or warning)."""
        raw = self._reset_raw
        if raw is None:
            EnvLogger.error_step_before_reset()
        self._stepped = True
        if not raw.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        self.env.step(action)

    def observe(self, agent: str) -> Any:
        """The wrapped env's observation of ``agent`` once reset."""
        if self._reset_raw is None:
            EnvLogger.error_observe_before_reset()
        return self.env.observe(agent)

    def state(self) -> np.ndarray:
        """The wrapped env's full state once reset."""
        if self._reset_raw is None:
            EnvLogger.error_state_before_reset()
        return self.env.state()

    def render(self) -> Any:
        """The wrapped env's rendering once reset."""
        if self._reset_raw is None:
            EnvLogger.error_render_before_reset()
        return self.env.render()

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``AECEnv.last``: the selected agent's observation, cumulative reward, termination, truncation, info."""
        raw = self._reset_raw
        if raw is None:
            return super().last(observe)  # AECEnv's, whose first read is refused before reset
        agent = raw.agent_selection
        assert agent is not None
        observation = self.env.observe(agent) if observe else None
        return (
            observation,
            raw._cumulative_rewards[agent],
            raw.terminations[agent],
            raw.truncations[agent],
            raw.infos[agent],
        )

    def agent_iter(self, max_iter: int = 2**63) -> AgentIterable:
        """The agents in turn, until the game ends or ``max_iter`` (a ``step()`` or ``reset()`` between two)."""
        if self._reset_raw is None:
            EnvLogger.error_agent_iter_before_reset()
        return AgentIterable(self, max_iter)

    def __str__(self) -> str:
        return str(self.env)


class AgentIterable:
    """What :meth:`OrderEnforcingWrapper.agent_iter` returns: each ``iter()`` is a new :class:`AgentIterator`."""

    def __init__(self, env: OrderEnforcingWrapper, max_iter: int) -> None:
        self.env = env
        self.max_iter = max_iter

    def __iter__(self) -> AgentIterator:
        return AgentIterator(self.env, self.max_iter)


class AgentIterator:
    """PettingZoo's order-enforcing agent iterator, reading the raw env's attributes directly."""

    def __init__(self, env: OrderEnforcingWrapper, max_iter: int) -> None:
        self.env = env
        self.iters_til_term = max_iter

    def __iter__(self) -> AgentIterator:
        return self

    def __next__(self) -> str:
        env = self.env
        raw = env._reset_raw
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert env._stepped, "need to call step() or reset() in a loop over `agent_iter`"
        env._stepped = False
        return raw.agent_selection


def observation_space(mode: str) -> spaces.Space:
    """An agent's observation space: the ``Dict`` of observation and int8 mask, or the ``Box`` alone for ``"flat"``."""
    vector = spaces.Box(low=0.0, high=1.0, shape=(OBSERVATION_SIZE,), dtype=np.float32)
    if mode == "flat":
        return vector
    return spaces.Dict(
        {"observation": vector, "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8)}
    )


def check_reward_mode(reward: object, where: str) -> str:
    """Return ``reward`` if it is a reward mode; raise ``ValueError`` naming ``where`` otherwise."""
    if not isinstance(reward, str) or reward not in REWARD_MODES:
        raise ValueError(f"{where}: reward must be one of {list(REWARD_MODES)}, got {shown(reward)}")
    return reward


def final_rewards(game: KahunaGame, reward: str) -> tuple[float, float]:
    """Rewards of players 0 and 1 for a finished game under reward mode ``reward`` (they sum to zero)."""
    if reward == "score":
        scores = game.scores
        difference = float(scores[0] - scores[1])
        return difference, -difference
    winner = game.winner
    if winner is None:
        return 0.0, 0.0
    return (1.0, -1.0) if winner == 0 else (-1.0, 1.0)


def final_info(game: KahunaGame) -> dict[str, Any]:
    """The info dict of a finished game: ``scores``, ``final_points`` and ``winner`` (a new dict each call).

    ``winner`` is the winner's player index, or -1 for a draw (always an int, unlike the engine's
    ``game.winner``, which is ``None`` for a draw): frameworks that stack infos into arrays, such as
    Tianshou's replay buffer or Gymnasium's vector envs, cannot store ``None`` after an int.
    """
    winner = game.winner
    return {"scores": game.scores, "final_points": game.final_points, "winner": -1 if winner is None else winner}


def start_game(config: KahunaConfig, game_seed: int, options: Mapping[str, Any] | None) -> KahunaGame:
    """The game a ``reset(seed, options)`` starts: a new deal, or ``options["position"]`` (docs/RULES.md, "Positions").

    Other option keys are ignored with a warning (PettingZoo's ``api_test``
    passes arbitrary options); options that are not a dict are a ``ValueError``.
    """
    position = None
    if options is not None:
        if not isinstance(options, Mapping):
            raise ValueError(f"reset(): options must be a dict or None, got {type(options).__name__}")
        unknown = sorted(str(key) for key in options if key != "position")
        if unknown:
            gymnasium.logger.warn(f"reset(): ignoring unknown option(s) {unknown}; the known option is 'position'")
        position = options.get("position")
    if position is None:
        return KahunaGame(config, seed=game_seed)
    return load_position(position, config, game_seed, "reset(options={'position': ...})")


def load_position(position: object, config: KahunaConfig, seed: int, where: str) -> KahunaGame:
    """A game from a position dict (docs/RULES.md, "Positions"), under ``config`` unless the position records its own.

    A malformed position or a finished game is a ``ValueError`` that starts with ``where``.
    """
    if not isinstance(position, Mapping):
        raise ValueError(
            f"{where}: the position must be a dict (see docs/RULES.md, Positions), got {type(position).__name__}"
        )
    if position.get("config") is None:
        position = {**position, "config": config.to_dict()}
    try:
        game = KahunaGame.from_dict(position, seed=seed)
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"{where}: malformed position: {error}") from None
    if game.is_over:
        raise ValueError(f"{where}: the position is a finished game (winner {game.winner}); nothing is left to play")
    return game


def make_config(rule_options: Mapping[str, Any], where: str) -> KahunaConfig:
    """The engine config of an environment's rule-option keywords (:data:`~kahuna_env.config.RULE_OPTIONS`).

    An option not given takes :class:`KahunaConfig`'s default.  A keyword that is no rule option
    is a ``TypeError`` (as Python's for an unknown keyword), a bad value a ``ValueError``; both
    start with ``where``.
    """
    unknown = [name for name in rule_options if name not in RULE_OPTIONS]
    if unknown:
        raise TypeError(
            f"{where} got an unexpected keyword argument {shown(unknown[0])} "
            f"(its rule options are {', '.join(RULE_OPTIONS)})"
        )
    try:
        return KahunaConfig(**rule_options)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None


class ActionSpace(spaces.Discrete):
    """``Discrete(179)`` whose ``contains`` answers a plain ``int`` without numpy (it runs on every wrapped step).

    Everything else, and the answer for any other type, is ``gymnasium.spaces.Discrete``'s.
    """

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is an action id of this space."""
        if x.__class__ is int:
            return self.start <= x < self.start + self.n
        return super().contains(x)


def check_render_options(render_mode: object, render_viewer: object, where: str) -> int | None:
    """One-line ``ValueError`` for a bad ``render_mode`` or ``render_viewer``; returns the viewer (None, 0 or 1)."""
    if render_mode is not None and (not isinstance(render_mode, str) or render_mode not in RENDER_MODES):
        raise ValueError(f"{where}: render_mode must be None or one of {list(RENDER_MODES)}, got {shown(render_mode)}")
    try:
        return check_viewer(render_viewer, "render_viewer")
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None


def _check_options(observation: object, closing_step: object, max_cycles: object, where: str) -> None:
    """One-line ``ValueError`` for a bad ``observation``, ``closing_step`` or ``max_cycles``."""
    if not isinstance(observation, str) or observation not in OBSERVATION_MODES:
        raise ValueError(f"{where}: observation must be one of {list(OBSERVATION_MODES)}, got {shown(observation)}")
    if not isinstance(closing_step, bool):
        raise ValueError(f"{where}: closing_step must be True or False, got {shown(closing_step)}")
    if max_cycles is not None and (not is_integer(max_cycles) or max_cycles < 1):
        raise ValueError(f"{where}: max_cycles must be None or a positive int, got {shown(max_cycles)}")


class raw_env(AECEnv, EzPickle):
    """The unwrapped Kahuna AEC environment (see the module docstring for the manual).

    Args:
        reward: ``"win_loss"`` (+1/-1/0) or ``"score"`` (final point difference).
        render_mode: ``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"``.
        render_viewer: ``None`` (render the spectator's view: both hands, every card) or a player,
            0 or 1, whose view is rendered: nothing that player cannot see.
        observation: ``"dict"`` (observation and action mask) or ``"flat"`` (the vector alone,
            the mask in ``infos[agent]["action_mask"]``).
        closing_step: ``False``, or ``True`` for one extra step of the player who did not end
            the game, so that each seat gets its final reward on a step of its own.
        max_cycles: ``None`` (no limit) or a positive int: an unfinished game is truncated for
            both agents after that many actions (PettingZoo's keyword).
        **rule_options: the rule options, :class:`~kahuna_env.config.KahunaConfig`'s fields by
            name (``variant``, ``handicap``, ``discard_rule``, ``first_player``), each defaulting
            as there.

    An illegal action raises :class:`kahuna_env.engine.IllegalActionError`;
    the game is left unchanged.  The engine is :attr:`game`.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "kahuna_v0",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        *,
        reward: str = "win_loss",
        render_mode: str | None = None,
        render_viewer: int | None = None,
        observation: str = "dict",
        closing_step: bool = False,
        max_cycles: int | None = None,
        **rule_options: Any,
    ) -> None:
        EzPickle.__init__(
            self,
            reward=reward,
            render_mode=render_mode,
            render_viewer=render_viewer,
            observation=observation,
            closing_step=closing_step,
            max_cycles=max_cycles,
            **rule_options,
        )
        super().__init__()
        where = "kahuna_env.env()"
        self.config = make_config(rule_options, where)
        self.reward_mode = check_reward_mode(reward, where)
        viewer = check_render_options(render_mode, render_viewer, where)
        _check_options(observation, closing_step, max_cycles, where)
        self.render_mode = render_mode
        self.render_viewer = viewer
        """Whose view :meth:`render` shows: ``None`` (the spectator's, everything), or player 0 or 1."""
        self.max_cycles: int | None = None if max_cycles is None else int(max_cycles)
        """Actions after which an unfinished game is truncated (``None``: no limit)."""
        self.num_steps = 0
        """Actions applied in the current game (what :attr:`max_cycles` counts)."""
        self.observation_mode = observation
        """``"dict"`` or ``"flat"`` (the ``observation`` keyword)."""
        self.closing_step = closing_step
        """Whether the player who did not end the game gets a closing step (the ``closing_step`` keyword)."""
        self.closing_agent: str | None = None
        """The agent whose closing step is pending (``closing_step=True``, game over), else ``None``."""
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        self.action_spaces = {agent: ActionSpace(NUM_ACTIONS) for agent in AGENTS}
        self.observation_spaces = {agent: observation_space(observation) for agent in AGENTS}
        self.state_space = spaces.Box(low=0.0, high=1.0, shape=(STATE_SIZE,), dtype=np.float32)
        """Space of :meth:`state`: the full state for centralized critics (``STATE_LAYOUT``)."""
        self.game: KahunaGame | None = None
        """The rules engine of the current game (``None`` before the first reset)."""
        self.last_action: int | None = None
        """The last action applied (``None`` at the start of a game); shown by the renderers."""
        self._np_random: np.random.Generator | None = None
        self._renderer = EnvRenderer(render_mode, self.metadata["render_fps"], viewer)

    # ------------------------------------------------------------------ spaces
    def observation_space(self, agent: str) -> spaces.Space:
        """The observation space of ``agent`` (the same object on every call)."""
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        """The action space of ``agent``: ``Discrete(179)`` (the same object on every call)."""
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The generator that seeds each game's deal and reshuffles (seeded by ``reset(seed=...)``)."""
        if self._np_random is None:
            self._np_random, _ = seeding.np_random(None)
        return self._np_random

    # ------------------------------------------------------------------ AEC API
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a new game; ``seed`` makes it reproducible, ``options={"position": d}`` starts from a position."""
        if seed is not None:
            self._np_random, _ = seeding.np_random(seed)
        self.game = start_game(self.config, int(self.np_random.integers(2**63)), options)
        self.agents = list(AGENTS)
        self.rewards = {agent: 0.0 for agent in AGENTS}
        self._cumulative_rewards = {agent: 0.0 for agent in AGENTS}
        self.terminations = {agent: False for agent in AGENTS}
        self.truncations = {agent: False for agent in AGENTS}
        self.infos = {agent: {} for agent in AGENTS}
        self.agent_selection = AGENTS[self.game.current_player]
        self.last_action = None
        self.closing_agent = None
        self.num_steps = 0
        if self.observation_mode == "flat":
            self._set_info_masks()
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray] | np.ndarray:
        """``agent``'s observation and mask (all zeros when ``agent`` is not to act); the vector alone if flat."""
        game = self.game
        if game is None:
            raise RuntimeError("observe(): call reset() first")
        player = AGENT_INDEX[agent]
        if self.observation_mode == "flat":
            return encode_observation(game, player)
        return {"observation": encode_observation(game, player), "action_mask": self.action_mask(agent)}

    def action_mask(self, agent: str) -> np.ndarray:
        """``agent``'s action mask (int8, 179): its legal actions when it is to act, else all zeros.

        Once the game is over or truncated both masks are all zeros, except that on a closing
        step (``closing_step=True``) the closing agent's mask allows :data:`CLOSING_ACTION` alone.
        """
        game = self.game
        if game is None:
            raise RuntimeError("action_mask(): call reset() first")
        mask = bytearray(NUM_ACTIONS)
        # An agent that took its final step(None) is no longer in the dicts: done, all zeros.
        if game.is_over or self.truncations.get(agent, True) or self.terminations.get(agent, True):
            if agent == self.closing_agent:
                mask[CLOSING_ACTION] = 1
        elif AGENT_INDEX[agent] == game.current_player:
            for action in game.legal_actions():
                mask[action] = 1
        return np.frombuffer(mask, dtype=np.int8)

    def _set_info_masks(self) -> None:
        """Flat observations: put each agent's action mask in ``infos[agent]["action_mask"]``."""
        for agent in self.agents:
            self.infos[agent]["action_mask"] = self.action_mask(agent)

    def step(self, action: int | None) -> None:
        """Apply the selected agent's action (``None`` for an agent that is done).

        Raises :class:`kahuna_env.engine.IllegalActionError` for an illegal action.
        """
        if self.game is None:
            raise RuntimeError("step(): call reset() before the first step")
        if not self.agents:
            raise RuntimeError("step(): the game is over and both agents are done; call reset() to start a new game")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        game = self.game
        if agent == self.closing_agent:
            self._close(game)
            return
        # Rewards stay zero until the end, so nothing else needs updating on an ordinary step.
        game.step(action)
        self.last_action = action
        self.num_steps += 1
        if game.is_over:
            if self.closing_step:
                self._finish_mover(game)
            else:
                self._finish(game)
        else:
            self.agent_selection = AGENTS[game.current_player]
            if self.max_cycles is not None and self.num_steps >= self.max_cycles:
                self.truncations = {agent: True for agent in self.agents}
        if self.observation_mode == "flat":
            self._set_info_masks()
        if self.render_mode == "human":
            self.render()

    def forfeit(self, agent: str, reward: float) -> None:
        """End the game on ``agent``'s illegal action (what :class:`TerminateIllegalWrapper` asks): ``reward``
        for ``agent``, 0 for the other, every agent terminated and truncated, PettingZoo's warning line.

        The sequence of PettingZoo's ``TerminateIllegalWrapper``, written with this env's own ``AECEnv``
        helpers; the engine's game is left as it was before the action.
        """
        EnvLogger.warn_on_illegal_move()
        self._cumulative_rewards[agent] = 0
        self.terminations = dict.fromkeys(self.agents, True)
        self.truncations = dict.fromkeys(self.agents, True)
        self.rewards = dict.fromkeys(self.truncations, 0)
        self.rewards[agent] = reward
        self._accumulate_rewards()
        self._deads_step_first()

    def dead_step(self, action: None) -> None:
        """The step of an agent that is done (``AECEnv``'s ``_was_dead_step``): it leaves the game."""
        self._was_dead_step(action)

    def _finish(self, game: KahunaGame) -> None:
        first, second = final_rewards(game, self.reward_mode)
        self.rewards = {AGENTS[0]: first, AGENTS[1]: second}
        self._cumulative_rewards[self.agent_selection] = 0.0
        self._accumulate_rewards()
        self.terminations = {agent: True for agent in self.agents}
        self.infos = {agent: final_info(game) for agent in self.agents}
        self.agent_selection = AGENTS[game.current_player]

    def _reward_selected_alone(self, game: KahunaGame) -> str:
        """This step's rewards: the selected agent's final reward, 0 for the other; returns the other agent."""
        selected = self.agent_selection
        other = AGENTS[1 - AGENT_INDEX[selected]]
        self.rewards = {selected: final_rewards(game, self.reward_mode)[AGENT_INDEX[selected]], other: 0.0}
        self._cumulative_rewards[selected] = 0.0
        self._accumulate_rewards()
        return other

    def _finish_mover(self, game: KahunaGame) -> None:
        """``closing_step=True``: the game-ending step rewards and terminates its mover; the other player closes."""
        other = self._reward_selected_alone(game)
        self.terminations = {self.agent_selection: True, other: False}
        self.infos = {agent: final_info(game) for agent in self.agents}
        self.closing_agent = other
        self.agent_selection = other

    def _close(self, game: KahunaGame) -> None:
        """The closing step (its action is ignored): the closing agent's final reward, then both agents are done."""
        other = self._reward_selected_alone(game)
        self.terminations = {agent: True for agent in self.agents}
        self.closing_agent = None
        self.agent_selection = other
        if self.observation_mode == "flat":
            self._set_info_masks()

    def state(self) -> np.ndarray:
        """The full state (both hands, pile composition) for centralized critics; see :attr:`state_space`."""
        if self.game is None:
            raise RuntimeError("state(): call reset() first")
        return encode_state(self.game)

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | np.ndarray | None:
        """Render the game as ``render_mode`` says (text, an RGB array, or a window), from ``render_viewer``'s side."""
        return self._renderer.render(self.game, self.last_action)

    def close(self) -> None:
        """Close the window of ``render_mode="human"`` if one is open."""
        self._renderer.close()

    def __str__(self) -> str:
        return self.metadata["name"]

    # ------------------------------------------------------------------ copies
    # EzPickle (kept for ``isinstance`` and its constructor arguments) would rebuild a fresh,
    # never-reset env from the keywords; a copy (``copy.deepcopy``, ``pickle``) keeps the game
    # instead: the engine, the generator of later deals and reshuffles, and every AEC attribute.
    def __getstate__(self) -> dict[str, Any]:
        """The whole env (a ``human`` window stays behind: :class:`~kahuna_env.render.EnvRenderer`)."""
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore the env :meth:`__getstate__` saved: the copy steps on as the original would."""
        self.__dict__.update(state)
