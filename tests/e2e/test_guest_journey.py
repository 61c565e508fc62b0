"""The whole product across separate processes: simulator + five services on real Postgres and Redis.

A guest plays the journey with a real photo and receives one link to a set of 12 valid stickers; a worker
killed with SIGKILL mid-job is restarted and the guest still gets exactly one pack and one link; a second
gateway refuses to start; a lead becomes one card in the staff group.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from devstack.journey import (
    LINK,
    bot_texts,
    chat_messages,
    consent,
    download_set,
    play,
    start_session,
    wait_until,
)
from devstack.processes import Stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
EXTRA_ENV: dict[str, str] = {}


@pytest.fixture(scope="module")
def stack(namespace: Any) -> Iterator[Stack]:
    with namespace.running_stack("sb_e2e", redis_offset=1, extra_env=EXTRA_ENV) as s:
        yield s


def assert_valid_sticker(png: bytes) -> None:
    """Telegram's static sticker rules (core.telegram.org/stickers) and our look: transparent, outlined."""
    assert len(png) <= 512 * 1024
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    assert max(image.size) == 512 and min(image.size) <= 512
    rgba = np.asarray(image.convert("RGBA"))
    assert rgba[0, 0, 3] == 0 and rgba[-1, -1, 3] == 0  # transparent background
    opaque = rgba[..., 3] > 200
    assert 0.1 < opaque.mean() < 0.9
    white = opaque & (rgba[..., :3].min(axis=2) > 235)
    assert white.sum() > 0.02 * opaque.sum()  # the white die-cut outline


def test_a_selfie_becomes_one_link_to_twelve_valid_stickers(stack: Stack) -> None:
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    result = play(stack.ingest_url, stack.sim_url, photo, user_id=5001, timeout_s=180)
    assert result.status == "delivered", result
    assert result.set_name is not None and result.set_name.endswith("_by_stickerbooth_bot")
    texts = bot_texts(result.chat)
    assert sum(bool(LINK.search(t)) for t in texts) == 1
    assert any("Generating" in t for t in texts)
    (link,) = [m for m in result.chat if LINK.search(m.get("text") or "")]
    assert (
        link["reply_markup"]["inline_keyboard"][0][0]["url"] == f"https://t.me/addstickers/{result.set_name}"
    )
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:  # the preview follows the link once
        deadline = time.monotonic() + 30
        while not (previews := [m for m in chat_messages(sim, 5001) if m.get("sticker")]):
            assert time.monotonic() < deadline, "no preview sticker after the link"
            time.sleep(0.5)
        time.sleep(2)  # a second one would show up by now
        assert len([m for m in chat_messages(sim, 5001) if m.get("sticker")]) == 1
    assert previews[0]["sticker"]["set_name"] == result.set_name
    stickers = download_set(stack.sim_url, result.set_name)
    assert len(stickers) == 12
    for png in stickers:
        assert_valid_sticker(png)
    # The same pack as files: the link's second button opens the download page (PUBLIC_BASE_URL is set by
    # the devstack), whose zip holds the 12 stickers as PNG and as 512 × 512 px WebP.
    assert result.download_url is not None and result.download_url.startswith(f"{stack.ingest_url}/d/")
    assert httpx.get(result.download_url, timeout=10).text.count('loading="lazy"') == 12
    archive = httpx.get(f"{result.download_url}/stickers.zip", timeout=30).raise_for_status().content
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        assert len(zipped.namelist()) == 24
        for name in zipped.namelist():
            if name.endswith(".png"):
                assert_valid_sticker(zipped.read(name))
            else:
                assert Image.open(io.BytesIO(zipped.read(name))).size == (512, 512)


