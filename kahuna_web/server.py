"""``kahuna-serve``: Kahuna in the browser on this machine: play any agent, replay records, browse results.

Examples::

    kahuna-serve                                    # http://127.0.0.1:8000/, this machine only
    kahuna-serve --port 8080 --records games/ --results eval.json ratings.json
    kahuna-serve --agents runs/                     # agent files may be loaded from runs/ only
    kahuna-serve --data ~/kahuna-games              # where games are kept (default kahuna-data/)

The server binds to 127.0.0.1 unless ``--host`` says otherwise and prints
the address.  Agent-file opponents are loaded only from the ``--agents``
folder (default ``runs/`` when it exists); baselines (``random``,
``greedy``, ``mcts``, ``mcts:N``) and the shipped agents are always
available, search budgets up to ``--max-simulations`` (``mcts:N``) and
``--max-guided-simulations`` (``champion@mcts:N``).  Ctrl-C or SIGTERM stops
the server within a couple of seconds whatever it is computing (every
search is cancelled at once), and the port can be used again at once.
Games are kept in ``--data DIR`` (default ``kahuna-data/`` in the working
folder, created at start; ``DIR/games.sqlite``): they survive a reload of
the page and a restart of the server.  A game belongs to the browser that
created it (an owner cookie); the caps on what one browser or one address
may start are flags (``--max-stored-games``, ``--max-games-per-owner``,
``--max-new-games-per-minute``, ``--max-new-owners-per-minute``,
``--retention-hours``, ``--idle-days``).  Client addresses are the
sockets': a proxy's ``X-Forwarded-For`` counts only with ``--proxy-headers``
(from the addresses of ``--forwarded-allow-ips``).  Ctrl-C and SIGTERM both
end with "kahuna-serve stopped" and exit code 0.
Needs the ``web`` extra (``pip install "kahuna-rl[web]"``).  Bad arguments (a
missing records folder, an unreadable results file, a port in use, a data
folder that cannot be used) are one line on stderr, exit code 2.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from kahuna_env.cli import OneLineParser, exit_with_error, first_line, missing_extra
from kahuna_web.gamestore import MAX_STORED_GAMES, RETENTION_SECONDS, STORE_IDLE_SECONDS
from kahuna_web.opponents import DEFAULT_MAX_GUIDED_SIMULATIONS, DEFAULT_MAX_SIMULATIONS
from kahuna_web.sessionstore import DEFAULT_NEW_GAMES_PER_MINUTE, DEFAULT_NEW_OWNERS_PER_MINUTE, DEFAULT_PER_OWNER, Caps

PROGRAM = "kahuna-serve"
DEFAULT_AGENTS_DIR = Path("runs")
"""The agents folder used when ``--agents`` is not given and it exists."""
DEFAULT_DATA_DIR = Path("kahuna-data")
"""Where games are kept when ``--data`` is not given (created at start)."""
GRACEFUL_SECONDS = 1
"""After Ctrl-C, how long requests still being answered may take before they are dropped."""


def build_parser() -> argparse.ArgumentParser:
    """The ``kahuna-serve`` argument parser."""
    parser = OneLineParser(
        prog=PROGRAM,
        description="Kahuna in the browser: play any agent, replay records, browse kahuna-eval results.",
    )
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000; 0: any free port)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 exposes it to the network)",
    )
    parser.add_argument("--records", type=Path, metavar="DIR", help="folder of game records to offer for replay")
    parser.add_argument(
        "--results", type=Path, nargs="+", default=[], metavar="FILE", help="kahuna-eval --json files to show"
    )
    parser.add_argument(
        "--db", type=Path, metavar="FILE", help="a results store (kahuna-eval --db) whose ladder the Results tab shows"
    )
    parser.add_argument(
        "--agents",
        type=Path,
        metavar="DIR",
        help="the only folder agent files may be loaded from (default runs/ when it exists)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA_DIR,
        metavar="DIR",
        help=f"folder the games are kept in (DIR/games.sqlite; default {DEFAULT_DATA_DIR}/, created at start)",
    )
    parser.add_argument(
        "--max-upload-kb", type=int, default=2048, metavar="KB", help="largest upload accepted (default 2048 kB)"
    )
    parser.add_argument(
        "--max-simulations",
        type=int,
        default=DEFAULT_MAX_SIMULATIONS,
        metavar="N",
        help=f"largest mcts:N budget of an opponent (default {DEFAULT_MAX_SIMULATIONS}: a turn within about 2 s)",
    )
    parser.add_argument(
        "--max-guided-simulations",
        type=int,
        default=DEFAULT_MAX_GUIDED_SIMULATIONS,
        metavar="N",
        help=f"largest budget of a network-guided search such as champion@mcts:N "
        f"(default {DEFAULT_MAX_GUIDED_SIMULATIONS}: a turn within about 2 s)",
    )
    parser.add_argument(
        "--entrant",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="offer an entrant under NAME: any form the command-line tools take, py: agents (code this server "
        "runs) and files outside --agents included; repeat for more (docs/AGENTS.md)",
    )
    _add_caps(parser)
    return parser


CAPS = (
    (
        "--max-stored-games",
        int,
        MAX_STORED_GAMES,
        "games kept in the game store; when full, only games finished "
        "before the retention or idle past --idle-days make room, else a new game is refused (503)",
    ),
    (
        "--max-games-per-owner",
        int,
        DEFAULT_PER_OWNER,
        "games in progress per browser; its new game beyond abandons its own oldest",
    ),
    ("--max-new-games-per-minute", int, DEFAULT_NEW_GAMES_PER_MINUTE, "games one browser may start per minute"),
    (
        "--max-new-owners-per-minute",
        int,
        DEFAULT_NEW_OWNERS_PER_MINUTE,
        "browsers without games yet that may start one from the same address per minute",
    ),
    ("--retention-hours", float, RETENTION_SECONDS / 3600, "a finished game is kept at least this long"),
    ("--idle-days", float, STORE_IDLE_SECONDS / 86400, "a game in progress untouched this long may make room"),
)
"""The caps of ``kahuna-serve`` (flag, type, default, help); each at least 1 (docs/WEB.md, Threat model)."""


def _add_caps(parser: argparse.ArgumentParser) -> None:
    for flag, kind, default, text in CAPS:
        parser.add_argument(flag, type=kind, default=default, metavar="N", help=f"{text} (default {default:g})")
    parser.add_argument(
        "--proxy-headers",
        action="store_true",
        help="behind a reverse proxy: take client addresses from its X-Forwarded-For (only from --forwarded-allow-ips)",
    )
    parser.add_argument(
        "--forwarded-allow-ips",
        default="127.0.0.1",
        metavar="IPS",
        help="with --proxy-headers: the proxies' addresses, comma-separated (default 127.0.0.1)",
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` with ``SO_REUSEADDR`` (a restart binds at once); ``OSError`` if taken.

    ``SO_REUSEADDR`` lets a new server take the port while connections of the
    previous one linger (TIME_WAIT); a port another server listens on is still refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)  # connections made before the server runs wait in line rather than being refused
    except OSError:
        sock.close()
        raise
    return sock


def limits(args: argparse.Namespace) -> tuple[dict[str, float], Caps]:
    """What the caps' flags ask for: the game store's bounds (:class:`~kahuna_web.gamestore.GameStore`) and the
    owners' caps (:class:`~kahuna_web.sessionstore.Caps`)."""
    bounds = {
        "max_games": args.max_stored_games,
        "retention_seconds": args.retention_hours * 3600,
        "idle_seconds": args.idle_days * 86400,
    }
    return bounds, Caps(args.max_games_per_owner, args.max_new_games_per_minute, args.max_new_owners_per_minute)


