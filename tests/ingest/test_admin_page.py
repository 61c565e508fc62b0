"""The admin page script (``ingest/static/admin/admin.js``) run by Node against a fake DOM and scripted
API answers: the jobs list and the detail show each failed job's error class (``content`` apart from
``invalid`` and ``no_face``, with what it means), and Retry is not offered for a content refusal.
Skipped where Node is not installed."""

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
SCRIPT = str(resources.files("ingest") / "static" / "admin" / "admin.js")
HARNESS = str(Path(__file__).with_name("admin_harness.js"))


def job(short: str, error_class: str | None, error: str | None, *, retryable: bool) -> dict[str, Any]:
    return {
        "id": f"{short}-0000-0000-0000-000000000000",
        "status": "failed",
        "outfit_id": "chef",
        "attempts": 0,
        "error_class": error_class,
        "error": error,
        "sticker_set_name": None,
        "created_at": "2026-12-01T08:00:00+00:00",
        "updated_at": "2026-12-01T08:01:00+00:00",
        "selfie_deleted": False,
        "retryable": retryable,
    }


JOBS = [
    job("aaaaaaaa", "content", "ContentRefused: sheet: every provider refused", retryable=False),
    job("bbbbbbbb", "invalid", "RetryableJobError: no valid sheet", retryable=True),
    job("cccccccc", "permanent", "no face found in the selfie", retryable=True),
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if NODE is None:
        pytest.skip("node is not installed")
    answers = {
        "/admin/status": {"jobs": {"failed": 3}, "pause": None},
        "/admin/jobs/": {**JOBS[0], "events": []},
        "/admin/jobs": {"jobs": JOBS},
        "/admin/leads": {"leads": []},
    }
    path = tmp_path_factory.mktemp("admin") / "answers.json"
    path.write_text(json.dumps(answers))
    done = subprocess.run([NODE, HARNESS, SCRIPT, str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_list_shows_each_failed_jobs_class_at_a_glance(page: dict[str, Any]) -> None:
    shown = [(row["id"], row["errorClass"]["text"]) for row in page["rows"]]
    assert shown == [("aaaaaaaa", "content"), ("bbbbbbbb", "invalid"), ("cccccccc", "no_face")]
    content = page["rows"][0]["errorClass"]
    assert "class-content" in content["className"] and "new selfie" in content["title"]


def test_retry_is_not_offered_for_a_content_refusal(page: dict[str, Any]) -> None:
    retries = [row["retry"] for row in page["rows"]]
    assert retries[0]["disabled"] and "new selfie" in retries[0]["title"]
    assert [r["disabled"] for r in retries[1:]] == [False, False]


def test_the_detail_names_the_class_and_what_it_means(page: dict[str, Any]) -> None:
    assert page["detail"]["Error class"].startswith("content — The AI providers refused this photo")
