"""Kahuna in OpenSpiel: ``pyspiel.load_game("python_kahuna")``, registered when this module is imported.

Needs the ``openspiel`` extra (``pip install "kahuna-rl[openspiel]"``); nothing else in
``kahuna_env`` imports this module, so the environment alone pulls neither OpenSpiel nor torch.
The rules are the engine's (:class:`~kahuna_env.engine.KahunaGame`, docs/RULES.md): every state
holds one engine game and steps it; this module only turns the cards that leave the pile into
chance nodes and writes what each player has seen.

====================  ==========================================================================
Import                ``import kahuna_env.openspiel`` (registers the game), then
                      ``pyspiel.load_game("python_kahuna", {"variant": "planning"})``
Parameters            ``variant``, ``handicap`` (``""`` or ``"PLAYER:BRIDGES"``, e.g. ``"1:2"``),
                      ``discard_rule``, ``first_player`` (the rule options of
                      :class:`~kahuna_env.config.KahunaConfig`), ``position`` (``""``, or a JSON
                      position of docs/RULES.md, "Positions", to start from)
Type                  two players, sequential, imperfect information, explicit chance,
                      zero-sum, terminal rewards
Actions               the 179 actions of :mod:`kahuna_env.actions`; ``action_to_string`` is
                      :func:`~kahuna_env.actions.describe_action`
Chance outcomes       an island id 0..11: the island of the card that leaves the pile
Returns               +1 / -1 / 0 at the end (the env's ``reward="win_loss"``)
Observation tensor    the env's observation (:func:`~kahuna_env.observation.encode_observation`,
                      246 floats, one named piece per block of ``OBSERVATION_LAYOUT``)
Information state     perfect recall: the start, then every event the player saw, in order
====================  ==========================================================================

**Chance.**  Every card that leaves the pile is a chance node whose outcomes are the islands of
the cards in the pile, each with probability (its cards in the pile) / (cards in the pile):

* the deal: 9 chance nodes, player 0's three cards, player 1's three, face-up slots 0, 1, 2 (the
  engine's order; the other 15 cards are the pile);
* ``DRAW``: the player's action, then a chance node for the card drawn;
* ``TAKE`` of slot k while the pile has cards: the action, then a chance node for the card that
  refills slot k;
* an interim scoring's reshuffle: a chance node for each face-up slot dealt from the new pile.

The pile is therefore a multiset: its order is nobody's information, and the engine's pile is
arranged (:meth:`KahunaGame.put_on_top <kahuna_env.engine.KahunaGame.put_on_top>`) so that the
chosen card is the one the engine's own step takes; the deal and the reshuffle's face-up cards are
written into a position (:meth:`KahunaGame.from_dict <kahuna_env.engine.KahunaGame.from_dict>`).
No rule is restated here: the legal actions, every transition, the scoring and the winner are
the engine's.  For any sequence of chance outcomes and actions the legal actions, observations
and returns are those of a ``KahunaGame`` dealt the same cards (``tests/test_openspiel.py``).

**Information state.**  Player p's information state is ``player p``, its *start*, then every
event since, as p saw it: each action (an opponent's face-down discard without its island), each
card p received (the opponent's as "a card"), each face-up card.  The start is "new game" for a
game from the deal, or p's observation of the position a state was built from
(:meth:`KahunaOpenSpielGame.state_from_game`, the ``position`` parameter).  The tensor holds the
start's observation, the current observation, and one entry per event (its code, see
:data:`EVENT_CODES`, plus one, over ``EVENT_CODES``; 0 where there is no event yet).

**Resampling** (:meth:`KahunaState.resample_from_infostate`, what IS-MCTS asks for) is the
engine's determinization (:meth:`KahunaGame.determinize <kahuna_env.engine.KahunaGame.determinize>`):
everything the player cannot see is dealt again.  The player's information state is unchanged;
the opponent's hidden past is not resampled, so in the resampled state the opponent's
information state starts at that moment (its observation there, then the events after).

:class:`ISMCTSAgent` plays OpenSpiel's IS-MCTS bot as an agent of the project
(``kahuna-eval py:kahuna_env.openspiel:ISMCTSAgent mcts``).  docs/ECOSYSTEM.md ("OpenSpiel") has
the commands.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from kahuna_env.actions import DISCARD, DRAW, NUM_ACTIONS, PASS, TAKE, describe_action
from kahuna_env.agents.base import Agent
from kahuna_env.board import CARDS_PER_ISLAND, FACE_UP_SLOTS, HAND_LIMIT, ISLANDS, NUM_CARDS, NUM_ISLANDS, STARTING_HAND
from kahuna_env.config import RULE_OPTIONS, KahunaConfig
from kahuna_env.engine import KahunaGame
from kahuna_env.env import final_rewards
from kahuna_env.observation import OBSERVATION_LAYOUT, OBSERVATION_SCALE, OBSERVATION_SIZE, encode_observation
from kahuna_env.render import render_ansi
from kahuna_env.schema import FINAL_TURNS, INTERIM_POINTS, MAX_SETUP_BRIDGES

__all__ = [
    "EVENT_CODES",
    "GAME_INFO",
    "GAME_NAME",
    "GAME_TYPE",
    "MAX_CHANCE_NODES",
    "MAX_DECISIONS",
    "MAX_EVENTS",
    "MAX_POSITION_PARAMETER",
    "PARAMETERS",
    "ISMCTSAgent",
    "KahunaObserver",
    "KahunaOpenSpielGame",
    "KahunaState",
    "config_from_parameters",
    "ismcts_bot",
    "load_game",
    "parameters_of",
    "position_parameter",
]

GAME_NAME = "python_kahuna"
"""The name the game is registered under (OpenSpiel's Python games are named ``python_*``)."""

# ------------------------------------------------------------------------------------------ parameters
_DEFAULT_CONFIG = KahunaConfig()


def _handicap_text(handicap: tuple[int, int] | None) -> str:
    return "" if handicap is None else f"{handicap[0]}:{handicap[1]}"


PARAMETERS: dict[str, Any] = {
    **{
        name: _handicap_text(_DEFAULT_CONFIG.handicap) if name == "handicap" else getattr(_DEFAULT_CONFIG, name)
        for name in RULE_OPTIONS
    },
    "position": "",
}
"""The game's parameters and their defaults: every rule option of :class:`KahunaConfig` (the handicap as
``""`` or ``"PLAYER:BRIDGES"``: OpenSpiel parameters are scalars) and ``position`` (``""``: a new deal)."""


def config_from_parameters(parameters: Mapping[str, Any]) -> KahunaConfig:
    """The rule options of the game's parameters (missing ones at their defaults); ``ValueError`` (one line)
    for a bad value, naming it."""
    options = {name: parameters.get(name, PARAMETERS[name]) for name in RULE_OPTIONS}
    handicap = options["handicap"]
    if not isinstance(handicap, str):
        raise ValueError(f"python_kahuna parameter handicap must be a string '' or 'PLAYER:BRIDGES', got {handicap!r}")
    if handicap:
        player, _, bridges = handicap.partition(":")
        if not (player.isdigit() and bridges.isdigit()):
            raise ValueError(
                f"python_kahuna parameter handicap must be '' or 'PLAYER:BRIDGES' (e.g. '1:2'), got {handicap!r}"
            )
        options["handicap"] = (int(player), int(bridges))
    else:
        options["handicap"] = None
    try:
        return KahunaConfig(**options)
    except ValueError as error:
        raise ValueError(f"python_kahuna parameters: {error}") from None


def parameters_of(config: KahunaConfig | None = None) -> dict[str, Any]:
    """The game parameters that load ``config``'s rules (``None``: the defaults): ``load_game(GAME_NAME, ...)``."""
    config = config or _DEFAULT_CONFIG
    return {
        name: _handicap_text(config.handicap) if name == "handicap" else getattr(config, name) for name in RULE_OPTIONS
    }


# ------------------------------------------------------------------------------------------ sizes
_DEAL_CARDS = 2 * STARTING_HAND + FACE_UP_SLOTS
_ROUNDS = len(INTERIM_POINTS) + 1
MAX_CHANCE_NODES = _ROUNDS * NUM_CARDS
"""The most chance nodes of a game: each round, at most every card of the game leaves the deck it is dealt
from (round 1: the deal and the pile; later rounds: the reshuffle's face-up cards and the pile)."""
MAX_DECISIONS = MAX_SETUP_BRIDGES + (HAND_LIMIT + 1) * (_ROUNDS * 2 * NUM_CARDS + FINAL_TURNS)
"""The most actions of the players in a game (OpenSpiel's ``max_game_length``), from the rules:

* a turn has at most ``HAND_LIMIT + 1`` actions: every play or discard spends a card of a hand of at
  most 5 (a free claim follows a removal, which spends two) and one action ends the turn;
* a round has at most twice as many turns as cards to draw at its start (at most all 24; 18 after
  the deal): a turn ends by drawing or taking a card or by passing, after a pass the next turn must
  draw while a card is drawable, and the round ends when none is left;
* the handicap's free bridges and the two final turns come on top.

A game from the deal is about 135 actions long; the bound holds for a game from any position too.
"""
assert MAX_DECISIONS == 879 and MAX_CHANCE_NODES == 72

# ------------------------------------------------------------------------------------------ events
_ACTION_CODES = NUM_ACTIONS + 1
"""Codes per player for an action: the 179 actions, and a face-down discard whose island is hidden."""
_HIDDEN_DISCARD = NUM_ACTIONS
_CARD_BASE = 2 * _ACTION_CODES
_CARD_CODES = NUM_ISLANDS + 1
"""Codes per player for a card received: each island, and a card whose island is hidden."""
_HIDDEN_CARD = NUM_ISLANDS
_FACE_UP_BASE = _CARD_BASE + 2 * _CARD_CODES
EVENT_CODES = _FACE_UP_BASE + FACE_UP_SLOTS * NUM_ISLANDS
"""The number of event codes of an information state: ``player * 180 + action`` (180: a face-down discard
seen by the opponent), ``360 + player * 13 + island`` (a card the player receives; 12: seen by the
opponent), ``386 + slot * 12 + island`` (a card put face up)."""
MAX_EVENTS = MAX_DECISIONS + MAX_CHANCE_NODES
"""The most events of a game: the length of the information-state tensor's history."""


def _action_code(player: int, action: int) -> int:
    return player * _ACTION_CODES + action


def _card_code(player: int, island: int) -> int:
    return _CARD_BASE + player * _CARD_CODES + island


def _face_up_code(slot: int, island: int) -> int:
    return _FACE_UP_BASE + slot * NUM_ISLANDS + island


def _event_text(code: int) -> str:
    if code < _CARD_BASE:
        player, action = divmod(code, _ACTION_CODES)
        seen = "discard a card face down" if action == _HIDDEN_DISCARD else describe_action(action)
        return f"player {player}: {seen}"
    if code < _FACE_UP_BASE:
        player, island = divmod(code - _CARD_BASE, _CARD_CODES)
        return f"player {player} receives {'a card' if island == _HIDDEN_CARD else ISLANDS[island]}"
    slot, island = divmod(code - _FACE_UP_BASE, NUM_ISLANDS)
    return f"face-up slot {slot}: {ISLANDS[island]}"


_EVENT_TEXT = tuple(_event_text(code) for code in range(EVENT_CODES))


class _Events(list):
    """A state's events, each ``(owner, the owner's code, everyone else's code)`` (owner -1: a public event,
    both codes the same); the events are tuples, never changed, so a copy of the list need not copy them."""

    def __deepcopy__(self, memo: dict[int, Any]) -> _Events:
        return _Events(self)


Anchor = tuple[str, bytes, int]
"""What a player's information state starts from: its text, its observation (float32 bytes; empty for a
new game, all zeros) and the index of the first event after it."""
_NEW_GAME: Anchor = ("start: new game", b"", 0)

# Pending chance nodes: (kind, player or slot).
_DEAL_HAND, _DEAL_FACE_UP, _DRAW, _REFILL, _RESHUFFLE = range(5)
_DEAL: tuple[tuple[int, int], ...] = (
    *((_DEAL_HAND, player) for player in (0, 1) for _ in range(STARTING_HAND)),
    *((_DEAL_FACE_UP, slot) for slot in range(FACE_UP_SLOTS)),
)
assert len(_DEAL) == _DEAL_CARDS


def _observation_text(observation: np.ndarray) -> str:
    """The observation block by block, as the counts it scales (``hand: 0 1 0 ...``)."""
    raw = np.rint(observation / OBSERVATION_SCALE).astype(np.int64)
    return "\n".join(f"{name}: {' '.join(map(str, raw[part].tolist()))}" for name, part in OBSERVATION_LAYOUT.items())


def _anchor(game: KahunaGame, player: int, start: int) -> Anchor:
    observation = encode_observation(game, player)
    return f"start: position\n{_observation_text(observation)}", observation.tobytes(), start


def _anchors(game: KahunaGame, start: int) -> tuple[Anchor, Anchor]:
    """Both players' views of ``game``, the start of their information states at event ``start``."""
    return _anchor(game, 0, start), _anchor(game, 1, start)


# ------------------------------------------------------------------------------------------ the game
GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Kahuna (kahuna_env)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=2,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=PARAMETERS,
)
"""The game's type: two players, sequential, imperfect information, explicit chance, zero-sum, terminal rewards."""
GAME_INFO = pyspiel.GameInfo(
    num_distinct_actions=NUM_ACTIONS,
    max_chance_outcomes=NUM_ISLANDS,
    num_players=2,
    min_utility=-1.0,
    max_utility=1.0,
    utility_sum=0.0,
    max_game_length=MAX_DECISIONS,
)
"""The game's sizes: 179 actions, 12 chance outcomes (islands), returns in [-1, 1], at most
:data:`MAX_DECISIONS` actions of the players."""