def _check_arguments(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        exit_with_error(PROGRAM, f"--port must be in 0..65535, got {args.port}")
    if args.max_upload_kb < 1:
        exit_with_error(PROGRAM, f"--max-upload-kb must be at least 1, got {args.max_upload_kb}")
    for option, value in (
        ("--max-simulations", args.max_simulations),
        ("--max-guided-simulations", args.max_guided_simulations),
    ):
        if not 1 <= value <= 10**6:
            exit_with_error(PROGRAM, f"{option} must be in 1..1000000, got {value}")
    if args.records is not None and not args.records.is_dir():
        exit_with_error(PROGRAM, f"--records {args.records} is not a folder")
    if args.agents is not None and not args.agents.is_dir():
        exit_with_error(PROGRAM, f"--agents {args.agents} is not a folder")
    for flag, _, _, _ in CAPS:
        value = getattr(args, flag[2:].replace("-", "_"))
        if not 1 <= value <= 10**9:
            exit_with_error(PROGRAM, f"{flag} must be in 1..1000000000, got {value:g}")
    if args.forwarded_allow_ips != "127.0.0.1" and not args.proxy_headers:
        exit_with_error(PROGRAM, "--forwarded-allow-ips is used only with --proxy-headers")


def _operator_entrants(given: Sequence[str]) -> dict[str, Any]:
    """The ``--entrant NAME=SPEC`` entrants by name, each built once now, so that a bad one ends the
    program in one line before the server listens."""
    from kahuna_arena.entrants import resolve_entrant
    from kahuna_web.opponents import operator_entrant

    entrants: dict[str, Any] = {}
    for text in given:
        try:
            name, entrant = operator_entrant(text)
        except ValueError as error:
            exit_with_error(PROGRAM, first_line(error))
        if name in entrants:
            exit_with_error(PROGRAM, f"--entrant {name} is given twice")
        try:
            resolve_entrant(entrant, seed=0)
        except (FileNotFoundError, ImportError, ValueError) as error:
            exit_with_error(PROGRAM, f"--entrant {name}: {first_line(error)}")
        entrants[name] = entrant
    return entrants


def uvicorn_config(app: Any, proxy_headers: bool = False, forwarded_allow_ips: str = "127.0.0.1") -> Any:
    """How ``kahuna-serve`` runs uvicorn: warnings only, a one-second graceful shutdown, and client addresses
    from the socket unless ``proxy_headers`` (then a proxy of ``forwarded_allow_ips`` may name them)."""
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        proxy_headers=proxy_headers,
        forwarded_allow_ips=forwarded_allow_ips if proxy_headers else None,
    )


