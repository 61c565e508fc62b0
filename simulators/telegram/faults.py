"""Injected faults: the next N calls of a Bot API method misbehave on purpose (``POST /sim/faults``).

Kinds (``seconds`` is used by the delays, ``error_code``/``description``/``retry_after``/
``migrate_to_chat_id`` by the errors, which answer in Telegram's wire shape ``{"ok": false, "error_code",
"description", "parameters": {"retry_after" | "migrate_to_chat_id"}}``):

- ``error``: answer with the error, apply nothing (e.g. 429 with ``retry_after``, 500, 502).
- ``error_after_apply``: do the call, then answer with the error anyway; Telegram does this to bots (a 429
  on ``addStickerToSet`` whose sticker was added, REFERENCE "reconcile against getStickerSet").
- ``delay``: wait ``seconds``, then handle the call normally.
- ``delay_after_apply``: do the call, then wait ``seconds`` before answering (the client may time out on a
  call that took effect).
- ``drop``: close the connection without answering or applying.
- ``drop_after_apply``: do the call, then close the connection without answering (a timed-out send that
  was delivered).
- ``incomplete`` (``getStickerSet`` only): answer the set with only its first ``visible_stickers``
  stickers (default: all but the last), as a set read while Telegram is still adding stickers to it does;
  the set itself is unchanged, so a later read without the fault is complete.

``min_stickers`` aims it at calls sending at least that many stickers (a ``createNewStickerSet`` too large
for Telegram, which then answers 413 every time; a smaller request passes). ``chat_id`` aims a fault at
the calls for one chat only (their ``chat_id``, or the ``user_id`` of the sticker calls). ``text_contains``
aims it at the calls whose ``text`` contains that string, e.g. ``t.me/addstickers/`` for only the link
message of a guest (issue 19: its answer lost before or after Telegram applied it), not the other texts
to the same chat. ``hold`` makes a
429 a *flood hold*, as Telegram does: once answered, every later call for that chat (with ``chat_id``) or
of that method (without) is refused with 429 and the seconds still to wait, until ``retry_after`` seconds
have passed (:class:`FloodHolds`; ``POST /sim/holds/lift`` lets the time pass).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simulators.telegram.errors import GROUP_UPGRADED, BotApiError, default_description, too_many_requests

FaultKind = Literal[
    "error", "error_after_apply", "delay", "delay_after_apply", "drop", "drop_after_apply", "incomplete"
]
#: The only method an ``incomplete`` fault applies to.
INCOMPLETE_METHOD = "getstickerset"


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
    migrate_to_chat_id: int | None = Field(None, lt=0)
    seconds: float = Field(0.0, ge=0, le=600)
    chat_id: int | None = None
    hold: bool = False
    min_stickers: int | None = Field(None, ge=1)
    visible_stickers: int | None = Field(None, ge=0)
    text_contains: str | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _hold_is_a_429(self) -> FaultSpec:
        if self.migrate_to_chat_id is not None and self.error_code != 400:
            raise ValueError("migrate_to_chat_id comes with a 400 (Client.cpp check_chat_access)")
        if self.hold and (self.error_code != 429 or self.kind not in ("error", "error_after_apply")):
            raise ValueError("a flood hold is an error or error_after_apply fault with error_code 429")
        if self.kind == "incomplete" and self.method.lower() != INCOMPLETE_METHOD:
            raise ValueError("an incomplete fault is for getStickerSet only")
        return self

    def visible(self, stickers: list[Any]) -> list[Any]:
        """What an ``incomplete`` answer shows of a set's ``stickers``: the first ``visible_stickers`` of
        them (all but the last when not given; never more than there are)."""
        keep = len(stickers) - 1 if self.visible_stickers is None else self.visible_stickers
        return stickers[: max(0, keep)]

    def matches(self, method: str, chat_id: int | None, stickers: int = 0, text: str = "") -> bool:
        """Whether this fault is for a call of ``method`` (lower case) for ``chat_id`` with ``stickers``
        and ``text``."""
        return (
            self.method.lower() in (method, "*")
            and self.chat_id in (None, chat_id)
            and stickers >= (self.min_stickers or 0)
            and (self.text_contains is None or self.text_contains in text)
        )

    def error(self) -> BotApiError:
        """The failure this fault answers with; a 429 always carries ``retry_after`` (default 1 s), a 400 with
        ``migrate_to_chat_id`` carries it in ``parameters`` (description: :data:`GROUP_UPGRADED` unless
        given)."""
        if self.migrate_to_chat_id is not None:
            return BotApiError(
                400, self.description or GROUP_UPGRADED, migrate_to_chat_id=self.migrate_to_chat_id
            )
        if self.error_code == 429:
            failure = too_many_requests(self.retry_after or 1)
            if self.description:
                failure.description = self.description
            return failure
        return BotApiError(
            self.error_code,
            self.description or default_description(self.error_code),
            retry_after=self.retry_after,
            migrate_to_chat_id=self.migrate_to_chat_id,
        )


class FaultQueue:
    """Faults waiting for their method, consumed oldest first."""

    def __init__(self) -> None:
        self._pending: list[FaultSpec] = []

    def add(self, spec: FaultSpec) -> None:
        """Queue a fault (after any already queued for the same method)."""
        self._pending.append(spec.model_copy())

    def take(
        self, method: str, chat_id: int | None = None, stickers: int = 0, text: str = ""
    ) -> FaultSpec | None:
        """The fault for this call of ``method`` for ``chat_id`` sending ``stickers`` with ``text``, if
        any, counting it down."""
        wanted = method.lower()
        for spec in self._pending:
            if spec.matches(wanted, chat_id, stickers, text):
                spec.count -= 1
                if spec.count <= 0:
                    self._pending.remove(spec)
                return spec.model_copy(update={"count": 1})
        return None

    def pending(self) -> list[FaultSpec]:
        """Faults not yet used up, with their remaining counts."""
        return [spec.model_copy() for spec in self._pending]

    def clear(self, chat_id: int | None = None) -> list[FaultSpec]:
        """Drop the queued faults aimed at ``chat_id`` (every queued fault when ``None``); the dropped
        ones, with their remaining counts."""
        dropped = [s for s in self._pending if chat_id is None or s.chat_id == chat_id]
        self._pending = [s for s in self._pending if s not in dropped]
        return dropped


class FloodHolds:
    """Flood waits in force: a chat or a method refused with 429 until its ``retry_after`` has passed.

    ``clock`` is monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until: dict[tuple[str, str], float] = {}

    def start(self, spec: FaultSpec, method: str) -> None:
        """Hold the chat of ``spec`` (or ``method``) for its ``retry_after`` seconds from now."""
        key = ("chat", str(spec.chat_id)) if spec.chat_id is not None else ("method", method.lower())
        until = self._clock() + (spec.retry_after or 1)
        self._until[key] = max(until, self._until.get(key, 0.0))

    def refusal(self, method: str, chat_id: int | None) -> BotApiError | None:
        """The 429 for a call under a hold (``retry_after``: whole seconds left, >= 1), else ``None``."""
        now = self._clock()
        keys = [("method", method.lower())] + ([("chat", str(chat_id))] if chat_id is not None else [])
        left = max((self._until.get(k, 0.0) - now for k in keys), default=0.0)
        for key in [k for k, until in self._until.items() if until <= now]:
            del self._until[key]
        return too_many_requests(math.ceil(left)) if left > 0 else None

    def active(self) -> list[dict[str, Any]]:
        """Holds in force: ``{"chat_id"|"method", "seconds_left"}``."""
        now = self._clock()
        return [
            {
                ("chat_id" if kind == "chat" else "method"): int(name) if kind == "chat" else name,
                "seconds_left": round(until - now, 1),
            }
            for (kind, name), until in self._until.items()
            if until > now
        ]

    def lift(self) -> int:
        """Let the time pass: every hold ends now; returns how many were in force."""
        lifted = len(self.active())
        self._until.clear()
        return lifted
