"""The last full preflight report in Postgres: the ``settings`` row :data:`shared.preflight.REPORT_KEY`,
written by the runner (``python -m shared.preflight``), read by the gateway's ``/preflight`` and the admin
page."""

from __future__ import annotations

from shared.db import create_engine
from shared.errors import ConfigError
from shared.preflight import REPORT_KEY, Report
from shared.repositories import Database
from shared.settings import ServiceSettings, load_settings


async def store(report: Report) -> str | None:
    """Write ``report`` to the ``settings`` row :data:`REPORT_KEY`; ``None``, or why it could not."""
    try:
        url = load_settings(ServiceSettings).database_url
    except ConfigError as exc:
        return f"settings: {exc}"
    engine = create_engine(url, pool_size=1)
    try:
        async with Database(engine).transaction() as repos:
            await repos.settings.put(REPORT_KEY, report.to_json())
    except Exception as exc:
        return f"{type(exc).__name__}"
    finally:
        await engine.dispose()
    return None


async def stored_report(db: Database) -> Report | None:
    """The last stored report, or ``None`` when there is none (or it cannot be read)."""
    async with db.transaction() as repos:
        value = await repos.settings.get(REPORT_KEY)
    if not isinstance(value, dict):
        return None
    try:
        return Report.from_json(value)
    except (KeyError, ValueError, TypeError):
        return None
