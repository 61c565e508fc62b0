"""Migration 0014 on a database a pre-events stack left: it becomes one default event (issue 23 item 5).
Its sessions and provider calls belong to the ``default`` event, a writer that names no event writes the
default one, and a downgrade keeps every session, call and lead."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from alembic import command

from devstack.infra import Infra, drop_database, recreate_database
from shared.migrate import alembic_config
from tests.shared.test_migration_0010 import sql


@pytest.fixture
def scratch(infra: Infra) -> Iterator[str]:
    name = f"sb_mig0014_{os.getpid()}"
    url = recreate_database(infra.postgres_url, name)
    yield url
    drop_database(infra.postgres_url, name)


def test_an_existing_stack_becomes_the_default_event(scratch: str) -> None:
    cfg = alembic_config(scratch)
    command.upgrade(cfg, "0013")
    old = uuid.uuid4()
    sql(scratch, "INSERT INTO sessions (id, station, token) VALUES ($1, 'kiosk', 'tok-old')", old)
    sql(
        scratch,
        "INSERT INTO api_usage (provider, model, kind, call_type, outcome, cost_usd)"
        " VALUES ('gemini', 'm', 'sheet', 'image', 'ok', 0.134)",
    )
    sql(scratch, "INSERT INTO leads (request_id, name, contact) VALUES ('r1', 'Ann', 'ann@example.com')")

    command.upgrade(cfg, "0014")
    events = sql(scratch, "SELECT id, name, time_zone, starts_at, ends_at FROM events")
    assert [tuple(r) for r in events] == [("default", "Sticker Booth", "UTC", None, None)]
    assert sql(scratch, "SELECT event_id FROM sessions WHERE id = $1", old)[0][0] == "default"
    assert sql(scratch, "SELECT event_id FROM api_usage")[0][0] == "default"
    assert sql(scratch, "SELECT event_id FROM leads")[0][0] is None  # a lead names its event, or none
    new = uuid.uuid4()
    sql(scratch, "INSERT INTO sessions (id, station, token) VALUES ($1, 'kiosk', 'tok-new')", new)
    assert sql(scratch, "SELECT event_id FROM sessions WHERE id = $1", new)[0][0] == "default"

    command.downgrade(cfg, "0013")
    assert len(sql(scratch, "SELECT id FROM sessions")) == 2
    assert len(sql(scratch, "SELECT id FROM api_usage")) == 1
    assert len(sql(scratch, "SELECT id FROM leads")) == 1
    tables = {r[0] for r in sql(scratch, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert not tables & {"events", "event_stations", "event_outfits"}
