"""Events (shared.events, migration 0014): the station rule, the event's local day, the repository on real
Postgres with the real migrations (the default event a migrated database starts with)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from shared.events import (
    DEFAULT_EVENT,
    Event,
    EventOutfit,
    day_start,
    guest_set_title,
    guest_text,
    station_event,
    zone,
)
from shared.repositories import Database
from shared.texts import LANGUAGES, PACK_TITLE, SOURCE_LANGUAGE, TEXTS, language_of, placeholders, text

T0 = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)


def test_day_start_is_local_midnight_in_utc() -> None:
    # 18:00 UTC on 5 Dec is 10:00 in Los Angeles (UTC-8) and 03:00 on 6 Dec in Tokyo (UTC+9)
    assert day_start(T0, "America/Los_Angeles") == datetime(2026, 12, 5, 8, 0, tzinfo=UTC)
    assert day_start(T0, "Asia/Tokyo") == datetime(2026, 12, 5, 15, 0, tzinfo=UTC)
    assert day_start(T0, "UTC") == datetime(2026, 12, 5, tzinfo=UTC)


def test_day_start_follows_daylight_saving() -> None:
    # Berlin: UTC+2 in summer, UTC+1 in winter; the day of the change (25 Oct 2026) began at UTC+2
    assert day_start(datetime(2026, 7, 1, 12, tzinfo=UTC), "Europe/Berlin") == datetime(
        2026, 6, 30, 22, tzinfo=UTC
    )
    assert day_start(datetime(2026, 10, 25, 12, tzinfo=UTC), "Europe/Berlin") == datetime(
        2026, 10, 24, 22, tzinfo=UTC
    )
    # Havana skips 00:00-01:00 on 8 Mar 2026: that day begins at 01:00 local (05:00 UTC)
    assert day_start(datetime(2026, 3, 8, 12, tzinfo=UTC), "America/Havana") == datetime(
        2026, 3, 8, 5, tzinfo=UTC
    )


def test_an_unknown_zone_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        zone("Mars/Olympus_Mons")
    with pytest.raises(ValueError):
        zone("../etc/passwd")


def _event(eid: str, start: datetime | None, end: datetime | None) -> Event:
    return Event(id=eid, name=eid, starts_at=start, ends_at=end, stations=("s1",))


def test_station_rule() -> None:
    default = Event(id=DEFAULT_EVENT, name="Sticker Booth")
    past = _event("past", T0 - timedelta(days=2), T0 - timedelta(days=1))
    now = _event("now", T0 - timedelta(hours=1), T0 + timedelta(hours=3))
    later = _event("later", T0 + timedelta(days=1), T0 + timedelta(days=2))
    # a running event that lists the station serves it
    assert station_event("s1", T0, [past, now, later], default).event == now
    # the end is exclusive, the start inclusive
    assert station_event("s1", now.ends_at or T0, [now], default).event is None
    assert station_event("s1", now.starts_at or T0, [now], default).event == now
    # a listed station between its events is closed, and says what comes next
    closed = station_event("s1", T0, [past, later], default)
    assert closed.event is None and closed.next == later
    assert station_event("s1", T0, [past], default).next is None
    # a station no event lists is the default event's; without a default event it is closed
    assert station_event("s1", T0, [], default).event == default
    assert station_event("s1", T0, [], None).event is None
    # of two running events (an open one and a later one), the one that started last
    open_ended = _event("open", None, None)
    assert station_event("s1", T0, [open_ended, now], default).event == now


@pytest.mark.integration
async def test_sessions_belong_to_the_default_event_unless_a_station_is_listed(db: Database) -> None:
    """(The migration's default event itself: tests/shared/test_migration_0014.py.)"""
    async with db.transaction() as repos:
        default = await repos.events.get(DEFAULT_EVENT)
        session = await repos.sessions.create(station="anywhere", token="tok-default")
        served = await repos.events.for_station("anywhere", T0)
    assert default is not None and default.time_zone == "UTC" and default.runs_at(T0)
    assert default.outfits == () and default.branding == {} and default.daily_budget_usd is None
    assert served.event == default
    async with db.engine.connect() as conn:
        stored = (
            await conn.execute(sa.text("SELECT event_id FROM sessions WHERE id = :id"), {"id": session.id})
        ).scalar()
    assert stored == DEFAULT_EVENT


@pytest.mark.integration
async def test_events_round_trip_and_stations_pick_their_event(db: Database) -> None:
    gala = Event(
        id="gala-la",
        name="Gala",
        venue="Hall A",
        time_zone="America/Los_Angeles",
        starts_at=T0 - timedelta(hours=2),
        ends_at=T0 + timedelta(hours=4),
        stations=("la-2", "la-1"),
        outfits=("pirate", "gala_robe"),
        branding={"title": "Gala", "accent_color": "#112233"},
        set_title={"en": "Gala stickers"},
        texts={"de": {"linked": "Verbunden!"}},
        languages=("en", "de"),
        daily_budget_usd=12.5,
        total_budget_usd=40.0,
    )
    async with db.transaction() as repos:
        saved = await repos.events.save(gala)
        await repos.events.save_outfit(
            EventOutfit(
                id="gala_robe",
                event_id="gala-la",
                title="Gala robe",
                prompt="a long velvet gala robe, gold trim",
                based_on="wizard",
            ),
            thumbnail=b"\x89PNG",
        )
    assert saved.stations == ("la-1", "la-2")
    assert (saved.outfits, saved.languages, saved.daily_budget_usd) == (
        ("pirate", "gala_robe"),
        ("en", "de"),
        12.5,
    )
    assert saved.texts == {"de": {"linked": "Verbunden!"}} and saved.set_title == {"en": "Gala stickers"}
    async with db.transaction() as repos:
        assert (await repos.events.for_station("la-1", T0)).event == saved
        assert (await repos.events.for_station("LA-1", T0)).event == saved  # a tablet's own spelling
        assert (await repos.events.for_station("la-1", T0 + timedelta(hours=5))).event is None
        assert (await repos.events.for_station("elsewhere", T0)).event.id == DEFAULT_EVENT  # type: ignore[union-attr]
        robe = await repos.events.outfit("gala_robe")
        assert robe is not None and robe.has_thumbnail and robe.based_on == "wizard"
        assert await repos.events.outfit_thumbnail("gala_robe") == b"\x89PNG"
        # saving again replaces the station list and keeps the uploaded outfits
        again = await repos.events.save(
            Event(id="gala-la", name="Gala", time_zone="America/Los_Angeles", stations=("la-3",))
        )
        assert again.stations == ("la-3",)
        assert [o.id for o in await repos.events.outfits("gala-la")] == ["gala_robe"]
        assert [e.id for e in await repos.events.all()] == [DEFAULT_EVENT, "gala-la"]
        assert await repos.events.delete("gala-la")
        assert await repos.events.outfit("gala_robe") is None
        assert not await repos.events.delete("gala-la")


def test_an_events_today_is_its_local_day_so_far_met_by_its_run() -> None:
    """At 20:00 UTC on 1 December Los Angeles' day began at 08:00 UTC, Tokyo's (2 December) at 15:00."""
    now = datetime(2026, 12, 1, 20, tzinfo=UTC)
    la, tokyo = "America/Los_Angeles", "Asia/Tokyo"
    assert Event(id="a", name="A", time_zone=la).ran_today(now)  # open at both ends
    assert Event(id="a", name="A", time_zone=la, ends_at=now - timedelta(hours=11)).ran_today(now)  # 09:00
    assert not Event(id="a", name="A", time_zone=la, ends_at=now - timedelta(hours=12)).ran_today(
        now
    )  # 08:00
    assert not Event(id="a", name="A", time_zone=tokyo, ends_at=now - timedelta(hours=6)).ran_today(now)
    assert Event(id="a", name="A", time_zone=tokyo, starts_at=now).ran_today(now)  # starts this moment
    assert not Event(id="a", name="A", time_zone=tokyo, starts_at=now + timedelta(minutes=1)).ran_today(now)
    yesterday = (day_start(now - timedelta(days=1), la), day_start(now, la))
    assert Event(id="a", name="A", ends_at=yesterday[1] + timedelta(hours=1)).ran_during(*yesterday)
    assert not Event(id="a", name="A", ends_at=yesterday[0]).ran_during(*yesterday)  # touching: apart
    assert not Event(id="a", name="A", starts_at=yesterday[1]).ran_during(*yesterday)


def test_a_served_language_is_the_guests_and_any_other_is_the_events_first() -> None:
    gala = Event(id="gala", name="Gala", languages=("de", "en"))
    assert gala.language_for("en") == "en"
    assert gala.language_for("de") == "de"
    assert gala.language_for("de-AT") == "de"  # a regional tag: its language's catalogue
    assert gala.language_for("EN_gb") == "en"
    assert gala.language_for("es-MX") == "de"  # a catalogue the event does not serve
    assert gala.language_for("fr") == "de"  # no catalogue: not English, the event's first
    assert gala.language_for(None) == "de"
    assert gala.language_for("uk") == "de"  # Russian readers read Russian, which the gala does not serve
    assert Event(id="r", name="R", languages=("es", "ru")).language_for("uk-UA") == "ru"


def test_an_event_serving_every_language_answers_as_the_catalogues_do() -> None:
    everything = Event(id="e", name="E")
    for code in ("de-AT", "es-MX", "uk", "ru", "fr", "pt-BR", "", None):
        assert everything.language_for(code) == language_of(code)
    assert everything.language_for("fr") == SOURCE_LANGUAGE


def test_an_event_without_own_words_says_exactly_what_the_catalogues_say() -> None:
    """A default-event guest (no texts, every language) gets today's texts, and so does a text about no
    event (``guest_text(None, ...)``)."""
    default = Event(id=DEFAULT_EVENT, name="Default")
    for key, english in TEXTS.items():
        values = {p[1:-1]: "X" for p in placeholders(english[SOURCE_LANGUAGE]) if p.startswith("{")}
        for code in (*LANGUAGES, "de-AT", "uk", "fr", None):
            assert default.text(key, code, **values) == text(key, code, **values)
            assert guest_text(None, key, code, **values) == text(key, code, **values)
    for code in (*LANGUAGES, "fr", None):
        assert default.sticker_set_title(code) == PACK_TITLE[language_of(code)]
        assert guest_set_title(None, code) == PACK_TITLE[language_of(code)]


def test_the_set_title_follows_the_guests_language_at_the_event() -> None:
    gala = Event(id="gala", name="Gala", languages=("de", "en"), set_title={"de": "Gala-Sticker"})
    assert gala.sticker_set_title("fr") == "Gala-Sticker"
    assert gala.sticker_set_title("de-CH") == "Gala-Sticker"
    assert gala.sticker_set_title("en") == PACK_TITLE["en"]
    assert guest_set_title(gala, "es") == "Gala-Sticker"


def test_overlaps_counts_open_ends_as_forever_and_touching_ends_as_apart() -> None:
    from shared.events import overlaps

    def ev(start: int | None, end: int | None) -> Event:
        at = lambda h: None if h is None else datetime(2026, 7, 1, tzinfo=UTC) + timedelta(hours=h)  # noqa: E731
        return Event(id="e", name="e", starts_at=at(start), ends_at=at(end))

    assert overlaps(ev(0, 10), ev(5, 15))
    assert not overlaps(ev(0, 10), ev(10, 20))
    assert overlaps(ev(None, None), ev(100, 101))
    assert overlaps(ev(0, None), ev(50, 60))
    assert not overlaps(ev(None, 5), ev(5, None))


def test_event_spec_keeps_a_good_event_and_converts_times_to_utc() -> None:
    from shared.events import EventSpec

    spec = EventSpec.model_validate(
        {
            "name": "Fair",
            "time_zone": "Europe/Berlin",
            "starts_at": "2026-07-01T09:00:00+02:00",
            "branding": {"title": "Fair", "accent_color": "#abc", "logo_url": "/logo.png"},
            "set_title": {"en": "Fair stickers"},
        }
    )
    event = spec.to_event("fair")
    assert event.starts_at == datetime(2026, 7, 1, 7, tzinfo=UTC)
    assert event.branding == {"title": "Fair", "accent_color": "#abc", "logo_url": "/logo.png"}
    assert (
        spec.unknown_outfits([]) == [] and EventSpec(name="x", outfits=["zzz"]).unknown_outfits(["zzz"]) == []
    )
    assert EventSpec(name="x", outfits=["zzz"]).unknown_outfits([]) == ["zzz"]
