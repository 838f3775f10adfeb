"""A flood of new games against ``kahuna-serve``, and what it does to another player (issue 65).

Starts ``kahuna-serve`` on a free loopback port with a fresh ``--data``
folder and the given caps, lets one player (the victim) keep a game in
progress and a finished one, then sends ``--requests`` ``POST /api/games``
over ``--connections`` connections: from one browser (its owner cookie sent
every time), or with ``--new-browsers`` from a new browser each time (no
cookie: every request a newcomer from the same address).  Meanwhile a probe
times ``GET /api/rules``, a cheap request, every ``--probe-ms``.  It prints
what the flood got, whether the victim's games are as they were (the answer
of each, its record, and a move played afterwards), and the probe's times.

    python benchmarks/web_flood.py --requests 3000 --max-stored-games 50
    python benchmarks/web_flood.py --requests 3000 --max-stored-games 50 --new-browsers
    python benchmarks/web_flood.py --requests 3000 --max-stored-games 50 --max-new-games-per-minute 100000
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VICTIM = "flood-benchmark-victim-browser-000"
FLOODER = "flood-benchmark-flooding-browser-0"


class Client:
    """One keep-alive connection to the server, as the browser ``owner`` (``None``: a new browser every time)."""

    def __init__(self, port: int, owner: str | None) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.owner = owner

    def send(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if self.owner is not None:
            headers["Cookie"] = f"kahuna_owner={self.owner}"
        self.connection.request(method, path, None if body is None else json.dumps(body), headers)
        answer = self.connection.getresponse()
        data = answer.read()
        return answer.status, json.loads(data) if data.startswith((b"{", b"[")) else data


def start_server(data: Path, caps: list[str]) -> tuple[subprocess.Popen, int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "kahuna_web.server", "--port", "0", "--data", str(data), *caps],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    ready, _, _ = select.select([server.stdout], [], [], 120)
    first = server.stdout.readline() if ready else ""
    if not first.startswith("Kahuna board at http://127.0.0.1:"):
        server.kill()
        raise SystemExit(f"kahuna-serve did not start: {first}{server.stderr.read()}")
    return server, int(first.split()[3].rsplit(":", 1)[1].strip("/"))


def victims_games(victim: Client) -> dict[str, Any]:
    """A game in progress (a few moves played) and a finished one (abandoned), with their answers and record."""
    status, playing = victim.send("POST", "/api/games", {"opponent": "greedy", "seed": 1})
    assert status == 201, playing
    for _ in range(3):
        status, playing = victim.send(
            "POST", f"/api/games/{playing['id']}/move", {"action": playing["state"]["legal"][0]["id"]}
        )
        assert status == 200, playing
    status, finished = victim.send("POST", "/api/games", {"opponent": "random", "seed": 2})
    assert status == 201, finished
    victim.send("POST", f"/api/games/{finished['id']}/abandon")
    return snapshot(victim, playing["id"], finished["id"])


def snapshot(victim: Client, playing: str, finished: str) -> dict[str, Any]:
    return {
        "playing": victim.send("GET", f"/api/games/{playing}"),
        "finished": victim.send("GET", f"/api/games/{finished}"),
        "record": victim.send("GET", f"/api/games/{finished}/record"),
    }


def flood(port: int, requests: int, connections: int, owner: str | None) -> tuple[collections.Counter, float, str]:
    """``requests`` new games over ``connections`` connections; the answers' statuses, the seconds, one refusal."""
    statuses: collections.Counter = collections.Counter()
    refusals: list[str] = []
    lock = threading.Lock()
    left = [requests]

    def work() -> None:
        client = Client(port, owner)
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
                number = left[0]
            status, answer = client.send("POST", "/api/games", {"opponent": "random", "seed": number})
            with lock:
                statuses[status] += 1
                if status != 201 and len(refusals) < 1:
                    refusals.append(f"{status} {answer.get('error') if isinstance(answer, dict) else answer}")

    started = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses, time.perf_counter() - started, refusals[0] if refusals else "none"


def probe(port: int, every: float, stop: threading.Event, times: list[float]) -> None:
    client = Client(port, VICTIM)
    while not stop.is_set():
        started = time.perf_counter()
        status, _ = client.send("GET", "/api/rules")
        times.append(time.perf_counter() - started)
        assert status == 200
        stop.wait(every)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--new-browsers", action="store_true", help="no owner cookie: every request a new browser")
    parser.add_argument("--probe-ms", type=float, default=50.0)
    parser.add_argument("--max-stored-games", default="50")
    parser.add_argument("--max-games-per-owner", default="16")
    parser.add_argument("--max-new-games-per-minute", default="30")
    parser.add_argument("--max-new-owners-per-minute", default="30")
    args = parser.parse_args()
    caps = [
        f"--{name.replace('_', '-')}={getattr(args, name)}"
        for name in ("max_stored_games", "max_games_per_owner", "max_new_games_per_minute", "max_new_owners_per_minute")
    ]
    with tempfile.TemporaryDirectory() as folder:
        server, port = start_server(Path(folder) / "data", caps)
        try:
            victim = Client(port, VICTIM)
            before = victims_games(victim)
            ids = (before["playing"][1]["id"], before["finished"][1]["id"])
            stop, times = threading.Event(), []
            prober = threading.Thread(target=probe, args=(port, args.probe_ms / 1000, stop, times))
            prober.start()
            statuses, seconds, refusal = flood(
                port, args.requests, args.connections, None if args.new_browsers else FLOODER
            )
            stop.set()
            prober.join()
            victim = Client(port, VICTIM)  # a new connection: the first one idled past uvicorn's keep-alive
            after = snapshot(victim, *ids)
            legal = after["playing"][1]["state"]["legal"][0]["id"]
            moved, _ = victim.send("POST", f"/api/games/{ids[0]}/move", {"action": legal})
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)
    who = "new browsers (no cookie)" if args.new_browsers else "one browser"
    shown = ", ".join(f"{status} ×{count}" for status, count in sorted(statuses.items()))
    print(f"caps: {' '.join(caps)}")
    print(
        f"flood: {args.requests} POST /api/games from {who}, {args.connections} connections, {seconds:.1f} s: {shown}"
    )
    print(f"first refusal: {refusal}")
    intact = "yes" if after == before else "NO"
    print(f"the other player's game in progress, finished game and record as before: {intact}; its next move: {moved}")
    quantiles = statistics.quantiles(times, n=10) if len(times) > 1 else times * 9
    print(
        f"GET /api/rules during the flood: {len(times)} requests, median {1000 * statistics.median(times):.1f} ms, "
        f"90th percentile {1000 * quantiles[8]:.1f} ms, slowest {1000 * max(times):.1f} ms"
    )


if __name__ == "__main__":
    main()
