"""What route handlers need, built once in :mod:`ingest.main` and reached through ``Depends``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from ingest.captures import CaptureChecks
from ingest.photo_pool import PhotoChecker
from ingest.ratelimit import RateLimiter
from ingest.settings import IngestSettings
from shared.outfits import Outfit
from shared.repositories import Database
from shared.streams import Publisher


@dataclass
class IngestContext:
    settings: IngestSettings
    db: Database
    publisher: Publisher
    catalog: dict[str, Outfit]
    photos: PhotoChecker
    captures: CaptureChecks
    lead_limiter: RateLimiter | None = None
    session_limiter: RateLimiter | None = None
    photo_limiter: RateLimiter | None = None


def get_context(request: Request) -> IngestContext:
    ctx: IngestContext = request.app.state.ctx
    return ctx


Ctx = Annotated[IngestContext, Depends(get_context)]