def _job_status(stack: Stack, session_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{stack.ingest_url}/sessions/{session_id}", timeout=10).json()
    return body


def _claimed_job(
    stack: Stack,
    kiosk: httpx.Client,
    sim: httpx.Client,
    *,
    user_id: int,
    outfit: str,
    photo: str,
    capture_id: str,
) -> str:
    """A guest's session with ``outfit`` and consent, the fixture ``photo`` uploaded; returns the session id
    once a worker has claimed its job (``processing``)."""
    session = start_session(kiosk, sim, user_id=user_id)
    sid: str = session["id"]
    kiosk.put(f"/sessions/{sid}/outfit", json={"outfit_id": outfit}).raise_for_status()
    consent(kiosk, sid).raise_for_status()
    kiosk.post(
        f"/sessions/{sid}/photo",
        files={"photo": (f"p{Path(photo).suffix}", (PHOTOS / photo).read_bytes())},
        data={"capture_id": capture_id},
    ).raise_for_status()
    deadline = time.monotonic() + 60
    while _job_status(stack, sid)["jobs"][0]["status"] != "processing":
        assert time.monotonic() < deadline, "the job was never claimed"
        time.sleep(0.05)
    return sid


def test_a_worker_killed_mid_job_still_gives_one_pack_and_one_link(stack: Stack) -> None:
    user_id = 5002
    with (
        httpx.Client(base_url=stack.ingest_url, timeout=60) as kiosk,
        httpx.Client(base_url=stack.sim_url) as sim,
    ):
        sid = _claimed_job(
            stack,
            kiosk,
            sim,
            user_id=user_id,
            outfit="pirate",
            photo="face-older-man-white-hair.jpg",
            capture_id="k1",
        )
        stack.kill("worker")
        time.sleep(1)
        assert _job_status(stack, sid)["jobs"][0]["status"] == "processing"  # the owner is dead, not done
        stack.start("worker")
        deadline = time.monotonic() + 180
        while (status := _job_status(stack, sid))["status"] not in ("delivered", "failed"):
            assert time.monotonic() < deadline, f"job stuck: {status}"
            time.sleep(0.5)
        assert status["status"] == "delivered"
        texts = bot_texts(chat_messages(sim, user_id))
        links = [m for t in texts if (m := LINK.search(t))]
        assert len(links) == 1
        sets = sim.get("/sim/sticker-sets").json()
        names = [s["name"] for s in (sets["sticker_sets"] if isinstance(sets, dict) else sets)]
        assert names.count(links[0]["name"]) == 1
    assert len(download_set(stack.sim_url, links[0]["name"])) == 12


def test_a_second_gateway_refuses_to_start(stack: Stack) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "telegram_gateway"],
        env={**stack.env("telegram-gateway"), "OPS_PORT": "0"},
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert b"STARTUP_CANCELLED" in result.stderr


def test_the_gateway_takes_its_lock_again_when_postgres_cuts_the_connection(stack: Stack) -> None:
    """A Postgres restart drops the lock's connection; the gateway must not exit (issue 8)."""
    import asyncio

    import asyncpg

    from shared.db import plain_url
    from telegram_gateway.lock import GATEWAY_LOCK_KEY

    holder = (
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = $1 AND granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    )

    async def lock_holder(cut: bool) -> int | None:
        conn = await asyncpg.connect(plain_url(stack.config.database_url))
        try:
            pid = await conn.fetchval(holder, GATEWAY_LOCK_KEY)
            if cut and pid is not None:
                await conn.fetchval("SELECT pg_terminate_backend($1)", pid)
            return int(pid) if pid is not None else None
        finally:
            await conn.close()

    cut = asyncio.run(lock_holder(cut=True))
    assert cut is not None
    deadline = time.monotonic() + 60
    while asyncio.run(lock_holder(cut=False)) in (None, cut):
        assert time.monotonic() < deadline, "the gateway never took its lock again"
        time.sleep(0.5)
    assert stack.procs["telegram-gateway"].poll() is None  # still the same process
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    result = play(stack.ingest_url, stack.sim_url, photo, user_id=4711, timeout_s=120)
    assert result.status == "delivered"


def test_a_lead_becomes_one_card_in_the_staff_group(stack: Stack) -> None:
    lead = {
        "requestId": "landing-req-0001",
        "name": "Maria",
        "contact": "+7 999 000-00-00",
        "message": "Booth for 300",
        "consent": True,
    }
    first = httpx.post(f"{stack.ingest_url}/leads", json=lead, timeout=10)
    again = httpx.post(f"{stack.ingest_url}/leads", json=lead, timeout=10)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["lead_number"] == again.json()["lead_number"]
    number = first.json()["lead_number"]
    with httpx.Client(base_url=stack.sim_url) as sim:
        deadline = time.monotonic() + 30
        while not (
            cards := [
                m
                for m in chat_messages(sim, stack.config.leads_chat_id)
                if f"#{number}" in (m.get("text") or "")
            ]
        ):
            assert time.monotonic() < deadline, "no lead card"
            time.sleep(0.3)
        time.sleep(2)
        cards = [
            m for m in chat_messages(sim, stack.config.leads_chat_id) if f"#{number}" in (m.get("text") or "")
        ]
    assert len(cards) == 1
    buttons = [b["callback_data"] for row in cards[0]["reply_markup"]["inline_keyboard"] for b in row]
    assert all(b.startswith("stickers_") for b in buttons)


