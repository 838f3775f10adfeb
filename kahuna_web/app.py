"""The Starlette application of ``kahuna-serve``: the page, its static files and the JSON API (docs/WEB.md).

===========================================  =====================================================
route                                        what it does
===========================================  =====================================================
``GET /``                                    the page (``static/index.html``)
``GET /api/board``                           board geometry, player colours, opponents, rule options
``POST /api/games``                          a new game (opponent, seat, seed, rules); the agent's first moves (or 202)
``GET /api/games/{id}``                      the game from the person's seat
``POST /api/games/{id}/move``                ``{"action": id}``; then the agent's actions until it is your turn
``POST /api/games/{id}/stop``                the thinking agent plays its best move so far
``POST /api/games/{id}/undo``                take back your last play or discard of your turn in progress
``POST /api/games/{id}/rematch``             ``{"swap_seats": bool}``: a new game, same opponent and rules
``GET /api/games/{id}/analysis``             the agent's probabilities, value and search for your turn
``POST /api/games/{id}/hint``                the agent's top move for your turn
``POST /api/games/{id}/abandon``             stop the game (its record can then be downloaded)
``GET /api/games/{id}/record``               the record (``kahuna-replay`` reads it), once the game is over
``POST /api/analysis``                       the analysis of a record's position (given, by name or game id)
``GET /api/rules``                           the players' rulebook (``static/RULEBOOK.md``) as sections for the panel
``GET /api/records``                         the records in ``--records DIR``
``GET /api/records/{name}``                  every position of a record in that folder
``POST /api/replay``                         every position of an uploaded record
``GET /api/results``                         the ``--results`` files, as tables
``POST /api/results``                        an uploaded ``kahuna-eval --json`` file, as tables
``GET /api/ladder``                           the ladder of the ``--db`` results store (kahuna-ratings), runs' Elo
===========================================  =====================================================

Every refusal is a 4xx with ``{"error": "one line"}`` (503 when the server
is full or stopping, or when a change cannot be stored: ``not saved:
CAUSE``) and leaves every game unchanged; no answer shows an absolute
server path or a file's content.  A game belongs to the browser that
created it (the owner cookie of :class:`kahuna_web.owners.OwnerCookie`):
any other browser gets the 404 of a game that does not exist, except for
a finished game's record.  POST bodies must be JSON
(``Content-Type: application/json``, which a foreign web page cannot send
without a CORS permission this server never grants; no NaN or Infinity) and
at most ``max_upload`` bytes (413 beyond).  When bound to a loopback address
the server answers only requests whose ``Host`` is a loopback name (no DNS
rebinding).  A searching agent thinks in the bounded :class:`BotQueue`, and
stops within a simulation when its client leaves, its game is abandoned or
the server stops (docs/WEB.md, Threat model).

:func:`create_app` builds the application from groups of routes (the page,
play, control of a game, analysis, records, results, the ladder), each a
function below, in named steps.  Games are kept in the game store it is
given (``kahuna-serve --data DIR``), so they survive a reload and a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from kahuna_arena.entrants import folder_label, parse_entrant
from kahuna_arena.records import read_record
from kahuna_env.cli import first_line
from kahuna_env.engine import DISCARD_RULES, VARIANTS
from kahuna_web.analysis import AnalysisAgents, analyse, analysis_options, top_move
from kahuna_web.compute import DEFAULT_WAITING, DEFAULT_WORKERS, BotQueue
from kahuna_web.gamestore import GameStore
from kahuna_web.opponents import DEFAULT_MAX_GUIDED_SIMULATIONS, DEFAULT_MAX_SIMULATIONS, list_agent_files
from kahuna_web.owners import OWNER_SCOPE_KEY, OwnerCookie, owner_key
from kahuna_web.replays import record_position, replay_frames
from kahuna_web.results import results_tables
from kahuna_web.rulebook import read_rules
from kahuna_web.sessions import CancelFlag, PlaySession
from kahuna_web.sessionstore import DEFAULT_CAPS, DEFAULT_GAME_LIMIT, DEFAULT_IDLE_SECONDS, Caps, SessionStore
from kahuna_web.validate import WebError, lone_surrogate, parse_json
from kahuna_web.views import board_geometry

STATIC = Path(__file__).resolve().parent / "static"
"""The page's files: index.html, app.js, style.css."""
DEFAULT_MAX_UPLOAD = 2 * 1024 * 1024
"""Largest request body accepted, in bytes (a long record is about 2 kB)."""
MAX_LISTED_RECORDS = 500
"""At most this many records of ``--records DIR`` are listed."""
MAX_NAME_LENGTH = 255
"""Longest record name accepted in a request (a file name's limit on most systems)."""
OPPONENT_CHOICES = (
    "greedy",
    "random",
    "mcts:50",
    "mcts",
    "mcts:800",
    "champion",
    "champion@mcts:25",
    "champion@mcts:50",
)
"""Opponents the page's list may offer: the baselines and the shipped champion, raw and guiding a search; only
those within the server's simulation caps are offered (any entrant string can be typed)."""
CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
"""The page's Content-Security-Policy: its own files only, no inline scripts, not framed by other sites."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
"""``Host`` names accepted when the server listens on a loopback address."""
DISCONNECT_POLL = 0.1
"""Seconds between two checks that the client waiting for an agent's move is still there."""
ABANDON_WAIT = 5.0
"""Seconds ``abandon`` waits for a cancelled computation to return (it takes at most one simulation)."""
LOG = logging.getLogger("uvicorn.error")
"""The server's log (uvicorn's: one line per event, at ``warning`` and above as kahuna-serve runs it)."""


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def read_json(request: Request, limit: int) -> Any:
    """The request body as JSON; :class:`WebError` for a wrong type (415), too large (413) or not JSON (400)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise WebError(
            f"the request body must be JSON (Content-Type: application/json), got {kind[:40] or 'none'!r}", 415
        )
    length = request.headers.get("content-length", "")
    if length.isascii() and length.isdigit() and len(length) < 20 and int(length) > limit:
        raise WebError(f"upload too large: {int(length)} bytes, at most {limit} bytes", 413)
    body = bytearray()
    async for chunk in request.stream():  # ClientDisconnect when the client leaves: one line (_client_left)
        body += chunk
        if len(body) > limit:
            raise WebError(f"upload too large: more than {limit} bytes", 413)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise WebError("the upload is not UTF-8 text", 400) from None
    try:
        return parse_json(text)
    except RecursionError:
        raise WebError("the upload is not usable JSON: nested too deeply", 400) from None
    except ValueError as error:
        reason = first_line(error)
        if "integer string conversion" in reason:  # Python's own limit, with advice meant for programmers
            reason = "a number has more than 4300 digits"
        raise WebError(f"the upload is not JSON: {reason}", 400) from None


def offered_opponents(max_simulations: int, max_guided_simulations: int) -> list[str]:
    """The :data:`OPPONENT_CHOICES` within the simulation caps (what the page's list offers)."""
    offered = []
    for choice in OPPONENT_CHOICES:
        try:
            parse_entrant(choice, None, max_simulations, max_guided_simulations)
        except ValueError:
            continue
        offered.append(choice)
    return offered


def _client(request: Request) -> str:
    """The client's address: the socket's (a proxy's ``X-Forwarded-For`` only with ``kahuna-serve --proxy-headers``)."""
    return request.client.host if request.client is not None else "unknown"


def _owner(request: Request) -> str:
    """The asking owner: :func:`~kahuna_web.owners.owner_key` of the request's owner token (:class:`OwnerCookie`)."""
    return owner_key(request.scope[OWNER_SCOPE_KEY])


async def _game(request: Request, store: SessionStore, record: bool = False) -> PlaySession:
    """The game of the path, if it is the asking owner's (404 otherwise; ``record``: also a finished game's)."""
    return await run_in_threadpool(store.get, request.path_params["game"], _owner(request), record)


def download_headers(opponent: str, seed: int) -> dict[str, str]:
    """The ``Content-Disposition`` of a game's record: an ASCII name, and the true one as RFC 5987 ``filename*``."""
    name = f"kahuna-web-{opponent[:40]}-seed{seed}.json"
    fallback = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in name)
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return {"Content-Disposition": f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(readable, safe='')}"}


