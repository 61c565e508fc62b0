"""``DIGEST_HOUR`` (each event's local digest hour) and its deprecated old name ``DIGEST_HOUR_UTC``."""

from __future__ import annotations

import pytest

from delivery.settings import DeliverySettings

REQUIRED = {"DATABASE_URL": "postgresql://db/x", "REDIS_URL": "redis://r", "BOT_USERNAME": "stickerbooth_bot"}


@pytest.mark.parametrize(
    ("env", "hour"),
    [
        ({}, 9),
        ({"DIGEST_HOUR_UTC": "7"}, 7),  # an old deployment's setting is still read
        ({"DIGEST_HOUR": "10", "DIGEST_HOUR_UTC": "7"}, 10),  # the new name wins
    ],
)
def test_the_digest_hour_reads_its_new_name_and_its_old_one(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], hour: int
) -> None:
    for name in ("DIGEST_HOUR", "DIGEST_HOUR_UTC"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**REQUIRED, **env}.items():
        monkeypatch.setenv(name, value)
    assert DeliverySettings().digest_hour == hour  # type: ignore[call-arg]


def test_a_digest_hour_outside_the_day_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**REQUIRED, "DIGEST_HOUR": "24"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="DIGEST_HOUR"):
        DeliverySettings()  # type: ignore[call-arg]
