"""The whole product in webhook mode (``TELEGRAM_UPDATES=webhook``, issue 22): the simulated Telegram POSTs
every update to the gateway's route (as Telegram does, with the secret header), the gateway stores it
and handles it, and a guest's selfie still becomes one link to a pack of 12 stickers; getUpdates is never
called, and a forged POST to the route is refused without a trace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from devstack.journey import LINK, bot_texts, play
from devstack.processes import DEV_WEBHOOK_URL, Stack
from tests.e2e.test_guest_journey import PHOTOS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def stack(namespace: Any) -> Iterator[Stack]:
    with namespace.running_stack("sb_e2e_webhook", extra_env={}, updates="webhook") as s:
        yield s


def test_a_guest_gets_their_pack_with_updates_by_webhook(stack: Stack) -> None:
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        info = sim.get("/bot" + stack.config.bot_token + "/getWebhookInfo").json()["result"]
        assert info["url"] == DEV_WEBHOOK_URL
        route = f"http://127.0.0.1:{stack.config.webhook_port}/telegram/webhook"
        forged = httpx.post(route, json={"update_id": 1, "message": {}}, timeout=10)
        assert (forged.status_code, forged.json()["error"]["code"]) == (401, "bad_secret")

        result = play(
            stack.ingest_url,
            stack.sim_url,
            (PHOTOS / "face-woman-red-hat.png").read_bytes(),
            user_id=5101,
            timeout_s=180,
        )
        assert result.status == "delivered", result
        assert sum(bool(LINK.search(t)) for t in bot_texts(result.chat)) == 1
        calls = sim.get("/sim/calls", params={"method": "getUpdates"}).json()
        assert calls == []  # every update came by webhook
