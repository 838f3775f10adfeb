"""Who owns a game of ``kahuna-serve``, and the caps that hold a flood to its sender (docs/WEB.md, Threat model).

A game belongs to the browser that created it.  :class:`OwnerCookie` (ASGI
middleware) gives every browser an unguessable owner token, the cookie
``kahuna_owner`` (``HttpOnly; SameSite=Strict; Path=/``), on the first answer
to a request that carries none (loading the page, so the page's API calls
carry it afterwards); a value that is not a token this server could have made
counts as none.  The game store keeps only :func:`owner_key` of a token (its
SHA-256), never the token itself.

A browser withholds a ``SameSite=Strict`` cookie from a request another site
started (a link to the board followed from elsewhere), and says so
(``Sec-Fetch-Site: cross-site``): such a request is answered as a newcomer's,
but without a ``Set-Cookie``, which would replace the token the browser
holds and so lose its games.  The page's own calls then carry the token.

:class:`RecentEvents` counts events per key over the last minute: the games
an owner created, the owners an address brought.  Its memory stays bounded by
the keys active within the window (older ones are forgotten as it goes).
"""

from __future__ import annotations

import collections
import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

OWNER_COOKIE = "kahuna_owner"
"""The cookie that holds a browser's owner token."""
OWNER_COOKIE_DAYS = 365
"""How long a browser keeps its owner token (and so its games): a year, renewed by nothing."""
_TOKEN = re.compile(r"[A-Za-z0-9_-]{32,64}")
"""What an owner token looks like (:func:`new_token` makes 32 characters: 192 random bits)."""
OWNER_SCOPE_KEY = "kahuna_owner"
"""Where :class:`OwnerCookie` leaves the request's owner token in the ASGI scope."""
WINDOW_SECONDS = 60.0
"""The window of the per-minute caps."""


def new_token() -> str:
    """A fresh owner token: 192 random bits, URL-safe."""
    return secrets.token_urlsafe(24)


def owner_key(token: str) -> str:
    """What the game store keeps of an owner token: its SHA-256 (a leaked store lends nobody's games)."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def cookie_token(cookie_header: str) -> str | None:
    """The owner token of a ``Cookie`` header, ``None`` if it has none that looks like one."""
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == OWNER_COOKIE and _TOKEN.fullmatch(value.strip('"')):
            return value.strip('"')
    return None


def set_cookie_header(token: str) -> bytes:
    """The ``Set-Cookie`` value that gives a browser ``token``: not readable by scripts, never sent cross-site."""
    seconds = OWNER_COOKIE_DAYS * 24 * 3600
    return f"{OWNER_COOKIE}={token}; Max-Age={seconds}; Path=/; HttpOnly; SameSite=Strict".encode("ascii")


class OwnerCookie:
    """ASGI middleware: the request's owner token in ``scope["kahuna_owner"]``, a new one set when it has none."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = b"; ".join(value for name, value in scope["headers"] if name == b"cookie")
        token = cookie_token(header.decode("latin-1"))
        if token is not None:
            scope[OWNER_SCOPE_KEY] = token
            await self.app(scope, receive, send)
            return
        token = new_token()
        scope[OWNER_SCOPE_KEY] = token
        fetch_site = b"".join(value for name, value in scope["headers"] if name == b"sec-fetch-site")
        if fetch_site.strip().lower() == b"cross-site":  # the browser may hold a token it did not send: keep it
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Any) -> None:
            if message["type"] == "http.response.start":
                cookie = (b"set-cookie", set_cookie_header(token))
                message = {**message, "headers": [*message.get("headers", []), cookie]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


class RecentEvents:
    """Events per key within the last :data:`WINDOW_SECONDS` (``clock``: seconds); safe from several threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, window: float = WINDOW_SECONDS) -> None:
        self.clock = clock
        self.window = window
        self._events: dict[str, collections.deque[float]] = {}
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    def add_if_below(self, key: str, limit: int) -> bool:
        """Count one event of ``key`` if it has fewer than ``limit`` within the window; whether it was counted."""
        with self._lock:
            now = self.clock()
            events = self._recent(key, now)
            if len(events) >= limit:
                return False
            events.append(now)
            self._events[key] = events
            if now >= self._next_sweep:  # forget the keys with nothing in the window: memory stays bounded
                for stale in [k for k, queue in self._events.items() if not self._recent(k, now)]:
                    del self._events[stale]
                self._next_sweep = now + self.window
            return True

    def _recent(self, key: str, now: float) -> collections.deque[float]:
        events = self._events.get(key, collections.deque())
        while events and events[0] <= now - self.window:
            events.popleft()
        return events
