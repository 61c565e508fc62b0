"""The publisher: lead cards and repeat notices into the leads chat, one at a time (spec/000 outbox table:
"unpublished lead cards ... delivered by a loop"; DESIGN.md §8).

Each :meth:`LeadPublisher.tick` locks the chat's pacing row (one publisher across replicas) and then does
at most one thing:

1. while a post is in flight (``sending``, ``unsure``, ``checking``) nothing new is sent. An ``unsure``
   post that is due gets a search (``find_bot_message``); a command with no result after
   ``result_timeout`` is looked up in ``tg_commands`` (the result message may be lost, the row is the
   truth). Keeping one message of unknown fate at a time is what makes the search sound: the only unknown
   bot message above ``probe_after`` can be ours.
2. otherwise, unless the chat's token bucket is empty (``LEADS_GROUP_PER_MINUTE``, 20 messages per minute
   to one group, REFERENCE.md), the longest-waiting due post is sent: ``pending → sending`` and a
   ``send_message`` command in the same transaction; after the commit, the hint goes to ``tg:outbox``.
   A send Telegram flood-limits stays ``sending`` until the gateway sends it after the wait (issue 21), so
   the rest of the batch waits behind it, as Telegram asked.

The rows are the outbox (``post_state = 'pending'`` and ``next_attempt_at`` reached): the stream hint on
``stk:leads`` only wakes the loop early, so a lost hint costs one ``LEADS_PUBLISH_INTERVAL_SEC``. Leads
stored while this service or the gateway was down are sent when both run, each once.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal

import structlog

from leads.cards import card_markup, card_text, notice_markup, notice_text
from leads.outcomes import OutcomeHandler, PublishPolicy
from shared import metrics
from shared.command_ids import find_post, send_post
from shared.commands import FindBotMessage, SendMessage, load
from shared.domain import FINAL_COMMAND_STATUSES, LeadChat, LeadPost
from shared.messages import TelegramErrorInfo, TelegramResult
from shared.outbox import add_command, dispatch_commands, stored_result
from shared.repositories import Database, Repositories
from shared.repositories.lead_posts import CARD
from shared.streams import Publisher
from shared.subjects import PostStep

log = structlog.get_logger(__name__)
SERVICE = "leads"


class LeadPublisher:
    """Sends due posts (see the module docstring). ``now`` returns the current UTC time (a fake in tests).

    Args:
        db, publisher: Postgres and the ``XADD`` side of Redis.
        policy: the publishing rules.
        outcomes: applies outcomes recovered from ``tg_commands`` rows.
    """

    def __init__(
        self,
        *,
        db: Database,
        publisher: Publisher,
        policy: PublishPolicy,
        outcomes: OutcomeHandler,
        now: Callable[[], datetime],
    ) -> None:
        self.db = db
        self.publisher = publisher
        self.policy = policy
        self.outcomes = outcomes
        self.now = now

    async def tick(self) -> bool:
        """Do the one next step of publishing; ``True`` when a command was issued or an outcome applied.

        Raises:
            DatabaseUnavailable: Postgres is down (nothing changed; the loop tries again).
        """
        now = self.now()
        issued: list[str] = []
        recovered: list[TelegramResult] = []
        async with self.db.transaction() as repos:
            chat = await repos.lead_posts.lock_chat(
                self.policy.chat_id, now=now, capacity=self.policy.per_minute
            )
            if chat is None:
                return False  # another replica is publishing right now
            in_flight = await repos.lead_posts.in_flight()
            for post in in_flight:
                if post.state == "unsure" and _due(post, now):
                    issued.extend(await self._search(repos, post, now))
                elif post.last_attempt_at is None or post.last_attempt_at <= now - self.policy.result_timeout:
                    stored = await self._stored_outcome(repos, post)
                    if stored is not None:
                        recovered.append(stored)
            if not in_flight:
                issued.extend(await self._send_next(repos, chat, now))
            oldest = await repos.lead_posts.oldest_unposted_at()
        metrics.LEADS_PENDING_AGE.set(max(0.0, (now - oldest).total_seconds()) if oldest else 0.0)
        if issued:
            await dispatch_commands(self.db, self.publisher, issued)
        for result in recovered:
            log.info("LEAD_RESULT_RECOVERED", command_id=result.command_id, ok=result.ok)
            await self.outcomes.apply(result)
        return bool(issued or recovered)

    async def _send_next(self, repos: Repositories, chat: LeadChat, now: datetime) -> list[str]:
        rate = self.policy.per_minute / 60.0
        elapsed = max(0.0, (now - chat.tokens_at).total_seconds())
        tokens = min(self.policy.per_minute, chat.tokens + elapsed * rate)
        issued: list[str] = []
        if tokens >= 1 - 1e-9:  # refills are summed in floats
            post = await repos.lead_posts.next_due(now=now)
            command_id = await self._send(repos, post, chat, now) if post is not None else None
            if command_id is not None:
                issued.append(command_id)
                tokens -= 1
        await repos.lead_posts.save_bucket(chat.chat_id, tokens=tokens, tokens_at=now)
        return issued

    async def _send(self, repos: Repositories, post: LeadPost, chat: LeadChat, now: datetime) -> str | None:
        message = await self._message(repos, post)
        if message is None:
            return None
        moved = await repos.lead_posts.start_send(post, now=now, probe_after=chat.last_message_id)
        if moved is None:
            return None
        command_id = send_post(post.kind, post.id, moved.attempts)
        subject = _step(post, "send", moved.attempts)
        await add_command(repos, command_id, message, subject=subject, reply_to=SERVICE)
        log.info("LEAD_POST_SENDING", kind=post.kind, post_id=post.id, attempt=moved.attempts)
        return command_id

    async def _message(self, repos: Repositories, post: LeadPost) -> SendMessage | None:
        lead = await repos.leads.get(post.lead_id)
        if lead is None:
            return None
        if post.kind == CARD:
            return SendMessage(
                chat_id=self.policy.chat_id,
                text=card_text(lead),
                parse_mode="HTML",
                reply_markup=card_markup(lead),
            )
        repeat = await repos.leads.get_repeat(post.id)
        if repeat is None or lead.card_message_id is None:
            return None
        return SendMessage(
            chat_id=lead.card_chat_id or self.policy.chat_id,
            text=notice_text(repeat, lead),
            parse_mode="HTML",
            reply_markup=notice_markup(repeat),
            reply_to_message_id=lead.card_message_id,
        )

    async def _search(self, repos: Repositories, post: LeadPost, now: datetime) -> list[str]:
        """``unsure → checking``: ask the gateway to look for the message the last send may have posted."""
        record = await repos.tg_commands.get(send_post(post.kind, post.id, post.attempts))
        moved = await repos.lead_posts.start_probe(post, now=now)
        if moved is None:
            return []
        sent = load(record.method, record.params) if record is not None else None
        if not isinstance(sent, SendMessage) or not sent.reply_markup:
            await repos.lead_posts.probe_absent(post.kind, post.id, moved.probes, now=now)
            return []
        after = post.probe_after or 0
        command_id = find_post(post.kind, post.id, moved.probes)
        search = FindBotMessage(
            chat_id=sent.chat_id,
            reply_markup=sent.reply_markup,
            after_message_id=after,
            skip_message_ids=tuple(await repos.lead_posts.posted_ids_after(after)),
            max_probes=self.policy.probe_max,
        )
        subject = _step(post, "find", moved.probes)
        await add_command(repos, command_id, search, subject=subject, reply_to=SERVICE)
        log.info("LEAD_POST_SEARCHING", kind=post.kind, post_id=post.id, after_message_id=after)
        return [command_id]

    async def _stored_outcome(self, repos: Repositories, post: LeadPost) -> TelegramResult | None:
        """The outcome stored in ``tg_commands`` for the post's current command, if it is final."""
        subject: PostStep
        if post.state == "sending":
            command_id = send_post(post.kind, post.id, post.attempts)
            subject = _step(post, "send", post.attempts)
        elif post.state == "checking":
            command_id = find_post(post.kind, post.id, post.probes)
            subject = _step(post, "find", post.probes)
        else:
            return None
        record = await repos.tg_commands.get(command_id)
        if record is None:
            error = TelegramErrorInfo(error_code=500, description="the command row is missing")
            return TelegramResult(command_id=command_id, ok=False, error=error, subject=subject)
        if record.status not in FINAL_COMMAND_STATUSES:
            return None  # not run yet (the gateway may be down, or a flood wait deferred it): keep waiting
        return stored_result(record)


def _step(post: LeadPost, op: Literal["send", "find"], n: int) -> PostStep:
    """The subject of send attempt or search probe ``n`` of ``post``."""
    return PostStep.model_validate({"id": post.id, "post": post.kind, "op": op, "n": n})


def _due(post: LeadPost, now: datetime) -> bool:
    return post.next_attempt_at is None or post.next_attempt_at <= now
