"""Domain objects the repositories return (never rows). Timestamps are timezone-aware UTC."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from uuid import UUID

if TYPE_CHECKING:
    from shared.events import Event


class JobStatus(StrEnum):
    """Where a job is in its life (DESIGN.md §3 "Job state machine"); stored as text in ``jobs.status``.

    The allowed moves between them are :data:`shared.repositories.jobs.ALLOWED`.
    """

    QUEUED = "queued"
    PROCESSING = "processing"
    RENDERED = "rendered"
    DELIVERING = "delivering"
    DELIVERED = "delivered"
    FAILED = "failed"


class CommandStatus(StrEnum):
    """Where a ``tg_commands`` row is (the gateway's at-most-once outbox, DESIGN.md §4): ``pending`` →
    ``sending`` (claimed; a crash here leaves the outcome unknown) → ``sent`` | ``failed``; a command that
    was never sent goes back to ``pending`` (a flood wait: with ``not_before``). ``pending → cancelled``:
    the state change that made it obsolete cancelled it, or its ``expires_at`` passed (issue 21)."""

    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    FAILED = "failed"
    CANCELLED = "cancelled"


class LeadStatus(StrEnum):
    """What staff did with a lead (the card's buttons, ``leads.cards`` "Lead status"); stored as text in
    ``leads.status``. The allowed moves are :data:`shared.repositories.leads.ALLOWED`."""

    NEW = "new"
    TAKEN = "taken"
    DONE = "done"
    SPAM = "spam"


class PostState(StrEnum):
    """Where the publication of a lead card or a repeat notice is (``leads.post_state``,
    ``lead_repeats.post_state``; :mod:`leads.publishing`). The allowed moves are
    :data:`shared.repositories.lead_posts.ALLOWED`; only a notice ends ``failed``."""

    PENDING = "pending"
    SENDING = "sending"
    UNSURE = "unsure"
    CHECKING = "checking"
    POSTED = "posted"
    FAILED = "failed"


#: A post in one of these has a command whose outcome is not known yet.
IN_FLIGHT_POST_STATES: tuple[PostState, ...] = (PostState.SENDING, PostState.UNSURE, PostState.CHECKING)


#: A command in one of these has its outcome: the gateway never executes it again.
FINAL_COMMAND_STATUSES = frozenset({CommandStatus.SENT, CommandStatus.FAILED, CommandStatus.CANCELLED})


#: Not final yet: the deadline sweep may still fail these (DESIGN.md §6).
ACTIVE_JOB_STATUSES: tuple[JobStatus, ...] = (
    JobStatus.QUEUED,
    JobStatus.PROCESSING,
    JobStatus.RENDERED,
    JobStatus.DELIVERING,
)
#: Final: only an admin retry (``failed → queued``) moves a job out of these.
FINAL_JOB_STATUSES: tuple[JobStatus, ...] = (JobStatus.DELIVERED, JobStatus.FAILED)


@dataclass(frozen=True, slots=True)
class KioskSession:
    """A kiosk session: one guest at one station, linked to Telegram by the deep-link ``token``."""

    id: UUID
    token: str
    station: str
    outfit_id: str | None
    tg_user_id: int | None
    tg_chat_id: int | None
    guest_name: str | None
    language: str | None
    captures: int
    created_at: datetime
    bound_at: datetime | None
    #: The consent text the guest agreed to on the kiosk (``ingest.consent``), its language and time;
    #: all ``None`` until "Agree" (issue 11: no photo is taken without it).
    consent_version: str | None = None
    consent_language: str | None = None
    consented_at: datetime | None = None
    #: The guest's Telegram ``@username`` without the ``@`` (``None``: they have none, or not linked).
    tg_username: str | None = None
    #: How the pack reaches the guest: ``telegram`` (a sticker set and the bot's link message) or
    #: ``download`` (a guest without Telegram: the download page, :mod:`shared.downloads`).
    delivery: str = "telegram"
    #: The event the session belongs to (``shared.events``; the station's event when it was opened).
    event_id: str = "default"

    @property
    def telegram_linked(self) -> bool:
        return self.tg_chat_id is not None

    @property
    def downloads_only(self) -> bool:
        """The guest chose "no Telegram" on the kiosk and has not linked Telegram since."""
        return self.delivery == "download" and not self.telegram_linked

    @property
    def consented(self) -> bool:
        return self.consented_at is not None


@dataclass(frozen=True, slots=True)
class Job:
    """One sticker-pack generation (DESIGN.md §3 state machine)."""

    id: UUID
    session_id: UUID
    capture_id: str
    outfit_id: str
    status: JobStatus
    attempts: int
    free_requeues: int
    owner: str | None
    heartbeat_at: datetime | None
    not_before: datetime | None
    error_class: str | None
    error: str | None
    sticker_set_name: str | None
    set_created_at: datetime | None
    next_poll_at: datetime | None
    polls: int
    link_sent_at: datetime | None
    failure_notice_sent_at: datetime | None
    selfie_deleted_at: datetime | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class JobCounts:
    """How many jobs (created in some period) are in each status, and the failed ones by error class
    (``None``: no class recorded)."""

    by_status: dict[JobStatus, int]
    failed_by_class: dict[str | None, int]


@dataclass(frozen=True, slots=True)
class JobContext:
    """A job with what delivery and notifications need from its session."""

    job: Job
    tg_user_id: int | None
    tg_chat_id: int | None
    language: str | None
    #: The session's ``delivery`` (``telegram`` or ``download``, :class:`KioskSession`).
    delivery: str = "telegram"
    #: The session's event (:class:`shared.events.Event`, read with the job): the guest's language there,
    #: its set title and guest texts where it has its own. ``None`` only if the event row is gone.
    event: Event | None = None


@dataclass(frozen=True, slots=True)
class Blob:
    """Stored bytes: a selfie (``kind='selfie'``) or a sticker (``kind='sticker'``, ``position`` 0–11)."""

    id: UUID
    kind: str
    job_id: UUID | None
    position: int | None
    content_type: str
    meta: dict[str, Any]
    data: bytes


@dataclass(frozen=True, slots=True)
class TelegramCommandRecord:
    """A row of ``tg_commands``: one Telegram call asked for by a service, executed at most once."""

    command_id: str
    reply_to: str | None
    method: str
    params: dict[str, Any]
    status: CommandStatus
    result: Any
    error: dict[str, Any] | None
    tries: int
    created_at: datetime
    updated_at: datetime
    #: Not sent before this (a flood wait, issue 21); ``None``: at once.
    not_before: datetime | None = None
    #: 1, plus one per flood-wait deferral.
    attempt: int = 1
    #: What the command is about (:mod:`shared.subjects`), as stored (a JSON object), or ``None``.
    subject: dict[str, Any] | None = None
    #: Finished ``cancelled`` unsent when still pending then.
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Lead:
    """A landing-page lead; ``id`` is the lead number shown to staff and visitor.

    ``contact_kind`` is ``phone``, ``email`` or ``telegram``; ``contact_key`` its normalised form (a second
    lead with the same key becomes a :class:`LeadRepeat`). ``status`` is ``new``, ``taken``, ``done`` or
    ``spam``, set by the card's buttons (``status_by_*``: who pressed last; ``taken_by_*``: who took it,
    kept through Done, Spam and Reopen; ``leads.cards`` "Lead status"). ``post_state`` and the attempt
    fields describe the card's publication (see :class:`LeadPost`). ``consented_at``: when the visitor
    sent the form with its consent line ticked (``None`` for leads stored before it existed).
    """

    id: int
    request_id: str
    name: str
    contact: str
    message: str
    source_page: str | None
    utm: dict[str, Any]
    status: str
    published_at: datetime | None
    card_message_id: int | None
    failures: int
    next_attempt_at: datetime | None
    created_at: datetime
    contact_kind: str
    contact_key: str | None
    post_state: str
    attempts: int
    last_error: str | None
    card_chat_id: int | None
    status_by_id: int | None
    status_by_name: str | None
    status_at: datetime | None
    status_version: int
    taken_by_id: int | None = None
    taken_by_name: str | None = None
    consented_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class LeadRepeat:
    """A later submission from the contact of lead ``lead_id``: posted as a notice under that lead's card."""

    id: int
    lead_id: int
    request_id: str
    name: str
    contact: str
    message: str
    source_page: str | None
    utm: dict[str, Any]
    created_at: datetime
    post_state: str
    failures: int
    message_id: int | None
    consented_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class LeadPost:
    """The publication state of one message the leads service posts: a lead's card or a repeat notice.

    ``kind`` is ``card`` (``id`` = lead id) or ``notice`` (``id`` = repeat id); ``lead_id`` is the lead
    either way. ``attempts`` counts sends and ``probes`` counts searches for a send whose outcome was
    unknown; both are part of the command ids, so every Telegram call of a post is its own command.
    ``probe_after``: the highest message id of the chat known when the last send was issued (the sent
    message, if it exists, has a higher id). ``last_attempt_at``: when the last command (a send or a
    search) was issued. Times are UTC.
    """

    kind: str
    id: int
    lead_id: int
    state: str
    attempts: int
    probes: int
    failures: int
    next_attempt_at: datetime | None
    last_attempt_at: datetime | None
    probe_after: int | None
    message_id: int | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class LeadChat:
    """Pacing of one staff chat: the flood-control pause, a token bucket and the highest message id seen.

    ``tokens`` (messages) were available at ``tokens_at``; the bucket refills at the chat's per-minute rate.
    """

    chat_id: int
    last_message_id: int
    flood_until: datetime | None
    tokens: float
    tokens_at: datetime


@dataclass(frozen=True, slots=True)
class LeadSubmission:
    """What ``POST /leads`` stored: the lead (for a repeat, the first lead of that contact), whether this
    request created something, and the repeat when the contact was known already."""

    lead: Lead
    created: bool
    repeat: LeadRepeat | None = None
