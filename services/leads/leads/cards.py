"""What staff see in the leads chat: a lead's card, a repeat notice, and the buttons under them.

Pure functions of the stored rows (HTML texts, user input escaped). Button callback data carries the
``stickers_`` prefix, by which the gateway routes presses to the leads service (DESIGN.md §7):
``stickers_lead:<lead id>:take|done|spam`` and ``stickers_repeat:<repeat id>:seen``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from shared.domain import Lead, LeadRepeat

ACTIONS = ("take", "done", "spam")
#: lead status a button sets, and the statuses it may be pressed in (a conditional update)
TARGET_STATUS = {"take": "taken", "done": "done", "spam": "spam"}
ALLOWED_FROM = {"take": ("new",), "done": ("new", "taken"), "spam": ("new", "taken")}
_BUTTON_TEXT = {"take": "🙋 Take", "done": "✅ Done", "spam": "🚫 Spam"}
_STATUS_LINE = {
    "taken": "🙋 Taken by {who}",
    "done": "✅ Done by {who}",
    "spam": "🚫 Marked as spam by {who}",
}
_DATA = re.compile(r"^stickers_(?P<kind>lead|repeat):(?P<id>\d{1,18}):(?P<action>take|done|spam|seen)$")


@dataclass(frozen=True)
class Button:
    """A parsed callback: ``kind`` ``lead`` (action take/done/spam) or ``repeat`` (action seen)."""

    kind: str
    id: int
    action: str


def parse_button(data: str) -> Button | None:
    """The button behind callback ``data``; ``None`` for anything we never put on a card."""
    match = _DATA.match(data)
    if match is None:
        return None
    kind, action = match["kind"], match["action"]
    if (kind == "lead") != (action in ACTIONS):
        return None
    return Button(kind=kind, id=int(match["id"]), action=action)


def presser(name: str, username: str | None) -> str:
    """How a staff member is shown: ``Maria (@maria)``."""
    return f"{name} (@{username})" if username else name


def card_text(lead: Lead) -> str:
    """The card: number, name, contact, message, page, UTM fields and, once pressed, who did what."""
    lines = [
        f"<b>Lead #{lead.id}</b>",
        f"Name: {html.escape(lead.name)}",
        f"Contact: {html.escape(lead.contact)}",
    ]
    if lead.message:
        lines.append(f"Message: {html.escape(lead.message)}")
    if lead.source_page:
        lines.append(f"Page: {html.escape(lead.source_page)}")
    for key, value in sorted(lead.utm.items()):
        lines.append(f"{html.escape(key)}: {html.escape(str(value))}")
    if lead.status in _STATUS_LINE and lead.status_by_name:
        lines.append("")
        lines.append(_STATUS_LINE[lead.status].format(who=html.escape(lead.status_by_name)))
    return "\n".join(lines)


def card_markup(lead: Lead) -> dict[str, Any] | None:
    """The buttons still useful in the lead's status: all three while ``new``, done/spam once taken,
    none when it is done or spam."""
    actions = [a for a in ACTIONS if lead.status in ALLOWED_FROM[a]]
    if not actions:
        return None
    return {
        "inline_keyboard": [
            [{"text": _BUTTON_TEXT[a], "callback_data": f"stickers_lead:{lead.id}:{a}"} for a in actions]
        ]
    }


def notice_text(repeat: LeadRepeat, lead: Lead, *, seen_by: str | None = None) -> str:
    """The notice under a lead's card when the same contact writes again."""
    lines = [f"🔁 <b>Lead #{lead.id} wrote again</b> (same contact)", f"Name: {html.escape(repeat.name)}"]
    if repeat.message:
        lines.append(f"Message: {html.escape(repeat.message)}")
    if repeat.source_page:
        lines.append(f"Page: {html.escape(repeat.source_page)}")
    if seen_by:
        lines.append(f"👀 Seen by {html.escape(seen_by)}")
    return "\n".join(lines)


def notice_markup(repeat: LeadRepeat) -> dict[str, Any]:
    """One "Seen" button; it also makes the notice recognisable when a send's outcome is unknown."""
    return {"inline_keyboard": [[{"text": "👀 Seen", "callback_data": f"stickers_repeat:{repeat.id}:seen"}]]}
