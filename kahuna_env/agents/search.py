"""One search: a determinized (ISMCTS) descent with two plug-ins, an evaluator and a root selector.

Both searches of the project (the ``mcts`` baseline and the network-guided
``SOURCE@mcts:N``) are this one descent; what differs is plugged in, as in
OpenSpiel's MCTS bot (an ``Evaluator``) and mctx (root selection passed in):

* an :class:`Evaluator` gives priors and leaf values:
  :class:`~kahuna_env.agents.evaluators.RolloutEvaluator` (the baseline: a
  cheap heuristic prior and a short rollout then a logistic evaluation) or
  :class:`~kahuna_env.agents.evaluators.GuidedEvaluator` (a network, or any
  :class:`~kahuna_env.agents.evaluators.LeafEvaluator`: priors and value from
  one batched call);
* a :class:`RootSelector` picks the root action of each simulation and the
  move played: :class:`~kahuna_env.agents.selectors.PUCTRoot` or
  :class:`~kahuna_env.agents.selectors.SequentialHalving`.

How one decision is searched (single-observer ISMCTS, Cowling et al. 2012):

* The search receives a determinized game (:func:`kahuna_env.agents.base.choose_action`
  never passes the real one).
* Each simulation draws a fresh determinization of it with
  :meth:`KahunaGame.determinize` (own hand, public state and the opponent's
  publicly known cards kept; the opponent's other cards, its face-down
  discards and the pile order resampled from the pooled hidden cards, which
  depends only on public information and the search's generator, so two real
  games that differ only in hidden cards give identical decisions with the
  same seed), then walks one shared tree whose edges are actions.  Because
  different determinizations allow different actions, each child counts how
  often it was *available* and the selection rule uses that count (the
  ISMCTS "availability" correction).
* Selection below the root is PUCT: ``Q + c * P * sqrt(available) / (1 + visits)``
  (:func:`select_puct`); unvisited children start at the parent's mean value
  (first-play urgency) less ``first_play_penalty``.  At the root the
  selector chooses.
* Where the walk stops and who supplies priors depends on the evaluator
  (:attr:`Evaluator.inline_priors`):

  - *inline priors* (the rollout evaluator, OpenSpiel's shape): a node the
    walk finds without a child for some legal action gets those children
    at once, with the evaluator's cheap priors for this determinization;
    the walk stops after its first untried edge, and the position reached
    is the leaf, valued without priors;
  - *priors with the value* (a network, AlphaZero's shape): the walk stops
    at the first node without a child for some legal action (in this
    determinization) -- an opponent node gains children as determinizations
    deal it other cards -- and the evaluator returns that position's priors
    and value together; the missing children are added with those priors.
    The root is evaluated once before the simulations (as it is whenever
    the selector needs the root's children from the start).

  A finished game is valued exactly (win 1, draw 0.5, loss 0), at once.
* A turn is several actions by the same player, so every edge stores its
  value from the point of view of the player who took that action; values
  are backed up per player, never by flipping signs level by level.
* Leaves are evaluated ``batch_size`` at a time with a virtual loss: each
  edge on the way to a pending leaf counts a visit of value 0 for its mover
  until the leaf's value arrives, so the next simulations of the batch spread
  out.  ``batch_size=1`` is the plain sequential search.  A selector may
  end a batch early (:meth:`RootSelector.room`: a phase of sequential
  halving must see all its values before the next phase is chosen).

**Cancellation.**  A search whose cancel flag is set (by another thread: a
server whose client left) raises :class:`SearchCancelled` before its next
simulation; the flag is only read, so a search that is not cancelled plays
exactly as without one.  The exception carries the :class:`SearchResult` of
the simulations completed so far (pending virtual losses undone): the best
move so far and the root's visit counts.

**Results.**  :meth:`Search.run` returns a :class:`SearchResult`: the root,
the move, the visit counts and mean values of the root actions, and the
selector's policy (the visit distribution for PUCT and halving; a
search-improved policy for a selector that defines one), e.g. as training
targets.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from kahuna_env.actions import NUM_ACTIONS
from kahuna_env.engine import KahunaGame

DEFAULT_SIMULATIONS = 200
"""Simulations per decision when none is given (see ``docs/EVALUATION.md`` for its strength and speed)."""
DEFAULT_EXPLORATION = 1.0
"""PUCT exploration constant ``c``."""
DEFAULT_ROLLOUT = "heuristic"
"""Rollout policy used after a new leaf: ``"heuristic"`` or ``"random"``."""
DEFAULT_ROLLOUT_DEPTH = 12
"""Actions played by the rollout policy before the leaf is evaluated (0: evaluate the leaf directly)."""
ROLLOUTS = ("heuristic", "random")
"""Known rollout policies."""
DEFAULT_FIRST_PLAY_PENALTY = 0.05
"""First-play urgency: an unvisited child counts as its parent's mean value less this much."""