# ------------------------------------------------------------------------------------------------ the page
def _page_routes(
    store: SessionStore, records: Path | None, agents: Path | None, max_upload: int, results_store: bool
) -> list[BaseRoute]:
    async def index(request: Request) -> Response:
        return FileResponse(
            STATIC / "index.html", headers={"Cache-Control": "no-store", "Content-Security-Policy": CSP}
        )

    async def board(request: Request) -> Response:
        return JSONResponse(
            {
                **board_geometry(),
                "opponents": [*offered_opponents(store.max_simulations, store.max_guided_simulations), *store.entrants],
                "max_simulations": store.max_simulations,
                "max_guided_simulations": store.max_guided_simulations,
                "agent_files": await run_in_threadpool(list_agent_files, agents),
                "agents_dir": folder_label(agents) if agents is not None else None,
                "variants": list(VARIANTS),
                "discard_rules": list(DISCARD_RULES),
                "max_upload": max_upload,
                "records_dir": folder_label(records) if records is not None else None,
                "results_store": results_store,  # whether GET /api/ladder has a store to show (kahuna-serve --db)
            }
        )

    async def favicon(request: Request) -> Response:
        # No icon: the page says so itself (`data:`), but a browser asks for /favicon.ico on the JSON
        # pages, and a 404 there would be a console error logged at an unpredictable moment.
        return Response(status_code=204)

    rules = read_rules()  # built once, at start

    async def rules_page(request: Request) -> Response:
        return JSONResponse(rules)

    return [
        Route("/", index),
        Route("/api/board", board),
        Route("/favicon.ico", favicon),
        Route("/api/rules", rules_page),
        Mount("/static", StaticFiles(directory=STATIC)),
    ]


