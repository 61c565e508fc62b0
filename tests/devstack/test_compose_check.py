"""The parts of ``make compose-check`` that need no engine: the version gate, the PromQL selectors, the
container exits it judges and its verdict."""

from __future__ import annotations

from collections import Counter

import pytest

from devstack.chaos import faults as F
from devstack.chaos.ledger import LET_DOWN, Ledger, Observed, Verdict, judge
from devstack.compose_check import (
    MIN_COMPOSE,
    CheckFailed,
    Summary,
    exits_of,
    parse_version,
    rule_exprs,
    selectors,
)

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


def die(name: str, code: int, service: str = "") -> dict[str, object]:
    """A Docker ``die`` event as the engine sends it."""
    attributes = {"name": name, "exitCode": str(code), "com.docker.compose.service": service}
    return {"status": "die", "time": 1, "Actor": {"Attributes": attributes}}


def test_only_the_exits_the_check_caused_are_expected() -> None:
    events = [
        die("p-worker-2", 137),
        die("p-redis-1", 137),
        die("p-worker-2", 137),  # a second death of the killed worker: nobody asked for it
        die("p-ingest-1", 1),
    ]
    exits = exits_of(events, "p", Counter({"p-worker-2": 1, "p-redis-1": 1}))
    assert [(e.service, e.returncode, e.caused) for e in exits] == [
        ("worker-2", 137, True),
        ("redis-1", 137, True),
        ("worker-2", 137, False),
        ("ingest-1", 1, False),
    ]
    observed = Observed([], {}, {}, [], [], -1, Counter({"kill:worker": 1}), exits=exits)
    assert judge(observed, F.KINDS).unexpected_exits == ["worker-2 exited with 137", "ingest-1 exited with 1"]


def test_a_summary_passes_only_when_judged_with_nothing_wrong() -> None:
    summary = Summary()
    assert not summary.passed and "not judged" in summary.text()  # stopped before the ledger
    summary.ledger = Ledger()
    assert summary.passed and "-> PASS" in summary.text()
    summary.problems.append("rule X: stk_x has no series")
    assert not summary.passed


@pytest.mark.parametrize("breach", ["lost", "duplicated", "unexpected_exits"])
def test_a_summary_fails_on_any_breach_of_the_ledger(breach: str) -> None:
    summary = Summary(ledger=Ledger(**{breach: ["x"]}))
    assert not summary.passed and "-> FAIL" in summary.text()


def test_a_summary_fails_on_a_guest_let_down_and_names_them() -> None:
    summary = Summary(ledger=Ledger(verdicts=[Verdict(810_003, LET_DOWN, "silence: job queued", ())]))
    assert not summary.passed
    assert "LET DOWN user 810003: silence: job queued" in summary.text()


def test_a_one_shot_migrate_that_succeeded_is_no_exit_and_one_that_failed_is() -> None:
    """compose runs ``migrate`` again on every ``up`` (e.g. ``--scale worker=3``); its exit 0 is its job."""
    events = [
        die("p-migrate-1", 0, "migrate"),
        die("p-migrate-1", 1, "migrate"),
        die("p-worker-1", 0, "worker"),
    ]
    exits = exits_of(events, "p", Counter())
    assert [(e.service, e.returncode) for e in exits] == [("migrate-1", 1), ("worker-1", 0)]


def test_a_summary_reports_the_gateway_failover_and_fails_without_it() -> None:
    summary = Summary(ledger=Ledger(), gateway_replicas=2, takeover_s=6.4, kill_to_answer_s=7.1)
    assert "failover_s=7.1 " in summary.text() and "lease taken over after 6.4 s" in summary.text()
    assert summary.passed
    summary.problems.append("gateway failover: a guest answered 12.0 s after the leader's kill")
    assert not summary.passed and "-> FAIL" in summary.text()
