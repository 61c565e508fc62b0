"""Migration 0010 on a database the pre-0010 code left: the rows an old gateway failed with a 429 that the
old sweeps would still have resent are put back ``pending`` as their next attempt (nothing else resends
them now), and a downgrade leaves a ``cancelled`` row as a 429 that the old code neither counts nor
resends."""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator

import asyncpg
import pytest
from alembic import command

from devstack.infra import Infra, drop_database, recreate_database
from shared.db import plain_url
from shared.migrate import alembic_config

FLOOD = json.dumps({"error_code": 429, "description": "Too Many Requests: retry after 30", "retry_after": 30})
BROKEN = json.dumps({"error_code": 500, "description": "Internal Server Error"})
SET = "0123456789abcdef"


@pytest.fixture
def scratch(infra: Infra) -> Iterator[str]:
    name = f"sb_mig0010_{os.getpid()}"
    url = recreate_database(infra.postgres_url, name)
    yield url
    drop_database(infra.postgres_url, name)


def sql(url: str, statement: str, *args: object) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(plain_url(url))
        try:
            return await conn.fetch(statement, *args)
        finally:
            await conn.close()

    return asyncio.run(run())


def job(url: str, status: str) -> uuid.UUID:
    session, job_id = uuid.uuid4(), uuid.uuid4()
    sql(url, "INSERT INTO sessions (id, station, token) VALUES ($1, 's', $2)", session, session.hex)
    sql(
        url,
        "INSERT INTO jobs (id, session_id, capture_id, outfit_id, status) VALUES ($1, $2, 'c', 'chef', $3)",
        job_id,
        session,
        status,
    )
    return job_id


def failed(url: str, command_id: str, error: str = FLOOD, age: str = "1 minute") -> None:
    sql(
        url,
        "INSERT INTO tg_commands"
        " (command_id, method, params, status, error, reply_to, created_at, updated_at)"
        " VALUES ($1, 'send_message', '{}', 'failed', CAST($2 AS jsonb), 'delivery',"
        " now() - CAST($3::text AS interval), now() - CAST($3::text AS interval))",
        command_id,
        error,
        age,
    )


def test_the_429_failed_rows_the_old_sweeps_would_resend_are_pended_again(scratch: str) -> None:
    cfg = alembic_config(scratch)
    command.upgrade(cfg, "0009")
    rendered, delivering, delivered = (
        job(scratch, "rendered"),
        job(scratch, "delivering"),
        job(scratch, "delivered"),
    )
    resent = f"job:{rendered}:failure_text:1700000001"
    repended = [
        f"job:{rendered}:create_set:2",  # the old 2nd attempt: the latest
        f"job:{delivering}:link",
        f"job:{delivering}:poll:3",
        f"job:{rendered}:failure_text:1700000000",
        resent + ":again",  # the resend itself got a 429
        f"erase_set:{SET}",
        "digest:2026-12-09",
    ]
    for command_id in repended:
        failed(scratch, command_id)
    kept = {
        f"job:{rendered}:create_set": FLOOD,  # followed by create_set:2
        resent: FLOOD,  # followed by its :again
        f"job:{delivering}:poll:2": FLOOD,  # poll 3 came after
        f"job:{delivered}:unavailable:1700000000": FLOOD,  # the job is past it
        f"job:{delivered}:link": FLOOD,  # delivered: the link went
        f"job:{rendered}:still_working:1700000000": BROKEN,  # not a flood wait
        "digest:2026-12-01": FLOOD,  # older than a day
    }
    for command_id, error in kept.items():
        failed(scratch, command_id, error, age="2 days" if command_id == "digest:2026-12-01" else "1 minute")
    failed(scratch, f"erase_set:{'f' * 16}", age="8 days")

    command.upgrade(cfg, "head")

    rows = {
        r["command_id"]: r
        for r in sql(
            scratch,
            "SELECT command_id, status, attempt, error, dispatched_at,"
            " not_before - updated_at + interval '1 minute' AS wait FROM tg_commands",
        )
    }
    for command_id in repended:
        row = rows[command_id]
        assert (row["status"], row["attempt"], row["error"], row["dispatched_at"]) == (
            "pending",
            2,
            None,
            None,
        )
        assert 25 <= row["wait"].total_seconds() <= 35, command_id  # updated_at (1 min ago) + retry_after
    for command_id in [*kept, f"erase_set:{'f' * 16}"]:
        assert (rows[command_id]["status"], rows[command_id]["attempt"]) == ("failed", 1), command_id


def test_a_downgrade_leaves_a_cancelled_row_as_a_429_the_old_code_skips(scratch: str) -> None:
    cfg = alembic_config(scratch)
    command.upgrade(cfg, "head")
    sql(
        scratch,
        "INSERT INTO tg_commands (command_id, method, params, status, reply_to)"
        " VALUES ('job:x:link', 'send_message', '{}', 'cancelled', 'delivery')",
    )
    command.downgrade(cfg, "0009")
    (row,) = sql(scratch, "SELECT status, error FROM tg_commands")
    error = json.loads(row["error"])
    assert row["status"] == "failed" and error["error_code"] == 429
    assert error["retry_after"] > 10 * 365 * 86400  # never due: the old sweeps never resend it