class KahunaOpenSpielGame(pyspiel.Game):
    """``python_kahuna``: Kahuna with the rule options of its parameters (:data:`PARAMETERS`).

    ``config`` is the game's :class:`KahunaConfig`; with a ``position`` parameter every initial
    state starts from that position (its pile a multiset: the order of its cards is chance's).
    A bad parameter is a one-line ``ValueError`` naming it.
    """

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        params = {**PARAMETERS, **dict(params or {})}
        self.config = config_from_parameters(params)
        self.start = _start_position(params["position"], self.config)
        """The engine game every initial state starts from (``None``: the deal)."""
        self.start_anchors = None if self.start is None else _anchors(self.start, 0)
        """Each player's view of :attr:`start` (computed once: OpenSpiel makes an initial state per clone)."""
        # A deal is written into a position of this game's first turn (the current player, a handicap setup).
        template = KahunaGame(self.config, seed=0).to_dict()
        self.deal_template = {key: value for key, value in template.items() if key not in ("hands", "face_up", "pile")}
        super().__init__(GAME_TYPE, GAME_INFO, params)

    def new_initial_state(self) -> KahunaState:
        """The state before the deal (its 9 chance nodes), or at the game's ``position``."""
        return KahunaState(self)

    def state_from_game(self, game: KahunaGame) -> KahunaState:
        """A state that starts from ``game``'s position: both hands, the face-up cards, the discards as they are,
        the pile's cards (their order is chance's); each player's information state starts with their
        observation of it.  ``game``'s rules must be this game's (``ValueError`` otherwise)."""
        if not isinstance(game, KahunaGame):
            raise ValueError(f"state_from_game needs a KahunaGame, got {type(game).__name__}")
        if game.config != self.config:
            raise ValueError(f"state_from_game: the game's rules {game.config} are not this game's {self.config}")
        state = KahunaState(self)
        state.start_from(game.clone(), _anchors(game, 0))
        return state

    def make_py_observer(
        self, iig_obs_type: pyspiel.IIGObservationType | None = None, params: Mapping[str, Any] | None = None
    ) -> KahunaObserver:
        """The observer of the information state (``perfect_recall``) or of the observation (the default)."""
        return KahunaObserver(iig_obs_type, params)

    def max_chance_nodes_in_history(self) -> int:
        """:data:`MAX_CHANCE_NODES`."""
        return MAX_CHANCE_NODES


