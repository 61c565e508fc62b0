"""``KIOSK_KEY``'s settings: blank is unset, a set key is one a kiosk can carry as the documented
``/kiosk?station=<name>&key=<KIOSK_KEY>`` pasted as it is (README "Ingest limits")."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from pydantic import ValidationError

from tests.ingest.ingest_helpers import ingest_settings

pytestmark = pytest.mark.unit
DB, REDIS = "postgresql://x/y", "redis://x"


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_kiosk_key_is_no_key(blank: str) -> None:
    assert ingest_settings(DB, REDIS, KIOSK_KEY=blank).kiosk_key is None


@pytest.mark.parametrize(
    "key",
    [
        "short-key",  # under 16 characters
        " " + "k" * 20,  # padding
        "ключ-" * 4,  # not ASCII
        # base64 (`openssl rand -base64 18`): `+` reads as a space and `&`, `#`, `%` end or change the
        # query string, so a kiosk opened with it pasted into its URL would never match
        "q1+Zt8/kP0wX3n=Lr5a",
        "venue&kiosk&key&2026",
        "venue#kiosk#key#2026",
        "venue%kiosk%key%2026",
        "venue kiosk key 2026",
    ],
)
def test_a_kiosk_key_a_kiosk_url_cannot_carry_as_it_is_is_refused(key: str) -> None:
    with pytest.raises(ValidationError, match="KIOSK_KEY"):
        ingest_settings(DB, REDIS, KIOSK_KEY=key)


@pytest.mark.parametrize("key", ["0123456789abcdef0123", "venue-kiosk_key.2026~x", "Zt8kP0wX3nLr5aQ1"])
def test_a_url_safe_kiosk_key_is_read_back_from_the_kiosk_url_as_it_is(key: str) -> None:
    settings = ingest_settings(DB, REDIS, KIOSK_KEY=key)
    assert settings.kiosk_key is not None
    url = f"http://booth/kiosk?station=hall-a&key={settings.kiosk_key.get_secret_value()}"
    assert parse_qs(urlsplit(url).query)["key"] == [key]  # what the page's URLSearchParams reads too
