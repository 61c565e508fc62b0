"""Compose's dev ``ADMIN_TOKEN`` never guards an ingest published beyond this machine: with
``INGEST_BIND_ADDRESS`` other than a loopback address, ingest refuses it at start (its settings)."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from ingest.settings import DEV_ADMIN_TOKEN
from tests.deploy.deploy_helpers import compose_service
from tests.ingest.ingest_helpers import ingest_settings

pytestmark = pytest.mark.unit
DB, REDIS = "postgresql://x/y", "redis://x"
REAL_TOKEN = "c0ffee" * 6


def compose_default(name: str) -> str:
    """The default compose gives ingest's ``name`` (``${NAME:-default}``)."""
    value = str(compose_service("ingest")["environment"][name])
    match = re.fullmatch(r"\$\{" + name + r":-(.*)\}", value)
    assert match, f"{name}: {value}"
    return match.group(1)


def test_compose_tells_ingest_where_it_publishes_it_and_its_dev_token_is_the_one_refused() -> None:
    ports = compose_service("ingest")["ports"]
    assert ports == [
        f"${{INGEST_BIND_ADDRESS:-{compose_default('INGEST_BIND_ADDRESS')}}}:${{INGEST_PORT:-8000}}:8000"
    ]
    assert compose_default("ADMIN_TOKEN") == DEV_ADMIN_TOKEN


@pytest.mark.parametrize("address", ["0.0.0.0", "192.168.1.20", "::", "booth.local"])
def test_the_dev_token_is_refused_when_ingest_reaches_the_venue_network(address: str) -> None:
    with pytest.raises(ValidationError, match="ADMIN_TOKEN is compose's dev default"):
        ingest_settings(DB, REDIS, ADMIN_TOKEN=DEV_ADMIN_TOKEN, INGEST_BIND_ADDRESS=address)


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.1.1", "::1", "[::1]", "localhost", ""])
def test_the_dev_token_still_serves_this_machine_alone(address: str) -> None:
    settings = ingest_settings(DB, REDIS, ADMIN_TOKEN=DEV_ADMIN_TOKEN, INGEST_BIND_ADDRESS=address)
    assert settings.admin_token is not None


def test_a_real_token_serves_the_venue_network() -> None:
    settings = ingest_settings(DB, REDIS, ADMIN_TOKEN=REAL_TOKEN, INGEST_BIND_ADDRESS="0.0.0.0")
    assert settings.admin_token is not None and settings.published_address == "0.0.0.0"
