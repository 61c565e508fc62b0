"""The admin API for events (issue 23 item 1): create, replace, list, delete, uploaded outfits, and each
refusal with its code; a refused write leaves no row behind."""

from __future__ import annotations

import base64
import io
import random
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from PIL import Image

from shared.db.tables import event_outfits, events, sessions
from shared.outfits import load_catalog
from shared.repositories import Database
from tests.ingest.conftest import ADMIN_AUTH

pytestmark = pytest.mark.integration
AUTH = ADMIN_AUTH


def spec(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Summer fair",
        "venue": "Hall 3",
        "time_zone": "Europe/Berlin",
        "starts_at": "2026-07-01T09:00:00+02:00",
        "ends_at": "2026-07-03T18:00:00+02:00",
        "stations": ["hall3-a"],
    }
    body.update(changes)
    return body


def png(width: int = 64, height: int = 64) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height), "red").save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


async def event_ids(db: Database) -> list[str]:
    async with db.transaction() as repos:
        return sorted((await repos.conn.execute(sa.select(events.c.id))).scalars())


async def code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"])


async def test_the_routes_need_the_token(admin_client: httpx.AsyncClient) -> None:
    assert (await admin_client.get("/admin/events")).status_code == 401
    assert (await admin_client.put("/admin/events/x", json=spec())).status_code == 401
    assert (await admin_client.delete("/admin/events/x")).status_code == 401


async def test_create_replace_list_and_delete(admin_client: httpx.AsyncClient, db: Database) -> None:
    listed = (await admin_client.get("/admin/events", headers=AUTH)).json()["events"]
    assert [e["id"] for e in listed] == ["default"]

    created = await admin_client.put("/admin/events/summer-26", json=spec(), headers=AUTH)
    assert created.status_code == 200, created.text
    body = created.json()
    assert body["stations"] == ["hall3-a"] and body["time_zone"] == "Europe/Berlin"
    assert body["starts_at"] == "2026-07-01T07:00:00+00:00"

    replaced = await admin_client.put(
        "/admin/events/summer-26",
        json=spec(name="Summer fair 2026", stations=["hall3-b"], branding={"accent_color": "#0af"}),
        headers=AUTH,
    )
    assert replaced.status_code == 200, replaced.text
    got = (await admin_client.get("/admin/events/summer-26", headers=AUTH)).json()
    assert got["name"] == "Summer fair 2026" and got["stations"] == ["hall3-b"]
    assert got["branding"] == {"accent_color": "#0af"} and got["uploaded_outfits"] == []
    listed = (await admin_client.get("/admin/events", headers=AUTH)).json()["events"]
    assert [e["id"] for e in listed] == ["default", "summer-26"]

    assert (await admin_client.delete("/admin/events/summer-26", headers=AUTH)).status_code == 204
    assert await event_ids(db) == ["default"]
    missing = await admin_client.get("/admin/events/summer-26", headers=AUTH)
    assert missing.status_code == 404 and await code(missing) == "event_not_found"
    gone = await admin_client.delete("/admin/events/summer-26", headers=AUTH)
    assert gone.status_code == 404 and await code(gone) == "event_not_found"


@pytest.mark.parametrize(
    "changes",
    [
        {"name": ""},
        {"name": "x" * 81},
        {"name": "two\nlines"},
        {"venue": "v" * 121},
        {"time_zone": "Mars/Olympus"},
        {"starts_at": "2026-07-03T18:00:00+02:00", "ends_at": "2026-07-01T09:00:00+02:00"},
        {"starts_at": "2026-07-01T09:00:00"},
        {"stations": ["has space"]},
        {"stations": ["s" * 65]},
        {"branding": {"title": "t" * 81}},
        {"branding": {"accent_color": "red"}},
        {"branding": {"logo_url": "javascript:alert(1)"}},
        {"set_title": {"en": ""}},
        {"set_title": {"xx": "Stickers"}},
        {"texts": {"en": {"no_such_key": "hello"}}},
        {"languages": ["xx"]},
        {"daily_budget_usd": 0},
        {"total_budget_usd": -5},
        {"surprise": 1},
    ],
)
async def test_each_bad_field_is_a_422_and_nothing_is_written(
    admin_client: httpx.AsyncClient, db: Database, changes: dict[str, Any]
) -> None:
    response = await admin_client.put("/admin/events/bad", json=spec(**changes), headers=AUTH)
    assert response.status_code == 422, (changes, response.text)
    assert await event_ids(db) == ["default"]


