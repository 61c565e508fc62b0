"""The one grammar of ``tg_commands.command_id``: a builder for every id and the one parser.

A command id is the idempotency key of one intent (DESIGN.md §3, §7): the gateway executes an id at most
once, so an id names exactly the attempt it belongs to, and a result on ``tg:results:<service>`` is routed
back to its job or post by parsing its id. Every service builds and reads ids here, never with its own
format string or regex.

| id | who asks | number |
|---|---|---|
| ``job:<job uuid>:generating`` | ingest: "Generating…" | — |
| ``job:<job uuid>:unavailable:<run>`` | worker: "your photo is saved" during a pause | run |
| ``job:<job uuid>:still_working:<run>`` | delivery: the 5-minute delay notice | run |
| ``job:<job uuid>:failure_text:<run>`` | worker, delivery: the guest's one failure text | run |
| ``job:<job uuid>:create_set[:<n>]`` | delivery: create the sticker set, attempt ``n`` ≥ 2 | attempt |
| ``job:<job uuid>:poll:<n>`` | delivery: readiness poll ``n`` | poll |
| ``job:<job uuid>:link[:<n>]`` | delivery: the link message, attempt ``n`` ≥ 2 | attempt |
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
| ``digest:<YYYY-MM-DD>`` | the daily digest (UTC day) | — |
| ``alert:<16 hex of sha1(key)>:<ns>`` | an admin alert (:mod:`shared.alerts`) | — |
| ``erase_set:<16 hex of sha1(set name)>[:<n>]`` | erasure: delete a sticker set, ``n`` ≥ 2 | attempt |
| ``erase_post:<chat id>:<message id>`` | erasure: blank an erased lead's card or notice | — |

``run`` is the job run's ``created_at`` in whole epoch seconds: an admin retry resets ``created_at``, so a
retried run tells the guest again. Any id may end in ``:again`` (repeatedly): the resend of a command that
Telegram answered with a 429 (:func:`resend`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal, cast
from uuid import UUID

from shared.repositories.lead_posts import CARD, NOTICE

__all__ = [
    "ADMIN_PATTERNS",
    "ERASE_SET_PATTERN",
    "ERASE_SET_PREFIX",
    "POST_EDIT_PATTERNS",
    "AlertId",
    "CallbackAnswerId",
    "CommandId",
    "DigestId",
    "EraseSetId",
    "JobCommandId",
    "JobStep",
    "PostCommandId",
    "PostEditId",
    "UnlinkNoticeId",
    "UpdateReplyId",
    "alert",
    "callback_answer",
    "create_set",
    "delay_notice",
    "digest",
    "erase_set",
    "failure_text",
    "find_link",
    "find_post",
    "generating_notice",
    "job_pattern",
    "lead_card_edit",
    "link",
    "parse",
    "poll",
    "preview",
    "repeat_notice_seen",
    "resend",
    "resend_link",
    "resend_link_prefix",
    "send_post",
    "unavailable_notice",
    "unlink_notice",
    "update_reply",
]

JobStep = Literal[
    "generating",
    "unavailable",
    "still_working",
    "failure_text",
    "create_set",
    "poll",
    "link",
    "resend_link",
    "preview",
    "find_link",
]
PostOp = Literal["send", "find"]
AGAIN = ":again"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

_PREFIX = {CARD: "lead", NOTICE: "repeat"}
_KIND = {"lead": CARD, "repeat": NOTICE}
_SEND_OP = {CARD: "card", NOTICE: "notice"}
#: An attempt number in an id that leaves it out for the first attempt: 2 and up, no leading zero.
_LATER = r"(?:[2-9]|[1-9]\d+)"
_JOB = re.compile(
    r"^job:(?P<job>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(?:"
    r"(?P<bare>generating|preview)"
    r"|(?P<run_step>unavailable|still_working|failure_text):(?P<run>\d+)"
    rf"|(?P<try_step>create_set|link)(?::(?P<attempt>{_LATER}))?"
    r"|(?P<poll>poll|resend_link|find_link):(?P<n>\d+)"
    r")$"
)
_POST = re.compile(
    r"^(?:(?P<lead>lead):(?P<lead_id>\d+):(?P<lead_op>card|find|edit):(?P<lead_n>\d+)"
    r"|(?P<repeat>repeat):(?P<repeat_id>\d+):(?:(?P<repeat_op>notice|find):(?P<repeat_n>\d+)|(?P<seen>seen)))$"
)
_OTHER = re.compile(
    r"^(?:cbq:(?P<cbq>.+)|update:(?P<update>\d+)|digest:(?P<day>\d{4}-\d{2}-\d{2})"
    r"|alert:(?P<hash>[0-9a-f]{16}):(?P<ns>\d+)"
    r"|session:(?P<session>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):unlinked:(?P<bound>\d+)"
    rf"|erase_set:(?P<set_hash>[0-9a-f]{{16}})(?::(?P<set_attempt>{_LATER}))?)$"
)


@dataclass(frozen=True, slots=True)
class JobCommandId:
    """A command about job ``job_id``: ``number`` is the run (epoch s) of a guest text, the attempt of
    ``create_set``/``link`` (1 when the id has none), the poll counter; ``None`` for ``generating`` and
    ``preview``."""

    job_id: UUID
    step: JobStep
    number: int | None = None
    resends: int = 0


@dataclass(frozen=True, slots=True)
class PostCommandId:
    """Sending or searching for a leads-chat post: ``kind`` is ``card`` (``lead:``) or ``notice``
    (``repeat:``); ``number`` the send attempt (``op`` ``send``) or the search probe (``find``)."""

    kind: str
    post_id: int
    op: PostOp
    number: int
    resends: int = 0


@dataclass(frozen=True, slots=True)
class PostEditId:
    """An edit of a posted card (to ``status_version``) or of a repeat notice ("seen", no version)."""

    kind: str
    post_id: int
    status_version: int | None = None
    resends: int = 0


@dataclass(frozen=True, slots=True)
class CallbackAnswerId:
    callback_query_id: str
    resends: int = 0


@dataclass(frozen=True, slots=True)
class UpdateReplyId:
    update_id: int
    resends: int = 0


@dataclass(frozen=True, slots=True)
class UnlinkNoticeId:
    """The notice to the Telegram user a kiosk's "not you?" unlinked from session ``session_id``;
    ``bound_us`` names the link it undid (its ``bound_at`` in µs since the epoch)."""

    session_id: UUID
    bound_us: int
    resends: int = 0


@dataclass(frozen=True, slots=True)
class DigestId:
    day: date
    resends: int = 0


@dataclass(frozen=True, slots=True)
class AlertId:
    key_hash: str
    at_ns: int
    resends: int = 0


@dataclass(frozen=True, slots=True)
class EraseSetId:
    """The deletion of an erased guest's sticker set (named by a hash: the id holds no set name)."""

    name_hash: str
    attempt: int = 1
    resends: int = 0


