"""Table definitions (SQLAlchemy Core). The schema itself is created by Alembic migrations.

Job states (DESIGN.md §3): ``queued → processing → rendered → delivering → delivered``, plus ``failed``
from any non-final state and ``processing → queued`` on a retry or requeue.

Lead card (and repeat notice) publication, ``post_state`` (migration 0003, :mod:`leads.publishing`):
``pending → sending → posted``; a failed send goes back to ``pending`` with a backoff; a send whose outcome
is unknown goes ``sending → unsure → checking`` and then ``posted`` (found in the chat) or ``pending``
(not there). A repeat notice ends ``failed`` after 5 failures. Lead ``status`` (migration 0007,
:mod:`leads.cards`): ``new → taken → done|spam``, ``new → spam`` (and ``new → done`` by an admin), and Reopen
``done|spam → taken`` (back to the holder, ``taken_by_*``) or ``→ new`` when nobody holds it.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB, UUID

from shared.domain import CommandStatus, JobStatus, LeadStatus, PostState

metadata = sa.MetaData()

JOB_STATUSES = tuple(s.value for s in JobStatus)  # the ck_jobs_status CHECK: no schema change
COMMAND_STATUSES = tuple(s.value for s in CommandStatus)  # the ck_tg_commands_status CHECK
LEAD_STATUSES = tuple(s.value for s in LeadStatus)  # the ck_leads_status CHECK
LEAD_NOTICE_STATES = tuple(s.value for s in PostState)  # ck_lead_repeats_post_state
LEAD_CARD_STATES = tuple(s for s in LEAD_NOTICE_STATES if s != PostState.FAILED)  # ck_leads_post_state
TZ = sa.DateTime(timezone=True)

# migration 0014: events (shared.events, issue 23): what a deployment serves, one after another or at once
events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("venue", sa.Text, nullable=False, server_default=""),
    sa.Column("time_zone", sa.Text, nullable=False, server_default="UTC"),
    sa.Column("starts_at", TZ),
    sa.Column("ends_at", TZ),
    sa.Column("outfits", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
    sa.Column("branding", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("set_title", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("texts", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("languages", JSONB, nullable=False, server_default=sa.text("'[]'::jsonb")),
    sa.Column("daily_budget_usd", sa.Numeric(12, 2)),
    sa.Column("total_budget_usd", sa.Numeric(12, 2)),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("updated_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint("id ~ '^[a-z0-9][a-z0-9-]{0,39}$'", name="ck_events_id"),
    sa.CheckConstraint("starts_at IS NULL OR ends_at IS NULL OR starts_at < ends_at", name="ck_events_times"),
    sa.CheckConstraint("daily_budget_usd IS NULL OR daily_budget_usd > 0", name="ck_events_daily_budget"),
    sa.CheckConstraint("total_budget_usd IS NULL OR total_budget_usd > 0", name="ck_events_total_budget"),
)

event_stations = sa.Table(
    "event_stations",
    metadata,
    sa.Column("event_id", sa.Text, sa.ForeignKey("events.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("station", sa.Text, primary_key=True),
)
sa.Index("ix_event_stations_station", event_stations.c.station)

event_outfits = sa.Table(
    "event_outfits",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("event_id", sa.Text, sa.ForeignKey("events.id", ondelete="CASCADE"), nullable=False),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("prompt", sa.Text, nullable=False),
    sa.Column("based_on", sa.Text, nullable=False),
    sa.Column("thumbnail", sa.LargeBinary),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint("id ~ '^[a-z][a-z0-9_]{1,31}$'", name="ck_event_outfits_id"),
)
sa.Index("ix_event_outfits_event", event_outfits.c.event_id)

sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("token", sa.Text, nullable=False, unique=True),
    sa.Column("station", sa.Text, nullable=False),
    sa.Column("outfit_id", sa.Text),
    sa.Column("tg_user_id", sa.BigInteger),
    sa.Column("tg_chat_id", sa.BigInteger),
    sa.Column("guest_name", sa.Text),
    # migration 0006: the guest's @username (without the @), for the admin page's search
    sa.Column("tg_username", sa.Text),
    sa.Column("language", sa.Text),
    sa.Column("captures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("bound_at", TZ),
    # The guest's "Agree" on the kiosk's consent screen (migration 0005, ingest.consent).
    sa.Column("consent_version", sa.Text),
    sa.Column("consent_language", sa.Text),
    sa.Column("consented_at", TZ),
    # migration 0012: "telegram", or "download" for a guest without Telegram (shared.downloads)
    sa.Column("delivery", sa.Text, nullable=False, server_default="telegram"),
    sa.CheckConstraint("delivery IN ('telegram', 'download')", name="ck_sessions_delivery"),
    # migration 0014: the event the session belongs to (shared.events)
    sa.Column("event_id", sa.Text, sa.ForeignKey("events.id"), nullable=False, server_default="default"),
)
sa.Index("ix_sessions_event", sessions.c.event_id, sessions.c.created_at)

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("session_id", UUID(as_uuid=True), sa.ForeignKey("sessions.id"), nullable=False),
    sa.Column("capture_id", sa.Text, nullable=False),
    sa.Column("outfit_id", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("free_requeues", sa.Integer, nullable=False, server_default="0"),
    sa.Column("owner", sa.Text),
    sa.Column("heartbeat_at", TZ),
    sa.Column("not_before", TZ),
    sa.Column("dispatched_at", TZ),
    sa.Column("error_class", sa.Text),
    sa.Column("error", sa.Text),
    sa.Column("sticker_set_name", sa.Text),
    sa.Column("set_created_at", TZ),
    sa.Column("next_poll_at", TZ),
    sa.Column("polls", sa.Integer, nullable=False, server_default="0"),
    sa.Column("delay_notice_sent_at", TZ),
    sa.Column("link_sent_at", TZ),
    sa.Column("failure_notice_sent_at", TZ),
    sa.Column("selfie_deleted_at", TZ),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("updated_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.UniqueConstraint("session_id", "capture_id", name="uq_jobs_session_capture"),
    sa.CheckConstraint(f"status IN {JOB_STATUSES!r}", name="ck_jobs_status"),
)
sa.Index("ix_jobs_status_updated", jobs.c.status, jobs.c.updated_at)
sa.Index("ix_jobs_created", jobs.c.created_at, jobs.c.id)  # migration 0006: the admin job list
sa.Index("ix_jobs_link_sent", jobs.c.link_sent_at)  # migration 0006: the evening figures

job_events = sa.Table(
    "job_events",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("job_id", UUID(as_uuid=True), sa.ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("from_status", sa.Text),
    sa.Column("to_status", sa.Text, nullable=False),
    sa.Column("note", sa.Text),
    sa.Column("at", TZ, nullable=False, server_default=sa.func.now()),
)
sa.Index("ix_job_events_job", job_events.c.job_id, job_events.c.id)

blobs = sa.Table(
    "blobs",
    metadata,
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("job_id", UUID(as_uuid=True), sa.ForeignKey("jobs.id", ondelete="CASCADE")),
    sa.Column("position", sa.Integer),
    sa.Column("content_type", sa.Text, nullable=False),
    sa.Column("meta", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("data", sa.LargeBinary, nullable=False),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
)
sa.Index("ix_blobs_job_kind", blobs.c.job_id, blobs.c.kind, blobs.c.position)

settings = sa.Table(
    "settings",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", JSONB, nullable=False),
    sa.Column("updated_at", TZ, nullable=False, server_default=sa.func.now()),
)

tg_commands = sa.Table(
    "tg_commands",
    metadata,
    sa.Column("command_id", sa.Text, primary_key=True),
    sa.Column("reply_to", sa.Text),
    sa.Column("method", sa.Text, nullable=False),
    sa.Column("params", JSONB, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="pending"),
    sa.Column("result", JSONB),
    sa.Column("error", JSONB),
    sa.Column("tries", sa.Integer, nullable=False, server_default="0"),
    sa.Column("dispatched_at", TZ),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("updated_at", TZ, nullable=False, server_default=sa.func.now()),
    # migration 0010 (issue 21): deferred by flood control until, deferrals + 1, what it is about, expiry
    sa.Column("not_before", TZ),
    sa.Column("attempt", sa.Integer, nullable=False, server_default="1"),
    sa.Column("subject", JSONB),
    sa.Column("expires_at", TZ),
    sa.CheckConstraint(f"status IN {COMMAND_STATUSES!r}", name="ck_tg_commands_status"),
)
sa.Index("ix_tg_commands_status_updated", tg_commands.c.status, tg_commands.c.updated_at)
sa.Index("ix_tg_commands_subject", tg_commands.c.subject["kind"].astext, tg_commands.c.subject["id"].astext)
# migration 0010: the rows pre-0010 pods write without a subject
# (shared.repositories.legacy_subjects, to be removed)
sa.Index(
    "ix_tg_commands_subject_null", tg_commands.c.created_at, postgresql_where=tg_commands.c.subject.is_(None)
)

# migration 0011 (issue 22): updates the webhook received, stored before Telegram is answered 2xx
tg_updates = sa.Table(
    "tg_updates",
    metadata,
    sa.Column("update_id", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("body", JSONB, nullable=False),
    sa.Column("received_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("handled_at", TZ),
)
sa.Index(
    "ix_tg_updates_unhandled", tg_updates.c.update_id, postgresql_where=tg_updates.c.handled_at.is_(None)
)
sa.Index("ix_tg_updates_handled_at", tg_updates.c.handled_at)

leads = sa.Table(
    "leads",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("request_id", sa.Text, nullable=False, unique=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("contact", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False, server_default=""),
    sa.Column("source_page", sa.Text),
    sa.Column("utm", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("status", sa.Text, nullable=False, server_default="new"),
    sa.Column("published_at", TZ),
    sa.Column("card_message_id", sa.BigInteger),
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_at", TZ),
    sa.Column("dispatched_at", TZ),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    # migration 0003: contact identity, card publication state, who pressed which button
    sa.Column("contact_kind", sa.Text, nullable=False, server_default="other"),
    sa.Column("contact_key", sa.Text),
    sa.Column("post_state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("probes", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_attempt_at", TZ),
    sa.Column("probe_after", sa.BigInteger),
    sa.Column("last_error", sa.Text),
    sa.Column("alerted_at", TZ),
    sa.Column("card_chat_id", sa.BigInteger),
    sa.Column("status_by_id", sa.BigInteger),
    sa.Column("status_by_name", sa.Text),
    sa.Column("status_at", TZ),
    sa.Column("status_version", sa.Integer, nullable=False, server_default="0"),
    # migration 0007: who holds the lead (pressed Take), when the visitor consented
    sa.Column("taken_by_id", sa.BigInteger),
    sa.Column("taken_by_name", sa.Text),
    sa.Column("consented_at", TZ),
    # migration 0014: the event the lead came from (NULL: none named; shared.events)
    sa.Column("event_id", sa.Text, sa.ForeignKey("events.id", ondelete="SET NULL")),
    sa.CheckConstraint(f"status IN {LEAD_STATUSES!r}", name="ck_leads_status"),
    sa.CheckConstraint(f"post_state IN {LEAD_CARD_STATES!r}", name="ck_leads_post_state"),
)
sa.Index(
    "uq_leads_contact_key", leads.c.contact_key, unique=True, postgresql_where=leads.c.contact_key.isnot(None)
)
sa.Index("ix_leads_post_state_next", leads.c.post_state, leads.c.next_attempt_at)

lead_repeats = sa.Table(
    "lead_repeats",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("lead_id", sa.BigInteger, sa.ForeignKey("leads.id", ondelete="CASCADE"), nullable=False),
    sa.Column("request_id", sa.Text, nullable=False, unique=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("contact", sa.Text, nullable=False),
    sa.Column("message", sa.Text, nullable=False, server_default=""),
    sa.Column("source_page", sa.Text),
    sa.Column("utm", JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("post_state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("probes", sa.Integer, nullable=False, server_default="0"),
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("next_attempt_at", TZ),
    sa.Column("last_attempt_at", TZ),
    sa.Column("probe_after", sa.BigInteger),
    sa.Column("last_error", sa.Text),
    sa.Column("message_id", sa.BigInteger),
    sa.Column("notified_at", TZ),
    sa.Column("consented_at", TZ),  # migration 0007
    sa.CheckConstraint(f"post_state IN {LEAD_NOTICE_STATES!r}", name="ck_lead_repeats_post_state"),
)
sa.Index("ix_lead_repeats_lead", lead_repeats.c.lead_id)
sa.Index("ix_lead_repeats_post_state_next", lead_repeats.c.post_state, lead_repeats.c.next_attempt_at)

lead_chats = sa.Table(
    "lead_chats",
    metadata,
    sa.Column("chat_id", sa.BigInteger, primary_key=True),
    sa.Column("last_message_id", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("flood_until", TZ),
    sa.Column("tokens", sa.Float, nullable=False),
    sa.Column("tokens_at", TZ, nullable=False),
)

alerts = sa.Table(
    "alerts",
    metadata,
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("last_sent_at", TZ, nullable=False),
    sa.Column("suppressed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("sent_count", sa.Integer, nullable=False, server_default="1"),
)

# migration 0004: every AI provider call as it happens (DESIGN.md §3, spec/002 "Cost ceiling")
api_usage = sa.Table(
    "api_usage",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("job_id", UUID(as_uuid=True), sa.ForeignKey("jobs.id", ondelete="SET NULL")),
    sa.Column("provider", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("call_type", sa.Text, nullable=False),
    sa.Column("image_size", sa.Text),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("cost_usd", sa.Numeric(12, 6), nullable=False, server_default="0"),
    sa.Column("latency_ms", sa.Integer, nullable=False, server_default="0"),
    sa.Column("error", sa.Text),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    # migration 0009: the tokens the provider's answer reported (NULL: none reported), by how they are
    # billed; cost_usd is these times the model's sourced price (shared/ai_models.py)
    sa.Column("input_text_tokens", sa.Integer),
    sa.Column("input_image_tokens", sa.Integer),
    sa.Column("output_text_tokens", sa.Integer),
    sa.Column("output_image_tokens", sa.Integer),
    sa.Column("reasoning_tokens", sa.Integer),
    sa.CheckConstraint("call_type IN ('image', 'vision')", name="ck_api_usage_call_type"),
    # migration 0014: the event the call counts towards (its budgets and report); no foreign key, so the
    # cost stays the event's after the job is erased
    sa.Column("event_id", sa.Text, nullable=False, server_default="default"),
)
sa.Index("ix_api_usage_event", api_usage.c.event_id, api_usage.c.created_at)
sa.Index("ix_api_usage_job", api_usage.c.job_id, api_usage.c.created_at)
sa.Index("ix_api_usage_created", api_usage.c.created_at)

# migration 0008: photo uploads refused at the kiosk (``POST /sessions/{id}/photo``), by refusal code, for
# the admin overview; no photo bytes, no guest (they go with their session: erasure and retention)
photo_refusals = sa.Table(
    "photo_refusals",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column(
        "session_id", UUID(as_uuid=True), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("station", sa.Text, nullable=False),
    sa.Column("code", sa.Text, nullable=False),
    sa.Column("at", TZ, nullable=False, server_default=sa.func.now()),
)
sa.Index("ix_photo_refusals_at", photo_refusals.c.at)
sa.Index("ix_photo_refusals_session", photo_refusals.c.session_id)

# migration 0013 (issue 22): the telegram-gateway's leadership lease (shared.repositories.gateway_lease)
gateway_lease = sa.Table(
    "gateway_lease",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("holder", sa.Text, nullable=False),
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("expires_at", TZ, nullable=False),
    sa.Column("taken_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint("epoch >= 1", name="ck_gateway_lease_epoch"),
)
