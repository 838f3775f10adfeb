"""A game belongs to the browser that created it, and the caps fall on whoever floods (issue 65; docs/WEB.md,
Threat model).  Through Starlette's test client: each ``browser`` is a client with its own owner cookie; the
X-Forwarded-For and storage-error checks run a real ``kahuna-serve`` (tests/test_web_security.py).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')

from starlette.testclient import TestClient

from kahuna_web.app import create_app
from kahuna_web.gamestore import open_data_folder
from kahuna_web.owners import OWNER_COOKIE, RecentEvents, owner_key
from kahuna_web.server import build_parser, limits
from kahuna_web.sessionstore import Caps

MINE = "owners-test-browser-mine-00000000"
THEIRS = "owners-test-browser-theirs-000000"


def browser(app, owner=None, **options):
    """One browser: ``Host: 127.0.0.1``, its owner cookie (``None``: none yet, as on a first visit)."""
    cookies = {OWNER_COOKIE: owner} if owner is not None else None
    return TestClient(app, base_url="http://127.0.0.1", cookies=cookies, **options)


def new_game(client, **request):
    answer = client.post("/api/games", json={"opponent": "random", "seat": 0, "seed": 11, **request})
    assert answer.status_code == 201, answer.text
    return answer.json()


def play(client, data, moves, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        legal = data["state"]["legal"]
        answer = client.post(
            f"/api/games/{data['id']}/move", json={"action": legal[int(rng.integers(len(legal)))]["id"]}
        )
        assert answer.status_code == 200, answer.text
        data = answer.json()
    return data


def assert_no_such_game(answer, game_id):
    """The answer a game that does not exist gets: whether it exists for another owner does not show."""
    assert answer.status_code == 404, answer.text
    assert answer.json() == {"error": f"no game {game_id!r} on this server"}


def test_the_first_answer_gives_a_browser_its_owner_cookie_and_a_forged_one_counts_for_none():
    with browser(create_app()) as client:
        page = client.get("/")
        cookie = page.headers["set-cookie"]
        assert cookie.startswith(f"{OWNER_COOKIE}=")
        assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {part.strip() for part in cookie.split(";")}
        assert "set-cookie" not in client.get("/api/board").headers  # it carries it now
        token = client.cookies[OWNER_COOKIE]
        assert len(token) >= 32 and client.get("/api/rules").status_code == 200
    with browser(create_app()) as client:  # a link followed from another site: the browser withheld its cookie
        followed = client.get("/?game=abc", headers={"Sec-Fetch-Site": "cross-site"})
        assert followed.status_code == 200 and "set-cookie" not in followed.headers  # its token is not replaced
    for forged in ("x", "a" * 200, "bad token with spaces!!!!!!!!!!!!!!!"):
        with browser(create_app(), owner=forged) as client:
            fresh = client.get("/api/board").headers["set-cookie"]
            name, _, token = fresh.split(";")[0].partition("=")
            assert name == OWNER_COOKIE and token != forged and len(token) >= 32


def test_another_owner_cannot_read_move_undo_stop_abandon_or_download_a_game_by_its_id(tmp_path):
    app = create_app(games=open_data_folder(tmp_path))
    with browser(app, MINE) as mine, browser(app, THEIRS) as theirs, browser(app) as newcomer:
        data = play(mine, new_game(mine), 4)
        game = f"/api/games/{data['id']}"
        before = mine.get(game).json()
        legal = before["state"]["legal"][0]["id"]
        for client in (theirs, newcomer):
            for method, path, body in (
                ("GET", "", None),
                ("POST", "/move", {"action": legal}),
                ("POST", "/undo", None),
                ("POST", "/stop", None),
                ("POST", "/abandon", None),
                ("POST", "/rematch", None),
                ("POST", "/hint", None),
                ("GET", "/analysis", None),
                ("GET", "/record", None),
            ):
                assert_no_such_game(client.request(method, game + path, json=body), data["id"])
            assert_no_such_game(client.post("/api/analysis", json={"game": data["id"], "ply": 0}), data["id"])
        assert mine.get(game).json() == before  # nothing changed
        assert mine.post(f"{game}/abandon").status_code == 200
        # Once finished, its record may be read by anyone who has its id (it hides nothing any more); the game
        # itself stays its owner's.
        assert theirs.get(f"{game}/record").json() == mine.get(f"{game}/record").json()
        assert_no_such_game(theirs.get(game), data["id"])
    with browser(create_app(games=open_data_folder(tmp_path)), THEIRS) as theirs:  # after a restart too
        assert_no_such_game(theirs.get(game), data["id"])
    with browser(create_app(games=open_data_folder(tmp_path)), MINE) as mine:
        assert mine.get(game).json()["state"]["abandoned"]


def test_two_owners_behind_one_address_are_separate():
    """The per-owner caps fall on the owner alone; the per-address cap counts only browsers new to the server."""
    app = create_app(caps=Caps(games_per_owner=2, new_games_per_minute=3, new_owners_per_minute=3))
    with browser(app, MINE) as mine, browser(app, THEIRS) as theirs:  # one address: the test client's
        first = new_game(mine)
        for seed in range(2):
            new_game(mine, seed=seed)
        refused = mine.post("/api/games", json={"opponent": "random"})
        assert refused.status_code == 429 and "you started 3 games within a minute" in refused.json()["error"]
        assert new_game(theirs)["id"]  # the other browser is not held back
        # The first of mine made way for my third (two in progress at most): abandoned, and only mine.
        assert mine.get(f"/api/games/{first['id']}").json()["state"]["abandoned"]
        assert_no_such_game(theirs.get(f"/api/games/{first['id']}"), first["id"])
        # New browsers from this address: the third one's first game is one too many this minute ...
        newcomers = [browser(app) for _ in range(2)]
        assert new_game(newcomers[0])["id"]
        refused = newcomers[1].post("/api/games", json={"opponent": "random"})
        assert refused.status_code == 429 and "new players" in refused.json()["error"]
        # ... but browsers that already have games, and another address, go on.
        assert new_game(theirs, seed=5)["id"]
        with browser(app, client=("10.0.0.7", 4000)) as elsewhere:
            assert new_game(elsewhere)["id"]


def test_a_flood_of_new_games_from_one_owner_never_touches_another_owners_games(tmp_path):
    """Issue 65: ``--max-stored-games 50``; the flood fills the store with its own games, then is refused."""
    bounds, caps = limits(build_parser().parse_args(["--max-stored-games", "50", "--max-new-games-per-minute", "1000"]))
    games = open_data_folder(tmp_path, **bounds)
    app = create_app(games=games, caps=caps)
    with browser(app, MINE) as victim, browser(app, THEIRS) as flooder:
        playing = play(victim, new_game(victim, seed=1), 3)
        finished = new_game(victim, seed=2)
        victim.post(f"/api/games/{finished['id']}/abandon")
        old = new_game(victim, seed=3)
        victim.post(f"/api/games/{old['id']}/abandon")
        games._db.execute(  # finished a day and a minute ago: past its retention
            "UPDATE web_games SET updated = updated - ? WHERE id = ?", (bounds["retention_seconds"] + 60, old["id"])
        )
        kept = {gid: victim.get(f"/api/games/{gid}").json() for gid in (playing["id"], finished["id"])}
        record = victim.get(f"/api/games/{finished['id']}/record").content
        answers = [flooder.post("/api/games", json={"opponent": "random", "seed": k}) for k in range(150)]
        statuses = collections.Counter(answer.status_code for answer in answers)
        assert statuses == {201: 48, 503: 102}, statuses  # 50 games, 3 of them the victim's, one past retention
        refusal = next(answer.json()["error"] for answer in answers if answer.status_code == 503)
        assert (
            refusal.startswith("not saved: no room for a new game: the server keeps 50 games") and "\n" not in refusal
        )
        assert games.count() == 50 and len(games.owned(owner_key(THEIRS), "playing")) == caps.games_per_owner
        for gid, state in kept.items():  # the victim's game in progress and its recent finished game, as they were
            assert victim.get(f"/api/games/{gid}").json() == state
        assert victim.get(f"/api/games/{finished['id']}/record").content == record
        assert_no_such_game(victim.get(f"/api/games/{old['id']}"), old["id"])  # the only one that made room
        assert play(victim, kept[playing["id"]], 2)["state"]["log"]  # and the game goes on
        print(f"flood: {statuses[201]} games created, {statuses[503]} refused; the other owner's 2 games intact")


def test_the_per_minute_counts_forget_what_left_the_window():
    """Their memory is bounded by the keys active within the last minute, whatever the number of addresses."""
    now = [0.0]
    recent = RecentEvents(clock=lambda: now[0])
    assert all(recent.add_if_below(f"10.0.{k // 256}.{k % 256}", 1) for k in range(1000))
    assert not recent.add_if_below("10.0.0.0", 1)  # once within the minute
    now[0] = 61.0
    assert recent.add_if_below("10.0.0.0", 1) and len(recent._events) == 1
