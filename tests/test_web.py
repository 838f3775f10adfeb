"""kahuna-serve's API (docs/WEB.md) through Starlette's test client: play, no leaks, records, replays, results.

The browser tests (a real headless Chromium) are in tests/test_web_browser.py.
"""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')

from helpers import thought
from starlette.testclient import TestClient

from kahuna_arena.evaluation import run_evaluation
from kahuna_arena.records import read_record
from kahuna_arena.replay import main as replay_main
from kahuna_env.actions import DISCARD, NUM_ACTIONS, PASS, TAKE, describe_action
from kahuna_env.board import ISLANDS
from kahuna_env.engine import KahunaConfig, KahunaGame
from kahuna_env.render import island_pixel
from kahuna_web.app import create_app
from kahuna_web.results import read_results
from kahuna_web.server import main as serve_main
from kahuna_web.views import public_action_text, seat_view

ROOT = Path(__file__).resolve().parent.parent


def local_client(app, **options):
    """Starlette's test client, sending ``Host: 127.0.0.1`` (the server answers loopback names only)."""
    return TestClient(app, base_url="http://127.0.0.1", **options)


@pytest.fixture
def client():
    with local_client(create_app()) as test_client:
        yield test_client


def new_game(client, **request):
    response = client.post("/api/games", json={"opponent": "random", "seat": 0, "seed": 11, **request})
    assert response.status_code == 201, response.text
    return response.json()


def searching_opening(client, opponent):
    """A new game whose searching ``opponent`` opens: 202 at once (its id, thinking), then its first turn played."""
    answer = client.post("/api/games", json={"opponent": opponent, "seat": 1, "seed": 11})
    assert answer.status_code == 202 and answer.json()["state"]["thinking"], answer.text
    data = thought(client, f"/api/games/{answer.json()['id']}").json()
    assert data["state"]["log"] and data["state"]["current_player"] == 1 and data["state"]["legal"]
    return data


def play_out(client, data, rng, limit=None):
    """Play random legal moves (from the page's list) until the game ends (or ``limit`` moves); return the last data."""
    moves = 0
    while not data["state"]["over"] and (limit is None or moves < limit):
        legal = data["state"]["legal"]
        assert legal, "the person is to act whenever the game is not over"
        offered = legal[int(rng.integers(len(legal)))]
        response = client.post(f"/api/games/{data['id']}/move", json={"action": offered["id"]})
        assert response.status_code == 200, response.text
        data = response.json()
        assert data["steps"][0]["player"] == data["seat"] and data["steps"][0]["text"] == offered["text"]
        moves += 1
    return data


# ------------------------------------------------------------------------------------------------ the page
def test_the_page_and_its_files_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and '<svg id="play-board"' in page.text and "/static/app.js" in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200
    icon = client.get("/favicon.ico")  # no icon, and no 404 for the browser to log
    assert icon.status_code == 204 and icon.content == b""
    board = client.get("/api/board").json()
    assert [island["name"] for island in board["islands"]] == list(ISLANDS)
    for island in board["islands"]:  # the board coordinates of kahuna_env.render
        x, y = island_pixel(island["id"])
        assert (island["x"], island["y"]) == (round(x, 1), round(y, 1))
    assert len(board["lines"]) == 27 and board["colours"] == ["#d23732", "#285fc8"]
    assert "greedy" in board["opponents"] and board["variants"] == ["standard", "planning"]


# ------------------------------------------------------------------------------------------------ play
def test_a_full_game_offers_only_legal_moves_and_ends_with_a_result(client):
    data = new_game(client, seat=1, seed=4)
    assert data["steps"] and all(step["player"] == 0 for step in data["steps"])  # the agent opened
    rng = np.random.default_rng(0)
    session = client.app.state.store.get(data["id"])
    while not data["state"]["over"]:
        assert sorted(move["id"] for move in data["state"]["legal"]) == sorted(session.game.legal_actions())
        data = play_out(client, data, rng, limit=1)
        assert data["state"]["over"] or data["state"]["current_player"] == 1  # the agent played until it was our turn
        assert len(data["state"]["log"]) == len(session.actions)
    state = data["state"]
    assert state["legal"] == [] and state["record_ready"] and state["seed"] == "4"
    result = state["result"]
    assert result["text"] == state["result_text"]
    assert result["text"].startswith(("You win", "random wins", "The game is a draw"))
    points = state["scores"][0]
    assert f"{points} point{'s' * (points != 1)}," in result["text"]
    assert result["winner"] == session.game.winner and result["scores"] == session.game.scores
    assert result["revealed_hands"] == [[ISLANDS[i] for i in session.game.hand(p)] for p in (0, 1)]
    response = client.post(f"/api/games/{data['id']}/move", json={"action": 147})
    assert response.status_code == 409 and "over" in response.json()["error"]


