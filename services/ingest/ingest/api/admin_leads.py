"""``GET /admin/leads``: the leads with their status and publication state, for operators (DESIGN.md §2);
``GET /admin/leads.csv``: the same as a spreadsheet file (issue 13 item 3).

Behind ``Authorization: Bearer <ADMIN_TOKEN>`` (DESIGN.md §12, admin web behind a token); without an
``ADMIN_TOKEN`` setting the endpoint answers 403 ``admin_disabled``. A missing or wrong token is 401.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Response

from ingest.api.errors import ApiError
from ingest.api.limits import header_matches
from ingest.context import Ctx
from shared.domain import Lead


def require_admin(ctx: Ctx, authorization: str | None) -> None:
    """Raise ``ApiError`` 403 when admin access is off, 401 for any header but ``Bearer <ADMIN_TOKEN>``.

    Any malformed header (missing, another scheme, no token, non-ASCII bytes, control characters) is a
    401, never a 500: the comparison is on bytes, in constant time (:func:`ingest.api.limits.header_matches`).
    """
    token = ctx.settings.admin_token
    if token is None:
        raise ApiError(403, "admin_disabled", "The admin API is off: ADMIN_TOKEN is not set.")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not header_matches(given, token):
        raise ApiError(401, "unauthorized", "Send Authorization: Bearer <ADMIN_TOKEN>.")


def admin_required(ctx: Ctx, authorization: Annotated[str | None, Header()] = None) -> None:
    """The admin routers' dependency: :func:`require_admin` before anything else of the request is read,
    so an unauthenticated caller gets a 401, never a 422 that describes the route's parameters."""
    require_admin(ctx, authorization)


#: The routers of admin endpoints are behind :func:`admin_required`.
router = APIRouter(dependencies=[Depends(admin_required)])


@router.get("/admin/leads")
async def list_leads(
    ctx: Ctx,
    status: Annotated[Literal["new", "taken", "done", "spam"] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> dict[str, Any]:
    """The newest leads first: number, status and who set it, contact, card state, repeats."""
    async with ctx.db.transaction() as repos:
        rows = await repos.leads.list_recent(limit, status=status)
    return {"leads": [_row(lead, repeats) for lead, repeats in rows]}


#: At most this many leads in one CSV export (the newest): years of a venue's landing page.
CSV_MAX_ROWS = 10_000
CSV_COLUMNS = (
    "number",
    "created_at",
    "status",
    "status_by",
    "status_at",
    "name",
    "contact",
    "contact_kind",
    "message",
    "source_page",
    "utm",
    "repeats",
    "card_state",
)
#: A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets (OWASP "CSV
#: Injection"): such a cell is written with a leading ``'``, which the spreadsheet shows as text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """One CSV cell as text: ``None`` is empty, a text that a spreadsheet would run as a formula gets a
    leading ``'`` (:data:`FORMULA_STARTS`); quoting is the ``csv`` module's (RFC 4180)."""
    if value is None:
        return ""
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def leads_csv(rows: list[tuple[Lead, int]]) -> str:
    """The leads as CSV text (RFC 4180: ``\r\n`` line ends, fields with ``,``, ``"`` or line breaks
    quoted, ``"`` doubled), a header row of :data:`CSV_COLUMNS` first."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for lead, repeats in rows:
        utm = "; ".join(f"{k}={v}" for k, v in sorted(lead.utm.items()))
        values = (
            lead.id,
            lead.created_at,
            lead.status,
            lead.status_by_name,
            lead.status_at,
            lead.name,
            lead.contact,
            lead.contact_kind,
            lead.message,
            lead.source_page,
            utm,
            repeats,
            lead.post_state,
        )
        writer.writerow([csv_cell(v) for v in values])
    return out.getvalue()


@router.get("/admin/leads.csv")
async def export_leads(
    ctx: Ctx, status: Annotated[Literal["new", "taken", "done", "spam"] | None, Query()] = None
) -> Response:
    """The newest :data:`CSV_MAX_ROWS` leads (optionally of one status) as a UTF-8 CSV download, with a
    byte-order mark so that Excel reads Cyrillic names right."""
    async with ctx.db.transaction() as repos:
        rows = await repos.leads.list_recent(CSV_MAX_ROWS, status=status)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    return Response(
        ("\ufeff" + leads_csv(rows)).encode("utf-8"),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="leads-{day}.csv"',
            "Cache-Control": "private, no-store",
        },
    )


def _row(lead: Lead, repeats: int) -> dict[str, Any]:
    return {
        "number": lead.id,
        "status": lead.status,
        "status_by": lead.status_by_name,
        "status_at": lead.status_at.isoformat() if lead.status_at else None,
        "name": lead.name,
        "contact": lead.contact,
        "contact_kind": lead.contact_kind,
        "message": lead.message,
        "source_page": lead.source_page,
        "utm": lead.utm,
        "created_at": lead.created_at.isoformat(),
        "card": {
            "state": lead.post_state,
            "published_at": lead.published_at.isoformat() if lead.published_at else None,
            "message_id": lead.card_message_id,
            "attempts": lead.attempts,
            "failures": lead.failures,
            "last_error": lead.last_error,
        },
        "repeats": repeats,
    }
