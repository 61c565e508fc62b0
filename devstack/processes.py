"""The stack's processes: the Telegram simulator and the five services, each a separate OS process.

The services exchange work only through Redis Streams and Postgres, exactly as in containers; this module
only starts, watches and stops them (and can SIGKILL one, for the crash tests). Every exit is recorded in
``Stack.exits``: ``caused`` when this module killed or stopped the process, not when it ended by itself
(found by :meth:`Stack.restart_exited`, the restart policy of a container runtime).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import redis as redis_lib

from devstack.infra import free_port

REPO = Path(__file__).resolve().parent.parent
SERVICES = ("ingest", "worker", "delivery", "leads", "telegram-gateway")
SIMULATORS = ("telegram-sim", "ai-sim")
#: The gateway's hot standby (issue 22): a second replica of the same service, started with
#: ``StackConfig.gateway_replicas = 2`` (``python -m devstack up --gateways 2``) or by a test.
GATEWAY_STANDBY = "telegram-gateway-2"
GATEWAYS = ("telegram-gateway", GATEWAY_STANDBY)
MODULES = {
    "telegram-sim": "simulators.telegram",
    "ai-sim": "simulators.ai",
    "ingest": "ingest",
    "worker": "worker",
    "delivery": "delivery",
    "leads": "leads",
    "telegram-gateway": "telegram_gateway",
    GATEWAY_STANDBY: "telegram_gateway",
}
DEV_BOT_TOKEN = "123456789:SIMULATOR-dev-token-not-a-secret-000000"
#: The webhook's ``secret_token`` in the dev stack (webhook mode), known only to the two simulated ends.
DEV_WEBHOOK_SECRET = "SIMULATOR-dev-webhook-secret-not-a-secret"
#: The public webhook URL the dev gateway registers; the simulator posts its path to the gateway's port
#: (``TGSIM_WEBHOOK_TARGET``, standing in for the TLS ingress).
DEV_WEBHOOK_URL = "https://telegram-gateway.devstack.invalid/telegram/webhook"
#: The worker's AI keys (``worker.settings``): with none set and no AI simulator, the chain is ``local``.
PROVIDER_KEYS = ("GEMINI_API_KEY", "OPENAI_API_KEY")


@dataclass(frozen=True)
class ProcessExit:
    """A process that ended: ``returncode`` (negative: the signal), ``caused``: we killed or stopped it."""

    service: str
    returncode: int | None
    caused: bool
    at: float = field(default_factory=time.time)


@dataclass
class StackConfig:
    """Where the stack's stores are and how its processes are configured.

    ``extra_env`` overrides any service setting (e.g. ``STREAM_LEASE_SEC`` in tests).
    ``gateway_replicas``: 2 starts the gateway's hot standby (:data:`GATEWAY_STANDBY`) too.
    ``extra_env`` overrides any service setting (e.g. ``STREAM_LEASE_SEC`` in tests). ``updates`` is the
    gateway's ``TELEGRAM_UPDATES`` (``polling``, or ``webhook``: the simulator POSTs updates to the
    gateway's ``webhook_port``), by default the shell's ``TELEGRAM_UPDATES`` or ``polling``.
    """

    database_url: str
    redis_url: str
    log_dir: Path
    bot_username: str = "stickerbooth_bot"
    bot_token: str = DEV_BOT_TOKEN
    leads_chat_id: int = -1001234567890
    admin_user_ids: str = "1000"
    extra_env: dict[str, str] = field(default_factory=dict)
    ingest_port: int = field(default_factory=free_port)
    sim_port: int = field(default_factory=free_port)
    ai_sim: bool = False  # run the AI provider simulator and point the worker's Gemini/OpenAI SDKs at it
    ai_sim_port: int = field(default_factory=free_port)
    gateway_replicas: int = 1
    updates: str = field(default_factory=lambda: os.environ.get("TELEGRAM_UPDATES") or "polling")
    webhook_port: int = field(default_factory=free_port)
    ops_ports: dict[str, int] = field(
        default_factory=lambda: {s: free_port() for s in (*SERVICES, GATEWAY_STANDBY) if s != "ingest"}
    )


class Stack:
    """Starts and stops the processes of one local stack."""

    def __init__(self, config: StackConfig) -> None:
        self.config = config
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.exits: list[ProcessExit] = []
        config.log_dir.mkdir(parents=True, exist_ok=True)

    @functools.cached_property
    def http(self) -> httpx.Client:
        """One HTTP client (10 s timeout) for calls to this stack's processes, from any thread (httpx 0.28's
        ``Client``: "It can be shared between threads"), closed by :meth:`stop_all`. Polls use it rather
        than ``httpx.get``: each new ``httpx.Client`` builds an SSL context (~30 ms of CPU, measured
        2026-12-03), so a poll every 0.2 s cost 15 % of a core."""
        return httpx.Client(timeout=10)

    @functools.cached_property
    def sim_http(self) -> httpx.Client:
        """As :attr:`http`, with the Telegram simulator's URL as its base (``journey.chat_messages``)."""
        return httpx.Client(base_url=self.sim_url, timeout=10)

    @property
    def ingest_url(self) -> str:
        return f"http://127.0.0.1:{self.config.ingest_port}"

    @property
    def ai_sim_url(self) -> str:
        return f"http://127.0.0.1:{self.config.ai_sim_port}"

    @property
    def sim_url(self) -> str:
        return f"http://127.0.0.1:{self.config.sim_port}"

    def env(self, name: str) -> dict[str, str]:
        c = self.config
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(REPO), *(str(REPO / "services" / s) for s in SERVICES), os.environ.get("PYTHONPATH", "")]
            ),
            "DATABASE_URL": c.database_url,
            "REDIS_URL": c.redis_url,
            "BOT_USERNAME": c.bot_username,
            "LEADS_CHAT_ID": str(c.leads_chat_id),
            "ADMIN_USER_IDS": c.admin_user_ids,
            "LOG_FORMAT": "json",
            "CONSUMER_NAME": f"{name}-{int(time.time() * 1000) % 10_000_000}",
        }
        if name in GATEWAYS:
            env["TELEGRAM_BOT_TOKEN"] = c.bot_token
            env["TELEGRAM_API_BASE_URL"] = self.sim_url
            env["POLL_TIMEOUT_SEC"] = "2"
            env["TELEGRAM_UPDATES"] = c.updates
            if c.updates == "webhook":
                env["TELEGRAM_WEBHOOK_URL"] = DEV_WEBHOOK_URL
                env["TELEGRAM_WEBHOOK_SECRET"] = DEV_WEBHOOK_SECRET
                env["WEBHOOK_HOST"] = "127.0.0.1"
                env["WEBHOOK_PORT"] = str(c.webhook_port)
        if name == "telegram-sim":
            env["TGSIM_WEBHOOK_TARGET"] = f"http://127.0.0.1:{c.webhook_port}"
        given = {key.upper(): value for key, value in os.environ.items()}  # as the services read it
        chosen = any(key in given for key in ("PRIMARY_AI_PROVIDER", "FALLBACK_AI_PROVIDER"))
        if not c.ai_sim and not chosen and not any(given.get(key) for key in PROVIDER_KEYS):
            # No key and no chain chosen: the worker would skip gemini and openai and draw with `local`.
            # Say so to every service, so the kiosk's consent screen names who really gets the photo.
            env["PRIMARY_AI_PROVIDER"], env["FALLBACK_AI_PROVIDER"] = "local", ""
        if name == "worker" and c.ai_sim:
            env["GEMINI_API_KEY"] = "sim-only-gemini-key"
            env["AI_BASE_URL_GEMINI"] = self.ai_sim_url
            env["OPENAI_API_KEY"] = "sim-only-openai-key"
            env["AI_BASE_URL_OPENAI"] = f"{self.ai_sim_url}/v1"
        if name in ("ingest", "delivery"):  # the download pages, on this machine (shared.downloads)
            env["PUBLIC_BASE_URL"] = self.ingest_url
        if name == "ingest":
            env["PORT"] = str(c.ingest_port)
            env["HOST"] = "127.0.0.1"
        if name in c.ops_ports:
            env["OPS_PORT"] = str(c.ops_ports[name])
        env.update(c.extra_env)
        return env

    def command(self, name: str) -> list[str]:
        cmd = [sys.executable, "-m", MODULES[name]]
        if name == "telegram-sim":
            c = self.config
            cmd += ["--host", "127.0.0.1", "--port", str(c.sim_port), "--token", c.bot_token]
            cmd += ["--bot-username", c.bot_username]
        if name == "ai-sim":
            cmd += ["--host", "127.0.0.1", "--port", str(self.config.ai_sim_port)]
        return cmd

    def migrate(self) -> None:
        """Run ``python -m shared.migrate`` (raises CalledProcessError on failure)."""
        subprocess.run(
            [sys.executable, "-m", "shared.migrate"],
            env=self.env("migrate"),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self, name: str) -> None:
        log = open(self.config.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the child
        self.procs[name] = subprocess.Popen(
            self.command(name), env=self.env(name), stdout=log, stderr=subprocess.STDOUT, cwd=REPO
        )
        log.close()

    def start_all(self) -> None:
        self.start("telegram-sim")
        self.wait_http(f"{self.sim_url}/healthz", "telegram-sim")
        if self.config.ai_sim:
            self.start("ai-sim")
            self.wait_http(f"{self.ai_sim_url}/healthz", "ai-sim")
        self.seed_simulator()
        for name in SERVICES:
            self.start(name)
        if self.config.gateway_replicas > 1:
            self.start(GATEWAY_STANDBY)
        self.wait_healthy()

    def seed_simulator(self) -> None:
        """Create the staff group the lead cards go to: an admin posts in it, so the bot is a member; and
        every admin starts the bot, as real admins do before an event (the preflight checks it)."""
        c = self.config
        admins = [int(a) for a in c.admin_user_ids.replace(" ", "").split(",") if a]
        for admin in admins:
            self.http.post(
                f"{self.sim_url}/sim/users/{admin}/messages", json={"text": "/start"}
            ).raise_for_status()
        admin = admins[0]
        self.http.post(
            f"{self.sim_url}/sim/users/{admin}/messages",
            json={
                "chat_id": c.leads_chat_id,
                "chat_title": "Sticker Booth leads",
                "text": "Lead cards go here",
            },
        ).raise_for_status()

    def wait_healthy(self, timeout_s: float = 60.0) -> None:
        """Wait until every running service answers its health check.

        Raises:
            RuntimeError: a process exited or did not get healthy in ``timeout_s``.
        """
        for name in self.procs:
            if name in SIMULATORS:
                continue
            url = (
                f"{self.ingest_url}/healthz"
                if name == "ingest"
                else f"http://127.0.0.1:{self.config.ops_ports[name]}/healthz"
            )
            self.wait_http(url, name, timeout_s)

    def wait_http(self, url: str, name: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {proc.returncode}; see {self.config.log_dir / name}.log"
                )
            try:
                if self.http.get(url, timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{name} not healthy after {timeout_s:.0f}s; see {self.config.log_dir / name}.log"
                )
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` (no cleanup at all, like an OOM kill)."""
        proc = self.procs.pop(name)
        if proc.poll() is not None:  # it ended by itself before we could kill it
            self.exits.append(ProcessExit(name, proc.returncode, caused=False))
            return
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        self.exits.append(ProcessExit(name, proc.returncode, caused=True))

    def restart_exited(self, *, keep_down: frozenset[str] = frozenset()) -> list[str]:
        """Start again every process that exited by itself (recorded as not ``caused``), like a container
        runtime's restart policy; returns their names. ``keep_down``: names recorded but not restarted."""
        restarted = []
        for name, proc in list(self.procs.items()):
            if proc.poll() is not None:
                self.procs.pop(name)
                self.exits.append(ProcessExit(name, proc.returncode, caused=False))
                if name not in keep_down:
                    self.start(name)
                    restarted.append(name)
        return restarted

    def stop(self, name: str, timeout_s: float = 30.0) -> int:
        """SIGTERM ``name`` and wait for its graceful exit (SIGKILL after ``timeout_s``); returns its code."""
        return self.stop_together([name], timeout_s)[name]

    def stop_together(self, names: list[str], timeout_s: float = 30.0) -> dict[str, int]:
        """SIGTERM every one of ``names`` at once, then wait for their graceful exits (SIGKILL to those still
        running ``timeout_s`` after the signal); returns each one's exit code. The exits are recorded in the
        order of ``names``; one that had ended by itself is recorded as not ``caused``."""
        procs = {name: self.procs.pop(name) for name in names}
        ended_before = {name for name, proc in procs.items() if proc.poll() is not None}
        for name, proc in procs.items():
            if name not in ended_before:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for name, proc in procs.items():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            self.exits.append(ProcessExit(name, proc.returncode, caused=name not in ended_before))
        return {name: int(proc.returncode) for name, proc in procs.items()}

    def stop_all(self) -> None:
        """Stop the services together (:meth:`stop_together`, newest first in the exit records), then the
        simulators together, so no service meets a simulator that is already gone."""
        self.stop_together([n for n in reversed(list(self.procs)) if n not in SIMULATORS])
        self.stop_together([n for n in SIMULATORS if n in self.procs])
        for client in ("http", "sim_http"):
            if client in self.__dict__:
                self.__dict__.pop(client).close()


#: Short leases, grace periods and polls for test stacks: faults heal in seconds instead of minutes.
FAST_TIMINGS = {
    "STREAM_LEASE_SEC": "5",
    "RECONCILE_GRACE_SEC": "1",
    "RECONCILE_INTERVAL_SEC": "1",
    "HEARTBEAT_SEC": "1",
    "HEARTBEAT_TIMEOUT_SEC": "4",
    "RETRY_DELAY_SEC": "1",
    "PACK_POLL_FAST_SEC": "0.5",
    "SWEEP_INTERVAL_SEC": "0.5",
    "STREAM_BLOCK_MS": "500",
}


@contextlib.contextmanager
def running_stack(
    *,
    postgres_url: str,
    database: str,
    redis_url: str,
    extra_env: dict[str, str] | None = None,
    updates: str = "polling",
) -> Iterator[Stack]:
    """A whole stack on a fresh ``database`` at the schema's head (on the server of ``postgres_url``; a copy
    of the migrated template, :func:`devstack.infra.migrated_database`) and an empty Redis database, the
    gateway taking updates by ``updates`` (``polling`` or ``webhook``); stopped and its database dropped
    afterwards. Logs go to ``var/logs/<database>``."""
    from devstack.infra import drop_database, migrated_database

    db_url = migrated_database(postgres_url, database)
    redis_lib.Redis.from_url(redis_url).flushdb()
    stack = Stack(
        StackConfig(
            database_url=db_url,
            redis_url=redis_url,
            log_dir=REPO / "var" / "logs" / database,
            extra_env={**FAST_TIMINGS, **(extra_env or {})},
            updates=updates,
        )
    )
    stack.start_all()
    try:
        yield stack
    finally:
        stack.stop_all()
        drop_database(postgres_url, database)
