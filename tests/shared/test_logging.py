from __future__ import annotations

import pytest

from shared.logging import redact

pytestmark = pytest.mark.unit


def test_redact_removes_bot_tokens_api_keys_and_key_values() -> None:
    line = (
        "POST https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ/sendMessage "
        "key sk-proj-abcdefghijklmnop1234 google AIzaSyA1234567890abcdefghijklmnopqrstu "
        "url ?api_key=hunter2&x=1"
    )
    clean = redact(line)
    assert "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ" not in clean
    assert "sk-proj-abcdefghijklmnop1234" not in clean
    assert "AIzaSyA1234567890abcdefghijklmnopqrstu" not in clean
    assert "hunter2" not in clean
    assert "x=1" in clean and "sendMessage" in clean
