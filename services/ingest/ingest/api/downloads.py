"""The download page of a guest's pack (issue 23 item 3): ``GET /d/<token>`` on the guest's phone.

- ``GET /d/<token>``: a small HTML page (no script), in the phone's language (``Accept-Language``), with
  the 12 stickers, each linked as PNG and WebP,
  one link to a zip of all of them, and how to add them to Telegram or WhatsApp later. Built for a phone
  on a slow network: about 3 KB of HTML and CSS inline, images lazy-loaded at their display size.
- ``GET /d/<token>/<position>.png``: the sticker as stored (PNG with transparency, 512 px on its longer
  side, the Bot API's static sticker size).
- ``GET /d/<token>/<position>.webp``: the sticker on a 512 × 512 px transparent square, lossy WebP at
  quality 80: WhatsApp's sticker format (512 × 512 px WebP, at most 100 KB each: WhatsApp's
  "Stickers" FAQ and its sticker-app sample README), which Telegram's @Stickers bot also takes.
- ``GET /d/<token>/stickers.zip``: the 12 stickers in both formats (``sticker-01.png`` …).

The token (:mod:`shared.downloads`) names a job whose stickers are final (:data:`FINAL_STICKERS`: rendered,
being delivered or delivered, so a guest who taps the link before delivery has marked the job delivered
gets the page too); it names nothing once the job is erased (404 ``not_found``), while the job is still
being drawn or after it failed (404), and the job's stickers are gone after ``STICKER_RETENTION_DAYS``
(410 ``expired``). The page answers
404/410 as HTML for the person holding the phone; the files answer the JSON error body
(:mod:`ingest.api.errors`). Every answer is ``private`` and ``no-referrer`` (the token is the key) and
``noindex``.
"""

from __future__ import annotations

import asyncio
import functools
import io
import re
import zipfile
from functools import partial
from html import escape
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Header, Path, Response
from PIL import Image

from ingest.api.errors import ApiError
from ingest.context import Ctx, IngestContext
from shared.domain import Blob, JobStatus
from shared.downloads import download_key, job_of_token
from shared.texts import SOURCE_LANGUAGE, download_text, language_of

router = APIRouter()
#: The statuses in which a job's stored stickers are final (stored after the pack QA, never redrawn unless
#: the job fails and an admin retries it, and a failed job has no page).
FINAL_STICKERS = frozenset({JobStatus.RENDERED, JobStatus.DELIVERING, JobStatus.DELIVERED})

_TOKEN_PATTERN = r"[A-Za-z0-9_-]{43}"  # shared.downloads.download_token's alphabet and length
_TOKEN = re.compile(_TOKEN_PATTERN)
Token = Annotated[str, Path(pattern=f"^{_TOKEN_PATTERN}$")]
StickerFile = Annotated[str, Path(pattern=r"^[0-9]{1,2}\.(png|webp)$")]
WEBP_SIDE_PX = 512
WEBP_QUALITY = 80
#: WebP files kept per ingest process (~30-60 KB each: ~10 MB for 256, the packs of ~20 recent guests).
#: A sticker deleted by erasure or retention is never served from it: every request checks the job first.
WEBP_CACHE_SIZE = 256
_HEADERS = {
    "Cache-Control": "private, max-age=3600",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "X-Content-Type-Options": "nosniff",
}
# No script at all; the one inline stylesheet is the page's own (no user text is ever put into it).
_PAGE_CSP = "; ".join(
    (
        "default-src 'none'",
        "img-src 'self'",
        "style-src 'unsafe-inline'",
        "base-uri 'none'",
        "form-action 'none'",
    )
)


#: Why a token opens no page: it names nothing (404) or a pack whose stickers are gone (410).
NOT_FOUND, EXPIRED = 404, 410


