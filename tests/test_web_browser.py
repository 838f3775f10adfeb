"""kahuna-serve's page in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, via Selenium).

A server on a free loopback port (a thread running uvicorn, its games in a
``--data`` folder) and one browser serve every test of this module: a full
game against ``random`` played by clicking legal moves (the first one on the
SVG board) until the end screen shows, the record it offers replayed by
``kahuna-replay``, then a swapped-seat rematch abandoned; the opponent's
actions animated one by one and summarised; a hand card that shows its moves
and never discards; reload and a server restart keeping the game; a store
that cannot be written (a ``kahuna-serve`` process whose files may not grow)
said at once in an alert, no unsaved move shown played; the phone layout (the
turn line, the board and your hand together, 44 px tap targets, stones clear
of the island names, a tap on a line's middle choosing that line); the analysis board, a hint that moves nothing and an
undo told beside the players; a move played by keyboard from the skip link,
the focus kept on the board; a new game's opening named and stopped; a search
stopped; the contrast of the board's marks and of the text; the players'
rules panel; bad input shown on the page; a record opened, stepped and
analysed; results files shown as tables.

The tests skip, saying why, only when the browser, its driver or Selenium
is missing (``apt-get install chromium chromium-driver``; the ``web`` extra).
``KAHUNA_WEB_SCREENSHOT=docs/img/web_board.png`` also saves the mid-game
screenshot there (it is always saved under the test's temporary folder);
``benchmarks/web_screenshots.py`` takes the pictures of docs/WEB.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("uvicorn", reason='needs the web extra: pip install -e ".[web]"')
pytest.importorskip("selenium", reason='the browser driver Selenium is missing: pip install -e ".[web]"')
import uvicorn
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.actions.action_builder import ActionBuilder
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from kahuna_arena.evaluation import run_evaluation
from kahuna_arena.records import read_record
from kahuna_arena.replay import main as replay_main
from kahuna_env.actions import NUM_ACTIONS, describe_action
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
HUGE_SEARCH = 1_000_000
"""Simulations per decision of the opponent whose search the Stop test ends: hours of work if Stop failed."""
STORE_FILE_LIMIT = 40_000
"""Bytes any file of a "full disk" server may reach: the store's shared-memory file (32 KiB) fits, and its
write-ahead log (a 4 KiB page per change and more) runs out after a few games' changes."""


# ------------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A records folder (kahuna-eval --record games), a results file (kahuna-eval --json), a --data folder."""
    root = tmp_path_factory.mktemp("web")
    records = root / "records"
    run_evaluation(["greedy", "random"], games=2, seed=5, workers=1, record_dir=records)
    report = run_evaluation(["random", "greedy", "mcts:2"], games=2, seed=3, workers=1)
    results = root / "ratings.json"
    results.write_text(json.dumps(report.to_dict()), encoding="utf-8")
    return {"root": root, "records": records, "results": results, "data": root / "data"}


