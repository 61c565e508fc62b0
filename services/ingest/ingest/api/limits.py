"""Per-client and per-session limits of the public routes (``POST /sessions``, ``POST /leads``, the photo
upload), counted in Redis by :class:`ingest.ratelimit.RateLimiter` so every ingest replica shares them;
and the kiosk key that lets only the venue's kiosks open sessions (``KIOSK_KEY``)."""

from __future__ import annotations

import secrets

from fastapi import Request
from pydantic import SecretStr

from ingest.api.errors import KioskKeyRequired, RateLimited
from ingest.ratelimit import RateLimiter

#: The header a kiosk sends its key in (``kiosk.js``: the ``?key=`` of its start URL).
KIOSK_KEY_HEADER = "X-Kiosk-Key"


def client_address(request: Request) -> str:
    """The client's address as uvicorn sees it (behind a proxy set ``FORWARDED_ALLOW_IPS``)."""
    return request.client.host if request.client else "unknown"


async def refuse_if_over(limiter: RateLimiter | None, key: str, *, item: str | None = None) -> None:
    """Count one request of ``key`` (a client address from :func:`client_address`, a session id) against
    ``limiter`` (``None``: no limit); with ``item`` (a capture id), each item of ``key`` is counted once
    (:meth:`ingest.ratelimit.RateLimiter.hit_once`). Raises :class:`RateLimited` (429 ``rate_limited`` with
    ``Retry-After``, s) when ``key`` is over it; the refusals show in
    ``stk_http_requests_total{route=, status="429"}``."""
    if limiter is None:
        return
    decision = await limiter.hit(key) if item is None else await limiter.hit_once(key, item)
    if not decision.allowed:
        raise RateLimited(decision.retry_after_s)


def kiosk_key_given(kiosk_key: SecretStr | None, given: str | None) -> bool:
    """Whether a request may open a session as one of the venue's kiosks: ``False`` when ``KIOSK_KEY`` is
    not set (anyone may; counted per client address), ``True`` when the request carries it in
    :data:`KIOSK_KEY_HEADER` (counted per station, so a guest's phone on the venue network, often behind
    the kiosks' own public address, can neither open sessions nor use up the kiosks' limit).

    Raises:
        KioskKeyRequired: ``KIOSK_KEY`` is set and the header is missing or another value (401).
    """
    if kiosk_key is None:
        return False
    if not header_matches(given, kiosk_key):
        raise KioskKeyRequired
    return True


def header_matches(given: str | None, secret: SecretStr) -> bool:
    """Whether a header value (``None``: absent) is ``secret``, compared in constant time on bytes. Never
    raises: Starlette decodes header bytes as Latin-1, so ``encode("latin-1")`` gives back what the client
    sent, and a value that is not from a real header (non-Latin-1 ``str``) matches nothing."""
    try:
        given_bytes = (given or "").strip().encode("latin-1")
    except UnicodeEncodeError:
        return False
    return bool(given_bytes) and secrets.compare_digest(given_bytes, secret.get_secret_value().encode())


def session_counter(keyed: bool, request: Request, station: str) -> str:
    """What ``POST /sessions`` is counted under: the station for a keyed kiosk
    (:func:`kiosk_key_given`), else the client's address."""
    return f"station:{station}" if keyed else client_address(request)