MAX_POSITION_PARAMETER = 16_384
"""The longest ``position`` parameter read (a position's JSON is under 2 kB; its base64, a third more)."""


def position_parameter(position: Mapping[str, Any]) -> str:
    """The ``position`` parameter of a position dict (docs/RULES.md, "Positions"): its JSON in URL-safe base64.

    Base64, because an OpenSpiel game string (``python_kahuna(position=...,variant=...)``, what
    serialization writes) splits its parameters at commas, and a JSON object has them.
    """
    text = base64.urlsafe_b64encode(json.dumps(position, separators=(",", ":")).encode("utf-8")).decode("ascii")
    return text.rstrip("=")  # the padding, "=", would end the parameter's name in a game string


def _start_position(text: object, config: KahunaConfig) -> KahunaGame | None:
    """The engine game of the ``position`` parameter (:func:`position_parameter`), or ``None`` for ``""``."""
    if not isinstance(text, str):
        raise ValueError(f"python_kahuna parameter position must be a string, got {type(text).__name__}")
    if not text:
        return None
    if len(text) > MAX_POSITION_PARAMETER:
        raise ValueError(
            f"python_kahuna parameter position is {len(text):,} characters, at most {MAX_POSITION_PARAMETER:,}"
        )
    try:
        padded = text + "=" * (-len(text) % 4)
        position = json.loads(base64.b64decode(padded, altchars=b"-_", validate=True).decode("utf-8"))
    except (ValueError, UnicodeError):
        raise ValueError(
            "python_kahuna parameter position is not a position written by position_parameter "
            "(the JSON of a position in URL-safe base64)"
        ) from None
    if not isinstance(position, dict):
        raise ValueError(f"python_kahuna parameter position must be a JSON object, got {type(position).__name__}")
    try:
        game = KahunaGame.from_dict({"config": config.to_dict(), **position}, seed=0)
    except ValueError as error:
        raise ValueError(f"python_kahuna parameter position: {error}") from None
    if game.config != config:
        raise ValueError(
            "python_kahuna parameter position: its 'config' differs from the game's rule parameters; "
            "give the rules once (drop the position's 'config', or make them equal)"
        )
    return game


