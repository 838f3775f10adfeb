"""kahuna-serve as a hostile client sees it (issue 33, docs/WEB.md "Threat model").

Files: no agent file outside ``--agents`` is read, for every spelling of an
entrant, by the one entrant parser the command-line tools use too; no answer
shows a file's content or an absolute server path.  Budgets: search budgets
are capped, bot computations wait in a bounded queue (503 beyond), a search
stops within a simulation when its client leaves, its game is abandoned or
the server stops.  Stopping: Ctrl-C during a search ends the server, and the
port is free again at once.  Every former 500 is a one-line 4xx.  Sessions:
a per-client cap, idle expiry, and no client's games are dropped by another's.

Wall-clock bounds here are generous (tens of seconds for what takes well
under two); what each test holds is a bound on work: a search of a million
simulations, minutes of work, must not have run to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import http.client
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("uvicorn", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')

from helpers import running
from starlette.testclient import TestClient

import kahuna_arena.entrants
from kahuna_arena.entrants import ANYWHERE, EntrantRefused, parse_entrant, resolve_entrant
from kahuna_env.actions import DRAW
from kahuna_env.agents import MCTSAgent
from kahuna_env.agents.mcts import SearchCancelled
from kahuna_env.engine import KahunaGame
from kahuna_web.app import OPPONENT_CHOICES, AnswerWhileStopping, create_app
from kahuna_web.compute import BotQueue
from kahuna_web.owners import owner_key
from kahuna_web.results import read_results
from kahuna_web.server import main as serve_main
from kahuna_web.sessions import CancelFlag
from kahuna_web.sessionstore import Caps, SessionStore
from kahuna_web.validate import WebError

ROOT = Path(__file__).resolve().parent.parent
SECRET = "OPENAI_API_KEY=sk-do-not-show-this"
HUGE = 1_000_000
"""A search budget of minutes per decision: a test that sees it end early has seen it cancelled."""
OWNER = "security-test-browser-0000000000"
"""The owner token of the test's browser (its games are its own)."""
BYSTANDER = "security-test-bystander-000000000"
"""Another browser's owner token."""


def local_client(app, owner=OWNER, **options):
    """The test client of one browser: ``Host: 127.0.0.1`` (the server answers loopback names only), its cookie."""
    return TestClient(app, base_url="http://127.0.0.1", cookies={"kahuna_owner": owner}, **options)


def assert_one_line_4xx(response, status=None):
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    if status is not None:
        assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error and "\n" not in error
    return error


@pytest.fixture
def workplace(tmp_path, monkeypatch):
    """A working folder holding a secret file, an agent-like file and an ``agents`` folder; the cwd for the test."""
    (tmp_path / ".env").write_text(SECRET + "\n", encoding="utf-8")
    (tmp_path / "OUTSIDE").write_text(SECRET + "\n", encoding="utf-8")
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "secret.pt").write_text(SECRET + "\n", encoding="utf-8")
    (agents / "escape.pt").symlink_to(tmp_path / "OUTSIDE")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ------------------------------------------------------------------------------------------------ files
@pytest.mark.parametrize(
    "spec",
    [".env@mcts:1", "OUTSIDE@mcts:1", "agents@mcts:2", "./OUTSIDE", "OUTSIDE.pt", "../x.pt", "/etc/passwd@mcts:1"],
)
def test_without_an_agents_folder_no_file_is_read_for_any_spelling(workplace, spec):
    with local_client(create_app()) as client:
        response = client.post("/api/games", json={"opponent": spec})
        error = assert_one_line_4xx(response, 403)
    assert "agent files are not allowed" in error and "OPENAI" not in error and str(workplace) not in error


@pytest.mark.parametrize(
    "spec",
    [
        ".env@mcts:1",
        "OUTSIDE@mcts:1",
        "../OUTSIDE",
        "../OUTSIDE@mcts:1",
        "escape.pt",  # a link out of the folder
        "escape.pt@mcts:1",
        "{root}/OUTSIDE",
        "{root}/OUTSIDE@mcts:1",
        "agents/../OUTSIDE",
    ],
)
def test_with_an_agents_folder_nothing_outside_it_is_read(workplace, spec):
    spec = spec.format(root=workplace)
    with local_client(create_app(agents_dir=workplace / "agents")) as client:
        response = client.post("/api/games", json={"opponent": spec})
        error = assert_one_line_4xx(response)
    assert response.status_code in (403, 404)  # 404 only for a name that lies inside the folder
    assert "OPENAI" not in error and str(workplace) not in error


