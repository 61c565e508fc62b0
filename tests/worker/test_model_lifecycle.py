"""Model lifecycle in the worker: a configured model that is unknown, unpriced or past its shutdown stops
the worker at start-up (exit 2, one line naming the setting); one within 30 days of its shutdown is alerted
to the admins through the admin-alert outbox, at most once a day (fixed clock)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, timedelta

import pytest
import redis.asyncio as aioredis

from shared.alerts import send_alert
from shared.repositories import Database
from shared.streams import Publisher
from tests.outbox_helpers import stored_texts
from worker.lifecycle import warn_model_shutdowns


@pytest.mark.unit
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"OPENAI_VISION_MODEL": "gpt-5-mimi"},
            "worker: invalid settings: OPENAI_VISION_MODEL: Value error, 'gpt-5-mimi' is not a known openai "
            "vision model",
        ),
        (
            {"GEMINI_IMAGE_MODEL": "gemini-3-pro-image"},
            "worker: invalid settings: GEMINI_IMAGE_MODEL: Value error, 'gemini-3-pro-image' has no sourced "
            "price",
        ),
        (
            {"OPENAI_IMAGE_MODEL": "gpt-image-1"},
            "worker: invalid settings: OPENAI_IMAGE_MODEL: Value error, 'gpt-image-1' was shut down on "
            "2026-10-23; use gpt-image-2.5-sunburst",
        ),
    ],
)
def test_the_worker_refuses_to_start_on_a_model_it_cannot_use(env: dict[str, str], expected: str) -> None:
    base = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/none",
        "REDIS_URL": "redis://127.0.0.1:1/0",
    }
    done = subprocess.run(
        [sys.executable, "-m", "worker"], env={**base, **env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), lines


MODELS = [
    ("OPENAI_VISION_MODEL", "openai", "gpt-5-mini", "vision"),  # shuts down on 2026-12-11
    ("GEMINI_VISION_MODEL", "gemini", "gemini-3.5-flash-lite", "vision"),  # no shutdown announced
]


@pytest.mark.integration
async def test_a_model_within_30_days_of_its_shutdown_is_alerted_once_a_day(
    db: Database, redis: aioredis.Redis
) -> None:
    publisher = Publisher(redis)

    async def alert(key: str, text: str, cooldown: timedelta) -> bool:
        return await send_alert(db, publisher, key=key, text=text, cooldown=cooldown)

    assert await warn_model_shutdowns(MODELS, alert, today=date(2026, 11, 10)) == []  # 31 days before
    assert await warn_model_shutdowns(MODELS, alert, today=date(2026, 12, 2)) == ["OPENAI_VISION_MODEL"]
    assert await warn_model_shutdowns(MODELS, alert, today=date(2026, 12, 2)) == []  # the same day: once
    texts = await stored_texts(db, "send_admin_message")
    assert len(texts) == 1
    assert "OPENAI_VISION_MODEL=gpt-5-mini shuts down on 2026-12-11 (in 9 days)" in texts[0]
    assert "gpt-6.1-terra" in texts[0]