class KahunaState(pyspiel.State):
    """A state of ``python_kahuna``: one engine game (after the deal), the events so far, the chance nodes due.

    Made by :meth:`KahunaOpenSpielGame.new_initial_state` or :meth:`KahunaOpenSpielGame.state_from_game`.
    """

    def __init__(self, game: KahunaOpenSpielGame) -> None:
        super().__init__(game)
        self._kahuna: KahunaGame | None = None
        self._events: _Events = _Events()
        self._anchors: tuple[Anchor, Anchor] = (_NEW_GAME, _NEW_GAME)
        self._chance: tuple[tuple[int, int], ...] = _DEAL
        self._dealt: tuple[int, ...] = ()
        if game.start is not None:
            self.start_from(game.start.clone(), game.start_anchors)

    def start_from(self, game: KahunaGame, anchors: tuple[Anchor, Anchor]) -> None:
        """Make this state start from ``game``, each player's view of it ``anchors`` (:meth:`KahunaOpenSpielGame.
        state_from_game`)."""
        self._kahuna = game
        self._chance = ()
        self._anchors = anchors

    # ------------------------------------------------------------------ OpenSpiel's API
    def current_player(self) -> int:
        """The player to act, ``CHANCE`` while a card is due, ``TERMINAL`` once the game is over."""
        if self._chance:
            return pyspiel.PlayerId.CHANCE
        if self._kahuna.is_over:
            return pyspiel.PlayerId.TERMINAL
        return self._kahuna.current_player

    def is_terminal(self) -> bool:
        """Whether the game is over."""
        return not self._chance and self._kahuna.is_over

    def _legal_actions(self, player: int) -> list[int]:
        return self._kahuna.legal_actions()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """The islands of the cards the next card may be, each with its share of those cards."""
        counts = self._deck_counts()
        total = sum(counts)
        return [(island, count / total) for island, count in enumerate(counts) if count]

    def _deck_counts(self) -> list[int]:
        """The cards the pending chance node deals from, a count per island."""
        if self._kahuna is None:
            counts = [CARDS_PER_ISLAND] * NUM_ISLANDS
            for island in self._dealt:
                counts[island] -= 1
            return counts
        return self._kahuna.pile_counts()

    def _apply_action(self, action: int) -> None:
        if self._chance:
            self._apply_card(action)
            return
        game = self._kahuna
        if not game.is_legal(action):
            game.clone().step(action)  # raises the engine's IllegalActionError, which says why
        player = game.current_player
        if DISCARD <= action < DRAW:  # face down: the opponent sees that a card went, not which
            self._events.append((player, _action_code(player, action), _action_code(player, _HIDDEN_DISCARD)))
        else:
            self._events.append((-1, _action_code(player, action), _action_code(player, action)))
        if action == DRAW:
            self._chance = ((_DRAW, player),)
        elif TAKE <= action < PASS and game.pile_size:
            self._chance = ((_REFILL, action - TAKE),)
        else:
            self._step(action)

    def _apply_card(self, island: int) -> None:
        if not (isinstance(island, int) and 0 <= island < NUM_ISLANDS) or not self._deck_counts()[island]:
            raise ValueError(f"chance outcome {island!r} is not the island of a card that can come now")
        (kind, where), self._chance = self._chance[0], self._chance[1:]
        if kind in (_DEAL_HAND, _DRAW):
            self._events.append((where, _card_code(where, island), _card_code(where, _HIDDEN_CARD)))
        else:
            code = _face_up_code(where, island)
            self._events.append((-1, code, code))
        if kind in (_DRAW, _REFILL):
            self._kahuna.put_on_top(island)
            self._step(DRAW if kind == _DRAW else TAKE + where)
        elif kind == _RESHUFFLE:
            position = self._kahuna.to_dict()
            position["face_up"][where] = ISLANDS[island]
            position["pile"].remove(ISLANDS[island])
            self._kahuna = KahunaGame.from_dict(position, seed=0)
        else:
            self._dealt += (island,)
            if not self._chance:
                self._kahuna = self._dealt_game()

    def _dealt_game(self) -> KahunaGame:
        """The engine game of the finished deal: the dealt cards, the rest in the pile."""
        hands = [self._dealt[:STARTING_HAND], self._dealt[STARTING_HAND : 2 * STARTING_HAND]]
        face_up = self._dealt[2 * STARTING_HAND :]
        counts = self._deck_counts()
        pile = [ISLANDS[island] for island in range(NUM_ISLANDS) for _ in range(counts[island])]
        position = {
            **self.get_game().deal_template,
            "hands": [[ISLANDS[island] for island in hand] for hand in hands],
            "face_up": [ISLANDS[island] for island in face_up],
            "pile": pile,
        }
        return KahunaGame.from_dict(position, seed=0)

    def _step(self, action: int) -> None:
        """The engine's step; after an interim scoring, its new face-up row becomes chance nodes."""
        game = self._kahuna
        round_before = game.round
        game.step(action)
        if game.round > round_before and not game.is_over:
            # The engine shuffled the discards and dealt the face-up row; put it back into the pile
            # (cards nobody has seen yet) and let chance deal it, slot by slot.
            position = game.to_dict()
            cards = [card for card in position["face_up"] if card is not None] + position["pile"]
            position["face_up"] = [None] * FACE_UP_SLOTS
            position["pile"] = sorted(cards)
            self._kahuna = KahunaGame.from_dict(position, seed=0)
            self._chance = tuple((_RESHUFFLE, slot) for slot in range(min(FACE_UP_SLOTS, len(cards))))

    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if not 0 <= action < NUM_ISLANDS:
                raise ValueError(f"chance outcome must be an island id 0..{NUM_ISLANDS - 1}, got {action}")
            return f"card {ISLANDS[action]}"
        return describe_action(action)

    def returns(self) -> list[float]:
        """+1 / -1 / 0 for the winner, the loser, a draw (``win_loss``); zeros before the end."""
        if not self.is_terminal():
            return [0.0, 0.0]
        return list(final_rewards(self._kahuna, "win_loss"))

    def rewards(self) -> list[float]:
        """The returns, given once at the end (terminal rewards)."""
        return self.returns()

    def resample_from_infostate(self, player_id: int, probability_sampler: Callable[[], float]) -> KahunaState:
        """A state ``player_id`` cannot tell from this one, its hidden cards dealt again (:meth:`resample`);
        ``probability_sampler`` (a uniform [0, 1) draw, OpenSpiel's) seeds the sample."""
        seed = int(probability_sampler() * 2**53)
        return self.resample(player_id, np.random.default_rng(seed))

    def resample(self, player: int, rng: np.random.Generator) -> KahunaState:
        """A copy in which everything ``player`` cannot see is dealt again with ``rng``
        (:meth:`KahunaGame.determinize <kahuna_env.engine.KahunaGame.determinize>`).

        ``player``'s information state is unchanged; the opponent's starts here (its observation of the
        resampled position): its hidden past is not resampled.  ``ValueError`` before the deal is done.
        """
        if player not in (0, 1):
            raise ValueError(f"player must be 0 or 1, got {player!r}")
        if self._kahuna is None:
            raise ValueError("resample: the deal is not finished (a state before it has no cards to resample)")
        other = self.clone()
        other._kahuna = self._kahuna.determinize(player, rng)
        anchors = list(self._anchors)
        anchors[1 - player] = _anchor(other._kahuna, 1 - player, len(self._events))
        other._anchors = (anchors[0], anchors[1])
        return other

    def kahuna_game(self) -> KahunaGame | None:
        """A copy of the engine game (``None`` before the deal is done): the whole position, hidden cards included."""
        return None if self._kahuna is None else self._kahuna.clone()

    def __str__(self) -> str:
        if self._kahuna is None:
            return (
                f"dealing: {len(self._dealt)} of {_DEAL_CARDS} cards dealt: {' '.join(ISLANDS[i] for i in self._dealt)}"
            )
        pile = " ".join(ISLANDS[i] for i, count in enumerate(self._kahuna.pile_counts()) for _ in range(count))
        due = ", ".join(_CHANCE_NAMES[kind].format(where) for kind, where in self._chance)
        return f"{render_ansi(self._kahuna)}\npile: {pile or '-'}" + (f"\nchance: {due}" if due else "")

    # ------------------------------------------------------------------ what a player has seen
    def seen(self, player: int) -> tuple[Anchor, list[int]]:
        """``player``'s start and the codes of the events since, as ``player`` saw them."""
        anchor = self._anchors[player]
        codes = [own if owner == player else other for owner, own, other in self._events[anchor[2] :]]
        return anchor, codes

    def observation(self, player: int) -> np.ndarray:
        """``player``'s observation (:func:`~kahuna_env.observation.encode_observation`); zeros before the deal ends."""
        if self._kahuna is None:
            return np.zeros(OBSERVATION_SIZE, dtype=np.float32)
        return encode_observation(self._kahuna, player)


