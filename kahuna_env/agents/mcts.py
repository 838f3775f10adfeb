"""The ``mcts`` search baseline: information-set Monte Carlo tree search over determinizations.

How one decision is searched (single-observer ISMCTS, Cowling et al. 2012):

* The agent receives a determinized game (:func:`kahuna_env.agents.base.choose_action`
  never passes the real one).
* Each simulation draws a fresh determinization of it with
  :meth:`KahunaGame.determinize` (own hand, public state and the opponent's
  publicly known cards kept; the opponent's other cards, its face-down
  discards and the pile order resampled from the pooled hidden cards, which
  depends only on public information and the agent's generator, so two real
  games that differ only in hidden cards give identical decisions with the
  same seed), then walks one shared tree whose
  edges are actions.  Because different determinizations allow different
  actions, each child counts how often it was *available* and the selection
  rule uses that count (the ISMCTS "availability" correction).
* Selection is PUCT: ``Q + c * P * sqrt(available) / (1 + visits)`` with
  ``P`` a cheap prior from :func:`action_priors` (placements that take
  control or progress towards a majority first, removals that break the
  opponent's control, then ending the turn by drawing; discards and passes
  last).  Unvisited children start at the parent's mean value (first-play
  urgency) less a small penalty.
* A new leaf is valued by a short rollout with the ``"heuristic"`` (prior-
  sampled) or ``"random"`` policy, ``rollout_depth`` actions long (0: no
  rollout), then by :func:`evaluate`, a logistic model of the win probability
  from scores, controlled islands, progress to majorities, bridges and hand
  sizes.  A finished game is valued exactly (win 1, draw 0.5, loss 0).
* A turn is several actions by the same player, so every edge stores its
  value from the point of view of the player who took that action; values
  are backed up per player, never by flipping signs level by level.

**Cancellation.**  A search whose :attr:`MCTSAgent.cancel` flag is set (by
another thread: a server whose client left) raises :class:`SearchCancelled`
before its next simulation; the flag is only read, so a search that is not
cancelled plays exactly as without one.

The move played is the root child with the most visits (with ``lcb_weight``
w > 0: the visited child with the highest ``mean - w / sqrt(visits)``; with
``root_candidates``, the best finalist of the halving below).  A
position with a single legal action is answered at once without search.

**Guided search.**  ``MCTSAgent(evaluator=...)`` replaces the cheap prior and
(in the proportion ``value_weight``) the rollout-and-:func:`evaluate` leaf value
by a :class:`LeafEvaluator`, e.g. a network (``policy/search.py``; this
package never imports torch).  The same determinizations, the same tree and
the same per-player backup; what changes (:meth:`MCTSAgent.guided_search`):

* The root is evaluated once before the simulations; a node is *expanded*
  when the evaluator first sees it, its children getting the evaluator's
  priors.  A simulation stops at a node that has legal actions (in this
  determinization) without a child yet: that node is the leaf, evaluated,
  and its missing children are added with the priors of this evaluation
  (an opponent node gains children as determinizations deal it other cards).
* With ``opponent_prior_power`` p != 1, the priors of a node where the
  searching player's opponent moves are raised to p and renormalised (the
  network evaluator's tempered softmax sharpened back for the opponent).
* Its value is ``value_weight * v + (1 - value_weight) * h``: ``v`` the
  evaluator's win probability for the player to move, ``h`` the baseline's
  rollout-then-:func:`evaluate` value (not computed when ``value_weight`` is 1).
* Leaves are evaluated ``batch_size`` at a time with a virtual loss: each
  edge on the way to a pending leaf counts a visit of value 0 for its mover
  until the leaf's value arrives, so the next simulations of the batch
  spread out.  ``batch_size=1`` is the plain sequential search.
* With no visits at the root (budget 1 when the only simulation ended in a
  finished game), the highest prior wins.
* With ``root_candidates`` m >= 2 the root does not select by PUCT but by
  sequential halving (as in Gumbel MuZero, Danihelka et al. 2022, without the
  Gumbel noise): the m root actions the prior ranks highest are candidates;
  each phase gives every candidate the same number of simulations
  (``simulations // (ceil(log2 m) * candidates)``, at least 1; the phase with two
  candidates gets all that is left), then keeps the better half by mean
  value (prior breaking ties).  Below the root the selection is PUCT as
  usual.  The move is the best remaining candidate by mean value
  (:attr:`MCTSAgent.root_finalists`).
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kahuna_env import actions as A
from kahuna_env.agents.base import SeededAgent
from kahuna_env.board import MAJORITY, NUM_ISLANDS
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
_ISLAND_BITS = tuple(1 << i for i in range(NUM_ISLANDS))
_LINE_A = tuple(A.PAID_ISLANDS[A.REMOVE_AB + line][0] for line in range(27))
_LINE_B = tuple(A.PAID_ISLANDS[A.REMOVE_AB + line][1] for line in range(27))
_ACTION_LINE = A.ACTION_LINE


# ---------------------------------------------------------------------------------------------- priors
def action_logits(game: KahunaGame, legal: list[int]) -> list[float]:
    """Unnormalised log-prior of each legal action for the player to move (cheap: no copies of the game).

    Public information and the mover's own hand only, like everything the
    agent computes.
    """
    player = game.current_player
    opponent = 1 - player
    count = game.bridge_counts(player)
    opponent_count = game.bridge_counts(opponent)
    opponent_control = game.control_mask(opponent)
    my_control = game.control_mask(player)
    drawable_end = False
    logits = []
    for action in legal:
        if action < A.REMOVE_AB or action >= A.FREE_BRIDGE:
            line = _ACTION_LINE[action]
            score = 0.0
            for island in (_LINE_A[line], _LINE_B[line]):
                bit = _ISLAND_BITS[island]
                if opponent_control & bit:
                    score -= 0.5
                elif my_control & bit:
                    score -= 0.2
                elif count[island] + 1 == MAJORITY[island]:
                    # Taking control: worth more the more opponent bridges it sweeps away.
                    score += 2.5 + 0.5 * opponent_count[island]
                else:
                    score += 0.6
            if action >= A.FREE_BRIDGE:
                score += 1.0
            logits.append(score)
        elif action < A.DISCARD:
            line = _ACTION_LINE[action]
            score = -0.5
            for island in (_LINE_A[line], _LINE_B[line]):
                if opponent_control & _ISLAND_BITS[island] and opponent_count[island] == MAJORITY[island]:
                    score += 2.5
            logits.append(score)
        elif action < A.DRAW:
            logits.append(-2.0)
        elif action < A.PASS:
            drawable_end = True
            logits.append(0.5 if action == A.DRAW else 0.2)
        else:
            logits.append(0.0 if not drawable_end else -1.5)
    return logits


def action_priors(game: KahunaGame, legal: list[int]) -> list[float]:
    """Softmax of :func:`action_logits` over ``legal`` (sums to 1)."""
    logits = action_logits(game, legal)
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    total = sum(weights)
    return [w / total for w in weights]


# ---------------------------------------------------------------------------------------------- evaluation
# Logistic model of P(player 0 wins); weights of the features of _features() in order.  Fitted by
# logistic regression (Newton, small L2) on ~22,000 positions sampled from 1,800 games of greedy
# (with 0-20% random moves) against greedy and against a 30-simulation search, both perspectives;
# held-out log-loss 0.424 against 0.450 for hand-set weights.
_EVAL_WEIGHTS = (0.6, 0.26, 0.43, 0.6, 0.48, 0.23, 0.36, 0.2)


def _features(game: KahunaGame) -> tuple[float, ...]:
    """Features of a position from player 0's side (differences player 0 minus player 1)."""
    control0 = game.control_mask(0)
    control1 = game.control_mask(1)
    islands = control0.bit_count() - control1.bit_count()
    count0 = game.bridge_counts(0)
    count1 = game.bridge_counts(1)
    progress = 0.0
    for island in range(NUM_ISLANDS):
        bit = _ISLAND_BITS[island]
        if not control1 & bit and not control0 & bit:
            progress += count0[island] / MAJORITY[island]
        if not control0 & bit and not control1 & bit:
            progress -= count1[island] / MAJORITY[island]
    scores = game.scores
    round_number = game.round
    bridges = game.bridges_on_board(0) - game.bridges_on_board(1)
    hands = game.hand_size(0) - game.hand_size(1)
    to_move = 1.0 if game.current_player == 0 else -1.0
    return (
        float(scores[0] - scores[1]),
        float(islands) * (round_number == 1),
        float(islands) * (round_number == 2),
        float(islands) * (round_number == 3),
        progress,
        float(bridges),
        float(hands),
        to_move,
    )


