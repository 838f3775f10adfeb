"""Undo on the web board shows nothing hidden (issue 76; docs/WEB.md, "Analysis board, hint, undo").

Only a play or discard of the person's turn in progress can be taken back.  A draw, a take (its slot
refilled from the pile) and a pass end the turn and hand it to the agent, whose replies tell its cards:
after them the undo is refused (409, one line) and the game is unchanged.  So the person never sees two
outcomes of one decision: the test of that plays games with an undo tried after every action, and
keys every answer by the position it was asked in and the action.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("httpx2", reason='needs the web extra: pip install -e ".[web]"')

from starlette.testclient import TestClient

from kahuna_env.actions import DRAW, PASS
from kahuna_web.app import create_app

OWNER = "undo-test-browser-0000000000000000"
AUDIT_SEED = 4242
"""The seed of the audit that found the undo after a draw (the same card every time, the agent's replies not)."""


def local_client(app):
    """The test client of one browser (``Host: 127.0.0.1``, its owner cookie)."""
    return TestClient(app, base_url="http://127.0.0.1", cookies={"kahuna_owner": OWNER})


def new_game(client, opponent, seed, seat=0):
    answer = client.post("/api/games", json={"opponent": opponent, "seat": seat, "seed": seed})
    assert answer.status_code == 201, answer.text
    return answer.json()


def ends_the_turn(action):
    """A draw, a take or a pass (docs/RULES.md, "A turn")."""
    return DRAW <= action <= PASS


def assert_refused(answer, why="nothing to undo"):
    assert answer.status_code == 409, answer.text
    error = answer.json()["error"]
    assert error.startswith(why) and "\n" not in error, error


@pytest.mark.parametrize("opponent", ["random", "greedy"])
def test_the_draw_undo_audit_learns_nothing(opponent):
    """The audit: draw, then undo three times.  Each undo is refused and the game stays as the draw left it."""
    with local_client(create_app()) as client:
        data = new_game(client, opponent, AUDIT_SEED)
        assert DRAW in {move["id"] for move in data["state"]["legal"]}
        drawn = client.post(f"/api/games/{data['id']}/move", json={"action": DRAW})
        assert drawn.status_code == 200, drawn.text
        after = drawn.json()
        assert [step["player"] for step in after["steps"]][:1] == [0] and len(after["steps"]) > 1  # its replies
        assert not after["state"]["can_undo"]  # the page's button is off
        for _ in range(3):
            assert_refused(client.post(f"/api/games/{data['id']}/undo"))
            again = client.get(f"/api/games/{data['id']}").json()
            assert again["state"] == after["state"] and again["notes"] == []  # nothing taken back, nothing new
        session = client.app.state.store.get(data["id"])
        assert session.undos == [] and len(session.actions) == len(after["state"]["log"])


def test_a_play_before_the_draw_cannot_be_taken_back_after_it():
    # Undo never crosses the agent's turn: the draw ended the turn, the agent replied, the play is history.
    with local_client(create_app()) as client:
        data = new_game(client, "random", AUDIT_SEED)
        play = next(move["id"] for move in data["state"]["legal"] if not ends_the_turn(move["id"]))
        played = client.post(f"/api/games/{data['id']}/move", json={"action": play}).json()
        assert played["state"]["can_undo"] and played["state"]["current_player"] == 0
        ending = next(move["id"] for move in played["state"]["legal"] if ends_the_turn(move["id"]))
        ended = client.post(f"/api/games/{data['id']}/move", json={"action": ending}).json()
        assert not ended["state"]["can_undo"]
        assert_refused(client.post(f"/api/games/{data['id']}/undo"))


def test_undoing_a_play_shows_exactly_the_position_seen_before_it():
    with local_client(create_app()) as client:
        data = new_game(client, "greedy", AUDIT_SEED)
        for move in [m["id"] for m in data["state"]["legal"] if not ends_the_turn(m["id"])][:5]:
            played = client.post(f"/api/games/{data['id']}/move", json={"action": move})
            assert played.status_code == 200 and played.json()["state"]["current_player"] == 0
            undone = client.post(f"/api/games/{data['id']}/undo")
            assert undone.status_code == 200, undone.text
            state = undone.json()["state"]
            assert state["undos"] > data["state"]["undos"]
            assert {**state, "undos": 0, "can_undo": False} == {**data["state"], "undos": 0, "can_undo": False}


@pytest.mark.parametrize("opponent", ["random", "greedy"])
def test_no_decision_ever_shows_two_outcomes_however_the_person_undoes(opponent):
    """The invariant: an undo never lets the person ask the same decision twice and see something else.

    Games of random moves with an undo tried after every action of the person (and the same action or
    another played again): every answer is keyed by the position it was asked in (the actions so far)
    and the action.  An undo is accepted only after a play or discard of the turn in progress, and a
    repeated decision answers exactly as before; an end action (a draw, a take, a pass: what shows a
    hidden card or the agent's replies) is never asked twice from one position.
    """
    rng = np.random.default_rng(76)
    seen: dict[tuple, list] = {}
    ends_asked: set[tuple] = set()
    undos = 0
    with local_client(create_app()) as client:
        for game in range(2):
            data = new_game(client, opponent, AUDIT_SEED + game)
            session = client.app.state.store.get(data["id"])
            for _ in range(400):  # a bound on the work, not a clock: a game ends well within it
                if data["state"]["over"]:
                    break
                legal = [move["id"] for move in data["state"]["legal"]]
                action = legal[int(rng.integers(len(legal)))]
                key = (tuple(session.actions), action)
                if ends_the_turn(action):
                    assert key not in ends_asked, "an end action asked twice from one position"
                    ends_asked.add(key)
                answer = client.post(f"/api/games/{data['id']}/move", json={"action": action})
                assert answer.status_code == 200, answer.text
                data = answer.json()
                shown = [data["steps"], {k: v for k, v in data["state"].items() if k not in ("undos", "can_undo")}]
                assert seen.setdefault(key, shown) == shown, "the same decision answered differently"
                if rng.random() < 0.6:  # try to take it back
                    undone = client.post(f"/api/games/{data['id']}/undo")
                    if ends_the_turn(action) or data["state"]["over"]:
                        assert_refused(undone, "the game is over" if data["state"]["over"] else "nothing to undo")
                        assert client.get(f"/api/games/{data['id']}").json()["state"] == data["state"]
                    else:
                        assert undone.status_code == 200, undone.text
                        undos += 1
                        data = undone.json()
    assert undos > 20 and len(ends_asked) > 20  # both kinds of decision were exercised
