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

_LA = np.array([a for a, _ in LINES], dtype=np.intp)
_LB = np.array([b for _, b in LINES], dtype=np.intp)
_MAJ = np.array(MAJORITY, dtype=np.int32)
_INC = np.zeros((NUM_LINES, NUM_ISLANDS), dtype=np.int32)
"""Line-island incidence: ``_INC[l, i] == 1`` when line ``l`` touches island ``i``."""
_INC[np.arange(NUM_LINES), _LA] = 1
_INC[np.arange(NUM_LINES), _LB] = 1
_LINE_AT = np.full((NUM_ISLANDS, NUM_ISLANDS), NUM_LINES, dtype=np.intp)
"""``_LINE_AT[i, j]``: the line joining islands ``i`` and ``j``, or ``NUM_LINES`` (none)."""
_LINE_AT[_LA, _LB] = _LINE_AT[_LB, _LA] = np.arange(NUM_LINES)
_ISLAND_LINES = np.array(ISLAND_LINE_MASK, dtype=np.uint64)
_END = slice(A.DRAW, A.FREE_BRIDGE)
"""The ends of a turn, in greedy's order of preference: draw, take slot 0, 1, 2, pass."""
_PADDED = 192
"""Candidate columns padded to three 64-bit words (179 actions + 13 unused)."""

# A one-ply outcome (terminal, island difference, progress, bridge difference) as one int32 ordered as the
# tuple: terminal in -1..1, difference in -12..12 (offset 16, 5 bits), progress in 0..35 (6 bits), bridges in
# -25..25 (offset 32, 6 bits).  For a non-terminal outcome the code is linear in the entries.
_PROGRESS_UNIT = 64
_DIFFERENCE_UNIT = 64 * _PROGRESS_UNIT
_TERMINAL_UNIT = 32 * _DIFFERENCE_UNIT
_ZERO = _TERMINAL_UNIT + 16 * _DIFFERENCE_UNIT + 32
"""The code of ``(0, 0, 0, 0)``."""
assert sum(MAJORITY) < _PROGRESS_UNIT


def _code(difference: np.ndarray, progress: np.ndarray, bridges: np.ndarray) -> np.ndarray:
    """The code of the non-terminal outcome ``(0, difference, progress, bridges)``."""
    return _ZERO + difference * _DIFFERENCE_UNIT + progress * _PROGRESS_UNIT + bridges


def _terminal_code(terminal: int | np.ndarray) -> int | np.ndarray:
    """The code of a terminal outcome ``(terminal, 0, 0, 0)`` (1: a win, -1: the game ends otherwise)."""
    return _ZERO + terminal * _TERMINAL_UNIT


def _popcount(words: np.ndarray) -> np.ndarray:
    return np.bitwise_count(words).astype(np.int32)


def _seat(array: np.ndarray, flat_index: np.ndarray) -> np.ndarray:
    """``array[g, seat]`` for an ``(N, 2, ...)`` array, given ``flat_index = 2 * g + seat`` (one per asked game)."""
    return np.take(array.reshape(-1, *array.shape[2:]), flat_index, axis=0)


