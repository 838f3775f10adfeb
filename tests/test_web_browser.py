"""kahuna-serve's page in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, via Selenium).

A server on a free loopback port (a thread running uvicorn) and one browser
serve every test of this module: a full game against ``random`` played by
clicking legal moves (the first one on the SVG board) until the result shows,
the record it offers replayed by ``kahuna-replay``; the opponent's actions
animated one by one; bad input shown on the
page; a record opened and stepped through; results files shown as tables.

The tests skip, saying why, only when the browser, its driver or Selenium
is missing (``apt-get install chromium chromium-driver``; the ``web`` extra).
``KAHUNA_WEB_SCREENSHOT=docs/img/web_board.png`` also saves the mid-game
screenshot there (it is always saved under the test's temporary folder).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
import urllib.request

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("uvicorn", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("selenium", reason='the browser driver Selenium is missing: pip install -e ".[web]"')
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from arena.evaluation import run_evaluation
from arena.records import read_record
from arena.replay import main as replay_main
from kahuna_env.actions import describe_action
from kahuna_web.app import create_app

CHROMIUM = os.environ.get("KAHUNA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = os.environ.get("KAHUNA_CHROMEDRIVER") or shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not CHROMIUM or not CHROMEDRIVER,
    reason="Chromium or its driver is missing (Debian: apt-get install chromium chromium-driver)",
)
WAIT = 120.0
"""Seconds to wait for the page at most: a whole game takes a few seconds, but a 2-core machine with other
CPU-bound work slows Chromium several times over; every wait polls, so a generous bound costs nothing."""


# ------------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A records folder (kahuna-eval --record games) and a results file (kahuna-eval --json)."""
    root = tmp_path_factory.mktemp("web")
    records = root / "records"
    run_evaluation(["greedy", "random"], games=2, seed=5, workers=1, record_dir=records)
    report = run_evaluation(["random", "greedy", "mcts:2"], games=2, seed=3, workers=1)
    results = root / "ratings.json"
    results.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return {"root": root, "records": records, "results": results}


@pytest.fixture(scope="module")
def server(folders):
    """kahuna-serve's app on a free loopback port, in a thread; yields its address."""
    from kahuna_web.results import read_results

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = create_app(records_dir=folders["records"], results=[read_results(folders["results"])])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not instance.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    instance.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1300,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    except WebDriverException as error:  # installed but unusable: a real failure, not a skip
        pytest.fail(f"cannot start {CHROMIUM} with {CHROMEDRIVER}: {str(error).splitlines()[0]}")
    driver.set_page_load_timeout(WAIT)
    yield driver
    driver.quit()


def wait(driver, condition, message):
    return WebDriverWait(driver, WAIT, poll_frequency=0.02).until(lambda d: condition(d), message)


def open_page(driver, server, query="?delay=0&autoplay=40"):
    driver.get_log("browser")  # forget what earlier tests logged
    driver.get(server + "/" + query)
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1", "page not ready")


def idle(driver):
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "0", "page stays busy")


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def message(driver):
    box = driver.find_element(By.ID, "message")
    return box.text if box.is_displayed() else ""


