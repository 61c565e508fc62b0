"""The builders of ``tg_commands.command_id``: one per intent, and nothing that reads an id.

A command id is the idempotency key of one intent (DESIGN.md §3, §7): the gateway executes an id at most
once, so an id names exactly the intent it belongs to; every service builds ids here, never with its own
format string. Nothing parses an id (issue 21): what a command is about travels as its typed subject
(:mod:`shared.subjects`), stored with the row and echoed in its result, and a producer finds its commands
by subject. A flood wait never makes a new id: the gateway sends the same row later.

| id | who asks | number |
|---|---|---|
| ``job:<job uuid>:generating`` | ingest: "Generating…" | — |
| ``job:<job uuid>:unavailable:<run>`` | worker: "your photo is saved" during a pause | run |
| ``job:<job uuid>:still_working:<run>`` | delivery: the 5-minute delay notice | run |
| ``job:<job uuid>:failure_text:<run>`` | worker, delivery: the guest's one failure text | run |
| ``job:<job uuid>:create_set`` | delivery: create the sticker set | — |
| ``job:<job uuid>:poll:<n>`` | delivery: readiness poll ``n`` | poll |
| ``job:<job uuid>:link[:<n>]`` | delivery: the link message, attempt ``n`` ≥ 2 after a failure | attempt |
| ``job:<job uuid>:resend_link:<n>`` | ingest: the admin page's "Resend link", press ``n`` | press |
| ``job:<job uuid>:preview`` | delivery: one sticker of the set, after the link | — |
| ``job:<job uuid>:find_link:<n>`` | delivery: look for link attempt ``n`` of unknown outcome | attempt |
| ``lead:<id>:card:<n>`` / ``repeat:<id>:notice:<n>`` | leads: send the post, attempt ``n`` | attempt |
| ``lead:<id>:find:<n>`` / ``repeat:<id>:find:<n>`` | leads: search for the post, probe ``n`` | probe |
| ``lead:<id>:edit:<n>`` | leads: the card edited to status version ``n`` | version |
| ``repeat:<id>:seen`` | leads: the notice edited to "seen by" | — |
| ``cbq:<callback query id>`` | leads: the answer to a button press | — |
| ``update:<update_id>`` | gateway: its one reply to a private message | — |
| ``session:<session uuid>:unlinked:<µs>`` | ingest: "not you?" tells the unlinked user once | link |
| ``digest:[<event id>:]<YYYY-MM-DD>`` | delivery: an event's digest (no event id: the default one) | — |
| ``alert:<16 hex of sha1(key)>:<ns>`` | an admin alert (:mod:`shared.alerts`) | — |
| ``erase_set:<16 hex of sha1(set name)>[:<n>]`` | erasure: delete a sticker set, attempt ``n`` ≥ 2 | n |
| ``erase_post:<chat id>:<message id>`` | erasure: blank an erased lead's card or notice | — |

``run`` is the job run's ``created_at`` in whole epoch seconds: an admin retry resets ``created_at``, so a
retried run tells the guest again.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta
from uuid import UUID

from shared.repositories.lead_posts import CARD, NOTICE

__all__ = [
    "alert",
    "bound_us",
    "callback_answer",
    "create_set",
    "delay_notice",
    "digest",
    "erase_post",
    "erase_set",
    "failure_text",
    "find_link",
    "find_post",
    "generating_notice",
    "lead_card_edit",
    "link",
    "name_hash",
    "poll",
    "preview",
    "repeat_notice_seen",
    "resend_link",
    "run",
    "send_post",
    "unavailable_notice",
    "unlink_notice",
    "update_reply",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_PREFIX = {CARD: "lead", NOTICE: "repeat"}
_SEND_OP = {CARD: "card", NOTICE: "notice"}


def run(created_at: datetime) -> int:
    """A job run's number in ids and subjects: its ``created_at`` in whole epoch seconds."""
    return int(created_at.timestamp())


def bound_us(bound_at: datetime) -> int:
    """A session's link in ids and subjects: its ``bound_at`` in whole µs since the epoch."""
    return (bound_at - _EPOCH) // _MICROSECOND


def name_hash(text: str) -> str:
    """16 hex of sha1(``text``): how an id or a subject names a sticker set or an alert key."""
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def generating_notice(job_id: UUID) -> str:
    return f"job:{job_id}:generating"


