"""The embeddable landing script (``ingest/static/leads.js``) run by Node with a scripted ``fetch``: it
retries with the same ``requestId``, does not retry a refused form, and keeps the visitor's text (and the
request id) when sending fails. Skipped where Node is not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit
NODE = shutil.which("node")
SCRIPT = str(resources.files("ingest") / "static" / "leads.js")

HARNESS = str(Path(__file__).with_name("landing_harness.js"))


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    if NODE is None:
        pytest.skip("node is not installed")
    done = subprocess.run([NODE, HARNESS, SCRIPT], capture_output=True, text=True, timeout=30, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_a_failed_post_is_retried_with_the_same_request_id(run: dict[str, Any]) -> None:
    assert run["retried"] == {"ok": True, "number": 7, "repeat": False, "attempts": 3}
    assert run["retriedIds"] == ["req-node-0001"] * 3
    assert run["waits"] == [1000, 2000]


def test_a_refused_form_is_not_retried_and_names_the_field(run: dict[str, Any]) -> None:
    assert run["invalid"] == {"ok": False, "reason": "invalid", "fields": {"contact": "Enter a phone number"}}
    assert run["invalidCalls"] == 1


def test_after_three_failures_the_visitor_is_told(run: dict[str, Any]) -> None:
    assert run["down"] == {"ok": False, "reason": "unavailable", "attempts": 3}


def test_the_form_keeps_the_text_and_the_request_id_until_it_is_sent(run: dict[str, Any]) -> None:
    assert run["failed"]["ok"] is False
    assert run["keptText"] == "Booth for 300"
    assert "Your text is kept" in run["failedStatus"]
    assert run["draft"]["message"] == "Booth for 300"
    assert len(set(run["formIds"])) == 1 and run["draft"]["requestId"] == run["formIds"][0]
    assert run["second"]["number"] == 12 and run["resets"] == 1 and "#12" in run["okStatus"]
    assert run["draftAfter"] is None
    assert run["utm"] == {"utm_source": "ads"}


def test_a_reload_restores_the_draft_and_its_request_id(run: dict[str, Any]) -> None:
    assert run["restored"] == {"id": "req-kept-0001", "name": "Bo", "message": "hi"}


def test_an_unticked_consent_line_stops_the_form_and_a_ticked_one_is_sent(run: dict[str, Any]) -> None:
    assert run["unticked"]["reason"] == "consent_required" and run["untickedCalls"] == 0
    assert run["untickedMark"] == "true" and run["untickedStatus"].startswith("Please tick the consent box")
    assert run["ticked"]["ok"] is True and run["tickedBody"]["consent"] is True
    assert run["tickedMark"] is None
    assert run["tickedStatus"] == "Спасибо! Заявка №21 у нас, скоро свяжемся."  # the language switched