async def _stickers(ctx: IngestContext, token: str) -> list[Blob] | int:
    """The stickers (by position) of the job ``token`` names, or why there are none: :data:`NOT_FOUND`
    for a malformed or foreign token, an erased job or one whose stickers are not final;
    :data:`EXPIRED` when its stickers were deleted (retention)."""
    if not _TOKEN.fullmatch(token):
        return NOT_FOUND
    async with ctx.db.transaction() as repos:
        job_id = job_of_token(await download_key(repos), token)
        job = await repos.jobs.get(job_id) if job_id else None
        if job is None or job.status not in FINAL_STICKERS:
            return NOT_FOUND
        stickers = [b for b in await repos.blobs.for_job(job.id, "sticker") if b.position is not None]
    return stickers or EXPIRED


def _api_error(status: int) -> ApiError:
    if status == EXPIRED:
        return ApiError(410, "expired", "these stickers were deleted after the retention period")
    return ApiError(404, "not_found", "no stickers at this link")


async def _stickers_or_error(ctx: IngestContext, token: str) -> list[Blob]:
    """The stickers of ``token``'s pack. Raises: ApiError 404 ``not_found`` / 410 ``expired``."""
    found = await _stickers(ctx, token)
    if isinstance(found, int):
        raise _api_error(found)
    return found


