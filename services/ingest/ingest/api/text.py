"""Text types for every string the HTTP API takes: code points that have no place in text are refused.

A field typed :data:`SingleLine` or :data:`MultiLine` answers 422 with the code ``invalid_characters``
(see :mod:`ingest.api.errors`) when its value contains one of:

- U+0000 NUL (Postgres refuses it in ``text``: without this check a lead with a NUL answered 500 and was
  lost), and the other C0 controls U+0001–U+001F, except tab, line feed and carriage return in
  :data:`MultiLine` fields (a ``<textarea>`` sends ``\\r\\n``);
- U+007F DEL and the C1 controls U+0080–U+009F;
- lone surrogates U+D800–U+DFFF (JSON ``"\\ud800"`` decodes to one; it cannot be encoded as UTF-8);
- the 66 noncharacters U+FDD0–U+FDEF and U+nFFFE, U+nFFFF of every plane (Unicode §23.7).

The check runs before any other constraint of the field (length, pattern), so the code is the same
whatever else is wrong with the value. Source of the categories: Unicode Standard §23.1 (controls),
§23.7 (noncharacters); RFC 8264 §9 excludes the same classes from its identifier and free-form classes.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, StringConstraints
from pydantic_core import PydanticCustomError

__all__ = [
    "INVALID_CHARACTERS",
    "MultiLine",
    "SingleLine",
    "TrimmedLine",
    "TrimmedText",
    "first_invalid_character",
]

INVALID_CHARACTERS = "invalid_characters"

_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(
    f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17)
)
_ALWAYS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff" + _NONCHARACTERS
_SINGLE_LINE = re.compile(f"[\t\n\r{_ALWAYS}]")
_MULTI_LINE = re.compile(f"[{_ALWAYS}]")


def first_invalid_character(value: str, *, newlines: bool) -> int | None:
    """Index of the first refused code point in ``value`` (module docstring), or None when it is clean.

    Args:
        value: the text as decoded from the request.
        newlines: whether tab, LF and CR are allowed (multi-line fields).
    """
    match = (_MULTI_LINE if newlines else _SINGLE_LINE).search(value)
    return match.start() if match else None


def _checker(*, newlines: bool) -> BeforeValidator:
    def check(value: object) -> object:
        if isinstance(value, str):
            index = first_invalid_character(value, newlines=newlines)
            if index is not None:
                raise PydanticCustomError(
                    INVALID_CHARACTERS,
                    "The text contains a character that is not allowed (U+{code_point}) at position {index}.",
                    {"code_point": f"{ord(value[index]):04X}", "index": index},
                )
        return value

    return BeforeValidator(check)


_LINE = _checker(newlines=False)
_TEXT = _checker(newlines=True)

SingleLine = Annotated[str, _LINE]
"""One line of text: no control characters at all (module docstring)."""

MultiLine = Annotated[str, _TEXT]
"""Free text: tab, LF and CR allowed, other controls refused (module docstring)."""

# The check must wrap the stripping, or a field's min_length would be checked before the strip.
TrimmedLine = Annotated[str, StringConstraints(strip_whitespace=True), _LINE]
""":data:`SingleLine` with surrounding whitespace removed before the field's length limits."""

TrimmedText = Annotated[str, StringConstraints(strip_whitespace=True), _TEXT]
""":data:`MultiLine` with surrounding whitespace removed before the field's length limits."""
