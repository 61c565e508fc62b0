"""Leads across the real processes (simulator, ingest, leads, gateway, worker, delivery):

- leads submitted while the leads service and the gateway are down are all published, once each, when
  they start (with a double submit and a repeat among them);
- a button press edits the card in place and is answered;
- a card whose send was delivered but never answered is found, not sent twice;
- faults on the leads side (service down, its update stream poisoned) leave the guest journey working,
  and faults on the guest side (worker and delivery killed, the jobs stream poisoned) leave leads working;
- a 429 with ``retry_after`` 120 on a lead card delays only the leads chat: a guest's journey meanwhile
  ends with their link in the usual time (python-telegram-bot's AIORateLimiter made every call wait);
- the embeddable landing script, run by Node against ingest, retries with the same ``requestId``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import redis

from devstack.journey import LINK, bot_texts, chat_messages, play
from devstack.processes import Stack
from telegram_gateway.leads_updates import TRY_AGAIN

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "photos"
REPO = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "e2e-admin-token-0123456789abcdef"
STAFF = 3001
EXTRA_ENV = {
    "BACKOFF_SEC": "1,1,1,1",
    "LATER_SEC": "2",
    "LEADS_PUBLISH_INTERVAL_SEC": "0.3",
    "LEADS_RESULT_TIMEOUT_SEC": "5",
    "ADMIN_TOKEN": ADMIN_TOKEN,
    "LEADS_RATE_LIMIT": "1000",  # every test visitor comes from 127.0.0.1
}
T = TypeVar("T")


@pytest.fixture(scope="module")
def stack(namespace: Any) -> Iterator[Stack]:
    with namespace.running_stack("sb_e2e_leads", extra_env=EXTRA_ENV) as s:
        yield s


def wait_for(predicate: Callable[[], T | None], what: str, timeout_s: float = 60.0) -> T:
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def submit(stack: Stack, request_id: str, contact: str, **fields: str) -> httpx.Response:
    body = {
        "requestId": request_id,
        "name": "Visitor",
        "contact": contact,
        "message": "Booth please",
        "consent": True,
        **fields,
    }
    return stack.http.post(f"{stack.ingest_url}/leads", json=body)


def admin_leads(stack: Stack) -> dict[int, dict[str, Any]]:
    response = stack.http.get(
        f"{stack.ingest_url}/admin/leads", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}
    )
    return {row["number"]: row for row in response.raise_for_status().json()["leads"]}


def group(stack: Stack) -> list[dict[str, Any]]:
    return [m for m in chat_messages(stack.sim_http, stack.config.leads_chat_id) if m["from_bot"]]


def cards_of(stack: Stack, number: int) -> list[dict[str, Any]]:
    return [m for m in group(stack) if (m.get("text") or "").startswith(f"Lead #{number}\n")]


def test_leads_sent_while_leads_and_gateway_are_down_are_published_once_each_when_they_start(
    stack: Stack,
) -> None:
    stack.stop("leads")
    stack.stop("telegram-gateway")
    with ThreadPoolExecutor(4) as pool:
        doubled = list(pool.map(lambda _: submit(stack, "e2e-down-0000", "+7 999 100-00-00"), range(4)))
    singles = [submit(stack, f"e2e-down-000{i}", f"+7 999 100-00-0{i}") for i in range(1, 4)]
    repeat = submit(stack, "e2e-down-0009", "8 999 100 00 00", message="Me again")
    assert sorted(r.status_code for r in doubled) == [200, 200, 200, 201]
    assert all(r.status_code == 201 for r in singles) and repeat.json()["repeat"] is True
    numbers = [doubled[0].json()["lead_number"], *(r.json()["lead_number"] for r in singles)]
    assert repeat.json()["lead_number"] == numbers[0]
    assert group(stack) == []
    stack.start("leads")
    stack.start("telegram-gateway")
    stack.wait_healthy()
    wait_for(lambda: all(r["card"]["state"] == "posted" for r in admin_leads(stack).values()), "the cards")
    wait_for(lambda: any("wrote again" in (m.get("text") or "") for m in group(stack)), "the repeat notice")
    time.sleep(2)  # anything sent twice would show up by now
    assert [len(cards_of(stack, n)) for n in numbers] == [1, 1, 1, 1]
    (notice,) = [m for m in group(stack) if "wrote again" in (m.get("text") or "")]
    assert notice["reply_to_message_id"] == cards_of(stack, numbers[0])[0]["message_id"]


def test_a_button_press_edits_the_card_in_place_and_is_answered(stack: Stack) -> None:
    number = submit(stack, "e2e-button-01", "@button_lead").json()["lead_number"]
    card = wait_for(lambda: cards_of(stack, number), "the card")[0]
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        press = {"user_id": STAFF, "chat_id": stack.config.leads_chat_id, "message_id": card["message_id"]}
        callback = sim.post("/sim/callbacks", json={**press, "data": f"stickers_lead:{number}:take"}).json()
        answer = wait_for(
            lambda: (
                (body := sim.get(f"/sim/callbacks/{callback['id']}").json())["answered"] and body["answer"]
            ),
            "the answer",
        )
    assert answer["text"] == f"You took lead #{number}."
    edited = wait_for(
        lambda: "Taken by" in cards_of(stack, number)[0]["text"] and cards_of(stack, number), "edit"
    )
    assert len(edited) == 1 and edited[0]["message_id"] == card["message_id"]
    assert admin_leads(stack)[number]["status"] == "taken"


def test_a_card_delivered_but_never_answered_is_found_not_sent_twice(stack: Stack) -> None:
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        sim.post("/sim/faults", json={"method": "sendMessage", "kind": "drop_after_apply"}).raise_for_status()
    number = submit(stack, "e2e-dropped-01", "dropped@example.com").json()["lead_number"]
    row = wait_for(lambda: (r := admin_leads(stack)[number])["card"]["state"] == "posted" and r, "posted")
    assert row["card"]["attempts"] == 1  # never sent a second time...
    (card,) = cards_of(stack, number)
    assert card["message_id"] == row["card"]["message_id"]
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        assert sim.get("/sim/calls?method=editMessageReplyMarkup").json()  # ...but searched for


def test_leads_faults_never_reach_the_guest_journey(stack: Stack) -> None:
    number = submit(stack, "e2e-iso-lead-1", "+7 999 200-00-00").json()["lead_number"]
    card = wait_for(lambda: cards_of(stack, number), "the card")[0]
    stack.stop("leads")
    r = redis.Redis.from_url(stack.config.redis_url)
    r.delete("tg:updates:leads")
    r.set("tg:updates:leads", "poisoned")
    try:
        with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
            press = {
                "user_id": STAFF,
                "chat_id": stack.config.leads_chat_id,
                "message_id": card["message_id"],
            }
            callback = sim.post(
                "/sim/callbacks", json={**press, "data": f"stickers_lead:{number}:spam"}
            ).json()
            answered = wait_for(
                lambda: (body := sim.get(f"/sim/callbacks/{callback['id']}").json())["answered"] and body,
                "a polite answer",
            )
            assert answered["answer"]["text"] == TRY_AGAIN
        photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
        result = play(stack.ingest_url, stack.sim_url, photo, user_id=5101, timeout_s=120)
        assert result.status == "delivered"
        assert sum(bool(LINK.search(t)) for t in bot_texts(result.chat)) == 1
    finally:
        r.delete("tg:updates:leads")
        stack.start("leads")
        stack.wait_healthy()


def test_guest_faults_never_reach_the_leads(stack: Stack) -> None:
    stack.kill("worker")
    stack.kill("delivery")
    r = redis.Redis.from_url(stack.config.redis_url)
    r.delete("stk:jobs")
    r.set("stk:jobs", "poisoned")
    try:
        number = submit(stack, "e2e-iso-lead-2", "+7 999 300-00-00").json()["lead_number"]
        wait_for(lambda: cards_of(stack, number), "the card while the guest side is broken")
    finally:
        r.delete("stk:jobs")
        stack.start("worker")
        stack.start("delivery")
        stack.wait_healthy()


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_landing_script_retries_with_the_same_request_id_against_ingest(stack: Stack) -> None:
    script = str(resources.files("ingest") / "static" / "leads.js")
    program = """
      const leads = require(process.argv[1]);
      const endpoint = process.argv[2] + "/leads";
      const payload = {requestId: "e2e-node-0001", name: "Node", contact: "node@example.com", consent: true};
      (async () => {
        const first = await leads.submitLead(endpoint, payload);
        const again = await leads.submitLead(endpoint, payload);
        console.log(JSON.stringify([first, again]));
      })();
    """
    node = shutil.which("node") or "node"
    done = subprocess.run(
        [node, "-e", program, script, stack.ingest_url], capture_output=True, text=True, timeout=30
    )
    first, again = json.loads(done.stdout)
    assert first["ok"] and again["ok"] and first["number"] == again["number"]
    wait_for(lambda: cards_of(stack, first["number"]), "the landing lead's card")


def test_a_long_flood_wait_on_a_lead_card_leaves_the_guest_journey_at_full_speed(stack: Stack) -> None:
    """Last in the module: the leads chat is paused for 120 s (then the card is posted, once)."""
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        since = max((c["seq"] for c in sim.get("/sim/calls").json()), default=0)
        fault = {"method": "sendMessage", "error_code": 429, "retry_after": 120}
        sim.post("/sim/faults", json=fault).raise_for_status()
        number = submit(stack, "e2e-flood-lead-1", "+7 999 400-00-00").json()["lead_number"]

        def flooded() -> list[dict[str, Any]]:
            calls = sim.get(f"/sim/calls?method=sendMessage&since={since}").json()
            return [c for c in calls if c["error_code"] == 429]

        (hit,) = wait_for(flooded, "the card's 429")
        assert int(hit["params"]["chat_id"]) == stack.config.leads_chat_id
        photo = (PHOTOS / "face-woman-red-hat.png").read_bytes()
        result = play(stack.ingest_url, stack.sim_url, photo, user_id=5201, timeout_s=100)
        assert result.status == "delivered"  # well inside the card's 120 s wait
        assert sum(bool(LINK.search(t)) for t in bot_texts(result.chat)) == 1
        assert cards_of(stack, number) == []  # the leads chat still waits Telegram's retry_after
        wait_for(lambda: cards_of(stack, number), "the card after retry_after", timeout_s=150)
        to_group = [
            c["ok"]
            for c in sim.get(f"/sim/calls?method=sendMessage&since={since}").json()
            if int(c["params"]["chat_id"]) == stack.config.leads_chat_id
        ]
        assert to_group == [False, True] and len(cards_of(stack, number)) == 1