CommandId = (
    JobCommandId
    | PostCommandId
    | PostEditId
    | CallbackAnswerId
    | UpdateReplyId
    | UnlinkNoticeId
    | DigestId
    | AlertId
    | EraseSetId
)


# --- builders ---------------------------------------------------------------------------------------


def _run(created_at: datetime) -> int:
    return int(created_at.timestamp())


def generating_notice(job_id: UUID) -> str:
    return f"job:{job_id}:generating"


def unavailable_notice(job_id: UUID, created_at: datetime) -> str:
    return f"job:{job_id}:unavailable:{_run(created_at)}"


def delay_notice(job_id: UUID, created_at: datetime) -> str:
    return f"job:{job_id}:still_working:{_run(created_at)}"


def failure_text(job_id: UUID, created_at: datetime) -> str:
    """The one failure text of a job run: whatever fails it, the guest gets one failure message."""
    return f"job:{job_id}:failure_text:{_run(created_at)}"


def create_set(job_id: UUID, attempt: int = 1) -> str:
    """Attempt ``attempt`` (1-based) at the job's sticker set; attempt 1's id is also every attempt's
    prefix (``tg_commands.with_prefix``)."""
    return f"job:{job_id}:create_set" + (f":{attempt}" if attempt > 1 else "")


def poll(job_id: UUID, n: int) -> str:
    return f"job:{job_id}:poll:{n}"


def link(job_id: UUID, attempt: int = 1) -> str:
    """Attempt ``attempt`` (1-based) at the link message; attempt 1's id is every attempt's prefix."""
    return f"job:{job_id}:link" + (f":{attempt}" if attempt > 1 else "")


def resend_link(job_id: UUID, press: int) -> str:
    """Press ``press`` (1-based) of the admin page's "Resend link": a new id per press, outside the
    ``job:<id>:link`` prefix, so delivery never counts a resend as one of its link attempts."""
    return f"job:{job_id}:resend_link:{press}"


def resend_link_prefix(job_id: UUID) -> str:
    """The start of every "Resend link" id of job ``job_id`` (``tg_commands.with_prefix``)."""
    return f"job:{job_id}:resend_link:"


def preview(job_id: UUID) -> str:
    """The one preview sticker of a job's set, sent after its link message (one per job, never repeated:
    an admin resend of the link does not send it again)."""
    return f"job:{job_id}:preview"


def find_link(job_id: UUID, attempt: int) -> str:
    """The search for link attempt ``attempt`` (1-based) in the guest's chat, after its outcome was unknown
    (issue 19); outside the ``job:<id>:link`` prefix, so it is never counted as a link attempt."""
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
    return f"session:{session_id}:unlinked:{(bound_at - _EPOCH) // _MICROSECOND}"


