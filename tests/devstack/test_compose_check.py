"""The parts of ``make compose-check`` that need no engine: the version gate and the PromQL selectors."""

from __future__ import annotations

import pytest

from devstack.compose_check import MIN_COMPOSE, CheckFailed, Summary, parse_version, rule_exprs, selectors

pytestmark = pytest.mark.unit


def test_compose_versions_are_read_as_debian_and_docker_print_them() -> None:
    assert parse_version("2.26.1-4") == (2, 26) and parse_version("v2.20.0") == (2, 20)
    assert parse_version("2.19.1") < MIN_COMPOSE <= parse_version("2.20.3")
    with pytest.raises(CheckFailed):
        parse_version("docker: 'compose' is not a docker command")


def test_selector_extraction_keeps_matchers_and_skips_promql_syntax() -> None:
    expr = 'sum by (le) (rate(stk_x_bucket{a="b}c", d=~"e|f"}[5m])) / on (x) max(stk_y) > bool 0.2'
    assert selectors(expr) == ['stk_x_bucket{a="b}c", d=~"e|f"}', "stk_y"]
    assert selectors("sum(increase(stk_z[$__range])) and absent(up == 1)") == ["stk_z", "up"]


def test_every_alert_rule_has_a_selector_to_query() -> None:
    assert all(selectors(expr) for expr in rule_exprs().values())


def test_a_summary_fails_on_any_problem_or_invariant_breach() -> None:
    summary = Summary()
    assert summary.passed
    summary.report.lost.append("job x: 0 links")
    assert not summary.passed and "-> FAIL" in summary.text()
