"""docs/runbooks.md and the alert rules' runbook_url (issue 22 item 5): every alert links to its own section,
and each section names real dashboard panels and real log events."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from tests.deploy.deploy_helpers import (
    DASHBOARDS,
    RUNBOOK_PARTS,
    RUNBOOKS,
    alert_rules,
    heading_anchor,
    logged_event_names,
    markdown_sections,
    runbook_problems,
)

pytestmark = pytest.mark.unit


def panel_titles() -> set[str]:
    return {
        panel["title"]
        for path in DASHBOARDS
        for panel in json.loads(path.read_text(encoding="utf-8"))["panels"]
    }


def test_every_alert_links_to_its_own_complete_runbook_section() -> None:
    assert runbook_problems(alert_rules(), RUNBOOKS, panel_titles(), logged_event_names()) == []
    urls = [rule["annotations"]["runbook_url"] for rule in alert_rules()]
    assert urls == [f"docs/runbooks.md#{heading_anchor(rule['alert'])}" for rule in alert_rules()]


def test_runbook_has_a_section_for_each_alert_and_no_other_alert_section() -> None:
    alerts = {heading_anchor(rule["alert"]) for rule in alert_rules()}
    sections = {anchor for anchor in markdown_sections(RUNBOOKS) if anchor.startswith("sticker")}
    assert sections == alerts


def test_heading_anchors_are_githubs() -> None:
    assert heading_anchor("StickerQueuePausedAuto") == "stickerqueuepausedauto"
    assert heading_anchor("How this page is checked") == "how-this-page-is-checked"
    assert heading_anchor("What (not) to do: 5xx_errors") == "what-not-to-do-5xx_errors"


def test_runbook_check_fails_on_a_missing_url_a_missing_section_and_invented_names(tmp_path: Path) -> None:
    rules = copy.deepcopy(alert_rules())
    rules[0]["annotations"].pop("runbook_url")
    rules[1]["annotations"]["runbook_url"] = "docs/runbooks.md#stickerqueuepausedmanua"  # misspelt anchor
    rules[2]["annotations"]["runbook_url"] = "docs/runbook.md#stickerjobsfailing"  # another file
    titles, events = panel_titles(), logged_event_names()
    problems = runbook_problems(rules, RUNBOOKS, titles, events)
    assert [p.split(":")[0] for p in problems] == [rule["alert"] for rule in rules[:3]]

    # a copy of the runbook whose sections name a panel and an event that do not exist, or lack a part
    broken = tmp_path / "docs" / "runbooks.md"
    broken.parent.mkdir()
    shutil.copy(RUNBOOKS, broken)
    text = broken.read_text(encoding="utf-8")
    text = text.replace(
        '"Queue paused" (1), "Jobs queued" (rising)', '"Queue paused" (1), "Jobs queue" (rising)', 1
    )
    text = text.replace("`JOB_FAILED`", "`JOB_FAILD`", 1)
    text = text.replace("- **Escalate:** when the lag still grows", "- when the lag still grows", 1)
    broken.write_text(text, encoding="utf-8")
    rules = copy.deepcopy(alert_rules())
    for rule in rules:
        rule["annotations"]["runbook_url"] = str(broken) + "#" + heading_anchor(rule["alert"])
    problems = runbook_problems(rules, broken, titles, events)
    assert problems == [
        "StickerQueuePausedAuto: dashboard panels not in the dashboard: ['Jobs queue']",
        "StickerJobsFailing: log events no service logs: ['JOB_FAILD']",
        "StickerJobStreamLagHigh: the runbook section lacks ['Escalate']",
    ]
    assert "Escalate" in RUNBOOK_PARTS
