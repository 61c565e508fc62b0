"""What the outcome of a card or notice command does to its post (spec/000 "Lead card publishing").

| outcome of a send | post | next attempt |
|---|---|---|
| ok | ``posted`` with the message id | — |
| unknown (``error_code`` 0) | ``unsure``, one more failure | a search, after the backoff |
| any other error | ``pending``, one more failure (a notice: ``failed`` after 5) | the backoff |

| outcome of a search (``find_bot_message``) | post |
|---|---|
| found | ``posted`` with the found id (no second message) |
| not in the chat | ``pending`` and due at once: sending again cannot duplicate it |
| inconclusive (too many messages to search) | ``pending`` and due at once, with an admin alert |
| error | ``unsure``, one more failure; searched again after the backoff |

Flood control is not leads' (issue 21): a send or search Telegram holds back is deferred by the gateway
and sent when the wait is over, under the same id; its post stays ``sending``/``checking`` meanwhile, so
nothing else goes to the chat (one message of unknown fate at a time), and no failure is counted.
Results are routed by their subject (:class:`shared.subjects.PostStep`), never by parsing the id.

A card failing ``ALERT_AFTER`` (5) or more times in a row raises an admin alert at most every
``LEADS_ALERT_EVERY_SEC`` (30 minutes) per lead. Every change is a conditional update naming the attempt
or probe, so a redelivered or late outcome changes nothing; the result stream is a hint and the
``tg_commands`` row the truth (:meth:`leads.publishing.LeadPublisher.tick` reads it when a result is late).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from leads.backoff import Backoff
from shared import metrics
from shared.alerts import queue_alert
from shared.domain import LeadPost
from shared.messages import TelegramResult
from shared.outbox import dispatch_commands
from shared.repositories import Database, Repositories
from shared.repositories.lead_posts import CARD
from shared.streams import Publisher
from shared.subjects import PostStep

log = structlog.get_logger(__name__)
UNKNOWN_OUTCOME = 0


@dataclass(frozen=True)
class PublishPolicy:
    """The publishing rules (settings of :class:`leads.settings.LeadsSettings`).

    ``chat_id``: the leads chat; ``backoff``: delays after failures; ``alert_after`` failures raise an admin
    alert at most every ``alert_every``; a notice is dropped after ``repeat_max_failures``;
    ``per_minute``: messages per minute into the chat; ``result_timeout``: a command with no result after
    this long is looked up in ``tg_commands``; ``probe_max``: Bot API calls one search may use.
    """

    chat_id: int
    backoff: Backoff = field(default_factory=Backoff)
    alert_after: int = 5
    alert_every: timedelta = timedelta(minutes=30)
    repeat_max_failures: int = 5
    per_minute: float = 20.0
    result_timeout: timedelta = timedelta(seconds=30)
    probe_max: int = 30


class OutcomeHandler:
    """Applies ``tg:results:leads`` to posts. ``now`` returns the current UTC time (a fake in tests);
    ``on_change`` is called after a post moved (the publisher wakes up for the next one)."""

    def __init__(
        self,
        *,
        db: Database,
        publisher: Publisher,
        policy: PublishPolicy,
        now: Callable[[], datetime],
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.db = db
        self.publisher = publisher
        self.policy = policy
        self.now = now
        self.on_change = on_change

    async def apply(self, result: TelegramResult) -> None:
        """Stream handler for ``tg:results:leads``: move the post the result's subject names (see the
        module's tables); results of other commands are ignored. Safe to repeat."""
        match result.subject:
            case PostStep(op="send" | "find", n=int()) as step:
                await self._apply_to_post(step, result)
            case _:  # an edit, a callback answer, an alert …: nothing to move
                if not result.ok:
                    log.warning("LEADS_COMMAND_FAILED", command_id=result.command_id, error=str(result.error))

    async def _apply_to_post(self, step: PostStep, result: TelegramResult) -> None:
        """The send attempt or search probe ``step.n`` of post ``step.post`` ``step.id`` has ``result``."""
        assert step.n is not None  # matched so by apply
        alerts: list[str] = []
        async with self.db.transaction() as repos:
            post = await repos.lead_posts.get(step.post, step.id)
            if post is None:
                return
            if step.op == "send":
                moved = await self._apply_send(repos, step.n, post, result, alerts)
            else:
                moved = await self._apply_find(repos, step.n, post, result, alerts)
        if alerts:
            await dispatch_commands(self.db, self.publisher, alerts)
        if moved:
            self.on_change()

    async def _apply_send(
        self,
        repos: Repositories,
        attempt: int,
        post: LeadPost,
        result: TelegramResult,
        alerts: list[str],
    ) -> bool:
        now = self.now()
        if result.ok and isinstance(result.result, dict):
            chat_id = await self._command_chat(repos, result.command_id)
            return await self._posted(
                repos, post, int(result.result["message_id"]), chat_id, event="published"
            )
        error = result.error
        code = error.error_code if error else 500
        description = error.description if error else "no result"
        next_at = now + self.policy.backoff.delay(post.failures + 1)
        if code == UNKNOWN_OUTCOME:
            moved = await repos.lead_posts.send_unsure(
                post.kind, post.id, attempt, next_attempt_at=next_at, error=description
            )
            event = "unsure"
        else:
            give_up = None if post.kind == CARD else self.policy.repeat_max_failures
            moved = await repos.lead_posts.send_failed(
                post.kind,
                post.id,
                attempt,
                next_attempt_at=next_at,
                error=description,
                give_up_after=give_up,
            )
            event = "failed"
        if moved is None:
            return False
        metrics.LEADS.labels(event=event if post.kind == CARD else f"repeat_{event}").inc()
        log.warning(
            "LEAD_POST_FAILED",
            kind=post.kind,
            post_id=post.id,
            failures=moved.failures,
            state=moved.state,
            error=description,
            next_attempt_at=next_at.isoformat(),
        )
        await self._maybe_alert(repos, moved, description, alerts)
        return True

    async def _apply_find(
        self,
        repos: Repositories,
        probe: int,
        post: LeadPost,
        result: TelegramResult,
        alerts: list[str],
    ) -> bool:
        now = self.now()
        found = result.result if result.ok and isinstance(result.result, dict) else None
        if found is not None and found.get("message_id"):
            if post.state != "checking" or post.probes != probe:
                return False
            chat_id = await self._command_chat(repos, result.command_id)
            return await self._posted(repos, post, int(found["message_id"]), chat_id, event="found")
        if found is not None:
            moved = await repos.lead_posts.probe_absent(post.kind, post.id, probe, now=now)
            if moved is not None and not found.get("conclusive", True):
                log.error(
                    "LEAD_SEARCH_INCONCLUSIVE", kind=post.kind, post_id=post.id, probes=found.get("probes")
                )
                command_id = await queue_alert(
                    repos,
                    key=f"lead_search:{post.kind}:{post.id}",
                    text=(
                        f"Lead #{post.lead_id}: a message may or may not have reached the leads chat and the "
                        "search for it was inconclusive; it is sent again (check for a duplicate)."
                    ),
                )
                if command_id:
                    alerts.append(command_id)
            elif moved is not None:
                log.info("LEAD_NOT_IN_CHAT", kind=post.kind, post_id=post.id)
            return moved is not None
        error = result.error
        description = error.description if error else "no result"
        next_at = now + self.policy.backoff.delay(post.failures + 1)
        moved = await repos.lead_posts.probe_failed(
            post.kind, post.id, probe, next_attempt_at=next_at, error=description
        )
        if moved is not None:
            log.warning("LEAD_SEARCH_FAILED", kind=post.kind, post_id=post.id, error=description)
            await self._maybe_alert(repos, moved, description, alerts)
        return moved is not None

    async def _command_chat(self, repos: Repositories, command_id: str) -> int:
        """The chat the command was sent to or searched (its ``tg_commands`` params): a result carries no
        chat (:func:`shared.commands.minimal_result`). The policy's chat when the row is gone."""
        record = await repos.tg_commands.get(command_id)
        chat_id = record.params.get("chat_id") if record is not None else None
        return int(chat_id or self.policy.chat_id)

    async def _posted(
        self, repos: Repositories, post: LeadPost, message_id: int, chat_id: int, *, event: str
    ) -> bool:
        # the chat row before the post's row, as in every transaction here: no lock-order deadlocks
        await repos.lead_posts.note_message_id(
            chat_id, message_id, now=self.now(), capacity=self.policy.per_minute
        )
        first = await repos.lead_posts.mark_posted(
            post.kind, post.id, message_id=message_id, chat_id=chat_id, now=self.now()
        )
        if not first:
            return False
        metrics.LEADS.labels(event="published" if post.kind == CARD else "repeat_posted").inc()
        if event == "found":
            metrics.LEADS.labels(event="found").inc()
        log.info("LEAD_POSTED", kind=post.kind, post_id=post.id, message_id=message_id, how=event)
        return True

    async def _maybe_alert(self, repos: Repositories, post: LeadPost, error: str, alerts: list[str]) -> None:
        if post.kind != CARD or post.failures < self.policy.alert_after:
            return
        if not await repos.lead_posts.claim_alert(post.id, now=self.now(), every=self.policy.alert_every):
            return
        command_id = await queue_alert(
            repos,
            key=f"lead_publish:{post.id}",
            text=(
                f"Lead #{post.id} could not be posted to the leads chat {post.failures} times in a row "
                f"(last error: {error}). Still retrying every {int(self.policy.backoff.later // 60)} min."
            ),
            cooldown=timedelta(0),  # the lead row's alerted_at is the cooldown (30 min, the clock above)
        )
        if command_id:
            alerts.append(command_id)
