"""The pictures of docs/WEB.md: kahuna-serve's page in headless Chromium, at desktop and phone size.

Starts the app on a free loopback port (games kept in memory), drives
Debian's ``chromium`` through Selenium and saves, each at 1400×900 and at
390×844 (``web-NAME-desktop.png``, ``web-NAME-phone.png``):

* ``game``: a game against ``greedy`` in progress, its opening turn summarised;
* ``thinking``: the thinking indicator while ``mcts:1000000`` searches (then stopped);
* ``end``: the end screen of a game against ``random`` played by clicking random legal moves;
* ``analysis``: the analysis board (``champion``, a 10-simulation search) of a position;
* ``rules``: the rules panel.

The PNGs are reduced to a 256-colour palette (each well under 200 KB).

    python benchmarks/web_screenshots.py --out docs/img
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import uvicorn
from PIL import Image
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from kahuna_web.app import create_app

SIZES = {"desktop": (1400, 900), "phone": (390, 844)}
"""The two viewports every picture is taken at."""
WAIT = 120.0
"""Seconds any step may take at most (every wait polls)."""
HUGE_SEARCH = 1_000_000
"""The thinking opponent's simulations per decision: it thinks until stopped."""


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` on a free loopback port in a thread; yields its address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def chromium() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    driver.set_page_load_timeout(WAIT)
    return driver


class Page:
    """The page in one browser, with the few steps the pictures need."""

    def __init__(self, driver: webdriver.Chrome, address: str, out: Path) -> None:
        self.driver, self.address, self.out = driver, address, out

    def wait(self, condition: Any, what: str) -> Any:
        return WebDriverWait(self.driver, WAIT, poll_frequency=0.05).until(lambda d: condition(d), what)

    def idle(self) -> None:
        self.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "0", "page busy")

    def find(self, css: str) -> Any:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def open(self) -> None:
        self.driver.get(self.address + "/?delay=0")
        self.wait(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1", "page not ready")

    def viewport(self, size: str) -> None:
        width, height = SIZES[size]
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == "phone"},
        )

    def confirm_if_asked(self) -> None:
        if self.find("#confirm").get_attribute("open") is not None:
            self.find("#confirm-yes").click()

    def new_game(self, opponent: str, seed: int, seat: int = 0) -> None:
        self.viewport("desktop")
        self.driver.execute_script("window.scrollTo(0, 0)")
        Select(self.find("#seat")).select_by_value(str(seat))
        for css, value in (("#opponent", opponent), ("#seed", str(seed))):
            field = self.find(css)
            field.clear()
            field.send_keys(value)
        self.find("#start").click()
        self.confirm_if_asked()
        self.idle()

    def shoot(self, name: str, focus: str | None = None) -> None:
        """``web-NAME-SIZE.png`` at both sizes; ``focus``: an element scrolled into view."""
        for size in SIZES:
            self.viewport(size)
            self.driver.execute_script("window.scrollTo(0, 0)")
            if focus:  # the board stays in view beside the panel on the desktop (sticky)
                script = "document.querySelector(arguments[0]).scrollIntoView({block: arguments[1]})"
                self.driver.execute_script(script, focus, "start" if size == "phone" else "nearest")
            time.sleep(0.3)  # a layout pass after the resize
            picture = Image.open(io.BytesIO(self.driver.get_screenshot_as_png())).convert("RGB")
            path = self.out / f"web-{name}-{size}.png"
            picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
            print(f"{path}: {picture.width}x{picture.height}, {path.stat().st_size // 1024} KB")
        self.viewport("desktop")


def take_pictures(page: Page) -> None:
    page.open()
    page.new_game("greedy", 4, seat=1)  # greedy opens: its turn is summarised
    page.shoot("game", focus="#play-area")

    page.find("#analysis-panel summary").click()
    simulations = page.find("#analysis-simulations")
    simulations.clear()
    simulations.send_keys("10")
    page.find("#analyse").click()
    page.idle()
    page.shoot("analysis", focus="#analysis")

    page.new_game(f"mcts:{HUGE_SEARCH}", 9)
    page.find("#moves button.move.draw").click()
    page.wait(lambda d: d.find_element(By.ID, "thinking").is_displayed(), "no thinking indicator")
    time.sleep(2.5)  # a few seconds shown
    page.shoot("thinking", focus="#play-status")  # the indicator floats at the bottom of the window
    page.find("#stop").click()
    page.idle()

    page.new_game("random", 7)
    rng = np.random.default_rng(0)
    while not page.find("#end-screen").is_displayed():
        moves = page.driver.find_elements(By.CSS_SELECTOR, "#moves button.move")
        moves[int(rng.integers(len(moves)))].click()
        page.confirm_if_asked()
        page.idle()
    page.shoot("end", focus="#end-screen")

    page.find("#rules-open").click()
    page.wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#rules-body details"), "no rules")
    page.shoot("rules")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/img"), help="folder of the pictures (docs/img)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with serving(create_app(max_simulations=HUGE_SEARCH)) as address:
        driver = chromium()
        try:
            take_pictures(Page(driver, address, args.out))
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