def test_names_outside_the_folder_cannot_be_probed(workplace):
    """A file that exists outside the folder and one that does not get the same answer."""
    with local_client(create_app()) as client:
        answers = {
            client.post("/api/games", json={"opponent": f"{name}@mcts:2"}).text.replace(f"'{name}@", "'NAME@")
            for name in ("agents", "OUTSIDE", "no-such-thing")
        }
    assert len(answers) == 1


def test_a_file_inside_the_folder_that_is_not_an_agent_shows_no_content_and_no_path(workplace):
    pytest.importorskip("torch")
    with local_client(create_app(agents_dir=workplace / "agents")) as client:
        for spec in ("secret.pt", "secret.pt@mcts:2", f"{workplace}/agents/secret.pt"):
            error = assert_one_line_4xx(client.post("/api/games", json={"opponent": spec}), 400)
            assert "not a readable checkpoint" in error
            assert "OPENAI" not in error and "sk-" not in error and str(workplace) not in error, error


def test_the_cli_and_the_web_read_entrants_with_the_same_function(workplace, monkeypatch):
    seen = []
    original = kahuna_arena.entrants.parse_entrant

    def spy(spec, *args, **kwargs):
        seen.append((spec, args[0] if args else kwargs.get("agents_dir", ANYWHERE)))
        return original(spec, *args, **kwargs)

    monkeypatch.setattr(kahuna_arena.entrants, "parse_entrant", spy)
    from kahuna_arena.evaluation import check_entrants

    with pytest.raises(ValueError, match="simulation budget too large"):
        check_entrants(["random", "mcts:2000000"])
    with local_client(create_app()) as client:
        assert client.post("/api/games", json={"opponent": "OUTSIDE@mcts:1"}).status_code == 403
    assert ("mcts:2000000", ANYWHERE) in seen and ("OUTSIDE@mcts:1", None) in seen


def test_the_entrant_parser_confines_files_to_the_folder(workplace):
    agents = workplace / "agents"
    assert parse_entrant("secret.pt", agents).source == str((agents / "secret.pt").resolve())
    assert parse_entrant("agents/secret.pt", agents).kind == "file"  # from the working folder, inside
    for spec in ("../OUTSIDE", "escape.pt", str(workplace / "OUTSIDE"), "OUTSIDE@mcts:3"):
        with pytest.raises(EntrantRefused):
            parse_entrant(spec, None if spec.endswith(":3") else agents)
    with pytest.raises(FileNotFoundError, match="not found in agents"):
        parse_entrant("missing.pt", agents)
    # The command-line tools may name any file the user's shell can.
    assert parse_entrant(str(workplace / "OUTSIDE") + "@mcts:3").source == str(workplace / "OUTSIDE")
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="not a readable checkpoint") as refused:
        resolve_entrant(str(workplace / "OUTSIDE"))
    assert "OPENAI" not in str(refused.value)


def test_cli_agent_file_errors_never_echo_the_files_bytes(workplace, capsys):
    pytest.importorskip("torch")
    from kahuna_arena.eval_cli import main as eval_main

    with pytest.raises(SystemExit) as stop:
        eval_main([".env@mcts:2", "random", "--games", "2", "--no-progress"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("kahuna-eval: error: ") and err.count("\n") == 1
    assert "OPENAI" not in err and "sk-" not in err


# ------------------------------------------------------------------------------------------------ budgets
@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("mcts:100000000", "at most 800"),
        ("mcts:99999999999999999999999999", "at most 800"),
        ("mcts:801", "at most 800"),
        ("champion@mcts:26", "at most 25"),
        ("champion@mcts", "200 simulations (the default), at most 25"),
        ("mcts:" + "9" * 5000, "at most"),
    ],
)
def test_search_budgets_over_the_servers_caps_are_refused(spec, words):
    with local_client(create_app()) as client:
        error = assert_one_line_4xx(client.post("/api/games", json={"opponent": spec[:255]}), 400)
    assert words in error and "--max-simulations" in error