# ---------------------------------------------------------------------------------------------- options
def _is_integer(value: object, low: int) -> bool:
    """Whether ``value`` is an int, not a bool, at least ``low``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _is_number(value: object, low: float, high: float, *, open_low: bool = False) -> bool:
    """Whether ``value`` is an int or float, not a bool, in ``[low, high]`` (``(low, high]`` if ``open_low``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (low < value if open_low else low <= value) and value <= high


_CHECKS: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("simulations", lambda v: _is_integer(v, 1), "a positive integer"),
    ("exploration", lambda v: _is_number(v, 0.0, math.inf, open_low=True), "a positive number"),
    ("rollout", lambda v: isinstance(v, str) and v in ROLLOUTS, f"one of {ROLLOUTS}"),
    ("rollout_depth", lambda v: _is_integer(v, 0), "a non-negative integer"),
    ("value_weight", lambda v: _is_number(v, 0.0, 1.0), "a number in [0, 1]"),
    ("batch_size", lambda v: _is_integer(v, 1), "a positive integer"),
    ("first_play_penalty", lambda v: _is_number(v, 0.0, 1.0), "a number in [0, 1]"),
    ("lcb_weight", lambda v: _is_number(v, 0.0, sys.float_info.max), "a finite number >= 0"),
    ("opponent_prior_power", lambda v: _is_number(v, 0.0, sys.float_info.max, open_low=True), "a finite number > 0"),
    ("root_candidates", lambda v: (v == 0 and _is_integer(v, 0)) or _is_integer(v, 2), "0 or an integer >= 2"),
)
"""Each option of :class:`SearchConfig`, what it must satisfy, and how its error says so."""


@dataclass(frozen=True)
class SearchConfig:
    """The options of a search, checked once on creation (one-line ``ValueError`` naming the option).

    Attributes:
        simulations: simulations (determinize, select, expand, evaluate, back up) per decision; >= 1.
        exploration: PUCT exploration constant ``c``, > 0.
        rollout: the rollout evaluator's policy: ``"heuristic"`` (actions
            sampled from the heuristic prior) or ``"random"`` (uniform).
        rollout_depth: actions the rollout plays after a leaf before the
            position is evaluated; 0 evaluates the leaf directly.
        value_weight: guided search: weight of the evaluator's value in a
            leaf's value, in [0, 1]; the rest is the rollout evaluator's
            (1: the evaluator alone, no rollout).
        batch_size: leaves evaluated together (virtual loss), >= 1.
        first_play_penalty: an unvisited child's value is its parent's mean
            value less this (first-play urgency), in [0, 1].
        lcb_weight: how a PUCT root chooses the move: 0 the most visited root
            child; ``w > 0`` the visited root child with the highest lower
            bound ``mean value - w / sqrt(visits)`` (most visits break ties).
        opponent_prior_power: guided search: the evaluator's priors at nodes
            where the searching player's opponent moves are raised to this
            power and renormalised (> 0; 1 keeps them, above 1 sharpens them).
        root_candidates: 0 selects by PUCT at the root; ``m >= 2`` runs
            sequential halving over the m root actions with the highest prior
            (:class:`~kahuna_env.agents.selectors.SequentialHalving`).
    """

    simulations: int = DEFAULT_SIMULATIONS
    exploration: float = DEFAULT_EXPLORATION
    rollout: str = DEFAULT_ROLLOUT
    rollout_depth: int = DEFAULT_ROLLOUT_DEPTH
    value_weight: float = 1.0
    batch_size: int = 1
    first_play_penalty: float = DEFAULT_FIRST_PLAY_PENALTY
    lcb_weight: float = 0.0
    opponent_prior_power: float = 1.0
    root_candidates: int = 0

    def __post_init__(self) -> None:
        for name, valid, expected in _CHECKS:
            value = getattr(self, name)
            if not valid(value):
                raise ValueError(f"mcts {name} must be {expected}, got {value!r}")
        for name in ("exploration", "value_weight", "first_play_penalty", "lcb_weight", "opponent_prior_power"):
            object.__setattr__(self, name, float(getattr(self, name)))


