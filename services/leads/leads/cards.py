"""What staff see in the leads chat: a lead's card, a repeat notice, and the buttons under them.

Pure functions of the stored rows (HTML texts, user input escaped). Button callback data carries the
``stickers_`` prefix, by which the gateway routes presses to the leads service (DESIGN.md §7):
``stickers_lead:<lead id>:take|done|spam|reopen`` and ``stickers_repeat:<repeat id>:seen``.

Lead status (issue 13 item 4; DESIGN.md §8 names the buttons but no rules, so these are ours). The
*holder* is whoever pressed Take (``leads.taken_by_*``); it stays through Done, Spam and Reopen.

| button | from | to | who may press it |
|---|---|---|---|
| Take | ``new`` | ``taken`` (the presser holds it) | anyone |
| Done | ``taken`` | ``done`` | the holder or an admin |
| Done | ``new`` (an old card's button) | ``done`` | an admin (anyone else: take it first) |
| Spam | ``new`` | ``spam`` | anyone |
| Spam | ``taken`` | ``spam`` | the holder or an admin |
| Reopen | ``done``, ``spam`` | ``taken`` if held, else ``new`` | the holder or an admin; anyone if unheld |

Admins are ``ADMIN_USER_IDS`` (the ids the gateway's admin commands accept). A press someone else may not
make is answered with an alert naming the holder (:func:`refusal`); the card shows the buttons of its
status (:func:`card_markup`): Take and Spam while ``new``, Done and Spam once taken, Reopen once closed.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from shared.domain import Lead, LeadRepeat, LeadStatus

ACTIONS = ("take", "done", "spam", "reopen")
_NEW, _TAKEN, _DONE, _SPAM = LeadStatus.NEW, LeadStatus.TAKEN, LeadStatus.DONE, LeadStatus.SPAM
#: lead status a button sets (Reopen's depends on the holder: :data:`REOPENED`)
TARGET_STATUS = {"take": _TAKEN, "done": _DONE, "spam": _SPAM}
#: the status of a reopened lead, by whether it has a holder
REOPENED = {True: _TAKEN, False: _NEW}
#: the statuses a button may be pressed in (a conditional update), for an admin; each edge is one of
#: :data:`shared.repositories.leads.ALLOWED`
ALLOWED_FROM: dict[str, tuple[LeadStatus, ...]] = {
    "take": (_NEW,),
    "done": (_NEW, _TAKEN),
    "spam": (_NEW, _TAKEN),
    "reopen": (_DONE, _SPAM),
}
#: the same for everyone else: Done only on a lead taken (by the presser, :data:`HOLDER_ONLY`)
STAFF_ALLOWED_FROM = {**ALLOWED_FROM, "done": (_TAKEN,)}
#: buttons that a lead's holder (or an admin) alone may press once someone holds it
HOLDER_ONLY = frozenset({"done", "spam", "reopen"})
#: the buttons shown under a card in each status
SHOWN: dict[str, tuple[str, ...]] = {
    _NEW: ("take", "spam"),
    _TAKEN: ("done", "spam"),
    _DONE: ("reopen",),
    _SPAM: ("reopen",),
}
_BUTTON_TEXT = {"take": "🙋 Take", "done": "✅ Done", "spam": "🚫 Spam", "reopen": "↩️ Reopen"}
_STATUS_LINE = {
    "taken": "🙋 Taken by {who}",
    "done": "✅ Done by {who}",
    "spam": "🚫 Marked as spam by {who}",
}
_DATA = re.compile(
    r"^stickers_(?P<kind>lead|repeat):(?P<id>\d{1,18}):(?P<action>take|done|spam|reopen|seen)$"
)


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


#: Telegram's limit on a message text: "1-4096 characters after entities parsing"
#: (core.telegram.org/bots/api#sendmessage, #editmessagetext); counted here in UTF-16 code units, the unit
#: of Telegram's entity offsets (core.telegram.org/api/entities), never fewer than characters.
MAX_TEXT_CHARS = 4096


def card_text(lead: Lead) -> str:
    """The card: number, name, contact, message, page, UTM fields and, once pressed, who did what.

    Within Telegram's :data:`MAX_TEXT_CHARS`: a lead at every field's cap (ingest's limits: name 120,
    contact 254, message 2000, page 500, five UTM fields of 200) with staff names made a card of 4,276
    characters, which Telegram refuses ("message is too long") on every attempt; the message is then cut
    to fit and ends in "…" (the whole message stays on the lead, e.g. the admin page).
    """
    text = _card_text(lead, lead.message)
    over = _telegram_length(text) - MAX_TEXT_CHARS
    if over > 0:
        text = _card_text(lead, lead.message[: max(0, len(lead.message) - over - 1)] + "…")
    return text


def _telegram_length(text: str) -> int:
    """The length Telegram counts of an HTML ``text``: tags removed, entities decoded, in UTF-16 units."""
    plain = html.unescape(re.sub(r"<[^>]+>", "", text))
    return len(plain.encode("utf-16-le")) // 2


def _card_text(lead: Lead, message: str) -> str:
    lines = [
        f"<b>Lead #{lead.id}</b>",
        f"Name: {html.escape(lead.name)}",
        f"Contact: {html.escape(lead.contact)}",
    ]
    if message:
        lines.append(f"Message: {html.escape(message)}")
    if lead.source_page:
        lines.append(f"Page: {html.escape(lead.source_page)}")
    for key, value in sorted(lead.utm.items()):
        lines.append(f"{html.escape(key)}: {html.escape(str(value))}")
    if lead.status == "new" and lead.status_by_name:  # only a Reopen sets a new lead's presser
        lines.append("")
        lines.append(f"↩️ Reopened by {html.escape(lead.status_by_name)}")
    if lead.status in _STATUS_LINE and lead.status_by_name:
        lines.append("")
        who = lead.taken_by_name if lead.status == "taken" and lead.taken_by_name else lead.status_by_name
        lines.append(_STATUS_LINE[lead.status].format(who=html.escape(who)))
        if lead.status == "taken" and lead.status_by_name != who:
            lines.append(f"↩️ Reopened by {html.escape(lead.status_by_name)}")
        elif lead.status in ("done", "spam") and lead.taken_by_name and lead.taken_by_name != who:
            lines.append(f"🙋 Taken by {html.escape(lead.taken_by_name)}")
    return "\n".join(lines)


def may_press(lead: Lead, action: str, *, user_id: int, admin: bool) -> bool:
    """Whether ``user_id`` may press ``action`` on ``lead`` now (module docstring "Lead status"); the
    conditional update in :meth:`shared.repositories.leads.LeadRepository.set_status` decides the race."""
    allowed = ALLOWED_FROM if admin else STAFF_ALLOWED_FROM
    if lead.status not in allowed[action]:
        return False
    return admin or action not in HOLDER_ONLY or lead.taken_by_id in (None, user_id)


def refusal(lead: Lead, action: str, *, user_id: int, admin: bool) -> tuple[str, bool]:
    """Why ``user_id`` cannot press ``action`` on ``lead``: ``(text, show_alert)``. An alert (which the
    presser must dismiss) when someone else holds the lead or it must be taken first; a toast when the
    press simply came too late (the lead is already in another status)."""
    by = f" by {lead.status_by_name}" if lead.status_by_name else ""
    if lead.status not in ALLOWED_FROM[action]:
        return f"Lead #{lead.id} is already {lead.status}{by}.", False
    if action == "done" and lead.status == "new" and not admin:
        return f"Take lead #{lead.id} first: only the one who took it (or an admin) can mark it done.", True
    holder = lead.taken_by_name or "another staff member"
    return (
        f"Lead #{lead.id} is held by {holder}. Only they or an admin can "
        f"{'reopen it' if action == 'reopen' else 'mark it ' + TARGET_STATUS[action]}.",
        True,
    )


def card_markup(lead: Lead) -> dict[str, Any] | None:
    """The buttons of the lead's status (:data:`SHOWN`): Take and Spam while ``new``, Done and Spam once
    taken, Reopen once done or spam."""
    actions = SHOWN.get(lead.status, ())
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
