"""The log of every Bot API call received, for tests that count calls (``GET /sim/calls``)."""

from __future__ import annotations

from collections import deque
from typing import Any

from pydantic import BaseModel


class CallRecord(BaseModel):
    """One call: ``method`` as Telegram names it (``sendMessage``), ``params`` without file bytes, and the
    outcome (``ok``, ``error_code``, ``description``); ``fault`` names an injected fault that hit it;
    ``at`` is Unix seconds, ``duration_ms`` wall time."""

    seq: int
    at: float
    method: str
    params: dict[str, Any]
    ok: bool
    error_code: int | None = None
    description: str | None = None
    fault: str | None = None
    duration_ms: float = 0.0


class CallLog:
    """The newest ``capacity`` calls, oldest first."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._records: deque[CallRecord] = deque(maxlen=capacity)
        self._seq = 0

    def next_seq(self) -> int:
        """A fresh sequence number for a call being handled."""
        self._seq += 1
        return self._seq

    def add(self, record: CallRecord) -> None:
        """Append a finished call."""
        self._records.append(record)

    def select(self, method: str | None = None, since: int = 0) -> list[CallRecord]:
        """Calls of ``method`` (case-insensitive; all when ``None``) with ``seq`` > ``since``."""
        wanted = method.lower() if method else None
        return [
            record
            for record in self._records
            if record.seq > since and (wanted is None or record.method.lower() == wanted)
        ]

    def clear(self) -> None:
        """Forget every call (sequence numbers keep growing)."""
        self._records.clear()
