"""AI provider calls (``api_usage``): one row per call, written as it happens (DESIGN.md §3, spec/002
"Cost ceiling"); the sums behind the job cost ceiling, the daily budget and the image-requests warning."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from shared.ai_models import TokenUsage
from shared.db.tables import api_usage, jobs, sessions
from shared.events import DEFAULT_EVENT

__all__ = ["ApiCall", "UsageRepository"]


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One provider call.

    Attributes:
        provider: ``gemini``, ``openai`` or ``local``.
        model: the model id sent to the provider.
        kind: what was asked (``passport``, ``verify``, ``anchor``, ``sheet``, ``heads``, ``figure``,
            ``sheet_qa``, ``pack_qa``).
        call_type: ``image`` or ``vision``.
        outcome: ``ok`` or the error class of DESIGN.md §5 (``rate_limit``, ``timeout``, ...).
        cost_usd: what the call cost (USD; 0 for failures the provider does not bill).
        latency_s: wall time of the call (s).
        image_size: ``1K``/``2K`` for image calls.
        error: redacted error text, if any.
        job_id: the job the call was made for (``None`` outside a job, e.g. the CLI).
        usage: the tokens the provider's answer reported (``None``: it reported none, or there was no
            answer; the cost is then the estimate, or 0 for a failure).
        event_id: the event the call counts towards (its budgets and report); ``None``: the event of the
            job's session, or :data:`shared.events.DEFAULT_EVENT` outside a job.
    """

    provider: str
    model: str
    kind: str
    call_type: str
    outcome: str
    cost_usd: float
    latency_s: float
    image_size: str | None = None
    error: str | None = None
    job_id: UUID | None = None
    usage: TokenUsage | None = None
    event_id: str | None = None


_TOKEN_COLUMNS = (
    "input_text_tokens",
    "input_image_tokens",
    "output_text_tokens",
    "output_image_tokens",
    "reasoning_tokens",
)


def _token_values(usage: TokenUsage | None) -> dict[str, int | None]:
    return {name: None if usage is None else getattr(usage, name) for name in _TOKEN_COLUMNS}


def _usage(row: dict[str, object]) -> TokenUsage | None:
    if row["input_text_tokens"] is None:
        return None
    return TokenUsage(**{name: int(row[name] or 0) for name in _TOKEN_COLUMNS})  # type: ignore[call-overload]


class UsageRepository:
    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    async def record(self, call: ApiCall) -> None:
        """Insert one call. A call for a job that no longer exists (erased while it rendered, issue 11)
        is kept for the cost, without a ``job_id``. Its ``event_id`` is ``call.event_id``, else the job's
        session's event, else the default event."""
        job_id: object = None
        event_id: object = call.event_id or DEFAULT_EVENT
        if call.job_id is not None:
            job_id = sa.select(jobs.c.id).where(jobs.c.id == call.job_id).scalar_subquery()
            if call.event_id is None:
                event_id = sa.func.coalesce(
                    sa.select(sessions.c.event_id)
                    .select_from(jobs.join(sessions, sessions.c.id == jobs.c.session_id))
                    .where(jobs.c.id == call.job_id)
                    .scalar_subquery(),
                    DEFAULT_EVENT,
                )
        await self.conn.execute(
            sa.insert(api_usage).values(
                job_id=job_id,
                event_id=event_id,
                provider=call.provider,
                model=call.model,
                kind=call.kind,
                call_type=call.call_type,
                image_size=call.image_size,
                outcome=call.outcome,
                cost_usd=round(call.cost_usd, 6),
                latency_ms=max(0, round(call.latency_s * 1000)),
                error=call.error[:1000] if call.error else None,
                **_token_values(call.usage),
            )
        )

    async def job_spend(self, job_id: UUID, *, since: datetime) -> float:
        """USD the job's calls cost since ``since`` (its ``created_at``: an admin retry resets it)."""
        total = await self.conn.scalar(
            sa.select(sa.func.coalesce(sa.func.sum(api_usage.c.cost_usd), 0)).where(
                api_usage.c.job_id == job_id, api_usage.c.created_at >= since
            )
        )
        return float(total or 0)

    async def spend_since(self, since: datetime) -> float:
        """USD every call since ``since`` cost (the daily budget sums a UTC day)."""
        total = await self.conn.scalar(
            sa.select(sa.func.coalesce(sa.func.sum(api_usage.c.cost_usd), 0)).where(
                api_usage.c.created_at >= since
            )
        )
        return float(total or 0)

    async def event_spend_since(self, event_id: str, since: datetime | None) -> float:
        """USD the calls counted towards event ``event_id`` cost since ``since`` (``None``: ever)."""
        query = sa.select(sa.func.coalesce(sa.func.sum(api_usage.c.cost_usd), 0)).where(
            api_usage.c.event_id == event_id
        )
        if since is not None:
            query = query.where(api_usage.c.created_at >= since)
        return float(await self.conn.scalar(query) or 0)

    async def image_requests_since(self, provider: str, since: datetime) -> int:
        """Image requests sent to ``provider`` since ``since``, whatever their outcome (RPD counts them)."""
        count = await self.conn.scalar(
            sa.select(sa.func.count())
            .select_from(api_usage)
            .where(
                api_usage.c.provider == provider,
                api_usage.c.call_type == "image",
                api_usage.c.created_at >= since,
            )
        )
        return int(count or 0)

    async def for_job(self, job_id: UUID) -> list[ApiCall]:
        """The job's calls, oldest first."""
        rows = await self.conn.execute(
            sa.select(api_usage).where(api_usage.c.job_id == job_id).order_by(api_usage.c.id)
        )
        return [
            ApiCall(
                provider=m["provider"],
                model=m["model"],
                kind=m["kind"],
                call_type=m["call_type"],
                outcome=m["outcome"],
                cost_usd=float(m["cost_usd"]),
                latency_s=m["latency_ms"] / 1000,
                image_size=m["image_size"],
                error=m["error"],
                job_id=m["job_id"],
                usage=_usage(dict(m)),
                event_id=m["event_id"],
            )
            for m in (row._mapping for row in rows)
        ]