def test_a_take_is_named_by_its_card_in_moves_and_hints():
    """``take LALE (face-up)``, not the action encoding's ``take face-up slot 1`` (which an empty slot keeps)."""
    from kahuna_web.analysis import top_move
    from kahuna_web.views import action_entry, action_text

    game = KahunaGame(seed=3)
    row = game.face_up
    for slot, card in enumerate(row):
        assert action_entry(TAKE + slot, row)["text"] == f"take {ISLANDS[card]} (face-up)"
        hint = top_move({"search": None, "probabilities": {str(TAKE + slot): 1.0}}, row)
        assert hint == {"action": TAKE + slot, "text": f"take {ISLANDS[card]} (face-up)"}
    assert action_text(TAKE, [None, *row[1:]]) == describe_action(TAKE) == "take face-up slot 0"


def test_an_illegal_move_is_refused_and_changes_nothing(client):
    data = new_game(client)
    before = client.get(f"/api/games/{data['id']}").json()
    legal = {move["id"] for move in before["state"]["legal"]}
    illegal = next(action for action in range(NUM_ACTIONS) if action not in legal)
    response = client.post(f"/api/games/{data['id']}/move", json={"action": illegal})
    assert response.status_code == 422
    assert response.json()["error"].startswith(f"action {illegal} ({describe_action(illegal)}) is illegal")
    for body, status in (
        ({"action": "draw"}, 400),
        ({"action": 179}, 400),
        ({"action": True}, 400),
        ({"action": 1.5}, 400),
        ({"move": 147}, 400),
        ([147], 400),
    ):
        response = client.post(f"/api/games/{data['id']}/move", json=body)
        assert response.status_code == status, body
        assert "\n" not in response.json()["error"]
    not_json = client.post(f"/api/games/{data['id']}/move", content=b"{", headers={"Content-Type": "application/json"})
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]
    form = client.post(f"/api/games/{data['id']}/move", content=b"action=147")
    assert form.status_code == 415
    assert client.get(f"/api/games/{data['id']}").json() == before
    missing = client.post("/api/games/nope/move", json={"action": 147})
    assert missing.status_code == 404 and "no game" in missing.json()["error"]


def test_oversized_uploads_are_refused(tmp_path):
    with local_client(create_app(max_upload=1000)) as small:
        for url in ("/api/replay", "/api/results", "/api/games"):
            response = small.post(url, content=b" " * 2000, headers={"Content-Type": "application/json"})
            assert response.status_code == 413 and "too large" in response.json()["error"], url


@pytest.mark.parametrize(
    ("request_body", "status", "words"),
    [
        ({"opponent": "grandmaster"}, 400, "unknown entrant 'grandmaster'"),
        ({"opponent": "mcts:²"}, 400, "bad simulation budget"),
        ({"opponent": ""}, 400, "non-empty"),
        ({"opponent": 7}, 400, "non-empty string"),
        ({"opponent": "/etc/passwd"}, 403, "agent files are not allowed"),
        ({"seat": 2}, 400, "'seat' must be an integer in 0..1"),
        ({"seed": -1}, 400, "'seed'"),
        ({"variant": "speed"}, 400, "variant must be one of"),
        ({"handicap": [0, 9]}, 400, "handicap bridges"),
        ({"colour": "red"}, 400, "unknown field(s) 'colour'"),
    ],
)
def test_bad_new_games_are_one_line_4xx(client, request_body, status, words):
    response = client.post("/api/games", json={"opponent": "random", **request_body})
    assert response.status_code == status
    assert words in response.json()["error"] and "\n" not in response.json()["error"]
    assert len(client.app.state.store._sessions) == 0


