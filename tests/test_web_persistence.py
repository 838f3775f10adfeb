"""kahuna-serve's games outlive the page and the server (docs/WEB.md, API): the game store, turn summaries,
stop, undo, rematch, the rules panel.  Through Starlette's test client, and a real server for stop.
"""

from __future__ import annotations

import http.client
import json
import sqlite3
import threading
import time

import numpy as np
import pytest
import tomllib

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("uvicorn", reason='needs the web extra: pip install -e ".[web]"')

from helpers import thought
from starlette.testclient import TestClient

from kahuna_arena.records import check_record
from kahuna_arena.replay import replay
from kahuna_arena.store import ResultsStore
from kahuna_env.actions import DISCARD, DRAW, PASS, TAKE, describe_action
from kahuna_env.board import ISLANDS, NUM_ISLANDS, NUM_LINES
from kahuna_web.app import create_app
from kahuna_web.gamestore import STORE_FILE, GameStore, GameStoreError, StoredGame, open_data_folder
from kahuna_web.owners import owner_key
from kahuna_web.rulebook import RULEBOOK_FILE, read_rules, rule_sections
from kahuna_web.server import main as serve_main

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
HUGE = 10**6
OWNER = "persistence-test-browser-00000000"
"""The owner token of the test's browser: the same one before and after a restart (its games are its own)."""


def local_client(app, owner=OWNER, **options):
    """The test client of one browser: ``Host: 127.0.0.1`` and the owner cookie ``owner``."""
    return TestClient(app, base_url="http://127.0.0.1", cookies={"kahuna_owner": owner}, **options)


def assert_one_line_4xx(response, status):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error and "\n" not in error and "Traceback" not in error and "/" not in error.replace("..", ""), error
    return error


def new_game(client, **request):
    response = client.post("/api/games", json={"opponent": "greedy", "seat": 0, "seed": 11, **request})
    assert response.status_code == 201, response.text
    return response.json()


def play(client, data, rng, moves):
    for _ in range(moves):
        if data["state"]["over"]:
            break
        legal = data["state"]["legal"]
        action = legal[int(rng.integers(len(legal)))]["id"]
        response = client.post(f"/api/games/{data['id']}/move", json={"action": action})
        assert response.status_code == 200, response.text
        data = response.json()
    return data


def card_phase_moves(data):
    """The person's legal plays and discards now: the actions an undo may take back (not a draw, take or pass)."""
    return [move["id"] for move in data["state"]["legal"] if not DRAW <= move["id"] <= PASS]


def play_a_card(client, data, rng, limit=60):
    """Random moves until the person can play or discard a card, then one of those (which an undo may take back)."""
    for _ in range(limit):
        if card_phase_moves(data):
            break
        data = play(client, data, rng, 1)
    moves = card_phase_moves(data)
    assert moves, "no play or discard came within the limit"
    response = client.post(f"/api/games/{data['id']}/move", json={"action": moves[int(rng.integers(len(moves)))]})
    assert response.status_code == 200, response.text
    return response.json()


def comparable(state):
    """A game's state without what changes between two answers of the same position (nothing, today)."""
    return json.loads(json.dumps(state))


# ------------------------------------------------------------------------------------------------ the game store
def test_a_restarted_server_continues_the_game_and_its_record_downloads(tmp_path):
    rng = np.random.default_rng(1)
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        data = play(client, new_game(client), rng, 12)
        game_id = data["id"]
        assert (tmp_path / STORE_FILE).is_file()
    # A second server on the same data folder: the game as it was, and it goes on.
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        again = client.get(f"/api/games/{game_id}")
        assert again.status_code == 200
        assert comparable(again.json()["state"]) == comparable(data["state"])
        data = play(client, again.json(), rng, 6)
        assert len(data["state"]["log"]) > len(again.json()["state"]["log"])
        assert client.post(f"/api/games/{game_id}/abandon").status_code == 200
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        record = client.get(f"/api/games/{game_id}/record")
        assert record.status_code == 200
        body = record.json()
        check_record(body)
        assert body["finished"] is False and len(body["actions"]) == len(data["state"]["log"])
        final = replay(body)
        state = client.get(f"/api/games/{game_id}").json()["state"]
        assert state["abandoned"] and final.to_dict()["bridges"] == state["lines"]