_CHANCE_NAMES = {
    _DEAL_HAND: "a card for player {}",
    _DEAL_FACE_UP: "face-up slot {}",
    _DRAW: "the card player {} draws",
    _REFILL: "the card that refills face-up slot {}",
    _RESHUFFLE: "face-up slot {} of the reshuffled pile",
}


class KahunaObserver:
    """OpenSpiel's observer protocol (``tensor``, ``dict``, ``set_from``, ``string_from``) for ``python_kahuna``.

    With ``iig_obs_type.perfect_recall`` the information state (module docstring); otherwise the
    observation.  Only the player's own view is offered (public and the player's private
    information): any other observation type is a one-line ``ValueError``.
    """

    def __init__(self, iig_obs_type: pyspiel.IIGObservationType | None, params: Mapping[str, Any] | None) -> None:
        if params:
            raise ValueError(f"python_kahuna observers take no parameters, got {dict(params)}")
        if iig_obs_type is not None and (
            not iig_obs_type.public_info or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER
        ):
            raise ValueError(
                "python_kahuna observes a player's own view only (public_info=True, "
                f"private_info=SINGLE_PLAYER), got {iig_obs_type}"
            )
        self.perfect_recall = bool(iig_obs_type is not None and iig_obs_type.perfect_recall)
        blocks = [(name, part.stop - part.start) for name, part in OBSERVATION_LAYOUT.items()]
        pieces = (
            [("start", OBSERVATION_SIZE), ("now", OBSERVATION_SIZE), ("history", MAX_EVENTS)]
            if self.perfect_recall
            else blocks
        )
        self.tensor = np.zeros(sum(size for _, size in pieces), dtype=np.float32)
        self.dict: dict[str, np.ndarray] = {}
        start = 0
        for name, size in pieces:
            self.dict[name] = self.tensor[start : start + size]
            start += size

    def set_from(self, state: KahunaState, player: int) -> None:
        """Write ``player``'s information state or observation of ``state`` into :attr:`tensor`."""
        if not self.perfect_recall:
            self.tensor[:] = state.observation(player)
            return
        anchor, codes = state.seen(player)
        self.tensor.fill(0.0)
        if anchor[1]:
            self.dict["start"][:] = np.frombuffer(anchor[1], dtype=np.float32)
        self.dict["now"][:] = state.observation(player)
        self.dict["history"][: len(codes)] = (np.asarray(codes, dtype=np.float32) + 1.0) / EVENT_CODES

    def string_from(self, state: KahunaState, player: int) -> str:
        """``player``'s information state or observation of ``state`` as text."""
        if not self.perfect_recall:
            return f"player {player}\n{_observation_text(state.observation(player))}"
        anchor, codes = state.seen(player)
        return "\n".join([f"player {player}", anchor[0], *(_EVENT_TEXT[code] for code in codes)])


