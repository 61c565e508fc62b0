"""Admin commands in private chats with the bot: ``/pause``, ``/resume``, ``/status`` (DESIGN.md §7, §9).

``/status`` answers from the evening's figures the admin page shows (:mod:`shared.overview`, issue 13
item 2): queue depth, running, failed today by class, time to link of the last hour (p50/p95, from the
guest's accepted photo, as the admin page), spend today against ``DAILY_BUDGET_USD``, the pause.

Only users in ``ADMIN_USER_IDS`` may use them; everyone else gets the guest fallback. ``/resume`` clears an
``auto`` or ``admin`` pause (never ``env``), republishes the queued jobs, and offers one button that
retries the jobs the 15-minute deadline failed during the pause.
"""

from __future__ import annotations

from datetime import UTC, datetime

import structlog
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes, filters

from shared import maintenance
from shared.events import zone
from shared.joblife import republish_queued, retry_failed_job
from shared.overview import Overview, gather_overview
from shared.repositories import Database
from shared.settings import BudgetSettings
from shared.streams import Publisher

log = structlog.get_logger(__name__)
RETRY_PREFIX = "admin_retry_deadline:"
#: A pending stream entry older than this is worth an admin's look: twice ``STREAM_LEASE_SEC``'s default
#: (60 s), after which a live consumer would have taken it over.
STALE_PENDING_S = 120.0


