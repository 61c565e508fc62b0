"""Injected faults: the next N calls of a Bot API method misbehave on purpose (``POST /sim/faults``).

Kinds (``seconds`` is used by the delays, ``error_code``/``description``/``retry_after`` by the errors):

- ``error``: answer with the error, apply nothing (e.g. 429 with ``retry_after``, 500, 502).
- ``error_after_apply``: do the call, then answer with the error anyway; Telegram does this to bots (a 429
  on ``addStickerToSet`` whose sticker was added, REFERENCE "reconcile against getStickerSet").
- ``delay``: wait ``seconds``, then handle the call normally.
- ``delay_after_apply``: do the call, then wait ``seconds`` before answering (the client may time out on a
  call that took effect).
- ``drop``: close the connection without answering or applying.
- ``drop_after_apply``: do the call, then close the connection without answering (a timed-out send that
  was delivered).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from simulators.telegram.errors import BotApiError, default_description, too_many_requests

FaultKind = Literal["error", "error_after_apply", "delay", "delay_after_apply", "drop", "drop_after_apply"]


class FaultSpec(BaseModel):
    """One queued fault: ``method`` (case-insensitive Bot API name, or ``*`` for any method) fails ``count``
    times in a row in the way ``kind`` says."""

    model_config = ConfigDict(extra="forbid")

    method: str = Field(min_length=1)
    kind: FaultKind = "error"
    count: int = Field(1, ge=1)
    error_code: int = Field(500, ge=400, le=599)
    description: str | None = None
    retry_after: int | None = Field(None, ge=1)
    seconds: float = Field(0.0, ge=0, le=600)

    def error(self) -> BotApiError:
        """The failure this fault answers with; a 429 always carries ``retry_after`` (default 1 s)."""
        if self.error_code == 429:
            failure = too_many_requests(self.retry_after or 1)
            if self.description:
                failure.description = self.description
            return failure
        return BotApiError(
            self.error_code,
            self.description or default_description(self.error_code),
            retry_after=self.retry_after,
        )


class FaultQueue:
    """Faults waiting for their method, consumed oldest first."""

    def __init__(self) -> None:
        self._pending: list[FaultSpec] = []

    def add(self, spec: FaultSpec) -> None:
        """Queue a fault (after any already queued for the same method)."""
        self._pending.append(spec.model_copy())

    def take(self, method: str) -> FaultSpec | None:
        """The fault for this call of ``method``, if any, counting it down."""
        wanted = method.lower()
        for spec in self._pending:
            if spec.method.lower() in (wanted, "*"):
                spec.count -= 1
                if spec.count <= 0:
                    self._pending.remove(spec)
                return spec.model_copy(update={"count": 1})
        return None

    def pending(self) -> list[FaultSpec]:
        """Faults not yet used up, with their remaining counts."""
        return [spec.model_copy() for spec in self._pending]

    def clear(self) -> None:
        """Drop every queued fault."""
        self._pending.clear()
