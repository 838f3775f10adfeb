"""The Starlette application of ``kahuna-serve``: the page, its static files and the JSON API (docs/WEB.md).

===========================================  =====================================================
route                                        what it does
===========================================  =====================================================
``GET /``                                    the page (``static/index.html``)
``GET /api/board``                           board geometry, player colours, opponents, rule options
``POST /api/games``                          a new game (opponent, seat, seed, rules); the agent's first moves
``GET /api/games/{id}``                      the game from the person's seat
``POST /api/games/{id}/move``                ``{"action": id}``; then the agent's actions until it is your turn
``POST /api/games/{id}/abandon``             stop the game (its record can then be downloaded)
``GET /api/games/{id}/record``               the record (``kahuna-replay`` reads it), once the game is over
``GET /api/records``                         the records in ``--records DIR``
``GET /api/records/{name}``                  every position of a record in that folder
``POST /api/replay``                         every position of an uploaded record
``GET /api/results``                         the ``--results`` files, as tables
``POST /api/results``                        an uploaded ``kahuna-eval --json`` file, as tables
===========================================  =====================================================

Every refusal is a 4xx with ``{"error": "one line"}`` and leaves every game
unchanged.  POST bodies must be JSON (``Content-Type: application/json``,
which a foreign web page cannot send without a CORS permission this server
never grants) and at most ``max_upload`` bytes (413 beyond).  When bound to
a loopback address the server answers only requests whose ``Host`` is a
loopback name (no DNS rebinding).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from arena.cli import first_line
from arena.records import read_record
from kahuna_env.engine import DISCARD_RULES, VARIANTS
from kahuna_web.results import results_tables
from kahuna_web.sessions import SessionStore, WebError, list_agent_files, replay_frames
from kahuna_web.views import board_geometry

STATIC = Path(__file__).resolve().parent / "static"
"""The page's files: index.html, app.js, style.css."""
DEFAULT_MAX_UPLOAD = 2 * 1024 * 1024
"""Largest request body accepted, in bytes (a long record is about 2 kB)."""
MAX_LISTED_RECORDS = 500
"""At most this many records of ``--records DIR`` are listed."""
OPPONENT_CHOICES = ("greedy", "random", "mcts:50", "mcts", "mcts:800", "champion", "champion@mcts:50")
"""Opponents offered in the page's list: the baselines and the shipped champion, raw and guiding a search
(any entrant string can be typed)."""
CSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
"""The page's Content-Security-Policy: its own files only, no inline scripts, not framed by other sites."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]", "testserver")
"""``Host`` names accepted when the server listens on a loopback address (``testserver``: the test client)."""


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def read_json(request: Request, limit: int) -> Any:
    """The request body as JSON; :class:`WebError` for a wrong type (415), too large (413) or not JSON (400)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise WebError(f"the request body must be JSON (Content-Type: application/json), got {kind or 'none'!r}", 415)
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise WebError(f"upload too large: {int(length)} bytes, at most {limit} bytes", 413)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise WebError(f"upload too large: more than {limit} bytes", 413)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise WebError("the upload is not UTF-8 text", 400) from None
    try:
        return json.loads(text)
    except RecursionError:
        raise WebError("the upload is not usable JSON: nested too deeply", 400) from None
    except ValueError as error:
        raise WebError(f"the upload is not JSON: {first_line(error)}", 400) from None