class AdminHandlers:
    def __init__(
        self,
        *,
        db: Database,
        publisher: Publisher,
        admin_ids: frozenset[int],
        env_maintenance: bool,
        budget: BudgetSettings,
    ) -> None:
        self.budget = budget
        self.db = db
        self.publisher = publisher
        self.admin_ids = admin_ids
        self.env_maintenance = env_maintenance

    def register(self, app: Application) -> None:
        admins = filters.ChatType.PRIVATE & filters.User(user_id=self.admin_ids or {0})
        app.add_handler(CommandHandler("pause", self.pause_queue, filters=admins))
        app.add_handler(CommandHandler("resume", self.resume_queue, filters=admins))
        app.add_handler(CommandHandler("status", self.show_status, filters=admins))
        app.add_handler(CallbackQueryHandler(self.retry_deadline_failures, pattern=f"^{RETRY_PREFIX}"))

    def is_admin(self, user_id: int | None) -> bool:
        return user_id is not None and user_id in self.admin_ids

    async def pause_queue(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Switch the ``admin`` pause on: no new jobs are claimed, kiosks show maintenance."""
        user = update.effective_user
        async with self.db.transaction() as repos:
            await maintenance.start_pause(
                repos, source="admin", reason=f"/pause by {user.id if user else '?'}"
            )
        log.warning("ADMIN_PAUSE", user_id=user.id if user else None)
        if update.effective_message:
            await update.effective_message.reply_text("Paused. Running jobs finish; /resume to continue.")

    async def resume_queue(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Clear the ``auto``/``admin`` pause, republish queued jobs, offer to retry deadline failures."""
        async with self.db.transaction() as repos:
            cleared = await maintenance.end_pause(repos)
            retryable = (
                await repos.jobs.failed_since(cleared.since, error_class="deadline") if cleared else []
            )
        published = await republish_queued(self.db, self.publisher)
        log.warning("ADMIN_RESUME", cleared=cleared.to_json() if cleared else None, requeued_hints=published)
        message = update.effective_message
        if message is None:
            return
        lines = [f"Resumed ({cleared.source}: {cleared.reason})." if cleared else "Nothing was paused."]
        if self.env_maintenance:
            lines.append("MAINTENANCE_MODE=1 is set in the environment: only a restart without it ends that.")
        markup = None
        if cleared and retryable:
            lines.append(f"{len(retryable)} job(s) missed their deadline during the pause.")
            markup = InlineKeyboardMarkup(
                [
                    [
                        InlineKeyboardButton(
                            f"Retry {len(retryable)}",
                            callback_data=f"{RETRY_PREFIX}{int(cleared.since.timestamp())}",
                        )
                    ]
                ]
            )
        await message.reply_text("\n".join(lines), reply_markup=markup)

    async def show_status(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """Queue depth, running, failed today by class, spend today against the budget, the pause."""
        view = await gather_overview(
            self.db, self.publisher.redis, budget=self.budget, env_maintenance=self.env_maintenance
        )
        if update.effective_message:
            await update.effective_message.reply_text(status_text(view))

    async def retry_deadline_failures(self, update: Update, _context: ContextTypes.DEFAULT_TYPE) -> None:
        """The /resume button: requeue deadline failures since the pause began (while selfies exist)."""
        query = update.callback_query
        if query is None or query.data is None:
            return
        if not self.is_admin(query.from_user.id if query.from_user else None):
            await query.answer("Only admins can do that.")
            return
        since = datetime.fromtimestamp(int(query.data.removeprefix(RETRY_PREFIX)), tz=UTC)
        retried = 0
        async with self.db.transaction() as repos:
            for job in await repos.jobs.failed_since(since, error_class="deadline"):
                if await retry_failed_job(repos, job.id, note="admin retry after pause"):
                    retried += 1
        await republish_queued(self.db, self.publisher)
        log.warning("ADMIN_RETRY_DEADLINE_FAILURES", retried=retried)
        await query.answer(f"{retried} job(s) queued again.")
        if query.message is not None:
            await query.edit_message_reply_markup(reply_markup=None)


def _duration(seconds: float | None) -> str:
    """``95 s`` under 90 s, else ``2 min 05 s`` (as the admin page writes it)."""
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{round(seconds)} s"
    return f"{int(seconds // 60)} min {round(seconds % 60):02d} s"


def status_text(view: Overview) -> str:
    """The ``/status`` answer: one line per figure, plain text (no parse mode: reasons are free text)."""
    pause = view.pause
    if pause is None:
        state = "Queue running."
    else:
        state = f"Queue paused ({pause.source}: {pause.reason or 'no reason given'})."
        if pause.resume_at:
            state += f" Resumes by itself at {pause.resume_at:%H:%M} UTC."
        elif pause.source == "env":
            state += " MAINTENANCE_MODE=1: only a restart without it ends this."
        else:
            state += " /resume to continue."
    failures = ", ".join(
        f"{label} {count}"
        for label, count in sorted(view.failures_today.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    budget = view.daily_budget_usd
    spend = f"Spend today: ${view.spend_today_usd:.2f}"
    spend += (
        f" of ${budget:.2f} ({view.spend_today_usd / budget:.0%})." if budget else " (no daily budget set)."
    )
    times = view.link_times
    link = (
        f"Time to link (last hour): p50 {_duration(times.p50_s)}, p95 {_duration(times.p95_s)} "
        f"of {times.count} {'link' if times.count == 1 else 'links'}, from the accepted photo."
        if times.count
        else "Time to link (last hour): no links sent."
    )
    lines = [
        state,
        f"Queue depth: {view.queued} waiting, {view.running} running.",
        f"Failed today: {view.failed_today}" + (f" ({failures})." if failures else "."),
        link,
        spend,
    ]
    if view.streams is None:
        lines.append(f"Streams: not readable ({view.streams_error}).")
    else:
        trouble = [f"{s.stream} dead {s.dead_letters}" for s in view.streams if s.dead_letters] + [
            f"{s.stream} pending {g.pending}"
            for s in view.streams
            for g in s.groups
            if g.oldest_pending_s is not None and g.oldest_pending_s > STALE_PENDING_S
        ]
        if trouble:
            lines.append("Streams: " + ", ".join(trouble) + ".")
    lines.extend(event_lines(view))
    return "\n".join(lines)


def event_lines(view: Overview) -> list[str]:
    """One line per event of today (running now, or ended earlier in its local day: the overview's
    ``events``), its day counted from its local midnight; one that ended says when (local time). None
    while the default event is the only one (an operator who never created an event sees ``/status`` as
    before)."""
    if len(view.events) <= 1:
        return []
    lines = []
    for event, _start, today, daily in view.events:
        cost = f"${today.cost_usd:.2f}" + (f" of ${daily:.2f}" if daily else "")
        ended = ""
        if event.ends_at is not None and event.ends_at <= view.at:
            ended = f", ended {event.ends_at.astimezone(zone(event.time_zone)):%H:%M}"
        lines.append(
            f"Event {event.name} ({event.time_zone}{ended}) today: {today.sessions} sessions, "
            f"{today.packs_delivered} delivered, {sum(today.failures.values())} failed, {cost}, "
            f"{today.leads} leads."
        )
    return lines
