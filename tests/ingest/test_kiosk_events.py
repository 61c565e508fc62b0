"""A kiosk opened for a station shows that station's event (issue 23 item 1, the guest side), against
real Postgres and Redis: two events at once in different time zones, with their own stations, outfits
and branding; a station whose event has ended is closed; a station no event lists serves the default
event, as before events existed."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa

from ingest.branding import ink_on
from ingest.main import create_app
from shared.events import DEFAULT_EVENT, Event, EventOutfit
from shared.outfits import load_catalog, thumbnail_png
from shared.repositories import Database
from shared.streams import Publisher
from shared.texts import TEXTS, text
from tests.ingest.ingest_helpers import agree, app_client, ingest_settings
from tests.ingest.test_kiosk_api import PHOTOS
from tests.outbox_helpers import stored_texts

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)


@pytest.fixture
async def client(
    db: Database, redis: aioredis.Redis, database_url: str, redis_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(
        ingest_settings(database_url, redis_url, KIOSK_EVENT_TITLE="Our Booth", KIOSK_ACCENT_COLOR="#112233"),
        db=db,
        publisher=Publisher(redis),
    )
    async with app_client(app, base_url="http://kiosk") as c:
        yield c


@pytest.fixture
async def events(db: Database) -> None:
    """Berlin runs now at ``berlin-1`` (its own title and colour, two outfits); Tokyo runs now at
    ``tokyo-1`` (only a logo, the whole catalogue, Japanese first); an ended gala listed ``old-1`` and a
    planned fair lists it next."""
    async with db.transaction() as repos:
        await repos.events.save(
            Event(
                id="berlin",
                name="Berlin Expo",
                time_zone="Europe/Berlin",
                starts_at=NOW - timedelta(hours=2),
                ends_at=NOW + timedelta(hours=6),
                stations=("berlin-1",),
                outfits=("pirate", "wizard"),
                branding={"title": "Berlin Expo", "accent_color": "#FF0000"},
                languages=("de", "en"),
            )
        )
        await repos.events.save(
            Event(
                id="tokyo",
                name="Tokyo Fair",
                time_zone="Asia/Tokyo",
                starts_at=NOW - timedelta(hours=1),
                ends_at=None,
                stations=("tokyo-1",),
                branding={"logo_url": "https://example.com/tokyo.png"},
            )
        )
        await repos.events.save(
            Event(
                id="gala",
                name="Old Gala",
                starts_at=NOW - timedelta(days=3),
                ends_at=NOW - timedelta(days=2),
                stations=("old-1",),
            )
        )
        await repos.events.save(
            Event(
                id="fair",
                name="Spring Fair",
                time_zone="America/New_York",
                starts_at=NOW + timedelta(days=5),
                ends_at=NOW + timedelta(days=6),
                stations=("old-1",),
            )
        )


async def session_rows(db: Database) -> list[tuple[str, str]]:
    async with db.engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT station, event_id FROM sessions ORDER BY station"))
        return [(r.station, r.event_id) for r in rows]


async def test_each_station_opens_sessions_of_its_own_event(
    client: httpx.AsyncClient, db: Database, events: None
) -> None:
    for station in ("berlin-1", "tokyo-1", "anywhere"):
        response = await client.post("/sessions", json={"station": station})
        assert response.status_code == 201, response.text
    assert await session_rows(db) == [
        ("anywhere", DEFAULT_EVENT),
        ("berlin-1", "berlin"),
        ("tokyo-1", "tokyo"),
    ]
    async with db.transaction() as repos:
        sid = (await client.post("/sessions", json={"station": "berlin-1"})).json()["id"]
        session = await repos.sessions.get(sid)
    assert session is not None and session.event_id == "berlin"


async def test_the_generating_and_unlinked_texts_are_in_the_words_and_language_of_the_sessions_event(
    client: httpx.AsyncClient, db: Database, events: None
) -> None:
    """Berlin serves German and English: a French guest is told in German, Berlin's first language, and in
    Berlin's own words where it has them ("Generating…"), else the German catalogue's (unlinked)."""
    async with db.transaction() as repos:
        berlin = await repos.events.get("berlin")
        assert berlin is not None
        await repos.events.save(
            dataclasses.replace(berlin, texts={"de": {"generating": "Berlin malt dich…"}})
        )
    for user_id in (501, 502):
        body = (await client.post("/sessions", json={"station": "berlin-1"})).json()
        async with db.transaction() as repos:
            await repos.sessions.bind_telegram(
                body["token"], user_id=user_id, chat_id=user_id, name="Ann", language="fr"
            )
        sid = body["id"]
        if user_id == 501:
            assert (
                await client.put(f"/sessions/{sid}/outfit", json={"outfit_id": "pirate"})
            ).status_code == 200
            assert (await agree(client, sid)).status_code == 200
            photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
            response = await client.post(
                f"/sessions/{sid}/photo", files={"photo": ("x.png", photo)}, data={"capture_id": "c"}
            )
            assert response.status_code == 202, response.text
        else:
            assert (await client.post(f"/sessions/{sid}/unlink")).status_code == 200
    told = await stored_texts(db, "send_message")
    assert told == ["Berlin malt dich…", text("unlinked", "de")]


async def test_the_kiosk_shows_the_failure_texts_in_the_events_words_as_the_bot_sends_them(
    client: httpx.AsyncClient, db: Database, events: None
) -> None:
    async with db.transaction() as repos:
        berlin = await repos.events.get("berlin")
        assert berlin is not None
        own = {"no_face": "Berlin: kein Gesicht.", "maintenance": "Berlin macht Pause."}
        await repos.events.save(dataclasses.replace(berlin, texts={"de": own}))
    config = (await client.get("/kiosk/config", params={"station": "berlin-1"})).json()
    assert config["guest_texts"]["no_face"]["de"] == "Berlin: kein Gesicht."
    assert config["guest_texts"]["no_face"]["en"] == TEXTS["no_face"]["en"]
    assert (
        config["guest_texts"]["maintenance"]["de"] == TEXTS["maintenance"]["de"]
    )  # the bot's is the catalogue's
    anywhere = (await client.get("/kiosk/config", params={"station": "anywhere"})).json()
    assert anywhere["guest_texts"]["no_face"] == TEXTS["no_face"]


async def test_a_station_whose_event_ended_is_closed_and_writes_nothing(
    client: httpx.AsyncClient, db: Database, events: None
) -> None:
    response = await client.post("/sessions", json={"station": "old-1"})
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "station_closed"
    assert error["next"]["name"] == "Spring Fair"
    assert error["next"]["time_zone"] == "America/New_York"
    assert datetime.fromisoformat(error["next"]["starts_at"]) == NOW + timedelta(days=5)
    assert await session_rows(db) == []


async def test_a_closed_station_with_nothing_planned_has_no_next(
    client: httpx.AsyncClient, db: Database, events: None
) -> None:
    async with db.transaction() as repos:
        await repos.events.delete("fair")
    response = await client.post("/sessions", json={"station": "old-1"})
    assert response.status_code == 409
    assert response.json()["error"] == {
        "code": "station_closed",
        "message": response.json()["error"]["message"],
        "next": None,
    }
    config = (await client.get("/kiosk/config", params={"station": "old-1"})).json()
    assert config["closed"] is True and config["next"] is None


async def test_config_shows_each_station_its_event_branding_with_the_settings_behind(
    client: httpx.AsyncClient, events: None
) -> None:
    berlin = (await client.get("/kiosk/config", params={"station": "berlin-1"})).json()
    assert (berlin["event_title"], berlin["accent_color"], berlin["logo_url"]) == (
        "Berlin Expo",
        "#ff0000",
        None,
    )
    assert berlin["accent_ink"] == ink_on("#ff0000")
    assert (berlin["event_id"], berlin["languages"], berlin["closed"]) == ("berlin", ["de", "en"], False)

    tokyo = (await client.get("/kiosk/config", params={"station": "tokyo-1"})).json()
    assert (tokyo["event_title"], tokyo["accent_color"], tokyo["logo_url"]) == (
        "Our Booth",
        "#112233",
        "https://example.com/tokyo.png",
    )
    assert (tokyo["event_id"], tokyo["languages"], tokyo["closed"]) == ("tokyo", [], False)

    closed = (await client.get("/kiosk/config", params={"station": "old-1"})).json()
    assert closed["closed"] is True and closed["event_id"] is None
    # the kiosk page's policy lets the browser load Tokyo's logo (no KIOSK_LOGO_URL is set)
    page = await client.get("/kiosk", params={"station": "tokyo-1"})
    assert "img-src 'self' data: blob: https://example.com;" in page.headers["content-security-policy"]
    assert closed["next"]["name"] == "Spring Fair"
    assert closed["event_title"] == "Our Booth"


async def test_config_without_a_station_or_at_an_unlisted_one_is_as_before(
    client: httpx.AsyncClient, events: None
) -> None:
    plain = (await client.get("/kiosk/config")).json()
    anywhere = (await client.get("/kiosk/config", params={"station": "anywhere"})).json()
    for config in (plain, anywhere):
        assert (config["event_title"], config["accent_color"], config["logo_url"]) == (
            "Our Booth",
            "#112233",
            None,
        )
        assert config["closed"] is False and config["next"] is None
    assert anywhere["event_id"] == DEFAULT_EVENT


async def test_a_malformed_station_is_a_422_not_a_500(client: httpx.AsyncClient) -> None:
    for path in ("/kiosk/config", "/outfits"):
        response = await client.get(path, params={"station": "no spaces/here"})
        assert response.status_code == 422, path
        assert response.json()["error"]["code"] == "invalid_request"


async def test_outfits_per_station_follow_the_event(client: httpx.AsyncClient, events: None) -> None:
    catalogue = [o["id"] for o in (await client.get("/outfits")).json()]
    assert [o["id"] for o in (await client.get("/outfits", params={"station": "berlin-1"})).json()] == [
        "pirate",
        "wizard",
    ]
    assert [o["id"] for o in (await client.get("/outfits", params={"station": "tokyo-1"})).json()] == (
        catalogue
    )
    assert [o["id"] for o in (await client.get("/outfits", params={"station": "anywhere"})).json()] == (
        catalogue
    )


async def test_a_session_refuses_an_outfit_its_event_does_not_offer(
    client: httpx.AsyncClient, events: None
) -> None:
    berlin = (await client.post("/sessions", json={"station": "berlin-1"})).json()["id"]
    refused = await client.put(f"/sessions/{berlin}/outfit", json={"outfit_id": "astronaut"})
    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "unknown_outfit"
    assert (await client.put(f"/sessions/{berlin}/outfit", json={"outfit_id": "wizard"})).status_code == 200

    tokyo = (await client.post("/sessions", json={"station": "tokyo-1"})).json()["id"]
    assert (await client.put(f"/sessions/{tokyo}/outfit", json={"outfit_id": "astronaut"})).status_code == 200


@pytest.fixture
async def uploads(db: Database, events: None) -> None:
    """Berlin also offers its own ``bear`` (with a thumbnail, listed); Tokyo its ``fox`` (none uploaded,
    Tokyo lists no outfits so it comes after the catalogue)."""
    async with db.transaction() as repos:
        berlin = await repos.events.get("berlin")
        assert berlin is not None
        await repos.events.save(dataclasses.replace(berlin, outfits=("bear", "pirate", "wizard")))
        await repos.events.save_outfit(
            EventOutfit(id="bear", event_id="berlin", title="Berlin Bear", prompt=BEAR, based_on="chef"),
            thumbnail=PNG,
        )
        await repos.events.save_outfit(
            EventOutfit(id="fox", event_id="tokyo", title="Kitsune", prompt=FOX, based_on="wizard")
        )


BEAR = "a fluffy brown bear costume with a red scarf and a small crown"
FOX = "a white fox mask and a red-and-white festival robe with a paper lantern"
PNG = b"\x89PNG\r\n\x1a\n-berlin-bear"


async def test_uploaded_outfits_are_listed_served_and_chosen_only_at_their_event(
    client: httpx.AsyncClient, uploads: None
) -> None:
    berlin = (await client.get("/outfits", params={"station": "berlin-1"})).json()
    assert [(o["id"], o["title"]) for o in berlin] == [
        ("bear", "Berlin Bear"),
        ("pirate", load_catalog()["pirate"].title),
        ("wizard", load_catalog()["wizard"].title),
    ]
    assert berlin[0]["prompt"] == BEAR and berlin[0]["body_template"] == load_catalog()["chef"].body_template
    tokyo = [o["id"] for o in (await client.get("/outfits", params={"station": "tokyo-1"})).json()]
    assert tokyo == [*load_catalog(), "fox"]
    anywhere = [o["id"] for o in (await client.get("/outfits", params={"station": "anywhere"})).json()]
    assert anywhere == list(load_catalog())

    bear = await client.get(berlin[0]["thumbnail_url"])
    assert (bear.status_code, bear.content) == (200, PNG)
    fox = await client.get("/outfits/fox/thumbnail.png")
    assert (fox.status_code, fox.content) == (200, thumbnail_png("wizard"))
    missing = await client.get("/outfits/nobody/thumbnail.png")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "unknown_outfit")

    in_berlin = (await client.post("/sessions", json={"station": "berlin-1"})).json()["id"]
    assert (await client.put(f"/sessions/{in_berlin}/outfit", json={"outfit_id": "bear"})).status_code == 200
    other = await client.put(f"/sessions/{in_berlin}/outfit", json={"outfit_id": "fox"})
    assert (other.status_code, other.json()["error"]["code"]) == (409, "unknown_outfit")
    elsewhere = (await client.post("/sessions", json={"station": "anywhere"})).json()["id"]
    refused = await client.put(f"/sessions/{elsewhere}/outfit", json={"outfit_id": "bear"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "unknown_outfit")