if GAME_NAME not in pyspiel.registered_names():
    pyspiel.register_game(GAME_TYPE, KahunaOpenSpielGame)


def load_game(config: KahunaConfig | None = None) -> KahunaOpenSpielGame:
    """``pyspiel.load_game("python_kahuna", ...)`` with ``config``'s rules (``None``: the defaults)."""
    return pyspiel.load_game(GAME_NAME, parameters_of(config))


# ------------------------------------------------------------------------------------------ IS-MCTS
def ismcts_bot(
    game: KahunaOpenSpielGame,
    simulations: int = 200,
    rollouts: int = 1,
    uct_c: float = 2.0,
    seed: int | None = None,
) -> ismcts.ISMCTSBot:
    """OpenSpiel's IS-MCTS bot (``open_spiel.python.algorithms.ismcts``) on ``game``, random rollouts at the leaves.

    Every generator it uses comes from ``seed``: the bot's and the rollouts' ``RandomState`` and the
    generator of its world samples (its resampler: :meth:`KahunaState.resample`; OpenSpiel's
    default resampler draws from an unseeded sampler).
    """
    seeds = np.random.SeedSequence(seed).generate_state(3)
    rng = np.random.default_rng(int(seeds[2]))
    bot = ismcts.ISMCTSBot(
        game=game,
        evaluator=mcts.RandomRolloutEvaluator(rollouts, np.random.RandomState(seeds[1])),
        uct_c=uct_c,
        max_simulations=simulations,
        random_state=np.random.RandomState(seeds[0]),
    )
    bot.set_resampler(lambda state, player: state.resample(player, rng))
    return bot