def webp_of(png: bytes) -> bytes:
    """``png`` (a sticker, at most 512 px a side) centred on a 512 × 512 px transparent square, as WebP."""
    with Image.open(io.BytesIO(png)) as im:
        sticker = im.convert("RGBA")
    sticker.thumbnail((WEBP_SIDE_PX, WEBP_SIDE_PX))
    square = Image.new("RGBA", (WEBP_SIDE_PX, WEBP_SIDE_PX), (0, 0, 0, 0))
    square.paste(sticker, ((WEBP_SIDE_PX - sticker.width) // 2, (WEBP_SIDE_PX - sticker.height) // 2))
    out = io.BytesIO()
    square.save(out, "WEBP", quality=WEBP_QUALITY, method=4)
    return out.getvalue()


@functools.lru_cache(maxsize=WEBP_CACHE_SIZE)
def _webp_of_blob(blob_id: UUID, png: bytes) -> bytes:
    """:func:`webp_of` once per stored sticker (blob ``blob_id``) per process: a page view asks for 12
    WebP files (tens of ms of CPU each) and the zip for the same 12 again."""
    return webp_of(png)


def zip_of(stickers: list[Blob]) -> bytes:
    """A zip of ``stickers`` as ``sticker-NN.png`` and ``sticker-NN.webp`` (NN = 01 …, in position order)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:  # PNG/WebP do not deflate
        for n, blob in enumerate(stickers, start=1):
            archive.writestr(f"sticker-{n:02d}.png", blob.data)
            archive.writestr(f"sticker-{n:02d}.webp", _webp_of_blob(blob.id, blob.data))
    return out.getvalue()


@router.get("/d/{token}/stickers.zip")
async def download_zip(ctx: Ctx, token: Token) -> Response:
    """All stickers as one zip (PNG and WebP); 404 ``not_found`` / 410 ``expired`` as the module says."""
    stickers = await _stickers_or_error(ctx, token)
    body = await asyncio.to_thread(zip_of, stickers)
    headers = {**_HEADERS, "Content-Disposition": 'attachment; filename="stickers.zip"'}
    return Response(body, media_type="application/zip", headers=headers)


@router.get("/d/{token}/{name}")
async def download_sticker(ctx: Ctx, token: Token, name: StickerFile) -> Response:
    """One sticker, ``<position>.png`` or ``<position>.webp`` (position 0–11); 404 ``not_found`` when the
    pack has no such position, else as the module says."""
    position, _, fmt = name.partition(".")
    stickers = {b.position: b for b in await _stickers_or_error(ctx, token)}
    blob = stickers.get(int(position))
    if blob is None:
        raise ApiError(404, "not_found", f"no sticker {position} at this link")
    if fmt == "png":
        return Response(blob.data, media_type=blob.content_type, headers=_HEADERS)
    webp = await asyncio.to_thread(_webp_of_blob, blob.id, blob.data)
    return Response(webp, media_type="image/webp", headers=_HEADERS)


@router.get("/d/{token}")
async def download_page(
    ctx: Ctx,
    token: str,
    accept: Annotated[str, Header()] = "",
    accept_language: Annotated[str, Header()] = "",
) -> Response:
    """The page of the pack: 200, or 404 ``not_found`` (no such pack) / 410 ``expired`` (deleted after
    retention): as an HTML page for a browser (``Accept`` names ``text/html``), else the JSON error body.
    Its words are the catalogues' (``msgctxt "download"``, :func:`shared.texts.download_text`) in the
    phone's language (the first tag of ``Accept-Language`` that has a catalogue, else English)."""
    headers = {
        **_HEADERS,
        "Cache-Control": "private, no-cache",
        "Content-Security-Policy": _PAGE_CSP,
        "Vary": "Accept, Accept-Language",
    }
    lang = page_language(accept_language)
    words = partial(download_text, language_code=lang)
    stickers = await _stickers(ctx, token)
    if isinstance(stickers, int):
        if "text/html" not in accept:
            raise _api_error(stickers)
        code = "expired" if stickers == EXPIRED else "not_found"
        title = escape(words(f"{code}_title"))
        body = _html(lang, title, f"<h1>{title}</h1><p>{escape(words(f'{code}_text'))}</p>", error=code)
        return Response(body, status_code=stickers, media_type="text/html; charset=utf-8", headers=headers)
    base = f"/d/{token}"  # the route's pattern allows only [A-Za-z0-9_-]
    items = "".join(
        f'<li><img src="{base}/{b.position}.webp" width="512" height="512" loading="lazy" '
        f'alt="{escape(words("sticker_alt", count=str(n)))}">'
        f'<a href="{base}/{b.position}.png" download>PNG</a> · '
        f'<a href="{base}/{b.position}.webp" download>WebP</a></li>'
        for n, b in enumerate(stickers, start=1)
    )
    content = (
        f"<h1>{escape(words('heading', count=str(len(stickers))))}</h1>"
        f'<a class="zip" href="{base}/stickers.zip" download>{escape(words("zip"))}</a><ul>{items}</ul>'
        f"<h2>{escape(words('telegram_title'))}</h2><p>{escape(words('telegram_how'))}</p>"
        f"<h2>{escape(words('whatsapp_title'))}</h2><p>{escape(words('whatsapp_how'))}</p>"
    )
    page = _html(lang, escape(words("page_title")), content)
    return Response(page, media_type="text/html; charset=utf-8", headers=headers)


def page_language(accept_language: str) -> str:
    """The catalogue language for an ``Accept-Language`` header (RFC 9110 §12.5.4): its tags by weight
    (``q``, 1 when absent; ``q=0`` excluded), the first one with a catalogue of its own language
    (:func:`shared.texts.language_of`); English when none has."""
    tags: list[tuple[float, int, str]] = []
    for n, part in enumerate(accept_language.split(",")):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                continue
        if tag and tag != "*" and weight > 0:
            tags.append((-weight, n, tag))
    for _, _, tag in sorted(tags):
        language = language_of(tag)
        if language.split("_")[0] == tag.split("-")[0].lower():
            return language
    return SOURCE_LANGUAGE


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:0 auto;max-width:40rem;padding:1rem;color:#222}"
    "h1{font-size:1.4rem}h2{font-size:1.1rem}"
    "ul{list-style:none;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(8rem,1fr));gap:.75rem}"
    "li{text-align:center;font-size:.9rem}"
    "img{display:block;margin:0 auto .25rem;width:100%;height:auto;aspect-ratio:1;background:#f3f3f3;"
    "border-radius:.5rem}"
    ".zip{display:block;text-align:center;padding:.9rem;margin:1rem 0;background:#2a6df4;color:#fff;"
    "border-radius:.5rem;text-decoration:none;font-weight:600}"
)


def _html(lang: str, title: str, content: str, *, error: str | None = None) -> str:
    """A whole page in ``lang``: ``title`` and ``content`` (HTML, escaped by the caller); ``error`` marks
    an error page with its machine-readable code (``data-error`` on ``<body>``)."""
    marker = f' data-error="{error}"' if error else ""
    return (
        f'<!doctype html><html lang="{lang.replace("_", "-")}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f'<meta name="robots" content="noindex"><title>{title}</title><style>{_STYLE}</style></head>'
        f"<body{marker}>{content}</body></html>"
    )
