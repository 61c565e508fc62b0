"""Per-venue branding of the kiosk page (issue 13): event title, logo, accent colour.

The values are ingest settings (:class:`ingest.settings.IngestSettings`, ``KIOSK_*``); the page reads them
from ``GET /kiosk/config``. Nothing here reads the environment.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from shared.branding import check_logo_url as check_logo_url


def logo_origin(logo_url: str) -> str | None:
    """The origin a CSP ``img-src`` must allow for ``logo_url`` (``https://host[:port]``), or ``None`` for
    no logo or a logo on the page's own origin."""
    if not logo_url or logo_url.startswith("/"):
        return None
    parts = urlsplit(logo_url)
    return f"https://{parts.netloc}"


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _luminance(rgb: tuple[int, int, int]) -> float:
    r, g, b = (_linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def parse_hex(color: str) -> tuple[int, int, int]:
    """``#rgb`` / ``#rrggbb`` as an (r, g, b) of 0–255. Raises ValueError for anything else."""
    digits = color.removeprefix("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    if len(digits) != 6 or color[:1] != "#":
        raise ValueError(f"not a #rgb or #rrggbb colour: {color!r}")
    return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)


def ink_on(color: str) -> str:
    """The text colour for buttons and badges filled with ``color``: near-black ``#17153b`` or white,
    whichever has the higher WCAG 2.1 contrast ratio with it (w3.org/TR/WCAG21 "contrast ratio": (L1 +
    0.05) / (L2 + 0.05) with relative luminance L)."""
    lum = _luminance(parse_hex(color))
    dark = _luminance((0x17, 0x15, 0x3B))
    on_dark = (lum + 0.05) / (dark + 0.05)
    on_white = 1.05 / (lum + 0.05)
    return "#17153b" if on_dark >= on_white else "#ffffff"


def normalize_hex(color: str) -> str:
    """``#abc`` → ``#aabbcc``, lower case."""
    return "#{:02x}{:02x}{:02x}".format(*parse_hex(color))