# ---------------------------------------------------------------------------------------------- the tree
class SearchNode:
    """A node of the search tree: statistics of the action (edge) leading here, and the children by action.

    Attributes:
        prior: prior probability of the action when the node was created.
        visits: simulations that went through the action (pending ones
            included while their leaf waits in a batch: the virtual loss).
        value: summed value of those simulations for the player who took the action.
        available: simulations in which the action was legal at the parent (ISMCTS availability).
        children: the child nodes by action id.
    """

    __slots__ = ("available", "children", "prior", "value", "visits")

    def __init__(self, prior: float) -> None:
        self.prior = prior
        self.visits = 0
        self.value = 0.0  # summed value for the player who took the action leading here
        self.available = 0
        self.children: dict[int, SearchNode] = {}


def select_puct(
    children: dict[int, SearchNode],
    legal: list[int],
    exploration: float,
    first_play_penalty: float = DEFAULT_FIRST_PLAY_PENALTY,
) -> int:
    """The PUCT choice among the children available in this determinization (counting their availability)."""
    visited = 0
    value_sum = 0.0
    for action in legal:
        child = children[action]
        child.available += 1
        visited += child.visits
        value_sum += child.value
    first_play = (value_sum / visited if visited else 0.5) - first_play_penalty
    best_action = legal[0]
    best_score = -math.inf
    for action in legal:
        child = children[action]
        n = child.visits
        q = child.value / n if n else first_play
        score = q + exploration * child.prior * math.sqrt(child.available) / (1 + n)
        if score > best_score:
            best_score, best_action = score, action
    return best_action


def outcome(game: KahunaGame) -> float:
    """Player 0's result of a finished game: win 1, draw 0.5, loss 0."""
    winner = game.winner
    return 0.5 if winner is None else (1.0 if winner == 0 else 0.0)


# ---------------------------------------------------------------------------------------------- plug-ins
class CancelFlag(Protocol):
    """What a search asks of its cancel flag (a :class:`threading.Event` is one): is the move still wanted?"""

    def is_set(self) -> bool: ...


class Evaluator(Protocol):
    """A search's source of priors and leaf values (see the module docstring).

    Attributes:
        inline_priors: whether :meth:`priors` is cheap enough to call as the
            walk passes a node missing children (the walk then stops after
            its first untried edge and :meth:`evaluate` returns no priors);
            if not, the walk stops at such a node and :meth:`evaluate`
            returns its priors with its value.
    """

    inline_priors: bool

    def priors(self, state: KahunaGame, legal: list[int]) -> list[float]:
        """Prior probabilities of the ``legal`` actions at ``state`` (non-negative, summing to 1)."""
        ...

    def evaluate(
        self, states: Sequence[KahunaGame], legal: Sequence[list[int] | None], searcher: int, rng: random.Random
    ) -> tuple[list[list[float]] | None, list[float]]:
        """Values of leaf positions that are not over, for player 0 (and their priors, without inline priors).

        ``legal`` is each state's legal actions (``None`` for a leaf reached
        by an untried edge under inline priors); ``searcher`` is the player
        whose decision is searched; ``rng`` is the search's own generator for
        any randomness (rollouts).  The states are the search's own
        determinizations: the evaluator may play them on.
        """
        ...


