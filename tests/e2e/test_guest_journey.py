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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from PIL import Image

from devstack.infra import Infra
from devstack.journey import LINK, bot_texts, chat_messages, consent, download_set, play, start_session
from devstack.processes import Stack, running_stack

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
EXTRA_ENV: dict[str, str] = {}


@pytest.fixture(scope="module")
def stack(infra: Infra, namespace: Any) -> Iterator[Stack]:
    with running_stack(
        postgres_url=infra.postgres_url,
        database=namespace.database("sb_e2e"),
        redis_url=namespace.redis_url(1),
        extra_env=EXTRA_ENV,
    ) as s:
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
    stickers = download_set(stack.sim_url, result.set_name)
    assert len(stickers) == 12
    for png in stickers:
        assert_valid_sticker(png)


def _job_status(stack: Stack, session_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{stack.ingest_url}/sessions/{session_id}", timeout=10).json()
    return body


def test_a_worker_killed_mid_job_still_gives_one_pack_and_one_link(stack: Stack) -> None:
    user_id = 5002
    with (
        httpx.Client(base_url=stack.ingest_url, timeout=60) as kiosk,
        httpx.Client(base_url=stack.sim_url) as sim,
    ):
        session = start_session(kiosk, sim, user_id=user_id)
        sid = session["id"]
        kiosk.put(f"/sessions/{sid}/outfit", json={"outfit_id": "pirate"}).raise_for_status()
        consent(kiosk, sid).raise_for_status()
        photo = (PHOTOS / "face-older-man-white-hair.jpg").read_bytes()
        kiosk.post(
            f"/sessions/{sid}/photo", files={"photo": ("p.jpg", photo)}, data={"capture_id": "k1"}
        ).raise_for_status()
        deadline = time.monotonic() + 60
        while _job_status(stack, sid)["jobs"][0]["status"] != "processing":
            assert time.monotonic() < deadline, "the job was never claimed"
            time.sleep(0.05)
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
        session = start_session(kiosk, sim, user_id=user_id)
        sid = session["id"]
        kiosk.put(f"/sessions/{sid}/outfit", json={"outfit_id": "chef"}).raise_for_status()
        consent(kiosk, sid).raise_for_status()
        photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
        kiosk.post(
            f"/sessions/{sid}/photo", files={"photo": ("p.png", photo)}, data={"capture_id": "t1"}
        ).raise_for_status()
        deadline = time.monotonic() + 60
        while _job_status(stack, sid)["jobs"][0]["status"] != "processing":
            assert time.monotonic() < deadline, "the job was never claimed"
            time.sleep(0.05)
        assert stack.stop("worker") == 0  # SIGTERM: graceful
        status = _job_status(stack, sid)["jobs"][0]["status"]
        assert status in ("rendered", "delivering", "delivered")  # finished inside the grace period
        stack.start("worker")
        deadline = time.monotonic() + 120
        while _job_status(stack, sid)["status"] != "delivered":
            assert time.monotonic() < deadline
            time.sleep(0.5)
        assert len([t for t in bot_texts(chat_messages(sim, user_id)) if LINK.search(t)]) == 1
