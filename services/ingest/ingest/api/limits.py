"""Per-client limits of the public routes (``POST /sessions``, ``POST /leads``), counted in Redis by
:class:`ingest.ratelimit.RateLimiter` so every ingest replica shares them."""

from __future__ import annotations

from fastapi import Request

from ingest.api.errors import RateLimited
from ingest.ratelimit import RateLimiter


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


async def refuse_if_over(limiter: RateLimiter | None, request: Request) -> None:
    """Count one request of this client (its address as uvicorn sees it: behind a proxy set
    ``FORWARDED_ALLOW_IPS``) against ``limiter`` (``None``: no limit). Raises :class:`RateLimited` (429
    ``rate_limited`` with ``Retry-After``) when the client is over it; the refusals show in
    ``stk_http_requests_total{route=, status="429"}``."""
    if limiter is None:
        return
    decision = await limiter.hit(_client(request))
    if not decision.allowed:
        raise RateLimited(decision.retry_after_s)
