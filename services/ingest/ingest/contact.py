"""A landing visitor's contact: a phone number, an e-mail address or a Telegram username.

:func:`parse_contact` tells which and gives a normalised ``key``: two leads with the same key are the same
person (the second becomes a repeat notice under the first card, DESIGN.md §8). Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s.]{2,}$")
_TELEGRAM = re.compile(r"^(?:@|(?:https?://)?(?:t\.me|telegram\.me)/)(?P<name>[A-Za-z][A-Za-z0-9_]{4,31})/?$")
_PHONE_CHARS = re.compile(r"^\+?[0-9()\-.\s]+$")
INVALID = "Enter a phone number, an e-mail address or a Telegram @username."


@dataclass(frozen=True)
class Contact:
    """``kind``: ``phone``, ``email`` or ``telegram``; ``key``: the normalised identity
    (``tel:+79990000000``, ``email:ann@example.com``, ``tg:ann_k``)."""

    kind: str
    key: str


def parse_contact(raw: str) -> Contact:
    """Classify and normalise ``raw`` (already stripped).

    Phones: 7 to 15 digits (ITU-T E.164) with optional ``+``, spaces, dashes, dots and brackets; an
    11-digit number written with the Russian trunk prefix ``8`` is the same as ``+7``. Telegram: ``@name``
    or a ``t.me/name`` link, 5 to 32 characters (core.telegram.org/method/account.checkUsername).

    Raises:
        ValueError: none of the three (the message is shown to the visitor).
    """
    text = raw.strip()
    if "@" in text and not text.startswith("@"):
        if _EMAIL.match(text) and len(text) <= 254:
            return Contact("email", f"email:{text.lower()}")
        raise ValueError(INVALID)
    telegram = _TELEGRAM.match(text)
    if telegram is not None:
        return Contact("telegram", f"tg:{telegram['name'].lower()}")
    if _PHONE_CHARS.match(text):
        digits = re.sub(r"\D", "", text)
        if 7 <= len(digits) <= 15:
            if not text.startswith("+") and len(digits) == 11 and digits.startswith("8"):
                digits = "7" + digits[1:]
            return Contact("phone", f"tel:+{digits}")
    raise ValueError(INVALID)