def test_agent_files_come_only_from_the_allowed_folder(tmp_path):
    torch = pytest.importorskip("torch")
    from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload

    agents = tmp_path / "agents"
    (agents / "run").mkdir(parents=True)
    torch.save(agent_payload(ActorCritic(ModelConfig(hidden_sizes=(8,)))), agents / "run" / "tiny.pt")
    outside = tmp_path / "outside.pt"
    torch.save(agent_payload(ActorCritic(ModelConfig(hidden_sizes=(8,)))), outside)
    (agents / "escape.pt").symlink_to(outside)
    with local_client(create_app(agents_dir=agents)) as client:
        assert client.get("/api/board").json()["agent_files"] == ["run/tiny.pt"]
        data = new_game(client, opponent="run/tiny.pt", seat=1)
        assert data["opponent"] == "run/tiny.pt" and data["steps"]
        for spec, status in (
            (str(outside), 403),
            ("../outside.pt", 403),
            ("escape.pt", 403),  # a link out of the folder
            ("run/missing.pt", 404),
        ):
            response = client.post("/api/games", json={"opponent": spec})
            assert response.status_code == status, spec
            words = "outside the allowed agents folder" if status == 403 else "not found"
            assert words in response.json()["error"]


def test_the_shipped_champion_and_guided_search_are_opponents_without_an_agents_folder(tmp_path):
    torch = pytest.importorskip("torch")
    from kahuna_policy.model import ActorCritic, ModelConfig, agent_payload

    with local_client(create_app()) as client:
        offered = set(client.get("/api/board").json()["opponents"])
        assert {"champion", "champion@mcts:25"} <= offered and "champion@mcts:50" not in offered  # over the cap
        assert new_game(client, opponent="champion", seat=1)["steps"]
        assert searching_opening(client, "champion@mcts:2")["opponent"] == "champion@mcts:2"
        for spec, status, words in (
            ("champion@mcts:0", 400, "bad simulation budget"),
            ("champion@foo", 400, "bad search"),
            ("x.pt@mcts:5", 403, "agent files are not allowed"),
        ):
            response = client.post("/api/games", json={"opponent": spec})
            assert response.status_code == status, spec
            assert words in response.json()["error"]
    agents = tmp_path / "agents"
    agents.mkdir()
    torch.save(agent_payload(ActorCritic(ModelConfig(hidden_sizes=(8,)))), agents / "tiny.pt")
    (agents / "日本.pt").write_bytes((agents / "tiny.pt").read_bytes())
    with local_client(create_app(agents_dir=agents)) as client:
        searching_opening(client, "tiny.pt@mcts:2")
        response = client.post("/api/games", json={"opponent": "missing.pt@mcts:2"})
        assert response.status_code == 404 and "not found" in response.json()["error"]
        # A file name that is not ASCII: the record's name in an ASCII header, the true one as RFC 5987 says.
        data = new_game(client, opponent="日本.pt", seat=1)
        client.post(f"/api/games/{data['id']}/abandon")
        record = client.get(f"/api/games/{data['id']}/record")
        assert record.status_code == 200 and record.json()["players"] == ["日本.pt", "human"]
        assert record.headers["content-disposition"] == (
            'attachment; filename="kahuna-web-__.pt-seed11.json"; '
            "filename*=UTF-8''kahuna-web-%E6%97%A5%E6%9C%AC.pt-seed11.json"
        )


# ------------------------------------------------------------------------------------------------ no leaks
def test_the_page_never_receives_hidden_cards(client):
    """Same public history, other hidden cards (the opponent's hand, the pile, its face-down discards): same JSON."""
    data = new_game(client, opponent="greedy", seed=21)
    data = play_out(client, data, np.random.default_rng(1), limit=12)
    session = client.app.state.store.get(data["id"])
    real = session.game
    seen = client.get(f"/api/games/{data['id']}").json()
    assert seen["state"]["seed"] is None and "seed" not in json.dumps(seen["config"])
    hands = set()
    for k in range(6):
        session.game = real.determinize(session.seat, np.random.default_rng(k))
        hands.add(tuple(session.game.hand(1 - session.seat)) + tuple(session.game.face_up))
        assert client.get(f"/api/games/{data['id']}").json() == seen
    session.game = real
    assert len(hands) > 1  # the determinizations did deal other hidden cards
    assert client.get(f"/api/games/{data['id']}/record").status_code == 409  # the record holds the seed


def test_every_position_of_a_game_shows_the_same_view_for_the_same_public_history():
    rng = np.random.default_rng(5)
    for seed in (1, 2):
        game = KahunaGame(seed=seed)
        while not game.is_over:
            for seat in (0, 1):
                view = seat_view(game, seat)
                other = game.determinize(seat, np.random.default_rng(int(rng.integers(1000))))
                assert seat_view(other, seat) == view
                if game.current_player != seat:
                    assert view["legal"] == []  # the opponent's legal moves would tell its cards
            legal = game.legal_actions()
            game.step(legal[int(rng.integers(len(legal)))])