def digest(day: date) -> str:
    return f"digest:{day.isoformat()}"


def alert(key: str, at_ns: int) -> str:
    """An alert raised at ``at_ns`` (``time.time_ns()``); the key is hashed, it may hold any text."""
    return f"alert:{hashlib.sha1(key.encode()).hexdigest()[:16]}:{at_ns}"


def erase_set(set_name: str, attempt: int = 1) -> str:
    """Attempt ``attempt`` (1-based) at deleting sticker set ``set_name`` of an erased guest (issue 11);
    attempt 1's id is every attempt's prefix. The name is hashed: the id names no job."""
    name_hash = hashlib.sha1(set_name.encode()).hexdigest()[:16]
    return f"{ERASE_SET_PREFIX}{name_hash}" + (f":{attempt}" if attempt > 1 else "")


def erase_post(chat_id: int, message_id: int) -> str:
    """Blanking the staff-group message ``message_id`` of ``chat_id`` (a card or repeat notice) that showed
    an erased lead (issue 19); no answer is routed back."""
    return f"erase_post:{chat_id}:{message_id}"


#: The start of every set deletion's id (:func:`erase_set`), resends included; its ``LIKE`` pattern.
ERASE_SET_PREFIX = "erase_set:"
ERASE_SET_PATTERN = ERASE_SET_PREFIX + "%"


def resend(command_id: str) -> str:
    """The resend of a command Telegram answered with a 429: ``<command_id>:again``."""
    return command_id + AGAIN


def job_pattern(step: JobStep) -> str:
    """SQL ``LIKE`` pattern of every job command of ``step``, resends included
    (``tg_commands.flooded_due``)."""
    return f"job:%:{step}%"


#: SQL ``LIKE`` patterns of the card and notice edits (:func:`lead_card_edit`, :func:`repeat_notice_seen`),
#: resends included.
POST_EDIT_PATTERNS = ("lead:%:edit:%", "repeat:%:seen%")
#: SQL ``LIKE`` patterns of the admin texts (:func:`alert`, :func:`digest`), resends included.
ADMIN_PATTERNS = ("alert:%", "digest:%")


# --- the parser -------------------------------------------------------------------------------------


def parse(command_id: str) -> CommandId | None:
    """What ``command_id`` names; ``None`` for an id outside this grammar (a test's or an old one)."""
    resends = 0
    while command_id.endswith(AGAIN):
        command_id, resends = command_id[: -len(AGAIN)], resends + 1
    if match := _JOB.match(command_id):
        return _job(match, resends)
    if match := _POST.match(command_id):
        return _post(match, resends)
    if match := _OTHER.match(command_id):
        if match["cbq"] is not None:
            return CallbackAnswerId(match["cbq"], resends)
        if match["update"] is not None:
            return UpdateReplyId(int(match["update"]), resends)
        if match["session"] is not None:
            return UnlinkNoticeId(UUID(match["session"]), int(match["bound"]), resends)
        if match["day"] is not None:
            try:
                return DigestId(date.fromisoformat(match["day"]), resends)
            except ValueError:
                return None
        if match["set_hash"] is not None:
            attempt = int(match["set_attempt"]) if match["set_attempt"] else 1
            return EraseSetId(match["set_hash"], attempt, resends)
        return AlertId(match["hash"], int(match["ns"]), resends)
    return None


def _job(match: re.Match[str], resends: int) -> JobCommandId:
    job_id = UUID(match["job"])
    if match["bare"]:
        return JobCommandId(job_id, cast(JobStep, match["bare"]), None, resends)
    if match["run_step"]:
        return JobCommandId(job_id, cast(JobStep, match["run_step"]), int(match["run"]), resends)
    if match["try_step"]:
        attempt = int(match["attempt"]) if match["attempt"] else 1
        return JobCommandId(job_id, cast(JobStep, match["try_step"]), attempt, resends)
    return JobCommandId(job_id, cast(JobStep, match["poll"]), int(match["n"]), resends)


def _post(match: re.Match[str], resends: int) -> PostCommandId | PostEditId:
    if match["lead"]:
        lead_id, n = int(match["lead_id"]), int(match["lead_n"])
        if match["lead_op"] == "edit":
            return PostEditId(CARD, lead_id, n, resends)
        op: PostOp = "send" if match["lead_op"] == "card" else "find"
        return PostCommandId(CARD, lead_id, op, n, resends)
    post_id = int(match["repeat_id"])
    if match["seen"]:
        return PostEditId(NOTICE, post_id, None, resends)
    op = "send" if match["repeat_op"] == "notice" else "find"
    return PostCommandId(NOTICE, post_id, op, int(match["repeat_n"]), resends)