def _rows(batch: KahunaBatch, active: np.ndarray | None) -> np.ndarray:
    """The games asked: the live ones among ``active`` (all when None)."""
    live = ~batch.over
    if active is not None:
        active = np.asarray(active)
        if active.shape != (batch.n,) or active.dtype != bool:
            raise ValueError(f"active must be a bool array of shape ({batch.n},), got {active.dtype} {active.shape}")
        live &= active
    return np.flatnonzero(live)


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
    mask = batch.legal_masks()
    if len(rows) < batch.n:
        mask = mask[rows]
    player = batch.current[rows].astype(np.intp)
    mine_at = 2 * rows + player
    theirs_at = mine_at ^ 1
    my_count = _seat(batch.count, mine_at).astype(np.int32)  # (M, 12)
    their_count = _seat(batch.count, theirs_at).astype(np.int32)
    their_lines = _seat(batch.lines, theirs_at)
    my_bridges = _popcount(_seat(batch.lines, mine_at))
    their_bridges = _popcount(their_lines)
    later_round = batch.round[rows] >= 2

    # --- the position now: evaluate() as a code
    my_control = my_count >= _MAJ
    their_control = their_count >= _MAJ
    islands = my_control.sum(1, dtype=np.int32) - their_control.sum(1, dtype=np.int32)
    capped = np.minimum(my_count, _MAJ)
    progress = (capped * ~their_control).sum(1, dtype=np.int32)
    current = _code(islands, progress, my_bridges - their_bridges)

    # --- a bridge on each line (paid or free): +1 bridge, +1 island per majority completed, +1 progress
    # per island still short of its majority and not the opponent's; then the rare captures below.
    taking = my_count + 1 == _MAJ
    gain = taking * _DIFFERENCE_UNIT + ((my_count < _MAJ) & ~their_control) * _PROGRESS_UNIT
    place = (current + 1)[:, None] + _per_line(gain)
    ended = np.flatnonzero(later_round & (their_bridges == 0))
    place[ended] = _terminal_code(1)
    placeable = mask[:, A.PLACE_A : A.PLACE_B] | mask[:, A.PLACE_B : A.REMOVE_AB] | mask[:, A.FREE_BRIDGE :]
    sweeping = taking & (their_lines[:, None] & _ISLAND_LINES != 0)  # taking it would clear opponent bridges
    game, line = np.nonzero(placeable & (sweeping[:, _LA] | sweeping[:, _LB]))
    if len(game):
        place[game, line] = _captures(batch, rows, game, line, my_count, their_count, taking, my_bridges, later_round)

    # --- removing the opponent's bridge on each line: +1 bridge, and their majorities it breaks
    breaking = their_count == _MAJ
    loss = breaking * (_DIFFERENCE_UNIT + capped * _PROGRESS_UNIT)
    remove = (current + 1)[:, None] + _per_line(loss)
    ended = np.flatnonzero(later_round & (their_bridges == 1))
    remove[ended] = _terminal_code(np.where(my_bridges[ended] > 0, 1, -1))[:, None]

    # --- keys of the legal card actions by line (outcome, then fewer cards paid), -1 where not legal
    place_a = mask[:, A.PLACE_A : A.PLACE_B]
    place_b = mask[:, A.PLACE_B : A.REMOVE_AB]
    remove_ab = mask[:, A.REMOVE_AB : A.REMOVE_AA]
    remove_aa = mask[:, A.REMOVE_AA : A.REMOVE_BB]
    remove_bb = mask[:, A.REMOVE_BB : A.DISCARD]
    free_bridge = mask[:, A.FREE_BRIDGE :]
    place4 = place * 4
    paid_place = np.where(place_a | place_b, place4 + 1, -1)
    free = np.where(free_bridge, place4 + 2, -1)
    paid_remove = np.where(remove_ab | remove_aa | remove_bb, remove * 4, -1)
    best = np.maximum(np.maximum(paid_place.max(1), free.max(1)), paid_remove.max(1))
    has_card = best >= 0
    ends = mask[:, _END]
    has_end = ends.any(1)
    use_cards = (has_card & (best >> 2 > current)) | (has_card & ~has_end)
    target = np.where(use_cards, best, -2)[:, None]
    first_end = ends.copy()
    first_end[:, 1:] &= ~np.logical_or.accumulate(ends, 1)[:, :-1]
    first_end &= ~use_cards[:, None]
    discards = mask[:, A.DISCARD : A.DRAW] & (~use_cards & ~has_end)[:, None]
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
    return per_island[:, _LA] + per_island[:, _LB]


def _captures(
    batch: KahunaBatch,
    rows: np.ndarray,
    game: np.ndarray,
    line: np.ndarray,
    my_count: np.ndarray,
    their_count: np.ndarray,
    taking: np.ndarray,
    my_bridges: np.ndarray,
    later_round: np.ndarray,
) -> np.ndarray:
    """Codes of placements on ``line`` in games ``game`` (indices into ``rows``) that clear opponent bridges."""
    a, b = _LA[line], _LB[line]
    take_a, take_b = taking[game, a], taking[game, b]
    g = rows[game]
    theirs = np.zeros((len(game), NUM_LINES + 1), dtype=np.int32)  # the last column: no line
    theirs[:, :NUM_LINES] = batch.owner[g] == (1 - batch.current[g])[:, None]
    # Their bridges lost on each island j: those on the lines a-j (if a is taken) and b-j (if b is taken).
    lost = np.take_along_axis(theirs, _LINE_AT[a], 1) * take_a[:, None]
    lost += np.take_along_axis(theirs, _LINE_AT[b], 1) * take_b[:, None]
    count = their_count[game]
    kept = (count >= _MAJ) & (count - lost >= _MAJ)
    mine = my_count[game] + _INC[line]
    left = theirs.sum(1, dtype=np.int32) - lost.sum(1, dtype=np.int32)
    code = _code(
        (mine >= _MAJ).sum(1, dtype=np.int32) - kept.sum(1, dtype=np.int32),
        (np.minimum(mine, _MAJ) * ~kept).sum(1, dtype=np.int32),
        my_bridges[game] + 1 - left,
    )
    return np.where(later_round[game] & (left == 0), _terminal_code(1), code)


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
        rows = _rows(batch, active)
        actions = batch.random_actions(self.rng if rng is None else rng)
        out = np.zeros(batch.n, dtype=np.intp)
        out[rows] = actions[rows]
        return out


BATCHED_BASELINES: dict[str, type[BatchedAgent]] = {"random": BatchedRandom, "greedy": BatchedGreedy}
"""The baselines with a batched form, by ``make_agent`` name (``mcts`` has none)."""


def make_batched_agent(name: str, seed: int | None = None) -> BatchedAgent:
    """The batched form of the baseline ``name`` (``random`` or ``greedy``), with its own generator."""
    if name not in BATCHED_BASELINES:
        raise ValueError(f"batched baseline agents are {', '.join(BATCHED_BASELINES)}; got {name!r}")
    return BATCHED_BASELINES[name](seed=seed)
