"""kahuna-serve under concurrent requests (issue 76; docs/WEB.md, Threat model): a fresh server's first games
asked for all at once, and an owner's cap on games in progress under bursts of new games over many connections.

The requests are lined up by a barrier so that they reach the server together; the work is a bounded number
of requests, never a wait on the clock.
"""

from __future__ import annotations

import collections
import http.client
import json
import re
import threading

import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("uvicorn", reason='needs the web extra: pip install -e ".[web]"')

from helpers import running
from test_web_security import serving

from kahuna_web.app import create_app
from kahuna_web.gamestore import open_data_folder
from kahuna_web.owners import owner_key
from kahuna_web.sessionstore import Caps, SessionStore
from kahuna_web.validate import WebError


def post_game(port, owner, body):
    """``POST /api/games`` as the browser ``owner`` (``None``: without a cookie): its status and its JSON."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        headers = {"Content-Type": "application/json"}
        if owner is not None:
            headers["Cookie"] = f"kahuna_owner={owner}"
        connection.request("POST", "/api/games", body=json.dumps(body), headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


def together(count, work):
    """``work(k)`` for k in range(count), each in its own thread, started at once; their results in order."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def run(k):
        barrier.wait()
        results[k] = work(k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_a_fresh_server_answers_six_new_games_asked_at_once_without_a_500(tmp_path, monkeypatch):
    # A fresh process: its first games are the engine's first use, from six request threads at once
    # (kahuna_env.kernels sets the loops up under a lock; before, most of them were 500s).
    monkeypatch.setenv("KAHUNA_JIT", "1")
    with serving("--data", str(tmp_path / "data"), cwd=tmp_path) as (port, errors):
        opponents = ("random", "greedy")
        answers = together(6, lambda k: post_game(port, None, {"opponent": opponents[k % 2], "seat": 1, "seed": k}))
    assert [status for status, _ in answers] == [201] * 6, answers
    assert all(data["steps"] for _, data in answers)  # each agent opened (seat 1: the agent moves first)
    assert not [line for line in errors if "Traceback" in line or "Error" in line], errors


CAP = 4
BURST = 40
"""New games each owner asks for in the burst, over :data:`CONNECTIONS` connections shared by the owners."""
CONNECTIONS = 8
PER_MINUTE = 30
OWNERS = [f"concurrency-test-owner-{k}-000000000000" for k in range(3)]


def test_the_cap_on_games_in_progress_holds_under_concurrent_bursts(tmp_path):
    app = create_app(games=open_data_folder(tmp_path), caps=Caps(games_per_owner=CAP, new_games_per_minute=PER_MINUTE))
    requests = [(OWNERS[k % len(OWNERS)], k) for k in range(BURST * len(OWNERS))]

    def connection(c):
        return [
            (owner, post_game(port, owner, {"opponent": "random", "seed": seed}))
            for owner, seed in requests[c::CONNECTIONS]
        ]

    with running(app) as port:
        answers = [answer for batch in together(CONNECTIONS, connection) for answer in batch]
    store = app.state.store
    for owner in OWNERS:
        mine = [(status, data) for who, (status, data) in answers if who == owner]
        assert len(mine) == BURST and {status for status, _ in mine} <= {201, 429}, mine
        playing = store.games.owned(owner_key(owner), "playing")
        assert len(playing) == CAP  # never more, once the burst is over
        in_memory = [s for s in store._sessions.values() if s.owner == owner_key(owner) and not s.finished]
        assert len(in_memory) <= CAP
        started = [data["id"] for status, data in mine if status == 201]
        assert set(playing) <= set(started)  # the newest of its own games are the ones left in progress
        refusals = [data["error"] for status, data in mine if status == 429]
        for error in refusals:
            assert "\n" not in error
        # Every request counts against the per-minute cap: the ones beyond it say so, with the true number.
        per_minute = [e for e in refusals if e.startswith(f"you started {PER_MINUTE} games within a minute")]
        assert len(per_minute) == BURST - PER_MINUTE
        # The others found its games in progress all being computed: their count is the cap, never more.
        busy = [e for e in refusals if e not in per_minute]
        for error in busy:
            assert re.match(rf"you have {CAP} games in progress and this server allows {CAP}; ", error), error
        assert len(started) + len(busy) == PER_MINUTE


def test_a_game_that_starts_a_move_after_the_check_is_not_abandoned_and_the_new_game_is_taken_back():
    # The cap is checked, then the new game stored, then the oldest game abandoned: one that started a move
    # meanwhile cannot be, and the owner would be over its cap; the new game is refused instead, with the count.
    store = SessionStore(caps=Caps(games_per_owner=1))
    first = store.open_game({"opponent": "random"}, "10.0.0.1", "a")
    first.lock.release()
    admit = store._admit

    def admit_then_a_move_starts(owner, client):
        playing = admit(owner, client)
        assert first.lock.acquire(blocking=False)  # a move of the older game begins after the check
        return playing

    store._admit = admit_then_a_move_starts
    with pytest.raises(WebError) as refused:
        store.open_game({"opponent": "random"}, "10.0.0.1", "a")
    assert refused.value.status == 429
    assert str(refused.value).startswith("you have 1 game in progress and this server allows 1; ")
    assert store.games.owned("a", "playing") == [first.id] and not first.abandoned
    assert list(collections.Counter(s.owner for s in store._sessions.values()).values()) == [1]
    first.lock.release()