def create_app(
    records_dir: str | Path | None = None,
    results: Sequence[dict[str, Any]] = (),
    agents_dir: str | Path | None = None,
    max_upload: int = DEFAULT_MAX_UPLOAD,
    allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS,
) -> Starlette:
    """The application.

    Args:
        records_dir: folder of game records offered for replay (``None``: none).
        results: ``kahuna-eval --json`` tables already read (:func:`kahuna_web.results.read_results`).
        agents_dir: the only folder agent files may be loaded from (``None``: baselines only).
        max_upload: largest request body in bytes.
        allowed_hosts: ``Host`` header names answered (``None``: any, for a server on a public address).
    """
    records = Path(records_dir) if records_dir is not None else None
    agents = Path(agents_dir) if agents_dir is not None else None
    store = SessionStore(agents_dir=agents)
    loaded_results = list(results)

    async def index(request: Request) -> Response:
        return FileResponse(
            STATIC / "index.html", headers={"Cache-Control": "no-store", "Content-Security-Policy": CSP}
        )

    async def board(request: Request) -> Response:
        return JSONResponse(
            {
                **board_geometry(),
                "opponents": list(OPPONENT_CHOICES),
                "agent_files": list_agent_files(agents),
                "agents_dir": str(agents) if agents is not None else None,
                "variants": list(VARIANTS),
                "discard_rules": list(DISCARD_RULES),
                "max_upload": max_upload,
                "records_dir": str(records) if records is not None else None,
            }
        )

    async def new_game(request: Request) -> Response:
        params = await read_json(request, max_upload)
        session, steps = await run_in_threadpool(store.new_game, params)
        return JSONResponse(session.response(steps), status_code=201)

    async def get_game(request: Request) -> Response:
        session = store.get(request.path_params["game"])
        return JSONResponse(session.response())

    def _locked(session: Any, work: Any) -> Any:
        if not session.lock.acquire(blocking=False):
            raise WebError("a move of this game is still being played; wait for it", 409)
        try:
            return work()
        finally:
            session.lock.release()

    async def move(request: Request) -> Response:
        session = store.get(request.path_params["game"])
        body = await read_json(request, max_upload)
        if not isinstance(body, dict) or set(body) != {"action"}:
            raise WebError('a move is {"action": ACTION_ID}')

        def work() -> dict[str, Any]:
            return session.response(session.move(body["action"]))

        return JSONResponse(await run_in_threadpool(_locked, session, work))

    async def abandon(request: Request) -> Response:
        session = store.get(request.path_params["game"])

        def work() -> dict[str, Any]:
            session.abandon()
            return session.response()

        return JSONResponse(await run_in_threadpool(_locked, session, work))

    async def record(request: Request) -> Response:
        session = store.get(request.path_params["game"])
        data = await run_in_threadpool(_locked, session, session.record)
        opponent = "".join(c if c.isalnum() or c in "-_." else "_" for c in session.opponent_name)[:40]
        name = f"kahuna-web-{opponent}-seed{session.seed}.json"
        return Response(
            json.dumps(data) + "\n",
            media_type="application/json",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    def _record_path(name: str) -> Path:
        if records is None:
            raise WebError("no records folder: start kahuna-serve with --records DIR", 404)
        path = (records / name).resolve()
        if "/" in name or "\\" in name or path.parent != records.resolve():
            raise WebError(f"{name!r} is not a record of the records folder {records}", 403)
        if not path.is_file():
            raise WebError(f"no record {name!r} in {records}", 404)
        return path

    def _list_records() -> list[dict[str, Any]]:
        if records is None or not records.is_dir():
            return []
        out = []
        root = records.resolve()
        inside = [path for path in sorted(records.glob("*.json")) if path.resolve().parent == root]
        for path in inside[:MAX_LISTED_RECORDS]:
            entry: dict[str, Any] = {"name": path.name}
            try:
                data = read_record(path)
            except (OSError, ValueError) as error:
                entry["error"] = first_line(error)
            else:
                entry.update(players=data["players"], actions=len(data["actions"]), result=data["result"])
            out.append(entry)
        return out

    async def list_records(request: Request) -> Response:
        listed = await run_in_threadpool(_list_records)
        return JSONResponse({"records_dir": str(records) if records else None, "records": listed})

    async def open_record(request: Request) -> Response:
        path = _record_path(request.path_params["name"])

        def work() -> dict[str, Any]:
            try:
                data = read_record(path)
            except (OSError, ValueError) as error:
                raise WebError(first_line(error), 422) from None
            return replay_frames(data, path.name)

        return JSONResponse(await run_in_threadpool(work))

    async def upload_record(request: Request) -> Response:
        data = await read_json(request, max_upload)
        return JSONResponse(await run_in_threadpool(replay_frames, data, "the uploaded record"))

    async def list_results(request: Request) -> Response:
        return JSONResponse({"results": loaded_results})

    async def upload_results(request: Request) -> Response:
        data = await read_json(request, max_upload)
        return JSONResponse(results_tables(data, "the uploaded file"))

    async def web_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, WebError)
        return _error(str(error), error.status)

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return _error(str(error.detail), error.status_code)

    routes = [
        Route("/", index),
        Route("/api/board", board),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game}", get_game),
        Route("/api/games/{game}/move", move, methods=["POST"]),
        Route("/api/games/{game}/abandon", abandon, methods=["POST"]),
        Route("/api/games/{game}/record", record),
        Route("/api/records", list_records),
        Route("/api/records/{name}", open_record),
        Route("/api/replay", upload_record, methods=["POST"]),
        Route("/api/results", list_results),
        Route("/api/results", upload_results, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = []
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={WebError: web_error, HTTPException: http_error},
    )
    app.state.store = store
    return app
