"""The faults a chaos run injects, each in the wire shape of the outside world, and what a guest should see.

Each kind: how it is injected → the expected guest outcome.

- ``kill:<service>``: SIGKILL, started again 0.2–1.5 s later → delivered; ``kill:worker`` may fail a job
  killed twice (class ``crashed``, the generic text, ``MAX_ATTEMPTS`` 2): designed, at most ``WORKER_SLOTS``
  jobs per kill.
- ``redis_restart``: Redis restarted empty → delivered.
- ``postgres_restart``: Postgres stopped and started → delivered; no service exits by itself (an exit
  counts as unexpected). A guest whose Start comes while it is down is told "busy, press Start again"
  and does (also under ``postgres:two-outages``).
- ``tg:429-short:send-private``: 429 ``retry_after`` 3 on ``sendMessage`` to one guest's chat, a flood hold
  → delivered.
- ``tg:429-long:send-private``: 429 ``retry_after`` ``LONG_HOLD_S`` (120 s, above the gateway's 30 s
  bound, so the gateway defers the command to the end of the wait) on one guest's chat → that guest
  delivered after the wait (their reply to Start is sent when it ends, issue 21); no other guest delayed.
- ``tg:429-short:send-group`` / ``tg:429-long:send-group``: 429 ``retry_after`` 5 / 120 on
  ``sendMessage`` to the leads group → every card once, after the wait; guests undisturbed.
- ``tg:429-short:upload`` / ``tg:429-long:upload``: 429 ``retry_after`` 3 / 120 on ``uploadStickerFile``
  for one guest → delivered.
- ``tg:429-short:create`` / ``tg:429-long:create``: the same on that guest's ``createNewStickerSet`` →
  delivered; no other guest's set waits (the gateway pauses that user's sticker calls only).
- ``tg:413:create``: 413 on every ``createNewStickerSet`` of 12 stickers for one guest (a smaller one
  passes) → delivered through a smaller create plus ``addStickerToSet``, one set.
- ``tg:5xx``: 502 on ``sendMessage`` or 500 on ``createNewStickerSet`` for one guest → delivered.
- ``tg:drop``: ``sendMessage`` to one guest, connection closed, nothing applied → delivered (the message
  lost is their "linked" reply: at most once).
- ``tg:drop-after-apply``: ``sendMessage`` to one guest applied, then the connection closed (timed out but
  delivered) → delivered, no message twice.
- ``tg:slow-after-apply``: ``createNewStickerSet`` for one guest applied, answered after 20 s (past the
  client's time-out) → delivered, one set.
- ``tg:link-lost-before``: the guest's link message (``text_contains`` the set link) dropped before
  Telegram applied it, or answered 500 without applying → delivered, the link exactly once (issue 19).
- ``tg:link-lost-after``: the link message applied, then the connection dropped or a 500 answered →
  delivered, the link exactly once (found in the chat, not sent again).
- ``tg:hold-past-deadline:link``: a flood hold of ``LONG_HOLD_S`` on the guest's chat from their link
  message on, and the run moves the job's photo back by the deadline (:data:`DEADLINE_SHIFT_S`) while the
  link waits, so the hold outlasts the time left → delivered late with "sorry for the wait", never
  "something went wrong".
- ``tg:burst``: a Telegram user (not a guest) sends :data:`BURST_MESSAGES` messages at once (each reply
  paced 1 s by their chat) → no guest's Start answer waits for them (``ANSWER_BOUND_S``).
- ``ai:content-during-outage``: Gemini overloaded and OpenAI's ``moderation_blocked`` on the same job →
  the ``content_refused`` text (designed) or delivered; the booth is never auto-paused for it (an auto
  pause whose reason no injected fault explains is let down; mend on another branch).
- ``kiosk:slow-uplink``: one kiosk uploads its photo at :data:`SLOW_UPLINK_BPS` → delivered (mend of the
  kiosk's upload on another branch).
- ``postgres:two-outages``: Postgres stopped :data:`PG_OUTAGE_S` twice with a short gap (within one render)
  → delivered, never ``crashed`` (mend of the worker on another branch).
- ``ai:rate_limit``: Gemini 429 with ``RetryInfo.retryDelay`` 2 s → delivered.
- ``ai:quota_day``: Gemini 429 on a per-day quota → delivered (OpenAI serves).
- ``ai:credit``: both providers out of credit, in turn 402, the credit texts (``prepayment credits are
  depleted`` / ``insufficient_quota``) and ``billing_hard_limit_reached`` → "unavailable, your photo is
  saved", the run's admin ``/resume`` 5 s later, then delivered.
- ``ai:auth``: both providers reject the key (Gemini ``API_KEY_INVALID``, OpenAI 401) → as ``ai:credit``.
- ``ai:overloaded``: Gemini 503 "The model is overloaded" → delivered (OpenAI serves).
- ``ai:content``: Gemini's safety block and OpenAI's ``moderation_blocked`` on one photo → the
  ``content_refused`` text (designed), or delivered when a later call served.
- ``ai:timeout``: Gemini answers after 25 s, past ``AI_TIMEOUT_SEC`` 15 s → delivered.
- ``ai:not_image``: Gemini answers 200 without an image → delivered (retried).
- ``photo:cmyk|16bit|alpha|heic``: a kiosk uploads a CMYK JPEG, a 16-bit PNG, a PNG with alpha, a HEIC
  with a face → delivered.
- ``photo:no_face:welder|pug_heic``: the welder (16-bit PNG), the pug (HEIC) → 422 ``no_face`` at the
  upload (designed), or the ``no_face`` text.
- ``kiosk:burst20``: 20 kiosks upload at the same moment, the hard photos among them → every guest as
  above; ingest does not exit.

Today's gateway sends the 12 stickers inline with ``createNewStickerSet``, so ``uploadStickerFile`` is
only called if delivery starts using it (e.g. the 413 fallback): until then the ``tg:429-*:upload`` faults
stay queued and the run lists them under "faults queued but never met".

AI faults go to whichever job calls next; the ledger tags a guest with the AI kind its job met from its
``api_usage`` outcomes (:data:`AI_OUTCOME_KIND`). Flood holds run their whole ``retry_after`` (the run
never lifts one: the gateway keeps Telegram's word, so an early lift would be a simulator contradicting
itself). Waits of hours are therefore not played here — their guest outcome is Telegram's to decide, past
any run's end — but by the gateway, delivery and leads tests: the gateway defers the command's row to
``retry_after`` and delays nothing else.
"""