def test_a_finished_game_reloads_without_its_agent(tmp_path):
    """Its record and end screen come back even when its agent file is gone."""
    agents = tmp_path / "agents"
    agents.mkdir()
    games = open_data_folder(tmp_path / "data")
    with local_client(create_app(games=games, agents_dir=agents)) as client:
        data = play(client, new_game(client), np.random.default_rng(7), 4)
        client.post(f"/api/games/{data['id']}/abandon")
        games._db.execute("UPDATE web_games SET opponent = 'agents/gone.pt' WHERE id = ?", (data["id"],))
        client.app.state.store._sessions.clear()
        again = client.get(f"/api/games/{data['id']}")
        assert again.status_code == 200 and again.json()["state"]["abandoned"]
        assert client.get(f"/api/games/{data['id']}/record").json()["players"][1] == "agents/gone.pt"


def test_a_reload_gets_the_same_game(tmp_path):
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        data = play(client, new_game(client, seat=1), np.random.default_rng(2), 5)
        first = client.get(f"/api/games/{data['id']}").json()
        second = client.get(f"/api/games/{data['id']}").json()
        assert first == second and first["state"]["legal"] == data["state"]["legal"]
        assert first["state"]["thinking"] is False


def test_the_game_store_refuses_files_it_does_not_own_and_leaves_them_unchanged(tmp_path, capsys):
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / STORE_FILE).write_bytes(b"this is not an SQLite file, just some bytes " * 50)
    before = (corrupt / STORE_FILE).read_bytes()
    with pytest.raises(GameStoreError) as bad:
        open_data_folder(corrupt)
    assert "not a kahuna-serve game store" in str(bad.value) and "\n" not in str(bad.value)
    assert (corrupt / STORE_FILE).read_bytes() == before
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with ResultsStore(foreign / STORE_FILE):
        pass  # a results store under the game store's name
    tables = sqlite3.connect(foreign / STORE_FILE).execute("SELECT name FROM sqlite_master").fetchall()
    with pytest.raises(GameStoreError, match="not a kahuna-serve game store"):
        open_data_folder(foreign)
    assert sqlite3.connect(foreign / STORE_FILE).execute("SELECT name FROM sqlite_master").fetchall() == tables
    for folder, words in ((corrupt, "not a kahuna-serve game store"), (tmp_path / "file.txt", "is not a folder")):
        if folder.suffix:
            folder.write_text("x", encoding="utf-8")
        with pytest.raises(SystemExit) as stop:
            serve_main(["--port", "0", "--data", str(folder)])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("kahuna-serve: error: --data: ") and words in err and err.count("\n") == 1, err


def test_a_change_that_cannot_be_stored_is_refused_and_not_played(tmp_path):
    """Issue 65: nothing answers 2xx that was not written; after a restart every acknowledged move is there."""
    games = open_data_folder(tmp_path)
    with local_client(create_app(games=games)) as client:
        rng = np.random.default_rng(8)
        data = play_a_card(client, play(client, new_game(client), rng, 4), rng)  # an undo may take it back
        game = f"/api/games/{data['id']}"
        games._db.execute("PRAGMA query_only = 1")  # every write now fails as on a read-only file
        move = card_phase_moves(data)[0]
        for answer in (
            client.post(f"{game}/move", json={"action": move}),
            client.post(f"{game}/undo"),
            client.post(f"{game}/abandon"),
            client.post("/api/games", json={"opponent": "greedy"}),
            client.post(f"{game}/rematch"),
        ):
            assert assert_one_line_4xx(answer, 503) == "not saved: the game store is read-only"
        assert client.get(game).json() == data | {"steps": []}  # nothing of it was played in memory either
        games._db.execute("PRAGMA query_only = 0")
        assert client.post(f"{game}/move", json={"action": move}).status_code == 200
        last = client.post(f"{game}/undo")
        assert last.status_code == 200, last.text
        last = last.json()
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        assert client.get(game).json()["state"] == last["state"]


