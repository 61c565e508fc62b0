"""Prometheus metrics shared by all services (DESIGN.md §10). No personal data in labels.

Names are the contract of ``monitoring/`` (dashboards and alert rules): change them together.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

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
JOB_QUEUE_DEPTH = Gauge("stk_job_queue_depth", "Jobs in status queued")
PROVIDER_CALLS = Counter("stk_provider_calls_total", "AI provider calls", ["provider", "model", "outcome"])
PROVIDER_LATENCY = Histogram(
    "stk_provider_latency_seconds",
    "AI provider call latency (s)",
    ["provider", "model"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180),
)
PROVIDER_COST = Counter("stk_provider_cost_usd_total", "AI spend (USD)", ["provider", "model"])
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
DELIVERY_FLOOD_WAITS = Counter(
    "stk_delivery_flood_waits_total", "Delivery steps rescheduled by a Telegram 429 (retry_after)", ["step"]
)
DEADLINE_MISSES = Counter("stk_deadline_misses_total", "Jobs that missed a guest deadline", ["kind"])
LEADS = Counter("stk_leads_total", "Lead events", ["event"])
LEADS_PENDING_AGE = Gauge("stk_leads_pending_age_seconds", "Age of the oldest lead without a posted card (s)")
HTTP_REQUESTS = Counter("stk_http_requests_total", "HTTP requests served", ["route", "status"])
