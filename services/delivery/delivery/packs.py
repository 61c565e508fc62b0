"""Pack delivery (DESIGN.md §6): create the sticker set, erase the selfie, wait until every sticker is in,
send the link.

The link message (the text with the link and an "Add stickers" button) is built by
:func:`shared.link_message.link_message`; once it went out, one sticker of the set follows as a preview
(``job:<id>:preview``, queued in the transaction that marks the job delivered, asking for no result: a
preview that fails changes nothing for the job).

Driven by three inputs, all idempotent: ``stk:delivery`` hints (a job was rendered), ``tg:results:delivery``
(the gateway's outcomes of our commands) and the sweeper (due readiness polls, lost hints). Each Telegram
action is a ``tg_commands`` row with a deterministic id (``job:<id>:create_set``, ``job:<id>:poll:<n>``,
``job:<id>:link``), so a repeated input never repeats a guest-visible action.

No idle waits on the happy path (issue 12): each step is queued by the result of the one before, the
moment it arrives. The first readiness check (``job:<id>:poll:1``) is queued in the same transaction that
records the created set, so a set that is complete when created (all 12 stickers in one call) costs one
``getStickerSet`` round trip and no sweeper tick. Only a poll that finds the set incomplete (or a result
that was lost) leaves the job to the sweeper, at the spec's schedule (spec/000 "Pack readiness poll":
every ``PACK_POLL_FAST_SEC`` for ``PACK_POLL_FAST_WINDOW_SEC``, then every ``PACK_POLL_SLOW_SEC``).

Flood control is not delivery's (issue 21): a command Telegram holds back with a long ``retry_after`` is
deferred by the gateway and sent, under the same id, when the wait is over; delivery only sees its result
then. So the set is created once (``job:<id>:create_set``), a flood wait is never one of the link's
``LINK_ATTEMPTS``, and a result is routed by its subject (:class:`shared.subjects.JobStep`), never by
parsing its id. The deadlines of DESIGN.md §6 still run from ``jobs.created_at``: a wait past 15 minutes
fails the job and the guest gets the failure text (:mod:`delivery.deadlines`), except once the link is
queued: the set is complete, so the link goes when Telegram allows, with "sorry for the wait" (issue 19).

A link whose outcome is unknown (Telegram's answer lost) is looked for in the guest's chat before it is
sent again (:meth:`PackDelivery._resolve_unknown_link`), so the guest gets it exactly once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog

from delivery.settings import DeliverySettings
from shared import command_ids, metrics
from shared.bot_identity import sticker_set_name
from shared.commands import CreateStickerSet, FindBotMessage, GetStickerSet, StickerRef
from shared.domain import (
    FINAL_COMMAND_STATUSES,
    CommandStatus,
    Job,
    JobContext,
    JobStatus,
    TelegramCommandRecord,
)
from shared.downloads import download_url
from shared.erasure import queue_set_deletion
from shared.errors import ErrorClass
from shared.events import guest_set_title
from shared.joblife import fail_job
from shared.link_message import queue_link_message, queue_preview
from shared.messages import JobRendered, TelegramResult
from shared.outbox import add_command, dispatch_commands
from shared.repositories import Database, Repositories
from shared.streams import Publisher
from shared.subjects import JobStep

log = structlog.get_logger(__name__)
SERVICE = "delivery"
#: Blobs that are the guest's face: the selfie and the worker's artefacts derived from it.
PERSONAL_BLOBS = ("selfie", "anchor", "passport")
#: The gateway's "outcome unknown" (``telegram_gateway.executor.UNKNOWN_OUTCOME``).
UNKNOWN_OUTCOME = 0
#: Bot API calls a search for a link of unknown outcome may make (one ``editMessageReplyMarkup`` each,
#: paced by the chat's 1 message/s): a window wider than this is inconclusive (the link is sent again).
LINK_SEARCH_PROBES = 20


class PackDelivery:
    def __init__(self, *, db: Database, publisher: Publisher, settings: DeliverySettings) -> None:
        self.db = db
        self.publisher = publisher
        self.settings = settings

    # --- inputs -------------------------------------------------------------------------------------

    async def handle_rendered(self, message: JobRendered) -> None:
        """``stk:delivery``: ask the gateway to create the job's sticker set."""
        await self.request_set(message.job_id)

    async def handle_result(self, message: TelegramResult) -> None:
        """``tg:results:delivery``: advance the job by the outcome of one of its commands."""
        match message.subject:
            case JobStep(id=job_id, step="create_set"):
                await self.on_set_created(job_id, message)
            case JobStep(id=job_id, step="poll"):
                await self.on_poll(job_id, message)
            case JobStep(id=job_id, step="link"):
                await self.on_link_sent(job_id, message)
            case JobStep(id=job_id, step="preview"):
                await self.advance_link(job_id)  # sent first as the upper bound of a link search
            case JobStep(id=job_id, step="find_link"):
                await self.on_link_search(job_id, message)
            case _:
                log.warning("DELIVERY_UNKNOWN_RESULT", command_id=message.command_id)

    # --- steps --------------------------------------------------------------------------------------

    async def request_set(self, job_id: UUID) -> None:
        """Deliver a ``rendered`` job of a guest without Telegram (session ``delivery = 'download'``) as its
        download page at once (:meth:`shared.repositories.jobs.JobRepository.deliver_download`); otherwise
        queue ``create_sticker_set`` for a ``rendered`` job (once; a repeat finds the command and hints
        it again, a failed one stays failed: the job has failed with it). The job's commands are found by
        subject (step ``create_set``): a job that pre-0010 code flood-retried has a later attempt
        ``job:<id>:create_set:<n>``, put back ``pending`` by migration 0010, which is the one hinted."""
        downloaded, command_id = False, None
        async with self.db.transaction() as repos:
            ctx = await repos.jobs.get_context(job_id)
            if ctx is None or ctx.job.status != JobStatus.RENDERED:
                return
            if ctx.tg_user_id is None:
                downloaded = ctx.delivery == "download" and await self._deliver_download(repos, job_id)
            else:
                command_id = await self._queue_create_set(repos, ctx)
        if downloaded:
            metrics.JOBS.labels(outcome="delivered", error_class="").inc()
            log.info("PACK_DELIVERED", job_id=str(job_id), delivered_as="download_page")
        if command_id is not None:
            await dispatch_commands(self.db, self.publisher, [command_id])

    async def _deliver_download(self, repos: Repositories, job_id: UUID) -> bool:
        """``rendered → delivered`` as the download page, erasing the guest's photo and what was derived
        from it (DESIGN.md §12), in the open transaction; ``False`` when the job was no longer rendered."""
        if await repos.jobs.deliver_download(job_id, at=datetime.now(UTC)) is None:
            return False
        for kind in PERSONAL_BLOBS:
            await repos.blobs.delete_for_job(job_id, kind)
        return True

    async def _queue_create_set(self, repos: Repositories, ctx: JobContext) -> str | None:
        """The ``create_sticker_set`` command of ``ctx``'s job to dispatch after the commit (recorded now
        unless one was before), or ``None`` when an earlier one failed (the job failed with it)."""
        job_id = ctx.job.id
        command_id = command_ids.create_set(job_id)
        earlier = await repos.tg_commands.for_subject("job", job_id, step="create_set")
        live = [r for r in earlier if r.status not in (CommandStatus.FAILED, CommandStatus.CANCELLED)]
        if live:
            command_id = live[-1].command_id  # hinted again: a sent one's result is announced again
        elif any(r.status == CommandStatus.FAILED for r in earlier):
            return None
        elif not earlier:
            assert ctx.tg_user_id is not None  # the caller's branch
            blobs = await repos.blobs.for_job(job_id, "sticker")
            create = CreateStickerSet(
                user_id=ctx.tg_user_id,
                name=sticker_set_name(job_id, self.settings.bot_username),
                title=guest_set_title(ctx.event, ctx.language),
                stickers=tuple(StickerRef(blob_id=b.id, emoji=b.meta.get("emoji", "🙂")) for b in blobs),
            )
            subject = JobStep(id=job_id, step="create_set")
            await add_command(repos, command_id, create, subject=subject, reply_to=SERVICE)
        await repos.jobs.mark_dispatched([job_id], JobStatus.RENDERED)
        return command_id

    async def on_set_created(self, job_id: UUID, result: TelegramResult) -> None:
        """``rendered → delivering``, erase the selfie and queue the first readiness check at once (the
        set exists now); the sweeper's next poll is due ``PACK_POLL_FAST_SEC`` later, the safety net for a
        check whose result is lost. A
        set created for a job erased meanwhile (issue 11) is deleted again
        (:func:`shared.erasure.queue_set_deletion`)."""
        if not result.ok:
            await self._fail(job_id, JobStatus.RENDERED, f"createNewStickerSet: {result.error}")
            return
        name = sticker_set_name(job_id, self.settings.bot_username)
        now = datetime.now(UTC)
        orphan: str | None = None
        check: str | None = None
        async with self.db.transaction() as repos:
            job = await repos.jobs.start_delivery(
                job_id,
                sticker_set_name=name,
                at=now,
                first_poll_at=now + timedelta(seconds=self.settings.pack_poll_fast_sec),
            )
            if job is not None:  # erase the guest's photo and what was derived from it (DESIGN.md §12)
                for kind in PERSONAL_BLOBS:
                    await repos.blobs.delete_for_job(job_id, kind)
                check = await self._queue_poll(repos, job)
            elif await repos.jobs.get(job_id) is None:
                # The guest erased their data while the set was being created: it must not stay.
                orphan = await queue_set_deletion(repos, name)
        if job is not None:
            log.info("PACK_CREATED", job_id=str(job_id), set_name=name)
            if check is not None:
                await dispatch_commands(self.db, self.publisher, [check])
        elif orphan is not None:
            log.warning("ERASED_JOB_SET_DELETED")
            await dispatch_commands(self.db, self.publisher, [orphan])

    async def poll_due(self) -> int:
        """Sweeper step: issue ``get_sticker_set`` for ``delivering`` jobs whose next poll is due."""
        async with self.db.transaction() as repos:
            due = [j for j in await repos.jobs.in_status(JobStatus.DELIVERING, limit=500) if _poll_due(j)]
        issued: list[str] = []
        for job in due:
            async with self.db.transaction() as repos:
                command_id = await self._queue_poll(repos, job)
            if command_id is not None:
                issued.append(command_id)
        await dispatch_commands(self.db, self.publisher, issued)
        return len(issued)

    async def on_poll(self, job_id: UUID, result: TelegramResult) -> None:
        """When every sticker is in the set, queue the link message (once per job)."""
        if not result.ok or not isinstance(result.result, dict):
            log.info("PACK_NOT_READY", job_id=str(job_id), error=str(result.error))
            return
        async with self.db.transaction() as repos:
            ctx = await repos.jobs.get_context(job_id)
            if ctx is None or ctx.job.status != JobStatus.DELIVERING or ctx.job.sticker_set_name is None:
                return
            expected = len(await repos.blobs.ids_for_job(job_id, "sticker"))
            have = int(result.result.get("sticker_count", 0))
            if have < expected:
                log.info("PACK_NOT_READY", job_id=str(job_id), have=have, expected=expected)
                return
            command_id = await self._queue_link(repos, ctx)
        if command_id is not None:
            await dispatch_commands(self.db, self.publisher, [command_id])

    async def advance_link(self, job_id: UUID) -> None:
        """Queue (or hint again) the next step towards the link of a ``delivering`` job whose set was
        found complete: :meth:`_queue_link`."""
        async with self.db.transaction() as repos:
            ctx = await repos.jobs.get_context(job_id)
            if ctx is None or ctx.job.status != JobStatus.DELIVERING or ctx.job.sticker_set_name is None:
                return
            command_id = await self._queue_link(repos, ctx)
        if command_id is not None:
            await dispatch_commands(self.db, self.publisher, [command_id])

    async def on_link_sent(self, job_id: UUID, result: TelegramResult) -> None:
        """``delivering → delivered`` once the link message went out, and the preview sticker queued.

        An unknown outcome (``error_code`` 0: Telegram's answer was lost, a 5xx, a time-out or a dropped
        connection after the request left, or the gateway died mid-send; the gateway never sends a
        message twice by itself) is resolved by asking Telegram (:meth:`_resolve_unknown_link`): before,
        it counted as delivered, and a guest whose link never arrived got only the preview sticker.
        """
        if _unknown(result):
            log.warning("LINK_OUTCOME_UNKNOWN", job_id=str(job_id), error=str(result.error))
            await self.advance_link(job_id)
            return
        if not result.ok:
            await self._link_failed(job_id, result)
            return
        await self._delivered(job_id)

    async def on_link_search(self, job_id: UUID, result: TelegramResult) -> None:
        """The search for a link message of unknown outcome (``job:<id>:find_link:<n>``): found, the job
        is delivered (the guest has their link, once); not found, or a search that could not conclude,
        the link is sent again as the next attempt (:meth:`_link_failed`)."""
        found = result.ok and isinstance(result.result, dict) and result.result.get("message_id")
        if found:
            log.info("LINK_FOUND", job_id=str(job_id))
            await self._delivered(job_id)
            return
        log.warning("LINK_NOT_FOUND", job_id=str(job_id), result=str(result.result), error=str(result.error))
        await self._link_failed(job_id, result)

    async def _delivered(self, job_id: UUID) -> None:
        """``delivering → delivered`` (the link is in the guest's chat) and queue the preview sticker."""
        preview: str | None = None
        accepted: datetime | None = None
        async with self.db.transaction() as repos:
            job = await repos.jobs.mark_delivered(job_id, link_sent_at=datetime.now(UTC))
            if job is not None:
                preview = await self._queue_preview(repos, job_id)
                accepted = await repos.jobs.accepted_at(job_id)
        if preview is not None:
            await dispatch_commands(self.db, self.publisher, [preview])
        if job is not None:
            metrics.JOBS.labels(outcome="delivered", error_class="").inc()
            # from the guest's accepted upload, as the admin overview's time to link (a retry resets
            # created_at, not the guest's wait)
            latency = ((job.link_sent_at or datetime.now(UTC)) - (accepted or job.created_at)).total_seconds()
            metrics.STAGE_SECONDS.labels(stage="photo_to_link").observe(latency)
            log.info("PACK_DELIVERED", job_id=str(job_id), seconds_since_photo=round(latency, 1))

    async def republish_rendered(self) -> int:
        """Outbox reconciler: request sets for ``rendered`` jobs whose hint is missing or old."""
        async with self.db.transaction() as repos:
            due = await repos.jobs.due_for_dispatch(
                JobStatus.RENDERED,
                grace=timedelta(seconds=self.settings.reconcile_grace_sec),
                republish_after=timedelta(seconds=self.settings.republish_after_sec),
                limit=100,
            )
        for job in due:
            await self.request_set(job.id)
        return len(due)

    # --- helpers ------------------------------------------------------------------------------------

    async def _queue_poll(self, repos: Repositories, job: Job) -> str | None:
        """Claim readiness poll number ``job.polls + 1`` (the next one falls due at the spec's schedule,
        :meth:`_next_poll_at`) and record its ``get_sticker_set`` command in the open transaction; returns
        the command id to dispatch after the commit, ``None`` when another replica claimed it first."""
        if not await repos.jobs.claim_poll(job, next_poll_at=self._next_poll_at(job)):
            return None
        assert job.sticker_set_name is not None  # set when the job became delivering
        command_id = command_ids.poll(job.id, job.polls + 1)
        poll = GetStickerSet(name=job.sticker_set_name)
        subject = JobStep(id=job.id, step="poll", n=job.polls + 1)
        await add_command(repos, command_id, poll, subject=subject, reply_to=SERVICE)
        return command_id

    async def _queue_link(self, repos: Repositories, ctx: JobContext) -> str | None:
        """Queue the link message unless one is in flight or sent; returns the command to dispatch.

        The message is :func:`shared.link_message.link_message`, with the words that fit (issue 19):
        "sorry for the wait" past ``DELIVERY_DEADLINE_SEC`` from the accepted photo (a flood wait held
        it; :mod:`delivery.deadlines` never fails a job whose link is on its way), and the honest words
        when the guest was sent the failure text before (an admin retry of a failed job). An attempt
        whose outcome is unknown is first looked for in the chat (:meth:`_resolve_unknown_link`).
        A failed attempt is followed by another, up to ``LINK_ATTEMPTS`` (3, spec/000 "Message to the
        guest from the delivery module": 3 attempts, 2 s apart); the ids are ``job:<id>:link``,
        ``job:<id>:link:2``, ``job:<id>:link:3``, found by their subject (step ``link``). A flood wait is
        not an attempt: the gateway sends the same row later.
        """
        job = ctx.job
        rows = await repos.tg_commands.for_subject("job", job.id, step="link")
        # reworded (cancelled) or held back by a pre-0010 gateway's 429: no attempt
        attempts = [r for r in rows if r.status != CommandStatus.CANCELLED and not _flooded(r)]
        live = [r for r in attempts if r.status != CommandStatus.FAILED]
        if live:
            return live[-1].command_id
        if attempts and _outcome_unknown(attempts[-1]):
            settled, step = await self._resolve_unknown_link(repos, ctx, attempts[-1], len(rows))
            if not settled:
                return step
        if len(attempts) >= self.settings.link_attempts:
            return None
        attempt = len(rows) + 1
        command_id = command_ids.link(job.id, attempt)
        assert job.sticker_set_name is not None and ctx.tg_chat_id is not None  # bound with tg_user_id
        accepted = await repos.jobs.accepted_at(job.id) or job.created_at
        late = datetime.now(UTC) - accepted > timedelta(seconds=self.settings.delivery_deadline_sec)
        failure_texts = await repos.tg_commands.for_subject("job", job.id, step="failure_text")
        after_failure = any(r.status == CommandStatus.SENT for r in failure_texts)
        await queue_link_message(
            repos,
            command_id,
            subject=JobStep(id=job.id, step="link", n=attempt),
            chat_id=ctx.tg_chat_id,
            set_name=job.sticker_set_name,
            language=ctx.language,
            reply_to=SERVICE,
            late=late,
            after_failure=after_failure,
            download_url=await download_url(repos, self.settings.public_base_url, job.id),
            event=ctx.event,
        )
        return command_id

    async def _resolve_unknown_link(
        self, repos: Repositories, ctx: JobContext, sent: TelegramCommandRecord, attempt: int
    ) -> tuple[bool, str | None]:
        """Whether link attempt ``attempt`` (``sent``), whose outcome is unknown, is settled as not in the
        guest's chat (then the next attempt may go), else the command to dispatch to find out.

        The Bot API has no idempotency key for ``sendMessage`` and cannot list a chat, so a lost answer is
        resolved by asking Telegram about the message ids where the link would be
        (:mod:`telegram_gateway.message_probe`): the link's "Add stickers" keyboard carries the guest's
        own set link, so only it matches; ``editMessageReplyMarkup`` with that keyboard answers "message
        is not modified" for it alone and changes nothing. The window:

        1. upper bound: the preview sticker (``job:<id>:preview``, which follows the link anyway) is sent
           first, asking for its result: its ``message_id`` is above the link's if the link went out;
        2. lower bound: the highest ``message_id`` of this job's messages to the chat that had been
           answered before the attempt was queued (the "Generating…" text, a notice, an earlier link);
        3. the search (``job:<id>:find_link:<n>``) walks down from the preview. Found: delivered, never
           sent twice. Not found: sent again, as the next of the ``LINK_ATTEMPTS``.

        What is least bad when Telegram cannot tell: a search that could not conclude (a window wider
        than :data:`LINK_SEARCH_PROBES`, a failed search, a preview that failed so that there is no upper
        bound and the search walks up from the lower bound) counts as not found: a second link message
        is better than none, which is what a guest got before. Since the walk goes down from the upper
        bound, a link that did go out a moment before the preview is found by its first probes.
        """
        job = ctx.job
        assert ctx.tg_chat_id is not None and job.sticker_set_name is not None
        search_id = command_ids.find_link(job.id, attempt)
        search = await repos.tg_commands.get(search_id)
        if search is not None:
            found = isinstance(search.result, dict) and search.result.get("message_id")
            if search.status not in FINAL_COMMAND_STATUSES or found:
                return False, search_id  # running; or found and its result lost: announced again
            return True, None
        preview_id = command_ids.preview(job.id)
        preview = await repos.tg_commands.get(preview_id)
        if preview is None:
            await queue_preview(
                repos,
                preview_id,
                job_id=job.id,
                chat_id=ctx.tg_chat_id,
                set_name=job.sticker_set_name,
                reply_to=SERVICE,
            )
            return False, preview_id
        if preview.status not in FINAL_COMMAND_STATUSES:
            return False, preview_id
        upper = _message_id(preview) if preview.created_at >= sent.updated_at else None
        mine = await repos.tg_commands.for_subject("job", job.id)
        lower = max(
            (
                _message_id(r) or 0
                for r in mine
                if r.params.get("chat_id") == ctx.tg_chat_id and r.updated_at < sent.created_at
            ),
            default=0,
        )
        command = FindBotMessage(
            chat_id=ctx.tg_chat_id,
            reply_markup=sent.params["reply_markup"],
            after_message_id=lower,
            before_message_id=upper,
            max_probes=LINK_SEARCH_PROBES,
        )
        subject = JobStep(id=job.id, step="find_link", n=attempt)
        await add_command(repos, search_id, command, subject=subject, reply_to=SERVICE)
        log.info("LINK_SEARCH", job_id=str(job.id), attempt=attempt, after=lower, before=upper)
        return False, search_id

    async def _queue_preview(self, repos: Repositories, job_id: UUID) -> str | None:
        """Queue the job's one preview sticker (``job:<id>:preview``); the command id to dispatch, or
        ``None`` when it was queued before or the job has no chat or set."""
        ctx = await repos.jobs.get_context(job_id)
        if ctx is None or ctx.tg_chat_id is None or ctx.job.sticker_set_name is None:
            return None
        command_id = command_ids.preview(job_id)
        queued = await queue_preview(
            repos, command_id, job_id=job_id, chat_id=ctx.tg_chat_id, set_name=ctx.job.sticker_set_name
        )
        return command_id if queued else None

    async def _link_failed(self, job_id: UUID, result: TelegramResult) -> None:
        """Try the link again after ``LINK_RETRY_DELAY_SEC`` (the next readiness poll queues it), or fail
        the job after ``LINK_ATTEMPTS`` failed sends."""
        async with self.db.transaction() as repos:
            failed = [
                r
                for r in await repos.tg_commands.for_subject("job", job_id, step="link")
                if r.status == CommandStatus.FAILED and not _flooded(r)
            ]
            if len(failed) < self.settings.link_attempts:
                retry_at = datetime.now(UTC) + timedelta(seconds=self.settings.link_retry_delay_sec)
                await repos.jobs.schedule_poll(job_id, at=retry_at)
                log.warning(
                    "LINK_SEND_FAILED", job_id=str(job_id), attempt=len(failed), error=str(result.error)
                )
                return
        error = f"link message failed {len(failed)} times: {result.error}"
        await self._fail(job_id, JobStatus.DELIVERING, error)

    def _next_poll_at(self, job: Job) -> datetime:
        now = datetime.now(UTC)
        created = job.set_created_at or now
        fast = (now - created).total_seconds() < self.settings.pack_poll_fast_window_sec
        step = self.settings.pack_poll_fast_sec if fast else self.settings.pack_poll_slow_sec
        return now + timedelta(seconds=step)

    async def _fail(self, job_id: UUID, from_status: JobStatus, error: str) -> None:
        async with self.db.transaction() as repos:
            job = await repos.jobs.get(job_id)
            failed = job and await fail_job(
                repos, job, error_class=ErrorClass.INTERNAL, error=error, from_statuses=(from_status,)
            )
        if failed:
            await dispatch_commands(self.db, self.publisher, failed.commands)