def evaluate(game: KahunaGame) -> float:
    """Estimated probability that player 0 wins (draws count half); exact once the game is over."""
    if game.is_over:
        winner = game.winner
        return 0.5 if winner is None else (1.0 if winner == 0 else 0.0)
    margin = 0.0
    for weight, feature in zip(_EVAL_WEIGHTS, _features(game), strict=True):
        margin += weight * feature
    return 1.0 / (1.0 + math.exp(-margin))


# ---------------------------------------------------------------------------------------------- evaluators
class CancelFlag(Protocol):
    """What a search asks of its cancel flag (a :class:`threading.Event` is one): is the move still wanted?"""

    def is_set(self) -> bool: ...


class SearchCancelled(Exception):
    """Raised by a search whose cancel flag was set: nobody wants its move any more (no move is returned)."""


class LeafEvaluator(Protocol):
    """What a guided search asks of a position evaluator (a network, say; see ``policy/search.py``).

    ``evaluate(states, legal)`` receives determinized positions that are not
    over (seen by the player to move in each: ``encode_observation(state,
    state.current_player)`` is what that player may know of it) and each
    position's legal actions, and returns ``(priors, values)``: for every
    state a list of prior probabilities aligned with its ``legal`` list
    (non-negative, summing to 1) and the probability in [0, 1] that the
    player to move wins (draws count half).  It must not change the states.
    """

    def evaluate(
        self, states: Sequence[KahunaGame], legal: Sequence[list[int]]
    ) -> tuple[list[list[float]], list[float]]: ...