# ------------------------------------------------------------------------------------------------ play
async def _compute(
    request: Request,
    bots: BotQueue,
    session: PlaySession,
    work: Callable[[], Any],
    in_queue: bool | None = None,
    cancel: Any = None,
    leave: Any = None,
) -> Any:
    """Run ``work`` (a move or an analysis of ``session``) holding the game's lock: in the bot queue when it searches.

    409 if the game is busy, 503 if the queue is full.  A client that leaves
    while it waits sets ``leave`` (default ``cancel``, itself by default the
    game's own flag, which abandons the game; a move passes a
    :class:`_StopFlag`, so the agent moves at once and the game goes on; an
    analysis passes its own).  ``in_queue``: run in the bot queue (default:
    when the agent searches).
    """
    job = _locked_job(session, work, cancel)
    if not (session.searches if in_queue is None else in_queue):
        return await run_in_threadpool(job)
    future = _submit(bots, session, job, cancel)
    return await _wait(request, future, (cancel if cancel is not None else session.cancel) if leave is None else leave)


def _locked_job(session: PlaySession, work: Callable[[], Any], cancel: Any = None, held: bool = False) -> Any:
    """The job running ``work`` with the game's lock (taken now: 409 if busy), its answer frozen meanwhile.

    ``cancel`` ``None``: a move (the game is shown thinking; a stop asked meanwhile is not left for the next
    one); otherwise an analysis, which changes nothing.  ``held``: the caller holds the lock already (a new
    game).  The job releases the lock; until it runs, the caller must (:func:`_submit` does).
    """
    if not held and not session.lock.acquire(blocking=False):
        raise WebError("a move of this game is still being played; wait for it", 409)
    try:
        session.freeze(thinking=cancel is None)
    except BaseException:
        session.lock.release()
        raise

    def job() -> Any:
        try:
            return work()
        finally:
            if cancel is None:
                session.computation_ended()
            session.lock.release()

    return job


def _submit(bots: BotQueue, session: PlaySession, job: Callable[[], Any], cancel: Any = None) -> Any:
    """``job`` (of :func:`_locked_job`) in the bot queue, its future; when the queue refuses it, the lock released."""
    try:
        return bots.submit(job)
    except WebError:
        if cancel is None:
            session.computation_ended()
        session.lock.release()
        raise


async def _wait(request: Request, future: Any, flag: Any) -> Any:
    """The result of a bot-queue job; ``flag`` is set when the client waiting for it leaves (its search stops)."""
    waiting = asyncio.wrap_future(future)
    try:
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=DISCONNECT_POLL)
            if done:
                return waiting.result()
            if not flag.is_set() and await request.is_disconnected():
                flag.set()  # nobody waits for this any more: the search stops
    except asyncio.CancelledError:  # the server gave up on the request
        flag.set()
        raise


