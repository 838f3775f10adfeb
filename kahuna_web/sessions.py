"""A game in progress on the server: a person against an agent, its moves, stops and undos; no HTTP here.

A :class:`PlaySession` is one game of a person (``seat``) against an agent
(any entrant: ``random``, ``greedy``, ``mcts:N``, or an agent file inside
the allowed directory, :mod:`kahuna_web.opponents`).  It is set up exactly as ``kahuna-play`` sets up a
game (:func:`kahuna_arena.play.game_seeds`: the same seed gives the same deal, the
same agent seed and the same determinizations), and every action goes
through the one play loop :func:`kahuna_arena.match.play`: the person's action
first, then the agent's actions until the person is to act again or the game
is over.  The page receives only :func:`kahuna_web.views.seat_view` of the
person's seat, and the record (which holds the deal's seed) only once the
game is over or abandoned.

Every bad request raises :class:`~kahuna_web.validate.WebError` with a one-line message and the
HTTP status the server answers with; the game is left unchanged.

A game's agent thinks only when asked (a new game whose
agent opens, a move) and stops within a simulation once the game's
:class:`CancelFlag` is set (the page left, the game was abandoned, the
server is stopping); the game is then abandoned.  Asked to stop
(:meth:`PlaySession.stop`), its search ends at the next simulation instead
and it plays its best move so far (:func:`kahuna_web.opponents.best_move_so_far`), for the rest
of its turn.  The person may take back the actions of their own turn in progress, one at a time, never
an end action (a draw, a take, a pass) nor anything across the agent's turn
(:meth:`PlaySession.undo`): undoing shows them nothing they had not seen.  A game rebuilt from the game
store replays its actions with the one replayer (:func:`kahuna_arena.records.replay_actions`).
The games held, their owners and caps are :mod:`kahuna_web.sessionstore`'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kahuna_arena.match import Chooser, agent_chooser, play
from kahuna_arena.play import game_seeds
from kahuna_arena.records import ReplayError, game_record, replay_actions
from kahuna_arena.records import game_result as game_result_of
from kahuna_env.actions import check_action, describe_action
from kahuna_env.agents import Agent, MCTSAgent
from kahuna_env.agents.mcts import SearchCancelled
from kahuna_env.cli import first_line
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_web.gamestore import GameStoreError, StoredGame
from kahuna_web.opponents import best_move_so_far
from kahuna_web.replays import undo_note
from kahuna_web.validate import WebError, digits_to_int
from kahuna_web.views import action_summary, game_result, last_turn, public_facts, seat_view


class CancelFlag:
    """A one-way flag another thread may set, read by a search before every simulation.

    A plain attribute rather than a :class:`threading.Event`: setting it takes
    no lock, so a signal handler may set it whatever the thread it interrupts holds.
    """

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        """Raise the flag (it is never lowered)."""
        self._set = True

    def is_set(self) -> bool:
        """Whether the flag was raised."""
        return self._set


class _SearchFlag:
    """The flag a game's searching agent reads: set when the game is cancelled or the person asked it to stop."""

    __slots__ = ("_session",)

    def __init__(self, session: PlaySession) -> None:
        self._session = session

    def is_set(self) -> bool:
        return self._session.cancel.is_set() or self._session.stopping


Snapshot = tuple[list[int], list[dict[str, Any]], bool, str]
"""A game as :meth:`PlaySession._snapshot` keeps it: actions, undo marks, abandoned, owner."""


def _continuation_seeds(seed: int, ply: int, undos: int) -> tuple[int, int]:
    """(agent seed, determinization seed) of an agent taking over a game rebuilt at ``ply`` (a reload, an undo)."""
    values = np.random.SeedSequence([seed, ply, undos, 1]).generate_state(2, dtype=np.uint64)
    return int(values[0]), int(values[1])


