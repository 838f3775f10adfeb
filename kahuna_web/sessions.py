"""Games in progress on the server, the allow-listed opponents, and the replay of records; no HTTP here.

A :class:`PlaySession` is one game of a person (``seat``) against an agent
(any entrant: ``random``, ``greedy``, ``mcts:N``, or an agent file inside
the allowed directory).  It is set up exactly as ``kahuna-play`` sets up a
game (:func:`arena.play.game_seeds`: the same seed gives the same deal, the
same agent seed and the same determinizations), and every action goes
through the one play loop :func:`arena.match.play`: the person's action
first, then the agent's actions until the person is to act again or the game
is over.  The page receives only :func:`kahuna_web.views.seat_view` of the
person's seat, and the record (which holds the deal's seed) only once the
game is over or abandoned.

Every bad request raises :class:`WebError` with a one-line message and the
HTTP status the server answers with; the game is left unchanged.
"""

from __future__ import annotations

import collections
import secrets
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from arena.cli import first_line
from arena.entrants import NAMED_AGENTS, SEARCH_SUFFIX, is_checkpoint_spec, resolve_entrant, split_search
from arena.match import Chooser, agent_chooser, play
from arena.play import game_seeds
from arena.records import check_record, game_record, game_result
from arena.replay import ReplayError, replay
from kahuna_env.actions import check_action, describe_action
from kahuna_env.agents import BASELINES, Agent
from kahuna_env.engine import IllegalActionError, KahunaConfig, KahunaGame
from kahuna_web.views import action_line, public_action_text, result_text, seat_view, spectator_view

MAX_SEED = 2**63 - 1
"""Largest play seed the page may ask for."""
MAX_SPEC_LENGTH = 500
"""Longest entrant string accepted."""
MAX_AGENT_FILES = 200
"""At most this many agent files are listed from the allowed directory."""
AGENT_SUFFIXES = (".pt",)
"""Files listed as agent files (any file inside the directory can still be named)."""
NEW_GAME_FIELDS = ("opponent", "seat", "seed", "variant", "discard_rule", "handicap")
"""The fields of a new-game request."""


class WebError(ValueError):
    """A request the server refuses: a one-line message and the HTTP status (4xx) to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------------------------------------ opponents
def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def agent_file(spec: str, agents_dir: Path | None) -> Path:
    """The agent file an entrant string names, if it lies inside ``agents_dir``; :class:`WebError` otherwise.

    A relative path is looked up in ``agents_dir`` and then from the working
    directory (so ``runs/x/final_agent.pt`` works with ``--agents runs``);
    symbolic links and ``..`` are resolved before the check.  403 for a path
    outside the directory (or when no directory is allowed), 404 for a file
    that is not there.
    """
    if agents_dir is None:
        raise WebError(
            f"agent files are not allowed: {spec!r} (start kahuna-serve with --agents DIR to allow a directory)", 403
        )
    root = agents_dir.resolve()
    raw = Path(spec)
    candidates = [raw] if raw.is_absolute() else [agents_dir / raw, raw]
    inside = [c.resolve() for c in candidates if _within(c.resolve(), root)]
    for path in inside:
        if path.is_file():
            return path
    if not inside:
        raise WebError(f"{spec!r} is outside the allowed agents directory {agents_dir}", 403)
    raise WebError(f"agent file not found in {agents_dir}: {spec!r}", 404)


def list_agent_files(agents_dir: Path | None) -> list[str]:
    """Agent files (``*.pt``) inside ``agents_dir``, relative to it, sorted (at most :data:`MAX_AGENT_FILES`)."""
    if agents_dir is None or not agents_dir.is_dir():
        return []
    root = agents_dir.resolve()
    found = []
    for path in sorted(agents_dir.rglob("*")):
        if path.suffix in AGENT_SUFFIXES and path.is_file() and _within(path.resolve(), root):
            found.append(path.relative_to(agents_dir).as_posix())
            if len(found) >= MAX_AGENT_FILES:
                break
    return found


def resolve_opponent(spec: Any, agents_dir: Path | None, seed: int | None) -> Agent:
    """Build the agent an entrant string names, agent files only from ``agents_dir``; :class:`WebError` if bad."""
    if not isinstance(spec, str) or not spec.strip():
        raise WebError(f"'opponent' must be a non-empty string, got {_short(spec)}")
    spec = spec.strip()
    if len(spec) > MAX_SPEC_LENGTH:
        raise WebError(f"'opponent' is too long ({len(spec)} characters, at most {MAX_SPEC_LENGTH})")
    name = spec
    if spec.partition(":")[0] not in BASELINES and is_checkpoint_spec(spec):
        # A shipped agent (champion) loads by name, a file only from agents_dir; either may guide a search.
        try:
            source, simulations = split_search(spec)
        except ValueError as error:
            raise WebError(first_line(error)) from None
        if source not in NAMED_AGENTS:
            source = str(agent_file(source, agents_dir))
        name = source if simulations is None else f"{source}{SEARCH_SUFFIX}:{simulations}"
    try:
        return resolve_entrant(name, seed=seed)
    except FileNotFoundError as error:
        raise WebError(first_line(error), 404) from None
    except ImportError as error:
        raise WebError(f"cannot load agent file {spec!r}: {first_line(error)} (agent files need torch)") from None
    except ValueError as error:
        raise WebError(first_line(error)) from None


# ------------------------------------------------------------------------------------------------ games
def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _digits_to_int(value: Any) -> Any:
    """A string of ASCII digits (spaces around allowed) as an int; anything else unchanged."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return value