async def _optional_json(request: Request, limit: int) -> dict[str, Any]:
    """A POST body that may be empty (``{}``) or a JSON object; :class:`WebError` 400 for anything else."""
    if not request.headers.get("content-length", "").strip("0") and "content-type" not in request.headers:
        return {}
    body = await read_json(request, limit)
    if not isinstance(body, dict):
        raise WebError("the request body must be a JSON object")
    return body


async def _opening(store: SessionStore, bots: BotQueue, session: PlaySession) -> Response:
    """The answer to a game just opened (its lock held): the agent's opening moves, or the game thinking about them.

    An agent that searches and holds the first turn thinks in the bot queue
    while the answer (202, the game thinking, as ``GET`` shows it) gives its
    id at once: the page then follows it as after a move, and ``POST
    .../stop`` reaches it (its best move so far, the game kept).  Nobody waits
    on that computation: its search is bounded by the server's caps, and a
    failure of it forgets the game (:meth:`SessionStore.fail`: asking for it
    then says why).  Otherwise the opening is computed now: 201, the game and
    the agent's first actions.
    """
    if not (session.searches and session.agent_to_act):
        try:
            job = _locked_job(session, lambda: session.response(session.advance()), held=True)
            return JSONResponse(await run_in_threadpool(job), status_code=201)
        except WebError:
            store.discard(session)
            raise

    def opening() -> None:
        try:
            session.advance()
        except WebError as error:
            store.fail(session, error)
        except Exception as error:  # the game must not be left shown thinking
            LOG.exception("the opening of a game failed")
            store.fail(session, WebError(f"internal error: the opening failed ({first_line(error)})", 500))

    job = _locked_job(session, opening, held=True)
    answer = session.thinking_response()
    try:
        _submit(bots, session, job)
    except WebError:
        store.discard(session)
        raise
    return JSONResponse(answer, status_code=202)


def _play_routes(store: SessionStore, bots: BotQueue, max_upload: int) -> list[BaseRoute]:
    """Starting and playing games: a new game, a rematch, the game, a move."""

    async def new_game(request: Request) -> Response:
        params = await read_json(request, max_upload)
        opened = await run_in_threadpool(store.open_game, params, _client(request), _owner(request))
        return await _opening(store, bots, opened)

    async def rematch(request: Request) -> Response:
        session = await _game(request, store)
        body = await _optional_json(request, max_upload)
        if set(body) - {"swap_seats"} or not isinstance(body.get("swap_seats", False), bool):
            raise WebError('a rematch is {"swap_seats": true or false}')
        swap = body.get("swap_seats", False)
        fresh = await run_in_threadpool(store.rematch, session, swap, _client(request), _owner(request))
        return await _opening(store, bots, fresh)

    async def get_game(request: Request) -> Response:
        session = await _game(request, store)
        if not session.lock.acquire(blocking=False):
            return JSONResponse(session.thinking_response())  # a move is being computed: the position so far
        try:
            return JSONResponse(session.response())
        finally:
            session.lock.release()

    async def move(request: Request) -> Response:
        session = await _game(request, store)
        body = await read_json(request, max_upload)
        if not isinstance(body, dict) or set(body) != {"action"}:
            raise WebError('a move is {"action": ACTION_ID}')
        work = lambda: session.response(session.move(body["action"]))  # noqa: E731
        return JSONResponse(await _compute(request, bots, session, work, leave=_StopFlag(session)))

    return [
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game}", get_game),
        Route("/api/games/{game}/move", move, methods=["POST"]),
        Route("/api/games/{game}/rematch", rematch, methods=["POST"]),
    ]