def page_errors(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def start_game(driver, opponent, seed):
    field = driver.find_element(By.ID, "opponent")
    field.clear()
    field.send_keys(opponent)
    seed_field = driver.find_element(By.ID, "seed")
    seed_field.clear()
    seed_field.send_keys(str(seed))
    driver.find_element(By.ID, "start").click()
    idle(driver)


# ------------------------------------------------------------------------------------------------ play
def test_a_full_game_against_random_by_clicking_legal_moves(browser, server, tmp_path):
    open_page(browser, server)
    start_game(browser, "random", 7)
    assert message(browser) == ""
    board = browser.find_element(By.ID, "play-board")
    assert len(board.find_elements(By.CSS_SELECTOR, "g.island-group")) == 12
    assert len(board.find_elements(By.CSS_SELECTOR, "g.line")) == 27
    assert not browser.find_element(By.ID, "download").is_displayed()  # no record (no seed) during the game
    rng = np.random.default_rng(0)
    clicks = 0
    used_board = False
    while not text_of(browser, "result"):
        moves = browser.find_elements(By.CSS_SELECTOR, "#moves button.move")
        assert moves, "no legal move offered while the game is on"
        lines = board.find_elements(By.CSS_SELECTOR, "g.playable")
        if lines and not used_board:  # once through the board: a line, then which card pays
            lines[0].click()
            choices = browser.find_elements(By.CSS_SELECTOR, "#chooser button.move")
            assert choices and all(c.text.startswith(("place", "remove", "free")) for c in choices)
            choices[0].click()
            used_board = True
        else:
            moves[int(rng.integers(len(moves)))].click()
        idle(browser)
        clicks += 1
        assert message(browser) == "", message(browser)
        if clicks == 25:
            path = tmp_path / "web_board.png"
            assert browser.save_screenshot(str(path)) and path.stat().st_size > 10_000
            target = os.environ.get("KAHUNA_WEB_SCREENSHOT")
            if target:
                shutil.copyfile(path, target)
        assert clicks < 600, "the game does not end"
    assert used_board
    result = text_of(browser, "result")
    pattern = r"(You win|random wins|The game is a draw): you \d+ points, random \d+ points \(final scoring \d+ : \d+\)"
    assert re.fullmatch(pattern, result), result
    assert browser.find_elements(By.CSS_SELECTOR, "#moves button.move") == []
    download = browser.find_element(By.ID, "download")
    assert download.is_displayed()
    record = tmp_path / "played.json"
    with urllib.request.urlopen(download.get_attribute("href"), timeout=WAIT) as answer:
        record.write_bytes(answer.read())
    assert replay_main([str(record), "--quiet"]) == 0
    assert len(browser.find_elements(By.CSS_SELECTOR, "#play-log li")) == len(read_record(record)["actions"])
    assert page_errors(browser) == []


def test_the_opponents_actions_play_one_by_one(browser, server):
    open_page(browser, server, "?delay=150")
    Select(browser.find_element(By.ID, "seat")).select_by_value("1")  # random opens
    for element_id, value in (("opponent", "random"), ("seed", "3")):  # seed 3: random opens with 3 actions
        field = browser.find_element(By.ID, element_id)
        field.clear()
        field.send_keys(value)
    browser.find_element(By.ID, "start").click()
    seen = []
    deadline = time.monotonic() + WAIT
    while browser.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "1":
        seen.append(text_of(browser, "last-action"))
        assert time.monotonic() < deadline
        time.sleep(0.03)
    shown = [text for text in dict.fromkeys(seen) if text.startswith("random plays: ")]
    logged = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#play-log li")]
    assert len(logged) == 3 and all(text.startswith("random: ") for text in logged)
    expected = iter(f"random plays: {text[len('random: ') :]}" for text in logged)
    # At least two of the three shown one after the other, in order (a busy machine may sample past one).
    assert len(shown) >= 2 and all(text in expected for text in shown), (shown, logged)
    assert browser.find_elements(By.CSS_SELECTOR, "#moves button.move")  # then it is our turn
    Select(browser.find_element(By.ID, "seat")).select_by_value("0")


def test_bad_input_is_a_message_on_the_page(browser, server, folders, tmp_path):
    open_page(browser, server)
    start_game(browser, "grandmaster", 1)
    assert "unknown entrant 'grandmaster'" in message(browser)
    assert not browser.find_element(By.ID, "play-area").is_displayed()
    start_game(browser, "../../etc/passwd", 1)
    assert "agent files are not allowed" in message(browser)
    browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=replay]").click()
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "kahuna-record-v1", "players": ["a"]}', encoding="utf-8")
    browser.find_element(By.ID, "record-file").send_keys(str(broken))
    wait(browser, lambda d: "missing field(s)" in message(d), "no message for a malformed record")
    browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=results]").click()
    browser.find_element(By.ID, "results-file").send_keys(str(broken))
    wait(browser, lambda d: "not a kahuna-eval --json file" in message(d), "no message for a bad results file")


# ------------------------------------------------------------------------------------------------ replay
def test_a_record_steps_forward_back_jumps_and_autoplays(browser, server, folders):
    name = sorted(path.name for path in folders["records"].glob("*.json"))[0]
    record = read_record(folders["records"] / name)
    total = len(record["actions"])
    open_page(browser, server)
    browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=replay]").click()
    Select(browser.find_element(By.ID, "record-list")).select_by_value(name)
    browser.find_element(By.ID, "open-record").click()
    wait(browser, lambda d: text_of(d, "rp-counter") == f"move 0 of {total}", "the record did not open")
    assert (
        "greedy" in text_of(browser, "replay-title")
        and len(browser.find_elements(By.CSS_SELECTOR, "#replay-log li")) == total
    )
    for _ in range(3):
        browser.find_element(By.ID, "rp-forward").click()
    assert text_of(browser, "rp-counter") == f"move 3 of {total}"
    player = "greedy" if record["players"][0] == "greedy" else "random"
    assert text_of(browser, "replay-move").endswith(f": {describe_action(record['actions'][2])}")
    assert player in text_of(browser, "replay-status")
    browser.find_element(By.ID, "rp-back").click()
    assert text_of(browser, "rp-counter") == f"move 2 of {total}"
    jump = browser.find_element(By.ID, "rp-jump")
    jump.clear()
    jump.send_keys(str(total))
    browser.find_element(By.ID, "rp-go").click()
    assert text_of(browser, "rp-counter") == f"move {total} of {total}"
    assert "game over" in text_of(browser, "replay-status")
    browser.find_element(By.ID, "rp-start").click()
    browser.find_element(By.ID, "rp-auto").click()
    wait(browser, lambda d: int(text_of(d, "rp-counter").split()[1]) >= 5, "autoplay does not advance")
    browser.find_element(By.ID, "rp-auto").click()  # pause
    assert page_errors(browser) == []


# ------------------------------------------------------------------------------------------------ results
def test_results_files_show_as_tables(browser, server, folders):
    open_page(browser, server)
    browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=results]").click()
    blocks = browser.find_elements(By.CSS_SELECTOR, "#results-list .results-block")
    assert len(blocks) == 1  # the --results file
    browser.find_element(By.ID, "results-file").send_keys(str(folders["results"]))
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#results-list .results-block")) == 2, "not loaded")
    block = browser.find_elements(By.CSS_SELECTOR, "#results-list .results-block")[0]
    pairings = block.find_elements(By.CSS_SELECTOR, "table.pairings tr")
    ratings = block.find_elements(By.CSS_SELECTOR, "table.ratings tr")
    assert len(pairings) == 4 and len(ratings) == 4  # a header and three rows each
    assert pairings[1].text.startswith("random vs greedy 2 ")
    data = json.loads(folders["results"].read_text(encoding="utf-8"))
    best = data["ratings"][0]
    assert ratings[1].text.startswith(f"1 {best['entrant']} {best['elo']:.0f}")
    assert "[" in pairings[1].text and message(browser) == ""
    assert page_errors(browser) == []
