"""The HTTP server of ingest: uvicorn with header, body and idle time-outs and a cap per client (issue 19).

What uvicorn 0.54 (requirements.txt) offers and what it does not, with its h11 protocol (the one it picks
here: ``httptools`` is not installed):

- ``timeout_keep_alive`` closes a connection idle after a response; it is armed only after a response and
  disarmed by any byte, so it does not cover a connection that sends nothing, or part of its headers,
  or part of its body (``uvicorn/protocols/http/h11_impl.py``: ``on_response_complete``,
  ``data_received``). We set it to ``HTTP_IDLE_TIMEOUT_SEC``.
- ``limit_concurrency`` answers 503 once the process has that many connections *or* tasks, whoever holds
  them: 1,000 idle connections of one client would lock every kiosk out. Not used.
- ``h11_max_incomplete_event_size`` bounds the size of a head, not its time.
- No header-read or body-read time-out, no per-client cap.

So :class:`GuardedH11Protocol` (uvicorn's h11 protocol with a guard, given as ``Config(http=...)``) adds:

- a **header time-out**: a request's head must be complete within ``HTTP_HEADER_TIMEOUT_SEC`` of the
  connection, or of the first byte after the previous answer (a deadline, not an idle timer: a client
  trickling a byte a second is cut too), as nginx's ``client_header_timeout``;
- a **body time-out**: while the app reads a body, no byte for ``HTTP_BODY_TIMEOUT_SEC`` closes the
  connection (the time between two reads, as nginx's ``client_body_timeout``: a slow uplink whose bytes
  keep moving is never cut; a body the app is not reading yet, flow-controlled, is not timed);
- a **cap per client**: at most ``HTTP_MAX_CONNECTIONS_PER_CLIENT`` open connections from one address;
  more are closed as they are accepted. The proxies of ``FORWARDED_ALLOW_IPS`` are not capped: every
  visitor comes through them, and the proxy limits its own clients (ingress-nginx ``limit-connections``).

Nothing of this floods the log: each kind of cut is logged once per client per ``_LOG_INTERVAL_S`` with
the count since the last line (``HTTP_CONNECTIONS_REFUSED``, ``HTTP_HEADER_TIMEOUT``,
``HTTP_BODY_TIMEOUT``), and asyncio's ``socket.accept() out of system resource`` (logged once per failed
accept, up to ``backlog`` times per wake-up: 400,000 lines in 40 s at the open-file limit) once per
interval. At start the open-file soft limit is raised to the hard one.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import h11
import structlog
from uvicorn.middleware.proxy_headers import _TrustedHosts
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ConnectionGuard", "GuardedH11Protocol", "guarded_protocol", "quiet_accept_errors"]

log = structlog.get_logger(__name__)
_LOG_INTERVAL_S = 60.0


class _Throttle:
    """Whether to log now, per key: once per ``interval_s``, with how many were not logged before."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._next: dict[Any, float] = {}
        self._unlogged: Counter[Any] = Counter()

    def due(self, key: Any) -> int | None:
        """None: not now (counted); else the number of events this line stands for."""
        now = time.monotonic()
        self._unlogged[key] += 1
        if now < self._next.get(key, 0.0):
            return None
        if len(self._next) > 10_000:  # many clients: keep memory bounded, forget the old ones
            self._next.clear()
        self._next[key] = now + self.interval_s
        return self._unlogged.pop(key)