@contextlib.contextmanager
def app_on_data(folders: dict[str, Path]) -> Iterator[Any]:
    """kahuna-serve's app as ``kahuna-serve --records --results --data --max-simulations 1000000`` builds it."""
    from kahuna_web.gamestore import open_data_folder
    from kahuna_web.results import read_results

    games = open_data_folder(folders["data"])
    try:
        yield create_app(
            records_dir=folders["records"],
            results=[read_results(folders["results"])],
            max_simulations=HUGE_SEARCH,
            games=games,
        )
    finally:
        games.close()


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` on a free loopback port, in a thread, until the block ends; yields its address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not instance.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        instance.should_exit = True
        thread.join(timeout=10)


@contextlib.contextmanager
def kahuna_serve(data: Path, output: Path, file_limit: int | None = None) -> Iterator[str]:
    """``kahuna-serve --data DATA --port 0`` in a process of its own until the block ends; yields its address.

    ``file_limit``: no file it writes may grow past that many bytes (``RLIMIT_FSIZE``, with ``SIGXFSZ``
    ignored, so a write beyond fails with ``EFBIG`` as on a full disk).  Its output goes to ``output``.
    """

    def limit_files() -> None:  # in the child, before kahuna-serve starts
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    command = [sys.executable, "-m", "kahuna_web.server", "--port", "0", "--data", str(data)]
    with output.open("w") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, preexec_fn=limit_files if file_limit else None
        )
    try:
        deadline = time.monotonic() + WAIT
        while not (found := re.search(r"http://127\.0\.0\.1:\d+", output.read_text())):
            assert process.poll() is None and time.monotonic() < deadline, output.read_text()
            time.sleep(0.05)
        yield found.group(0)
    finally:
        process.terminate()  # SIGTERM: kahuna-serve stops within a second or two
        try:
            process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def server(folders):
    """kahuna-serve's app on a free loopback port, in a thread; yields its address."""
    with app_on_data(folders) as app, serving(app) as address:
        yield address


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


def open_page(driver, server, query="?delay=0&autoplay=40", fresh=True):
    """The page at ``query``; ``fresh``: as a browser that never played here (no last game to reopen)."""
    if fresh:
        driver.get(server + "/api/board")  # a page of the origin, to forget its last game
        driver.execute_script("window.localStorage.clear()")
    driver.get_log("browser")  # forget what earlier tests (and the JSON page's favicon) logged
    driver.get(server + "/" + query)
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1", "page not ready")


def busy(driver):
    return driver.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "1"


def idle(driver):
    wait(driver, lambda d: not busy(d), "page stays busy")


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def shown(driver, element_id):
    return driver.find_element(By.ID, element_id).is_displayed()


def message(driver):
    """The text of the page's alert (without its dismiss button), "" when none shows."""
    box = driver.find_element(By.ID, "message")
    return driver.find_element(By.ID, "message-text").text if box.is_displayed() else ""


def page_errors(driver):
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def answer_dialog(driver, yes=True):
    """Answer the page's confirmation dialog (which must be open)."""
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is not None, "no confirmation asked")
    driver.find_element(By.ID, "confirm-yes" if yes else "confirm-no").click()
    wait(driver, lambda d: d.find_element(By.ID, "confirm").get_attribute("open") is None, "the dialog stays open")


def dialog_open(driver):
    return driver.find_element(By.ID, "confirm").get_attribute("open") is not None


def ask_for_game(driver, opponent, seed, seat=0):
    """Fill in the new-game form and press New game (confirming it over a game in progress); no waiting."""
    Select(driver.find_element(By.ID, "seat")).select_by_value(str(seat))
    field = driver.find_element(By.ID, "opponent")
    field.clear()
    field.send_keys(opponent)
    seed_field = driver.find_element(By.ID, "seed")
    seed_field.clear()
    seed_field.send_keys(str(seed))
    driver.find_element(By.ID, "start").click()
    if dialog_open(driver):  # a game in progress is replaced only once confirmed
        answer_dialog(driver)


def start_game(driver, opponent, seed, seat=0):
    ask_for_game(driver, opponent, seed, seat)
    idle(driver)


def play_button(driver, button):
    """Click a move button; a face-down discard is then confirmed."""
    button.click()
    if dialog_open(driver):
        answer_dialog(driver)
    idle(driver)


def log_texts(driver):
    return [item.text for item in driver.find_elements(By.CSS_SELECTOR, "#play-log li")]


def legal_ids(driver):
    return [int(b.get_attribute("data-action")) for b in driver.find_elements(By.CSS_SELECTOR, "#moves button.move")]


def game_id(driver):
    match = re.search(r"[?&]game=([^&]+)", driver.current_url)
    assert match, f"the address names no game: {driver.current_url}"
    return match.group(1)


def first_move_that_is_not_a_discard(driver):
    return next(b for b in driver.find_elements(By.CSS_SELECTOR, "#moves button.move") if "discard" not in b.text)


def a_play(driver):
    """The first placement or removal button: a move of the card phase, which an undo may take back."""
    return driver.find_elements(By.CSS_SELECTOR, "#moves button.move.place, #moves button.move.remove")[0]


def turn_ending_move(driver):
    """The draw (or else the pass) button: a move that hands the turn to the opponent."""
    for kind in ("draw", "pass"):
        found = driver.find_elements(By.CSS_SELECTOR, f"#moves button.move.{kind}")
        if found:
            return found[0]
    raise AssertionError("neither draw nor pass is offered")


SEEN_SCRIPT = """
const message = document.getElementById('message');
const texts = (selector) => [...document.querySelectorAll(selector)].map((node) => node.textContent);
return {
  message: message.hidden ? '' : document.getElementById('message-text').textContent,
  log: texts('#play-log li'),
  summary: document.getElementById('turn-summary').hidden ? [] : texts('#turn-summary ol li'),
  over: !document.getElementById('end-screen').hidden,
};
"""
"""What the full game checks after each click, read in one round trip."""


# ------------------------------------------------------------------------------------------------ play
def test_a_full_game_against_random_by_clicking_legal_moves(browser, server, tmp_path):
    open_page(browser, server)
    start_game(browser, "random", 7)
    assert message(browser) == ""
    board = browser.find_element(By.ID, "play-board")
    assert len(board.find_elements(By.CSS_SELECTOR, "g.island-group")) == 12
    assert len(board.find_elements(By.CSS_SELECTOR, "g.line")) == 27
    assert not shown(browser, "download") and shown(browser, "download-later")  # the record tells the deal
    rng = np.random.default_rng(0)
    clicks = 0
    used_board = False
    while not shown(browser, "end-screen"):  # one script per click reads the page: a round trip each is slow
        moves = browser.find_elements(By.CSS_SELECTOR, "#moves button.move")
        assert moves, "no legal move offered while the game is on"
        lines = board.find_elements(By.CSS_SELECTOR, "g.playable")
        if lines and not used_board:  # once through the board: a line, then which card pays (if more than one)
            logged = len(log_texts(browser))
            lines[0].click()
            choices = [c for c in browser.find_elements(By.CSS_SELECTOR, "#chooser button.move") if c.is_displayed()]
            if choices:
                assert all(c.text.startswith(("place", "remove", "free")) for c in choices)
                choices[0].click()
            idle(browser)
            assert len(log_texts(browser)) > logged  # a one-choice line plays at once
            used_board = True
        else:
            play_button(browser, moves[int(rng.integers(len(moves)))])
        idle(browser)
        clicks += 1
        seen = browser.execute_script(SEEN_SCRIPT)
        assert seen["message"] == "", seen["message"]
        since = list(reversed(seen["log"]))
        theirs = next((k for k, text in enumerate(since) if text.startswith("you: ")), len(since))
        if theirs and not seen["over"]:  # the opponent's whole turn, summarised until we act
            assert seen["summary"] == [text[len("random: ") :] for text in reversed(since[:theirs])], seen
        if clicks == 25:
            path = tmp_path / "web_board.png"
            assert browser.save_screenshot(str(path)) and path.stat().st_size > 10_000
            target = os.environ.get("KAHUNA_WEB_SCREENSHOT")
            if target:
                shutil.copyfile(path, target)
        assert clicks < 600, "the game does not end"
    assert used_board
    result = text_of(browser, "result")
    points = r"\d+ points?"
    pattern = rf"(You win|random wins|The game is a draw): you {points}, random {points} \(final scoring \d+ : \d+\)"
    assert re.fullmatch(pattern, result), result
    assert not re.search(r"\b1 points", result)
    outcome = browser.find_element(By.ID, "end-screen").get_attribute("data-outcome")
    expected = "win" if result.startswith("You win") else "loss" if result.startswith("random") else "draw"
    assert outcome == expected and expected in browser.find_element(By.ID, "result").get_attribute("class")
    revealed = browser.find_elements(By.CSS_SELECTOR, "#revealed .row")
    assert len(revealed) == 2 and revealed[0].text.startswith("random's hand, revealed")
    # The hand panel shows it too, without a card back left; your own hand is "Your hand".
    cards = revealed[0].text.split()[3:]
    panel = browser.find_element(By.CSS_SELECTOR, "#play-cards .row").text.split()
    assert panel == ["random's", "hand", f"({len(cards)})", *cards] or (panel[-2:], cards) == (["no", "cards"], [])
    assert text_of(browser, "my-hand").startswith("Your hand (")
    assert browser.find_elements(By.CSS_SELECTOR, "#breakdown table tr")  # every scoring, with its points
    assert browser.find_elements(By.CSS_SELECTOR, "#moves button.move") == []
    download = browser.find_element(By.ID, "download")
    assert download.is_displayed()
    record = tmp_path / "played.json"
    with urllib.request.urlopen(download.get_attribute("href"), timeout=WAIT) as answer:
        record.write_bytes(answer.read())
    assert replay_main([str(record), "--quiet"]) == 0
    assert len(log_texts(browser)) == len(read_record(record)["actions"])
    # The game on the Replay tab, from its record.
    browser.find_element(By.ID, "replay-game").click()
    actions = len(read_record(record)["actions"])
    wait(browser, lambda d: text_of(d, "rp-counter") == f"move 0 of {actions}", "the game did not open as a replay")
    browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=play]").click()
    # Swap seats: a new game against the same opponent, now in the other seat; then abandoned (asked first).
    first = game_id(browser)
    browser.find_element(By.ID, "swap").click()
    idle(browser)
    assert game_id(browser) != first and "player_1" in text_of(browser, "opponent-info")
    assert not shown(browser, "end-screen") and legal_ids(browser)
    browser.find_element(By.ID, "abandon").click()
    answer_dialog(browser, yes=False)
    assert legal_ids(browser)  # not abandoned: the answer was no
    browser.find_element(By.ID, "abandon").click()
    answer_dialog(browser)
    idle(browser)
    assert browser.find_element(By.ID, "end-screen").get_attribute("data-outcome") == "abandoned"
    assert "inactive" in browser.find_element(By.ID, "play-area").get_attribute("class")
    assert board.find_element(By.CSS_SELECTOR, "text.inactive-text").text == "Game abandoned"
    assert legal_ids(browser) == [] and not browser.find_element(By.ID, "abandon").is_enabled()
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
    while busy(browser):
        seen.append(text_of(browser, "last-action"))
        assert time.monotonic() < deadline
        time.sleep(0.03)
    shown_texts = [text for text in dict.fromkeys(seen) if text.startswith("random plays: ")]
    logged = log_texts(browser)
    assert len(logged) == 3 and all(text.startswith("random: ") for text in logged)
    expected = iter(f"random plays: {text[len('random: ') :]}" for text in logged)
    # At least two of the three shown one after the other, in order (a busy machine may sample past one).
    assert len(shown_texts) >= 2 and all(text in expected for text in shown_texts), (shown_texts, logged)
    assert browser.find_elements(By.CSS_SELECTOR, "#moves button.move")  # then it is our turn
    # The whole opening turn stays summarised, in the panel and on the board, until we act.
    summary = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#turn-summary ol li")]
    assert [text.split(" — ")[0] for text in summary] == [text[len("random: ") :].split(" — ")[0] for text in logged]
    board_lines = [text for text in logged if re.search(r": (place|remove|free bridge) ", text)]
    badges = browser.find_elements(By.CSS_SELECTOR, "#play-board g.turn-badge")
    assert len(badges) == len(board_lines)
    Select(browser.find_element(By.ID, "seat")).select_by_value("0")


def test_a_hand_card_click_shows_its_moves_and_never_discards(browser, server):
    open_page(browser, server)
    start_game(browser, "greedy", 11)
    before = log_texts(browser)
    cards = browser.find_elements(By.CSS_SELECTOR, "#my-hand button.card.hand")
    assert cards, "no hand card offered"
    card = cards[0].get_attribute("data-card")
    cards[0].click()
    assert log_texts(browser) == before and not dialog_open(browser)  # nothing played, nothing asked
    info = browser.find_element(By.ID, "card-info")
    assert info.is_displayed() and card in info.text
    pressed = browser.find_element(By.CSS_SELECTOR, f"#my-hand button[data-card='{card}']")
    assert pressed.get_attribute("aria-pressed") == "true"
    paying = info.find_elements(By.CSS_SELECTOR, "button.move")
    assert all(card in button.text for button in paying)
    # The lines it can pay for are drawn selected on the board.
    assert len(browser.find_elements(By.CSS_SELECTOR, "#play-board line.hint.selected")) == len(
        {describe_action(int(b.get_attribute("data-action"))).split()[1] for b in paying}
    )
    # Discarding is its own button, and asks first: "no" changes nothing, "yes" discards that card.
    browser.find_element(By.ID, "discard").click()
    answer_dialog(browser, yes=False)
    assert log_texts(browser) == before
    browser.find_element(By.ID, "discard").click()
    answer_dialog(browser)
    idle(browser)
    assert log_texts(browser)[len(before)] == f"you: discard {card} face down"
    # The opponent's strength beside its name (the --results table rates greedy).
    assert re.search(r"against greedy · Elo -?\d+ ±\d+", text_of(browser, "opponent-info"))
    # New game during a game in progress asks first; "no" keeps the game.
    identity, logged = game_id(browser), log_texts(browser)
    browser.find_element(By.ID, "start").click()
    answer_dialog(browser, yes=False)
    assert game_id(browser) == identity and log_texts(browser) == logged
    # The first Tab stop of the page is not a discard (nor any move).
    open_page(browser, server)
    start_game(browser, "greedy", 11)
    ActionChains(browser).send_keys(Keys.TAB).perform()
    focused = browser.switch_to.active_element
    assert focused.get_attribute("data-action") is None and "discard" not in focused.text.lower()
    assert page_errors(browser) == []


def test_a_reload_keeps_the_game_and_a_lost_game_says_so(browser, server):
    open_page(browser, server)
    start_game(browser, "greedy", 4)
    play_button(browser, first_move_that_is_not_a_discard(browser))
    identity, logged = game_id(browser), log_texts(browser)
    browser.refresh()
    wait(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1", "not ready")
    assert game_id(browser) == identity and log_texts(browser) == logged and legal_ids(browser)
    # A closed tab: the page without the game in its address reopens the last game of this browser.
    open_page(browser, server, fresh=False)
    assert game_id(browser) == identity and log_texts(browser) == logged
    # A game the server does not have: one line, a new game offered, nothing else changed.
    open_page(browser, server, "?delay=0&game=no-such-game")
    lost = browser.find_element(By.ID, "lost-game")
    assert lost.is_displayed() and "no-such-game" in lost.text and "\n" not in lost.text.replace("Start a new game", "")
    assert not shown(browser, "play-area") and "game=" not in browser.current_url
    browser.find_element(By.ID, "lost-new").click()
    idle(browser)
    assert shown(browser, "play-area") and legal_ids(browser) and game_id(browser) != "no-such-game"
    assert page_errors(browser) == [] or all("404" in error for error in page_errors(browser))


def test_a_server_restart_keeps_the_game(browser, server, folders):
    open_page(browser, server)
    start_game(browser, "greedy", 8)
    play_button(browser, first_move_that_is_not_a_discard(browser))
    identity, logged = game_id(browser), log_texts(browser)
    with app_on_data(folders) as app, serving(app) as second:  # a second server on the same --data folder
        open_page(browser, second, f"?delay=0&game={identity}")
        assert log_texts(browser) == logged and legal_ids(browser)
        play_button(browser, first_move_that_is_not_a_discard(browser))
        assert len(log_texts(browser)) > len(logged) and message(browser) == ""
        browser.find_element(By.ID, "abandon").click()
        answer_dialog(browser)
        idle(browser)
        with urllib.request.urlopen(browser.find_element(By.ID, "download").get_attribute("href"), timeout=WAIT) as got:
            record = json.loads(got.read())
        assert len(record["actions"]) == len(log_texts(browser)) and record["finished"] is False


@contextlib.contextmanager
def phone_size(driver) -> Iterator[None]:
    """The browser as a 390x844 phone until the block ends."""
    metrics = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        yield
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_store_that_cannot_be_written_is_said_at_once_and_no_unsaved_move_shows(browser, tmp_path):
    from kahuna_web.gamestore import open_data_folder

    data = tmp_path / "data"
    open_data_folder(data).close()  # the store, ready; the server below cannot grow any file past the limit
    with kahuna_serve(data, tmp_path / "full.out", file_limit=STORE_FILE_LIMIT) as address:
        open_page(browser, address)
        start_game(browser, "random", 7)
        assert message(browser) == "" and legal_ids(browser)  # the new game is stored
        for _ in range(40):  # the store runs out after a few changes
            logged, legal = log_texts(browser), legal_ids(browser)
            play_button(browser, first_move_that_is_not_a_discard(browser))
            if message(browser):
                break
        else:
            pytest.fail("every move was stored: the store never ran out")
        # Said at once, in words, in an alert in view; the page shows the game as it was before the move.
        assert browser.find_element(By.ID, "message").get_attribute("role") == "alert"
        assert "not saved" in message(browser).lower() and browser.execute_script(IN_VIEW, "message"), message(browser)
        assert log_texts(browser) == logged and legal_ids(browser) == legal
        identity = game_id(browser)
    # A restart on the same store: every move the page showed played is there, and no other.
    with kahuna_serve(data, tmp_path / "restarted.out") as address:
        open_page(browser, address, f"?delay=0&game={identity}")
        assert log_texts(browser) == logged and legal_ids(browser) == legal and message(browser) == ""


def test_the_phone_layout_scrolls_no_sideways_and_the_chooser_is_in_view(browser, server):
    with phone_size(browser):
        open_page(browser, server)
        start_game(browser, "greedy", 2)
        overflow = "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        assert browser.execute_script(overflow) <= 0
        width = browser.execute_script("return document.getElementById('play-board').getBoundingClientRect().width")
        assert 300 <= width <= 390
        # A line with more than one move: the chooser opens beside it, wholly in view.
        lines = browser.find_elements(By.CSS_SELECTOR, "#play-board g.playable")
        several = [line for line in lines if " or " in line.get_attribute("aria-label")]
        assert several, "no line with two moves in this deal"
        several[-1].click()
        chooser = browser.find_element(By.ID, "chooser")
        assert chooser.is_displayed()
        box = browser.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "return [r.left, r.top, r.right, r.bottom, window.innerWidth, window.innerHeight];",
            chooser,
        )
        left, top, right, bottom, view_width, view_height = box
        assert 0 <= left and right <= view_width and 0 <= top and bottom <= view_height, box
        assert browser.execute_script(overflow) <= 0
        for tab in ("results", "replay"):
            browser.find_element(By.CSS_SELECTOR, f"nav button[data-tab={tab}]").click()
            assert browser.execute_script(overflow) <= 0, tab
        browser.find_element(By.ID, "open-record").click()  # a replay: its board, controls and log
        wait(browser, lambda d: shown(d, "replay-area"), "the record did not open")
        assert browser.execute_script(overflow) <= 0


LAYOUT_SCRIPT = """
const box = (node) => { const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const seen = (node) => node.getClientRects().length > 0 && getComputedStyle(node).visibility !== 'hidden';
const targets = [...document.querySelectorAll('button, a.button, input, select, summary')].filter(seen);
const lines = [...document.querySelectorAll('#play-board g.playable line.hit')].map((hit) => {
  const m = hit.getScreenCTM();
  const a = new DOMPoint(hit.x1.baseVal.value, hit.y1.baseVal.value).matrixTransform(m);
  const b = new DOMPoint(hit.x2.baseVal.value, hit.y2.baseVal.value).matrixTransform(m);
  const length = Math.hypot(b.x - a.x, b.y - a.y);
  const [nx, ny] = [(a.y - b.y) / length, (b.x - a.x) / length];
  const [mx, my] = [(a.x + b.x) / 2, (a.y + b.y) / 2];
  // 22 px either side of the line's middle, across it: both points still land on its tap area.
  const hits = [22, -22].map((d) => document.elementsFromPoint(mx + d * nx, my + d * ny).includes(hit));
  return [hit.parentNode.dataset.line, ...hits];
});
return {
  view: [window.innerWidth, window.innerHeight],
  parts: Object.fromEntries(
    ['play-status', 'play-board', 'my-hand', 'card-info'].map((id) => [id, box(document.getElementById(id))])),
  targets: targets.map((node) => [node.id || node.textContent.trim().slice(0, 30), box(node)]),
  lines,
};
"""
"""The phone layout's measures: the parts of a turn, every tap target's box, each playable line's tap area."""

STONES_SCRIPT = """
const box = (node) => { const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
const part = (g, css) => box(g.querySelector(css));
return [...document.querySelectorAll(arguments[0] + ' g.island-group')].filter((g) => g.querySelector('.stone'))
  .map((g) => [g.dataset.island, part(g, '.stone'), part(g, '.name'), part(g, '.counts')]);
"""
"""For each island with a controller's stone: its name, the stone's, the name's and the counts' boxes."""


def overlap(first: list[float], second: list[float]) -> bool:
    """Whether two boxes ``[left, top, right, bottom]`` intersect."""
    return first[0] < second[2] and second[0] < first[2] and first[1] < second[3] and second[1] < first[3]


def test_on_a_phone_the_turn_line_board_and_hand_fit_together_with_44_px_targets(browser, server, folders):
    with phone_size(browser):
        open_page(browser, server)
        start_game(browser, "greedy", 2, seat=1)  # greedy opens: the log has its turn
        card = browser.find_element(By.CSS_SELECTOR, "#my-hand button.card.hand")
        assert browser.find_element(By.ID, "my-hand").text.startswith("Your hand (")
        card.click()  # a card selected: the moves it pays for show under the hand
        assert shown(browser, "card-info")
        layout = browser.execute_script(LAYOUT_SCRIPT)
        width, height = layout["view"]
        for name, (left, top, right, bottom) in layout["parts"].items():  # all in the window at once
            assert 0 <= left and right <= width and 0 <= top and bottom <= height, (name, layout["parts"])
        small = [(name, box) for name, box in layout["targets"] if box[2] - box[0] < 44 or box[3] - box[1] < 44]
        assert not small, small
        assert layout["lines"] and all(a and b for _, a, b in layout["lines"]), layout["lines"]
        # The log folds away on a phone (the board comes first); opened, it lists the moves.
        assert not browser.find_element(By.ID, "log-panel").get_attribute("open")
        browser.find_element(By.CSS_SELECTOR, "#log-panel summary").click()
        assert log_texts(browser) and all(text for text in log_texts(browser))
        # A finished game's board has stones on many islands: none covers a name or its counts.
        name = sorted(path.name for path in folders["records"].glob("*.json"))[0]
        browser.find_element(By.CSS_SELECTOR, "nav button[data-tab=replay]").click()
        Select(browser.find_element(By.ID, "record-list")).select_by_value(name)
        browser.find_element(By.ID, "open-record").click()
        wait(browser, lambda d: shown(d, "replay-area"), "the record did not open")
        browser.find_element(By.ID, "rp-end").click()
        for size in ("phone", "desktop"):
            if size == "desktop":
                browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            stones = browser.execute_script(STONES_SCRIPT, "#replay-board")
            assert len(stones) >= 3, stones
            covered = [island for island, stone, *labels in stones if any(overlap(stone, label) for label in labels)]
            assert not covered, (size, covered)
    assert page_errors(browser) == []


LINE_MIDDLES = """
document.getElementById('play-board').scrollIntoView({block: 'nearest'});
return [...document.querySelectorAll('#play-board g.playable line.hit')].map((hit) => {
  const m = hit.getScreenCTM();
  const a = new DOMPoint(hit.x1.baseVal.value, hit.y1.baseVal.value).matrixTransform(m);
  const b = new DOMPoint(hit.x2.baseVal.value, hit.y2.baseVal.value).matrixTransform(m);
  return [Number(hit.parentNode.dataset.line), (a.x + b.x) / 2, (a.y + b.y) / 2];
});
"""
"""Each playable line of the game's board (scrolled into view): its id and its segment's middle in the window."""


def tap(driver, x, y):
    """A pointer's click at the window's point ``(x, y)``, on whatever lies there."""
    actions = ActionBuilder(driver)
    actions.pointer_action.move_to_location(round(x), round(y))
    actions.pointer_action.click()
    actions.perform()


def tapped_line(driver, line_names, played_before):
    """The line a tap chose: the chooser's line (then closed), or the line of the one move it played (then undone)."""
    chooser = driver.find_element(By.ID, "chooser")
    if chooser.is_displayed():
        title = chooser.find_element(By.CSS_SELECTOR, ".chooser-title").text
        chooser.find_element(By.CSS_SELECTOR, "button.cancel").click()
        return title.removesuffix(": choose")
    played = actions_logged(driver)
    assert len(played) == len(played_before) + 1, (played_before, played)  # one move, the tapped line's
    named = [name for name in line_names if f" {name} " in f" {played[-1]} "]
    driver.find_element(By.ID, "undo").click()
    idle(driver)
    assert actions_logged(driver) == played_before
    return named[0] if len(named) == 1 else named


def actions_logged(driver):
    """The log's actions without their effects (which the page notes only for the moves it animated), also folded."""
    texts = driver.execute_script("return [...document.querySelectorAll('#play-log li')].map((li) => li.textContent)")
    return [text.split(" — ")[0] for text in texts]


@pytest.mark.parametrize(
    ("size", "positions"),
    [((390, 844), ((2, 0, 0), (2, 1, 0), (7, 0, 3))), ((1400, 900), ((7, 0, 3),))],
    ids=["phone", "desktop"],
)
def test_a_tap_on_the_middle_of_a_playable_line_chooses_that_line(browser, server, size, positions):
    """Issue 76: at a phone's scale the 48 px tap areas overlap; a tap goes to the line nearest to it.

    In several positions (a deal from either seat, another a few turns in: ``(seed, seat, turns)``), every
    playable line's middle is tapped: the chooser opens for that line, or its one move is played (and taken
    back to go on).  On a desktop, where the areas do not overlap at the middles, the same holds as before.
    """
    width, height = size
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        open_page(browser, server)
        line_names = browser.execute_script("return BOARD.lines.map((line) => line.name)")
        wrong, tapped = [], 0
        for seed, seat, turns in positions:
            start_game(browser, "greedy", seed, seat)
            for _ in range(turns):
                play_button(browser, turn_ending_move(browser))
            for line, *_ in browser.execute_script(LINE_MIDDLES):
                middles = {item[0]: item[1:] for item in browser.execute_script(LINE_MIDDLES)}
                assert line in middles  # still playable: each tap was taken back
                before = actions_logged(browser)
                tap(browser, *middles[line])
                idle(browser)
                chosen = tapped_line(browser, line_names, before)
                tapped += 1
                if chosen != line_names[line]:
                    wrong.append((seed, seat, turns, line_names[line], chosen))
        assert tapped >= 10 * len(positions) and not wrong, (tapped, wrong)
        assert page_errors(browser) == []
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_the_analysis_board_gives_probabilities_over_legal_moves_a_hint_and_undo(browser, server):
    open_page(browser, server)
    start_game(browser, "greedy", 5)
    legal = set(legal_ids(browser))
    assert browser.find_elements(By.CSS_SELECTOR, "#tab-play .badge, #play-board g.prob-label") == []  # none asked
    browser.find_element(By.CSS_SELECTOR, "#analysis-panel summary").click()
    # A fixed agent, so that the position's probabilities do not change with each new champion (the sixth
    # champion passes here with probability 0.99999, which leaves no line at half a percent to draw).
    agent = browser.find_element(By.ID, "analysis-agent")
    agent.clear()
    agent.send_keys("champion-v5")
    browser.find_element(By.ID, "analyse").click()
    idle(browser)
    assert message(browser) == "", message(browser)
    rows = browser.find_elements(By.CSS_SELECTOR, "#analysis table.probabilities tr[data-action]")
    probabilities = {int(row.get_attribute("data-action")): float(row.get_attribute("data-p")) for row in rows}
    assert probabilities and set(probabilities) <= legal
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-6)
    assert re.search(r"win probability for you \d+(\.\d)?%", text_of(browser, "analysis"))
    assert browser.find_elements(By.CSS_SELECTOR, "#play-board g.prob-label"), probabilities  # drawn on the board
    assert browser.find_elements(By.CSS_SELECTOR, "#my-hand .badge, #play-cards .badge")  # and on the cards
    # On request, a search's visits and values for the top moves.
    simulations = browser.find_element(By.ID, "analysis-simulations")
    simulations.clear()
    simulations.send_keys("4")
    browser.find_element(By.ID, "analyse").click()
    idle(browser)
    searched = browser.find_elements(By.CSS_SELECTOR, "#analysis table.search tr[data-action]")
    assert searched and all(int(row.get_attribute("data-action")) in legal for row in searched)
    # A hint marks one legal move, and moves nothing on the page (its text floats over it).
    board_top = "return document.getElementById('play-board').getBoundingClientRect().top + window.scrollY"
    top = browser.execute_script(board_top)
    browser.find_element(By.ID, "hint").click()
    idle(browser)
    hinted = browser.find_elements(By.CSS_SELECTOR, "#moves button.move.hinted")
    assert len(hinted) == 1 and int(hinted[0].get_attribute("data-action")) in legal
    assert message(browser).startswith("Hint from champion-v5: ") and browser.execute_script(board_top) == top
    # Undo takes our play back; after a draw (or a pass) it is off: the drawn card and the replies stay.
    before = log_texts(browser)
    undo = browser.find_element(By.ID, "undo")
    assert not undo.is_enabled()  # nothing played yet
    play_button(browser, a_play(browser))
    assert len(log_texts(browser)) > len(before) and undo.is_enabled()
    undo.click()
    idle(browser)
    assert log_texts(browser) == before and set(legal_ids(browser)) == legal
    play_button(browser, turn_ending_move(browser))
    idle(browser)
    assert len(log_texts(browser)) > len(before) + 1 and not undo.is_enabled()  # its replies came
    assert page_errors(browser) == []


def test_moves_taken_back_are_told_beside_the_players_not_in_a_name(browser, server):
    open_page(browser, server)
    start_game(browser, "greedy", 5)
    play_button(browser, a_play(browser))
    browser.find_element(By.ID, "undo").click()
    idle(browser)
    browser.find_element(By.ID, "abandon").click()
    answer_dialog(browser)
    idle(browser)
    browser.find_element(By.ID, "replay-game").click()
    wait(browser, lambda d: shown(d, "replay-area"), "the game did not open as a replay")
    assert "took moves back" in text_of(browser, "replay-notes")
    assert "took moves back" not in text_of(browser, "replay-title")  # the players are their names


ON_THE_BOARD = "return document.activeElement.closest('#play-board') !== null"
"""Whether the keyboard focus is on the board (a line of it, or the board itself)."""


def test_a_move_is_played_with_the_keyboard(browser, server):
    open_page(browser, server)
    start_game(browser, "greedy", 6)
    open_page(browser, server, fresh=False)  # the game reopened, the focus at the start of the page
    # The first Tab stop skips to the board: one Tab and Enter reach its first playable line.
    ActionChains(browser).send_keys(Keys.TAB).perform()
    skip = browser.switch_to.active_element
    assert skip.get_attribute("id") == "skip-board" and skip.is_displayed() and skip.text == "Skip to the board"
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    lines = browser.find_elements(By.CSS_SELECTOR, "#play-board g.playable")
    assert len(lines) >= 2 and all(line.get_attribute("tabindex") == "0" for line in lines)
    assert browser.switch_to.active_element == lines[0]
    ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
    focused = browser.switch_to.active_element
    assert focused.get_attribute("data-line") == lines[1].get_attribute("data-line")
    name = focused.get_attribute("aria-label").split(":")[0]
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    if shown(browser, "chooser"):  # several ways to pay: the first choice has the focus
        assert browser.switch_to.active_element.get_attribute("class") == "move choice"
        ActionChains(browser).send_keys(Keys.ENTER).perform()
    idle(browser)
    mine = [text for text in log_texts(browser) if text.startswith("you: ")]
    assert mine and name in mine[0] and browser.execute_script(ON_THE_BOARD)  # the focus stays on the board
    # A line with one move plays it on the first click (no chooser to confirm).
    single = [line for line in browser.find_elements(By.CSS_SELECTOR, "#play-board g.playable")]
    single = [line for line in single if " or " not in line.get_attribute("aria-label")]
    assert single, "seed 6: after the placement it is still our turn, with a line only one card pays for"
    label, logged = single[0].get_attribute("aria-label"), log_texts(browser)
    single[0].click()
    idle(browser)
    assert not shown(browser, "chooser") and log_texts(browser)[len(logged)] == f"you: {label.split(': ', 1)[1]}"
    # Marks carry their meaning for screen readers; the live region announces the turn.
    assert browser.find_element(By.CSS_SELECTOR, "#play-board g.line").get_attribute("aria-label").startswith("line ")
    wait(browser, lambda d: d.find_element(By.ID, "announce").get_attribute("textContent"), "nothing announced")


LEAVING = """
const leaving = new Event('beforeunload', {cancelable: true});
window.dispatchEvent(leaving);
return leaving.defaultPrevented;
"""
"""Whether the page would ask before being left (a reload, a closed tab) now."""


def test_stop_ends_the_opponents_search_and_it_moves(browser, server):
    open_page(browser, server)
    start_game(browser, f"mcts:{HUGE_SEARCH}", 9)
    before = log_texts(browser)
    turn_ending_move(browser).click()
    wait(browser, lambda d: shown(d, "thinking"), "no thinking indicator")
    wait(browser, lambda d: re.search(r"is thinking… \d+ s", text_of(d, "thinking")), "no elapsed time")
    assert all(not button.is_enabled() for button in browser.find_elements(By.CSS_SELECTOR, "#tab-play button.move"))
    assert browser.find_elements(By.CSS_SELECTOR, "#play-board g.playable") == []  # no hints meanwhile
    assert not browser.execute_script(LEAVING)  # leaving never loses the game (the agent moves): nothing to ask
    # The game opened in a second tab meanwhile says it is thinking too, and can stop it.
    first_tab, address = browser.current_window_handle, browser.current_url
    browser.switch_to.new_window("tab")
    try:
        browser.get(address)
        wait(browser, lambda d: shown(d, "thinking"), "the reopened game does not show its opponent thinking")
        assert browser.find_elements(By.CSS_SELECTOR, "#moves button.move") == []
        browser.find_element(By.ID, "stop").click()
        idle(browser)
        assert legal_ids(browser) and log_texts(browser)[len(before) + 1].startswith(f"mcts:{HUGE_SEARCH}: ")
    finally:
        browser.close()
        browser.switch_to.window(first_tab)
    idle(browser)  # the first tab's move request answered normally
    assert message(browser) == "", message(browser)
    logged = log_texts(browser)
    assert len(logged) >= len(before) + 2 and logged[len(before) + 1].startswith(f"mcts:{HUGE_SEARCH}: ")
    assert legal_ids(browser) and not shown(browser, "end-screen")  # our turn again, the game goes on
    assert not browser.execute_script(LEAVING)  # nothing thinks: leaving is not asked
    # Stop in the page that asked: a second search, stopped there.
    logged = log_texts(browser)
    turn_ending_move(browser).click()
    wait(browser, lambda d: shown(d, "thinking"), "no thinking indicator")
    browser.find_element(By.ID, "stop").click()
    idle(browser)
    assert len(log_texts(browser)) >= len(logged) + 2 and legal_ids(browser) and message(browser) == ""


IN_VIEW = """
const r = document.getElementById(arguments[0]).getBoundingClientRect();
return r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
"""
"""Whether the element of that id shows wholly inside the window."""


def thinking_names(driver, opponent):
    """Wait for the thinking indicator of a new game's opening: it names ``opponent``, is in view, Stop reaches it."""
    pattern = rf"{re.escape(opponent)} is thinking about its first move… \d+ s.*"

    def ready(d):
        return shown(d, "thinking") and re.fullmatch(pattern, text_of(d, "thinking-text")) and stop_enabled(d)

    wait(driver, ready, "no indicator with Stop")
    assert driver.execute_script(IN_VIEW, "thinking")


def stop_enabled(driver):
    return driver.find_element(By.ID, "stop").is_enabled()


def test_a_new_games_opening_names_its_opponent_and_stop_reaches_that_game(browser, folders):
    opponent = f"mcts:{HUGE_SEARCH}"  # hours of thinking unless stopped
    with app_on_data(folders) as app, serving(app) as address:
        open_page(browser, address)
        # The page's first game, the opponent opening: its board shows at once, with the indicator naming it.
        ask_for_game(browser, opponent, 9, seat=1)
        thinking_names(browser, opponent)
        opened = game_id(browser)  # the address names the new game while its opponent thinks
        assert shown(browser, "play-area") and legal_ids(browser) == [] and log_texts(browser) == []
        browser.find_element(By.ID, "stop").click()
        idle(browser)
        # Stopped, the opponent played its best move so far: the game is kept, our turn.
        assert message(browser) == "" and game_id(browser) == opened
        assert log_texts(browser) and all(text.startswith(f"{opponent}: ") for text in log_texts(browser))
        assert legal_ids(browser) and not shown(browser, "thinking")
        # A game shown, then a new one: the indicator names the new opponent, Stop reaches the new game.
        start_game(browser, "greedy", 4)
        shown_game = game_id(browser)
        ask_for_game(browser, opponent, 9, seat=1)
        thinking_names(browser, opponent)
        assert game_id(browser) != shown_game and log_texts(browser) == []
        browser.find_element(By.ID, "stop").click()
        idle(browser)
        assert message(browser) == "" and game_id(browser) not in (shown_game, opened)
        assert log_texts(browser) and all(text.startswith(f"{opponent}: ") for text in log_texts(browser))
        assert legal_ids(browser)
        # The server's search ended: no agent computation is left running or waiting.
        wait(browser, lambda _: app.state.bots.busy() == 0, "the stopped search still runs")
    assert page_errors(browser) == []  # no TypeError, no 409 of a Stop sent to another game


def test_the_pages_action_encoding_is_the_engines(browser, server):
    """The page draws an analysis by action id (its line, the cards it pays): its reading of docs/ENV.md's encoding."""
    open_page(browser, server)
    texts = browser.execute_script(f"return Array.from({{length: {NUM_ACTIONS}}}, (_, a) => describeAction(a))")
    assert texts == [describe_action(action) for action in range(NUM_ACTIONS)]
    # With the position, a face-up card is named (the analysis of a replayed position lists it so).
    script = "return [148, 149, 150].map((a) => describeAction(a, {face_up: ['LALE', null, 'KAHU']}))"
    named = browser.execute_script(script)
    assert named == ["take LALE (face-up)", "take face-up slot 1", "take KAHU (face-up)"]


# ------------------------------------------------------------------------------------------------ looks
def luminance(colour: str) -> float:
    """WCAG relative luminance of a CSS ``rgb(...)``/``rgba(...)`` colour."""
    r, g, b = (int(part) / 255 for part in re.findall(r"[\d.]+", colour)[:3])
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(first: str, second: str) -> float:
    high, low = sorted((luminance(first), luminance(second)), reverse=True)
    return (high + 0.05) / (low + 0.05)


COLOURS_SCRIPT = """
const sea = getComputedStyle(document.getElementById('play-board')).backgroundColor;
const SVG = 'http://www.w3.org/2000/svg';
const probe = (tag, cls, parent) => {
  const node = tag === 'line' ? document.createElementNS(SVG, 'line') : document.createElement(tag);
  node.setAttribute('class', cls);
  parent.append(node);
  const style = getComputedStyle(node);
  const colour = tag === 'line' ? style.stroke : style.color;
  node.remove();
  return colour;
};
const board = document.getElementById('play-board');
const panel = document.querySelector('#tab-play .panel');
const end = document.getElementById('end-screen');
const marks = {};
for (const cls of ['free', 'hint', 'turn-mark', 'removed', 'claim', 'prob']) marks[cls] = probe('line', cls, board);
const panelBg = getComputedStyle(panel).backgroundColor;
const texts = {};
for (const cls of ['p0', 'p1', 'muted', 'effects']) texts[cls] = [probe('span', cls, panel), panelBg];
texts['page'] = [getComputedStyle(document.body).color, getComputedStyle(document.body).backgroundColor];
const backs = {win: '#e9f5ec', loss: '#fbeceb', draw: '#fbf5e1'};
for (const outcome of ['win', 'loss', 'draw']) {
  end.dataset.outcome = outcome;
  texts['result ' + outcome] = [probe('div', 'result ' + outcome, end), getComputedStyle(end).backgroundColor];
}
delete end.dataset.outcome;
const back = document.querySelector('#play-cards .card.back');
texts['card back'] = [getComputedStyle(back).color, getComputedStyle(back).backgroundColor];
return {sea, marks, texts};
"""


def test_board_marks_and_text_have_enough_contrast(browser, server):
    open_page(browser, server)
    start_game(browser, "greedy", 3)
    colours = browser.execute_script(COLOURS_SCRIPT)
    sea = colours["sea"]
    marks = {name: contrast(colour, sea) for name, colour in colours["marks"].items()}
    assert all(ratio >= 3.0 for ratio in marks.values()), marks  # board marks against the sea
    texts = {name: contrast(*pair) for name, pair in colours["texts"].items()}
    assert all(ratio >= 4.5 for ratio in texts.values()), texts  # text against its background
    # The marks drawn now are those colours: the free lines and the hints of this position.
    free = browser.find_element(By.CSS_SELECTOR, "#play-board line.free").value_of_css_property("stroke")
    hint = browser.find_element(By.CSS_SELECTOR, "#play-board line.hint").value_of_css_property("stroke")
    assert contrast(free, sea) >= 3.0 and contrast(hint, sea) >= 3.0


def test_the_rules_panel_shows_the_rules(browser, server):
    open_page(browser, server)
    browser.find_element(By.ID, "rules-open").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#rules-body details"), "no rules shown")
    titles = [node.text for node in browser.find_elements(By.CSS_SELECTOR, "#rules-body details summary")]
    assert {"Setup", "A turn", "Control", "Rounds and scoring"} <= set(titles), titles
    # A players' rulebook: a turn, placing, removing, control, scoring, the end; nothing for developers.
    rules = browser.execute_script("return document.getElementById('rules-body').textContent")
    for words in ("Place", "Remove", "Draw", "Pass", "majority", "points", "The winner"):
        assert words in rules, words
    developers = ("kahuna_env", "KahunaGame", "tests/", "test_", "degree // 2", "numpy", "FREE_BRIDGE", "from_dict")
    assert [word for word in developers if word in rules] == []
    browser.find_element(By.ID, "rules-close").click()
    assert not shown(browser, "rules-panel")
    # The legend says what an island's label means.
    start_game(browser, "greedy", 1)
    assert "the majority needed to control it" in text_of(browser, "legend")


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
    # The analysis board of this position, for the seat to act there: probabilities over its legal moves.
    browser.find_element(By.CSS_SELECTOR, "#replay-analysis-panel summary").click()
    browser.find_element(By.ID, "replay-analyse").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#replay-analysis tr[data-p]"), "no replay analysis")
    rows = browser.find_elements(By.CSS_SELECTOR, "#replay-analysis tr[data-p]")
    probabilities = {int(row.get_attribute("data-action")): float(row.get_attribute("data-p")) for row in rows}
    assert sum(probabilities.values()) == pytest.approx(1.0, abs=1e-6) and record["actions"][3] in probabilities
    drawn = "#replay-board g.prob-label, #replay-cards .badge"  # on the lines, the cards, the pile
    assert browser.find_elements(By.CSS_SELECTOR, drawn)
    browser.find_element(By.ID, "rp-back").click()
    assert text_of(browser, "rp-counter") == f"move 2 of {total}"
    assert not browser.find_elements(By.CSS_SELECTOR, drawn)  # another position
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