def _control_routes(store: SessionStore) -> list[BaseRoute]:
    """Around the moves: stop the agent's search, undo, abandon, the record."""

    async def stop(request: Request) -> Response:
        session = await _game(request, store)
        session.stop()
        return JSONResponse({"stopped": True})

    async def undo(request: Request) -> Response:
        session = await _game(request, store)
        if not session.lock.acquire(blocking=False):
            raise WebError("a move of this game is still being played; wait for it (or stop it)", 409)
        try:
            await run_in_threadpool(session.undo)
            return JSONResponse(session.response())
        finally:
            session.lock.release()

    async def abandon(request: Request) -> Response:
        session = await _game(request, store)
        session.cancel.set()  # a computation of the game stops within a simulation
        for _ in range(int(ABANDON_WAIT / 0.02)):
            if session.lock.acquire(blocking=False):
                break
            await asyncio.sleep(0.02)
        else:
            raise WebError("the agent's move is still being stopped; try again", 409)
        try:
            session.abandon()
            return JSONResponse(session.response())
        except WebError:  # not stored: not abandoned, and the game goes on
            session.cancel = CancelFlag()
            raise
        finally:
            session.lock.release()

    async def record(request: Request) -> Response:
        session = await _game(request, store, record=True)
        if not session.lock.acquire(blocking=False):
            raise WebError("a move of this game is still being played; wait for it", 409)
        try:
            data = session.record()
        finally:
            session.lock.release()
        return Response(
            json.dumps(data) + "\n",
            media_type="application/json",
            headers=download_headers(session.opponent_name, session.seed),
        )

    return [
        Route("/api/games/{game}/stop", stop, methods=["POST"]),
        Route("/api/games/{game}/undo", undo, methods=["POST"]),
        Route("/api/games/{game}/abandon", abandon, methods=["POST"]),
        Route("/api/games/{game}/record", record),
    ]


# ------------------------------------------------------------------------------------------------ analysis
async def _source_record(request: Request, store: SessionStore, records: Path | None, body: dict[str, Any]) -> Any:
    """The record a replay analysis names: given, a record of ``--records``, or a finished stored game's."""
    if "record" in body:
        return body["record"]
    if "game" in body:
        if not isinstance(body["game"], str):
            raise WebError("'game' must be a game id")
        session = await run_in_threadpool(store.get, body["game"], _owner(request), True)
        if not session.lock.acquire(blocking=False):
            raise WebError("a move of this game is still being played; wait for it", 409)
        try:
            return session.record()  # 409 while it is on: its record would tell the hidden cards
        finally:
            session.lock.release()
    name = body["name"]
    if not isinstance(name, str):
        raise WebError("'name' must be the name of a record of the records folder")
    path = record_path(records, name)
    try:
        return await run_in_threadpool(read_record, path)
    except (OSError, ValueError) as error:
        raise WebError(first_line(error).replace(str(path), path.name), 422) from None


def _analysis_routes(
    store: SessionStore, bots: BotQueue, agents: AnalysisAgents, records: Path | None, max_upload: int
) -> list[BaseRoute]:
    async def analyse_game(request: Request, params: dict[str, Any]) -> tuple[dict[str, Any], list[int | None]]:
        """The analysis of a game at the person's turn (409 otherwise), in the bot queue, and its face-up row."""
        session = await _game(request, store)
        spec, simulations = analysis_options(params, store.max_guided_simulations)
        if session.finished or session.game.current_player != session.seat:
            raise WebError("the analysis is for your turn: wait for the agent's move", 409)
        flag = CancelFlag()

        def work() -> tuple[dict[str, Any], list[int | None]]:
            if session.finished or session.game.current_player != session.seat:
                raise WebError("the analysis is for your turn: wait for the agent's move", 409)
            cancel = _EitherFlag(flag, session.cancel)
            return analyse(session.game, agents, spec, simulations, cancel, len(session.actions)), session.game.face_up

        return await _compute(request, bots, session, work, in_queue=True, cancel=flag)

    async def game_analysis(request: Request) -> Response:
        analysis, _ = await analyse_game(request, dict(request.query_params))
        return JSONResponse(analysis)

    async def hint(request: Request) -> Response:
        analysis, face_up = await analyse_game(request, await _optional_json(request, max_upload))
        return JSONResponse(top_move(analysis, face_up))

    async def replay_analysis(request: Request) -> Response:
        body = await read_json(request, max_upload)
        sources = ("record", "name", "game")
        if not isinstance(body, dict) or "ply" not in body or sum(key in body for key in sources) != 1:
            raise WebError('a replay analysis is {"record": RECORD, "name": RECORD_NAME or "game": ID, "ply": K}')
        options = {key: value for key, value in body.items() if key not in (*sources, "ply")}
        spec, simulations = analysis_options(options, store.max_guided_simulations)
        record = await _source_record(request, store, records, body)
        game, ply = await run_in_threadpool(record_position, record, body["ply"])
        if game.is_over:
            raise WebError("the game is over at that ply: nobody is to act", 409)
        flag = CancelFlag()
        future = bots.submit(lambda: analyse(game, agents, spec, simulations, flag, ply))
        return JSONResponse(await _wait(request, future, flag))

    return [
        Route("/api/games/{game}/analysis", game_analysis),
        Route("/api/games/{game}/hint", hint, methods=["POST"]),
        Route("/api/analysis", replay_analysis, methods=["POST"]),
    ]