@dataclass
class ConnectionGuard:
    """The limits and the per-client counts shared by every connection of one server.

    Args:
        header_timeout_s: a request head's deadline (s).
        body_timeout_s: longest pause between two reads of a body (s).
        max_per_client: open connections per client address.
        trusted: addresses exempt from the cap (``FORWARDED_ALLOW_IPS``: ``*``, addresses, networks).
    """

    header_timeout_s: float
    body_timeout_s: float
    max_per_client: int
    trusted: str = ""
    open: Counter[str] = field(default_factory=Counter)
    throttle: _Throttle = field(default_factory=lambda: _Throttle(_LOG_INTERVAL_S))

    def __post_init__(self) -> None:
        self._trusted = _TrustedHosts(self.trusted) if self.trusted.strip() else None

    def admit(self, client: str) -> bool:
        """Count a new connection of ``client``; False (and logged, throttled) when it is over the cap."""
        if self._trusted is not None and client in self._trusted:
            return True
        if self.open[client] >= self.max_per_client:
            self.note("HTTP_CONNECTIONS_REFUSED", client, open=self.open[client])
            return False
        self.open[client] += 1
        return True

    def release(self, client: str) -> None:
        if self.open[client] > 0:
            self.open[client] -= 1
            if not self.open[client]:
                del self.open[client]

    def note(self, event: str, client: str, **fields: Any) -> None:
        count = self.throttle.due((event, client))
        if count is not None:
            log.warning(event, client=client, count=count, interval_s=_LOG_INTERVAL_S, **fields)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the header and body time-outs and the cap of :attr:`guard`
    (module docstring). Made per server by :func:`guarded_protocol`."""

    guard: ConnectionGuard

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._peer = self.client[0] if self.client else ""
        self._admitted = self.guard.admit(self._peer)
        self._timer: asyncio.TimerHandle | None = None
        self._last_read = self.loop.time()
        self._head_deadline: float | None = self._last_read + self.guard.header_timeout_s
        if not self._admitted:
            transport.abort()
            return
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._admitted:
            self.guard.release(self._peer)
            self._admitted = False
        if self._timer is not None:
            self._timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        now = self.loop.time()
        self._last_read = now
        if self.conn.their_state is h11.IDLE and self._head_deadline is None:
            self._head_deadline = now + self.guard.header_timeout_s  # the first byte of a new request
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._head_deadline = None
        self._watch()

    def _watch(self) -> None:
        """(Re)arm the one timer at the next moment a time-out could fall due."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        due = None
        if self.conn.their_state is h11.IDLE and self._head_deadline is not None:
            due = self._head_deadline
        elif self.conn.their_state is h11.SEND_BODY:
            if self.flow.read_paused:  # the app is not reading yet: not the client's pause
                self._last_read = now
            due = self._last_read + self.guard.body_timeout_s
        if due is not None:
            self._timer = self.loop.call_at(max(due, now), self._check)

    def _check(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        now = self.loop.time()
        state = self.conn.their_state
        if state is h11.IDLE and self._head_deadline is not None and now >= self._head_deadline:
            self.guard.note("HTTP_HEADER_TIMEOUT", self._peer, timeout_s=self.guard.header_timeout_s)
            self.transport.close()
        elif (
            state is h11.SEND_BODY
            and not self.flow.read_paused
            and now - self._last_read >= self.guard.body_timeout_s
        ):
            self.guard.note("HTTP_BODY_TIMEOUT", self._peer, timeout_s=self.guard.body_timeout_s)
            self.transport.close()
        else:
            self._watch()


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` class bound to ``guard``, for ``uvicorn.Config(http=...)``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})


class _AcceptErrorsOncePerInterval(logging.Filter):
    """Let asyncio's ``socket.accept() out of system resource`` through once per interval."""

    def __init__(self) -> None:
        super().__init__()
        self.throttle = _Throttle(_LOG_INTERVAL_S)

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("socket.accept() out of system resource"):
            return True
        count = self.throttle.due("accept")
        if count is None:
            return False
        record.msg = (
            f"{record.msg}\n({count} since the last such line; logged once per {_LOG_INTERVAL_S:.0f} s)"
        )
        record.exc_info = None
        return True


def quiet_accept_errors() -> None:
    """Throttle asyncio's accept-error line (module docstring) and raise the open-file soft limit to
    the hard one, so the per-client cap, not the limit, decides who is refused."""
    logger = logging.getLogger("asyncio")
    if not any(isinstance(f, _AcceptErrorsOncePerInterval) for f in logger.filters):
        logger.addFilter(_AcceptErrorsOncePerInterval())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            log.warning("NOFILE_LIMIT_NOT_RAISED", soft=soft, hard=hard)