def test_sigterm_lets_the_running_job_finish_before_the_worker_exits(stack: Stack) -> None:
    user_id = 5003
    with (
        httpx.Client(base_url=stack.ingest_url, timeout=60) as kiosk,
        httpx.Client(base_url=stack.sim_url) as sim,
    ):
        sid = _claimed_job(
            stack, kiosk, sim, user_id=user_id, outfit="chef", photo="face-woman-red-hat.png", capture_id="t1"
        )
        assert stack.stop("worker") == 0  # SIGTERM: graceful
        status = _job_status(stack, sid)["jobs"][0]["status"]
        assert status in ("rendered", "delivering", "delivered")  # finished inside the grace period
        stack.start("worker")
        deadline = time.monotonic() + 120
        while _job_status(stack, sid)["status"] != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert len([t for t in bot_texts(chat_messages(sim, user_id)) if LINK.search(t)]) == 1


def _rows_naming(database_url: str, needles: list[str]) -> dict[str, int]:
    """Rows of every table whose text form holds one of ``needles`` (a whole-row search: nothing escapes)."""
    import asyncio

    import asyncpg

    from shared.db import plain_url, table_names

    async def count() -> dict[str, int]:
        conn = await asyncpg.connect(plain_url(database_url))
        try:
            found = {}
            for table in table_names():
                where = " OR ".join(f"t::text LIKE '%' || ${i + 1} || '%'" for i in range(len(needles)))
                found[table] = await conn.fetchval(f"SELECT count(*) FROM {table} t WHERE {where}", *needles)
            return {t: n for t, n in found.items() if n}
        finally:
            await conn.close()

    return asyncio.run(count())


def test_a_guest_who_agreed_got_a_pack_and_sent_delete_leaves_nothing_behind(stack: Stack) -> None:
    """Issue 11 "Done when": consent, a delivered pack, then /delete: no row or blob names the guest and
    their set is deleted in Telegram (the simulator)."""
    user_id = 7358261049  # a real-sized Telegram id: its digits do not turn up by chance in a timestamp
    photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
    result = play(stack.ingest_url, stack.sim_url, photo, user_id=user_id, timeout_s=180)
    assert result.status == "delivered" and result.set_name is not None, result
    with httpx.Client(base_url=stack.ingest_url, timeout=10) as kiosk:
        assert kiosk.get(f"/sessions/{result.session_id}").json()["consent"] is not None
    needles = [str(user_id), str(result.job_id), result.session_id, result.set_name]
    assert _rows_naming(stack.config.database_url, needles)  # the guest is in the database now

    with httpx.Client(base_url=stack.sim_url, timeout=30) as sim:
        said = {"text": "/delete", "first_name": "Guest", "language_code": "en"}
        sim.post(f"/sim/users/{user_id}/messages", json=said).raise_for_status()

        def prompt() -> dict[str, Any] | None:
            mine = [m for m in chat_messages(sim, user_id) if (m.get("from") or {}).get("is_bot")]
            return next((m for m in mine if asks_to_erase(m)), None)

        def asks_to_erase(message: dict[str, Any]) -> bool:  # the link message has a URL button too
            rows = (message.get("reply_markup") or {}).get("inline_keyboard", [])
            return any(button.get("callback_data") == "erase:yes" for row in rows for button in row)

        asked = wait_until(prompt, 30, "the /delete prompt")
        press = {"user_id": user_id, "message_id": asked["message_id"], "data": "erase:yes"}
        sim.post("/sim/callbacks", json=press).raise_for_status()

        def set_gone() -> bool | None:
            return sim.get(f"/sim/sticker-sets/{result.set_name}").status_code == 404 or None

        wait_until(set_gone, 60, "the sticker set to be deleted in Telegram")

        def deleted_said() -> bool | None:
            mine = [m for m in chat_messages(sim, user_id) if m["message_id"] == asked["message_id"]]
            return any(m.get("text", "").startswith("Deleted") for m in mine) or None

        wait_until(deleted_said, 30, "the prompt to say Deleted")

    def nothing_left() -> bool | None:  # the finished set deletion is purged by the gateway's next duty
        return not _rows_naming(stack.config.database_url, needles) or None

    wait_until(nothing_left, 60, "no row naming the guest")
