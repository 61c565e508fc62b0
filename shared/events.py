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

The guest's language at an event (:meth:`Event.language_for`) is the catalogue nearest to the guest's
Telegram ``language_code`` (:func:`shared.texts.catalogue_of`) when the event serves it, else the event's
first language; an event that serves every language answers as a deployment without events does. Every
text about a guest's session (:func:`guest_text`) and the sticker set's title
(:meth:`Event.sticker_set_title`) are in that language, in the event's own words where it has them.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from shared.branding import check_logo_url
from shared.texts import (
    LANGUAGES,
    PACK_TITLE,
    SOURCE_LANGUAGE,
    TEXTS,
    catalogue_of,
    language_of,
    placeholders,
    text,
)

if TYPE_CHECKING:
    from shared.outfits import Outfit

__all__ = [
    "DEFAULT_EVENT",
    "EVENT_ID",
    "Event",
    "EventBranding",
    "EventOutfit",
    "EventSpec",
    "StationEvent",
    "day_start",
    "guest_set_title",
    "guest_text",
    "overlaps",
    "station_event",
    "zone",
]

#: The id of the event every deployment has (migration 0014): stations no event lists belong to it.
DEFAULT_EVENT = "default"


@cache
def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name`` (``Europe/Berlin``; from the system's zoneinfo or the pinned ``tzdata``).

    Raises:
        ValueError: no such zone (also a folder of the zoneinfo tree such as ``Asia``, or a name too long
            for a file name).
    """
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
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
        languages: the languages its guests are served in (catalogue ids; the first is the kiosk's, and
            a guest's whose language it does not serve, :meth:`language_for`); empty: every catalogue
            language.
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

    def ran_during(self, start: datetime, end: datetime) -> bool:
        """Whether its run (``starts_at`` to ``ends_at``, ``None`` open) meets ``[start, end)`` (aware)."""
        return (self.starts_at is None or self.starts_at < end) and (
            self.ends_at is None or self.ends_at > start
        )

    def ran_today(self, now: datetime) -> bool:
        """Whether its local day holding ``now`` (:meth:`day_start`) met its run so far: it runs at ``now``,
        or it ended (or began and ended) earlier that local day. The overview's and ``/status``'s "today"
        list these events, so one that ended at 23:00 local still shows its day until local midnight."""
        return self.runs_at(now) or self.ran_during(self.day_start(now), now)

    def day_start(self, now: datetime) -> datetime:
        """The start (UTC) of this event's local day holding ``now`` (:func:`day_start`)."""
        return day_start(now, self.time_zone)

    def daily_budget(self, daily_budget_usd: float | None) -> float | None:
        """Its budget per local day (USD; ``None``: none): :attr:`daily_budget_usd`, or for the default
        event without one ``daily_budget_usd``, the deployment's ``DAILY_BUDGET_USD`` (README "Events")."""
        if self.daily_budget_usd is None and self.is_default:
            return daily_budget_usd
        return self.daily_budget_usd

    def columns(self) -> dict[str, Any]:
        """The operator's settings as the ``events`` row's columns (plain lists and dicts; ``starts_at``
        and ``ends_at`` stay ``datetime``): what :meth:`shared.repositories.events.EventRepository.save`
        writes and the admin API shows (``stations`` live in ``event_stations``, so they are not here)."""
        return {
            "name": self.name,
            "venue": self.venue,
            "time_zone": self.time_zone,
            "starts_at": self.starts_at,
            "ends_at": self.ends_at,
            "outfits": list(self.outfits),
            "branding": dict(self.branding),
            "set_title": dict(self.set_title),
            "texts": {lang: dict(t) for lang, t in self.texts.items()},
            "languages": list(self.languages),
            "daily_budget_usd": self.daily_budget_usd,
            "total_budget_usd": self.total_budget_usd,
        }

    def language_for(self, language_code: str | None) -> str:
        """The guest's language at this event, a catalogue language (``de``, ``pt_BR``), for their
        Telegram ``language_code`` (an IETF tag such as ``de-AT``; ``None`` when the client sends none):

        - the event serves every language (:attr:`languages` empty): the nearest catalogue, English when
          none fits (:func:`shared.texts.language_of`, as without events);
        - else the nearest catalogue (:func:`shared.texts.catalogue_of`: ``de-AT`` → ``de``, ``uk`` →
          ``ru``) when the event serves it;
        - else (a language it does not serve, one no catalogue fits such as ``fr``, or none) the event's
          first language, the kiosk's.

        The rule of issue 23 item 1 ("chosen per event and by the guest's Telegram language"); never
        raises."""
        if not self.languages:
            return language_of(language_code)
        nearest = catalogue_of(language_code)
        return nearest if nearest in self.languages else self.languages[0]

    def text(self, key: str, language_code: str | None, **values: str) -> str:
        """The bot's text ``key`` for a guest with Telegram ``language_code`` at this event, in
        :meth:`language_for`'s language: the event's own text (:attr:`texts`) where it sets one, else the
        catalogue's (:func:`shared.texts.text`), formatted with ``values``. An own text whose placeholders
        do not fit (:func:`own_text_problem`, which :class:`EventSpec` checks when it is saved) is not
        sent: the catalogue's is.

        Raises:
            KeyError: ``key`` is not a catalogue text, or a placeholder of the catalogue's lacks its value.
        """
        language = self.language_for(language_code)
        own = self.texts.get(language, {}).get(key)
        if own and own_text_problem(key, own) is None:
            try:
                return own.format(**values)
            except (KeyError, IndexError, ValueError):
                pass
        return text(key, language, **values)

    def sticker_set_title(self, language_code: str | None) -> str:
        """The sticker set's title (Bot API 1-64 characters) for a guest with Telegram ``language_code``:
        the event's :attr:`set_title` of :meth:`language_for`'s language where it has one, else the
        catalogue's (:data:`shared.texts.PACK_TITLE`)."""
        language = self.language_for(language_code)
        return self.set_title.get(language) or PACK_TITLE[language]


def guest_text(event: Event | None, key: str, language_code: str | None, **values: str) -> str:
    """The bot's text ``key`` about a guest's session: :meth:`Event.text` of the session's ``event``; with
    ``None`` (a text about no session: hello, help, erasure, maintenance, or a session whose event is
    gone) the catalogue's text in the nearest catalogue of ``language_code`` (:func:`shared.texts.text`).

    Raises:
        KeyError: ``key`` is not a catalogue text, or a placeholder lacks its value.
    """
    return text(key, language_code, **values) if event is None else event.text(key, language_code, **values)


def guest_set_title(event: Event | None, language_code: str | None) -> str:
    """The title of a guest's sticker set: :meth:`Event.sticker_set_title` of their session's ``event``;
    with ``None`` (the event is gone) the catalogue's in the nearest catalogue of ``language_code``
    (:data:`shared.texts.PACK_TITLE`)."""
    if event is None:
        return PACK_TITLE[language_of(language_code)]
    return event.sticker_set_title(language_code)


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

    def drawn_on(self, catalog: Mapping[str, Outfit]) -> Outfit | None:
        """Its :attr:`based_on` outfit of ``catalog`` with its own title and prompt, keeping the base's id
        (the body template, the offline drawing and the ``local`` provider look outfits up by catalogue
        id); ``None`` when the base left the catalogue (nothing could draw it)."""
        base = catalog.get(self.based_on)
        return base.model_copy(update={"title": self.title, "prompt": self.prompt}) if base else None


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


_STATION = r"^[A-Za-z0-9_.-]+$"
_HEX_COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")


#: Bidirectional embedding, override and isolate controls: they make a name read otherwise than it is
#: stored (Unicode UAX #9; the "Trojan Source" spoof, CVE-2021-42574).
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _one_line(value: str, what: str) -> str:
    if any(c in value for c in "\u2028\u2029") or any(
        unicodedata.category(c) == "Cc" or c in _BIDI_CONTROLS for c in value
    ):
        raise ValueError(f"{what} must be one line without control characters")
    return value


#: Telegram's longest text message (characters after entity parsing: core.telegram.org/bots/api#sendmessage,
#: python-telegram-bot's ``telegram.constants.MessageLimit.MAX_TEXT_LENGTH``).
MAX_MESSAGE_CHARS = 4096
#: The most characters a placeholder's value takes (the longest is ``{link}``: ``https://t.me/addstickers/``
#: and a set name of at most 64, Bot API createNewStickerSet), with room to spare.
_MAX_VALUE_CHARS = 200
#: Control characters a guest text may not hold (tab and newline it may): Postgres refuses ``\x00`` in
#: JSONB, and the others are invisible in a chat.
_TEXT_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def own_text_problem(key: str, own: str) -> str | None:
    """What is wrong with an event's own text for the bot text ``key`` (``None``: nothing):

    - not 1-4096 characters, or over Telegram's 4096 once each placeholder holds a value of up to 200
      characters (:data:`MAX_MESSAGE_CHARS`);
    - a control character but tab and newline, or a bidirectional control (:func:`_one_line`'s set);
    - placeholders other than the English text's (:func:`shared.texts.placeholders`), or one with a
      conversion, format spec, attribute or index (``{link!r}``, ``{link:.0}``, ``{link:>2000000000}``,
      ``{link.__class__}``), which would cut, pad or inspect the value instead of showing it.

    Raises:
        KeyError: ``key`` is not a bot text key (:data:`shared.texts.TEXTS`).
    """
    english = TEXTS[key][SOURCE_LANGUAGE]
    try:
        fields = list(string.Formatter().parse(own))
        wanted, found = placeholders(english), placeholders(own)
    except ValueError as exc:
        return str(exc)
    if _TEXT_CONTROLS.search(own) or any(c in _BIDI_CONTROLS for c in own):
        return "no control characters but tab and newline"
    if any(spec or conversion for _, name, spec, conversion in fields if name is not None):
        return "placeholders are written {name}, without a conversion or format spec"
    if found != wanted:
        return f"placeholders must be {wanted} as in English"
    named = [name for _, name, _, _ in fields if name is not None]
    longest = len(own) + sum(_MAX_VALUE_CHARS - len(name) - 2 for name in named)
    if not own or longest > MAX_MESSAGE_CHARS:
        return (
            f"1-{MAX_MESSAGE_CHARS} characters, counting each placeholder as {_MAX_VALUE_CHARS} "
            "(Telegram's message limit once the values are in)"
        )
    return None


#: The earliest and latest year an event may start or end in: a wall-clock year in these bounds cannot
#: overflow a conversion to UTC, and stays clear of Postgres' -infinity/infinity (asyncpg reads
#: ``datetime.min``/``max`` back naive).
_YEARS = range(2000, 2101)


class EventBranding(BaseModel):
    """An event's kiosk branding; an unset field falls back to ingest's ``KIOSK_*`` setting."""

    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(None, max_length=80)
    accent_color: str | None = None
    logo_url: str | None = None

    @field_validator("title")
    @classmethod
    def _title(cls, v: str | None) -> str | None:
        return None if v is None else _one_line(v, "branding.title")

    @field_validator("accent_color")
    @classmethod
    def _accent(cls, v: str | None) -> str | None:
        if v is not None and not _HEX_COLOR.match(v):
            raise ValueError("branding.accent_color must be #rgb or #rrggbb")
        return v

    @field_validator("logo_url")
    @classmethod
    def _logo(cls, v: str | None) -> str | None:
        return None if v is None else check_logo_url(v)


class EventSpec(BaseModel):
    """The body of ``PUT /admin/events/{id}``: an event as an operator writes it (see :class:`Event` for
    the meaning of each field). Validation is complete here, so a saved event never breaks a CHECK of
    migration 0014. Which outfit ids are allowed depends on the event's uploaded outfits:
    :meth:`check_outfits`.

    Raises (``model_validate``):
        pydantic.ValidationError: a field out of its range (ids, lengths, control characters, an unknown
            time zone or language, ``starts_at >= ends_at``, naive datetimes or a year outside 2000-2100, a
            text key not in the catalogue or an own text :func:`own_text_problem` refuses, a budget not in
            whole cents from 0.01 to under 1e10 USD).
    """

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=80)
    venue: str = Field("", max_length=120)
    time_zone: str = "UTC"
    starts_at: AwareDatetime | None = None
    ends_at: AwareDatetime | None = None
    stations: list[Annotated[str, Field(min_length=1, max_length=64, pattern=_STATION)]] = Field(
        default_factory=list, max_length=200
    )
    outfits: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=200
    )
    branding: EventBranding = Field(default_factory=EventBranding)
    # createNewStickerSet's title: 1-64 characters (Bot API; python-telegram-bot's
    # telegram.constants.StickerLimit.MAX_NAME_AND_TITLE; simulators/telegram/validation.py refuses more)
    set_title: dict[str, Annotated[str, Field(min_length=1, max_length=64)]] = Field(default_factory=dict)
    texts: dict[str, dict[str, str]] = Field(default_factory=dict)
    languages: list[str] = Field(default_factory=list)
    # USD in whole cents, as migration 0014's NUMERIC(12, 2) holds it (a CHECK refuses 0)
    daily_budget_usd: Annotated[float, Field(strict=True, ge=0.01, lt=1e10)] | None = None
    total_budget_usd: Annotated[float, Field(strict=True, ge=0.01, lt=1e10)] | None = None

    @field_validator("name", "venue")
    @classmethod
    def _single_line(cls, v: str) -> str:
        return _one_line(v, "name and venue")

    @field_validator("daily_budget_usd", "total_budget_usd")
    @classmethod
    def _cents(cls, v: float | None) -> float | None:
        if v is not None and round(v, 2) != v:
            raise ValueError("USD in whole cents (at most two decimals)")
        return v

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, v: str) -> str:
        zone(v)
        return v

    @field_validator("set_title")
    @classmethod
    def _set_title(cls, v: dict[str, str]) -> dict[str, str]:
        for language, title in v.items():
            _language(language)
            _one_line(title, "set_title")
        return v

    @field_validator("languages")
    @classmethod
    def _languages(cls, v: list[str]) -> list[str]:
        for language in v:
            _language(language)
        if len(set(v)) != len(v):
            raise ValueError("languages must not repeat")
        return v

    @field_validator("texts")
    @classmethod
    def _texts(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for language, table in v.items():
            _language(language)
            for key, own in table.items():
                if key not in TEXTS:
                    raise ValueError(f"texts.{language}: {key!r} is not a bot text key")
                if problem := own_text_problem(key, own):
                    raise ValueError(f"texts.{language}.{key}: {problem}")
        return v

    @field_validator("starts_at", "ends_at")
    @classmethod
    def _year(cls, v: datetime | None) -> datetime | None:
        if v is not None and v.year not in _YEARS:
            raise ValueError(f"a year from {_YEARS.start} to {_YEARS.stop - 1}")
        return v

    @field_validator("stations")
    @classmethod
    def _stations(cls, v: list[str]) -> list[str]:
        # a kiosk's ?station= is matched without case (EventRepository.for_station), so stored lowercase
        return _no_repeats([station.lower() for station in v])

    @field_validator("outfits")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        return _no_repeats(v)

    @model_validator(mode="after")
    def _times(self) -> EventSpec:
        if self.starts_at is not None and self.ends_at is not None and self.starts_at >= self.ends_at:
            raise ValueError("starts_at must be before ends_at")
        return self

    def unknown_outfits(self, uploaded: Iterable[str]) -> list[str]:
        """The ids of :attr:`outfits` that are neither catalogue outfits nor in ``uploaded`` (the
        event's own uploaded ids); empty when all are known."""
        from shared.outfits import load_catalog

        known = set(load_catalog()) | set(uploaded)
        return [o for o in self.outfits if o not in known]

    def to_event(self, event_id: str) -> Event:
        """The :class:`Event` with id ``event_id`` (times in UTC)."""
        branding = {k: v for k, v in self.branding.model_dump().items() if v is not None}
        return Event(
            id=event_id,
            name=self.name,
            venue=self.venue,
            time_zone=self.time_zone,
            starts_at=None if self.starts_at is None else self.starts_at.astimezone(UTC),
            ends_at=None if self.ends_at is None else self.ends_at.astimezone(UTC),
            stations=tuple(self.stations),
            outfits=tuple(self.outfits),
            branding=branding,
            set_title=dict(self.set_title),
            texts={lang: dict(t) for lang, t in self.texts.items()},
            languages=tuple(self.languages),
            daily_budget_usd=self.daily_budget_usd,
            total_budget_usd=self.total_budget_usd,
        )


#: An event id (``events.id`` CHECK of migration 0014).
EVENT_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def _no_repeats(ids: list[str]) -> list[str]:
    if len(set(ids)) != len(ids):
        raise ValueError("ids must not repeat")
    return ids


def _language(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f"{language!r} is not a catalogue language")


def overlaps(a: Event, b: Event) -> bool:
    """Whether the two events' times overlap (an open end reaching forever)."""
    a_start = a.starts_at or datetime.min.replace(tzinfo=UTC)
    b_start = b.starts_at or datetime.min.replace(tzinfo=UTC)
    a_end = a.ends_at or datetime.max.replace(tzinfo=UTC)
    b_end = b.ends_at or datetime.max.replace(tzinfo=UTC)
    return a_start < b_end and b_start < a_end
