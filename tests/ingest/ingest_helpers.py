"""Shared helpers of the ingest tests: the app's settings on the test database and Redis, an in-process
HTTP client of an app, and a kiosk session bound to a Telegram guest with an outfit and consent."""

from __future__ import annotations

from typing import Any

import httpx

from ingest.settings import IngestSettings
from shared.repositories import Database


def ingest_settings(database_url: str, redis_url: str, **env: Any) -> IngestSettings:
    """Ingest's settings for a test (bot ``stickerbooth_bot``); ``env`` adds to them by their environment
    names (``ADMIN_TOKEN=…``, ``MAX_UPLOAD_BYTES=…``)."""
    values: dict[str, Any] = {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "BOT_USERNAME": "stickerbooth_bot",
    }
    values.update(env)
    return IngestSettings(**values)


def app_client(
    app: Any, *, base_url: str = "http://ingest", raise_app_exceptions: bool = True
) -> httpx.AsyncClient:
    """An HTTP client calling ``app`` in-process (use as ``async with``). ``raise_app_exceptions=False``:
    see the 500 the server sends instead of the exception it re-raises."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
    return httpx.AsyncClient(transport=transport, base_url=base_url)


async def agree(client: httpx.AsyncClient, sid: str, language: str = "en") -> httpx.Response:
    """The guest presses "Agree" on the consent screen of the current version (``PUT …/consent``)."""
    version = (await client.get("/consent")).json()["version"]
    return await client.put(f"/sessions/{sid}/consent", json={"version": version, "language": language})


async def linked_session(
    client: httpx.AsyncClient,
    db: Database,
    *,
    outfit: str | None = "astronaut",
    consent: bool = True,
    user_id: int = 77,
    language: str = "ru",
) -> str:
    """A session at station ``hall-a`` bound to Telegram user (and chat) ``user_id`` speaking ``language``,
    with ``outfit`` chosen and (``consent``) "Agree" given; returns its id."""
    body = (await client.post("/sessions", json={"station": "hall-a"})).json()
    token = body["deep_link"].split("start=")[1]
    async with db.transaction() as repos:
        await repos.sessions.bind_telegram(
            token, user_id=user_id, chat_id=user_id, name="Ann", language=language
        )
    if outfit:
        assert (
            await client.put(f"/sessions/{body['id']}/outfit", json={"outfit_id": outfit})
        ).status_code == 200
    if consent:
        assert (await agree(client, str(body["id"]))).status_code == 200
    return str(body["id"])
