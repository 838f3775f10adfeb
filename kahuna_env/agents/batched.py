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

    greedy = BatchedGreedy()
    actions = greedy.act(batch, active, rng)   # (N,) intp; 0 where inactive or over
    batch.step(actions, active=active)
"""

from __future__ import annotations

import numpy as np

from kahuna_env import actions as A
from kahuna_env.board import ISLAND_LINE_MASK, LINES, MAJORITY, NUM_ISLANDS, NUM_LINES
from kahuna_env.vector import KahunaBatch

__all__ = ["BatchedGreedy", "BatchedRandom", "greedy_best_masks", "uniform_choice"]

_LA = np.array([a for a, _ in LINES], dtype=np.intp)
_LB = np.array([b for _, b in LINES], dtype=np.intp)
_MAJ = np.array(MAJORITY, dtype=np.int32)
_MAJ_A = _MAJ[_LA]
_MAJ_B = _MAJ[_LB]
_INC = np.zeros((NUM_LINES, NUM_ISLANDS), dtype=np.int32)
"""Line-island incidence: ``_INC[l, i] == 1`` when line ``l`` touches island ``i``."""
_INC[np.arange(NUM_LINES), _LA] = 1
_INC[np.arange(NUM_LINES), _LB] = 1
_INC_F = _INC.astype(np.float32)
_TOUCH_A = np.array(ISLAND_LINE_MASK, dtype=np.uint64)[_LA]
"""For each line, the lines touching its ``a`` island (a 27-bit set)."""
_TOUCH_B = np.array(ISLAND_LINE_MASK, dtype=np.uint64)[_LB]
_LINE_SHIFT = np.arange(NUM_LINES, dtype=np.uint64)
_END_ACTIONS = np.array([A.DRAW, A.TAKE, A.TAKE + 1, A.TAKE + 2, A.PASS], dtype=np.intp)
"""The ends of a turn in greedy's order of preference."""

# A one-ply outcome (terminal, island difference, progress, bridge difference) as one integer,
# ordered as the tuple: terminal in -1..1, difference in -12..12, progress in 0..35, bridges in -25..25.
_DIFF_OFFSET, _DIFF_RANGE = 16, 32
_PROGRESS_RANGE = 64
_BRIDGE_OFFSET, _BRIDGE_RANGE = 32, 64
assert sum(MAJORITY) < _PROGRESS_RANGE


def _encode(terminal: np.ndarray, difference: np.ndarray, progress: np.ndarray, bridges: np.ndarray) -> np.ndarray:
    """The outcome tuple as an int32 ordered lexicographically; a terminal outcome's other entries count as 0."""
    playing = terminal == 0
    difference = np.where(playing, difference, 0) + _DIFF_OFFSET
    progress = np.where(playing, progress, 0)
    bridges = np.where(playing, bridges, 0) + _BRIDGE_OFFSET
    return (((terminal + 1) * _DIFF_RANGE + difference) * _PROGRESS_RANGE + progress) * _BRIDGE_RANGE + bridges


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
        out[rows] = _best_masks(batch, rows)
    return out


