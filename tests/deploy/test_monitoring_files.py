"""monitoring/: promtool on the config, the rules and their unit tests; the rules and dashboards read
contract metrics only."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.deploy_helpers import (
    ALERTS,
    CONTRACT_METRICS,
    DASHBOARDS,
    METRICS_PORTS,
    MONITORING,
    PROMTOOL,
    alert_rules,
    compose_service,
    dashboard_exprs,
    duration_s,
    grafana_round_trip,
    is_known_metric,
    load_yaml,
    lost_in_round_trip,
    metric_names,
    promtool_parse,
    run,
)

pytestmark = pytest.mark.unit


def test_metric_name_extraction_finds_metrics_and_ignores_promql_syntax() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, stage) (rate(stk_stage_seconds_bucket{a="b c"}[5m])))'
    assert metric_names(expr) == {"stk_stage_seconds_bucket"}
    assert metric_names("absent(up == 1) and on (x) foo unless bar") == {"up", "foo", "bar"}
    assert not is_known_metric("stk_jobs") and is_known_metric("stk_provider_latency_seconds_count")


def test_contract_metrics_are_the_ones_shared_metrics_registers() -> None:
    from prometheus_client.metrics import MetricWrapperBase

    from shared import metrics

    registered = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            for family in value.describe():
                registered.add(family.name + ("_total" if family.type == "counter" else ""))
    assert registered == CONTRACT_METRICS, "change monitoring/ together with shared/metrics.py"


def test_prometheus_scrapes_the_five_services_on_their_contract_ports() -> None:
    config = load_yaml(MONITORING / "prometheus.yml")
    assert config["rule_files"] == ["alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    for name, port in METRICS_PORTS.items():
        (sd,) = jobs[name]["dns_sd_configs"]
        assert sd["names"] == [name] and sd["port"] == port, name
        relabel = jobs[name]["relabel_configs"]
        assert {"target_label": "service", "replacement": name} in relabel, name


def test_promtool_accepts_the_config_and_rules_and_the_rule_unit_tests_pass() -> None:
    assert PROMTOOL is not None, "promtool is missing: `make install` unpacks it into .venv/bin"
    for args in (
        ("check", "config", "monitoring/prometheus.yml"),
        ("check", "rules", "monitoring/alerts.yml"),
        ("test", "rules", "monitoring/alerts_test.yml"),
    ):
        result = run(PROMTOOL, *args)
        assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rules_are_well_formed() -> None:
    groups = load_yaml(ALERTS)["groups"]
    assert len({g["name"] for g in groups}) == len(groups)
    names = [rule["alert"] for rule in alert_rules()]
    assert len(set(names)) == len(names), "alert names must be unique"
    for rule in alert_rules():
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]+", rule["alert"])
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
        if "for" in rule:
            duration_s(rule["for"])
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_alert_rules_cover_the_operational_failures() -> None:
    """Each concern of the brief has a rule reading the metric that shows it."""
    by_metric: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in metric_names(rule["expr"]):
            by_metric.setdefault(name, set()).add(rule["alert"])
    concerns = {
        "queue paused": "stk_pause_active",
        "jobs failing": "stk_jobs_total",
        "stream lag high": "stk_stream_lag",
        "dead letters": "stk_stream_dead_total",
        "deadline misses": "stk_deadline_misses_total",
        "gateway down": "up",
        "flood waits spike": "stk_telegram_flood_waits_total",
        "leads failing": "stk_leads_total",
        "ingest answering 5xx": "stk_http_requests_total",
        "a periodic duty failing": "stk_duty_failures_total",
    }
    missing = [concern for concern, metric in concerns.items() if metric not in by_metric]
    assert not missing
    gateway_rules = [r for r in alert_rules() if 'service="telegram-gateway"' in r["expr"]]
    assert gateway_rules and all(r["labels"]["severity"] == "critical" for r in gateway_rules)


def test_alerts_and_dashboards_read_only_contract_metrics() -> None:
    exprs = [rule["expr"] for rule in alert_rules()] + dashboard_exprs()
    tests = load_yaml(MONITORING / "alerts_test.yml")["tests"]
    exprs += [series["series"].split("{")[0] for test in tests for series in test["input_series"]]
    used = set().union(*(metric_names(e) for e in exprs))
    unknown = sorted(name for name in used if not is_known_metric(name))
    assert not unknown, f"not in the metrics contract: {unknown}"


def test_dashboard_has_a_panel_for_every_contract_metric() -> None:
    assert DASHBOARDS
    used = set().union(*(metric_names(e) for e in dashboard_exprs()))
    covered = {name if name in CONTRACT_METRICS else name.rpartition("_")[0] for name in used}
    assert sorted(CONTRACT_METRICS - covered) == []


def test_grafana_provisioning_matches_the_dashboards_and_compose_mounts() -> None:
    provisioning = MONITORING / "grafana" / "provisioning"
    (datasource,) = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    (provider,) = load_yaml(provisioning / "dashboards" / "sticker-booth.yml")["providers"]
    mounts = {v.split(":")[0]: v.split(":")[1] for v in compose_service("grafana")["volumes"]}
    assert mounts["./monitoring/grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./monitoring/grafana/provisioning"] == "/etc/grafana/provisioning"
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        ids = [panel["id"] for panel in dashboard["panels"]]
        assert len(set(ids)) == len(ids), f"{path.name}: duplicate panel ids"
        for panel in dashboard["panels"]:
            if panel["type"] != "row":
                assert panel["datasource"]["uid"] == datasource["uid"], panel["title"]


def load_dashboards() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in DASHBOARDS}


@pytest.mark.parametrize("name", [path.name for path in DASHBOARDS])
def test_dashboard_round_trips_through_grafanas_model_with_no_key_dropped(name: str) -> None:
    """Issue 22 item 4: every key of the dashboard is one Grafana's model (grafana-foundation-sdk of the
    Grafana compose runs) knows, with the value it reads back; the model may only add its defaults."""
    dashboard = load_dashboards()[name]
    assert lost_in_round_trip(dashboard, grafana_round_trip(dashboard)) == []


def test_round_trip_check_catches_misspelt_keys_at_every_level() -> None:
    dashboard = copy.deepcopy(next(iter(load_dashboards().values())))
    panel = next(p for p in dashboard["panels"] if p["type"] == "timeseries")
    panel["gridPoss"] = panel.pop("gridPos")  # the panel itself
    panel["targets"][0]["legendFormt"] = panel["targets"][0].pop("legendFormat")  # a Prometheus query
    panel["fieldConfig"]["defaults"]["unitt"] = panel["fieldConfig"]["defaults"].pop("unit")
    stat = next(p for p in dashboard["panels"] if p["type"] == "stat")
    stat["targts"] = stat.pop("targets")
    stat["options"]["colourMode"] = "value"  # the stat plugin's options
    dashboard["tmie"] = dashboard.pop("time")
    lost = lost_in_round_trip(dashboard, grafana_round_trip(dashboard))
    dropped = sorted(loss.rsplit("/", 1)[1] for loss in lost)
    assert dropped == sorted(
        f"{key} dropped" for key in ("gridPoss", "legendFormt", "unitt", "targts", "colourMode", "tmie")
    )


def test_every_panel_and_rule_expression_parses_with_promtool(tmp_path: Path) -> None:
    """Issue 22 item 4: PromQL of every dashboard query (Grafana's variables given values) and every alert
    rule, parsed by promtool itself."""
    exprs = {f"alert:{rule['alert']}": rule["expr"] for rule in alert_rules()}
    for name, dashboard in load_dashboards().items():
        for panel in dashboard["panels"]:
            for target in panel.get("targets", []):
                exprs[f"panel:{re.sub(r'[^A-Za-z0-9_]', '_', name)}:{panel['id']}:{target['refId']}"] = (
                    target["expr"]
                )
    assert len(exprs) > len(alert_rules())
    result = promtool_parse(exprs, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_parse_check_fails_on_a_broken_expression(tmp_path: Path) -> None:
    result = promtool_parse(
        {
            "panel:ok": "sum(rate(stk_jobs_total[$__rate_interval]))",
            "panel:broken": "sum(rate(stk_jobs_total[5m])",
        },
        tmp_path,
    )
    assert result.returncode != 0 and "panel:broken" in result.stdout + result.stderr
    assert "panel:ok" not in result.stdout + result.stderr
