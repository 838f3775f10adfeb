"""The ``mcts`` agent: information-set Monte Carlo tree search over determinizations, baseline or guided.

:class:`MCTSAgent` plays the one search of :mod:`kahuna_env.agents.search`
(its module docstring states the algorithm) with plug-ins built from its
options (:class:`~kahuna_env.agents.search.SearchConfig`):

* without an ``evaluator``, the baseline: the heuristic prior and a short
  rollout then a logistic evaluation
  (:class:`~kahuna_env.agents.evaluators.RolloutEvaluator`), PUCT at the root
  (:class:`~kahuna_env.agents.selectors.PUCTRoot`); the move is the most
  visited root child, ties broken by value;
* with an ``evaluator`` (a :class:`LeafEvaluator`, e.g. a network:
  ``kahuna_policy/search.py``; this package never imports torch), the guided
  search: its priors and values for ``batch_size`` leaves per call
  (:class:`~kahuna_env.agents.evaluators.GuidedEvaluator`), the value mixed
  with the rollout's in the proportion ``value_weight``, the priors at the
  opponent's nodes raised to ``opponent_prior_power``; at the root PUCT (the
  move: most visits, ties broken by prior; with no visits at all the highest
  prior) or, with ``root_candidates`` m >= 2, sequential halving over the m
  actions the prior ranks highest
  (:class:`~kahuna_env.agents.selectors.SequentialHalving`; the move is the
  best finalist by mean value, :attr:`MCTSAgent.root_finalists`).

With ``lcb_weight`` w > 0 a PUCT root plays the visited child with the
highest ``mean - w / sqrt(visits)``.  A position with a single legal action
is answered at once without search.

**Cancellation.**  A search whose :attr:`MCTSAgent.cancel` flag is set (by
another thread: a server whose client left) raises :class:`SearchCancelled`
before its next simulation; the flag is only read, so a search that is not
cancelled plays exactly as without one.  The exception's ``result`` (also
:attr:`MCTSAgent.last_search`) holds the best move so far and the root's
visit counts.

The names this module always offered (the heuristics, the tree node, the
protocols, the defaults) are re-exported from the modules that now hold them.
"""

from __future__ import annotations

import dataclasses
import operator
import time
from typing import Any

import numpy as np

from kahuna_env.agents.base import SeededAgent
from kahuna_env.agents.evaluators import (
    GuidedEvaluator,
    LeafEvaluator,
    RolloutEvaluator,
    action_logits,
    action_priors,
    win_probability,
)
from kahuna_env.agents.search import (
    DEFAULT_EXPLORATION,
    DEFAULT_FIRST_PLAY_PENALTY,
    DEFAULT_ROLLOUT,
    DEFAULT_ROLLOUT_DEPTH,
    DEFAULT_SIMULATIONS,
    ROLLOUTS,
    CancelFlag,
    Evaluator,
    RootSelector,
    Search,
    SearchCancelled,
    SearchConfig,
    SearchNode,
    SearchResult,
)
from kahuna_env.agents.selectors import PUCTRoot, SequentialHalving, most_visited
from kahuna_env.agents.spec import budget_spec
from kahuna_env.engine import KahunaGame

__all__ = [
    "DEFAULT_EXPLORATION",
    "DEFAULT_FIRST_PLAY_PENALTY",
    "DEFAULT_ROLLOUT",
    "DEFAULT_ROLLOUT_DEPTH",
    "DEFAULT_SIMULATIONS",
    "GUIDED_DEFAULTS",
    "ROLLOUTS",
    "SEARCH_OPTIONS",
    "CancelFlag",
    "Evaluator",
    "GuidedSearchAgent",
    "LeafEvaluator",
    "MCTSAgent",
    "RootSelector",
    "SearchCancelled",
    "SearchConfig",
    "SearchNode",
    "SearchResult",
    "action_logits",
    "action_priors",
    "search_config",
    "win_probability",
]


