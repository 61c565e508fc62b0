"""No real-looking secret value in any deployment file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.deploy_helpers import DEPLOY_FILES, ROOT, SECRET_PATTERNS

pytestmark = pytest.mark.unit


def test_secret_patterns_catch_real_looking_values() -> None:
    samples = {
        "Telegram bot token": "123456789:" + "A" * 35,
        "OpenAI key": "sk-" + "a1" * 12,
        "Google API key": "AIza" + "B" * 35,
        "private key": "-----BEGIN RSA PRIVATE KEY-----",
        "credentials in a URL": "postgresql://booth:hunter2hunter2@db:5432/booth",
    }
    for kind, pattern in SECRET_PATTERNS.items():
        assert pattern.search(samples[kind]), kind
    assert not SECRET_PATTERNS["credentials in a URL"].search("postgresql://<user>:<password>@<host>:5432/db")


@pytest.mark.parametrize("path", DEPLOY_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_secret_values_are_committed(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [kind for kind, pattern in SECRET_PATTERNS.items() if pattern.search(text)]
    assert not found, f"{path.relative_to(ROOT)} holds what looks like a {found}"
