"""The kiosk logo URL check, shared by ingest's ``KIOSK_LOGO_URL`` setting and an event's branding
(:mod:`shared.events`)."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["check_logo_url"]

_SAFE_PATH = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/%")


def check_logo_url(value: str) -> str:
    """``value`` when it is empty, an ``https://host/...`` URL, or a path on this origin (``/...``).

    Raises:
        ValueError: anything else (``http:``, ``data:``, ``javascript:``, a protocol-relative ``//host``,
            quotes, spaces or control characters), so a venue setting cannot inject into the page or
            weaken its Content-Security-Policy beyond one https origin.
    """
    if not value:
        return value
    if any(c.isspace() or c in "\"'<>\\`" or ord(c) < 0x20 for c in value):
        raise ValueError("KIOSK_LOGO_URL must not contain spaces, quotes or control characters")
    if value.startswith("/") and not value.startswith("//"):
        if not set(value) <= _SAFE_PATH:
            raise ValueError("KIOSK_LOGO_URL as a path may hold only letters, digits and -._~/%")
        return value
    parts = urlsplit(value)
    if parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        raise ValueError(
            "KIOSK_LOGO_URL must be an https:// URL without credentials, or a path like /logo.png"
        )
    return value
