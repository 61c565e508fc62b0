"""A guest's journey, played against a running stack: kiosk API calls plus a guest in the Telegram simulator.

1. the kiosk lists outfits and opens a session (deep link + QR);
2. the guest "scans" it: sends ``/start <token>`` to the bot through the simulator's control API;
3. the kiosk waits for the link, chooses an outfit, the guest agrees to the consent screen, and the kiosk
   uploads the photo;
4. we wait for the bot's message with ``https://t.me/addstickers/<name>`` in the guest's chat.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

LINK = re.compile(r"https://t\.me/addstickers/(?P<name>[A-Za-z0-9_]+)")


@dataclass
class JourneyResult:
    session_id: str
    job_id: str | None
    status: str
    link: str | None = None
    set_name: str | None = None
    upload_status: int = 0
    upload_error: dict[str, Any] | None = None
    chat: list[dict[str, Any]] = field(default_factory=list)
    #: Unix time (s) just before the photo upload was sent (the start of "upload → link").
    uploaded_at: float = 0.0
    #: The link message's "Download the files" button (``PUBLIC_BASE_URL/d/<token>``), if it had one.
    download_url: str | None = None


class JourneyError(RuntimeError):
    """The stack did not do its part in time (carries what was seen)."""


def wait_until(
    predicate: Any,
    timeout_s: float,
    what: str,
    *,
    interval_s: float = 0.5,
    error: type[Exception] = JourneyError,
) -> Any:
    """Call ``predicate`` every ``interval_s`` seconds until it returns something truthy; returns that.

    Raises:
        error: (``JourneyError`` unless given) after ``timeout_s`` seconds, naming ``what`` was awaited.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise error(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(interval_s)


def chat_messages(sim: httpx.Client, chat_id: int) -> list[dict[str, Any]]:
    response = sim.get(f"/sim/chats/{chat_id}/messages")
    if response.status_code == 404:
        return []
    response.raise_for_status()
    body = response.json()
    messages: list[dict[str, Any]] = body["messages"] if isinstance(body, dict) else body
    return messages


def download_button(messages: list[dict[str, Any]]) -> str | None:
    """The URL of the last bot message's button to a download page (``…/d/<token>``), if any."""
    urls = [
        button.get("url") or ""
        for m in messages
        if (m.get("from") or {}).get("is_bot")
        for row in (m.get("reply_markup") or {}).get("inline_keyboard", [])
        for button in row
    ]
    return next((u for u in reversed(urls) if "/d/" in u), None)


def bot_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m.get("text") or "" for m in messages if (m.get("from") or {}).get("is_bot")]


def start_session(
    kiosk: httpx.Client, sim: httpx.Client, *, user_id: int, language: str = "en", station: str = "demo"
) -> dict[str, Any]:
    """Open a session at kiosk ``station`` (``demo``: no event lists it, so the default event's) and link
    the guest's Telegram account; returns the session body."""
    session = kiosk.post("/sessions", json={"station": station}).raise_for_status().json()
    token = session["deep_link"].split("start=", 1)[1]
    sim.post(
        f"/sim/users/{user_id}/messages",
        json={
            "text": f"/start {token}",
            "first_name": "Guest",
            "username": f"guest{user_id}",
            "language_code": language,
        },
    ).raise_for_status()
    wait_until(
        lambda: kiosk.get(f"/sessions/{session['id']}").json().get("telegram_linked"),
        30,
        "the gateway to bind the guest's Telegram account",
    )
    return dict(session)


def consent(kiosk: httpx.Client, session_id: str, *, language: str = "en") -> httpx.Response:
    """The guest presses "Agree" on the consent screen the kiosk shows before the camera: ``PUT
    /sessions/{id}/consent`` with the version of ``GET /consent``. Returns the PUT's answer (200, or a
    5xx the caller may retry); raises ``httpx.HTTPStatusError`` when ``GET /consent`` fails."""
    version = kiosk.get("/consent").raise_for_status().json()["version"]
    return kiosk.put(f"/sessions/{session_id}/consent", json={"version": version, "language": language})


def play(
    ingest_url: str,
    sim_url: str,
    photo: bytes,
    *,
    user_id: int,
    outfit_id: str | None = None,
    timeout_s: float = 300.0,
    filename: str = "selfie.jpg",
    poll_s: float = 1.0,
    station: str = "demo",
) -> JourneyResult:
    """Play one journey at kiosk ``station`` (its event's outfits; ``outfit_id`` ``None``: the first);
    returns when the guest got a link, a failure text, or the upload was refused. The kiosk asks for the
    job's status every ``poll_s`` seconds (spec/000 "Status poll": 1 s).

    Raises:
        JourneyError: the stack did not answer in time.
    """
    with (
        httpx.Client(base_url=ingest_url, timeout=60) as kiosk,
        httpx.Client(base_url=sim_url, timeout=30) as sim,
    ):
        outfits = kiosk.get("/outfits", params={"station": station}).raise_for_status().json()
        chosen = outfit_id or outfits[0]["id"]
        session = start_session(kiosk, sim, user_id=user_id, station=station)
        sid = session["id"]
        kiosk.put(f"/sessions/{sid}/outfit", json={"outfit_id": chosen}).raise_for_status()
        consent(kiosk, sid).raise_for_status()
        uploaded_at = time.time()
        upload = kiosk.post(
            f"/sessions/{sid}/photo",
            files={"photo": (filename, photo)},
            data={"capture_id": uuid.uuid4().hex},
        )
        if upload.status_code >= 400:
            return JourneyResult(
                sid,
                None,
                "rejected",
                upload_status=upload.status_code,
                upload_error=upload.json(),
                uploaded_at=uploaded_at,
            )
        job_id = upload.json()["job_id"]

        def finished() -> dict[str, Any] | None:
            body: dict[str, Any] = kiosk.get(f"/sessions/{sid}").json()
            return body if body["status"] in ("delivered", "failed") else None

        final = wait_until(finished, timeout_s, "the job to be delivered or failed", interval_s=poll_s)
        chat = chat_messages(sim, user_id)
        link_match = next((m for t in bot_texts(chat) if (m := LINK.search(t))), None)
        return JourneyResult(
            session_id=sid,
            job_id=job_id,
            status=final["status"],
            link=link_match.group(0) if link_match else None,
            set_name=link_match["name"] if link_match else None,
            upload_status=upload.status_code,
            chat=chat,
            uploaded_at=uploaded_at,
            download_url=download_button(chat),
        )


def download_set(sim_url: str, name: str) -> list[bytes]:
    """The sticker files of set ``name`` as stored by the simulator, in order."""
    with httpx.Client(base_url=sim_url, timeout=30) as sim:
        body = sim.get(f"/sim/sticker-sets/{name}").raise_for_status().json()
        stickers = body["stickers"]
        return [sim.get(f"/sim/files/{s['file_id']}").raise_for_status().content for s in stickers]
