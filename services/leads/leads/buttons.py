"""Button presses on lead cards and repeat notices, and the leads chat's message ids (``tg:updates:leads``).

A press moves the lead's status with a conditional update by the rules of :mod:`leads.cards` ("Lead
status": Take, Done and Spam, Reopen; Done, Spam and Reopen of a held lead only by its holder or an admin,
``ADMIN_USER_IDS``), so two staff members pressing at once get one winner; the card is edited in place to
show who pressed, and the press is answered: a press the presser may not make with an alert naming the
holder. Both are Telegram commands written in the same
transaction as the status (commit, then publish). A press on a card whose lead we do not know (an old
card, a reset database) or on anything we never sent gets a polite answer: an orphan button.

A press also proves that the card exists: a card whose send had an unknown outcome is marked posted with
the pressed message's id. Every message id seen in the chat raises the chat's highest known id, the lower
bound of any later search (:mod:`telegram_gateway.message_probe`).

A card edit to status version ``n`` cancels the edits to older versions still pending (held by a flood
wait: the gateway sends a deferred edit when the wait ends, issue 21), so the card never goes back to a
stale status.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import structlog

from leads.cards import (
    ALLOWED_FROM,
    HOLDER_ONLY,
    STAFF_ALLOWED_FROM,
    TARGET_STATUS,
    Button,
    card_markup,
    card_text,
    may_press,
    notice_text,
    parse_button,
    presser,
    refusal,
)
from shared import command_ids, metrics
from shared.commands import AnswerCallbackQuery, EditMessageText
from shared.messages import LeadButtonPressed, LeadsChatMessage
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.repositories.lead_posts import CARD, NOTICE
from shared.streams import Publisher
from shared.subjects import CallbackAnswer, PostStep

log = structlog.get_logger(__name__)

#: How long an answer to a button press is worth sending (``expires_at`` of ``answerCallbackQuery``): Telegram
#: refuses a late one with 400 "query is too old and response timeout expired" and does not publish the
#: window (core.telegram.org/bots/api#answercallbackquery); bots observe about 15 s, as our simulator does
#: (``simulators.telegram.config`` ``callback_answer_timeout``). An answer a flood wait holds longer is
#: cancelled unsent by the gateway instead of being sent to fail.
CALLBACK_ANSWER_TTL = timedelta(seconds=15)
ORPHAN = "This card is no longer tracked, so the button does nothing. Thank you!"
_DONE_TEXT = {
    "take": "You took lead #{id}.",
    "done": "Lead #{id} is done.",
    "spam": "Lead #{id} is marked as spam.",
    "reopen": "Lead #{id} is open again.",
}


class ButtonHandler:
    """Handles ``tg:updates:leads``. ``now`` returns the current UTC time; ``per_minute`` sizes the chat's
    token bucket when this is the first thing the service learns about the chat; ``admin_ids``: the
    Telegram user ids that may finish or reopen any lead (``ADMIN_USER_IDS``)."""

    def __init__(
        self,
        *,
        db: Database,
        publisher: Publisher,
        now: Callable[[], datetime],
        per_minute: float = 20.0,
        admin_ids: frozenset[int] = frozenset(),
    ) -> None:
        self.db = db
        self.publisher = publisher
        self.now = now
        self.per_minute = per_minute
        self.admin_ids = admin_ids

    async def note_chat_message(self, message: LeadsChatMessage) -> None:
        """Stream handler for a message id seen in the leads chat (the flood pacing counts it)."""
        async with self.db.transaction() as repos:
            await repos.lead_posts.note_message_id(
                message.chat_id, message.message_id, now=self.now(), capacity=self.per_minute
            )

    async def press(self, pressed: LeadButtonPressed) -> None:
        """Apply one press (safe to repeat: the answer and the edit are commands with fixed ids)."""
        button = parse_button(pressed.data)
        commands: list[str] = []
        async with self.db.transaction() as repos:
            if pressed.chat_id is not None and pressed.message_id is not None:
                await repos.lead_posts.note_message_id(
                    pressed.chat_id, pressed.message_id, now=self.now(), capacity=self.per_minute
                )
            alert = False
            if button is None:
                answer = ORPHAN
            elif button.kind == "lead":
                answer, alert = await self._press_card(repos, pressed, button, commands)
            else:
                answer = await self._press_notice(repos, pressed, button, commands)
            answer_id = command_ids.callback_answer(pressed.callback_query_id)
            reply = AnswerCallbackQuery(
                callback_query_id=pressed.callback_query_id, text=answer, show_alert=alert or None
            )
            subject = CallbackAnswer(id=pressed.callback_query_id)
            expires = self.now() + CALLBACK_ANSWER_TTL
            if await add_command(repos, answer_id, reply, subject=subject, expires_at=expires):
                commands.insert(0, answer_id)
        await dispatch_commands(self.db, self.publisher, commands)

    async def _press_card(
        self, repos: Repositories, pressed: LeadButtonPressed, button: Button, commands: list[str]
    ) -> tuple[str, bool]:
        """Apply a card button; returns the answer and whether it is an alert."""
        lead = await repos.leads.get(button.id)
        if lead is None:
            log.info("LEAD_ORPHAN_BUTTON", data=pressed.data)
            return ORPHAN, False
        await self._prove_posted(repos, CARD, lead.id, pressed)
        who = presser(pressed.user_name, pressed.username)
        action = button.action
        admin = pressed.user_id in self.admin_ids
        if not may_press(lead, action, user_id=pressed.user_id, admin=admin):
            text, alert = refusal(lead, action, user_id=pressed.user_id, admin=admin)
            log.info("LEAD_PRESS_REFUSED", lead_id=lead.id, action=action, by_id=pressed.user_id)
            return text, alert
        changed = await repos.leads.set_status(
            lead.id,
            status=TARGET_STATUS.get(action),  # None: Reopen, back to taken or new
            allowed_from=(ALLOWED_FROM if admin else STAFF_ALLOWED_FROM)[action],
            by_id=pressed.user_id,
            by_name=who,
            now=self.now(),
            holder=None if admin or action not in HOLDER_ONLY else pressed.user_id,
            take=action == "take",
        )
        if changed is None:  # another press won between the read and the update
            current = await repos.leads.get(lead.id) or lead
            return refusal(current, action, user_id=pressed.user_id, admin=admin)
        metrics.LEADS.labels(event="reopened" if action == "reopen" else changed.status).inc()
        log.info("LEAD_STATUS", lead_id=lead.id, status=changed.status, by_id=pressed.user_id)
        if pressed.chat_id is not None and pressed.message_id is not None:
            edit_id = command_ids.lead_card_edit(lead.id, changed.status_version)
            edit = EditMessageText(
                chat_id=pressed.chat_id,
                message_id=pressed.message_id,
                text=card_text(changed),
                parse_mode="HTML",
                reply_markup=card_markup(changed),
            )
            version = changed.status_version
            # an edit to an older version still waiting (a flood wait) would show a stale status: cancelled
            stale = await repos.tg_commands.cancel_pending(
                "lead_post", lead.id, post="card", op="edit", n_below=version
            )
            if stale:
                log.info("LEAD_STALE_EDITS_CANCELLED", lead_id=lead.id, count=len(stale))
            subject = PostStep(id=lead.id, post="card", op="edit", n=version)
            if await add_command(repos, edit_id, edit, subject=subject):
                commands.append(edit_id)
                await repos.lead_posts.spend_token(pressed.chat_id)
        return _DONE_TEXT[action].format(id=lead.id), False

    async def _press_notice(
        self, repos: Repositories, pressed: LeadButtonPressed, button: Button, commands: list[str]
    ) -> str:
        repeat = await repos.leads.get_repeat(button.id)
        lead = await repos.leads.get(repeat.lead_id) if repeat is not None else None
        if repeat is None or lead is None:
            log.info("LEAD_ORPHAN_BUTTON", data=pressed.data)
            return ORPHAN
        await self._prove_posted(repos, NOTICE, repeat.id, pressed)
        if pressed.chat_id is not None and pressed.message_id is not None:
            edit_id = command_ids.repeat_notice_seen(repeat.id)
            who = presser(pressed.user_name, pressed.username)
            edit = EditMessageText(
                chat_id=pressed.chat_id,
                message_id=pressed.message_id,
                text=notice_text(repeat, lead, seen_by=who),
                parse_mode="HTML",
            )
            subject = PostStep(id=repeat.id, post="notice", op="seen")
            if await add_command(repos, edit_id, edit, subject=subject):
                commands.append(edit_id)
                await repos.lead_posts.spend_token(pressed.chat_id)
        return "Noted, thank you."

    async def _prove_posted(
        self, repos: Repositories, kind: str, post_id: int, pressed: LeadButtonPressed
    ) -> None:
        """A press on a post whose send had no known outcome: the message exists, record its id."""
        if pressed.chat_id is None or pressed.message_id is None:
            return
        post = await repos.lead_posts.get(kind, post_id)
        if post is None or post.state == "posted":
            return
        if await repos.lead_posts.mark_posted(
            kind, post_id, message_id=pressed.message_id, chat_id=pressed.chat_id, now=self.now()
        ):
            metrics.LEADS.labels(event="published" if kind == CARD else "repeat_posted").inc()
            log.info("LEAD_POSTED", kind=kind, post_id=post_id, message_id=pressed.message_id, how="pressed")
