"""Baseline agents for a whole :class:`~kahuna_env.vector.KahunaBatch`: ``greedy`` and ``random`` as array work.

:class:`BatchedGreedy` chooses, in every game of a batch at once, among the
same actions as the scalar :class:`~kahuna_env.agents.greedy.GreedyAgent`
(:func:`~kahuna_env.agents.greedy.best_actions`, the one definition): the
card action with the best one-ply key ``(terminal, island difference,
progress, bridge difference, -cards paid)`` when it wins or improves on the
position, else the first legal of draw, take slot 0, 1, 2, pass, else the
best card action anyway, else a discard.  Ties are broken uniformly by the
caller's generator (not the scalar agent's draws, so the two agree on the
*set*, not on the pick).  :class:`BatchedRandom` picks uniformly among the
legal actions.

Both read the real batch, as the training shortcut reads the real game
(``greedy`` decides from public information and its own hand only, so a
determinization would change nothing).  The hot path is array operations on
``(M, 27)`` per-line outcomes and the ``(M, 179)`` legal mask of the ``M``
games asked; only the rare captures (a placement taking an island and
sweeping opponent bridges) go through a second, sparse pass over the affected
(game, line) pairs.

    greedy = BatchedGreedy(seed=0)             # or make_batched_agent("greedy", seed=0)
    actions = greedy.act(batch, active, rng)   # (N,) intp; 0 where inactive or over
    batch.step(actions, active=active)
    greedy_best_masks(batch)                   # (N, 179) bool: the sets it picks from
"""

from __future__ import annotations

import numpy as np

from kahuna_env import actions as A
from kahuna_env.agents.greedy import TURN_ENDS
from kahuna_env.board import ISLAND_LINE_MASK, LINES, MAJORITY, NUM_ISLANDS, NUM_LINES
from kahuna_env.vector import KahunaBatch, sample_set_bits

__all__ = [
    "BATCHED_BASELINES",
    "BatchedAgent",
    "BatchedGreedy",
    "BatchedRandom",
    "greedy_best_masks",
    "make_batched_agent",
]

_LA, _LB = np.array(LINES, dtype=np.intp).T
"""Each line's ``a`` and ``b`` island."""
_MAJ = np.array(MAJORITY, dtype=np.int8)
_INC = np.zeros((NUM_LINES, NUM_ISLANDS), dtype=np.int32)
"""Line-island incidence: ``_INC[l, i] == 1`` when line ``l`` touches island ``i``."""
_INC[np.arange(NUM_LINES)[:, None], np.array(LINES)] = 1
_LINE_AT = np.full((NUM_ISLANDS, NUM_ISLANDS), NUM_LINES, dtype=np.intp)
"""``_LINE_AT[i, j]``: the line joining islands ``i`` and ``j``, or ``NUM_LINES`` (none)."""
_LINE_AT[_LA, _LB] = _LINE_AT[_LB, _LA] = np.arange(NUM_LINES)
_ISLAND_LINES = np.array(ISLAND_LINE_MASK, dtype=np.uint64)
_END = slice(TURN_ENDS[0], TURN_ENDS[-1] + 1)
"""The ends of a turn, in greedy's order of preference (:data:`~kahuna_env.agents.greedy.TURN_ENDS`)."""
assert tuple(range(_END.start, _END.stop)) == TURN_ENDS, "the batched greedy reads the turn ends as one slice"
_PADDED = 192
"""Candidate columns padded to three 64-bit words (179 actions + 13 unused)."""

# Keys as uint16 gains over the position now.  Every paid or free bridge adds a bridge of the player's and
# every removal takes one of the opponent's, and neither lowers the island difference or the progress (a
# placement only adds to the player's counts and majorities and only clears opponent bridges; a removal
# only clears one), so a card action that does not end the game improves on position_key() in every entry
# but never worsens one: the scalar key ordered after the position is, for such an action, the gains
# (islands 0..12, progress 0..35, bridges 1..26) in that order, then fewer cards paid (rank 2 for a free
# bridge, 1 for one card, 0 for two).  A win is above every gain, the end of the game otherwise below.
_BRIDGE_UNIT = 4
_PROGRESS_UNIT = 32 * _BRIDGE_UNIT
_ISLAND_UNIT = 36 * _PROGRESS_UNIT
_WIN = 65532
"""Key of a winning action, before its rank (a win outranks every gain: 13 * _ISLAND_UNIT <= _WIN)."""
_LOSS = 1
"""Key of an action that ends the game without a win (a removal: rank 0); 0 is for no legal action."""
_NONE = 65535
"""Matches no key."""
assert 13 * _ISLAND_UNIT <= _WIN and sum(MAJORITY) < 36


def _gain_key(islands: np.ndarray, progress: np.ndarray, bridges: np.ndarray) -> np.ndarray:
    """The key (before the rank) of a non-terminal card action gaining these over the position now."""
    return (islands * _ISLAND_UNIT + progress * _PROGRESS_UNIT + bridges * _BRIDGE_UNIT).astype(np.uint16)


