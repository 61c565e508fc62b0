"""One-shot schema migration: ``python -m shared.migrate``.

Takes a Postgres advisory lock so that any number of ``migrate`` runs (a Job per rollout, every local start)
apply each Alembic revision once; services may start in any order (DESIGN.md §3). Exits 0 when the schema
is at head, 1 when Postgres cannot be reached within ``--wait`` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from importlib import resources

import asyncpg
from alembic import command
from alembic.config import Config
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from shared.db import plain_url

MIGRATION_LOCK_KEY = 0x5B_0001  # advisory lock id reserved for schema migration


class MigrateSettings(BaseSettings):
    """``DATABASE_URL`` only: migrate needs nothing else."""

    model_config = SettingsConfigDict(extra="ignore")
    database_url: str = Field(validation_alias="DATABASE_URL")


def alembic_config(database_url: str) -> Config:
    """Alembic config pointing at this package's migrations, with the URL passed as an attribute."""
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("shared") / "migrations"))
    cfg.attributes["database_url"] = database_url
    return cfg


async def connect_with_retry(url: str, wait_s: float) -> asyncpg.Connection:
    """Connect to Postgres, retrying every second for up to ``wait_s`` seconds.

    Raises:
        OSError | asyncpg.PostgresError: the last connection error once ``wait_s`` has passed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while True:
        try:
            return await asyncpg.connect(plain_url(url), timeout=5)
        except (TimeoutError, OSError, asyncpg.PostgresError):
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(1.0)


async def migrate(database_url: str, *, wait_s: float = 30.0) -> None:
    """Upgrade the schema to head under the migration advisory lock."""
    conn = await connect_with_retry(database_url, wait_s)
    try:
        await conn.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK_KEY)
        await asyncio.to_thread(command.upgrade, alembic_config(database_url), "head")
    finally:
        await conn.close()  # closing the session releases the advisory lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wait", type=float, default=30.0, help="seconds to wait for Postgres")
    args = parser.parse_args(argv)
    settings = MigrateSettings()
    try:
        asyncio.run(migrate(settings.database_url, wait_s=args.wait))
    except (OSError, asyncpg.PostgresError) as exc:
        print(f"MIGRATE_FAILED {type(exc).__name__}", file=sys.stderr)
        return 1
    print("MIGRATE_OK head")
    return 0


if __name__ == "__main__":
    sys.exit(main())
