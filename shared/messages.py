"""Typed, versioned stream messages. On the wire: one stream field ``data`` holding the model's JSON.

Bodies carry ids, never images (DESIGN.md §3). Each model has a fixed ``type`` and a version ``v``;
a consumer that reads an unknown ``type`` or a newer ``v`` dead-letters the entry instead of guessing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from shared.subjects import Subject


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    v: Literal[1] = 1


class JobQueued(_Message):
    """``stk:jobs``: the job is ``queued`` and due; a worker should try to claim it."""

    type: Literal["job.queued"] = "job.queued"
    job_id: UUID


class JobRendered(_Message):
    """``stk:delivery``: the job's 12 stickers are stored; delivery should create the sticker set."""

    type: Literal["job.rendered"] = "job.rendered"
    job_id: UUID


class LeadCreated(_Message):
    """``stk:leads``: lead number ``lead_id`` is stored and waits for its card."""

    type: Literal["lead.created"] = "lead.created"
    lead_id: int


class LeadRepeated(_Message):
    """``stk:leads``: a repeat submission ``repeat_id`` of lead ``lead_id`` waits for its notice."""

    type: Literal["lead.repeated"] = "lead.repeated"
    repeat_id: int
    lead_id: int


class LeadButtonPressed(_Message):
    """``tg:updates:leads``: a staff member pressed a ``stickers_``-prefixed button (a callback query).

    ``chat_id``/``message_id`` are the message under which the button was (``None`` when Telegram no longer
    shows it to the bot); ``user_name`` is the presser's first and last name, ``username`` without ``@``.
    """

    type: Literal["lead.button"] = "lead.button"
    callback_query_id: str
    data: str
    user_id: int
    user_name: str
    username: str | None = None
    chat_id: int | None = None
    message_id: int | None = None


class LeadsChatMessage(_Message):
    """``tg:updates:leads``: a message the bot saw in the leads chat (ids only, never the text)."""

    type: Literal["lead.chat_message"] = "lead.chat_message"
    chat_id: int
    message_id: int


class TelegramCommand(_Message):
    """``tg:outbox``: Telegram work for the gateway; the row in ``tg_commands`` holds method and params."""

    type: Literal["tg.command"] = "tg.command"
    command_id: str


class TelegramErrorInfo(BaseModel):
    """Telegram's ``ok: false`` answer, or ``error_code`` 0 for a network failure after retries."""

    model_config = ConfigDict(frozen=True)
    error_code: int
    description: str
    retry_after: float | None = None


class TelegramResult(_Message):
    """``tg:results:<service>``: the outcome of a command, stored in ``tg_commands`` before it is sent.

    ``result`` is :func:`shared.commands.minimal_result` of Telegram's answer (ids and counts, no chat, user,
    name, username or text; the table in :mod:`shared.commands`). Still version 1: the reduction only left
    out fields no consumer needs (leads reads the chat from its own command row, falling back to the leads
    chat as before).

    ``subject`` echoes what the command is about (:mod:`shared.subjects`; consumers ``match`` on it, never
    on ``command_id``) and ``attempt`` its row's attempt (1, plus one per flood-wait deferral, issue 21);
    both have defaults, so a new consumer parses an entry written before them (its subject is ``None``:
    routed nowhere, logged). The reverse does not hold: a pre-0010 consumer (``extra="forbid"``) rejects
    a result that carries them, so during a rolling upgrade a new gateway's results to old delivery or
    leads pods are dead-lettered. Upgrade delivery and leads before (or with) the gateway (README
    "Upgrading across migration 0010").
    """

    type: Literal["tg.result"] = "tg.result"
    command_id: str
    ok: bool
    result: Any = None
    error: TelegramErrorInfo | None = None
    subject: Subject | None = None
    attempt: int = 1


Message = Annotated[
    JobQueued
    | JobRendered
    | LeadCreated
    | LeadRepeated
    | LeadButtonPressed
    | LeadsChatMessage
    | TelegramCommand
    | TelegramResult,
    Field(discriminator="type"),
]
_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)


def encode(message: _Message) -> dict[str, str]:
    """Stream entry fields for ``message`` (``{"data": json}``)."""
    return {"data": message.model_dump_json()}


def decode(fields: dict[str, str] | dict[bytes, bytes]) -> Message:
    """Parse a stream entry's fields back into its model.

    Raises:
        pydantic.ValidationError: unknown type, newer version or malformed body.
        KeyError: the entry has no ``data`` field.
    """
    raw: Any = fields["data"] if "data" in fields else fields[b"data"]  # type: ignore[index]
    return _ADAPTER.validate_json(raw)