def _stop(sig: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM ends kahuna-serve as Ctrl-C does


def serve(app: Any, sock: socket.socket, config: Any = None) -> None:
    """Run ``app`` on the bound ``sock`` until Ctrl-C or SIGTERM, cancelling every search the moment one arrives.

    ``config``: :func:`uvicorn_config` (default: its defaults).  uvicorn raises
    the signal that stopped it again once it has stopped: SIGTERM then reaches
    :func:`_stop` (installed here) and ends as Ctrl-C does, not by the default
    handler's exit code 143.
    """
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            app.state.cancel_all()  # lock-free: safe in a signal handler
            super().handle_exit(sig, frame)

    signal.signal(signal.SIGTERM, _stop)
    Server(config if config is not None else uvicorn_config(app)).run(sockets=[sock])


def _read_inputs(args: argparse.Namespace) -> tuple[Path | None, list[dict[str, Any]]]:
    """The agents folder (``--agents``, else ``runs/`` if there) and the ``--results`` tables; ``--db`` checked."""
    from kahuna_web.results import read_results

    agents = args.agents
    if agents is None and DEFAULT_AGENTS_DIR.is_dir():
        agents = DEFAULT_AGENTS_DIR
    results = []
    for path in args.results:
        try:
            results.append(read_results(path))
        except ValueError as error:
            exit_with_error(PROGRAM, f"--results: {first_line(error)}")
    if args.db is not None:  # read once now: a file that is not a results store is one line here
        from kahuna_arena.ladder import ladder_summary

        try:
            ladder_summary(args.db)
        except ValueError as error:
            exit_with_error(PROGRAM, f"--db {args.db}: {first_line(error)}")
    return agents, results


def _open_port_and_data(args: argparse.Namespace) -> tuple[socket.socket, Any]:
    """The listening socket, then the game store of ``--data`` (after the port: a bad command creates no folder)."""
    try:  # a port in use is one line here rather than a log message from the server
        sock = listening_socket(args.host, args.port)
    except OSError as error:
        exit_with_error(PROGRAM, f"cannot listen on {args.host}:{args.port}: {error.strerror or error}")
    from kahuna_web.gamestore import GameStoreError, open_data_folder

    try:
        games = open_data_folder(args.data, **limits(args)[0])
    except GameStoreError as error:
        sock.close()
        exit_with_error(PROGRAM, f"--data: {first_line(error)}")
    return sock, games


def _announce(args: argparse.Namespace, port: int, loopback: bool, agents: Path | None) -> None:
    """The lines ``kahuna-serve`` starts with: the address, who may connect, agent files, games, budgets."""
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Kahuna board at http://{shown}:{port}/  (Ctrl-C stops it)")
    if loopback:
        print(f"Listening on {args.host} only: other machines cannot connect (--host 0.0.0.0 would allow them).")
    else:
        print(f"Listening on {args.host}: other machines on the network can connect (there is no login).")
    print(f"Agent files: {'from ' + str(agents) if agents is not None else 'none (baselines only; --agents DIR)'}")
    print(f"Games kept in {args.data / 'games.sqlite'}")
    print(
        f"Search budgets: mcts:N up to {args.max_simulations}, guided SOURCE@mcts:N up to {args.max_guided_simulations}"
    )
    sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kahuna-serve`` until interrupted, then end the process (exit code 0); bad arguments exit 2."""
    args = build_parser().parse_args(argv)
    try:
        import uvicorn  # noqa: F401

        from kahuna_web.app import LOOPBACK_HOSTS, create_app
    except ImportError as error:
        exit_with_error(PROGRAM, missing_extra("web", error))
    _check_arguments(args)
    entrants = _operator_entrants(args.entrant)
    agents, results = _read_inputs(args)
    sock, games = _open_port_and_data(args)
    loopback = is_loopback(args.host)
    app = create_app(
        games=games,
        records_dir=args.records,
        results=results,
        ladder_db=args.db,
        agents_dir=agents,
        max_upload=args.max_upload_kb * 1024,
        allowed_hosts=(*LOOPBACK_HOSTS, args.host) if loopback else None,
        max_simulations=args.max_simulations,
        max_guided_simulations=args.max_guided_simulations,
        caps=limits(args)[1],
        entrants=entrants,
    )
    _announce(args, sock.getsockname()[1], loopback, agents)
    try:
        serve(app, sock, uvicorn_config(app, args.proxy_headers, args.forwarded_allow_ips))
    except KeyboardInterrupt:  # uvicorn raises the Ctrl-C it handled again once it has stopped
        pass
    finally:
        sock.close()
    print("kahuna-serve stopped", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # A thread may still be busy with a request the server gave up on (an agent file loading, torch
    # importing): not waited for.  The game store commits every change at once (one SQLite transaction
    # each), so nothing is left half-written.
    os._exit(0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
