"""The migrated template (``devstack.infra.migrated_database``): a copy is at the head of the real Alembic
migrations, and a changed migration names another template, so a stale schema is never copied."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import asyncpg
import pytest
from alembic.script import ScriptDirectory

from devstack import infra as devstack_infra
from devstack.infra import Infra, drop_database, migrated_database, schema_template_name
from shared.db import plain_url
from shared.migrate import alembic_config

pytestmark = pytest.mark.integration


async def versions(url: str) -> list[str]:
    conn = await asyncpg.connect(plain_url(url))
    try:
        return [r["version_num"] for r in await conn.fetch("SELECT version_num FROM alembic_version")]
    finally:
        await conn.close()


def test_a_copy_is_at_the_head_of_the_migrations_and_the_template_takes_no_connections(infra: Infra) -> None:
    name = f"sb_infra_copy_{os.getpid()}"
    url = migrated_database(infra.postgres_url, name)
    try:
        head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
        assert asyncio.run(versions(url)) == [head]
        template = devstack_infra.with_database(infra.postgres_url, schema_template_name())
        with pytest.raises(asyncpg.PostgresError, match="not currently accepting connections"):
            asyncio.run(versions(template))
    finally:
        drop_database(infra.postgres_url, name)


def test_a_changed_or_added_migration_names_another_template(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "migrations"
    shutil.copytree(devstack_infra.MIGRATIONS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    today = schema_template_name()
    monkeypatch.setattr(devstack_infra, "MIGRATIONS", copy)
    assert schema_template_name() == today
    (copy / "versions" / "__pycache__").mkdir(exist_ok=True)
    (copy / "versions" / "__pycache__" / "x.pyc").write_bytes(b"cache")
    assert schema_template_name() == today  # caches are not migrations
    first = sorted((copy / "versions").glob("0001_*.py"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    changed = schema_template_name()
    assert changed != today
    (copy / "versions" / "0099_next.py").write_text("# a new migration\n", encoding="utf-8")
    assert schema_template_name() not in {today, changed}