from __future__ import annotations

from devstack.chaos.ledger import FaultKind
from devstack.processes import SERVICES

WORKER_SLOTS = 2
#: The run's provider chain (the worker's defaults ``PRIMARY_AI_PROVIDER`` / ``FALLBACK_AI_PROVIDER``): a
#: fault queued for the fallback is only met by a call the primary failed.
PRIMARY_PROVIDER = "gemini"
#: A long flood wait (s): above the gateway's ``TELEGRAM_FLOOD_WAIT_MAX_SEC`` (30), within every deadline.
LONG_HOLD_S = 120
#: ``tg:hold-past-deadline:link``: how far the run moves a held job's photo back (s): the 15-minute deadline
#: (``DELIVERY_DEADLINE_SEC``) then passes during the ``LONG_HOLD_S`` hold without a 15-minute run.
DEADLINE_SHIFT_S = 15 * 60 - 30
#: The set link in the link message's text: what the link faults aim at (``text_contains``).
LINK_TEXT = "t.me/addstickers/"
#: ``tg:burst``: messages one user sends at once; more than ``ANSWER_BOUND_S`` (60) at the 1 reply/s of
#: their chat, so a burst that held every other guest's Start for its length shows in the ledger.
BURST_MESSAGES = 80
BURST_USER = 880_000
#: ``kiosk:slow-uplink``: bytes per second of the kiosk's upload (about 200 kbit/s, issue 19).
SLOW_UPLINK_BPS = 25_000
#: ``postgres:two-outages``: each outage (s), and the gap between them (issue 19: two of 35 s in one render).
PG_OUTAGE_S = 35.0
PG_OUTAGE_GAP_S = 5.0

