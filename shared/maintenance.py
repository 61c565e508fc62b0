"""Maintenance mode and queue pauses (DESIGN.md §5, §9; spec/000 "Maintenance mode sources").

One concept with three sources:

=========  =======================================  =============================================
source     switched on by                           switched off by
=========  =======================================  =============================================
``env``    ``MAINTENANCE_MODE=1`` in a service env   a restart without it; ``/resume`` cannot
``auto``   a provider billing/auth/config/outage/   ``/resume``; outage and budget pauses also end
           budget error (``reason`` says which)      by themselves at ``resume_at``
``admin``  ``/pause`` from an admin                  ``/resume``
=========  =======================================  =============================================

The ``auto``/``admin`` state is one ``settings`` row, so every replica of every service sees a pause at
once. While paused: kiosk endpoints answer 503 ``maintenance``, workers claim nothing (running jobs
finish), the bot answers guests with the maintenance text, queued jobs keep their deadlines, and the leads
group is unaffected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from shared import metrics
from shared.repositories import Repositories

KEY = "maintenance"
SOURCES = ("env", "auto", "admin")


@dataclass(frozen=True)
class Pause:
    """An active pause. ``resume_at`` (UTC) ends an ``auto`` pause by itself; ``None``: only ``/resume``."""

    source: str
    reason: str
    since: datetime
    resume_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "reason": self.reason,
            "since": self.since.isoformat(),
            "resume_at": self.resume_at.isoformat() if self.resume_at else None,
        }

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> Pause:
        resume_at = value.get("resume_at")
        return cls(
            source=value["source"],
            reason=value.get("reason", ""),
            since=datetime.fromisoformat(value["since"]),
            resume_at=datetime.fromisoformat(resume_at) if resume_at else None,
        )


async def current_pause(
    repos: Repositories, *, env_on: bool = False, now: datetime | None = None
) -> Pause | None:
    """The pause in force: ``env`` first, then the stored one unless its ``resume_at`` has passed."""
    if env_on:
        return Pause(source="env", reason="MAINTENANCE_MODE=1", since=datetime.fromtimestamp(0, UTC))
    value = await repos.settings.get(KEY)
    if not value:
        return None
    pause = Pause.from_json(value)
    if pause.resume_at is not None and pause.resume_at <= (now or datetime.now(UTC)):
        return None
    return pause


async def start_pause(
    repos: Repositories, *, source: str, reason: str, resume_at: datetime | None = None
) -> bool:
    """Switch a pause on (``auto`` or ``admin``). Returns ``True`` when this starts a new episode.

    An ``admin`` pause is never replaced by an ``auto`` one; an ``auto`` pause is extended to the later
    ``resume_at`` (``None`` = until ``/resume`` wins over any time).
    """
    if source not in ("auto", "admin"):
        raise ValueError(f"a stored pause has source auto or admin, not {source!r}")
    now = datetime.now(UTC)
    existing = await current_pause(repos, now=now)
    if existing is None:
        await repos.settings.put(KEY, Pause(source, reason, now, resume_at).to_json())
        return True
    if source == "admin":
        merged = Pause("admin", reason, existing.since, None)
    elif existing.source == "admin":
        return False
    elif existing.resume_at is None or (resume_at is not None and resume_at <= existing.resume_at):
        return False  # the pause in force already lasts at least as long
    else:
        merged = Pause("auto", reason, existing.since, resume_at)
    await repos.settings.put(KEY, merged.to_json())
    return False


async def end_pause(repos: Repositories) -> Pause | None:
    """``/resume``: clear an ``auto`` or ``admin`` pause; returns what was cleared (``None``: nothing)."""
    value = await repos.settings.get(KEY)
    if not value:
        return None
    await repos.settings.delete(KEY)
    return Pause.from_json(value)


async def end_pause_if(repos: Repositories, expected: Pause) -> Pause | None:
    """Clear the stored pause only if it is still ``expected`` (compare-and-delete for auto-resume)."""
    value = await repos.settings.get(KEY, for_update=True)
    if not value or Pause.from_json(value) != expected:
        return None
    await repos.settings.delete(KEY)
    return expected


def export_gauges(pause: Pause | None) -> None:
    """Set ``stk_pause_active{source}`` to 1 for the active source and 0 for the others."""
    for source in SOURCES:
        metrics.PAUSE_ACTIVE.labels(source=source).set(
            1 if pause is not None and pause.source == source else 0
        )
