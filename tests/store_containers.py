"""Postgres and Redis for the tests from a Docker engine, with ``testcontainers``, from compose's images.

``tests/conftest.py`` uses this between "``DATABASE_URL``/``REDIS_URL`` answer" and "start the embedded
servers": when a store does not answer and an engine is reachable, the store runs in a container from the
image ``compose.yaml`` names, so the tests meet the same server version as ``docker compose up``.
testcontainers' reaper (Ryuk) image cannot be pulled here, so it is off (``TESTCONTAINERS_RYUK_DISABLED``)
and :meth:`StoreContainers.stop` removes the containers instead.
"""

from __future__ import annotations

import contextlib
import gc
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

COMPOSE_FILE = Path(__file__).resolve().parent.parent / "compose.yaml"
#: compose.yaml's Postgres role and database (POSTGRES_USER / POSTGRES_DB); the password is the dev one.
POSTGRES_USER = "booth"
POSTGRES_PASSWORD = "booth-dev-only"


def compose_image(service: str, compose_file: Path = COMPOSE_FILE) -> str:
    """The ``image:`` compose.yaml gives ``service`` (``postgres`` or ``redis``)."""
    services = yaml.safe_load(compose_file.read_text(encoding="utf-8"))["services"]
    return str(services[service]["image"])


def engine_reachable() -> str | None:
    """``None`` when a Docker engine answers, else why not (for a skip reason or a log line)."""
    import docker

    # A failed probe leaves the SDK's socket to the garbage collector: collect it here, where its
    # ResourceWarning is expected, not in some later test (warnings are errors in this suite).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            client = docker.from_env(timeout=5)
            try:
                client.ping()
            finally:
                client.close()
        except Exception as error:
            return f"no Docker engine reachable ({type(error).__name__}: {error})"
        finally:
            gc.collect()
    return None


@dataclass
class StoreContainers:
    """The containers started for one test session; URLs are ``None`` for stores not started."""

    postgres_url: str | None = None
    redis_url: str | None = None
    _containers: list[Any] = field(default_factory=list)

    def stop(self) -> None:
        """Stop and remove every container (there is no reaper to do it)."""
        for container in reversed(self._containers):
            with contextlib.suppress(Exception):
                container.stop()
        self._containers.clear()


def start(*, postgres: bool, redis: bool) -> StoreContainers:
    """Start the stores asked for from compose's images; returns their URLs.

    Raises whatever testcontainers or the Docker SDK raise when a container cannot start (after removing
    the ones already started).
    """
    from testcontainers.community.postgres import PostgresContainer
    from testcontainers.community.redis import RedisContainer

    started = StoreContainers()
    try:
        if postgres:
            pg = PostgresContainer(
                compose_image("postgres"),
                username=POSTGRES_USER,
                password=POSTGRES_PASSWORD,
                dbname="postgres",
                driver=None,
            )
            started._containers.append(pg)
            pg.start()
            started.postgres_url = pg.get_connection_url()
        if redis:
            rd = RedisContainer(compose_image("redis"))
            started._containers.append(rd)
            rd.start()
            host, port = rd.get_container_host_ip(), rd.get_exposed_port(6379)
            started.redis_url = f"redis://{host}:{port}/0"
    except BaseException:
        started.stop()
        raise
    return started