class RootSelector(Protocol):
    """How the root chooses the action of each simulation, and which move the search plays.

    A selector is per search: :meth:`start` resets it.  Gumbel MuZero's root
    (Danihelka et al. 2022) fits: ``start`` draws the Gumbel noise from
    ``rng``, :meth:`room` ends each halving phase, :meth:`policy` returns
    the improved policy.

    Attributes:
        needs_root_children: whether the root must be expanded (all its
            children with priors) before the first simulation.
    """

    needs_root_children: bool

    def start(self, root: SearchNode, simulations: int, rng: np.random.Generator) -> None:
        """Prepare a search of ``simulations`` simulations from ``root``."""
        ...

    def room(self, root: SearchNode, done: int) -> int | None:
        """Simulations that may start (in a batch beginning now, ``done`` already run) before the next
        :meth:`room` must see their values backed up; ``None``: no limit."""
        ...

    def select(self, root: SearchNode, legal: list[int]) -> int:
        """The root action of the next simulation, among ``legal``."""
        ...

    def finish(self, root: SearchNode) -> None:
        """The simulations are over (or the search was stopped): settle the move."""
        ...

    def best(self, root: SearchNode) -> int:
        """The move played (a root child; called after :meth:`finish`)."""
        ...

    def policy(self, root: SearchNode) -> dict[int, float]:
        """The search's policy over the root actions (summing to 1; e.g. a training target)."""
        ...


# ---------------------------------------------------------------------------------------------- results
@dataclass
class SearchResult:
    """What a search found.

    Attributes:
        root: the root of the tree.
        player: the searching player.
        move: the move the selector plays (``None`` only for a search stopped
            before its root had children).
        policy: the selector's policy over the root actions (action -> probability).
        simulations: simulations completed (backed up).
    """

    root: SearchNode
    player: int
    move: int | None
    policy: dict[int, float]
    simulations: int

    def visit_counts(self) -> dict[int, int]:
        """Completed simulations through each root action."""
        return {action: child.visits for action, child in self.root.children.items()}

    def mean_values(self) -> dict[int, float]:
        """The mean value of each visited root action for the searching player (win probability)."""
        return {action: child.value / child.visits for action, child in self.root.children.items() if child.visits}

    def policy_vector(self) -> np.ndarray:
        """:attr:`policy` as a ``(NUM_ACTIONS,)`` float32 vector indexed by action id."""
        vector = np.zeros(NUM_ACTIONS, dtype=np.float32)
        for action, probability in self.policy.items():
            vector[action] = probability
        return vector