def unavailable_notice(job_id: UUID, created_at: datetime) -> str:
    return f"job:{job_id}:unavailable:{run(created_at)}"


def delay_notice(job_id: UUID, created_at: datetime) -> str:
    return f"job:{job_id}:still_working:{run(created_at)}"


def failure_text(job_id: UUID, created_at: datetime) -> str:
    """The one failure text of a job run: whatever fails it, the guest gets one failure message."""
    return f"job:{job_id}:failure_text:{run(created_at)}"


def create_set(job_id: UUID) -> str:
    """The job's sticker set: one command (a flood wait defers it, a refusal fails the job)."""
    return f"job:{job_id}:create_set"


def poll(job_id: UUID, n: int) -> str:
    return f"job:{job_id}:poll:{n}"


def link(job_id: UUID, attempt: int = 1) -> str:
    """Attempt ``attempt`` (1-based) at the link message (a next one only after a failed send)."""
    return f"job:{job_id}:link" + (f":{attempt}" if attempt > 1 else "")


def resend_link(job_id: UUID, press: int) -> str:
    """Press ``press`` (1-based) of the admin page's "Resend link": a new id per press (subject step
    ``resend_link``, so delivery never counts a resend as one of its link attempts)."""
    return f"job:{job_id}:resend_link:{press}"


def preview(job_id: UUID) -> str:
    """The one preview sticker of a job's set, sent after its link message (one per job, never repeated:
    an admin resend of the link does not send it again)."""
    return f"job:{job_id}:preview"


def find_link(job_id: UUID, attempt: int) -> str:
    """The search for link attempt ``attempt`` (1-based) in the guest's chat, after its outcome was unknown
    (issue 19); subject step ``find_link``, so it is never counted as a link attempt."""
    return f"job:{job_id}:find_link:{attempt}"


def send_post(kind: str, post_id: int, attempt: int) -> str:
    """Send attempt ``attempt`` of a card (``kind`` ``card``) or repeat notice (``notice``)."""
    return f"{_PREFIX[kind]}:{post_id}:{_SEND_OP[kind]}:{attempt}"


def find_post(kind: str, post_id: int, probe: int) -> str:
    return f"{_PREFIX[kind]}:{post_id}:find:{probe}"


def lead_card_edit(lead_id: int, status_version: int) -> str:
    return f"lead:{lead_id}:edit:{status_version}"


def repeat_notice_seen(repeat_id: int) -> str:
    return f"repeat:{repeat_id}:seen"


def callback_answer(callback_query_id: str) -> str:
    return f"cbq:{callback_query_id}"


def update_reply(update_id: int) -> str:
    return f"update:{update_id}"


def unlink_notice(session_id: UUID, bound_at: datetime) -> str:
    """The one notice to the user unlinked from session ``session_id`` by the kiosk's "not you?": one per
    link (``bound_at``, the binding it undid, in whole µs since the epoch), so a second tap sends nothing
    and a later guest unlinked from the same session is told too."""
    return f"session:{session_id}:unlinked:{bound_us(bound_at)}"


def digest(day: date, event_id: str | None = None) -> str:
    """The daily digest sent on local day ``day`` (about the day before) of event ``event_id``; ``None``:
    the default event, whose id is the digest's id from before events (an upgrade mid-day sends nothing
    twice). Event ids never hold ``:``, so the two forms cannot meet."""
    return f"digest:{day.isoformat()}" if event_id is None else f"digest:{event_id}:{day.isoformat()}"


def alert(key: str, at_ns: int) -> str:
    """An alert raised at ``at_ns`` (``time.time_ns()``); the key is hashed, it may hold any text."""
    return f"alert:{name_hash(key)}:{at_ns}"


def erase_set(set_name: str, attempt: int = 1) -> str:
    """Attempt ``attempt`` (1-based) at deleting sticker set ``set_name`` of an erased guest (issue 11; a
    next one only after a set of that name was created again). The name is hashed: the id names no job."""
    return f"erase_set:{name_hash(set_name)}" + (f":{attempt}" if attempt > 1 else "")


def erase_post(chat_id: int, message_id: int) -> str:
    """Blanking the staff-group message ``message_id`` of ``chat_id`` (a card or repeat notice) that showed
    an erased lead (issue 19); no answer is routed back."""
    return f"erase_post:{chat_id}:{message_id}"
