"""Leads stored for the shared tests."""

from __future__ import annotations

from shared.repositories import Database


async def lead(db: Database, request_id: str, contact: str) -> int:
    """Submit a lead (a repeat when ``contact`` is known already); returns its lead's id."""
    async with db.transaction() as repos:
        stored = await repos.leads.submit(
            request_id=request_id,
            name="Ann",
            contact=contact,
            contact_kind="email",
            contact_key=contact,
            message="",
            source_page=None,
            utm={},
        )
    return stored.lead.id