class _StopFlag:
    """Set when the page that asked for a move leaves (a reload, a closed tab) while the agent plays its turn.

    The agent then plays its best move so far, as ``POST .../stop`` makes it,
    and the game goes on, saved: the page that comes back finds it, its turn
    to act (issue 38: a reload never loses a game).
    """

    def __init__(self, session: Any) -> None:
        self._session = session

    def set(self) -> None:
        self._session.stopping = True

    def is_set(self) -> bool:
        return bool(self._session.stopping or self._session.cancel.is_set())


class _EitherFlag:
    """Set when either of two flags is (an analysis stops when its client leaves or its game is cancelled)."""

    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second = first, second

    def is_set(self) -> bool:
        return self.first.is_set() or self.second.is_set()


# ------------------------------------------------------------------------------------------------ records
def record_path(records: Path | None, name: str) -> Path:
    """The record ``name`` of the records folder; :class:`WebError` 400/403/404 (no path shown) otherwise."""
    if records is None:
        raise WebError("no records folder: start kahuna-serve with --records DIR", 404)
    shown = repr(name[:60])
    if len(name) > MAX_NAME_LENGTH or any(ord(char) < 32 or ord(char) == 127 for char in name):
        raise WebError(f"bad record name {shown}: at most {MAX_NAME_LENGTH} characters, no control characters")
    folder = folder_label(records)
    try:
        path = (records / name).resolve()
        inside = "/" not in name and "\\" not in name and path.parent == records.resolve()
        found = inside and path.is_file()
    except (OSError, RuntimeError, ValueError):  # a name the system refuses, a link loop
        path, inside, found = records, True, False
    if not inside:
        raise WebError(f"{shown} is not a record of the records folder {folder}", 403)
    if not found:
        raise WebError(f"no record {shown} in {folder}", 404)
    return path


def _record_routes(records: Path | None, max_upload: int) -> list[BaseRoute]:
    def listed() -> list[dict[str, Any]]:
        if records is None or not records.is_dir():
            return []
        out = []
        root = records.resolve()
        inside = [path for path in sorted(records.glob("*.json")) if path.resolve().parent == root]
        for path in inside[:MAX_LISTED_RECORDS]:
            entry: dict[str, Any] = {"name": path.name}
            if lone_surrogate(path.name):  # a name that is not UTF-8: shown with replacement characters
                entry = {"name": path.name.encode("utf-8", "replace").decode(), "error": "the name is not UTF-8 text"}
                out.append(entry)
                continue
            try:
                data = read_record(path)
                if lone_surrogate(data):
                    raise ValueError("a string of it is not text (a lone surrogate such as \\ud800)")
            except (OSError, ValueError) as error:
                entry["error"] = first_line(error).replace(str(path), path.name)
            else:
                entry.update(players=data["players"], actions=len(data["actions"]), result=data["result"])
            out.append(entry)
        return out

    async def list_records(request: Request) -> Response:
        shown = folder_label(records) if records is not None else None
        return JSONResponse({"records_dir": shown, "records": await run_in_threadpool(listed)})

    async def open_record(request: Request) -> Response:
        name = request.path_params["name"]
        path = record_path(records, name)

        def work() -> dict[str, Any]:
            try:
                data = read_record(path)
            except (OSError, ValueError) as error:
                raise WebError(first_line(error).replace(str(path), path.name), 422) from None
            return replay_frames(data, path.name)

        return JSONResponse(await run_in_threadpool(work))

    async def upload_record(request: Request) -> Response:
        data = await read_json(request, max_upload)
        return JSONResponse(await run_in_threadpool(replay_frames, data, "the uploaded record"))

    return [
        Route("/api/records", list_records),
        Route("/api/records/{name}", open_record),
        Route("/api/replay", upload_record, methods=["POST"]),
    ]


