"""The schema exists twice, as ``shared/db/tables.py`` (what the code queries) and as the Alembic
migrations (what a database gets). These tests hold them equal: the migrations applied to an empty
database compare with ``tables.py`` through Alembic's autogenerate comparison
(``alembic.autogenerate.compare_metadata``, types and server defaults included) and it finds nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.ext.asyncio import AsyncEngine

from shared.db import create_engine
from shared.db.tables import metadata

pytestmark = pytest.mark.integration


def _diff(sync_conn: sa.Connection, target: sa.MetaData) -> list[Any]:
    context = MigrationContext.configure(
        sync_conn,
        opts={"compare_type": True, "compare_server_default": True, "target_metadata": target},
    )
    return list(compare_metadata(context, target))


async def _compare(engine: AsyncEngine, target: sa.MetaData) -> list[Any]:
    async with engine.connect() as conn:
        return await conn.run_sync(_diff, target)


async def test_migrations_at_head_equal_tables_py(database_url: str) -> None:
    """``database_url`` is a fresh database migrated to head by the real migrations (tests/conftest.py)."""
    engine = create_engine(database_url, pool_size=1)
    try:
        assert await _compare(engine, metadata) == []
    finally:
        await engine.dispose()


async def test_the_comparison_sees_a_drift(database_url: str) -> None:
    """The check can fail: a column that only ``tables.py`` has, a column type changed there, and a table
    the migrations never created are each reported."""
    drifted = sa.MetaData()
    for table in metadata.sorted_tables:
        table.to_metadata(drifted)
    jobs = drifted.tables["jobs"]
    jobs.append_column(sa.Column("only_in_tables_py", sa.Text(), nullable=True))
    sessions = drifted.tables["sessions"]
    sessions.c.language.type = sa.Integer()
    sa.Table("never_migrated", drifted, sa.Column("id", sa.Integer, primary_key=True))

    engine = create_engine(database_url, pool_size=1)
    try:
        diff = await _compare(engine, drifted)
    finally:
        await engine.dispose()
    found = {repr(entry) for entry in diff}
    assert any("add_column" in d and "only_in_tables_py" in d for d in found), found
    assert any("modify_type" in d and "language" in d for d in found), found
    assert any("add_table" in d and "never_migrated" in d for d in found), found
