"""Events (issue 23): what a deployment serves, one event after another or several at once.

An event (table ``events``, migration 0014) has a name, a venue, an IANA time zone, a start and an end
(``None``: open), the kiosk stations that belong to it, its outfits (catalogue ids and its own uploaded
ones, ``event_outfits``; none listed: the whole catalogue), its branding, its set title and guest texts per
language where they differ from the catalogues, its languages and its budgets.

Which event a station serves at a moment (:func:`station_event`):

- the event that lists the station and runs then (``starts_at <= at < ends_at``, an open end counting as
  running); of several, the one that started last;
- else, if some event lists the station (it ran, or will run), none: the kiosk shows its closed screen;
- else the default event (id :data:`DEFAULT_EVENT`), which the migration made from the stack as it was: an
  operator who never creates an event runs everything in it, as before.

The venue's day is the event's local calendar day (:func:`day_start`): its daily budget resets at local
midnight, and its "today" counts from there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from functools import cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "DEFAULT_EVENT",
    "Event",
    "EventOutfit",
    "StationEvent",
    "day_start",
    "station_event",
    "zone",
]

#: The id of the event every deployment has (migration 0014): stations no event lists belong to it.
DEFAULT_EVENT = "default"


@cache
def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``Europe/Berlin``; from the system's zoneinfo or the pinned ``tzdata``).

    Raises:
        ValueError: no such zone.
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r} (an IANA name such as Europe/Berlin)") from exc


def day_start(now: datetime, time_zone: str) -> datetime:
    """The start (aware, UTC) of the local calendar day in ``time_zone`` that holds ``now`` (aware): the
    event's daily budget and its "today" count from it. On a day whose local midnight does not exist
    (a daylight-saving change at 00:00) it is the first moment of that day."""
    tz = zone(time_zone)
    local_date = now.astimezone(tz).date()
    start = datetime.combine(local_date, time.min, tzinfo=tz).astimezone(UTC)
    # A skipped midnight resolves to a time in the previous day's offset, which may fall before the day:
    # step forward to the day's first real instant.
    if start.astimezone(tz).date() != local_date:
        start = datetime.combine(local_date, time(1), tzinfo=tz).astimezone(UTC)
    return start


@dataclass(frozen=True, slots=True)
class Event:
    """One event (a row of ``events`` with its stations).

    Attributes:
        id: ``[a-z0-9][a-z0-9-]{0,39}``; :data:`DEFAULT_EVENT` for the default one.
        name: what operators and reports call it.
        venue: where it is (free text, may be empty).
        time_zone: IANA name; the event's day (budgets, "today", the digest) is a local day in it.
        starts_at, ends_at: when it runs (aware; ``None``: open at that end).
        stations: the kiosk stations that belong to it.
        outfits: the outfit ids it offers (catalogue and uploaded), in kiosk order; empty: the catalogue.
        branding: ``title``, ``accent_color``, ``logo_url`` where set; a missing key is the ``KIOSK_*``
            setting of ingest.
        set_title: language → the sticker set's title (Bot API 1–64 characters), where it differs.
        texts: language → bot text key → text, where it differs from the catalogue (same placeholders).
        languages: the languages its guests are served in (catalogue ids; the first is the kiosk's);
            empty: every catalogue language.
        daily_budget_usd: USD per local day (``None``: none; for the default event, ``DAILY_BUDGET_USD``).
        total_budget_usd: USD over the whole event (``None``: none).
    """

    id: str
    name: str
    venue: str = ""
    time_zone: str = "UTC"
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    stations: tuple[str, ...] = ()
    outfits: tuple[str, ...] = ()
    branding: Mapping[str, str] = field(default_factory=dict)
    set_title: Mapping[str, str] = field(default_factory=dict)
    texts: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    languages: tuple[str, ...] = ()
    daily_budget_usd: float | None = None
    total_budget_usd: float | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_EVENT

    def runs_at(self, at: datetime) -> bool:
        """``starts_at <= at < ends_at``, an open end counting as running."""
        return (self.starts_at is None or self.starts_at <= at) and (
            self.ends_at is None or at < self.ends_at
        )

    def day_start(self, now: datetime) -> datetime:
        """The start (UTC) of this event's local day holding ``now`` (:func:`day_start`)."""
        return day_start(now, self.time_zone)


@dataclass(frozen=True, slots=True)
class EventOutfit:
    """An outfit an operator uploaded for one event (``event_outfits``).

    Attributes:
        id: ``[a-z][a-z0-9_]{1,31}``, not a catalogue id (outfit ids are one namespace).
        event_id: the event that owns it.
        title: the kiosk's title (1–40 characters).
        prompt: the outfit's description for the AI image models (at least 20 characters).
        based_on: the catalogue outfit whose body template (composite mode) and offline drawing it uses.
        has_thumbnail: a kiosk thumbnail PNG is stored.
    """

    id: str
    event_id: str
    title: str
    prompt: str
    based_on: str
    has_thumbnail: bool = False


@dataclass(frozen=True, slots=True)
class StationEvent:
    """What a station serves at a moment: ``event`` (``None``: closed) and, when closed, the ``next``
    event that lists the station (``None``: none planned)."""

    event: Event | None
    next: Event | None = None


def station_event(
    station: str, at: datetime, listing: Sequence[Event], default: Event | None
) -> StationEvent:
    """The rule of the module docstring: ``listing`` holds the events that list ``station``, ``default``
    the default event (``None``: deleted, so unlisted stations are closed too)."""
    running = [e for e in listing if e.runs_at(at)]
    if running:
        return StationEvent(max(running, key=lambda e: e.starts_at or datetime.min.replace(tzinfo=UTC)))
    if listing:
        later = [e for e in listing if e.starts_at is not None and e.starts_at > at]
        return StationEvent(None, min(later, key=lambda e: e.starts_at or at) if later else None)
    return StationEvent(default)