def test_the_page_offers_only_opponents_within_the_caps():
    for caps in ((800, 25), (100, 10), (1000, 50)):
        with local_client(create_app(max_simulations=caps[0], max_guided_simulations=caps[1])) as client:
            offered = client.get("/api/board").json()["opponents"]
        assert offered and {"greedy", "random", "champion"} <= set(offered)
        for choice in offered:
            parse_entrant(choice, None, *caps)  # raises if over a cap
        refused = set(OPPONENT_CHOICES) - set(offered)
        assert refused or caps == (1000, 50)
        for choice in refused:
            with pytest.raises(ValueError, match="too large"):
                parse_entrant(choice, None, *caps)


@pytest.mark.parametrize(
    "argv",
    [
        ["kahuna-serve", "--max-simulations", "0"],
        ["kahuna-serve", "--max-guided-simulations", "1000001"],
        ["kahuna-serve", "--max-stored-games", "0"],
        ["kahuna-serve", "--max-games-per-owner", "-3"],
        ["kahuna-serve", "--max-new-owners-per-minute", "0"],
        ["kahuna-serve", "--retention-hours", "0.5"],
        ["kahuna-serve", "--idle-days", "nan"],
        ["kahuna-serve", "--forwarded-allow-ips", "10.0.0.1"],  # without --proxy-headers it would do nothing
    ],
)
def test_kahuna_serve_refuses_caps_out_of_range_in_one_line(argv, capsys, tmp_path):
    with pytest.raises(SystemExit) as stop:
        serve_main([*argv[1:], "--data", str(tmp_path / "data")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(f"kahuna-serve: error: {argv[1]}") and err.count("\n") == 1
    assert not (tmp_path / "data").exists()  # refused before anything is created


# ------------------------------------------------------------------------------------------------ cancellation
class CountingFlag:
    """A cancel flag that reads as set from its ``k``-th reading on; counts the readings."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.readings = 0

    def is_set(self) -> bool:
        self.readings += 1
        return self.readings > self.k


class UniformEvaluator:
    """A network stand-in without torch: uniform priors, even chances."""

    def evaluate(self, states, legal):
        return [[1.0 / len(actions)] * len(actions) for actions in legal], [0.5] * len(states)


def _position():
    game = KahunaGame(seed=3)
    rng = np.random.default_rng(0)
    while len(game.legal_actions()) < 5:
        game.step(game.legal_actions()[int(rng.integers(len(game.legal_actions())))])
    return game


@pytest.mark.parametrize("evaluator", [None, UniformEvaluator()])
def test_a_search_stops_at_the_first_simulation_after_its_flag_is_set(evaluator):
    agent = MCTSAgent(simulations=HUGE, seed=0, evaluator=evaluator, batch_size=1)
    agent.cancel = CountingFlag(7)
    with pytest.raises(SearchCancelled):
        agent.search(_position())
    assert agent.cancel.readings == 8  # seven simulations ran, the eighth was not started


@pytest.mark.parametrize("evaluator", [None, UniformEvaluator()])
def test_a_flag_that_is_never_set_changes_no_decision(evaluator):
    def decisions(flag):
        agent = MCTSAgent(simulations=60, seed=5, evaluator=evaluator, batch_size=2)
        agent.cancel = flag
        game = _position()
        root = agent.search(game)
        return {action: (child.visits, child.value) for action, child in root.children.items()}

    assert decisions(CancelFlag()) == decisions(None)
    assert decisions(threading.Event()) == decisions(None)


# ------------------------------------------------------------------------------------------------ a real server
def request(port, method, path, body=None, timeout=120, owner=OWNER, headers=None):
    """``method path`` of the server on ``port`` as the browser ``owner`` (``None``: a browser without its cookie)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = dict(headers or {})
        if owner is not None:
            headers["Cookie"] = f"kahuna_owner={owner}"
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read() or b"null")
    finally:
        connection.close()


def send_and_leave_open(port, body, path="/api/games"):
    """Send a POST (a new game by default) on a raw socket and return the socket without reading the answer."""
    data = json.dumps(body).encode()
    raw = socket.create_connection(("127.0.0.1", port), timeout=120)
    raw.sendall(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
        + f"Cookie: kahuna_owner={OWNER}\r\n".encode()
        + f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    return raw


def wait_for(condition, what, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {seconds} s"
        time.sleep(0.01)


def test_abandoning_a_game_stops_its_agents_search(tmp_path):
    app = create_app(max_simulations=HUGE)
    with running(app) as port:
        status, data = request(port, "POST", "/api/games", {"opponent": f"mcts:{HUGE}", "seat": 0, "seed": 1})
        assert status == 201 and data["state"]["current_player"] == 0
        move = max(legal["id"] for legal in data["state"]["legal"])  # a draw or a pass: the turn ends
        answers = []
        mover = threading.Thread(
            target=lambda: answers.append(request(port, "POST", f"/api/games/{data['id']}/move", {"action": move}))
        )
        assert move >= DRAW
        mover.start()
        session = app.state.store.get(data["id"])
        wait_for(lambda: session.lock.locked() and len(session.actions) == 1, "the agent starts thinking")
        started = time.monotonic()
        status, abandoned = request(port, "POST", f"/api/games/{data['id']}/abandon")
        stopped = time.monotonic() - started
        mover.join(timeout=60)
    assert status == 200 and abandoned["state"]["abandoned"] and abandoned["state"]["record_ready"]
    assert answers and answers[0][0] == 200 and answers[0][1]["state"]["abandoned"]
    assert len(session.actions) == 1  # the person's move only: the million-simulation search never finished
    print(f"abandon answered {stopped:.3f} s after it was sent")


def test_a_page_that_leaves_during_the_agents_move_stops_its_search_and_the_game_goes_on(tmp_path):
    """Issue 38: a reload or a closed tab while the agent thinks never loses the game; the agent moves at once."""
    app = create_app(max_simulations=HUGE)
    with running(app) as port:
        status, data = request(port, "POST", "/api/games", {"opponent": f"mcts:{HUGE}", "seat": 0, "seed": 1})
        assert status == 201 and data["state"]["current_player"] == 0
        move = max(legal["id"] for legal in data["state"]["legal"])  # a draw or a pass: the turn ends
        assert move >= DRAW
        raw = send_and_leave_open(port, {"action": move}, f"/api/games/{data['id']}/move")
        session = app.state.store.get(data["id"])
        wait_for(lambda: session.lock.locked() and session.thinking, "the agent starts thinking")
        raw.close()  # the page is reloaded or closed
        wait_for(lambda: not session.lock.locked(), "the agent moves once its page has left")
        status, again = request(port, "GET", f"/api/games/{data['id']}")
    assert status == 200 and not again["state"]["abandoned"] and not again["state"]["thinking"]
    assert again["state"]["current_player"] == 0 and again["state"]["legal"]  # the person's turn again
    assert len(session.actions) >= 2  # the person's move, then the agent's (its search stopped far from its budget)


def test_a_flood_of_huge_searches_leaves_a_cheap_game_answered_at_once(tmp_path):
    """The issue's criterion: 50 huge-budget openings, then a cheap game; abandoned, the searches stop.

    A searching agent's opening is answered at once (202, the game thinking) and computed in the bot queue;
    the requests beyond its places are refused at once, so a flood never holds a cheap game up.
    """
    app = create_app(max_simulations=HUGE)
    bots = app.state.bots
    capacity = bots.workers + bots.waiting
    with running(app) as port:
        flood = [request(port, "POST", "/api/games", {"opponent": f"mcts:{HUGE}", "seat": 1}) for _ in range(50)]
        opened = [data["id"] for status, data in flood if status == 202]
        # 503: the queue is full; 429: this browser started its 30 games of the minute.
        assert len(opened) == capacity and all(status in (202, 503, 429) for status, _ in flood), flood
        assert bots.busy() == capacity
        started = time.monotonic()
        status, cheap = request(port, "POST", "/api/games", {"opponent": "random", "seat": 1}, owner=BYSTANDER)
        cheap_seconds = time.monotonic() - started
        assert status == 201 and cheap["steps"]
        assert bots.busy() == capacity  # answered while every search was still running or queued
        status, refused = request(port, "POST", "/api/games", {"opponent": f"mcts:{HUGE}", "seat": 1}, owner=BYSTANDER)
        assert status == 503 and "busy" in refused["error"]
        left = time.monotonic()
        for game_id in opened:
            assert request(port, "POST", f"/api/games/{game_id}/abandon")[0] == 200
        wait_for(lambda: bots.busy() == 0, "every search stops once its game is abandoned")
        stop_seconds = time.monotonic() - left
        games = [s for s in app.state.store._sessions.values() if s.opponent_name == f"mcts:{HUGE}"]
        assert len(games) == capacity and all(s.abandoned and not s.actions for s in games)
    print(f"cheap game answered in {cheap_seconds:.3f} s; {len(games)} searches stopped {stop_seconds:.3f} s after")


def cpu_seconds(pid):
    """CPU time a process has used (Linux ``/proc``; elsewhere the wall clock stands in for it)."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return time.monotonic()
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start_server(*argv, cwd, preexec_fn=None):
    server = subprocess.Popen(
        [sys.executable, "-m", "kahuna_web.server", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=preexec_fn,
    )
    ready, _, _ = select.select([server.stdout], [], [], 120)
    assert ready, "kahuna-serve printed nothing in 120 s"
    first = server.stdout.readline()
    return server, first


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_a_search_stops_the_server_and_the_port_is_free_at_once(tmp_path, stop):
    server, first = _start_server("--port", "0", "--max-simulations", str(HUGE), cwd=tmp_path)
    try:
        assert first.startswith("Kahuna board at http://127.0.0.1:"), first + server.stderr.read()
        port = int(first.split()[3].rsplit(":", 1)[1].strip("/"))
        before = cpu_seconds(server.pid)
        waiting = send_and_leave_open(port, {"opponent": f"mcts:{HUGE}", "seat": 1})
        # The search runs (a million simulations: minutes): wait until it has worked for half a second.
        wait_for(lambda: cpu_seconds(server.pid) - before >= 0.5, "the search starts", seconds=120)
        started = time.monotonic()
        server.send_signal(stop)
        code = server.wait(timeout=60)
        seconds = time.monotonic() - started
        waiting.close()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    err = server.stderr.read()
    assert "Traceback" not in err, err
    assert code == 0 and err.strip().splitlines()[-1] == "kahuna-serve stopped", (code, err)  # SIGTERM as Ctrl-C
    # The same port at once (connections of the stopped server linger in TIME_WAIT).
    again, first = _start_server("--port", str(port), cwd=tmp_path)
    try:
        assert first.startswith(f"Kahuna board at http://127.0.0.1:{port}/"), first + again.stderr.read()
        assert request(port, "GET", "/api/board")[0] == 200
    finally:
        again.send_signal(signal.SIGINT)
        assert again.wait(timeout=60) == 0
    print(f"stopped {seconds:.3f} s after the signal")


def test_a_request_the_stopping_server_gives_up_on_is_answered_503_not_a_traceback():
    """uvicorn cancels the requests still running a second into its shutdown (an agent file still loading)."""

    async def slow(scope, receive, send):
        raise asyncio.CancelledError("timeout graceful shutdown exceeded")

    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(AnswerWhileStopping(slow)({"type": "http"}, None, send))
    assert sent[0]["status"] == 503 and json.loads(sent[1]["body"]) == {"error": "the server is stopping"}


def test_a_port_another_server_listens_on_is_still_refused(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SystemExit) as stop:
            serve_main(["--port", str(taken.getsockname()[1])])
    assert stop.value.code == 2 and "cannot listen on 127.0.0.1" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ former 500s
@pytest.fixture
def folders(tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    (records / "broken.json").write_text('{"format": "kahuna-record-v1"}', encoding="utf-8")
    # A lone surrogate: JSON's \\u escapes can spell one, Python reads it, no answer can encode it.
    (records / "surrogate.json").write_text(LONE_SURROGATE_RECORD, encoding="utf-8")
    agents = tmp_path / "agents"
    agents.mkdir()
    return tmp_path, records, agents


JSON = {"Content-Type": "application/json"}
LONE_SURROGATE_RECORD = (
    '{"format": "kahuna-record-v1", "players": ["\\ud800", "greedy"], "seed": 1, "config": {}, "actions": [], '
    '"result": null}'
)
LONE_SURROGATE_RESULTS = (
    '{"format": "kahuna-eval-v1", "entrants": ["\\ud800"], "pairings": [], "ratings": [{"entrant": "\\udfff", '
    '"elo": 0, "elo_se": 0, "elo_ci95": [0, 0], "games": 0, "score": 0}]}'
)


def test_every_former_500_is_a_one_line_4xx_without_a_path(folders):
    root, records, agents = folders
    bad_results = {"format": "kahuna-eval-v1", "entrants": [], "pairings": [], "ratings": None}
    answers = []
    with local_client(create_app(records_dir=records, agents_dir=agents)) as client:
        for body in (
            {"opponent": "x" * 300 + ".pt"},
            {"opponent": "y" * 250 + ".pt@mcts:1"},
            {"opponent": "a\x00b.pt"},
            {"opponent": "random\x00"},
            {"opponent": "random", "seed": "9" * 5000},
            {"opponent": "random", "seed": 10**4000},
            {"opponent": "random", "seat": "1" * 5000},
        ):
            answers.append(client.post("/api/games", json=body))
        answers.append(client.post("/api/games", content=b'{"seed": ' + b"9" * 5000 + b"}", headers=JSON))
        for name in ("%00", "x" * 300, "a%00b.json", "..%2F..%2Fetc%2Fpasswd", "broken.json", "missing.json"):
            answers.append(client.get(f"/api/records/{name}"))
        for text in ("NaN", "Infinity", "-Infinity"):
            body = json.dumps(bad_results).replace('"ratings": null', f'"ratings": null, "seed": {text}')
            answers.append(client.post("/api/results", content=body.encode(), headers=JSON))
        answers.append(client.post("/api/results", json={**bad_results, "games_per_pairing": "x"}))
        answers.append(client.post("/api/replay", content=b'{"seed": NaN}', headers=JSON))
        answers.append(client.get("/api/games/" + "z" * 300))
        answers.append(client.post("/api/replay", content=LONE_SURROGATE_RECORD.encode(), headers=JSON))
        answers.append(client.post("/api/results", content=LONE_SURROGATE_RESULTS.encode(), headers=JSON))
        answers.append(client.post("/api/analysis", content=b'{"record": "\\udc80", "ply": 0}', headers=JSON))
        answers.append(client.get("/api/records/surrogate.json"))
        for answer in answers:
            error = assert_one_line_4xx(answer)
            assert str(root) not in error and len(error) < 400, error
        assert client.get("/api/results").status_code == 200
        board = client.get("/api/board").json()
        assert board["agents_dir"] == "agents" and board["records_dir"] == "records"  # names, not server paths
        listing = client.get("/api/records")
        assert str(root) not in listing.text and "broken.json" in listing.text
        surrogate = next(entry for entry in listing.json()["records"] if entry["name"] == "surrogate.json")
        assert "not text" in surrogate["error"]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"format": "kahuna-eval-v1", "entrants": [], "pairings": [], "ratings": null, "seed": NaN}', "NaN"),
        (LONE_SURROGATE_RESULTS, "lone surrogate"),
    ],
)
def test_results_files_that_are_not_json_text_are_refused_at_startup(tmp_path, capsys, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=words):
        read_results(path)
    with pytest.raises(SystemExit) as stop:
        serve_main(["--results", str(path)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and words in err


def test_testserver_is_not_a_loopback_host_name():
    with TestClient(create_app()) as client:  # Host: testserver
        assert client.get("/api/board").status_code == 400
    with TestClient(create_app(), base_url="http://localhost") as client:
        assert client.get("/api/board").status_code == 200


# ------------------------------------------------------------------------------------------------ sessions
def test_another_owners_new_games_never_drop_a_game_in_progress():
    """Two browsers behind one address: the other's 70 new games set aside only its own games, in memory."""
    app = create_app(caps=Caps(new_games_per_minute=100))
    mine = local_client(app, client=("10.0.0.1", 5000))
    theirs = local_client(app, owner=BYSTANDER, client=("10.0.0.1", 5000))
    game = mine.post("/api/games", json={"opponent": "random", "seed": 1}).json()
    answers = [theirs.post("/api/games", json={"opponent": "random", "seed": k}) for k in range(70)]
    assert all(answer.status_code == 201 for answer in answers)
    assert mine.get(f"/api/games/{game['id']}").json()["state"] == game["state"]
    store = app.state.store
    theirs_playing = [s.id for s in store._sessions.values() if s.owner == owner_key(BYSTANDER) and not s.finished]
    assert len(store.games.owned(owner_key(BYSTANDER), "playing")) == store.caps.games_per_owner
    assert len(theirs_playing) <= store.caps.games_per_owner
    # Their first games made way for their own later ones: abandoned, stored, their records readable.
    first = answers[0].json()["id"]
    reloaded = theirs.get(f"/api/games/{first}")
    assert reloaded.status_code == 200 and reloaded.json()["state"]["abandoned"]
    assert theirs.get(f"/api/games/{first}/record").status_code == 200
    assert mine.get(f"/api/games/{game['id']}").json()["state"] == game["state"]


def opened(store, owner="a", client="10.0.0.1"):
    """A game of ``owner`` opened in ``store`` whose opening is done (its lock released)."""
    session = store.open_game({"opponent": "random"}, client, owner)
    session.lock.release()
    return session


def test_a_new_game_cannot_abandon_one_whose_opening_is_being_computed():
    store = SessionStore(caps=Caps(games_per_owner=1))
    session = store.open_game({"opponent": "random"}, "10.0.0.1", "a")  # its opening not computed yet
    with pytest.raises(WebError) as busy:
        store.open_game({"opponent": "random"}, "10.0.0.1", "a")
    assert busy.value.status == 429 and not session.cancel.is_set() and not session.abandoned
    assert opened(store, owner="b").owner == "b"  # another owner is not held back


def test_a_full_memory_sets_games_aside_and_refuses_only_when_all_are_being_computed():
    store = SessionStore(limit=3)
    held = [opened(store, owner=f"owner-{k}") for k in range(3)]
    newest = opened(store, owner="owner-9")  # the least recently used game is set aside, not lost
    assert not store.held(held[0].id) and store.get(held[0].id) is held[0]  # the same copy taken back
    computed = list(store._sessions.values())
    for session in computed:
        assert session.lock.acquire(blocking=False)  # being computed
    with pytest.raises(WebError) as full:
        opened(store, owner="owner-10")
    assert full.value.status == 503 and "computing" in str(full.value)
    for session in computed:
        session.lock.release()
    assert all(store.get(s.id) is s for s in (*held, newest))


def test_idle_games_are_set_aside_but_not_one_being_computed():
    now = [0.0]
    store = SessionStore(idle_seconds=60.0, clock=lambda: now[0])
    idle = opened(store)
    busy = opened(store)
    now[0] = 50.0
    recent = opened(store, owner="b")
    now[0] = 100.0
    assert busy.lock.acquire(blocking=False)  # its move is being computed
    opened(store, owner="c")
    busy.lock.release()
    assert not store.held(idle.id)  # set aside: out of memory, still stored
    assert store.get(busy.id) is busy and store.get(recent.id) is recent
    state, actions, idle_id = idle.game.to_dict(), list(idle.actions), idle.id
    del idle
    gc.collect()  # nothing holds it any more
    back = store.get(idle_id)  # rebuilt from the game store
    assert back.actions == actions and back.game.to_dict() == state


def test_an_owners_games_being_computed_are_not_abandoned_for_its_new_game():
    store = SessionStore(caps=Caps(games_per_owner=2))
    first = opened(store)
    second = opened(store)
    for session in (first, second):
        assert session.lock.acquire(blocking=False)
    with pytest.raises(WebError) as busy:
        opened(store)
    assert busy.value.status == 429 and not (first.abandoned or second.abandoned)
    second.lock.release()
    opened(store)  # abandons the one not being computed
    assert second.abandoned and not first.abandoned
    assert store.games.owned("a", "playing")[0] == first.id and len(store.games.owned("a", "playing")) == 2


def test_the_bot_queue_answers_503_when_full_and_runs_every_job():
    gate = threading.Event()
    queue = BotQueue(workers=1, waiting=2)
    futures = [queue.submit(lambda k=k: gate.wait(60) and k) for k in range(3)]
    with pytest.raises(WebError) as full:
        queue.submit(lambda: None)
    assert full.value.status == 503 and queue.busy() == 3
    gate.set()
    assert [future.result(timeout=60) for future in futures] == [0, 1, 2]
    queue.stop()
    with pytest.raises(WebError, match="stopping"):
        queue.submit(lambda: None)


# ------------------------------------------------------------------------------------------------ a real server's caps
@contextlib.contextmanager
def serving(*argv, cwd, preexec_fn=None):
    """``kahuna-serve --port 0 ARGV`` in a subprocess: yields its port and its stderr lines (read once it stopped)."""
    server, first = _start_server("--port", "0", *argv, cwd=cwd, preexec_fn=preexec_fn)
    errors = []
    try:
        assert first.startswith("Kahuna board at http://127.0.0.1:"), first + server.stderr.read()
        yield int(first.split()[3].rsplit(":", 1)[1].strip("/")), errors
    finally:
        server.send_signal(signal.SIGINT)
        try:
            assert server.wait(timeout=60) == 0
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
            errors.extend(server.stderr.read().splitlines())


def test_a_spoofed_x_forwarded_for_changes_nothing_without_proxy_headers(tmp_path):
    """Browsers new to the server, each claiming another address: one address all the same, unless a proxy says so."""

    def newcomers(port):
        spoofed = [{"X-Forwarded-For": f"203.0.113.{k}"} for k in range(3)]
        return [request(port, "POST", "/api/games", {"opponent": "random"}, owner=None, headers=h)[0] for h in spoofed]

    argv = ("--max-new-owners-per-minute", "2")
    with serving(*argv, "--data", str(tmp_path / "plain"), cwd=tmp_path) as (port, _):
        assert newcomers(port) == [201, 201, 429]  # the socket's address, 127.0.0.1, for all three
    with serving(*argv, "--proxy-headers", "--data", str(tmp_path / "proxied"), cwd=tmp_path) as (port, _):
        assert newcomers(port) == [201, 201, 201]  # behind a proxy on 127.0.0.1: the addresses it names


def test_a_full_disk_refuses_the_move_and_a_restart_has_every_acknowledged_one(tmp_path):
    """Issue 65: the server's files cannot grow past 128 kB (RLIMIT_FSIZE; SIGXFSZ ignored, so a write fails)."""

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (128 * 1024, 128 * 1024))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    data = str(tmp_path / "data")
    with serving("--data", data, cwd=tmp_path, preexec_fn=small_files) as (port, _):
        status, game = request(port, "POST", "/api/games", {"opponent": "greedy", "seed": 1})
        assert status == 201
        acknowledged, refusals = game, []
        while len(refusals) < 3 and not acknowledged["state"]["over"]:
            move = acknowledged["state"]["legal"][0]["id"]
            status, answer = request(port, "POST", f"/api/games/{game['id']}/move", {"action": move})
            if status == 200:
                acknowledged = answer
                continue
            assert status == 503, answer
            refusals.append(answer["error"])  # and the move was not played
            assert request(port, "GET", f"/api/games/{game['id']}")[1]["state"] == acknowledged["state"]
        assert len(acknowledged["state"]["log"]) >= 2 and refusals  # some moves were stored, then none could be
        assert set(refusals) == {"not saved: the server's file size limit (ulimit -f) was reached"}
        status, refused = request(port, "POST", "/api/games", {"opponent": "greedy"})
        assert status == 503 and refused["error"].startswith("not saved: ")
    with serving("--data", data, cwd=tmp_path) as (port, _):
        assert request(port, "GET", f"/api/games/{game['id']}")[1]["state"] == acknowledged["state"]


def test_a_client_that_leaves_mid_upload_is_one_log_line(tmp_path):
    with serving("--data", str(tmp_path / "data"), cwd=tmp_path) as (port, errors):
        for path in ("/api/replay", "/api/results", "/api/games") * 2:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
                raw.sendall(
                    f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n".encode()
                    + b'Content-Length: 100000\r\n\r\n{"format": '
                )
        wait_for(lambda: request(port, "GET", "/api/board")[0] == 200, "the server answers")
    left = [line for line in errors if "the client left before its upload was complete" in line]
    assert len(left) == 6 and "Traceback" not in "\n".join(errors), errors
    assert errors[-1] == "kahuna-serve stopped"