# ------------------------------------------------------------------------------------------------ results
def _results_routes(results: list[dict[str, Any]], max_upload: int) -> list[BaseRoute]:
    async def list_results(request: Request) -> Response:
        return JSONResponse({"results": results})

    async def upload_results(request: Request) -> Response:
        data = await read_json(request, max_upload)
        return JSONResponse(results_tables(data, "the uploaded file"))

    return [Route("/api/results", list_results), Route("/api/results", upload_results, methods=["POST"])]


LADDER_REFRESH_SECONDS = 10.0
"""The Results tab's ladder is refitted from the results store at most this often (the fit reads every game)."""


def _ladder_routes(ladder_db: Path | None) -> list[BaseRoute]:
    """``GET /api/ladder``: the ladder of ``kahuna-serve --db`` (``kahuna_arena.ladder.ladder_summary``), cached."""
    cache: dict[str, Any] = {"at": -math.inf, "answer": None}
    lock = asyncio.Lock()

    async def ladder(request: Request) -> Response:
        if ladder_db is None:
            return _error("no results store (kahuna-serve --db FILE shows one)", 404)
        async with lock:  # one fit at a time, whatever the number of requests
            if time.monotonic() - cache["at"] >= LADDER_REFRESH_SECONDS:
                from kahuna_arena.ladder import ladder_summary

                try:
                    cache["answer"] = (await run_in_threadpool(ladder_summary, ladder_db), 200)
                except (ValueError, sqlite3.Error) as error:  # the messages name no path
                    text = first_line(error) if isinstance(error, ValueError) else "the results store cannot be read"
                    cache["answer"] = ({"error": text}, 503)
                cache["at"] = time.monotonic()
        body, status = cache["answer"]
        return JSONResponse(body, status_code=status)

    return [Route("/api/ladder", ladder)]


# ------------------------------------------------------------------------------------------------ the application
async def _web_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, WebError)
    return _error(str(error), error.status)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    return _error(str(error.detail), error.status_code)