# ---------------------------------------------------------------------------------------------- search tree
class SearchNode:
    """A node of the search tree: statistics of the action (edge) leading here, and the children by action.

    Attributes:
        prior: prior probability of the action when the node was created.
        visits: simulations that went through the action.
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


def _select(
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


def _sharpen(priors: Sequence[float], power: float) -> list[float]:
    """``priors ** power``, renormalised (relative to the largest, so nothing underflows to all zeros)."""
    top = max(priors)  # > 0: priors sum to 1
    weights = [(p / top) ** power for p in priors]
    total = sum(weights)
    return [w / total for w in weights]


def _is_number(value: object, low: float, high: float, *, open_low: bool = False) -> bool:
    """Whether ``value`` is an int or float, not a bool, in ``[low, high]`` (``(low, high]`` if ``open_low``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (low < value if open_low else low <= value) and value <= high


class _Halving:
    """Sequential halving at the root of a guided search (``root_candidates``; see the module docstring)."""

    def __init__(self, root: SearchNode, candidates: int, simulations: int) -> None:
        self.simulations = simulations
        # Stable: equal priors keep the legal order.
        self.candidates = sorted(root.children, key=lambda action: -root.children[action].prior)[:candidates]
        self.phases = max(1, math.ceil(math.log2(len(self.candidates))))
        self.queue: list[int] = []

    def ranked(self, root: SearchNode) -> list[int]:
        """The candidates, best first: mean value, then prior (unvisited ones last)."""

        def key(action: int) -> tuple[float, float]:
            child = root.children[action]
            return (child.value / child.visits if child.visits else -1.0, child.prior)

        return sorted(self.candidates, key=key, reverse=True)

    def next_phase(self, root: SearchNode, done: int) -> list[int]:
        """The forced root actions left in this phase, popped from the end; a new phase once it is spent.

        A new phase first keeps the better half of the candidates (all of them
        in the first phase), then lays out its simulations round robin over
        them, the better ones first; the phase with two candidates (or fewer)
        gets all the simulations that are left.
        """
        if self.queue:
            return self.queue
        if done:  # not the first phase (the phase with two candidates already took all that was left)
            self.candidates = self.ranked(root)[: math.ceil(len(self.candidates) / 2)]
        left = self.simulations - done
        count = len(self.candidates)
        total = left if count <= 2 else min(left, count * max(1, self.simulations // (self.phases * count)))
        self.queue = [self.candidates[i % count] for i in range(total)][::-1]
        return self.queue


class MCTSAgent(SeededAgent):
    """Determinized (information-set) MCTS; see the module docstring for the algorithm.

    Args:
        simulations: simulations (determinize, select, expand, evaluate,
            back up) per decision; at least 1.
        exploration: PUCT exploration constant, > 0.
        rollout: ``"heuristic"`` (actions sampled from the prior) or
            ``"random"`` (uniform over legal actions).
        rollout_depth: actions played by the rollout policy after a new leaf
            before the position is evaluated; 0 evaluates the leaf directly.
        seed: seeds the agent's own generator (determinizations, rollouts).
        evaluator: a :class:`LeafEvaluator` guiding the search (priors and
            leaf values; see the module docstring), or ``None`` for the
            baseline search.
        value_weight: guided search: weight of the evaluator's value in a
            leaf's value, in [0, 1]; the rest is the baseline's rollout and
            :func:`evaluate` (1: the evaluator alone, no rollout).
        batch_size: guided search: leaves evaluated together (virtual loss), at least 1.
        first_play_penalty: an unvisited child's value is its parent's mean
            value less this (first-play urgency), in [0, 1].
        opponent_prior_power: guided search: the evaluator's priors at nodes where
            the searching player's opponent moves are raised to this power and
            renormalised (> 0; 1 keeps them, above 1 sharpens them).
        lcb_weight: how the move is chosen: 0 (default) the most visited root
            child; ``w > 0`` the visited root child with the highest lower bound
            ``mean value - w / sqrt(visits)`` (most visits break ties).
        root_candidates: guided search: 0 (default) selects by PUCT at the root;
            ``m >= 2`` runs sequential halving over the m root actions with the
            highest prior (module docstring) and plays the best by mean value.

    Attributes:
        search_seconds: total time spent searching since construction.
        searched_moves: decisions that needed a search (more than one legal action).
        root_finalists: with ``root_candidates``, the candidates left at the end
            of the last search, best first (empty before any search).
        cancel: a :class:`CancelFlag` (e.g. a :class:`threading.Event`) read before
            every simulation: once set, the search raises :class:`SearchCancelled`
            (``None``, the default: never cancelled).
    """

    name = "mcts"
    uses_game = True
    uses_observation = False

    def __init__(
        self,
        simulations: int = DEFAULT_SIMULATIONS,
        exploration: float = DEFAULT_EXPLORATION,
        rollout: str = DEFAULT_ROLLOUT,
        rollout_depth: int = DEFAULT_ROLLOUT_DEPTH,
        seed: int | None = None,
        evaluator: LeafEvaluator | None = None,
        value_weight: float = 1.0,
        batch_size: int = 1,
        first_play_penalty: float = DEFAULT_FIRST_PLAY_PENALTY,
        lcb_weight: float = 0.0,
        opponent_prior_power: float = 1.0,
        root_candidates: int = 0,
    ) -> None:
        if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 1:
            raise ValueError(f"mcts simulations must be a positive integer, got {simulations!r}")
        if not isinstance(exploration, (int, float)) or isinstance(exploration, bool) or not exploration > 0:
            raise ValueError(f"mcts exploration must be a positive number, got {exploration!r}")
        if rollout not in ROLLOUTS:
            raise ValueError(f"mcts rollout must be one of {ROLLOUTS}, got {rollout!r}")
        if isinstance(rollout_depth, bool) or not isinstance(rollout_depth, int) or rollout_depth < 0:
            raise ValueError(f"mcts rollout_depth must be a non-negative integer, got {rollout_depth!r}")
        if evaluator is not None and not callable(getattr(evaluator, "evaluate", None)):
            raise ValueError(f"mcts evaluator must have an evaluate(states, legal) method, got {evaluator!r:.80}")
        if not _is_number(value_weight, 0.0, 1.0):
            raise ValueError(f"mcts value_weight must be a number in [0, 1], got {value_weight!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"mcts batch_size must be a positive integer, got {batch_size!r}")
        if not _is_number(first_play_penalty, 0.0, 1.0):
            raise ValueError(f"mcts first_play_penalty must be a number in [0, 1], got {first_play_penalty!r}")
        if not _is_number(lcb_weight, 0.0, sys.float_info.max):
            raise ValueError(f"mcts lcb_weight must be a finite number >= 0, got {lcb_weight!r}")
        if not _is_number(opponent_prior_power, 0.0, sys.float_info.max, open_low=True):
            raise ValueError(f"mcts opponent_prior_power must be a finite number > 0, got {opponent_prior_power!r}")
        if (
            isinstance(root_candidates, bool)
            or not isinstance(root_candidates, int)
            or not (root_candidates == 0 or root_candidates >= 2)
        ):
            raise ValueError(f"mcts root_candidates must be 0 or an integer >= 2, got {root_candidates!r}")
        if root_candidates and evaluator is None:
            raise ValueError("mcts root_candidates needs an evaluator (it is an option of the guided search)")
        self.root_candidates = root_candidates
        self.root_finalists: list[int] = []
        self.opponent_prior_power = float(opponent_prior_power)
        self.first_play_penalty = float(first_play_penalty)
        self.lcb_weight = float(lcb_weight)
        self.evaluator = evaluator
        self.value_weight = float(value_weight)
        self.batch_size = batch_size
        self.simulations = simulations
        self.exploration = float(exploration)
        self.rollout = rollout
        self.rollout_depth = rollout_depth
        self.name = f"mcts:{simulations}"
        super().__init__(seed)
        self.search_seconds = 0.0
        self.searched_moves = 0
        self.cancel: CancelFlag | None = None

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        """Search from the (determinized) ``game`` and return the most visited legal action."""
        if game is None:
            raise ValueError("the mcts agent needs the (determinized) game; use kahuna_env.agents.choose_action")
        legal = game.legal_actions()
        if not legal:
            raise ValueError("the mcts agent was asked to act in a finished game")
        if len(legal) == 1:
            return legal[0]
        started = time.perf_counter()
        root = self.search(game)
        self.search_seconds += time.perf_counter() - started
        self.searched_moves += 1
        return self.choose_move(root)

    def choose_move(self, root: SearchNode) -> int:
        """The move played after the search of ``root`` (see ``lcb_weight``)."""
        if self.root_candidates and self.root_finalists:
            return self.root_finalists[0]
        weight = self.lcb_weight
        visited = [(action, child) for action, child in root.children.items() if child.visits]
        if weight > 0.0 and visited:
            return max(
                visited,
                key=lambda item: (item[1].value / item[1].visits - weight / math.sqrt(item[1].visits), item[1].visits),
            )[0]
        if self.evaluator is None:
            best = max(root.children.items(), key=lambda item: (item[1].visits, item[1].value))
        else:
            best = max(root.children.items(), key=lambda item: (item[1].visits, item[1].prior))
        return best[0]

    def sample_determinization(self, view: KahunaGame, player: int) -> KahunaGame:
        """One determinization for a simulation: ``view.determinize(player, self.rng)``."""
        return view.determinize(player, self.rng)

    def _check_cancel(self) -> None:
        """Raise :class:`SearchCancelled` if the :attr:`cancel` flag is set."""
        if self.cancel is not None and self.cancel.is_set():
            raise SearchCancelled("the search was cancelled: its move is no longer wanted")

    def search(self, game: KahunaGame) -> SearchNode:
        """Run the simulations from ``game`` (seen by its current player) and return the root node."""
        if self.evaluator is not None:
            return self.guided_search(game)
        player = game.current_player
        root = SearchNode(1.0)
        exploration = self.exploration
        penalty = self.first_play_penalty
        # Rollouts draw many scalars: a Python generator seeded from the agent's own is much quicker.
        rollout_rng = random.Random(int(self.rng.integers(2**63)))
        for _ in range(self.simulations):
            self._check_cancel()
            state = self.sample_determinization(game, player)
            node = root
            path: list[tuple[SearchNode, int]] = []  # (node, player who took the action leading to it)
            while not state.is_over:
                legal = state.legal_actions()
                children = node.children
                mover = state.current_player
                missing = [a for a in legal if a not in children]
                if missing:
                    priors = action_priors(state, legal)
                    for action, prior in zip(legal, priors, strict=True):
                        if action not in children:
                            children[action] = SearchNode(prior)
                # Selection among the children available in this determinization.
                best_action = _select(children, legal, exploration, penalty)
                child = children[best_action]
                state.step(best_action)
                path.append((child, mover))
                node = child
                if child.visits == 0:
                    break
            value0 = self._leaf_value(state, rollout_rng)
            root.visits += 1
            for child, mover in path:
                child.visits += 1
                child.value += value0 if mover == 0 else 1.0 - value0
        return root

    def guided_search(self, game: KahunaGame) -> SearchNode:
        """The search with :attr:`evaluator` (see the module docstring); returns the root node."""
        evaluator = self.evaluator
        assert evaluator is not None
        player = game.current_player
        root = SearchNode(1.0)
        exploration = self.exploration
        penalty = self.first_play_penalty
        weight = self.value_weight
        power = self.opponent_prior_power
        rollout_rng = random.Random(int(self.rng.integers(2**63)))
        # The root's children and priors, from one determinization (the searching player's own
        # actions do not depend on hidden cards).
        first = self.sample_determinization(game, player)
        first_legal = first.legal_actions()
        (root_priors,), _ = evaluator.evaluate([first], [first_legal])
        for action, prior in zip(first_legal, root_priors, strict=True):
            root.children[action] = SearchNode(float(prior))
        halving = _Halving(root, self.root_candidates, self.simulations) if self.root_candidates else None
        done = 0
        while done < self.simulations:
            forced = halving.next_phase(root, done) if halving is not None else None
            # Descend up to batch_size times, with a virtual loss on every edge taken.
            pending: list[tuple[KahunaGame, list[int], SearchNode, list[tuple[SearchNode, int]]]] = []
            while done < self.simulations and len(pending) < self.batch_size and (forced is None or forced):
                self._check_cancel()
                done += 1
                state = self.sample_determinization(game, player)
                node = root
                path: list[tuple[SearchNode, int]] = []
                legal: list[int] = []
                while not state.is_over:
                    legal = state.legal_actions()
                    children = node.children
                    if any(action not in children for action in legal):
                        break
                    if forced is not None and node is root:
                        best_action = forced.pop()
                    else:
                        best_action = _select(children, legal, exploration, penalty)
                    child = children[best_action]
                    path.append((child, state.current_player))
                    child.visits += 1  # virtual loss until the value arrives
                    state.step(best_action)
                    node = child
                if state.is_over:
                    self._back_up(root, path, evaluate(state))
                else:
                    pending.append((state, legal, node, path))
            if not pending:
                continue
            states = [item[0] for item in pending]
            priors, values = evaluator.evaluate(states, [item[1] for item in pending])
            for (state, legal, node, path), state_priors, value in zip(pending, priors, values, strict=True):
                children = node.children
                if power != 1.0 and state.current_player != player:
                    state_priors = _sharpen(state_priors, power)
                for action, prior in zip(legal, state_priors, strict=True):
                    if action not in children:
                        children[action] = SearchNode(float(prior))
                value0 = float(value) if state.current_player == 0 else 1.0 - float(value)
                if weight < 1.0:
                    value0 = weight * value0 + (1.0 - weight) * self._leaf_value(state, rollout_rng)
                self._back_up(root, path, value0)
        if halving is not None:
            self.root_finalists = halving.ranked(root)
        return root

    @staticmethod
    def _back_up(root: SearchNode, path: list[tuple[SearchNode, int]], value0: float) -> None:
        """Add player 0's leaf value ``value0`` along ``path``, whose visits the descent already counted."""
        root.visits += 1
        for child, mover in path:
            child.value += value0 if mover == 0 else 1.0 - value0

    def _leaf_value(self, state: KahunaGame, rng: random.Random) -> float:
        """Value of a new leaf for player 0: a short rollout, then :func:`evaluate`."""
        uniform = self.rollout == "random"
        for _ in range(self.rollout_depth):
            if state.is_over:
                break
            legal = state.legal_actions()
            if uniform:
                action = legal[int(rng.random() * len(legal))]
            else:
                weights = [math.exp(x) for x in action_logits(state, legal)]
                threshold = rng.random() * sum(weights)
                action = legal[-1]
                for candidate, weight in zip(legal, weights, strict=True):
                    threshold -= weight
                    if threshold <= 0.0:
                        action = candidate
                        break
            state.step(action)
        return evaluate(state)

    def seconds_per_move(self) -> float:
        """Mean search time per searched decision so far (0.0 before any search)."""
        return self.search_seconds / self.searched_moves if self.searched_moves else 0.0