class PlaySession:
    """One game of a person in ``seat`` against an agent, as ``kahuna-play`` would set it up.

    ``actions`` and ``undos`` rebuild a stored game (:mod:`kahuna_web.gamestore`):
    the actions are replayed from the seed; the agent then goes on with
    generators derived from the seed and the ply (:func:`_continuation_seeds`),
    so a game reloaded or taken back continues the same way every time.

    Attributes:
        cancel: set to stop the agent's thinking (within a simulation); the game is then abandoned.
        stopping: the person asked the agent to move now (``POST .../stop``): its search ends
            and it plays its best move so far, for the rest of its turn.  Also when asked while the
            move still waits in the bot queue: it is cleared when that computation ends, not when
            it starts.
        thinking: the agent is choosing a move.
        failed: why the game was forgotten when its opening could not be kept (:meth:`SessionStore.fail
            <kahuna_web.sessionstore.SessionStore.fail>`): a request that reached the game before then answers it.
        move_pending: a move of the game is being computed or waits in the bot queue (set by
            :meth:`freeze`, cleared by :meth:`computation_ended`).
        owner: :func:`kahuna_web.owners.owner_key` of the owner token of the browser that created it.
        client: the address of the client that started the game.
        last_used: the store's clock when the game was last asked for.
        lock: held while a move of the game is being computed.
        summaries: what every action did, as the person may know it (:func:`kahuna_web.views.action_summary`).
        undos: the undo marks, ``{"ply", "actions"}`` (the actions taken back from that ply on).
    """

    def __init__(
        self,
        session_id: str,
        opponent: Agent,
        opponent_name: str,
        seat: int,
        seed: int,
        config: KahunaConfig,
        client: str = "",
        actions: Sequence[int] = (),
        undos: Sequence[dict[str, Any]] = (),
        abandoned: bool = False,
        saver: Callable[[StoredGame], None] | None = None,
        owner: str = "",
    ) -> None:
        self.id = session_id
        self.owner = owner
        self.client = client
        self.last_used = 0.0
        self.cancel = CancelFlag()
        self.stopping = False
        self.thinking = False
        self.failed: WebError | None = None
        self.move_pending = False
        self.thinking_since = 0.0
        self.searches = isinstance(opponent, MCTSAgent)
        """Whether the agent searches (its moves are computed in the bounded bot queue)."""
        if isinstance(opponent, MCTSAgent):
            opponent.cancel = _SearchFlag(self)
        self.opponent = opponent
        self.opponent_name = opponent_name
        self.seat = seat
        self.seed = seed
        self.config = config
        self.deal_seed, self._agent_seed, self._choice_seed = game_seeds(seed)
        self.undos: list[dict[str, Any]] = [dict(mark) for mark in undos]
        self.abandoned = False
        self.created = 0.0
        self.lock = threading.Lock()
        self._saver = saver
        self._rebuild(list(actions))
        self.abandoned = abandoned and not self.game.is_over
        self.freeze(thinking=False)

    # -------------------------------------------------------------------------------------------- building
    def _rebuild(self, actions: list[int]) -> None:
        """The game from its deal with ``actions`` replayed; the agent set to go on from there."""
        self.game = KahunaGame(self.config, seed=self.deal_seed)
        self.actions: list[int] = []
        self.summaries: list[dict[str, Any]] = []
        try:
            replay_actions(self.game, actions, self._noter())
        except ReplayError:
            raise WebError(f"stored game {self.id[:40]!r} does not replay (an illegal action)", 422) from None
        if actions or self.undos:
            agent_seed, choice_seed = _continuation_seeds(self.seed, len(actions), len(self.undos))
        else:
            agent_seed, choice_seed = self._agent_seed, self._choice_seed
        self.opponent.reset(agent_seed)
        self._rng = np.random.default_rng(choice_seed)
        self._opponent_chooser = agent_chooser(self.opponent, self._rng)

    def _noter(self) -> Callable[[int, int, KahunaGame], dict[str, Any]]:
        """The callback that notes each action played on :attr:`game` from now on (:meth:`_note`); its summary."""
        before = [public_facts(self.game)]

        def note(player: int, action: int, game: KahunaGame) -> dict[str, Any]:
            summary = self._note(before[0], player, action)
            before[0] = public_facts(game)
            return summary

        return note

    def _snapshot(self) -> Snapshot:
        """What :meth:`_restore` needs to put the game back as it is now (a change that could not be stored)."""
        return list(self.actions), [dict(mark) for mark in self.undos], self.abandoned, self.owner

    def _restore(self, snapshot: Snapshot) -> None:
        actions, undos, abandoned, owner = snapshot
        self.undos, self.owner = undos, owner
        self._rebuild(actions)
        self.abandoned = abandoned

    def _note(self, before: Any, player: int, action: int) -> dict[str, Any]:
        self.actions.append(action)
        summary = action_summary(before, self.game, action, player, self.seat)
        self.summaries.append(summary)
        return summary

    # -------------------------------------------------------------------------------------------- properties
    @property
    def players(self) -> list[str]:
        """The record's ``players``: ``human`` in the person's seat, the opponent's entrant string."""
        return self._names("human")

    def notes(self) -> list[str]:
        """What the page shows under the game besides the board: the undos (``you took moves back ...``)."""
        return [undo_note("you", [mark["ply"] for mark in self.undos])] if self.undos else []

    @property
    def finished(self) -> bool:
        """Whether no more moves are taken: the game is over or the person abandoned it."""
        return self.game.is_over or self.abandoned

    @property
    def status(self) -> str:
        """``playing``, ``over`` or ``abandoned`` (the stored status)."""
        return "over" if self.game.is_over else "abandoned" if self.abandoned else "playing"

    @property
    def agent_to_act(self) -> bool:
        """Whether the agent is to act now (its opening: it holds the first turn or a handicap setup)."""
        return not self.finished and self.game.current_player != self.seat

    def _names(self, person: str = "you") -> list[str]:
        names = [self.opponent_name, self.opponent_name]
        names[self.seat] = person
        return names

    # -------------------------------------------------------------------------------------------- playing
    def advance(self, action: int | None = None) -> list[dict[str, Any]]:
        """Play the person's ``action`` (if any), then the agent until the person is to act or the game ends.

        Returns the steps for the page: who acted, what it did (the summary of
        :func:`kahuna_web.views.action_summary`: an opponent's face-down
        discard hidden) and the person's view after the action.  An illegal
        action raises :class:`WebError` (422) before anything changes.  The
        game is saved afterwards (:meth:`commit`: 503 and nothing played if it cannot be).
        """
        pending: list[int | None] = [action]

        def person(game: KahunaGame) -> int | None:
            self.thinking = False
            chosen, pending[0] = pending[0], None
            return chosen

        def agent(game: KahunaGame) -> int | None:
            if self.cancel.is_set():
                return None
            if not self.thinking:
                self.thinking_since = time.monotonic()
            self.thinking = True
            return self._agent_move(game)

        choosers: list[Chooser] = [agent, agent]
        choosers[self.seat] = person
        snapshot = self._snapshot()
        steps: list[dict[str, Any]] = []
        note = self._noter()

        def after(player: int, acted: int, game: KahunaGame) -> None:
            summary = note(player, acted, game)
            steps.append({**summary, "state": seat_view(game, self.seat)})
            self.freeze()  # what a reload of the page shows while the agent goes on

        try:
            play(self.game, choosers, after)
        except IllegalActionError as error:
            raise WebError(first_line(error), 422) from None
        except SearchCancelled:
            pass  # the flag is set: abandoned below
        finally:
            self.computation_ended()
        if self.cancel.is_set() and not self.game.is_over:
            self.abandoned = True
        self.commit(snapshot)
        return steps

    def _agent_move(self, game: KahunaGame) -> int:
        """The agent's move; a search the person stopped plays its best move so far (:func:`best_move_so_far`)."""
        if self.stopping and self.searches:
            return best_move_so_far(self.opponent, game, self._rng)
        try:
            return self._opponent_chooser(game)
        except SearchCancelled as stopped:
            if self.cancel.is_set() or not self.stopping:
                raise
            found = getattr(getattr(stopped, "result", None), "move", None)
            return best_move_so_far(self.opponent, game, self._rng, found)

    def move(self, action: Any) -> list[dict[str, Any]]:
        """The person plays ``action`` (an action id); :class:`WebError` for a bad or illegal one, state unchanged."""
        self._check_playable()
        try:
            action = check_action(digits_to_int(action))
        except ValueError as error:
            raise WebError(first_line(error)) from None
        if self.game.current_player != self.seat:  # not reachable through advance(), kept as a guard
            raise WebError("it is not your turn", 409)
        if not self.game.is_legal(action):
            try:
                self.game.clone().step(action)
            except IllegalActionError as error:
                raise WebError(first_line(error), 422) from None
            raise WebError(f"action {action} ({describe_action(action)}) is not legal now", 422)
        return self.advance(action)

    def _check_playable(self) -> None:
        if self.abandoned or self.cancel.is_set():
            raise WebError("this game was abandoned; start a new game", 409)
        if self.game.is_over:
            raise WebError("the game is over; start a new game", 409)

    def undoable(self) -> bool:
        """Whether :meth:`undo` may take back the person's last action now (see there)."""
        return (
            not self.finished
            and self.game.current_player == self.seat
            and bool(self.summaries)
            and self.summaries[-1]["player"] == self.seat
        )

    def undo(self) -> None:
        """Take back the person's last action, one of their turn in progress; 409 when there is none.

        Only an action of the person's own turn that is still theirs to play may be taken back: the
        card phase's plays and discards, which show nothing hidden.  The end action that brings a hidden card
        to light (a draw, or a take whose slot is refilled from the pile) or ends the turn (a pass) hands the turn
        to the agent, whose replies would tell its cards: after it nothing is taken back.  So undoing never lets
        the person see two outcomes of one decision (docs/WEB.md, "Analysis board, hint, undo").  The
        taken-back action is kept as an undo mark (:attr:`undos`), and the record holds it (its ``undos`` field).
        """
        self._check_playable()
        if not self.undoable():
            if not any(summary["player"] == self.seat for summary in self.summaries):
                raise WebError("nothing to undo: you have not played yet", 409)
            raise WebError(
                "nothing to undo: only the plays and discards of your turn in progress can be taken back, "
                "not a draw, a take or a pass, nor anything before the opponent's turn",
                409,
            )
        ply = len(self.summaries) - 1
        snapshot = self._snapshot()
        self.undos.append({"ply": ply, "actions": self.actions[ply:]})
        self._rebuild(self.actions[:ply])
        self.commit(snapshot)

    def stop(self) -> None:
        """Ask the thinking agent to move now (its best move so far); 409 when no move is being computed.

        A move still waiting in the bot queue counts: its agent then plays at once when its turn comes.
        """
        if not (self.thinking or self.move_pending):
            raise WebError("the agent is not thinking: there is nothing to stop", 409)
        self.stopping = True

    def computation_ended(self) -> None:
        """A computation of the game ended (or never started): nothing thinks, and no stop is left over."""
        self.thinking = False
        self.move_pending = False
        self.stopping = False

    def abandon(self) -> None:
        """Stop the game where it stands (its record is then ``finished: false``); 503 if it cannot be stored."""
        if not self.game.is_over and not self.abandoned:
            snapshot = self._snapshot()
            self.abandoned = True
            self.commit(snapshot)

    def claim(self, owner: str) -> None:
        """Make a game stored before games had owners ``owner``'s (the first browser that opens it)."""
        snapshot = self._snapshot()
        self.owner = owner
        self.commit(snapshot)

    # -------------------------------------------------------------------------------------------- storing
    def stored(self) -> StoredGame:
        """The game as the game store keeps it."""
        return StoredGame(
            id=self.id,
            owner=self.owner,
            client=self.client,
            opponent=self.opponent_name,
            seat=self.seat,
            seed=self.seed,
            config=self.config.to_dict(),
            actions=list(self.actions),
            undos=[dict(mark) for mark in self.undos],
            status=self.status,
            created=self.created,
        )

    def commit(self, snapshot: Snapshot | None = None) -> None:
        """Store the game (when the session has a store); if it cannot be, put it back as ``snapshot`` and refuse.

        The refusal is :class:`WebError` 503 ``not saved: CAUSE`` (``disk full``, ...): the change it
        was for is then not in memory either, so nothing unstored is ever answered 2xx.
        """
        if self._saver is None:
            return
        try:
            self._saver(self.stored())
        except GameStoreError as error:
            if snapshot is not None:
                self._restore(snapshot)
            raise WebError(f"not saved: {error}", error.status) from None

    # -------------------------------------------------------------------------------------------- answers
    def state(self) -> dict[str, Any]:
        """The person's view, the log, the opponent's last turn and (once finished) the result and the seed."""
        view = seat_view(self.game, self.seat)
        view["log"] = [
            {"n": n, "player": summary["player"], "text": summary["text"]}
            for n, summary in enumerate(self.summaries, start=1)
        ]
        view["turn_summary"] = last_turn(self.summaries, 1 - self.seat)
        view["thinking"] = self.thinking
        view["abandoned"] = self.abandoned
        over = self.game.is_over
        view["result"] = game_result(self.game, self._names(), self.seat, self.summaries) if over else None
        view["result_text"] = view["result"]["text"] if over else None
        view["record_ready"] = self.finished
        view["seed"] = str(self.seed) if self.finished else None  # text: JavaScript numbers hold 53 bits
        view["can_undo"] = self.undoable()
        view["undos"] = len(self.undos)
        return view

    def response(self, steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """What the API answers: the session, the steps to animate, and the current state (or why it was forgotten)."""
        if self.failed is not None:
            raise self.failed
        return {
            "id": self.id,
            "seat": self.seat,
            "opponent": self.opponent_name,
            "config": self.config.to_dict(),
            "steps": steps or [],
            "state": self.state(),
            "notes": self.notes(),
        }

    def thinking_response(self) -> dict[str, Any]:
        """What ``GET`` answers while a move is computed: the position before it, ``thinking``, nothing to play.

        Built from the game as it stood when the computation began (the
        game itself changes in another thread meanwhile).
        """
        if self.failed is not None:
            raise self.failed
        frozen = self._frozen
        if self.thinking:
            seconds = round(time.monotonic() - self.thinking_since, 1)
            state = {**frozen["state"], "thinking": True, "legal": [], "thinking_seconds": seconds}
            frozen = {**frozen, "state": state}
        return frozen

    def freeze(self, thinking: bool = True) -> None:
        """Keep :meth:`response` as it is now for :meth:`thinking_response` (before a computation, after each step).

        ``thinking``: a move is being computed (nothing may be played
        meanwhile); otherwise an analysis, which changes nothing.
        """
        frozen = self.response()
        if thinking:
            frozen["state"]["legal"] = []
            frozen["state"]["thinking"] = True
            self.move_pending = True
        self._frozen = frozen

    def record(self) -> dict[str, Any]:
        """The game as a ``kahuna_arena.records`` record (as ``kahuna-play --record`` writes); 409 in progress."""
        if not self.finished:
            raise WebError(
                "the record is available once the game is over or abandoned (it holds the deal's seed, "
                "which would tell the hidden cards)",
                409,
            )
        extra: dict[str, Any] = {}
        if self.undos:
            extra["undos"] = [{"player": self.seat, **mark} for mark in self.undos]
        return game_record(
            players=self.players,
            seed=self.deal_seed,
            config=self.config,
            actions=self.actions,
            result=game_result_of(self.game),
            finished=self.game.is_over,
            play_seed=self.seed,
            **extra,
        )
