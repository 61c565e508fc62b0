"""Per-client and per-session limits of the public routes (``POST /sessions``, ``POST /leads``, the photo
upload), counted in Redis by :class:`ingest.ratelimit.RateLimiter` so every ingest replica shares them."""

from __future__ import annotations

from fastapi import Request

from ingest.api.errors import RateLimited
from ingest.ratelimit import RateLimiter


def client_address(request: Request) -> str:
    """The client's address as uvicorn sees it (behind a proxy set ``FORWARDED_ALLOW_IPS``)."""
    return request.client.host if request.client else "unknown"


async def refuse_if_over(limiter: RateLimiter | None, key: str) -> None:
    """Count one request of ``key`` (a client address from :func:`client_address`, a session id) against
    ``limiter`` (``None``: no limit). Raises :class:`RateLimited` (429 ``rate_limited`` with
    ``Retry-After``, s) when ``key`` is over it; the refusals show in
    ``stk_http_requests_total{route=, status="429"}``."""
    if limiter is None:
        return
    decision = await limiter.hit(key)
    if not decision.allowed:
        raise RateLimited(decision.retry_after_s)