STACK_KINDS = (
    *(f"kill:{s}" for s in SERVICES),
    "redis_restart",
    "postgres_restart",
    "postgres:two-outages",
)
GUEST_TG_KINDS = (
    "tg:429-short:send-private",
    "tg:429-long:send-private",
    "tg:429-short:upload",
    "tg:429-long:upload",
    "tg:429-short:create",
    "tg:429-long:create",
    "tg:413:create",
    "tg:5xx",
    "tg:drop",
    "tg:drop-after-apply",
    "tg:slow-after-apply",
    "tg:link-lost-before",
    "tg:link-lost-after",
    "tg:hold-past-deadline:link",
)
#: Faults of the outside world aimed at no guest: a chatty Telegram user.
USER_TG_KINDS = ("tg:burst",)
GROUP_TG_KINDS = ("tg:429-short:send-group", "tg:429-long:send-group")
AI_KINDS = (
    "ai:rate_limit",
    "ai:quota_day",
    "ai:credit",
    "ai:auth",
    "ai:overloaded",
    "ai:content",
    "ai:timeout",
    "ai:not_image",
    "ai:content-during-outage",
)
PHOTO_KINDS = (
    "photo:cmyk",
    "photo:16bit",
    "photo:alpha",
    "photo:heic",
    "photo:no_face:welder",
    "photo:no_face:pug_heic",
)
BURST = "kiosk:burst20"
SLOW_UPLINK = "kiosk:slow-uplink"
#: ``api_usage.outcome`` (the worker's error class) → the AI fault kind that produces it.
AI_OUTCOME_KIND = {
    "rate_limit": "ai:rate_limit",
    "quota_day": "ai:quota_day",
    "credit": "ai:credit",
    "auth": "ai:auth",
    "outage": "ai:overloaded",
    "content": "ai:content",
    "timeout": "ai:timeout",
    "invalid": "ai:not_image",
}


def _kind(name: str) -> FaultKind:
    if name == "kill:worker":
        return FaultKind(name, "delivered or crashed", frozenset({"crashed"}), per_fault=WORKER_SLOTS)
    if name in ("ai:credit", "ai:auth"):
        reason = name.removeprefix("ai:")  # the auto pause's reason: the worker's error class
        return FaultKind(name, "unavailable, then delivered", pauses=True, pause_reasons=frozenset({reason}))
    if name in ("tg:429-short:send-private", "tg:429-long:send-private", "tg:5xx", "tg:drop"):
        return FaultKind(name, "delivered", holds_reply=True)
    if name in ("ai:content", "ai:content-during-outage"):
        return FaultKind(name, "content_refused or delivered", frozenset({"content"}))
    if name in ("postgres_restart", "postgres:two-outages"):
        return FaultKind(name, "delivered (a Start during the outage: busy, Start again)", store_busy=True)
    if name == "tg:hold-past-deadline:link":
        return FaultKind(name, "delivered late, with sorry for the wait")
    return FaultKind(name, "delivered")


KINDS: dict[str, FaultKind] = {
    k: _kind(k)
    for k in (
        *STACK_KINDS,
        *GUEST_TG_KINDS,
        *USER_TG_KINDS,
        *GROUP_TG_KINDS,
        *AI_KINDS,
        *PHOTO_KINDS,
        BURST,
        SLOW_UPLINK,
    )
}


