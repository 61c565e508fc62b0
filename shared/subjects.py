"""What a Telegram command is about: the typed ``subject`` of a ``tg_commands`` row (issue 21).

A producer names the subject when it queues a command (:func:`shared.outbox.add_command`); the gateway
stores it with the row (``tg_commands.subject``, JSONB) and echoes it in the command's
:class:`shared.messages.TelegramResult`, so a consumer routes a result with ``match result.subject:`` and
class patterns, and a producer finds its commands by subject (``tg_commands.for_subject``,
``cancel_pending``), never by reading a command id. Command ids stay the idempotency keys
(:mod:`shared.command_ids`); nothing parses them.

Every subject has ``kind`` (the discriminator) and ``id`` (what it is about: a job, a post, a set); the
two are stored as ``subject->>'kind'`` and ``subject->>'id'``, which the index
``ix_tg_commands_subject`` serves (migration 0010). The other fields say which step of it.

| subject | ``id`` | other fields | who asks |
|---|---|---|---|
| :class:`JobStep` | job uuid | ``step``, ``n`` (run in epoch s, attempt, poll, press) | job services |
| :class:`PostStep` | lead id (``card``) or repeat id (``notice``) | ``post``, ``op``, ``n`` | leads |
| :class:`SetDeletion` | 16 hex of sha1(set name) | ``n`` (the attempt) | erasure |
| :class:`PostBlanking` | ``<chat id>:<message id>`` | — | erasure |
| :class:`AdminText` | 16 hex of sha1(alert key), or the UTC day | ``what``: alert, digest | admin texts |
| :class:`UpdateReply` | the update id | — | the gateway's replies |
| :class:`CallbackAnswer` | the callback query id | — | leads |
| :class:`UnlinkNotice` | session uuid | ``bound_us`` (the link it undid) | ingest |
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import structlog
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "AdminText",
    "CallbackAnswer",
    "JobStep",
    "JobStepName",
    "PostBlanking",
    "PostStep",
    "SetDeletion",
    "Subject",
    "UnlinkNotice",
    "UpdateReply",
    "load_subject",
]

log = structlog.get_logger(__name__)

JobStepName = Literal[
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


class _Subject(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class JobStep(_Subject):
    """A step of job ``id``: ``n`` is the run (``created_at`` in epoch s) of a guest text
    (``unavailable``, ``still_working``, ``failure_text``), the attempt of a ``link`` or ``find_link``,
    the readiness ``poll``, the admin's ``resend_link`` press; ``None`` for ``generating``, ``create_set``,
    ``preview``."""

    kind: Literal["job"] = "job"
    id: UUID
    step: JobStepName
    n: int | None = None


class PostStep(_Subject):
    """A post in the leads chat: ``post`` ``card`` (``id`` is the lead's) or ``notice`` (a repeat's);
    ``op`` ``send`` (attempt ``n``), ``find`` (probe ``n``), ``edit`` (the card to status version ``n``)
    or ``seen`` (the notice edited to "seen by")."""

    kind: Literal["lead_post"] = "lead_post"
    id: int
    post: Literal["card", "notice"]
    op: Literal["send", "find", "edit", "seen"]
    n: int | None = None


class SetDeletion(_Subject):
    """Attempt ``n`` at deleting an erased guest's sticker set; ``id`` is a hash of the set's name."""

    kind: Literal["erase_set"] = "erase_set"
    id: str
    n: int = 1


class PostBlanking(_Subject):
    """An erased lead's card or notice edited to "Lead erased"; ``id`` is ``<chat id>:<message id>``."""

    kind: Literal["erase_post"] = "erase_post"
    id: str


class AdminText(_Subject):
    """An admin alert (``id``: a hash of its key) or a daily digest (``id``: the local day it was sent on,
    ``<event id>:<day>`` for an event other than the default one, :mod:`shared.digest`)."""

    kind: Literal["admin"] = "admin"
    id: str
    what: Literal["alert", "digest"]


class UpdateReply(_Subject):
    """The gateway's one reply to private update ``id``."""

    kind: Literal["update"] = "update"
    id: int


class CallbackAnswer(_Subject):
    """The answer to button press (callback query) ``id``."""

    kind: Literal["callback"] = "callback"
    id: str


class UnlinkNotice(_Subject):
    """The notice to the user the kiosk's "not you?" unlinked from session ``id``; ``bound_us`` names the
    link it undid (its ``bound_at`` in µs since the epoch)."""

    kind: Literal["unlink"] = "unlink"
    id: UUID
    bound_us: int


Subject = Annotated[
    JobStep | PostStep | SetDeletion | PostBlanking | AdminText | UpdateReply | CallbackAnswer | UnlinkNotice,
    Field(discriminator="kind"),
]
_ADAPTER: TypeAdapter[Subject] = TypeAdapter(Subject)


def load_subject(stored: Any) -> Subject | None:
    """The subject of a stored ``tg_commands.subject`` (a JSON object); ``None`` for none, or for one this
    code does not know (logged ``COMMAND_SUBJECT_UNKNOWN``: its result is routed nowhere)."""
    if stored is None:
        return None
    try:
        return _ADAPTER.validate_python(stored)
    except ValidationError as exc:
        log.warning("COMMAND_SUBJECT_UNKNOWN", subject=str(stored)[:200], errors=exc.error_count())
        return None
