"""``make compose-check``: the product the way users run it — ``docker compose up`` — checked through its
containers only.

1. checks the Compose version (``MIN_COMPOSE``), builds the images (BuildKit cache), ``up --wait`` with
   the ``prometheus`` profile on spare host ports, in a project of its own (``sb-compose-check``);
2. plays guest journeys through ingest and the Telegram simulator (:func:`devstack.chaos.traffic.play_guest`)
   and a few leads (``submit_lead``); at the end every guest and lead is judged by the chaos check's ledger
   (:func:`devstack.chaos.ledger.judge`: one set, one link or the designed failure text, one card per
   lead, nothing lost or sent twice, no unexpected exit) from what compose holds: the jobs (``psql`` in
   the postgres container), the simulator's chats and sets (its published port), the faults this check
   injected and every container exit (Docker's ``die`` events) this check did not cause;
3. ``--scale worker=3`` and a burst of jobs: every replica must own a job (``jobs.owner``, sampled from
   Postgres through ``docker exec``) and export worker metrics scraped by Prometheus;
4. faults with the Docker SDK while journeys run: SIGKILL a worker that owns a job, SIGKILL the leading
   gateway (of two replicas; the lease holder's hostname names it) and measure the failover (issue 22): a
   guest writes ``/start`` at the kill, and the check reports the seconds until the standby holds the
   lease and until the guest's answer, a problem past ``FAILOVER_LIMIT_S`` (10 s); Redis restarted with
   its data removed, Postgres restarted; then the restarts
   that ``restart: unless-stopped`` must make (Docker does not restart a container after ``docker kill``,
   which counts as a manual stop, so the crash is a SIGKILL of the container's main process from the host,
   the way the kernel's OOM killer ends it);
5. queries Prometheus for every Grafana dashboard expression and every alert rule (the whole expression
   must parse; each dashboard expression and every selector of every rule must return series);
6. ``docker compose down -v``, whatever happened.

``--updates webhook`` runs it all with ``TELEGRAM_UPDATES=webhook`` (issue 22): the simulator POSTs every
update to the gateways' port 8443 (both replicas take them; Docker's DNS spreads them), and the check
also asks ``getWebhookInfo`` that the leader registered the webhook, and POSTs a forged update (no secret)
from inside the simulator's container, which must be refused 401 and answered by nobody.
``make compose-check`` runs the check once per mode.

Prints a summary and exits 0 when everything held, 1 otherwise. Needs a Docker engine with Compose v2
(``../shared/tools/docker-engine start`` and ``base`` here) and the host ports it picks free.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import httpx
import yaml
from docker.models.containers import Container

from devstack.chaos import faults as F
from devstack.chaos.ledger import (
    DELIVERED,
    DESIGNED,
    LET_DOWN,
    Guest,
    JobRow,
    LeadSubmission,
    Ledger,
    Observed,
    ProcessExit,
    judge,
)
from devstack.chaos.run import simulator_view
from devstack.chaos.traffic import GuestPlan, photos, play_guest, submit_lead
from devstack.infra import free_port
from devstack.journey import wait_until

ROOT = Path(__file__).resolve().parent.parent
MIN_COMPOSE = (2, 20)
PROJECT = "sb-compose-check"
LEADS_CHAT_ID = -1001000000001  # compose.yaml's default LEADS_CHAT_ID
OUTFITS = ("astronaut", "pirate", "chef", "superhero")
#: Grafana's built-in variables, replaced by what a dashboard over the last hour would send.
GRAFANA_VARIABLES = {"$__range": "1h", "$__rate_interval": "1m", "$__interval": "15s"}
FINAL = ("delivered", "failed")
#: The fault kinds of :data:`devstack.chaos.faults.KINDS` this check injects (their expected outcomes).
KILL_WORKER, KILL_GATEWAY = "kill:worker", "kill:telegram-gateway"
#: The longest a guest may wait for the gateway's standby after the leader is killed (issue 22).
FAILOVER_LIMIT_S = 10.0
#: A guest outside the ledger who writes ``/start`` the moment the leading gateway is killed: the bot's
#: answer in their chat is "the next guest's answer" of the failover measure.
FAILOVER_PROBE_USER = 899_999
REDIS_RESTART, POSTGRES_RESTART = "redis_restart", "postgres_restart"


class CheckFailed(RuntimeError):
    """A step of the check did not hold (the message says which)."""


@dataclass
class Summary:
    """What the check did and saw; ``problems`` empty means it passed."""

    compose_version: str = ""
    images: list[str] = field(default_factory=list)
    journeys: int = 0
    leads: int = 0
    #: ``jobs.status`` counts at the end; the judged guests, leads and exits (``None``: not judged).
    job_statuses: Counter[str] = field(default_factory=Counter)
    ledger: Ledger | None = None
    exits_seen: int = 0
    exits_caused: int = 0
    replicas_owning_jobs: int = 0
    replicas_scraped: int = 0
    #: The gateway's failover (issue 22): its replicas, and seconds from SIGKILLing the leader to the
    #: standby holding the lease, and to a guest's answer (``None``: not measured).
    gateway_replicas: int = 0
    #: ``TELEGRAM_UPDATES`` of this run; in webhook mode, what ``getWebhookInfo`` and a forged POST said.
    updates: str = "polling"
    webhook: str = "-"
    takeover_s: float | None = None
    kill_to_answer_s: float | None = None
    faults: list[str] = field(default_factory=list)
    restarts: dict[str, str] = field(default_factory=dict)
    restart_counts: dict[str, int] = field(default_factory=dict)
    dashboard_checked: int = 0
    rules_checked: int = 0
    selectors_checked: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def text(self) -> str:
        statuses = " ".join(f"{k}={v}" for k, v in sorted(self.job_statuses.items())) or "-"
        ledger = self.ledger
        verdicts = Counter(v.outcome for v in ledger.verdicts) if ledger else Counter()
        guests = (
            f"delivered={verdicts[DELIVERED]} failed as designed={verdicts[DESIGNED]} "
            f"let down={verdicts[LET_DOWN]}"
            if ledger
            else "not judged (the check stopped before)"
        )
        lost, duplicated, exits = (
            (ledger.lost, ledger.duplicated, ledger.unexpected_exits) if ledger else ([], [], [])
        )
        injected = ledger.injected if ledger else Counter()
        kinds = [
            f"  {kind:<22} injected {injected[kind] if kind != '-' else '-'}: "
            f"delivered={c[DELIVERED]} designed={c[DESIGNED]} let down={c[LET_DOWN]}"
            for kind, c in sorted(ledger.per_kind().items() if ledger else [])
        ]
        lines = [
            f"compose version          {self.compose_version} (needs >= {MIN_COMPOSE[0]}.{MIN_COMPOSE[1]})",
            f"images                   {' '.join(self.images)}",
            f"journeys                 {self.journeys}",
            f"leads                    {self.leads}",
            f"guest outcomes           {guests}",
            f"job statuses             {statuses}",
            f"lost / duplicated        {len(lost)} / {len(duplicated)}",
            f"unexpected exits         {len(exits)} (container exits seen: {self.exits_seen}, "
            f"{self.exits_caused} of them caused by the check)",
            *kinds,
            "time to link p50/p95 (s) "
            + (f"{ledger.link_pct(50):.1f} / {ledger.link_pct(95):.1f}" if ledger else "-"),
            f"worker replicas          3 scaled, {self.replicas_owning_jobs} owned jobs of one burst, "
            f"{self.replicas_scraped} scraped with job metrics",
            f"gateway failover         {self.gateway_replicas} replicas; leader SIGKILLed: lease taken over "
            f"after {_seconds(self.takeover_s)}, next guest answered {_seconds(self.kill_to_answer_s)} "
            f"after the kill (limit {FAILOVER_LIMIT_S:.0f} s)",
            f"updates                  {self.updates}; webhook: {self.webhook}",
            f"faults                   {'; '.join(self.faults) or '-'}",
            *(f"restart                  {name}: {what}" for name, what in sorted(self.restarts.items())),
            "restart counts           "
            + " ".join(f"{name}={n}" for name, n in sorted(self.restart_counts.items())),
            f"dashboard expressions    {self.dashboard_checked} queried, all with series"
            if not any(p.startswith("dashboard") for p in self.problems)
            else f"dashboard expressions    {self.dashboard_checked} queried, some without series",
            f"alert rules              {self.rules_checked} parsed, "
            f"{self.selectors_checked} selectors queried, "
            + (
                "some without series"
                if any(p.startswith("rule") for p in self.problems)
                else "all with series"
            ),
            f"run time (s)             {self.seconds:.0f}",
            *(f"LET DOWN user {v.user_id}: {v.reason}" for v in (ledger.let_down if ledger else [])),
            *(f"LOST {x}" for x in lost),
            *(f"DUPLICATED {x}" for x in duplicated),
            *(f"UNEXPECTED EXIT {x}" for x in exits),
            *(f"PROBLEM {x}" for x in self.problems),
            f"compose-check: updates={self.updates} journeys={self.journeys} leads={self.leads} "
            f"faults={len(self.faults)} "
            f"failover_s={_seconds(self.kill_to_answer_s, unit='')} "
            f"let_down={verdicts[LET_DOWN]} lost={len(lost)} duplicated={len(duplicated)} "
            f"unexpected_exits={len(exits)} problems={len(self.problems)} "
            f"-> {'PASS' if self.passed else 'FAIL'}",
        ]
        return "\n".join(lines)

    @property
    def passed(self) -> bool:
        """Judged, the ledger ``ok`` (nobody let down, nothing lost or duplicated, no unexpected exit) and
        no problem in the other steps."""
        return self.ledger is not None and self.ledger.ok and not self.problems


def _seconds(value: float | None, unit: str = " s") -> str:
    return "-" if value is None else f"{value:.1f}{unit}"


def parse_version(text: str) -> tuple[int, int]:
    """``2.26.1-4`` or ``v2.20.0`` as ``(major, minor)``; raises ``CheckFailed`` when unreadable."""
    match = re.search(r"(\d+)\.(\d+)", text)
    if match is None:
        raise CheckFailed(f"cannot read a Compose version from {text!r}")
    return int(match[1]), int(match[2])


# --- PromQL -----------------------------------------------------------------------------------------

_FUNCTION_OR_KEYWORD = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"}
)


def selectors(expr: str) -> list[str]:
    """The vector selectors of a PromQL expression (``metric{matchers}``), without range or offset.

    Strings, ``by (...)``-style label lists and function names are skipped; Grafana variables are replaced.
    """
    expr = grafana_free(expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    found: list[str] = []
    pattern = r'[A-Za-z_:][A-Za-z0-9_:]*(\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\})?|"(?:[^"\\]|\\.)*"|\[[^\]]*\]'
    for match in re.finditer(pattern, expr):
        token = match.group()
        if token.startswith(('"', "[")):
            continue
        name = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", token)
        assert name is not None
        if name.group() in _FUNCTION_OR_KEYWORD or expr[match.end() :].lstrip().startswith("("):
            continue
        if re.fullmatch(r"\d+[smhdwy]?", name.group()):
            continue
        found.append(token)
    return list(dict.fromkeys(found))


def grafana_free(expr: str) -> str:
    """``expr`` with Grafana's built-in variables replaced (``GRAFANA_VARIABLES``)."""
    for variable, value in sorted(GRAFANA_VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(variable, value)
    return expr


def dashboard_exprs(root: Path = ROOT) -> list[str]:
    """Every target expression of every dashboard under ``monitoring/grafana/dashboards``."""
    exprs: list[str] = []
    for path in sorted((root / "monitoring" / "grafana" / "dashboards").glob("*.json")):
        for panel in json.loads(path.read_text(encoding="utf-8"))["panels"]:
            exprs += [t["expr"] for t in panel.get("targets", []) if t.get("expr")]
    return exprs


def rule_exprs(root: Path = ROOT) -> dict[str, str]:
    """``{alert name: expr}`` of ``monitoring/alerts.yml``."""
    groups = yaml.safe_load((root / "monitoring" / "alerts.yml").read_text(encoding="utf-8"))["groups"]
    return {r.get("alert") or r["record"]: r["expr"] for g in groups for r in g["rules"]}


def query(prometheus: httpx.Client, expr: str) -> tuple[bool, int, str]:
    """``(parsed, series returned, error text)`` of an instant query."""
    response = prometheus.get("/api/v1/query", params={"query": expr})
    body = response.json()
    if body.get("status") != "success":
        return False, 0, str(body.get("error"))
    return True, len(body["data"]["result"]), ""


def check_prometheus(prometheus: httpx.Client, summary: Summary, root: Path = ROOT) -> None:
    """Record every dashboard expression or rule selector without series (or not parsing) as a problem."""
    for expr in dashboard_exprs(root):
        summary.dashboard_checked += 1
        parsed, series, error = query(prometheus, grafana_free(expr))
        if not parsed or series == 0:
            summary.problems.append(f"dashboard: {expr!r} -> {error or 'no series'}")
    for name, expr in rule_exprs(root).items():
        summary.rules_checked += 1
        parsed, _series, error = query(prometheus, expr)
        if not parsed:
            summary.problems.append(f"rule {name}: does not parse: {error}")
            continue
        for selector in selectors(expr):
            summary.selectors_checked += 1
            if query(prometheus, selector)[1] == 0:
                summary.problems.append(f"rule {name}: {selector} has no series")


# --- the stack --------------------------------------------------------------------------------------


#: Compose services that run once and end by design (with exit code 0).
ONE_SHOT = frozenset({"migrate"})


class ExitWatcher:
    """Docker ``die`` events of one compose project, read live from the moment it is made.

    Read live because the daemon keeps only its last few hundred events and every health check adds
    some: looked up after a 5-minute check, the SIGKILLs of its first minutes were gone already (the
    check then saw 0 of the 4 exits it caused).
    """

    def __init__(self, client: docker.DockerClient, project: str) -> None:
        self._stream = client.events(
            filters={
                "type": "container",
                "event": "die",
                "label": [f"com.docker.compose.project={project}"],
            },
            decode=True,
        )
        self._events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, name="docker-events", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # the stream ends with an error when it is closed
            for event in self._stream:
                self._events.append(event)

    def close(self, settle_s: float = 1.0) -> list[dict[str, Any]]:
        """Stop reading (after ``settle_s`` seconds, for events still on their way); the events seen."""
        time.sleep(settle_s)
        self._stream.close()
        self._reader.join(timeout=5)
        return list(self._events)


class ComposeStack:
    """``docker compose`` (CLI) for up/scale/down and the Docker SDK for looking inside and for faults."""

    def __init__(self, root: Path, project: str, env: dict[str, str]) -> None:
        self.root = root
        self.project = project
        self.env = env
        self.docker = docker.from_env()
        self.ingest_url = f"http://127.0.0.1:{env['INGEST_PORT']}"
        self.sim_url = f"http://127.0.0.1:{env['TELEGRAM_SIM_PORT']}"
        self.prometheus_url = f"http://127.0.0.1:{env['PROMETHEUS_PORT']}"

    def compose(self, *args: str, timeout_s: float = 900, check: bool = True) -> str:
        """Run ``docker compose`` for this project; returns its output. Raises ``CheckFailed``."""
        command = ["docker", "compose", "-p", self.project, "--profile", "prometheus", *args]
        print("+", " ".join(command), flush=True)
        done = subprocess.run(
            command,
            cwd=self.root,
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if check and done.returncode != 0:
            raise CheckFailed(
                f"docker compose {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}"
            )
        return done.stdout + done.stderr

    def compose_stdout(self, *args: str) -> str:
        """The standard output of a quick ``docker compose`` command. Raises ``CheckFailed``."""
        done = subprocess.run(
            ["docker", "compose", "-p", self.project, "--profile", "prometheus", *args],
            cwd=self.root,
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise CheckFailed(f"docker compose {' '.join(args)}: {done.stderr[-1000:]}")
        return done.stdout

    def containers(self, service: str) -> list[Container]:
        """The running and stopped containers of one service, by compose's labels."""
        labels = [f"com.docker.compose.project={self.project}", f"com.docker.compose.service={service}"]
        return list(self.docker.containers.list(all=True, filters={"label": labels}))

    def one(self, service: str) -> Container:
        found = self.containers(service)
        if len(found) != 1:
            raise CheckFailed(f"expected one {service} container, found {len(found)}")
        return found[0]

    def sql(self, statement: str) -> list[list[str]]:
        """Rows of a query run by ``psql`` inside the postgres container (tab-separated, unaligned)."""
        code, output = self.exec(
            self.one("postgres"), ["psql", "-U", "booth", "-d", "booth", "-At", "-F", "\t", "-c", statement]
        )
        if code != 0:
            raise CheckFailed(f"psql: {output[-500:]}")
        return [line.split("\t") for line in output.splitlines() if line]

    @staticmethod
    def exec(container: Container, command: list[str]) -> tuple[int, str]:
        """Run ``command`` in ``container``; returns its exit code and output (stdout and stderr)."""
        result = container.exec_run(command)
        output = result.output if isinstance(result.output, bytes) else b"".join(result.output)
        return int(result.exit_code or 0), output.decode(errors="replace")

    def sql_retrying(self, statement: str, timeout_s: float = 120) -> list[list[str]]:
        """``sql`` retried while Postgres restarts."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self.sql(statement)
            except (CheckFailed, docker.errors.APIError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)

    def jobs(self) -> dict[str, JobRow]:
        """Every job as the ledger reads it (``error_class`` ``None`` when NULL). Raises ``CheckFailed``
        when Postgres does not answer within ``sql_retrying``'s bound."""
        rows = self.sql_retrying(
            "SELECT j.id::text, j.status, coalesce(j.error_class, ''), s.tg_user_id FROM jobs j"
            " JOIN sessions s ON s.id = j.session_id"
        )
        return {r[0]: JobRow(r[0], r[1], r[2] or None, int(r[3])) for r in rows}

    def wait_settled(self, job_ids: set[str], timeout_s: float) -> list[str]:
        """Wait until every job of ``job_ids`` is delivered or failed, at most ``timeout_s`` seconds;
        returns the ones still active then (the ledger judges them from what the guests saw)."""
        deadline = time.monotonic() + timeout_s
        while True:
            jobs = self.jobs()
            active = sorted(k for k in job_ids if k not in jobs or jobs[k].status not in FINAL)
            if not active or time.monotonic() > deadline:
                return active
            time.sleep(2)

    def watch_exits(self) -> ExitWatcher:
        """Start reading this project's container exits (Docker's ``die`` events) as they happen."""
        return ExitWatcher(self.docker, self.project)

    def crash(self, container: Container) -> None:
        """SIGKILL the container's main process from the host (what the OOM killer does).

        Docker applies the restart policy to this, unlike ``docker kill`` (a manual stop).
        """
        container.reload()
        pid = int(container.attrs["State"]["Pid"])
        if pid <= 1:
            raise CheckFailed(f"{container.name} is not running (pid {pid})")
        os.kill(pid, signal.SIGKILL)

    def wait_restarted(self, container: Container, before: int, timeout_s: float = 120) -> int:
        """Wait until ``container`` restarted (``RestartCount`` above ``before``) and is running again."""
        deadline = time.monotonic() + timeout_s
        while True:
            container.reload()
            count = int(container.attrs["RestartCount"])
            if count > before and container.attrs["State"]["Running"]:
                return count
            if time.monotonic() > deadline:
                raise CheckFailed(f"{container.name} was not restarted by its policy in {timeout_s:.0f}s")
            time.sleep(1)


def exits_of(events: Iterable[dict[str, Any]], project: str, caused: Counter[str]) -> list[ProcessExit]:
    """The exits of Docker ``die`` events (in their order), each ``caused`` while it can consume one exit
    this check made of that container (``caused``: container name → exits made: a SIGKILL, a kill, a
    restart); the rest are exits nobody asked for. Services are named without the ``project-`` prefix.
    A one-shot service (:data:`ONE_SHOT`: ``migrate``, which compose runs again on every ``up``) ending
    with 0 has done its job and is not an exit; ending otherwise, it is."""
    left = Counter(caused)
    found: list[ProcessExit] = []
    for event in events:
        attributes = event["Actor"]["Attributes"]
        name = str(attributes.get("name", "?"))
        code = attributes.get("exitCode")
        if attributes.get("com.docker.compose.service") in ONE_SHOT and str(code) == "0":
            continue
        ours = left[name] > 0
        left[name] -= ours
        found.append(
            ProcessExit(
                name.removeprefix(f"{project}-"),
                int(code) if code is not None else None,
                caused=ours,
                at=float(event.get("time", 0)),
            )
        )
    return found


def redis_dbsize(stack: ComposeStack, redis: Container) -> str | None:
    """Redis's ``DBSIZE`` (keys), ``None`` while it does not answer yet."""
    code, output = stack.exec(redis, ["redis-cli", "DBSIZE"])
    return output.strip() if code == 0 and output.strip().isdigit() else None


def restart_count(container: Container) -> int:
    container.reload()
    return int(container.attrs["RestartCount"])


# --- the steps --------------------------------------------------------------------------------------


def plans(first_user: int, count: int, tags: tuple[str, ...] = ()) -> list[GuestPlan]:
    """``count`` guests from ``first_user`` on, with face photos (the fixtures' JPEG and PNG in turn)."""
    pictures = photos()
    return [
        GuestPlan(first_user + i, pictures[("jpeg", "png")[i % 2]], OUTFITS[i % len(OUTFITS)], tags)
        for i in range(count)
    ]


def play_journeys(stack: ComposeStack, first_user: int, count: int) -> list[Guest]:
    """``count`` guests (3 at a time), each up to the kiosk's answer to the upload."""
    kiosk = functools.partial(play_guest, stack.ingest_url, stack.sim_url)
    with ThreadPoolExecutor(max_workers=3) as pool:
        return list(pool.map(kiosk, plans(first_user, count)))


def upload_burst(stack: ComposeStack, first_user: int, count: int, tags: tuple[str, ...] = ()) -> list[Guest]:
    """``count`` guests linked first, then uploading at the same moment (kiosks at a barrier)."""
    barrier = threading.Barrier(count)
    kiosk = functools.partial(play_guest, stack.ingest_url, stack.sim_url, before_upload=barrier)
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(kiosk, plans(first_user, count, tags)))


def accepted(guests: list[Guest]) -> set[str]:
    return {g.job_id for g in guests if g.job_id}


def sample_owners(stack: ComposeStack, stop: threading.Event, owners: set[str]) -> None:
    """Collect ``jobs.owner`` of processing jobs until ``stop`` is set."""
    while not stop.is_set():
        with contextlib.suppress(CheckFailed):
            owners.update(
                r[0] for r in stack.sql("SELECT owner FROM jobs WHERE status = 'processing'") if r[0]
            )
        stop.wait(0.3)


def owner_container(stack: ComposeStack, owner: str) -> Container | None:
    """The worker container whose hostname appears in ``owner`` (``worker-<hostname>-<pid>``)."""
    for container in stack.containers("worker"):
        container.reload()
        if container.attrs["Config"]["Hostname"] in owner:
            return container
    return None


def lease(stack: ComposeStack) -> tuple[str, int] | None:
    """The gateway lease's ``(holder, epoch)`` while it runs (``gateway_lease``, migration 0013)."""
    rows = stack.sql_retrying(
        "SELECT holder, epoch FROM gateway_lease WHERE expires_at > clock_timestamp()", timeout_s=30
    )
    return (rows[0][0], int(rows[0][1])) if rows and rows[0] and rows[0][0] else None


def leading_gateway(stack: ComposeStack) -> tuple[Container, int]:
    """The gateway container that holds the lease and the lease's epoch. A holder is
    ``telegram-gateway-<hostname>-<pid>:<random>`` (``CONSUMER_NAME`` unset in Compose)."""
    held = wait_for(lambda: lease(stack), 60, "a gateway to hold the lease")
    holder, epoch = held
    for container in stack.containers("telegram-gateway"):
        if f"-{container.attrs['Config']['Hostname']}-" in holder:
            return container, epoch
    raise CheckFailed(f"no gateway container holds the lease ({holder})")


def measure_failover(stack: ComposeStack, epoch: int, killed_at: float, summary: Summary) -> None:
    """After the leader's SIGKILL at ``killed_at`` (``time.time()``): a guest writes ``/start`` at once;
    record when the standby holds the lease (the next epoch) and when the bot answered the guest (the
    simulator's record of the chat), and a problem when either took longer than
    :data:`FAILOVER_LIMIT_S`."""
    with httpx.Client(base_url=stack.sim_url, timeout=10) as sim:
        sim.post(
            f"/sim/users/{FAILOVER_PROBE_USER}/messages", json={"text": "/start", "first_name": "Probe"}
        ).raise_for_status()
        answered: float | None = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (summary.takeover_s is None or answered is None):
            now = time.time()
            if summary.takeover_s is None and (held := lease(stack)) is not None and held[1] > epoch:
                summary.takeover_s = now - killed_at
            if answered is None:
                body = sim.get(f"/sim/chats/{FAILOVER_PROBE_USER}/messages").json()
                messages = body["messages"] if isinstance(body, dict) else body
                if any((m.get("from") or {}).get("is_bot") for m in messages):
                    answered = now
            time.sleep(0.1)
    summary.kill_to_answer_s = None if answered is None else answered - killed_at
    for what, value in (("lease taken over", summary.takeover_s), ("guest answered", answered)):
        if value is None:
            summary.problems.append(f"gateway failover: {what} never (120 s)")
    if summary.kill_to_answer_s is not None and summary.kill_to_answer_s > FAILOVER_LIMIT_S:
        summary.problems.append(
            f"gateway failover: a guest answered {summary.kill_to_answer_s:.1f} s after the leader's kill"
        )


def wait_for(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """:func:`devstack.journey.wait_until` that fails the check (``CheckFailed``) on a time-out."""
    return wait_until(predicate, timeout_s, what, error=CheckFailed)


def scalar(prometheus: httpx.Client, expr: str) -> float:
    """The value of a one-series instant query, 0 when it returns none."""
    result = prometheus.get("/api/v1/query", params={"query": expr}).json()["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def processing_owner(stack: ComposeStack) -> str | None:
    return next((r[0] for r in stack.sql("SELECT owner FROM jobs WHERE status = 'processing'") if r[0]), None)


#: compose.yaml's default bot token (the simulator's; not valid at Telegram).
SIM_TOKEN = "123456789:sim-only-token-not-valid-at-telegram"
#: A forged update POSTed by the check from inside the simulator's container (no secret header).
_FORGED_POST = """
import json, urllib.request, urllib.error
body = json.dumps({"update_id": 987654321, "message": {"message_id": 1, "date": 0,
    "chat": {"id": 899999, "type": "private"}, "from": {"id": 899999, "is_bot": False, "first_name": "X"},
    "text": "/start forged"}}).encode()
request = urllib.request.Request("http://telegram-gateway:8443/telegram/webhook", data=body,
    headers={"Content-Type": "application/json"})
try:
    print(urllib.request.urlopen(request, timeout=10).status)
except urllib.error.HTTPError as exc:
    print(exc.code)
"""


def check_webhook(stack: ComposeStack, summary: Summary) -> None:
    """Webhook mode: the leader registered the webhook (``getWebhookInfo`` has its URL and no last error),
    and a forged update without the secret is refused 401 and not stored (so nothing handles it)."""
    token = os.environ.get("TELEGRAM_BOT_TOKEN") or SIM_TOKEN
    info = httpx.get(f"{stack.sim_url}/bot{token}/getWebhookInfo", timeout=10).json()["result"]
    if not info.get("url") or info.get("last_error_message"):
        summary.problems.append(f"webhook: getWebhookInfo says {info}")
    code, output = stack.exec(stack.one("telegram-sim"), ["python", "-c", _FORGED_POST])
    status = output.strip().splitlines()[-1] if output.strip() else f"exit {code}"
    stored = stack.sql("SELECT count(*) FROM tg_updates WHERE update_id = 987654321")
    count = stored[0][0] if stored else "?"
    summary.webhook = (
        f"registered {info.get('url')}, a forged update answered {status} and stored {count} times"
    )
    if status != "401" or count != "0":
        summary.problems.append(f"webhook: a forged update was not refused cleanly ({summary.webhook})")


def run(args: argparse.Namespace) -> Summary:
    summary = Summary()
    started = time.monotonic()
    version = subprocess.run(
        ["docker", "compose", "version", "--short"], capture_output=True, text=True, check=False
    ).stdout.strip()
    summary.compose_version = version
    summary.updates = args.updates
    if parse_version(version) < MIN_COMPOSE:
        summary.problems.append(f"Compose {version} is older than {MIN_COMPOSE[0]}.{MIN_COMPOSE[1]}")
        return summary
    env = {
        "INGEST_PORT": str(free_port()),
        "TELEGRAM_SIM_PORT": str(free_port()),
        "AI_SIM_PORT": str(free_port()),
        "PROMETHEUS_PORT": str(free_port()),
        "GRAFANA_PORT": str(free_port()),
        "TELEGRAM_UPDATES": args.updates,
    }
    stack = ComposeStack(ROOT, args.project, env)
    try:
        stack.compose("build", timeout_s=1800)
        summary.images = sorted(set(stack.compose_stdout("config", "--images").split()))
        stack.compose("up", "--detach", "--wait", "--wait-timeout", "300", timeout_s=600)
        watcher = stack.watch_exits()  # exits from here on are judged (not migrate's)
        guests: list[Guest] = []
        leads: list[LeadSubmission] = []
        injected: Counter[str] = Counter()
        caused: Counter[str] = Counter()  # container name -> exits this check made

        # 2a: journeys and leads, nothing broken
        print("== 2a: journeys and leads", flush=True)
        guests += play_journeys(stack, 810_000, args.journeys)
        leads += [submit_lead(stack.ingest_url, n) for n in range(args.leads)]
        summary.journeys, summary.leads = len(guests), len(leads)
        if active := stack.wait_settled(accepted(guests), timeout_s=600):
            print(f"2a: {len(active)} jobs still active after 600 s", flush=True)
        if args.updates == "webhook":
            check_webhook(stack, summary)

        # 2b: three workers, one burst
        print("== 2b: --scale worker=3 and a burst", flush=True)
        stack.compose("up", "--detach", "--wait", "--scale", "worker=3", "--no-recreate", timeout_s=600)
        owners: set[str] = set()
        stop = threading.Event()
        sampler = threading.Thread(target=sample_owners, args=(stack, stop, owners), daemon=True)
        sampler.start()
        burst = upload_burst(stack, 820_000, args.burst)
        guests += burst
        summary.journeys = len(guests)
        stack.wait_settled(accepted(burst), timeout_s=600)
        stop.set()
        sampler.join()
        workers = stack.containers("worker")
        hostnames = {c.attrs["Config"]["Hostname"] for c in workers}
        summary.replicas_owning_jobs = sum(1 for h in hostnames if any(h in o for o in owners))
        if len(workers) != 3 or summary.replicas_owning_jobs != 3:
            summary.problems.append(
                f"scale: {len(workers)} worker containers, "
                f"{summary.replicas_owning_jobs} owned a job of the burst"
            )

        # 2c: faults while journeys run
        print("== 2c: faults while journeys run", flush=True)
        gateway, epoch = leading_gateway(stack)
        summary.gateway_replicas = len(stack.containers("telegram-gateway"))
        before = {str(c.name): restart_count(c) for c in [*workers, gateway]}
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(upload_burst, stack, 830_000, args.burst, (KILL_WORKER, KILL_GATEWAY))
            owner = wait_for(lambda: processing_owner(stack), 300, "a worker to own a job")
            victim = owner_container(stack, owner)
            if victim is None:
                raise CheckFailed(f"no worker container for owner {owner}")
            stack.crash(victim)
            caused[str(victim.name)] += 1
            injected[KILL_WORKER] += 1
            summary.faults.append(f"SIGKILL {victim.name} mid-job")
            stack.crash(gateway)
            killed_at = time.time()
            caused[str(gateway.name)] += 1
            injected[KILL_GATEWAY] += 1
            summary.faults.append(f"SIGKILL {gateway.name} (the leading gateway, lease epoch {epoch})")
            measure_failover(stack, epoch, killed_at, summary)
            guests += pending.result()
        guests += upload_burst(stack, 840_000, 4, (REDIS_RESTART, POSTGRES_RESTART))
        redis = stack.one("redis")
        redis.kill()  # no save on the way down; a manual stop, so no restart by the policy either
        caused[str(redis.name)] += 1
        stack.docker.containers.run(
            redis.attrs["Config"]["Image"],
            ["sh", "-c", "rm -rf /data/* /data/.[!.]*"],
            volumes_from=[str(redis.id)],
            user="0",
            remove=True,
        )
        redis.start()
        injected[REDIS_RESTART] += 1
        summary.faults.append("redis killed, data removed, started empty")
        size = wait_for(lambda: redis_dbsize(stack, redis), 60, "Redis to answer after its start")
        summary.faults[-1] += f" (DBSIZE {size} when it first answered)"
        postgres = stack.one("postgres")
        caused[str(postgres.name)] += 1
        postgres.restart(timeout=20)
        injected[POSTGRES_RESTART] += 1
        summary.faults.append("postgres restarted")
        leads += [submit_lead(stack.ingest_url, n) for n in range(100, 100 + args.leads)]
        summary.journeys, summary.leads = len(guests), len(leads)
        for name, count in before.items():
            if name in (victim.name, gateway.name):
                after = stack.wait_restarted(stack.docker.containers.get(name), count)
                summary.restarts[name.removeprefix(f"{args.project}-")] = (
                    f"restarted by policy ({count} -> {after})"
                )
        if active := stack.wait_settled(accepted(guests), timeout_s=900):
            print(f"2c: {len(active)} jobs still active after 900 s", flush=True)
        time.sleep(5)  # the last link messages and cards land
        with contextlib.suppress(CheckFailed):  # a card that never comes is judged lost
            wait_for(
                lambda: (
                    stack.sql_retrying("SELECT count(*) FROM leads WHERE published_at IS NULL")[0][0] == "0"
                ),
                180,
                "every lead card to be posted",
            )
        jobs = stack.jobs()
        summary.job_statuses = Counter(jobs[j].status for j in accepted(guests) if j in jobs)
        messages, sets = simulator_view(stack.sim_url, [g.user_id for g in guests] + [LEADS_CHAT_ID])
        observed = Observed(
            guests=guests,
            jobs=jobs,
            messages=messages,
            sets=sets,
            leads=leads,
            leads_chat_id=LEADS_CHAT_ID,
            injected=injected,
            exits=exits_of(watcher.close(), args.project, caused),
        )
        summary.exits_seen = len(observed.exits)
        summary.exits_caused = sum(caused.values())
        if (seen := sum(e.caused for e in observed.exits)) != summary.exits_caused:
            summary.problems.append(
                f"exits: Docker's events show {seen} of the {summary.exits_caused} exits this check "
                "caused, so they cannot show the others either"
            )
        summary.ledger = judge(observed, F.KINDS)
        summary.restart_counts = {
            str(c.name).removeprefix(f"{args.project}-"): restart_count(c)
            for c in stack.docker.containers.list(
                all=True, filters={"label": f"com.docker.compose.project={args.project}"}
            )
        }
        stack.compose(
            "up", "--detach", "--wait", "--wait-timeout", "180", "--scale", "worker=3", "--no-recreate"
        )

        # 2d: Prometheus
        print("== 2d: every dashboard expression and alert rule in Prometheus", flush=True)
        with httpx.Client(base_url=stack.prometheus_url, timeout=30) as prometheus:
            wait_for(
                lambda: scalar(prometheus, 'count(up{service="worker"} == 1)') == 3,
                120,
                "Prometheus to scrape the three workers",
            )
            time.sleep(35)  # two more scrapes after the last traffic, so every rate() has two points
            summary.replicas_scraped = int(
                scalar(prometheus, 'count(sum by (instance) (stk_stage_seconds_count{service="worker"}))')
            )
            check_prometheus(prometheus, summary)
    except (CheckFailed, subprocess.TimeoutExpired, httpx.HTTPError, docker.errors.DockerException) as error:
        summary.problems.append(f"{type(error).__name__}: {error}")
        print(stack.compose("ps", "--all", check=False), flush=True)
        print(stack.compose("logs", "--tail", "40", check=False)[-20000:], flush=True)
    finally:
        if not args.keep:
            stack.compose("down", "--volumes", "--remove-orphans", check=False, timeout_s=300)
        summary.seconds = time.monotonic() - started
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devstack.compose_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--journeys", type=int, default=10, help="complete journeys before any fault")
    parser.add_argument("--leads", type=int, default=3, help="leads before and again during the faults")
    parser.add_argument("--burst", type=int, default=8, help="jobs uploaded at once (scale and fault steps)")
    parser.add_argument("--project", default=PROJECT, help="compose project name")
    parser.add_argument("--keep", action="store_true", help="leave the stack running (no down -v)")
    parser.add_argument(
        "--updates", choices=("polling", "webhook"), default="polling", help="the gateways' TELEGRAM_UPDATES"
    )
    args = parser.parse_args(argv)
    summary = run(args)
    print(summary.text(), flush=True)
    return 0 if summary.passed else 1


if __name__ == "__main__":
    sys.exit(main())
