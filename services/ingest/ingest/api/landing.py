"""The landing form: a small page served by ingest (``GET /landing``) and the script any landing page can
embed (``GET /landing/leads.js``; spec/000 "Landing": the visitor retries with the same ``requestId``,
the form keeps its content on failure).

Embedding on the real landing::

    <form data-sticker-lead>…inputs named name, contact, message…</form>
    <script src="https://<ingest>/landing/leads.js" data-endpoint="https://<ingest>/leads"></script>

The origin of that page must be listed in ``LEADS_CORS_ORIGINS``.
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter, Response

router = APIRouter()
_STATIC = resources.files("ingest") / "static"


@router.get("/landing")
async def landing_page() -> Response:
    return Response(
        (_STATIC / "landing.html").read_bytes(),
        media_type="text/html; charset=utf-8",
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/landing/leads.js")
async def landing_script() -> Response:
    return Response(
        (_STATIC / "leads.js").read_bytes(),
        media_type="text/javascript; charset=utf-8",
        headers={"Cache-Control": "public, max-age=300"},
    )