class SearchCancelled(Exception):
    """Raised by a search whose cancel flag was set: nobody wants its move any more.

    Attributes:
        result: the :class:`SearchResult` of the simulations completed before
            the flag was seen (its best move so far and visit counts), or ``None``.
    """

    def __init__(self, message: str, result: SearchResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class _Pending:
    """The simulations of a batch waiting for their leaves' values (one list per part, in the same order).

    ``states``: the positions reached; ``legal``: their legal actions if the
    walk saw them (else ``None``); ``nodes``: the leaf nodes; ``paths``: the
    edges taken, each with the player who took it.
    """

    __slots__ = ("legal", "nodes", "paths", "states")

    def __init__(self) -> None:
        self.states: list[KahunaGame] = []
        self.legal: list[list[int] | None] = []
        self.nodes: list[SearchNode] = []
        self.paths: list[list[tuple[SearchNode, int]]] = []


# ---------------------------------------------------------------------------------------------- the search
class Search:
    """The one descent, with an :class:`Evaluator` and a :class:`RootSelector` plugged in.

    Args:
        config: the options (simulations, exploration, first-play penalty and
            batch size are the descent's; the others are read by whoever
            built the plug-ins).
        evaluator: priors and leaf values.
        selector: root selection and the move.
    """

    def __init__(self, config: SearchConfig, evaluator: Evaluator, selector: RootSelector) -> None:
        self.config = config
        self.evaluator = evaluator
        self.selector = selector

    def run(
        self,
        view: KahunaGame,
        rng: np.random.Generator,
        determinize: Callable[[KahunaGame, int], KahunaGame] | None = None,
        cancel: CancelFlag | None = None,
    ) -> SearchResult:
        """Search ``view`` (a position seen by its current player, not over) and return the result.

        ``rng`` seeds the search's randomness; each simulation's
        determinization is ``determinize(view, player)`` (default
        ``view.determinize(player, rng)``).  ``cancel`` is read before every
        simulation (:class:`SearchCancelled`, carrying the result so far).
        """
        if determinize is None:
            determinize = lambda game, player: game.determinize(player, rng)  # noqa: E731
        player = view.current_player
        root = SearchNode(1.0)
        # Rollouts draw many scalars: a Python generator seeded from the search's own is much quicker.
        leaf_rng = random.Random(int(rng.integers(2**63)))
        if self.selector.needs_root_children or not self.evaluator.inline_priors:
            # The searching player's own actions do not depend on hidden cards: one determinization will do.
            first = determinize(view, player)
            legal = first.legal_actions()
            for action, prior in zip(legal, self.evaluator.priors(first, legal), strict=True):
                root.children[action] = SearchNode(float(prior))
        simulations, batch_size, descend = self.config.simulations, self.config.batch_size, self._descend
        self.selector.start(root, simulations, rng)
        done = 0
        while done < simulations:
            room = self.selector.room(root, done)
            pending = _Pending()
            while done < simulations and len(pending.states) < batch_size and room != 0:
                if cancel is not None and cancel.is_set():
                    for path in pending.paths:  # undo their virtual losses: the result counts completed simulations
                        for child, _ in path:
                            child.visits -= 1
                    raise SearchCancelled(
                        "the search was cancelled: its move is no longer wanted", self._result(root, player)
                    )
                done += 1
                if room is not None:
                    room -= 1
                descend(root, determinize(view, player), pending)
            if pending.states:
                self._evaluate(root, pending, player, leaf_rng)
        return self._result(root, player)

    def _descend(self, root: SearchNode, state: KahunaGame, pending: _Pending) -> None:
        """One simulation's walk from the root through ``state`` (a fresh determinization) to its leaf.

        Counts a visit (the virtual loss) on every edge taken.  A finished game
        is backed up at once; any other leaf joins ``pending`` (valued by :meth:`_evaluate`).
        """
        evaluator, selector, config = self.evaluator, self.selector, self.config
        inline, exploration, penalty = evaluator.inline_priors, config.exploration, config.first_play_penalty
        node = root
        path: list[tuple[SearchNode, int]] = []
        legal: list[int] | None = None
        while not state.is_over:
            legal = state.legal_actions()
            children = node.children
            if not all(map(children.__contains__, legal)):  # a legal action without its child yet
                if not inline:
                    break  # the leaf: the evaluator gives this node's priors with its value
                for action, prior in zip(legal, evaluator.priors(state, legal), strict=True):
                    if action not in children:
                        children[action] = SearchNode(prior)
            if node is root:
                action = selector.select(root, legal)
            else:
                action = select_puct(children, legal, exploration, penalty)
            child = children[action]
            untried = child.visits == 0
            child.visits += 1  # the virtual loss until the value arrives
            path.append((child, state.current_player))
            state.step(action)
            node = child
            legal = None
            if untried and inline:
                break  # the leaf: the position after the first untried edge
        if state.is_over:
            _back_up(root, path, outcome(state))
        else:
            pending.states.append(state)
            pending.legal.append(legal)
            pending.nodes.append(node)
            pending.paths.append(path)

    def _evaluate(self, root: SearchNode, pending: _Pending, player: int, rng: random.Random) -> None:
        """Value the pending leaves in one evaluator call, add the children it gives priors for, back up."""
        priors, values = self.evaluator.evaluate(pending.states, pending.legal, player, rng)
        for index, path in enumerate(pending.paths):
            if priors is not None:
                children = pending.nodes[index].children
                legal = pending.legal[index]
                assert legal is not None  # a leaf that waits for priors stopped where it saw its legal actions
                for action, prior in zip(legal, priors[index], strict=True):
                    if action not in children:
                        children[action] = SearchNode(float(prior))
            _back_up(root, path, values[index])

    def _result(self, root: SearchNode, player: int) -> SearchResult:
        """The selector's verdict on ``root``."""
        self.selector.finish(root)
        move = self.selector.best(root) if root.children else None
        policy = self.selector.policy(root) if root.children else {}
        return SearchResult(root, player, move, policy, root.visits)


def _back_up(root: SearchNode, path: list[tuple[SearchNode, int]], value0: float) -> None:
    """Add player 0's leaf value ``value0`` along ``path``, whose visits the descent already counted."""
    root.visits += 1
    for child, mover in path:
        child.value += value0 if mover == 0 else 1.0 - value0
