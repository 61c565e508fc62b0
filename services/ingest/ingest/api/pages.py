"""The kiosk page (``GET /kiosk``) and the admin page (``GET /admin``): static files served by ingest.

Each page is one HTML file plus its script and stylesheet under ``ingest/static/<page>/``, fetched as
``/<page>/assets/<name>``. No build step, no framework; the pages call the JSON API of the same origin
(DESIGN.md §4 kiosk, §1 and §12 admin page behind the token, which the admin page asks for itself).

Every answer carries a strict ``Content-Security-Policy`` (scripts and styles only from this origin, no
inline code; images also from ``data:`` for the session's QR code and ``blob:`` for the photo preview) and
``Cache-Control: no-cache`` with an ``ETag``: a tablet revalidates on every load and gets ``304`` while the
files are unchanged, so a deploy reaches every kiosk on its next reload. A venue logo on another origin
(``KIOSK_LOGO_URL``, :mod:`ingest.branding`) is the one addition to the kiosk page's ``img-src``.
Besides scripts and styles, the kiosk ships its icons (SVG) and the sample stickers of its attract loop
(``sample-*.webp``, about 10 KB each).
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Path, Response

from ingest.api.errors import ApiError
from ingest.branding import logo_origin
from ingest.context import Ctx, IngestContext
from shared.errors import DatabaseUnavailable
from shared.texts import CATALOGUES, LANGUAGES

router = APIRouter()
_STATIC = resources.files("ingest") / "static"
_TYPES = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "svg": "image/svg+xml",
    "png": "image/png",
    "webp": "image/webp",
}


def words_script() -> bytes:
    """``kiosk/words.js``: the ``kiosk`` texts of the catalogues (:mod:`shared.texts`) per language."""
    table = CATALOGUES.table("kiosk")
    words = {lang: {key: versions[lang] for key, versions in table.items()} for lang in LANGUAGES}
    script = (
        '// The kiosk\'s words, from shared/locales/<lang>/LC_MESSAGES/guest.po (msgctxt "kiosk").\n'
        f"window.KIOSK_WORDS = {json.dumps(words, ensure_ascii=False, indent=1)};\n"
    )
    return script.encode()


#: The body of ``GET /kiosk/words.js``, made once (the catalogues are read at import).
KIOSK_WORDS = words_script()


def csp(*img_origins: str) -> str:
    """The pages' Content-Security-Policy; ``img_origins`` (``https://host``) are also allowed for images."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            " ".join(["img-src 'self' data: blob:", *img_origins]),
            "connect-src 'self'",
            "media-src 'self' blob: mediastream:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


CSP = csp()
# The kiosk page needs the front camera (getUserMedia); the admin page needs no device at all.
_PERMISSIONS = {
    "kiosk": "camera=(self), microphone=(), geolocation=()",
    "admin": "camera=(), microphone=(), geolocation=()",
}
Page = Literal["kiosk", "admin"]
AssetName = Annotated[str, Path(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}\.(js|css|svg|png|webp)$")]
IfNoneMatch = Annotated[str | None, Header()]


def _serve(page: Page, name: str, if_none_match: str | None, policy: str = CSP) -> Response:
    """Answer with ``static/<page>/<name>``: 200 with the bytes, or 304 when ``If-None-Match`` matches.

    Raises:
        ApiError: 404 ``not_found`` when the file does not exist.
    """
    file = _STATIC / page / name
    if not file.is_file():
        raise ApiError(404, "not_found", f"/{page}/assets/{name} does not exist")
    return _answer(page, name, file.read_bytes(), if_none_match, policy)


def _answer(page: Page, name: str, body: bytes, if_none_match: str | None, policy: str) -> Response:
    """``body`` as the file ``name`` of ``page``, with its ``ETag`` (304 when ``If-None-Match`` matches)."""
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {
        "Cache-Control": "no-cache",
        "ETag": etag,
        "Content-Security-Policy": policy,
        "Permissions-Policy": _PERMISSIONS[page],
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }
    if if_none_match is not None and etag in {t.strip() for t in if_none_match.split(",")}:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=_TYPES[name.rpartition(".")[2]], headers=headers)


def _kiosk_csp(ctx: IngestContext, *event_logos: str) -> str:
    """The kiosk's policy: images also from ``KIOSK_LOGO_URL``'s origin and those of ``event_logos``."""
    origins = {logo_origin(url) for url in (ctx.settings.kiosk_logo_url, *event_logos)}
    return csp(*sorted(o for o in origins if o))


@router.get("/kiosk")
async def kiosk_page(ctx: Ctx, if_none_match: IfNoneMatch = None) -> Response:
    """The kiosk tablet's page; ``?station=<name>`` names the station its sessions are opened for. Its
    policy allows the logos of every event (an event's branding, :mod:`ingest.api.admin_events`), since
    the page shows whichever event its station serves, now or after it opens; an event made or changed
    later shows a logo from a new origin from the page's next load. With Postgres down, only
    ``KIOSK_LOGO_URL``'s (the page still loads)."""
    logos: list[str] = []
    try:
        async with ctx.db.transaction() as repos:
            logos = [e.branding.get("logo_url", "") for e in await repos.events.all()]
    except DatabaseUnavailable:
        pass
    return _serve("kiosk", "index.html", if_none_match, _kiosk_csp(ctx, *logos))


@router.get("/kiosk/words.js")
async def kiosk_words(ctx: Ctx, if_none_match: IfNoneMatch = None) -> Response:
    """The kiosk page's words in every language, from the catalogues (:data:`KIOSK_WORDS`), as a script
    that sets ``window.KIOSK_WORDS`` (``{language: {key: text}}``, English first) before ``kiosk.js`` runs;
    the page offers the languages in that order."""
    return _answer("kiosk", "words.js", KIOSK_WORDS, if_none_match, _kiosk_csp(ctx))


@router.get("/kiosk/assets/{name}")
async def kiosk_asset(ctx: Ctx, name: AssetName, if_none_match: IfNoneMatch = None) -> Response:
    """The kiosk page's script, stylesheet, icons and sample stickers."""
    return _serve("kiosk", name, if_none_match, _kiosk_csp(ctx))


@router.get("/admin")
async def admin_page(if_none_match: IfNoneMatch = None) -> Response:
    """The operators' page over the ``/admin/*`` JSON API; it asks for ``ADMIN_TOKEN`` itself."""
    return _serve("admin", "index.html", if_none_match)


@router.get("/admin/assets/{name}")
async def admin_asset(name: AssetName, if_none_match: IfNoneMatch = None) -> Response:
    """The admin page's script and stylesheet."""
    return _serve("admin", name, if_none_match)
