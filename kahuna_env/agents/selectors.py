"""The search's root selectors: PUCT, and sequential halving over the prior's top actions.

Plug-ins of :class:`kahuna_env.agents.search.Search` (the
:class:`~kahuna_env.agents.search.RootSelector` protocol): each chooses the
root action of every simulation, may end a batch of simulations early, and
says which move the search plays and with what policy.
"""

from __future__ import annotations

import math

import numpy as np

from kahuna_env.agents.search import DEFAULT_FIRST_PLAY_PENALTY, SearchNode, select_puct

TIE_BREAKS = ("value", "prior")
"""What breaks a tie in visits between root children: their summed value, or their prior."""


def most_visited(root: SearchNode, lcb_weight: float = 0.0, tie_break: str = "value") -> int:
    """The root child with the most visits (ties: ``tie_break``); with ``lcb_weight`` w > 0 the best lower bound.

    With w > 0 the move is the visited child with the highest
    ``mean value - w / sqrt(visits)`` (most visits break ties), if any child
    was visited.  With no visits at all, the ``tie_break`` decides (with
    ``"prior"``: the highest prior).
    """
    if lcb_weight > 0.0:
        visited = [(action, child) for action, child in root.children.items() if child.visits]
        if visited:
            return max(
                visited,
                key=lambda item: (
                    item[1].value / item[1].visits - lcb_weight / math.sqrt(item[1].visits),
                    item[1].visits,
                ),
            )[0]
    if tie_break == "value":
        return max(root.children.items(), key=lambda item: (item[1].visits, item[1].value))[0]
    return max(root.children.items(), key=lambda item: (item[1].visits, item[1].prior))[0]


def visit_policy(root: SearchNode) -> dict[int, float]:
    """The root children's share of the visits (uniform over them before any visit)."""
    total = sum(child.visits for child in root.children.values())
    if not total:
        return {action: 1.0 / len(root.children) for action in root.children}
    return {action: child.visits / total for action, child in root.children.items()}


class PUCTRoot:
    """PUCT at the root as below it; the move is the most visited root child (:func:`most_visited`).

    Args:
        exploration: the PUCT constant ``c``.
        first_play_penalty: first-play urgency (see :func:`~kahuna_env.agents.search.select_puct`).
        lcb_weight: see :func:`most_visited`.
        tie_break: ``"value"`` (the baseline) or ``"prior"`` (the guided search): see :func:`most_visited`.
    """

    needs_root_children = False

    def __init__(
        self,
        exploration: float,
        first_play_penalty: float = DEFAULT_FIRST_PLAY_PENALTY,
        lcb_weight: float = 0.0,
        tie_break: str = "value",
    ) -> None:
        if tie_break not in TIE_BREAKS:
            raise ValueError(f"PUCTRoot tie_break must be one of {TIE_BREAKS}, got {tie_break!r}")
        self.exploration = exploration
        self.first_play_penalty = first_play_penalty
        self.lcb_weight = lcb_weight
        self.tie_break = tie_break

    def start(self, root: SearchNode, simulations: int, rng: np.random.Generator) -> None:
        """Nothing to prepare."""

    def room(self, root: SearchNode, done: int) -> None:
        """No limit on a batch."""
        return None

    def select(self, root: SearchNode, legal: list[int]) -> int:
        """:func:`~kahuna_env.agents.search.select_puct` at the root."""
        return select_puct(root.children, legal, self.exploration, self.first_play_penalty)

    def finish(self, root: SearchNode) -> None:
        """Nothing to settle."""

    def best(self, root: SearchNode) -> int:
        """:func:`most_visited`."""
        return most_visited(root, self.lcb_weight, self.tie_break)

    def policy(self, root: SearchNode) -> dict[int, float]:
        """:func:`visit_policy`."""
        return visit_policy(root)


class SequentialHalving:
    """Sequential halving at the root (as in Gumbel MuZero, Danihelka et al. 2022, without the Gumbel noise).

    The m root actions the prior ranks highest are candidates; each phase
    gives every candidate the same number of simulations
    (``simulations // (ceil(log2 m) * candidates)``, at least 1; the phase with
    two candidates gets all that is left), then keeps the better half by mean
    value (prior breaking ties).  Below the root the selection is PUCT as
    usual.  The move is the best remaining candidate by mean value
    (:attr:`finalists`).

    Args:
        candidates: m, at least 2.

    Attributes:
        finalists: the candidates left at the end of the last search, best first.
    """

    needs_root_children = True

    def __init__(self, candidates: int) -> None:
        self.size = candidates
        self.simulations = 0
        self.candidates: list[int] = []
        self.phases = 1
        self.queue: list[int] = []
        self.finalists: list[int] = []

    def start(self, root: SearchNode, simulations: int, rng: np.random.Generator) -> None:
        """The candidates: the top m root children by prior (stable: equal priors keep the legal order)."""
        self.simulations = simulations
        self.candidates = sorted(root.children, key=lambda action: -root.children[action].prior)[: self.size]
        self.phases = max(1, math.ceil(math.log2(len(self.candidates))))
        self.queue = []
        self.finalists = []

    def ranked(self, root: SearchNode) -> list[int]:
        """The candidates, best first: mean value, then prior (unvisited ones last)."""

        def key(action: int) -> tuple[float, float]:
            child = root.children[action]
            return (child.value / child.visits if child.visits else -1.0, child.prior)

        return sorted(self.candidates, key=key, reverse=True)

    def next_phase(self, root: SearchNode, done: int) -> list[int]:
        """The root actions left in this phase, popped from the end; a new phase once it is spent.

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

    def room(self, root: SearchNode, done: int) -> int:
        """The simulations left in this phase: a batch never spans two phases (each ranks on all values before it)."""
        return len(self.next_phase(root, done))

    def select(self, root: SearchNode, legal: list[int]) -> int:
        """The phase's next root action."""
        return self.queue.pop()

    def finish(self, root: SearchNode) -> None:
        """:attr:`finalists`: the candidates left, best first."""
        self.finalists = self.ranked(root)

    def best(self, root: SearchNode) -> int:
        """The best finalist."""
        return self.finalists[0] if self.finalists else most_visited(root, tie_break="prior")

    def policy(self, root: SearchNode) -> dict[int, float]:
        """:func:`visit_policy` (a Gumbel root would return its improved policy here)."""
        return visit_policy(root)