def test_an_opponents_face_down_discard_is_not_named():
    action = DISCARD + 3
    assert public_action_text(action, player=1, viewer=0) == "discard a card face down"
    assert public_action_text(action, player=0, viewer=0) == describe_action(action)
    assert public_action_text(action, player=1, viewer=None) == describe_action(action)


# ------------------------------------------------------------------------------------------------ records
def test_the_downloaded_record_replays_exactly_and_matches_kahuna_play(client, tmp_path, capsys):
    data = new_game(client, opponent="greedy", seat=0, seed=9)
    moves = []
    rng = np.random.default_rng(3)
    while not data["state"]["over"]:
        legal = data["state"]["legal"]
        action = legal[int(rng.integers(len(legal)))]["id"]
        moves.append(action)
        data = client.post(f"/api/games/{data['id']}/move", json={"action": action}).json()
    response = client.get(f"/api/games/{data['id']}/record")
    assert response.status_code == 200 and "attachment" in response.headers["content-disposition"]
    path = tmp_path / "web.json"
    path.write_bytes(response.content)
    capsys.readouterr()
    assert replay_main([str(path), "--quiet"]) == 0
    record = read_record(path)
    assert record["players"] == ["human", "greedy"] and record["finished"] and record["play_seed"] == 9
    # The same seed and the same moves typed into kahuna-play give the same game.
    from kahuna_arena.play import main as play_main

    played = tmp_path / "terminal.json"
    stdin = __import__("io").StringIO("".join(f"{move}\n" for move in moves))
    assert play_main(["--opponent", "greedy", "--seed", "9", "--record", str(played)], stdin=stdin) == 0
    terminal = read_record(played)
    assert terminal["actions"] == record["actions"] and terminal["result"] == record["result"]


def test_an_abandoned_game_downloads_as_unfinished(client, tmp_path):
    data = play_out(client, new_game(client), np.random.default_rng(2), limit=5)
    response = client.post(f"/api/games/{data['id']}/abandon")
    assert response.status_code == 200 and response.json()["state"]["abandoned"]
    assert client.post(f"/api/games/{data['id']}/move", json={"action": 147}).status_code == 409
    path = tmp_path / "abandoned.json"
    path.write_bytes(client.get(f"/api/games/{data['id']}/record").content)
    record = read_record(path)
    assert record["finished"] is False and record["result"] is None
    assert replay_main([str(path), "--quiet"]) == 0


