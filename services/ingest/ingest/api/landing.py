"""The landing page: a small page served by ingest (``GET /landing``, styled like the kiosk, in English and
Russian, with a consent line for the contact data it collects) and the script any landing page can embed
(``GET /landing/leads.js``; spec/000 "Landing": the visitor retries with the same ``requestId``, the form
keeps its content on failure).

The page's language is ``?lang=en|ru`` when given, else the visitor's ``Accept-Language``
(:func:`page_language`), else English; the page carries both languages and its EN/RU switch changes it in
place (``landing.js``, which remembers the choice). The consent line states ``LEAD_RETENTION_DAYS``, the
retention the housekeeping enforces (README "Privacy"). Like the kiosk and admin pages it is served with a
strict Content-Security-Policy (:data:`ingest.api.pages.CSP`: no inline code).

Embedding on the real landing::

    <form data-sticker-lead>…inputs named name, contact, message, a checkbox named consent…</form>
    <script src="https://<ingest>/landing/leads.js" data-endpoint="https://<ingest>/leads"></script>

The origin of that page must be listed in ``LEADS_CORS_ORIGINS``.
"""

from __future__ import annotations

from importlib import resources
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Response

from ingest.api.pages import CSP
from ingest.context import Ctx

router = APIRouter()
_STATIC = resources.files("ingest") / "static"
Language = Literal["en", "ru"]
LANGUAGES: tuple[Language, ...] = ("en", "ru")
_HEADERS = {
    "Content-Security-Policy": CSP,
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def page_language(accept_language: str | None) -> Language:
    """The page language for an ``Accept-Language`` header (RFC 9110 §12.5.4: ``ru-RU,ru;q=0.9,en;q=0.8``):
    the supported language (``en``, ``ru``; region subtags ignored) with the highest ``q`` (ties: the
    first listed), ``en`` when none is supported, the header is absent or malformed. Never raises."""
    best: tuple[float, Language] | None = None
    for item in (accept_language or "").split(","):
        tag, _, params = item.strip().partition(";")
        primary = tag.strip().split("-")[0].lower()
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if primary in LANGUAGES and quality > 0 and (best is None or quality > best[0]):
            best = (quality, primary)
    return best[1] if best else "en"


@router.get("/landing")
async def landing_page(
    ctx: Ctx,
    lang: Annotated[Language | None, Query()] = None,
    accept_language: Annotated[str | None, Header()] = None,
) -> Response:
    """The landing page in ``lang``, or the visitor's ``Accept-Language`` (module docstring).

    Errors: 422 ``invalid_request`` for a ``lang`` other than ``en``/``ru``."""
    chosen = lang or page_language(accept_language)
    html = (_STATIC / "landing.html").read_text(encoding="utf-8")
    html = html.replace("{{lang}}", chosen).replace("{{lead_days}}", str(ctx.settings.lead_retention_days))
    headers = {**_HEADERS, "Cache-Control": "no-cache", "Vary": "Accept-Language"}
    return Response(html, media_type="text/html; charset=utf-8", headers=headers)


def _static(name: str, media_type: str) -> Response:
    return Response(
        (_STATIC / name).read_bytes(),
        media_type=media_type,
        headers={**_HEADERS, "Cache-Control": "public, max-age=300"},
    )


@router.get("/landing/leads.js")
async def landing_script() -> Response:
    """The embeddable form script (module docstring)."""
    return _static("leads.js", "text/javascript; charset=utf-8")


@router.get("/landing/landing.js")
async def landing_language_switch() -> Response:
    """The page's EN/RU switch."""
    return _static("landing.js", "text/javascript; charset=utf-8")


@router.get("/landing/landing.css")
async def landing_stylesheet() -> Response:
    """The page's stylesheet (the kiosk's palette)."""
    return _static("landing.css", "text/css; charset=utf-8")