def _popcount(words: np.ndarray) -> np.ndarray:
    return np.bitwise_count(words).astype(np.int32)


def _seat(array: np.ndarray, flat_index: np.ndarray) -> np.ndarray:
    """``array[g, seat]`` for an ``(N, 2, ...)`` array, given ``flat_index = 2 * g + seat`` (one per asked game)."""
    return np.take(array.reshape(-1, *array.shape[2:]), flat_index, axis=0)


def _rows(batch: KahunaBatch, active: np.ndarray | None) -> np.ndarray:
    """The games asked: the live ones among ``active`` (all when None)."""
    return np.flatnonzero(batch.live(active))


def greedy_best_masks(batch: KahunaBatch, active: np.ndarray | None = None) -> np.ndarray:
    """``(N, 179)`` bool: in every game, the actions the scalar greedy chooses among (its ``best_actions``).

    Rows of finished games and of games outside ``active`` are all False.
    """
    out = np.zeros((batch.n, A.NUM_ACTIONS), dtype=bool)
    rows = _rows(batch, active)
    if len(rows):
        out[rows] = _best_masks(batch, rows)[:, : A.NUM_ACTIONS]
    return out


def _best_masks(batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
    """Greedy's candidate set for the live games ``rows``: ``(len(rows), 192)`` bool (columns 179.. False)."""
    mask = batch.legal_masks() if len(rows) == batch.n else batch.legal_masks(rows)
    player = batch.current_player[rows].astype(np.intp)
    mine_at = 2 * rows + player
    theirs_at = mine_at ^ 1
    my_count = _seat(batch.count, mine_at)  # (M, 12) int8
    their_count = _seat(batch.count, theirs_at)
    their_lines = _seat(batch.lines, theirs_at)
    their_bridges = _popcount(their_lines)
    later_round = batch.round[rows] >= 2
    their_control = their_count >= _MAJ
    capped = np.minimum(my_count, _MAJ)

    # --- a bridge on each line (paid or free): a bridge, an island per majority it completes, a step of
    # progress per island still short of its majority and not the opponent's; then the rare captures.
    taking = my_count + 1 == _MAJ
    growing = (my_count < _MAJ) & ~their_control
    gain = (taking * np.uint16(_ISLAND_UNIT) + growing * np.uint16(_PROGRESS_UNIT)).astype(np.uint16)
    place = _per_line(gain)
    place += np.uint16(_BRIDGE_UNIT)
    place[np.flatnonzero(later_round & (their_bridges == 0))] = _WIN
    placeable = mask[:, A.PLACE_A : A.PLACE_B] | mask[:, A.PLACE_B : A.REMOVE_AB] | mask[:, A.FREE_BRIDGE :]
    sweeping = taking & (their_lines[:, None] & _ISLAND_LINES != 0)  # taking it would clear opponent bridges
    game, line = np.nonzero(placeable & (sweeping[:, _LA] | sweeping[:, _LB]))
    if len(game):
        progress = (capped * ~their_control).sum(1, dtype=np.int32)
        place[game, line] = _captures(batch, rows, game, line, taking, their_control, progress, later_round)

    # --- removing the opponent's bridge on each line: a bridge, and the majorities of theirs it breaks
    breaking = their_count == _MAJ
    loss = (breaking * (np.uint16(_ISLAND_UNIT) + capped * np.uint16(_PROGRESS_UNIT))).astype(np.uint16)
    remove = _per_line(loss)
    remove += np.uint16(_BRIDGE_UNIT)
    ended = np.flatnonzero(later_round & (their_bridges == 1))
    remove[ended] = np.where(batch.bridges[rows[ended], player[ended]] > 0, _WIN, _LOSS)[:, None]

    # --- keys of the legal card actions by line (then fewer cards paid), 0 where not legal
    place_a = mask[:, A.PLACE_A : A.PLACE_B]
    place_b = mask[:, A.PLACE_B : A.REMOVE_AB]
    remove_ab = mask[:, A.REMOVE_AB : A.REMOVE_AA]
    remove_aa = mask[:, A.REMOVE_AA : A.REMOVE_BB]
    remove_bb = mask[:, A.REMOVE_BB : A.DISCARD]
    free_bridge = mask[:, A.FREE_BRIDGE :]
    place += np.uint16(1)
    paid_place = place * (place_a | place_b)
    place += np.uint16(1)
    free = place * free_bridge
    paid_remove = remove * (remove_ab | remove_aa | remove_bb)
    best = np.maximum(np.maximum(paid_place.max(1), free.max(1)), paid_remove.max(1))
    ends = mask[:, _END]
    has_end = ends.any(1)
    use_cards = (best > _LOSS) | ((best > 0) & ~has_end)  # a win or an improvement; else a forced play
    target = np.where(use_cards, best, np.uint16(_NONE))[:, None]
    first_end = ends.copy()
    first_end[:, 1:] &= ~np.logical_or.accumulate(ends, 1)[:, :-1]
    first_end &= ~use_cards[:, None]
    discards = mask[:, A.DISCARD : A.DRAW] & ((best == 0) & ~has_end)[:, None]
    padding = np.zeros((len(rows), _PADDED - A.NUM_ACTIONS), dtype=bool)
    placing = paid_place == target
    removing = paid_remove == target
    return np.concatenate(
        [
            *(place_a & placing, place_b & placing),
            *(remove_ab & removing, remove_aa & removing, remove_bb & removing),
            *(discards, first_end, free == target, padding),
        ],
        1,
    )


def _per_line(per_island: np.ndarray) -> np.ndarray:
    """``(M, 12)`` -> ``(M, 27)``: for each line, the sum over its two islands.

    Gathers, not a float product: a BLAS call is slower here, and far slower on busy cores.
    """
    out = per_island[:, _LA]
    out += per_island[:, _LB]
    return out


def _captures(
    batch: KahunaBatch,
    rows: np.ndarray,
    game: np.ndarray,
    line: np.ndarray,
    taking: np.ndarray,
    their_control: np.ndarray,
    progress: np.ndarray,
    later_round: np.ndarray,
) -> np.ndarray:
    """Keys of placements on ``line`` in games ``game`` (indices into ``rows``) that clear opponent bridges."""
    a, b = _LA[line], _LB[line]
    take_a, take_b = taking[game, a], taking[game, b]
    g = rows[game]
    player = batch.current_player[g]
    theirs = np.zeros((len(game), NUM_LINES + 1), dtype=np.int32)  # the last column: no line
    theirs[:, :NUM_LINES] = batch.owner[g] == (1 - player)[:, None]
    # Their bridges lost on each island j: those on the lines a-j (if a is taken) and b-j (if b is taken).
    lost = np.take_along_axis(theirs, _LINE_AT[a], 1) * take_a[:, None]
    lost += np.take_along_axis(theirs, _LINE_AT[b], 1) * take_b[:, None]
    count = batch.count[g, 1 - player].astype(np.int32)
    control = their_control[game]
    kept = control & (count - lost >= _MAJ)
    mine = batch.count[g, player] + _INC[line]
    swept = lost.sum(1, dtype=np.int32)
    key = _gain_key(
        take_a.astype(np.int32) + take_b + control.sum(1) - kept.sum(1),
        (np.minimum(mine, _MAJ) * ~kept).sum(1, dtype=np.int32) - progress[game],
        1 + swept,
    )
    left = theirs.sum(1, dtype=np.int32) - swept
    return np.where(later_round[game] & (left == 0), np.uint16(_WIN), key)


class BatchedAgent:
    """An agent acting in many games of a :class:`KahunaBatch` at once (own generator, as ``SeededAgent``)."""

    name = "agent"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed the agent's generator (when ``seed`` is given)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(
        self, batch: KahunaBatch, active: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        """An action for the player to act in every game: ``(N,)`` intp, 0 where over or not ``active``.

        ``rng`` (default: the agent's own generator) breaks ties.
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class BatchedGreedy(BatchedAgent):
    """The ``greedy`` baseline over a batch: one of the scalar greedy's best actions in every game."""

    name = "greedy"

    def best_masks(self, batch: KahunaBatch, active: np.ndarray | None = None) -> np.ndarray:
        """``(N, 179)`` bool: the actions greedy chooses among in each game (:func:`greedy_best_masks`)."""
        return greedy_best_masks(batch, active)

    def act(
        self, batch: KahunaBatch, active: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        rows = _rows(batch, active)
        actions = np.zeros(batch.n, dtype=np.intp)
        if len(rows):
            words = np.packbits(_best_masks(batch, rows), axis=1, bitorder="little").view("<u8")
            actions[rows] = sample_set_bits(words, self.rng if rng is None else rng)
        return actions


class BatchedRandom(BatchedAgent):
    """The ``random`` baseline over a batch: uniform among each game's legal actions."""

    name = "random"

    def act(
        self, batch: KahunaBatch, active: np.ndarray | None = None, rng: np.random.Generator | None = None
    ) -> np.ndarray:
        # Only the games asked draw: a step in which few opponents are to move costs little.
        return batch.random_actions(self.rng if rng is None else rng, rows=_rows(batch, active))


BATCHED_BASELINES: dict[str, type[BatchedAgent]] = {"random": BatchedRandom, "greedy": BatchedGreedy}
"""The baselines with a batched form, by ``make_agent`` name (``mcts`` has none)."""


def make_batched_agent(name: str, seed: int | None = None) -> BatchedAgent:
    """The batched form of the baseline ``name`` (``random`` or ``greedy``), with its own generator."""
    if name not in BATCHED_BASELINES:
        raise ValueError(f"batched baseline agents are {', '.join(BATCHED_BASELINES)}; got {name!r}")
    return BATCHED_BASELINES[name](seed=seed)