def _int_field(params: Mapping[str, Any], key: str, low: int, high: int, default: int | None) -> int | None:
    value = params.get(key, default)
    if value is None or value == "":
        return default
    value = _digits_to_int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise WebError(f"{key!r} must be an integer in {low}..{high}, got {_short(value)}")
    return value


def parse_config(params: Mapping[str, Any]) -> KahunaConfig:
    """The rule options of a new-game request (variant, discard_rule, handicap); :class:`WebError` if bad."""
    options: dict[str, Any] = {}
    for key in ("variant", "discard_rule"):
        if params.get(key) not in (None, ""):
            options[key] = params[key]
    handicap = params.get("handicap")
    if handicap not in (None, "", []):
        options["handicap"] = handicap
    try:
        return KahunaConfig.from_dict(options)
    except (TypeError, ValueError) as error:
        raise WebError(f"bad rule options: {first_line(error)}") from None


class PlaySession:
    """One game of a person in ``seat`` against an agent, as ``kahuna-play`` would set it up."""

    def __init__(
        self, session_id: str, opponent: Agent, opponent_name: str, seat: int, seed: int, config: KahunaConfig
    ) -> None:
        self.id = session_id
        self.opponent_name = opponent_name
        self.seat = seat
        self.seed = seed
        self.config = config
        self.deal_seed, agent_seed, choice_seed = game_seeds(seed)
        opponent.reset(agent_seed)
        self.game = KahunaGame(config, seed=self.deal_seed)
        self.actions: list[int] = []
        self.log: list[dict[str, Any]] = []
        self.abandoned = False
        self.lock = threading.Lock()
        self._opponent_chooser = agent_chooser(opponent, np.random.default_rng(choice_seed))

    @property
    def players(self) -> list[str]:
        """The record's ``players``: ``human`` in the person's seat, the opponent's entrant string in the other."""
        return self._names("human")

    @property
    def finished(self) -> bool:
        """Whether no more moves are taken: the game is over or the person abandoned it."""
        return self.game.is_over or self.abandoned

    def _names(self, person: str = "you") -> list[str]:
        names = [self.opponent_name, self.opponent_name]
        names[self.seat] = person
        return names

    def advance(self, action: int | None = None) -> list[dict[str, Any]]:
        """Play the person's ``action`` (if any), then the agent until the person is to act or the game ends.

        Returns the steps for the page: who acted, the text (an opponent's
        face-down discard hidden), the line acted on, and the person's view
        after the action.  An illegal action raises :class:`WebError` (422)
        before anything changes.
        """
        pending: list[int | None] = [action]

        def person(game: KahunaGame) -> int | None:
            chosen, pending[0] = pending[0], None
            return chosen

        choosers: list[Chooser] = [self._opponent_chooser, self._opponent_chooser]
        choosers[self.seat] = person
        steps: list[dict[str, Any]] = []

        def after(player: int, acted: int, game: KahunaGame) -> None:
            self.actions.append(acted)
            text = public_action_text(acted, player, self.seat)
            self.log.append({"n": len(self.actions), "player": player, "text": text})
            steps.append(
                {"player": player, "text": text, "line": action_line(acted), "state": seat_view(game, self.seat)}
            )

        try:
            play(self.game, choosers, after)
        except IllegalActionError as error:
            raise WebError(first_line(error), 422) from None
        return steps

    def move(self, action: Any) -> list[dict[str, Any]]:
        """The person plays ``action`` (an action id); :class:`WebError` for a bad or illegal one, state unchanged."""
        if self.abandoned:
            raise WebError("this game was abandoned; start a new game", 409)
        if self.game.is_over:
            raise WebError("the game is over; start a new game", 409)
        try:
            action = check_action(_digits_to_int(action))
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

    def abandon(self) -> None:
        """Stop the game where it stands (its record is then ``finished: false``)."""
        if not self.game.is_over:
            self.abandoned = True

    def state(self) -> dict[str, Any]:
        """The person's view, the log, and (once finished) the result, the seed and the record's availability."""
        view = seat_view(self.game, self.seat)
        view["log"] = list(self.log)
        view["abandoned"] = self.abandoned
        view["result"] = result_text(self.game, self._names(), self.seat) if self.game.is_over else None
        view["record_ready"] = self.finished
        view["seed"] = str(self.seed) if self.finished else None  # text: JavaScript numbers hold 53 bits
        return view

    def response(self, steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """What the API answers: the session, the steps to animate, and the current state."""
        return {
            "id": self.id,
            "seat": self.seat,
            "opponent": self.opponent_name,
            "config": self.config.to_dict(),
            "steps": steps or [],
            "state": self.state(),
        }

    def record(self) -> dict[str, Any]:
        """The game as an ``arena.records`` record (as ``kahuna-play --record`` writes); 409 while in progress."""
        if not self.finished:
            raise WebError(
                "the record is available once the game is over or abandoned (it holds the deal's seed, "
                "which would tell the hidden cards)",
                409,
            )
        return game_record(
            players=self.players,
            seed=self.deal_seed,
            config=self.config,
            actions=self.actions,
            result=game_result(self.game),
            finished=self.game.is_over,
            play_seed=self.seed,
        )


class SessionStore:
    """The games in progress, at most ``limit`` (the oldest is dropped first)."""

    def __init__(self, agents_dir: Path | None = None, limit: int = 64) -> None:
        self.agents_dir = agents_dir
        self.limit = limit
        self._sessions: collections.OrderedDict[str, PlaySession] = collections.OrderedDict()
        self._lock = threading.Lock()

    def new_game(self, params: Any) -> tuple[PlaySession, list[dict[str, Any]]]:
        """Start a game from a request body (opponent, seat, seed, variant, discard_rule, handicap).

        Returns the session and the agent's opening steps (when it moves first).
        """
        if not isinstance(params, Mapping):
            raise WebError("a new game needs a JSON object with 'opponent', 'seat', 'seed' and rule options")
        unknown = sorted(str(key) for key in params if key not in NEW_GAME_FIELDS)
        if unknown:
            raise WebError(f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(NEW_GAME_FIELDS)}")
        seat = _int_field(params, "seat", 0, 1, 0)
        seed = _int_field(params, "seed", 0, MAX_SEED, None)
        if seed is None:
            seed = secrets.randbits(32)
        config = parse_config(params)
        spec = params.get("opponent", "greedy")
        opponent = resolve_opponent(spec, self.agents_dir, seed)
        assert seat is not None
        session = PlaySession(secrets.token_urlsafe(12), opponent, spec.strip(), seat, seed, config)
        steps = session.advance()  # the agent moves first when it holds the first turn (or a handicap setup)
        with self._lock:
            self._sessions[session.id] = session
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)
        return session, steps

    def get(self, session_id: str) -> PlaySession:
        """The session ``session_id``; :class:`WebError` 404 if there is none (ended or dropped)."""
        with self._lock:
            session = self._sessions.get(session_id)
        if session is None:
            raise WebError(f"no game {session_id!r} on this server (it ended or the server restarted)", 404)
        return session