class ISMCTSAgent(Agent):
    """OpenSpiel's IS-MCTS bot as an agent of the project: ``kahuna-eval py:kahuna_env.openspiel:ISMCTSAgent mcts``.

    It receives the determinized game of its seat (``uses_game``), starts a ``python_kahuna`` state
    from it (:meth:`KahunaOpenSpielGame.state_from_game`: the information state of a player starting
    from that position) and plays the bot's move: ``simulations`` simulations, each in a world
    resampled from the seat's view, with ``rollouts`` random rollouts at a new node.
    """

    name = "openspiel-ismcts"
    uses_game = True
    uses_observation = False

    def __init__(self, simulations: int = 200, rollouts: int = 1, uct_c: float = 2.0, seed: int | None = None) -> None:
        if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 1:
            raise ValueError(f"ISMCTSAgent simulations must be a positive integer, got {simulations!r}")
        if isinstance(rollouts, bool) or not isinstance(rollouts, int) or rollouts < 1:
            raise ValueError(f"ISMCTSAgent rollouts must be a positive integer, got {rollouts!r}")
        self.simulations = simulations
        self.rollouts = rollouts
        self.uct_c = float(uct_c)
        self._games: dict[KahunaConfig, KahunaOpenSpielGame] = {}
        self._seeds = np.random.SeedSequence(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the searches when ``seed`` is given (as :class:`~kahuna_env.agents.base.SeededAgent`)."""
        if seed is not None:
            self._seeds = np.random.SeedSequence(seed)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its loaded games (an evaluation's worker processes load their own)."""
        return {**self.__dict__, "_games": {}}

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        """The bot's move in ``game`` (the seat's determinization)."""
        if game is None:
            raise ValueError("ISMCTSAgent needs the game (uses_game = True): call it through choose_action")
        open_game = self._games.get(game.config)
        if open_game is None:
            open_game = self._games[game.config] = load_game(game.config)
        bot = ismcts_bot(open_game, self.simulations, self.rollouts, self.uct_c, _next_seed(self._seeds))
        return int(bot.step(open_game.state_from_game(game)))


def _next_seed(seeds: np.random.SeedSequence) -> int:
    """A new seed from ``seeds`` (each call spawns a child: a search per move, all from the agent's seed)."""
    return int(seeds.spawn(1)[0].generate_state(1, np.uint64)[0])