async def test_a_text_with_other_placeholders_than_english_is_refused(
    admin_client: httpx.AsyncClient,
) -> None:
    from shared.texts import TEXTS, placeholders

    key = next(k for k, langs in TEXTS.items() if placeholders(langs["en"]))
    bad = await admin_client.put(
        "/admin/events/e1", json=spec(texts={"en": {key: "no placeholders here"}}), headers=AUTH
    )
    assert bad.status_code == 422, bad.text
    good = await admin_client.put(
        "/admin/events/e1", json=spec(texts={"en": {key: TEXTS[key]["en"] + " !"}}), headers=AUTH
    )
    assert good.status_code == 200, good.text


async def test_a_bad_id_and_an_unknown_outfit_are_refused(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    bad_id = await admin_client.put("/admin/events/Not_An_Id", json=spec(), headers=AUTH)
    assert bad_id.status_code == 422 and await code(bad_id) == "invalid_event_id"
    unknown = await admin_client.put("/admin/events/e1", json=spec(outfits=["nope"]), headers=AUTH)
    assert unknown.status_code == 422 and await code(unknown) == "unknown_outfit"
    assert await event_ids(db) == ["default"]
    catalogue_id = next(iter(load_catalog()))
    ok = await admin_client.put("/admin/events/e1", json=spec(outfits=[catalogue_id]), headers=AUTH)
    assert ok.status_code == 200, ok.text


async def test_a_station_cannot_belong_to_two_overlapping_events(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    assert (await admin_client.put("/admin/events/first", json=spec(), headers=AUTH)).status_code == 200
    overlapping = spec(starts_at="2026-07-02T09:00:00+02:00", ends_at="2026-07-05T18:00:00+02:00")
    refused = await admin_client.put("/admin/events/second", json=overlapping, headers=AUTH)
    assert refused.status_code == 409 and await code(refused) == "station_overlap"
    open_ended = spec(starts_at=None, ends_at=None)
    refused = await admin_client.put("/admin/events/second", json=open_ended, headers=AUTH)
    assert refused.status_code == 409 and await code(refused) == "station_overlap"
    assert await event_ids(db) == ["default", "first"]
    # the same station the week after, or another station at the same time, is fine
    later = spec(starts_at="2026-07-03T18:00:00+02:00", ends_at="2026-07-04T18:00:00+02:00")
    assert (await admin_client.put("/admin/events/second", json=later, headers=AUTH)).status_code == 200
    elsewhere = spec(stations=["hall4"])
    assert (await admin_client.put("/admin/events/third", json=elsewhere, headers=AUTH)).status_code == 200
    # a replace that would move an existing event onto the other's time is refused and changes nothing
    refused = await admin_client.put("/admin/events/third", json=spec(), headers=AUTH)
    assert refused.status_code == 409 and await code(refused) == "station_overlap"
    kept = (await admin_client.get("/admin/events/third", headers=AUTH)).json()
    assert kept["stations"] == ["hall4"]


async def test_the_default_event_and_an_event_with_guests_are_not_deleted(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    refused = await admin_client.delete("/admin/events/default", headers=AUTH)
    assert refused.status_code == 409 and await code(refused) == "event_default"
    timed = await admin_client.put("/admin/events/default", json=spec(stations=[]), headers=AUTH)
    assert timed.status_code == 422 and await code(timed) == "event_default"
    untimed = spec(stations=[], starts_at=None, ends_at=None, name="Our stack")
    assert (await admin_client.put("/admin/events/default", json=untimed, headers=AUTH)).status_code == 200
    assert (await admin_client.put("/admin/events/busy", json=spec(), headers=AUTH)).status_code == 200
    async with db.transaction() as repos:
        session = await repos.sessions.create(station="hall3-a", token="tok")
        await repos.conn.execute(
            sa.update(sessions).where(sessions.c.id == session.id).values(event_id="busy")
        )
    refused = await admin_client.delete("/admin/events/busy", headers=AUTH)
    assert refused.status_code == 409 and await code(refused) == "event_has_guests"
    assert await event_ids(db) == ["busy", "default"]


async def test_uploaded_outfits(admin_client: httpx.AsyncClient, db: Database) -> None:
    catalogue_id = next(iter(load_catalog()))
    assert (await admin_client.put("/admin/events/e1", json=spec(), headers=AUTH)).status_code == 200
    outfit = {
        "title": "Lighthouse keeper",
        "prompt": "a lighthouse keeper in a yellow raincoat",
        "based_on": catalogue_id,
        "thumbnail_png_base64": png(),
    }
    put = await admin_client.put("/admin/events/e1/outfits/keeper", json=outfit, headers=AUTH)
    assert put.status_code == 200 and put.json()["has_thumbnail"] is True, put.text
    # the event may now list it
    listed = await admin_client.put("/admin/events/e1", json=spec(outfits=["keeper"]), headers=AUTH)
    assert listed.status_code == 200, listed.text
    assert (await admin_client.get("/admin/events/e1", headers=AUTH)).json()["uploaded_outfits"][0]["id"] == (
        "keeper"
    )

    taken = await admin_client.put(f"/admin/events/e1/outfits/{catalogue_id}", json=outfit, headers=AUTH)
    assert taken.status_code == 409 and await code(taken) == "outfit_id_taken"
    for thumbnail in (
        base64.b64encode(b"not a png at all").decode(),
        "%%%",
        png(1025, 10),
        base64.b64encode(base64.b64decode(png())[:40]).decode(),
    ):
        bad = await admin_client.put(
            "/admin/events/e1/outfits/other", json={**outfit, "thumbnail_png_base64": thumbnail}, headers=AUTH
        )
        assert bad.status_code == 422 and await code(bad) == "invalid_thumbnail", bad.text
    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8)).save(jpeg, format="JPEG")
    bad = await admin_client.put(
        "/admin/events/e1/outfits/other",
        json={**outfit, "thumbnail_png_base64": base64.b64encode(jpeg.getvalue()).decode()},
        headers=AUTH,
    )
    assert bad.status_code == 422 and await code(bad) == "invalid_thumbnail"
    unknown = await admin_client.put(
        "/admin/events/e1/outfits/other", json={**outfit, "based_on": "nope"}, headers=AUTH
    )
    assert unknown.status_code == 422 and await code(unknown) == "unknown_outfit"
    async with db.transaction() as repos:
        ids = sorted((await repos.conn.execute(sa.select(event_outfits.c.id))).scalars())
    assert ids == ["keeper"]

    in_use = await admin_client.delete("/admin/events/e1/outfits/keeper", headers=AUTH)
    assert in_use.status_code == 409 and await code(in_use) == "outfit_in_use"
    assert (await admin_client.put("/admin/events/e1", json=spec(), headers=AUTH)).status_code == 200
    # unlisted, but a guest chose it: their stickers are still to be drawn from it
    async with db.transaction() as repos:
        guest = await repos.sessions.create(station="hall3-a", token="tok-keeper", event_id="e1")
        await repos.sessions.set_outfit(guest.id, "keeper")
    chosen = await admin_client.delete("/admin/events/e1/outfits/keeper", headers=AUTH)
    assert chosen.status_code == 409 and await code(chosen) == "outfit_in_use", chosen.text
    async with db.transaction() as repos:
        await repos.sessions.set_outfit(guest.id, catalogue_id)
    assert (await admin_client.delete("/admin/events/e1/outfits/keeper", headers=AUTH)).status_code == 204
    missing = await admin_client.delete("/admin/events/e1/outfits/keeper", headers=AUTH)
    assert missing.status_code == 404 and await code(missing) == "outfit_not_found"


async def test_a_thumbnail_up_to_its_limit_fits_the_request(admin_client: httpx.AsyncClient) -> None:
    """A thumbnail of ~200 KB (over MAX_JSON_BODY_BYTES as base64, under THUMBNAIL_MAX_BYTES) is stored;
    one over THUMBNAIL_MAX_BYTES is refused as that field's error, not by the body limit."""
    assert (await admin_client.put("/admin/events/e1", json=spec(), headers=AUTH)).status_code == 200

    def noise(side: int) -> str:
        out = io.BytesIO()
        Image.frombytes("RGB", (side, side), random.Random(side).randbytes(side * side * 3)).save(out, "PNG")
        assert side * side * 3 < len(out.getvalue()) + 1024  # noise does not compress
        return base64.b64encode(out.getvalue()).decode()

    outfit = {"title": "Keeper", "prompt": "a lighthouse keeper in a yellow raincoat"}
    outfit["based_on"] = next(iter(load_catalog()))
    put = await admin_client.put(
        "/admin/events/e1/outfits/keeper", json={**outfit, "thumbnail_png_base64": noise(260)}, headers=AUTH
    )
    assert put.status_code == 200, put.text
    big = await admin_client.put(
        "/admin/events/e1/outfits/keeper", json={**outfit, "thumbnail_png_base64": noise(420)}, headers=AUTH
    )
    assert big.status_code == 422 and "thumbnail_png_base64" in big.text, big.text


async def test_two_concurrent_writes_cannot_both_take_a_station(
    admin_client: httpx.AsyncClient, db: Database
) -> None:
    """The check and the save run under one advisory lock: of two simultaneous PUTs that would give
    ``hall3-a`` two overlapping events, one is refused."""
    import asyncio

    answers = await asyncio.gather(
        *(admin_client.put(f"/admin/events/race-{i}", json=spec(), headers=AUTH) for i in range(4))
    )
    assert sorted(a.status_code for a in answers) == [200, 409, 409, 409], [a.text for a in answers]
    assert len(await event_ids(db)) == 2