def _best_masks(batch: KahunaBatch, rows: np.ndarray) -> np.ndarray:
    """Greedy's candidate set for the live games ``rows``: ``(len(rows), 179)`` bool."""
    m = len(rows)
    mask = batch.legal_masks()[rows]
    player = batch.current[rows].astype(np.intp)
    mine_at = 2 * rows + player
    theirs_at = mine_at ^ 1
    my_count = _seat(batch.count, mine_at).astype(np.int32)  # (M, 12)
    their_count = _seat(batch.count, theirs_at).astype(np.int32)
    my_lines = _seat(batch.lines, mine_at)  # (M,) uint64
    their_lines = _seat(batch.lines, theirs_at)
    my_bridges = _popcount(my_lines)
    their_bridges = _popcount(their_lines)
    later_round = batch.round[rows] >= 2

    my_control = my_count >= _MAJ
    their_control = their_count >= _MAJ
    my_islands = my_control.sum(1, dtype=np.int32)
    their_islands = their_control.sum(1, dtype=np.int32)
    capped = np.minimum(my_count, _MAJ)
    progress = (capped * ~their_control).sum(1, dtype=np.int32)
    current = _encode(np.zeros(m, dtype=np.int32), my_islands - their_islands, progress, my_bridges - their_bridges)

    # --- a bridge on each line (a paid placement or a free bridge), before any capture sweep
    count_a = my_count[:, _LA]  # (M, 27)
    count_b = my_count[:, _LB]
    take_a = count_a + 1 == _MAJ_A
    take_b = count_b + 1 == _MAJ_B
    grow_a = (count_a < _MAJ_A) & ~their_control[:, _LA]
    grow_b = (count_b < _MAJ_B) & ~their_control[:, _LB]
    p_difference = (my_islands - their_islands)[:, None] + take_a + take_b
    p_progress = progress[:, None] + grow_a + grow_b
    p_bridges = np.broadcast_to((my_bridges + 1 - their_bridges)[:, None], (m, NUM_LINES))
    p_terminal = np.broadcast_to((later_round & (their_bridges == 0)).astype(np.int32)[:, None], (m, NUM_LINES))
    zero = np.uint64(0)
    swept = their_lines[:, None] & (np.where(take_a, _TOUCH_A, zero) | np.where(take_b, _TOUCH_B, zero))
    place = _encode(p_terminal, p_difference, p_progress, p_bridges)
    game, line = np.nonzero(swept)
    if len(game):  # captures: the opponent's bridges on the taken islands' lines leave the board
        sweep = swept[game, line]
        removed = ((sweep[:, None] >> _LINE_SHIFT) & np.uint64(1)).astype(np.float32)  # (K, 27)
        lost = (removed @ _INC_F).astype(np.int32)  # (K, 12) bridges lost per island
        kept = their_control[game] & (their_count[game] - lost >= _MAJ)
        count = my_count[game] + _INC[line]
        left = their_bridges[game] - _popcount(sweep)
        place[game, line] = _encode(
            (later_round[game] & (left == 0)).astype(np.int32),
            my_islands[game] + take_a[game, line] + take_b[game, line] - kept.sum(1, dtype=np.int32),
            (np.minimum(count, _MAJ) * ~kept).sum(1, dtype=np.int32),
            my_bridges[game] + 1 - left,
        )

    # --- removing the opponent's bridge on each line
    lose_a = their_count[:, _LA] == _MAJ_A
    lose_b = their_count[:, _LB] == _MAJ_B
    r_terminal = np.where(later_round & (their_bridges == 1), np.where(my_bridges > 0, 1, -1), 0)
    remove = _encode(
        np.broadcast_to(r_terminal[:, None], (m, NUM_LINES)),
        (my_islands - their_islands)[:, None] + lose_a + lose_b,
        progress[:, None] + lose_a * capped[:, _LA] + lose_b * capped[:, _LB],
        np.broadcast_to((my_bridges - their_bridges + 1)[:, None], (m, NUM_LINES)),
    )

    # --- keys of the card actions (outcome, then fewer cards paid), -1 where not a legal card action
    keys = np.full((m, A.NUM_ACTIONS), -1, dtype=np.int32)
    keys[:, A.PLACE_A : A.PLACE_B] = keys[:, A.PLACE_B : A.REMOVE_AB] = place * 4 + 1
    keys[:, A.REMOVE_AB : A.DISCARD] = np.tile(remove * 4, 3)
    keys[:, A.FREE_BRIDGE :] = place * 4 + 2
    keys[~mask] = -1
    best = keys.max(1)
    has_card = best >= 0
    improves = has_card & (best // 4 > current)
    ends = mask[:, _END_ACTIONS]
    has_end = ends.any(1)
    use_cards = improves | (has_card & ~has_end)
    out = (keys == best[:, None]) & use_cards[:, None]
    ending = np.flatnonzero(~use_cards & has_end)
    out[ending, _END_ACTIONS[ends[ending].argmax(1)]] = True
    discarding = ~use_cards & ~has_end
    out[:, A.DISCARD : A.DRAW] |= mask[:, A.DISCARD : A.DRAW] & discarding[:, None]
    return out


def uniform_choice(candidates: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random True column per row of a 2-d bool array (0 for a row with none)."""
    counts = candidates.sum(1)
    pick = (rng.random(len(candidates)) * counts).astype(np.int64)
    return np.argmax(candidates.cumsum(1, dtype=np.int16) > pick[:, None], axis=1)


class _BatchedAgent:
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


class BatchedGreedy(_BatchedAgent):
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
            actions[rows] = uniform_choice(_best_masks(batch, rows), self.rng if rng is None else rng)
        return actions


class BatchedRandom(_BatchedAgent):
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
