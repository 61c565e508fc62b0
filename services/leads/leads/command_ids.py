"""Ids of the Telegram commands the leads service asks for (``tg_commands.command_id``).

Every send and every search of a post is its own command, numbered by the post's ``attempts`` or
``probes`` counter, so the gateway executes each at most once and an outcome names exactly the attempt it
belongs to: ``lead:<id>:card:<attempt>``, ``lead:<id>:find:<probe>``, ``repeat:<id>:notice:<attempt>``,
``repeat:<id>:find:<probe>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.repositories.lead_posts import CARD, NOTICE

_PREFIX = {CARD: "lead", NOTICE: "repeat"}
_KIND = {"lead": CARD, "repeat": NOTICE}
_SEND_OP = {CARD: "card", NOTICE: "notice"}
_PATTERN = re.compile(r"^(?P<prefix>lead|repeat):(?P<id>\d+):(?P<op>card|notice|find):(?P<n>\d+)$")


@dataclass(frozen=True)
class PostCommand:
    """A parsed command id: ``op`` is ``send`` or ``find``; ``number`` the attempt or probe."""

    kind: str
    post_id: int
    op: str
    number: int


def send_command_id(kind: str, post_id: int, attempt: int) -> str:
    return f"{_PREFIX[kind]}:{post_id}:{_SEND_OP[kind]}:{attempt}"


def find_command_id(kind: str, post_id: int, probe: int) -> str:
    return f"{_PREFIX[kind]}:{post_id}:find:{probe}"


def parse_command_id(command_id: str) -> PostCommand | None:
    """The post and attempt behind ``command_id``; ``None`` for other commands (edits, answers)."""
    match = _PATTERN.match(command_id)
    if match is None:
        return None
    kind = _KIND[match["prefix"]]
    op = "find" if match["op"] == "find" else "send"
    if op == "send" and match["op"] != _SEND_OP[kind]:
        return None
    return PostCommand(kind=kind, post_id=int(match["id"]), op=op, number=int(match["n"]))