# ------------------------------------------------------------------------------------------------ replays
def replay_frames(record: Any, source: str = "record") -> dict[str, Any]:
    """Check a record with ``kahuna-replay``'s rules and return every position of it for the page.

    ``frames[k]`` is the spectator's view after ``k`` actions (``frames[0]``
    the deal); ``moves[k]`` who played action ``k + 1`` and its text.  A
    record that is malformed or does not replay raises :class:`WebError` (422).
    """
    frames: list[dict[str, Any]] = []
    moves: list[dict[str, Any]] = []

    def after(player: int, action: int, game: KahunaGame) -> None:
        moves.append({"player": player, "text": describe_action(action), "line": action_line(action)})
        frames.append(spectator_view(game))

    try:
        check_record(record, source)
        frames.append(spectator_view(KahunaGame(KahunaConfig.from_dict(record["config"]), seed=record["seed"])))
        final = replay(record, on_action=after)
    except ReplayError as error:
        raise WebError(f"{source} does not replay: {first_line(error)}", 422) from None
    except ValueError as error:
        raise WebError(first_line(error), 422) from None
    players = list(record["players"])
    return {
        "players": players,
        "seed": str(record["seed"]),  # text: a 64-bit seed does not fit a JavaScript number
        "config": record["config"],
        "finished": final.is_over,
        "result": result_text(final, players) if final.is_over else "unfinished game",
        "frames": frames,
        "moves": moves,
    }