@pytest.fixture
def records_dir(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    with local_client(create_app()) as client:
        data = play_out(client, new_game(client, seed=1), np.random.default_rng(4))
        (folder / "one.json").write_bytes(client.get(f"/api/games/{data['id']}/record").content)
    (folder / "broken.json").write_text('{"format": "kahuna-record-v1"}', encoding="utf-8")
    return folder


def labels(record):
    """The page's text of every action of a record: ``describe_action``'s, a take naming its face-up card."""
    game = KahunaGame(KahunaConfig.from_dict(record["config"]), seed=record["seed"])
    texts = []
    for action in record["actions"]:
        taken = game.face_up[action - TAKE] if TAKE <= action < PASS else None
        texts.append(f"take {ISLANDS[taken]} (face-up)" if taken is not None else describe_action(action))
        game.step(action)
    return texts


def test_records_replay_step_by_step(records_dir):
    record = read_record(records_dir / "one.json")
    with local_client(create_app(records_dir=records_dir)) as client:
        listed = client.get("/api/records").json()["records"]
        assert [entry["name"] for entry in listed] == ["broken.json", "one.json"] and "error" in listed[0]
        replayed = client.get("/api/records/one.json").json()
        assert len(replayed["frames"]) == len(record["actions"]) + 1
        assert [move["text"] for move in replayed["moves"]] == labels(record)
        assert any("(face-up)" in move["text"] for move in replayed["moves"])  # a take names its card
        assert replayed["frames"][-1]["over"] and replayed["frames"][0]["round"] == 1
        assert replayed["seed"] == str(record["seed"])
        assert all(frame["hands"][p]["cards"] is not None for frame in replayed["frames"] for p in (0, 1))
        uploaded = client.post("/api/replay", json=record).json()
        assert uploaded["frames"] == replayed["frames"] and uploaded["result"] == replayed["result"]
        broken = client.get("/api/records/broken.json")
        assert broken.status_code == 422 and "missing field(s)" in broken.json()["error"]
        (records_dir.parent / "secret.json").write_bytes((records_dir / "one.json").read_bytes())
        (records_dir / "link.json").symlink_to(records_dir.parent / "secret.json")
        for name, status in (("link.json", 403), ("missing.json", 404), ("..%2Fsecret.json", 404)):
            assert client.get(f"/api/records/{name}").status_code == status, name
        cheat = dict(record, actions=[record["actions"][0], *record["actions"]])
        response = client.post("/api/replay", json=cheat)
        assert response.status_code == 422 and "does not replay" in response.json()["error"]
        for bad, words in (
            ({"format": "x"}, "not a game record"),
            (dict(record, seed=-1), "'seed'"),
            ([], "not a game"),
        ):
            response = client.post("/api/replay", json=bad)
            assert response.status_code == 422 and words in response.json()["error"]


# ------------------------------------------------------------------------------------------------ results
@pytest.fixture(scope="module")
def results_file(tmp_path_factory):
    report = run_evaluation(["random", "greedy", "mcts:2"], games=2, seed=3, workers=1, progress=False)
    path = tmp_path_factory.mktemp("results") / "ratings.json"
    path.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return path


def test_results_files_become_tables(results_file):
    data = json.loads(results_file.read_text(encoding="utf-8"))
    tables = read_results(results_file)
    assert [(p["a"], p["b"]) for p in tables["pairings"]] == [
        ("random", "greedy"),
        ("random", "mcts:2"),
        ("greedy", "mcts:2"),
    ]
    assert {r["entrant"] for r in tables["ratings"]} == {"random", "greedy", "mcts:2"}
    with local_client(create_app(results=[tables])) as client:
        assert client.get("/api/results").json()["results"] == [tables]
        uploaded = client.post("/api/results", json=data).json()
        assert uploaded["pairings"] == tables["pairings"] and uploaded["ratings"] == tables["ratings"]
        for bad, words in (
            ({"format": "kahuna-record-v1"}, "not a kahuna-eval --json file"),
            (dict(data, pairings=[{"a": "x"}]), "'pairings[0]' lacks 'b'"),
            (dict(data, ratings=[dict(data["ratings"][0], elo="high")]), "'ratings[0].elo' is malformed"),
        ):
            response = client.post("/api/results", json=bad)
            assert response.status_code == 422 and words in response.json()["error"]


# ------------------------------------------------------------------------------------------------ kahuna-serve
def test_kahuna_serve_bad_arguments_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2", encoding="utf-8")
    for argv, words in (
        (["--records", str(tmp_path / "none")], "is not a folder"),
        (["--results", str(bad)], "is not JSON"),
        (["--results", str(tmp_path / "none.json")], "cannot read results file"),
        (["--agents", str(bad)], "is not a folder"),
        (["--port", "70000"], "--port must be in 0..65535"),
    ):
        with pytest.raises(SystemExit) as stop:
            serve_main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("kahuna-serve: error: ") and words in err and err.count("\n") == 1, err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SystemExit):
            serve_main(["--port", str(taken.getsockname()[1])])
        assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


def test_kahuna_serve_binds_to_loopback_and_says_so(tmp_path):
    """The installed entry point: starts on a free port, prints the address, answers; imports no torch."""
    code = (
        "import sys, runpy; sys.argv = ['kahuna-serve', '--port', '0'];"
        "import kahuna_web.server as s; import threading;"
        "assert 'torch' not in sys.modules and 'training' not in sys.modules, 'torch imported';"
        "s.main()"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", code], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        ready, _, _ = select.select([server.stdout], [], [], 60)
        assert ready, "kahuna-serve printed nothing in 60 s"
        first = server.stdout.readline()
        second = server.stdout.readline()
        assert first.startswith("Kahuna board at http://127.0.0.1:"), first + second
        assert "127.0.0.1 only" in second
        url = first.split()[3]
        for _ in range(100):
            try:
                with urllib.request.urlopen(url + "api/board", timeout=5) as answer:
                    assert json.load(answer)["islands"][0]["name"] == "ALOA"
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("kahuna-serve did not answer")
        request = urllib.request.Request(url + "api/board", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:  # no DNS rebinding
            urllib.request.urlopen(request, timeout=60)  # generous: answered at once, but the machine may be busy
        assert refused.value.code == 400
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_kahuna_web_imports_no_torch():
    code = (
        "import sys, kahuna_web.app, kahuna_web.server, kahuna_web.sessions, kahuna_web.views, kahuna_web.results,"
        " kahuna_web.analysis, kahuna_web.gamestore, kahuna_web.rulebook, kahuna_web.sessionstore,"
        " kahuna_web.opponents, kahuna_web.replays, kahuna_web.validate;"
        "bad = [m for m in ('torch', 'training') if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