class AnswerWhileStopping:
    """ASGI middleware: a request the stopping server gives up on is answered 503, not logged as a traceback.

    When the graceful shutdown's second has passed uvicorn cancels the
    requests still running (one waiting for an agent file to load, say);
    this answers them "the server is stopping" if nothing was sent yet.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except asyncio.CancelledError:
            if scope["type"] != "http" or started:
                raise
            await _error("the server is stopping", 503)(scope, receive, send)


async def _client_left(request: Request, error: Exception) -> Response:
    """A client that left before its upload was complete: one log line, no traceback (nobody reads the answer)."""
    LOG.warning("%s %s: the client left before its upload was complete", request.method, request.url.path)
    return Response(status_code=400)


async def _internal_error(request: Request, error: Exception) -> Response:
    return _error("internal error: the request failed on the server (its log says why)", 500)


def create_app(
    records_dir: str | Path | None = None,
    results: Sequence[dict[str, Any]] = (),
    agents_dir: str | Path | None = None,
    max_upload: int = DEFAULT_MAX_UPLOAD,
    allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
    max_simulations: int = DEFAULT_MAX_SIMULATIONS,
    max_guided_simulations: int = DEFAULT_MAX_GUIDED_SIMULATIONS,
    store: SessionStore | None = None,
    bots: BotQueue | None = None,
    ladder_db: str | Path | None = None,
    games: GameStore | None = None,
    caps: Caps = DEFAULT_CAPS,
    entrants: Mapping[str, Any] | None = None,
) -> Starlette:
    """The application.

    Args:
        records_dir: folder of game records offered for replay (``None``: none).
        results: ``kahuna-eval --json`` tables already read (:func:`kahuna_web.results.read_results`).
        agents_dir: the only folder agent files may be loaded from (``None``: baselines and shipped agents only).
        max_upload: largest request body in bytes.
        allowed_hosts: ``Host`` header names answered (``None``: any, for a server on a public address).
        max_simulations: largest ``mcts:N`` budget of an opponent.
        max_guided_simulations: largest ``SOURCE@mcts:N`` budget of an opponent (and of an analysis's search).
        store: the games (default: a :class:`SessionStore` with the folder and caps above, ``games`` and its
            default game limits); ``max_simulations`` and ``max_guided_simulations`` then are the store's.
        bots: the bot queue (default: :data:`~kahuna_web.compute.DEFAULT_WORKERS` workers,
            :data:`~kahuna_web.compute.DEFAULT_WAITING` waiting).
        ladder_db: a results store whose ladder ``GET /api/ladder`` serves (``kahuna-serve --db``; ``None``: none).
        games: where games are kept (``kahuna-serve --data DIR``: :func:`kahuna_web.gamestore.open_data_folder`;
            default: in memory, lost when the server stops).
        caps: what an owner and an address may start (:class:`kahuna_web.sessionstore.Caps`), for the default store.
        entrants: the operator's named entrants (``kahuna-serve --entrant NAME=SPEC``:
            :func:`kahuna_web.opponents.operator_entrant`), offered by name, for the default store.

    ``app.state.cancel_all()`` stops every agent's thinking at once (the server
    calls it from its signal handler); the application's shutdown does the
    same and ends the bot queue.
    """
    records = Path(records_dir) if records_dir is not None else None
    agents = Path(agents_dir) if agents_dir is not None else None
    if store is None:
        store = _default_store(agents, max_simulations, max_guided_simulations, games, caps, entrants)
    queue = bots if bots is not None else BotQueue(DEFAULT_WORKERS, DEFAULT_WAITING)
    routes = _routes(store, queue, records, agents, list(results), max_upload, ladder_db)
    app = Starlette(
        routes=routes,
        middleware=_middleware(allowed_hosts),
        exception_handlers={
            WebError: _web_error,
            HTTPException: _http_error,
            ClientDisconnect: _client_left,
            Exception: _internal_error,
        },
        lifespan=_lifespan(store, queue),
    )
    app.state.store = store
    app.state.bots = queue
    app.state.cancel_all = store.cancel_all
    return app


def _default_store(
    agents: Path | None,
    max_simulations: int,
    max_guided_simulations: int,
    games: GameStore | None,
    caps: Caps,
    entrants: Mapping[str, Any] | None,
) -> SessionStore:
    """The games of an application given no store: the default limits, the agents folder, caps and named
    entrants, ``games``."""
    return SessionStore(
        agents_dir=agents,
        limit=DEFAULT_GAME_LIMIT,
        idle_seconds=DEFAULT_IDLE_SECONDS,
        max_simulations=max_simulations,
        max_guided_simulations=max_guided_simulations,
        games=games,
        caps=caps,
        entrants=entrants,
    )


def _routes(
    store: SessionStore,
    queue: BotQueue,
    records: Path | None,
    agents: Path | None,
    results: list[dict[str, Any]],
    max_upload: int,
    ladder_db: str | Path | None,
) -> list[BaseRoute]:
    """Every route, by group: the page, play, control of a game, analysis, records, results, the ladder."""
    analysers = AnalysisAgents(store.agents_dir, store.max_simulations, store.max_guided_simulations)
    return [
        *_page_routes(store, records, agents, max_upload, ladder_db is not None),
        *_play_routes(store, queue, max_upload),
        *_control_routes(store),
        *_analysis_routes(store, queue, analysers, records, max_upload),
        *_record_routes(records, max_upload),
        *_results_routes(results, max_upload),
        *_ladder_routes(Path(ladder_db) if ladder_db is not None else None),
    ]


def _middleware(allowed_hosts: Sequence[str] | None) -> list[Middleware]:
    """Requests the stopping server gives up on answered 503; on loopback, only loopback ``Host`` names; owners."""
    middleware = [Middleware(AnswerWhileStopping)]
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    middleware.append(Middleware(OwnerCookie))
    return middleware


def _lifespan(store: SessionStore, queue: BotQueue) -> Callable[[Starlette], Any]:
    """At shutdown: every search stopped, the bot queue drained and ended."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        store.cancel_all()
        await run_in_threadpool(queue.stop)

    return lifespan