def guest_tg_faults(kind: str, user_id: int, occurrence: int) -> list[dict[str, object]]:
    """``POST /sim/faults`` bodies of a Telegram fault aimed at guest ``user_id`` (their private chat is
    ``user_id``; the sticker calls carry it as ``user_id``)."""
    hold = {"error_code": 429, "hold": True, "chat_id": user_id}
    if kind.startswith("tg:429-"):
        seconds = LONG_HOLD_S if "-long:" in kind else 3
        method = {
            "send-private": "sendMessage",
            "upload": "uploadStickerFile",
            "create": "createNewStickerSet",
        }[kind.rsplit(":", 1)[1]]
        return [{"method": method, "retry_after": seconds, **hold}]
    if kind == "tg:413:create":
        return [
            {
                "method": "createNewStickerSet",
                "error_code": 413,
                "description": "Request Entity Too Large",
                "count": 1000,
                "min_stickers": 12,
                "chat_id": user_id,
            }
        ]
    if kind == "tg:5xx":
        if occurrence % 2:
            return [{"method": "createNewStickerSet", "error_code": 500, "chat_id": user_id}]
        return [
            {"method": "sendMessage", "error_code": 502, "description": "Bad Gateway", "chat_id": user_id}
        ]
    if kind == "tg:drop":
        return [{"method": "sendMessage", "kind": "drop", "chat_id": user_id}]
    if kind == "tg:drop-after-apply":
        return [{"method": "sendMessage", "kind": "drop_after_apply", "chat_id": user_id}]
    link = {"method": "sendMessage", "chat_id": user_id, "text_contains": LINK_TEXT}
    if kind == "tg:link-lost-before":
        return [{**link, "kind": "drop"} if occurrence % 2 == 0 else {**link, "error_code": 500}]
    if kind == "tg:link-lost-after":
        if occurrence % 2 == 0:
            return [{**link, "kind": "drop_after_apply"}]
        return [{**link, "kind": "error_after_apply", "error_code": 500}]
    if kind == "tg:hold-past-deadline:link":
        return [{**link, "retry_after": LONG_HOLD_S, **hold}]
    if kind == "tg:slow-after-apply":
        return [
            {"method": "createNewStickerSet", "kind": "delay_after_apply", "seconds": 20, "chat_id": user_id}
        ]
    raise ValueError(kind)


def group_tg_faults(kind: str, leads_chat_id: int) -> list[dict[str, object]]:
    """``POST /sim/faults`` bodies of a flood hold on the leads group."""
    seconds = LONG_HOLD_S if kind == "tg:429-long:send-group" else 5
    return [
        {
            "method": "sendMessage",
            "error_code": 429,
            "retry_after": seconds,
            "hold": True,
            "chat_id": leads_chat_id,
        }
    ]


def ai_faults(kind: str, occurrence: int) -> list[dict[str, object]]:
    """``POST /sim/faults`` bodies of the AI provider simulator for one injection of ``kind``."""
    if kind == "ai:rate_limit":
        return [{"kind": "rate_limit", "provider": "gemini", "retry_after_s": 2}]
    if kind == "ai:quota_day":
        return [{"kind": "quota_day", "provider": "gemini"}]
    if kind == "ai:credit":
        variant = ("payment_required", "credit", "billing_hard_limit")[occurrence % 3]
        return [{"kind": variant, "provider": "gemini"}, {"kind": variant, "provider": "openai"}]
    if kind == "ai:auth":
        return [{"kind": "auth", "provider": "gemini"}, {"kind": "auth", "provider": "openai"}]
    if kind == "ai:overloaded":
        return [{"kind": "overloaded", "provider": "gemini"}]
    if kind == "ai:content":
        return [{"kind": "safety", "provider": "gemini"}, {"kind": "safety", "provider": "openai"}]
    if kind == "ai:timeout":
        return [{"kind": "timeout", "provider": "gemini", "delay_s": 25}]
    if kind == "ai:not_image":
        return [{"kind": "no_image", "provider": "gemini", "call": "image"}]
    if kind == "ai:content-during-outage":
        return [{"kind": "overloaded", "provider": "gemini"}, {"kind": "safety", "provider": "openai"}]
    raise ValueError(kind)
