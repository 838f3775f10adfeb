"""kahuna-serve's analysis board (docs/WEB.md, API): the agent's move probabilities, value and search for the
person's seat only, hints, replay positions, and every bad request refused in one line with nothing changed.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("torch", reason="the analysis needs a network (torch)")

from starlette.testclient import TestClient

from kahuna_arena.records import write_record
from kahuna_web.app import create_app
from kahuna_web.compute import BotQueue
from kahuna_web.owners import owner_key


def local_client(app, **options):
    return TestClient(app, base_url="http://127.0.0.1", **options)


def assert_one_line_4xx(response, status):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error and "\n" not in error and "Traceback" not in error, error
    return error


@pytest.fixture(scope="module")
def client():
    with local_client(create_app()) as test_client:
        yield test_client


def game_at_my_turn(client, moves=6, seed=21, seat=0):
    data = client.post("/api/games", json={"opponent": "greedy", "seat": seat, "seed": seed}).json()
    rng = np.random.default_rng(seed)
    for _ in range(moves):
        legal = data["state"]["legal"]
        data = client.post(f"/api/games/{data['id']}/move", json={"action": legal[int(rng.integers(len(legal)))]["id"]})
        data = data.json()
        assert not data["state"]["over"]
    return data


def test_the_analysis_covers_exactly_your_legal_moves_and_sums_to_one(client):
    data = game_at_my_turn(client)
    answer = client.get(f"/api/games/{data['id']}/analysis")
    assert answer.status_code == 200, answer.text
    analysis = answer.json()
    legal = {move["id"] for move in data["state"]["legal"]}
    assert {int(action) for action in analysis["probabilities"]} == legal
    assert sum(analysis["probabilities"].values()) == pytest.approx(1.0, abs=1e-9)
    assert all(p >= 0 for p in analysis["probabilities"].values())
    assert 0.0 <= analysis["value"] <= 1.0 and analysis["search"] is None and analysis["seat"] == 0
    assert client.get(f"/api/games/{data['id']}").json() == data | {"steps": []}  # nothing changed


def test_a_search_lists_its_top_moves_and_the_hint_is_its_choice(client):
    data = game_at_my_turn(client, seed=22)
    analysis = client.get(f"/api/games/{data['id']}/analysis?agent=champion&simulations=6").json()
    search = analysis["search"]
    legal = {move["id"] for move in data["state"]["legal"]}
    assert search and all(entry["action"] in legal and entry["visits"] > 0 for entry in search)
    assert [entry["visits"] for entry in search] == sorted((entry["visits"] for entry in search), reverse=True)
    assert all(0.0 <= entry["value"] <= 1.0 for entry in search) and sum(e["visits"] for e in search) <= 6
    hint = client.post(f"/api/games/{data['id']}/hint", json={"simulations": 6}).json()
    assert hint == {"action": search[0]["action"], "text": search[0]["text"]}
    plain = client.post(f"/api/games/{data['id']}/hint").json()  # no body: the policy's most likely move
    probabilities = client.get(f"/api/games/{data['id']}/analysis").json()["probabilities"]
    assert plain["action"] == int(max(probabilities, key=probabilities.get))


def test_the_analysis_never_sees_the_opponents_hidden_cards(client):
    """Two games with the same public history and other hidden cards get the same analysis, search included."""
    data = game_at_my_turn(client, seed=23)
    session = client.app.state.store.get(data["id"])
    first = client.get(f"/api/games/{data['id']}/analysis?simulations=8").json()
    real = session.game
    for k in range(3):
        other = real.determinize(session.seat, np.random.default_rng(k))
        assert other.hand(1) != real.hand(1) or other.to_dict()["pile"] != real.to_dict()["pile"]
        session.game = other
        try:
            again = client.get(f"/api/games/{data['id']}/analysis?simulations=8").json()
        finally:
            session.game = real
        assert json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)


def test_bad_analysis_requests_are_one_line_4xx_and_change_nothing(client):
    data = game_at_my_turn(client, seed=24)
    game = f"/api/games/{data['id']}"
    before = client.get(game).json()
    for query, status in (
        ("simulations=26", 400),  # over --max-guided-simulations (25)
        ("simulations=-1", 400),
        ("simulations=abc", 400),
        ("simulations=" + "9" * 5000, 400),
        ("agent=greedy", 400),  # no network
        ("agent=champion@mcts:5", 400),
        ("agent=../secret.pt", 403),  # no agents folder: no file at all
        ("agent=nobody", 400),
        ("depth=3", 400),
    ):
        assert_one_line_4xx(client.get(f"{game}/analysis?{query}"), status)
    assert_one_line_4xx(client.post(f"{game}/hint", json={"simulations": 99}), 400)
    assert_one_line_4xx(client.post(f"{game}/hint", json=[1]), 400)
    assert_one_line_4xx(client.get("/api/games/nope/analysis"), 404)
    assert client.get(game).json() == before
    client.post(f"{game}/abandon")
    assert_one_line_4xx(client.get(f"{game}/analysis"), 409)  # finished
    assert_one_line_4xx(client.post(f"{game}/hint"), 409)


def test_the_analysis_is_refused_on_the_agents_turn(client):
    store = client.app.state.store
    client.get("/api/rules")  # the browser has its owner cookie
    owner = owner_key(client.cookies["kahuna_owner"])
    session = store.open_game({"opponent": "greedy", "seat": 1}, client="testclient", owner=owner)
    session.lock.release()  # its opening is not computed yet: the agent is to act
    assert "your turn" in assert_one_line_4xx(client.get(f"/api/games/{session.id}/analysis"), 409)


def test_the_analysis_runs_in_the_bot_queue_and_a_full_queue_says_503():
    gate = threading.Event()
    queue = BotQueue(workers=1, waiting=0)
    with local_client(create_app(bots=queue)) as client:
        data = game_at_my_turn(client, moves=1)
        queue.submit(lambda: gate.wait(120))
        try:
            assert "busy" in assert_one_line_4xx(client.get(f"/api/games/{data['id']}/analysis"), 503)
            body = {"record": {"format": "x"}, "ply": 0}
            assert_one_line_4xx(client.post("/api/analysis", json=body), 422)  # checked before it queues
        finally:
            gate.set()


def test_a_replay_position_is_analysed_from_the_seat_to_act(client, tmp_path):
    data = game_at_my_turn(client, seed=25)
    client.post(f"/api/games/{data['id']}/abandon")
    record = client.get(f"/api/games/{data['id']}/record").json()
    plies = len(record["actions"])
    answer = client.post("/api/analysis", json={"record": record, "ply": 3, "simulations": 4})
    assert answer.status_code == 200, answer.text
    analysis = answer.json()
    from kahuna_arena.replay import replay

    position = replay({**record, "actions": record["actions"][:3], "result": None, "finished": False})
    assert analysis["seat"] == position.current_player
    assert {int(a) for a in analysis["probabilities"]} == set(position.legal_actions())
    assert sum(analysis["probabilities"].values()) == pytest.approx(1.0, abs=1e-9) and analysis["search"]
    by_id = client.post("/api/analysis", json={"game": data["id"], "ply": 3, "simulations": 4}).json()
    assert by_id == analysis  # a stored game, once finished
    live = game_at_my_turn(client, moves=1, seed=26)
    assert "over or abandoned" in assert_one_line_4xx(
        client.post("/api/analysis", json={"game": live["id"], "ply": 0}), 409
    )  # a game in progress: its earlier positions seen by the agent's seat would tell its cards
    folder = tmp_path / "records"
    folder.mkdir()
    write_record(folder / "game.json", record)
    with local_client(create_app(records_dir=folder)) as named:
        again = named.post("/api/analysis", json={"name": "game.json", "ply": 3, "simulations": 4}).json()
        assert again == analysis
        assert_one_line_4xx(named.post("/api/analysis", json={"name": "../game.json", "ply": 0}), 403)
        assert_one_line_4xx(named.post("/api/analysis", json={"name": "none.json", "ply": 0}), 404)
    for body, status in (
        ({"record": record, "ply": plies + 1}, 400),
        ({"record": record, "ply": -1}, 400),
        ({"record": record, "ply": "x"}, 400),
        ({"record": record}, 400),
        ({"record": record, "name": "game.json", "ply": 0}, 400),
        ({"record": {**record, "actions": [999]}, "ply": 0}, 422),
        ({"record": record, "ply": 0, "simulations": 26}, 400),
        ({"name": "game.json", "ply": 0}, 404),  # no records folder
        ({"game": "nope", "ply": 0}, 404),
        ({"game": data["id"], "record": record, "ply": 0}, 400),
    ):
        assert_one_line_4xx(client.post("/api/analysis", json=body), status)
