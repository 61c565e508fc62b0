"""Start-up with bad settings: each service exits with code 2 and one line naming the variable and the
reason (:func:`shared.settings.settings_or_exit`, :class:`shared.errors.ConfigError`), never a traceback and
never the value, which may be a secret."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shared.errors import ConfigError
from shared.settings import ServiceSettings, load_settings

pytestmark = pytest.mark.unit


def test_load_settings_names_each_bad_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "mysql://root:hunter2-secret@db/booth")
    monkeypatch.delenv("REDIS_URL", raising=False)
    with pytest.raises(ConfigError) as caught:
        load_settings(ServiceSettings)
    message = str(caught.value)
    assert "DATABASE_URL" in message and "postgresql://" in message
    assert "REDIS_URL: Field required" in message
    assert "hunter2-secret" not in message


@pytest.mark.parametrize(
    ("module", "env", "expected"),
    [
        ("worker", {"STICKER_RENDER_MODE": ""}, "worker: invalid settings: STICKER_RENDER_MODE"),
        (
            "telegram_gateway",
            {"TELEGRAM_BOT_TOKEN": "not-a-token-hunter2-secret"},
            "telegram-gateway: invalid settings: TELEGRAM_BOT_TOKEN",
        ),
        (
            "delivery",
            {"DATABASE_URL": "mysql://root:hunter2-secret@db/booth"},
            "delivery: invalid settings: DATABASE_URL",
        ),
        ("leads", {"REDIS_URL": "http://u:hunter2-secret@x"}, "leads: invalid settings: REDIS_URL"),
    ],
)
def test_a_service_with_bad_settings_exits_2_with_one_line(
    module: str, env: dict[str, str], expected: str
) -> None:
    base = {
        "PATH": os.environ["PATH"],
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/none",
        "REDIS_URL": "redis://127.0.0.1:1/0",
        "BOT_USERNAME": "BoothBot",
    }
    done = subprocess.run(
        [sys.executable, "-m", module], env={**base, **env}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(expected), lines
    assert "Traceback" not in done.stderr
    assert "hunter2-secret" not in done.stderr