def _unknown(result: TelegramResult) -> bool:
    """Whether the gateway could not tell if the call was applied (``error_code`` 0)."""
    return not result.ok and result.error is not None and result.error.error_code == UNKNOWN_OUTCOME


def _outcome_unknown(record: TelegramCommandRecord) -> bool:
    return record.status == CommandStatus.FAILED and (record.error or {}).get("error_code") == UNKNOWN_OUTCOME


def _message_id(record: TelegramCommandRecord) -> int | None:
    """The ``message_id`` of a sent message's stored result, if it was sent."""
    if record.status != CommandStatus.SENT or not isinstance(record.result, dict):
        return None
    value = record.result.get("message_id")
    return value if isinstance(value, int) else None


def _poll_due(job: Job) -> bool:
    return job.link_sent_at is None and (job.next_poll_at is None or job.next_poll_at <= datetime.now(UTC))


def _flooded(record: TelegramCommandRecord) -> bool:
    """A row a pre-0010 gateway finished ``failed`` with a 429 (it handed flood waits back; nothing was
    sent). Not one of the link's attempts: the old code asked the next one at the retry time, or
    migration 0010 put the latest back ``pending``."""
    error = record.error or {}
    return record.status == CommandStatus.FAILED and str(error.get("error_code")) == "429"