class MCTSAgent(SeededAgent):
    """Determinized (information-set) MCTS; see the module docstring for the algorithm.

    Args:
        simulations: simulations per decision; at least 1.
        seed: seeds the agent's own generator (determinizations, rollouts).
        evaluator: a :class:`LeafEvaluator` guiding the search (priors and
            leaf values; see the module docstring), or ``None`` for the
            baseline search.
        root_selector: a :class:`RootSelector` of one's own (e.g. a Gumbel
            root) instead of the one the options name; it chooses the root
            actions and the move (``root_candidates`` must then be 0, and
            ``lcb_weight`` is not read).
        options: the other fields of :class:`SearchConfig`, by name
            (``exploration``, ``rollout``, ``rollout_depth``, ``value_weight``,
            ``batch_size``, ``first_play_penalty``, ``lcb_weight``,
            ``opponent_prior_power``, ``root_candidates``; their meaning and
            defaults are there).

    The options are checked by :class:`SearchConfig` (one-line ``ValueError``
    naming the option, or an unknown one) and readable as attributes
    (``agent.simulations``...).

    Attributes:
        config: the options.
        search_seconds: total time spent searching since construction.
        searched_moves: decisions that needed a search (more than one legal action).
        root_finalists: with ``root_candidates``, the candidates left at the end
            of the last search, best first (empty before any search).
        last_search: the :class:`SearchResult` of the last search (also of a
            cancelled one: its completed simulations), ``None`` before any.
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
        seed: int | None = None,
        evaluator: LeafEvaluator | None = None,
        root_selector: RootSelector | None = None,
        **options: Any,
    ) -> None:
        config = search_config(simulations=simulations, **options)
        root_candidates = config.root_candidates
        if evaluator is not None and not callable(getattr(evaluator, "evaluate", None)):
            raise ValueError(f"mcts evaluator must have an evaluate(states, legal) method, got {evaluator!r:.80}")
        if root_candidates and evaluator is None:
            raise ValueError("mcts root_candidates needs an evaluator (it is an option of the guided search)")
        if root_selector is not None and not all(
            callable(getattr(root_selector, method, None))
            for method in ("start", "room", "select", "finish", "best", "policy")
        ):
            raise ValueError(f"mcts root_selector must be a RootSelector, got {root_selector!r:.80}")
        if root_selector is not None and root_candidates:
            raise ValueError("mcts root_selector and root_candidates both choose at the root: give one of them")
        self.config = config
        self.evaluator = evaluator
        self.name = budget_spec(simulations)
        super().__init__(seed)
        self.search_seconds = 0.0
        self.searched_moves = 0
        self.root_finalists: list[int] = []
        self.last_search: SearchResult | None = None
        self.cancel: CancelFlag | None = None
        self._own_selector = root_selector is not None
        self._search = Search(config, self._evaluator_plugin(), root_selector or self._root_selector())

    def _evaluator_plugin(self) -> Evaluator:
        """The rollout evaluator, or the guided one around :attr:`evaluator`."""
        rollout = RolloutEvaluator(self.config.rollout, self.config.rollout_depth)
        if self.evaluator is None:
            return rollout
        return GuidedEvaluator(self.evaluator, self.config.value_weight, self.config.opponent_prior_power, rollout)

    def _root_selector(self) -> RootSelector:
        """Sequential halving with ``root_candidates``, else PUCT (ties by value for the baseline, by prior guided)."""
        config = self.config
        if config.root_candidates:
            return SequentialHalving(config.root_candidates)
        tie_break = "value" if self.evaluator is None else "prior"
        return PUCTRoot(config.exploration, config.first_play_penalty, config.lcb_weight, tie_break)

    root_selector = property(lambda self: self._search.selector, doc="The root selector plugged into the search.")

    def act(self, observation: np.ndarray | None, action_mask: np.ndarray, game: KahunaGame | None = None) -> int:
        """Search from the (determinized) ``game`` and return the move chosen (:meth:`choose_move`)."""
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
        """The move played after the search of ``root`` (see ``lcb_weight``, ``root_candidates``, ``root_selector``)."""
        if self._own_selector:
            return self._search.selector.best(root)
        if self.root_candidates and self.root_finalists:
            return self.root_finalists[0]
        return most_visited(root, self.lcb_weight, "value" if self.evaluator is None else "prior")

    def sample_determinization(self, view: KahunaGame, player: int) -> KahunaGame:
        """One determinization for a simulation: ``view.determinize(player, self.rng)``."""
        return view.determinize(player, self.rng)

    def search(self, game: KahunaGame) -> SearchNode:
        """Run the simulations from ``game`` (seen by its current player) and return the root node.

        The whole result (visit counts, mean values, policy) is :attr:`last_search`.
        """
        try:
            result = self._search.run(game, self.rng, self.sample_determinization, self.cancel)
        except SearchCancelled as cancelled:
            self.last_search = cancelled.result
            raise
        self.last_search = result
        if self.root_candidates:
            self.root_finalists = list(self._search.selector.finalists)  # type: ignore[attr-defined]
        return result.root

    def guided_search(self, game: KahunaGame) -> SearchNode:
        """:meth:`search` (the guided search is the same one search, with the evaluator plugged in)."""
        return self.search(game)

    def seconds_per_move(self) -> float:
        """Mean search time per searched decision so far (0.0 before any search)."""
        return self.search_seconds / self.searched_moves if self.searched_moves else 0.0


# ---------------------------------------------------------------------------------------------- the guided search
DEFAULT_VALUE_WEIGHT = 1.0
"""Weight of the evaluator's value in a leaf's value (the rest: the baseline's rollout and evaluation)."""
DEFAULT_BATCH_SIZE = 4
"""Leaves per evaluator call (virtual loss)."""
DEFAULT_PRIOR_TEMPERATURE = 20.0
"""Temperature of the softmax that turns a policy's logits into the PUCT prior (> 1 flattens it).

The trained policies are peaked (the champion puts more than 0.99 on one
action in about a third of its decisions), so with the raw softmax the search
hardly looks past the policy's choice; a flat prior lets the value decide
(measured in docs/EVALUATION.md, "Tuning the guided search")."""
DEFAULT_OPPONENT_PRIOR_TEMPERATURE = 5.0
"""Prior temperature at the nodes where the searching player's opponent moves.

Sharper than at the searcher's own nodes: the few simulations that reach an
opponent node go to the replies the policy expects, so its value is that of
a good reply rather than an average over many (measured in docs/EVALUATION.md,
"Tuning the guided search")."""
DEFAULT_ROOT_CANDIDATES = 4
"""Root actions the guided search compares by sequential halving (the 4 the policy ranks highest).

At 50 simulations, halving over the policy's top 4 instead of PUCT over all
legal actions measured the largest gain of any setting; wider candidate sets
spread too few simulations per action in the first phase and score far
lower (docs/EVALUATION.md, "Tuning the guided search")."""
DEFAULT_GUIDED_EXPLORATION = 0.5
"""PUCT constant of the guided search (the baseline's is 1.0; tuned with the prior temperature)."""
for _option in dataclasses.fields(SearchConfig):  # each option readable as an attribute, from the config
    setattr(
        MCTSAgent,
        _option.name,
        property(
            operator.attrgetter(f"config.{_option.name}"),
            doc=f"The search's ``{_option.name}`` (:class:`SearchConfig`).",
        ),
    )
del _option

SEARCH_OPTIONS = frozenset(option.name for option in dataclasses.fields(SearchConfig))
"""The options of a search, by name (the fields of :class:`SearchConfig`)."""


def search_config(**options: Any) -> SearchConfig:
    """A :class:`SearchConfig` of ``options``; an unknown option is a one-line ``ValueError`` naming it."""
    unknown = sorted(set(options) - SEARCH_OPTIONS)
    if unknown:
        raise ValueError(f"mcts has no option {unknown[0]!r}; its options: {', '.join(sorted(SEARCH_OPTIONS))}")
    return SearchConfig(**options)


GUIDED_DEFAULTS: dict[str, float | int] = {
    "value_weight": DEFAULT_VALUE_WEIGHT,
    "batch_size": DEFAULT_BATCH_SIZE,
    "exploration": DEFAULT_GUIDED_EXPLORATION,
    "prior_temperature": DEFAULT_PRIOR_TEMPERATURE,
    "opponent_prior_temperature": DEFAULT_OPPONENT_PRIOR_TEMPERATURE,
    "root_candidates": DEFAULT_ROOT_CANDIDATES,
}
"""The guided search's settings, the same for every evaluator (a network, an ONNX file, a Python agent)."""


def opponent_prior_power(temperature: float, opponent_temperature: float | None) -> float:
    """The power that turns ``softmax(x / temperature)`` into ``softmax(x / opponent_temperature)``."""
    if opponent_temperature is None:
        return 1.0
    finite = isinstance(opponent_temperature, (int, float)) and not isinstance(opponent_temperature, bool)
    if not finite or not 0 < opponent_temperature < float("inf"):
        raise ValueError(f"opponent_prior_temperature must be a finite number > 0, got {opponent_temperature!r}")
    return float(temperature) / float(opponent_temperature)


class GuidedSearchAgent(MCTSAgent):
    """The ``mcts`` search guided by any :class:`LeafEvaluator`, with the guided search's settings.

    ``SOURCE@mcts:N`` for every kind of agent that gives a value: the
    project's networks (``kahuna_policy/search.py`` plugs in the network), ONNX
    files and Python agents (:mod:`kahuna_env.agents.external`).  The
    evaluator applies ``prior_temperature`` to its own priors; here it only
    sets, with ``opponent_prior_temperature``, how much sharper the priors are
    at the opponent's nodes.  The other arguments are :class:`MCTSAgent`'s;
    the defaults are :data:`GUIDED_DEFAULTS`.
    """

    def __init__(
        self,
        evaluator: LeafEvaluator,
        simulations: int = DEFAULT_SIMULATIONS,
        seed: int | None = None,
        name: str | None = None,
        **options: Any,
    ) -> None:
        settings = {"rollout_depth": 0, **GUIDED_DEFAULTS, **options}
        power = opponent_prior_power(settings.pop("prior_temperature"), settings.pop("opponent_prior_temperature"))
        super().__init__(simulations, seed, evaluator, opponent_prior_power=power, **settings)
        self.name = name or f"guided:{simulations}"
