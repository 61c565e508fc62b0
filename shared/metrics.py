"""Prometheus metrics shared by all services (DESIGN.md §10). No personal data in labels.

Names are the contract of ``monitoring/`` (dashboards and alert rules): change them together.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, generate_latest

JOBS = Counter("stk_jobs_total", "Jobs that reached an outcome", ["outcome", "error_class"])
STAGE_SECONDS = Histogram(
    "stk_stage_seconds",
    "Duration of a pipeline or delivery stage (s)",
    ["stage"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 60, 120, 300),
)
STREAM_LAG = Gauge("stk_stream_lag", "Entries not yet delivered to the group", ["stream", "group"])
STREAM_PENDING = Gauge("stk_stream_pending", "Entries delivered but not acked", ["stream", "group"])
STREAM_DEAD = Counter("stk_stream_dead_total", "Entries moved to <stream>:dead", ["stream"])
DUTY_FAILURES = Counter(
    "stk_duty_failures_total", "Ticks of a periodic duty that raised (shared.runtime.Duty)", ["duty"]
)
JOB_QUEUE_DEPTH = Gauge("stk_job_queue_depth", "Jobs in status queued")
PROVIDER_CALLS = Counter("stk_provider_calls_total", "AI provider calls", ["provider", "model", "outcome"])
PROVIDER_LATENCY = Histogram(
    "stk_provider_latency_seconds",
    "AI provider call latency (s)",
    ["provider", "model"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180),
)
STICKER_LIKENESS = Histogram(
    "stk_sticker_likeness",
    "Face descriptor distance of each delivered sticker to its guest's selfie (issue 20; lower is likelier,"
    " the bound is shared.likeness.LIKENESS_MAX_DISTANCE); stickers without a judged face are not observed",
    ["variant"],
    buckets=(
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
        0.55,
        0.57,
        0.6,
        0.65,
        0.7,
        0.8,
        0.9,
        1.0,
    ),  # 0.57: the bound
)
PROVIDER_COST = Counter("stk_provider_cost_usd_total", "AI spend (USD)", ["provider", "model"])
PROVIDER_BUDGET_HELD = Gauge(
    "stk_provider_budget_held",
    "Fleet budget slots this replica holds (calls in flight; sum over replicas = the fleet's)",
    ["provider", "call"],
)
PROVIDER_BUDGET_WAITS = Counter(
    "stk_provider_budget_waits_total",
    "Calls that had to wait for a fleet budget slot, by what was full (in_flight/per_minute/cooldown)",
    ["provider", "call", "reason"],
)
PROVIDER_BUDGET_WAIT_SECONDS = Histogram(
    "stk_provider_budget_wait_seconds",
    "Time a call waited for a fleet budget slot (s)",
    ["provider", "call"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120),
)
PROVIDER_BUDGET_UNAVAILABLE = Counter(
    "stk_provider_budget_unavailable_total",
    "Calls sent without a fleet budget slot because Redis did not answer (fail open)",
    ["provider"],
)
PAUSE_ACTIVE = Gauge("stk_pause_active", "Queue pause / maintenance active (1) by source", ["source"])
TELEGRAM_CALLS = Counter("stk_telegram_calls_total", "Bot API calls by the gateway", ["method", "outcome"])
TELEGRAM_FLOOD_WAITS = Counter(
    "stk_telegram_flood_waits_total",
    "429 answers from Telegram by the scope they paused (chat/method)",
    ["scope"],
)
TELEGRAM_PACED = Counter(
    "stk_telegram_paced_total",
    "Bot API calls the gateway held back to keep a Telegram limit, by bucket (overall/private/group)",
    ["bucket"],
)
TELEGRAM_DEFERRED = Counter(
    "stk_telegram_deferred_total",
    "Commands the gateway deferred to after a Telegram flood wait (429 retry_after) it did not wait out",
    ["method"],
)
GATEWAY_LEADER = Gauge(
    "stk_gateway_leader",
    "1 while this telegram-gateway replica holds the gateway lease (executes the outbox, polls), else 0",
)
GATEWAY_LEASE_EPOCH = Gauge(
    "stk_gateway_lease_epoch", "The gateway lease's generation this replica last held (+1 per takeover)"
)
DEADLINE_MISSES = Counter("stk_deadline_misses_total", "Jobs that missed a guest deadline", ["kind"])
LEADS = Counter("stk_leads_total", "Lead events", ["event"])
LEADS_PENDING_AGE = Gauge("stk_leads_pending_age_seconds", "Age of the oldest lead without a posted card (s)")
RETENTION_DELETED = Counter(
    "stk_retention_deleted_total",
    "Rows, blobs, stream entries and gone stream consumers deleted by housekeeping (shared.housekeeping)",
    ["kind"],
)
HTTP_REQUESTS = Counter("stk_http_requests_total", "HTTP requests served", ["route", "status"])
PHOTO_REFUSALS = Counter(
    "stk_photo_refusals_total",
    "Kiosk photo uploads refused by ingest (POST /sessions/{id}/photo), by refusal code",
    ["code"],
)
#: The refusal codes of a kiosk photo upload (ingest.photo, ingest.multipart, ingest.api.kiosk): each
#: is counted in ``stk_photo_refusals_total`` and recorded in ``photo_refusals``.
PHOTO_REFUSAL_CODES = (
    "no_face",
    "corrupt_image",
    "empty_file",
    "unsupported_format",
    "too_many_pixels",
    "file_too_large",
    "malformed_multipart",
)

#: Series that dashboards and alert rules select but that only move on rare events (a failure, a dead
#: letter, a missed deadline, a 429). ``exposition`` creates them at 0, so a fresh deployment shows 0
#: instead of "No data", and an expression without series always means a renamed metric (``make
#: compose-check`` queries every dashboard expression and alert rule selector and fails on that).
_ZERO_EVENTS: tuple[tuple[str, dict[str, str]], ...] = (
    ("stk_jobs_total", {"outcome": "delivered", "error_class": ""}),
    ("stk_deadline_misses_total", {"kind": "delay_notice"}),
    ("stk_deadline_misses_total", {"kind": "failed"}),
    ("stk_telegram_flood_waits_total", {"scope": "command"}),
    ("stk_leads_total", {"event": "received"}),
    ("stk_leads_total", {"event": "published"}),
    ("stk_leads_total", {"event": "failed"}),
    # the gateway's pacing buckets (telegram_gateway.flood) and its deferred commands (executor)
    *(("stk_telegram_paced_total", {"bucket": b}) for b in ("overall", "private", "group")),
    *(("stk_telegram_deferred_total", {"method": m}) for m in ("send_message", "create_sticker_set")),
    # the kiosk's refused photo uploads (ingest)
    *(("stk_photo_refusals_total", {"code": c}) for c in PHOTO_REFUSAL_CODES),
    # what retention deletes (shared.housekeeping, in delivery)
    *(
        ("stk_retention_deleted_total", {"kind": k})
        for k in (
            "selfie",
            "sticker",
            "session",
            "tg_command",
            "photo_refusal",
            "lead",
            "stream_entries",
            "stream_consumers",
        )
    ),
)
_COUNTERS = {
    "stk_jobs_total": JOBS,
    "stk_deadline_misses_total": DEADLINE_MISSES,
    "stk_telegram_flood_waits_total": TELEGRAM_FLOOD_WAITS,
    "stk_telegram_paced_total": TELEGRAM_PACED,
    "stk_telegram_deferred_total": TELEGRAM_DEFERRED,
    "stk_leads_total": LEADS,
    "stk_retention_deleted_total": RETENTION_DELETED,
    "stk_photo_refusals_total": PHOTO_REFUSALS,
}
_zeroed = False


def start_at_zero() -> None:
    """Create the rare-event series at 0 (idempotent): ``_ZERO_EVENTS``, a failed-jobs series per error
    class and a dead-letter series per consumed stream."""
    global _zeroed
    if _zeroed:
        return
    from shared import streams  # here, not at import: shared.streams imports this module
    from shared.errors import ErrorClass

    for name, labels in _ZERO_EVENTS:
        _COUNTERS[name].labels(**labels)
    for error_class in ErrorClass:
        JOBS.labels(outcome="failed", error_class=error_class.value)
    for stream in (streams.JOBS, streams.DELIVERY, streams.LEADS, streams.TG_OUTBOX):
        STREAM_DEAD.labels(stream=stream)
    _zeroed = True


def exposition() -> bytes:
    """The ``/metrics`` body (Prometheus text format), the rare-event series included at 0."""
    start_at_zero()
    return generate_latest()