def test_a_read_only_game_store_is_said_in_one_line_at_start(tmp_path, monkeypatch, capsys):
    open_data_folder(tmp_path).close()
    connect = sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda target, **options: connect(f"file:{target}?mode=ro", uri=True, **options)
    )
    with pytest.raises(SystemExit) as stop:
        serve_main(["--port", "0", "--data", str(tmp_path)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert "the game store is read-only" in err and "not a kahuna-serve game store" not in err


def test_a_store_from_before_owners_is_migrated_and_its_games_claimed_by_the_first_browser(tmp_path):
    from kahuna_web import gamestore

    old = sqlite3.connect(tmp_path / STORE_FILE)  # layout 1, as kahuna-serve wrote it before games had owners
    old.executescript(gamestore._SCHEMA)
    old.execute("INSERT INTO schema_version VALUES (1)")
    for name, status in (("legacy-playing", "playing"), ("legacy-over", "abandoned")):
        old.execute(
            "INSERT INTO web_games VALUES (?, 'c', 'greedy', 0, '11', '{}', '[]', '[]', ?, 1.0, 1.0)", (name, status)
        )
    old.commit()
    old.close()
    games = open_data_folder(tmp_path)
    assert games._db.execute("SELECT version FROM schema_version").fetchone() == (gamestore.SCHEMA_VERSION,)
    app = create_app(games=games)
    with local_client(app) as first, local_client(app, owner="persistence-test-other-browser-000") as other:
        assert first.get("/api/games/legacy-playing").status_code == 200  # claimed
        assert_one_line_4xx(other.get("/api/games/legacy-playing"), 404)
        assert games.load("legacy-playing").owner == owner_key(OWNER)
        assert other.get("/api/games/legacy-over/record").status_code == 200


def test_a_damaged_stored_game_is_a_one_line_4xx_and_nothing_else_changes(tmp_path):
    games = open_data_folder(tmp_path)
    app = create_app(games=games)
    with local_client(app) as client:
        good = new_game(client)
        bad = new_game(client, seed=12)
        app.state.store._sessions.clear()  # both set aside: they reload from the file
        games._db.execute("UPDATE web_games SET actions = '[999, 1' WHERE id = ?", (bad["id"],))
        assert_one_line_4xx(client.get(f"/api/games/{bad['id']}"), 422)
        games._db.execute("UPDATE web_games SET actions = '[151, 151, 151]' WHERE id = ?", (bad["id"],))
        assert "does not replay" in assert_one_line_4xx(client.get(f"/api/games/{bad['id']}"), 422)
        assert client.get(f"/api/games/{good['id']}").json()["state"] == good["state"]
        for path in ("/api/games/nope", "/api/games/%00", "/api/games/" + "x" * 300):
            assert_one_line_4xx(client.get(path), 404)


def test_the_game_store_is_bounded_and_makes_room_only_with_games_nobody_can_miss(tmp_path):
    now = [1_000_000.0]
    store = GameStore(
        tmp_path / "games.sqlite", max_games=3, retention_seconds=100, idle_seconds=1000, clock=lambda: now[0]
    )

    def stored(name, status):
        return StoredGame(name, "c", "greedy", 0, 1, {}, [], [], status, owner="someone")

    store.save(stored("old-finished", "over"))
    store.save(stored("playing", "playing"))
    now[0] += 150
    store.save(stored("new-finished", "abandoned"))
    store.save(stored("fourth", "playing"))  # the finished game past its retention makes room
    assert store.count() == 3 and store.load("old-finished") is None and store.load("new-finished") is not None
    with pytest.raises(GameStoreError, match="no room for a new game") as full:
        store.save(stored("fifth", "playing"))  # a finished game within its retention, games in progress: kept
    assert full.value.status == 503 and "\n" not in str(full.value)
    assert store.count() == 3 and store.load("fifth") is None
    now[0] += 1000  # "playing" untouched for 1150 s: idle; "new-finished" past its retention too, but kept
    store.save(stored("sixth", "playing"), keep=["new-finished"])
    assert store.count() == 3 and store.load("playing") is None and store.load("new-finished") is not None
    with pytest.raises(GameStoreError, match=r"the game store reached its size limit \(64 kB\)"):
        GameStore(tmp_path / "small.sqlite", max_bytes=16 * 4096).save(
            StoredGame("big", "c", "greedy", 0, 1, {"x": "y" * 200_000}, [], [], "playing")
        )


# ------------------------------------------------------------------------------------------------ turn summaries
def test_the_turn_summary_tells_the_opponents_whole_turn_without_hidden_cards():
    rng = np.random.default_rng(3)
    seen = {"removed": 0, "control": 0, "scoring": 0, "hidden": 0, "take": 0}
    with local_client(create_app()) as client:
        for seed in range(3):
            data = new_game(client, opponent="random", seed=seed)  # random discards face down at times
            session = client.app.state.store.get(data["id"])
            while not data["state"]["over"]:
                face_up = data["state"]["face_up"]  # the row before the move, whose cards a take names
                data = play(client, data, rng, 1)
                steps = data["steps"]
                theirs = [step for step in steps if step["player"] == 1]
                state = data["state"]
                if theirs and not state["over"]:  # the summary is the opponent's turn just played
                    summary = state["turn_summary"]
                    assert [entry["text"] for entry in summary] == [step["text"] for step in theirs]
                for step in steps:
                    hidden = step["player"] == 1 and step["text"] == "discard a card face down"
                    seen["hidden"] += hidden
                    if hidden:
                        assert step["action"] is None  # its id would name the card
                    elif TAKE <= step["action"] < PASS:  # the card's name, not the slot's number
                        assert step["text"] == f"take {face_up[step['action'] - TAKE]} (face-up)"
                        seen["take"] += 1
                    else:
                        assert describe_action(step["action"]) == step["text"]
                    face_up = step["state"]["face_up"]
                    assert all(0 <= line < NUM_LINES for line in step["removed_bridges"])
                    for change in step["control_changes"]:
                        assert 0 <= change["island"] < NUM_ISLANDS and change["from"] != change["to"]
                    seen["removed"] += bool(step["removed_bridges"])
                    seen["control"] += bool(step["control_changes"])
                    if step["scoring"] is not None:
                        seen["scoring"] += 1
                        assert step["scoring"]["detail"]["kind"] in ("interim", "final", "no_bridges")
            result = data["state"]["result"]
            kinds = [entry["detail"]["kind"] for entry in result["scoring_breakdown"]]
            assert (
                kinds[-1] in ("final", "no_bridges")
                and sum(entry["points"][0] for entry in result["scoring_breakdown"]) == result["scores"][0]
            )
            assert result["revealed_hands"] == [[ISLANDS[i] for i in session.game.hand(p)] for p in (0, 1)]
    assert all(seen.values()), seen


def test_a_turn_summary_names_the_bridges_a_placement_throws_off():
    """Summaries follow the engine: every removed line was owned before and is free after, control changes match."""
    from kahuna_env.engine import KahunaGame
    from kahuna_web.views import action_summary, public_facts

    rng = np.random.default_rng(5)
    sweeps = 0
    for seed in range(20):
        game = KahunaGame(seed=seed)
        while not game.is_over:
            legal = game.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
            before, player = public_facts(game), game.current_player
            owners = [game.owner(line) for line in range(NUM_LINES)]
            game.step(action)
            entry = action_summary(before, game, action, player, viewer=1 - player)
            assert entry["removed_bridges"] == [
                line for line in range(NUM_LINES) if owners[line] is not None and game.owner(line) is None
            ]
            if action < 54 and entry["removed_bridges"]:  # a placement that took control threw bridges off
                sweeps += 1
                assert any(change["to"] == player for change in entry["control_changes"])
            if DISCARD <= action < DRAW:
                assert entry["action"] is None and entry["text"] == "discard a card face down"
    assert sweeps


# ------------------------------------------------------------------------------------------------ undo, rematch
def test_undo_takes_back_your_last_play_of_the_turn_and_the_record_says_so():
    rng = np.random.default_rng(4)
    with local_client(create_app()) as client:
        data = new_game(client, seat=0)
        assert_one_line_4xx(client.post(f"/api/games/{data['id']}/undo"), 409)  # nothing played yet
        assert not data["state"]["can_undo"]
        data = play_a_card(client, play(client, data, rng, 8), rng)
        assert data["state"]["can_undo"] and data["state"]["current_player"] == 0
        session = client.app.state.store.get(data["id"])
        before = list(session.actions)
        mine = len(before) - 1  # the play or discard just made, in the turn still in progress
        undone = client.post(f"/api/games/{data['id']}/undo")
        assert undone.status_code == 200, undone.text
        state = undone.json()["state"]
        assert session.actions == before[:mine] and len(state["log"]) == mine
        assert state["current_player"] == 0 and before[mine] in {move["id"] for move in state["legal"]}
        assert state["undos"] == 1 and session.undos == [{"ply": mine, "actions": before[mine:]}]
        assert undone.json()["notes"] == [f"you took moves back 1 time, at ply {mine}"]
        data = play(client, undone.json(), rng, 3)
        client.post(f"/api/games/{data['id']}/abandon")
        assert_one_line_4xx(client.post(f"/api/games/{data['id']}/undo"), 409)  # finished
        record = client.get(f"/api/games/{data['id']}/record").json()
        check_record(record)
        # The players keep their names; the undos are a field of the record, which replays as played.
        assert record["players"] == ["human", "greedy"]
        assert record["undos"] == [{"player": 0, "ply": mine, "actions": before[mine:]}]
        assert replay(record).to_dict() == session.game.to_dict()
        replayed = client.post("/api/replay", json=record).json()
        assert replayed["players"] == ["human", "greedy"]
        assert replayed["notes"] == [f"human took moves back 1 time, at ply {mine}"]
        for bad in ([{"player": 2, "ply": 1, "actions": []}], [{"ply": 1, "actions": []}], {"ply": 1}):
            assert "'undos" in assert_one_line_4xx(client.post("/api/replay", json=dict(record, undos=bad)), 422)


def test_undo_survives_a_restart(tmp_path):
    rng = np.random.default_rng(6)
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        data = play_a_card(client, play(client, new_game(client), rng, 6), rng)
        undone = client.post(f"/api/games/{data['id']}/undo")
        assert undone.status_code == 200, undone.text
        undone = undone.json()
    with local_client(create_app(games=open_data_folder(tmp_path))) as client:
        again = client.get(f"/api/games/{data['id']}").json()
        assert again["state"] == undone["state"]


def test_a_rematch_keeps_the_opponent_and_rules_with_a_new_seed_and_can_swap_seats():
    with local_client(create_app()) as client:
        data = new_game(client, opponent="random", seat=0, variant="planning")
        same = client.post(f"/api/games/{data['id']}/rematch", json={"swap_seats": False})
        swapped = client.post(f"/api/games/{data['id']}/rematch", json={"swap_seats": True})
        plain = client.post(f"/api/games/{data['id']}/rematch")  # no body: the same seat
        for answer, seat in ((same, 0), (swapped, 1), (plain, 0)):
            assert answer.status_code == 201, answer.text
            body = answer.json()
            assert body["id"] != data["id"] and body["seat"] == seat and body["opponent"] == "random"
            assert body["config"] == data["config"]
        assert swapped.json()["steps"] and swapped.json()["steps"][0]["player"] == 0  # the agent opens now
        for bad in ({"swap_seats": "yes"}, {"swap": True}, [True]):
            assert_one_line_4xx(client.post(f"/api/games/{data['id']}/rematch", json=bad), 400)
        assert_one_line_4xx(client.post("/api/games/nope/rematch", json={"swap_seats": True}), 404)


# ------------------------------------------------------------------------------------------------ stop
def request(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


class CountingFlag:
    """Wraps the flag a search reads before every simulation: counts the readings before and after the stop."""

    def __init__(self, inner, session):
        self.inner = inner
        self.session = session
        self.readings = 0  # once the stop was asked for
        self.before = 0

    def is_set(self):
        if self.session.stopping:
            self.readings += 1
        else:
            self.before += 1
        return self.inner.is_set()


def test_stop_makes_a_searching_agent_move_at_once_and_the_game_goes_on():
    app = create_app(max_simulations=HUGE)
    store = app.state.store
    with local_client(app) as client:
        session = store.open_game(
            {"opponent": f"mcts:{HUGE}", "seat": 1, "seed": 2}, client="testclient", owner=owner_key(OWNER)
        )
        counter = CountingFlag(session.opponent.cancel, session)
        session.opponent.cancel = counter  # what the search reads before every simulation
        opening = {}

        def open_the_game():  # what POST /api/games runs in the bot queue
            try:
                opening["steps"] = session.advance()
            finally:
                session.lock.release()

        thread = threading.Thread(target=open_the_game)
        thread.start()
        for _ in range(30000):  # hang guard: the search starts at once
            if session.thinking and counter.before > 10:
                break
            time.sleep(0.01)
        during = client.get(f"/api/games/{session.id}").json()
        assert during["state"]["thinking"] is True and during["state"]["legal"] == []
        assert during["state"]["thinking_seconds"] >= 0
        assert client.post(f"/api/games/{session.id}/stop").json() == {"stopped": True}
        thread.join(timeout=600)
        assert not thread.is_alive()
        # The search ended at its next simulation (the one reading that found the flag set), far from its
        # budget, and no other search started for the rest of the agent's turn.
        assert counter.readings == 1 and counter.before < HUGE
        steps = opening["steps"]
        assert steps and all(step["player"] == 0 for step in steps)
        state = client.get(f"/api/games/{session.id}").json()["state"]
        assert state["current_player"] == 1 and state["thinking"] is False and not state["abandoned"] and state["legal"]
        assert_one_line_4xx(client.post(f"/api/games/{session.id}/stop"), 409)  # nothing is thinking now
        assert client.post(f"/api/games/{session.id}/abandon").status_code == 200
        assert_one_line_4xx(client.post(f"/api/games/{session.id}/stop"), 409)


def test_a_stop_asked_while_the_move_waits_in_the_bot_queue_makes_the_agent_move_at_once():
    # The page shows "thinking" (and its Stop button) as soon as a move is queued.  A stop asked before the
    # queued computation began was refused (409, as if nothing were thinking) or, when the asking page left
    # meanwhile, cleared as the computation began: either way the search then ran its whole budget.
    app = create_app(max_simulations=HUGE)
    store = app.state.store
    with local_client(app) as client:
        session = store.open_game(
            {"opponent": f"mcts:{HUGE}", "seat": 1, "seed": 2}, client="testclient", owner=owner_key(OWNER)
        )
        counter = CountingFlag(session.opponent.cancel, session)
        session.opponent.cancel = counter
        session.freeze()  # what a move request does before it waits in the bot queue (the game's lock is held)
        assert client.get(f"/api/games/{session.id}").json()["state"]["thinking"] is True
        assert client.post(f"/api/games/{session.id}/stop").json() == {"stopped": True}
        try:
            steps = session.advance()  # the queued computation's turn: the agent plays its turn at once
        finally:
            session.lock.release()
        assert steps and all(step["player"] == 0 for step in steps)
        assert counter.before == 0  # no simulation ran
        assert not (session.stopping or session.thinking or session.move_pending)  # nothing left for the next move
        state = client.get(f"/api/games/{session.id}").json()["state"]
        assert state["current_player"] == 1 and state["thinking"] is False and not state["abandoned"] and state["legal"]
        assert_one_line_4xx(client.post(f"/api/games/{session.id}/stop"), 409)  # nothing is pending now


def test_the_best_move_so_far_is_the_searchs_then_the_priors():
    from kahuna_env.agents.mcts import MCTSAgent, action_priors
    from kahuna_env.engine import KahunaGame
    from kahuna_web.opponents import best_move_so_far

    game = KahunaGame(seed=3)
    legal = game.legal_actions()
    agent = MCTSAgent(simulations=10, seed=0)
    assert best_move_so_far(agent, game, np.random.default_rng(0), found=legal[1]) == legal[1]
    illegal = next(action for action in range(179) if action not in legal)
    for found in (None, illegal):  # no simulation done, or a move of another position: the prior's favourite
        move = best_move_so_far(agent, game, np.random.default_rng(0), found=found)
        priors = action_priors(game.determinize(game.current_player, np.random.default_rng(0)), legal)
        assert move == legal[int(np.argmax(priors))]


# ------------------------------------------------------------------------------------------------ rules
def test_the_rules_panel_serves_the_packaged_players_rulebook():
    """The panel shows kahuna_web/static/RULEBOOK.md, package data of the wheel; docs/RULES.md is not copied."""
    static = RULEBOOK_FILE.parent
    assert static == ROOT / "kahuna_web" / "static" and RULEBOOK_FILE.is_file()
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    globs = package_data["package-data"]["kahuna_web"]
    assert any(RULEBOOK_FILE.relative_to(static.parent).match(pattern) for pattern in globs), globs
    developers_rules = (ROOT / "docs" / "RULES.md").read_text(encoding="utf-8")
    assert all(path.read_text(encoding="utf-8") != developers_rules for path in static.glob("*.md"))  # no copy
    with local_client(create_app()) as client:
        sections = client.get("/api/rules").json()
    assert sections == rule_sections(RULEBOOK_FILE.read_text(encoding="utf-8")) == read_rules()
    titles = [section["title"] for section in sections]
    assert {"Setup", "A turn", "Control", "Rounds and scoring"} <= set(titles)
    for section in sections:
        assert section["text"] and "<script" not in section["html"]
        assert "[<code>test_" not in section["html"] and "[also <code>" not in section["html"]  # for developers
    assert "<strong>Place</strong>" in next(s["html"] for s in sections if s["title"] == "A turn")


def open_thinking(client, seed=4):
    """A new game whose searching agent (a search of hours) opens: 202 at once, the game thinking; its path."""
    answer = client.post("/api/games", json={"opponent": f"mcts:{HUGE}", "seat": 1, "seed": seed})
    assert answer.status_code == 202, answer.text
    opened = answer.json()
    assert opened["opponent"] == f"mcts:{HUGE}" and opened["seat"] == 1 and opened["steps"] == []
    assert opened["state"]["thinking"] is True and opened["state"]["legal"] == [] and opened["state"]["log"] == []
    return f"/api/games/{opened['id']}"


def test_a_new_games_opening_answers_its_id_at_once_and_stop_keeps_the_game_with_its_first_move():
    """Issue 65: Stop during a new game's opening reaches that game: the agent plays its best move so far."""
    app = create_app(max_simulations=HUGE)
    with local_client(app) as client:
        game = open_thinking(client)
        for _ in range(30000):  # hang guard: the search starts at once
            during = client.get(game).json()["state"]
            if "thinking_seconds" in during:
                break
            time.sleep(0.01)
        assert during["thinking"] is True and during["legal"] == [] and during["log"] == []
        assert_one_line_4xx(client.post(f"{game}/undo"), 409)  # a move is being computed
        assert_one_line_4xx(client.get(f"{game}/analysis"), 409)
        assert client.post(f"{game}/stop").json() == {"stopped": True}
        state = thought(client, game).json()["state"]
        assert state["current_player"] == 1 and not state["thinking"] and not state["abandoned"] and state["legal"]
        assert state["log"] and all(entry["player"] == 0 for entry in state["log"])  # the agent's opening turn
        assert_one_line_4xx(client.post(f"{game}/stop"), 409)  # nothing is thinking now


def test_an_opening_that_cannot_be_stored_forgets_the_game_and_says_why(tmp_path):
    """A searching opening answered 202 whose moves cannot be stored: its owner is told why, nobody else anything."""
    games = open_data_folder(tmp_path)
    with local_client(create_app(max_simulations=HUGE, games=games)) as client:
        game = open_thinking(client)
        games._db.execute("PRAGMA query_only = 1")  # every write now fails as on a read-only file
        assert client.post(f"{game}/stop").json() == {"stopped": True}
        answer = thought(client, game)
        assert assert_one_line_4xx(answer, 503) == "not saved: the game store is read-only"
        assert assert_one_line_4xx(client.get(game), 503) == "not saved: the game store is read-only"
        stranger = local_client(client.app, owner="persistence-test-stranger-00000000")  # no second lifespan
        assert_one_line_4xx(stranger.get(game), 404)  # another owner: no such game
        games._db.execute("PRAGMA query_only = 0")


def test_a_request_that_reached_a_game_before_its_opening_failed_answers_the_failure():
    """A GET that took the game just before its opening failed says why, not the position rolled back (a race)."""
    from kahuna_web.sessionstore import SessionStore
    from kahuna_web.validate import WebError

    store = SessionStore()
    session = store.open_game({"opponent": "mcts:50", "seat": 1, "seed": 3}, "testclient", "someone")
    reached = store.get(session.id, "someone")  # a request's view of the game, taken before the failure
    assert reached.response()["state"]["thinking"] is False
    store.fail(session, WebError("not saved: the game store is read-only", 503))
    session.lock.release()
    for answer in (reached.response, reached.thinking_response):
        with pytest.raises(WebError, match=r"^not saved: the game store is read-only$") as refused:
            answer()
        assert refused.value.status == 503
    with pytest.raises(WebError, match="read-only"):  # asked for afresh: the failure, as before
        store.get(session.id, "someone")


def test_a_stopped_search_plays_the_move_its_search_reports():
    """The search's own best move so far (SearchCancelled.result.move) is the one played, when legal."""
    from types import SimpleNamespace

    from kahuna_env.agents.mcts import SearchCancelled
    from kahuna_web.sessionstore import SessionStore

    session = SessionStore().open_game({"opponent": "mcts:50", "seat": 1, "seed": 3}, "testclient", "someone")
    legal = session.game.legal_actions()

    def stopped_search(game):  # the person presses Stop while it searches
        session.stopping = True
        raise SearchCancelled("stopped", SimpleNamespace(move=legal[-1]))

    session._opponent_chooser = stopped_search
    assert session._agent_move(session.game) == legal[-1]
    session.stopping = False

    def cancelled_search(game):  # the page left: a cancelled search abandons, as before
        session.cancel.set()
        raise SearchCancelled("cancelled", SimpleNamespace(move=legal[-1]))

    session._opponent_chooser = cancelled_search
    with pytest.raises(SearchCancelled):
        session._agent_move(session.game)
    session.lock.release()
