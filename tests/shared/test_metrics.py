"""``/metrics`` of a service that has seen no traffic yet: every series a dashboard panel or an alert rule
selects exists (at 0), so Grafana never shows "No data" on a fresh deployment. Runs in a fresh Python
process, because the test session's registry has seen traffic from other tests."""

from __future__ import annotations

import re
import subprocess
import sys

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from devstack.compose_check import dashboard_exprs, rule_exprs, selectors
from devstack.infra import free_port
from shared.ops import start_ops_server

pytestmark = pytest.mark.unit

#: Labels Prometheus adds when it scrapes (not in a service's exposition), and its own series.
SCRAPE_LABELS = frozenset({"service", "instance", "job"})
SCRAPE_SERIES = frozenset({"up"})
#: Gauges a service sets while it runs (consumer lag and pause state), not at import.
SET_WHILE_RUNNING = frozenset(
    {"stk_stream_lag", "stk_stream_pending", "stk_pause_active", "stk_job_queue_depth"}
    # created at 0 for each duty a service declares, when the runtime starts it (tests/shared/test_runtime.py)
    | {"stk_duty_failures_total"}
    # created at 0 per provider when the worker builds its FleetBudget (tests/worker/providers/test_budget.py)
    | {
        "stk_provider_budget_held",
        "stk_provider_budget_unavailable_total",
        "stk_provider_budget_wait_seconds_bucket",
        "stk_provider_budget_waits_total",
    }
)
#: Filled by a request or a call; their panels are rates of traffic that a running stack always has.
FILLED_BY_TRAFFIC = frozenset(
    {
        "stk_stage_seconds_bucket",
        "stk_sticker_likeness_bucket",  # a distribution of delivered stickers, like the stage times
        "stk_provider_calls_total",
        "stk_provider_latency_seconds_bucket",
        "stk_provider_latency_seconds_sum",
        "stk_provider_latency_seconds_count",
        "stk_provider_cost_usd_total",
        "stk_telegram_calls_total",
        "stk_http_requests_total",
        "stk_leads_pending_age_seconds",
    }
)


def fresh_samples() -> list[tuple[str, dict[str, str]]]:
    code = "import sys; from shared.metrics import exposition; sys.stdout.write(exposition().decode())"
    text = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return [(s.name, s.labels) for family in text_string_to_metric_families(text) for s in family.samples]


def matches(selector: str, name: str, labels: dict[str, str]) -> bool:
    wanted, _, matchers = selector.partition("{")
    if wanted != name:
        return False
    for label, op, value in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', matchers):
        if label in SCRAPE_LABELS:
            continue
        actual = labels.get(label, "")
        ok = {
            "=": actual == value,
            "!=": actual != value,
            "=~": re.fullmatch(value, actual) is not None,
            "!~": re.fullmatch(value, actual) is None,
        }[op]
        if not ok:
            return False
    return True


def test_every_rare_event_series_a_panel_or_rule_selects_exists_before_any_traffic() -> None:
    samples = fresh_samples()
    exprs = [*dashboard_exprs(), *rule_exprs().values()]
    checked, missing = 0, []
    for selector in {s for e in exprs for s in selectors(e)}:
        name = selector.partition("{")[0]
        if name in SCRAPE_SERIES | SET_WHILE_RUNNING | FILLED_BY_TRAFFIC:
            continue
        checked += 1
        if not any(matches(selector, n, labels) for n, labels in samples):
            missing.append(selector)
    assert checked >= 5
    assert not sorted(missing), "no series until the first such event: the panel or rule shows No data"


@pytest.mark.integration
async def test_the_ops_endpoint_serves_the_rare_event_series_at_zero() -> None:
    async def ready() -> None:
        return None

    port = free_port()
    runner = await start_ops_server(port, ready=ready, alive=lambda: True)
    assert runner is not None
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{port}/metrics") as response,
        ):
            body = await response.text()
    finally:
        await runner.cleanup()
    assert 'stk_deadline_misses_total{kind="failed"}' in body
    assert 'stk_stream_dead_total{stream="stk:jobs"}' in body
