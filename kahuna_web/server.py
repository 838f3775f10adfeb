"""``kahuna-serve``: Kahuna in the browser on this machine: play any agent, replay records, browse results.

Examples::

    kahuna-serve                                    # http://127.0.0.1:8000/, this machine only
    kahuna-serve --port 8080 --records games/ --results eval.json ratings.json
    kahuna-serve --agents runs/                     # agent files may be loaded from runs/ only

The server binds to 127.0.0.1 unless ``--host`` says otherwise and prints
the address.  Agent-file opponents are loaded only from the ``--agents``
folder (default ``runs/`` when it exists); baselines (``random``,
``greedy``, ``mcts``, ``mcts:N``) are always available.  Needs the ``web``
extra (``pip install -e ".[web]"``).  Bad arguments (a missing records
folder, an unreadable results file, a port in use) are one line on stderr,
exit code 2.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from arena.cli import OneLineParser, exit_with_error, first_line

PROGRAM = "kahuna-serve"
DEFAULT_AGENTS_DIR = Path("runs")
"""The agents folder used when ``--agents`` is not given and it exists."""


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
        "--agents",
        type=Path,
        metavar="DIR",
        help="the only folder agent files may be loaded from (default runs/ when it exists)",
    )
    parser.add_argument(
        "--max-upload-kb", type=int, default=2048, metavar="KB", help="largest upload accepted (default 2048 kB)"
    )
    return parser


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``kahuna-serve`` until interrupted; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        import uvicorn

        from kahuna_web.app import LOOPBACK_HOSTS, create_app
    except ImportError as error:
        exit_with_error(PROGRAM, f'needs the web extra (pip install -e ".[web]"): {first_line(error)}')
    from kahuna_web.results import read_results

    if not 0 <= args.port <= 65535:
        exit_with_error(PROGRAM, f"--port must be in 0..65535, got {args.port}")
    if args.max_upload_kb < 1:
        exit_with_error(PROGRAM, f"--max-upload-kb must be at least 1, got {args.max_upload_kb}")
    if args.records is not None and not args.records.is_dir():
        exit_with_error(PROGRAM, f"--records {args.records} is not a folder")
    agents = args.agents
    if agents is not None and not agents.is_dir():
        exit_with_error(PROGRAM, f"--agents {agents} is not a folder")
    if agents is None and DEFAULT_AGENTS_DIR.is_dir():
        agents = DEFAULT_AGENTS_DIR
    results = []
    for path in args.results:
        try:
            results.append(read_results(path))
        except ValueError as error:
            exit_with_error(PROGRAM, f"--results: {first_line(error)}")
    try:  # a port in use is one line here rather than a log message from the server
        family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((args.host, args.port))
            port = probe.getsockname()[1]
    except OSError as error:
        exit_with_error(PROGRAM, f"cannot listen on {args.host}:{args.port}: {error.strerror or error}")
    loopback = is_loopback(args.host)
    app = create_app(
        records_dir=args.records,
        results=results,
        agents_dir=agents,
        max_upload=args.max_upload_kb * 1024,
        allowed_hosts=(*LOOPBACK_HOSTS, args.host) if loopback else None,
    )
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"Kahuna board at http://{shown}:{port}/  (Ctrl-C stops it)")
    if loopback:
        print(f"Listening on {args.host} only: other machines cannot connect (--host 0.0.0.0 would allow them).")
    else:
        print(f"Listening on {args.host}: other machines on the network can connect (there is no login).")
    print(f"Agent files: {'from ' + str(agents) if agents is not None else 'none (baselines only; --agents DIR)'}")
    sys.stdout.flush()
    uvicorn.run(app, host=args.host, port=port, log_level="warning")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
