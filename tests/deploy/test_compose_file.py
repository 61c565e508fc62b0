"""compose.yaml against the Compose specification and the deployment contract.

Offline; ``make compose-check`` runs the stack for real.
"""

from __future__ import annotations

import re

import pytest

from tests.deploy.deploy_helpers import (
    MIN_GRACE_S,
    ROOT,
    SECRET_ENV,
    SERVICES,
    VENV_BIN,
    WORKER_GRACE_S,
    compose,
    compose_service,
    duration_s,
    run,
)

pytestmark = pytest.mark.unit


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
    for service, (package, port) in SERVICES.items():
        build = compose_service(service)["build"]
        assert (build["dockerfile"], build["target"]) == ("Dockerfile", "service")
        assert {k: build["args"][k] for k in ("SERVICE", "PACKAGE", "PORT")} == {
            "SERVICE": service,
            "PACKAGE": package,
            "PORT": str(port),
        }


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
    assert compose_service("ingest")["ports"] == [
        "${INGEST_BIND_ADDRESS:-127.0.0.1}:${INGEST_PORT:-8000}:8000"
    ]
    # /metrics on an unpublished port: the published 8000 reaches the venue LAN with INGEST_BIND_ADDRESS
    assert str(compose_service("ingest")["environment"]["OPS_PORT"]) == "9100"


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
    for name in [*SERVICES, "migrate", "backup", "telegram-sim", "ai-sim"]:
        service = compose_service(name)
        assert service.get("read_only") is True, name
        assert "/tmp" in service.get("tmpfs", []), name
        assert service.get("cap_drop") == ["ALL"], name
        assert "no-new-privileges:true" in service.get("security_opt", []), name
    for name in SERVICES:
        grace = duration_s(compose_service(name)["stop_grace_period"])
        assert grace >= (WORKER_GRACE_S if name == "worker" else MIN_GRACE_S), name


def test_compose_runs_a_gateway_and_its_standby_and_lets_the_worker_scale() -> None:
    assert compose_service("telegram-gateway")["deploy"]["replicas"] == "${GATEWAY_REPLICAS:-2}"
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


def test_compose_builds_each_image_once() -> None:
    """Two services building one image build it twice and recreate each other's containers on `up --build`."""
    builders: dict[str, list[str]] = {}
    for name, service in compose()["services"].items():
        if "build" in service:
            builders.setdefault(service["image"], []).append(name)
    assert all(len(names) == 1 for names in builders.values()), builders
    for name, service in compose()["services"].items():
        if service["image"] in builders and "build" not in service:
            assert service.get("pull_policy") == "never", f"{name} must wait for the build, never pull"
    assert compose_service("migrate")["image"] == compose_service("ingest")["image"]
    assert compose_service("ai-sim")["image"] == compose_service("telegram-sim")["image"]


def test_monitoring_sits_behind_profiles_so_the_core_comes_up_without_it() -> None:
    assert compose_service("grafana")["profiles"] == ["monitoring"]
    assert set(compose_service("prometheus")["profiles"]) == {"monitoring", "prometheus"}
    core = [
        name for name in compose()["services"] if name not in {"grafana", "prometheus", "backup", "preflight"}
    ]
    assert not [name for name in core if compose_service(name).get("profiles")]
    for name in core:
        assert not {"grafana", "prometheus"} & set(compose_service(name).get("depends_on") or {}), name


def test_backup_is_a_one_shot_behind_its_profile_writing_to_a_volume() -> None:
    """Issue 11 item 4: `docker compose --profile backup run --rm backup` takes one checked generation
    (shared/backup.py) of the database the services use; the host's cron runs it daily (documented)."""
    service = compose_service("backup")
    assert service["profiles"] == ["backup"]
    assert service["restart"] == "no" and service["command"] == ["python", "-m", "shared.backup"]
    assert (service["build"]["dockerfile"], service["build"]["target"]) == ("Dockerfile", "backup")
    env = service["environment"]
    assert env["DATABASE_URL"] == compose()["x-common-env"]["DATABASE_URL"]
    assert env["BACKUP_KEEP"] == "${BACKUP_KEEP:-7}"
    assert f"backup-data:{env['BACKUP_DIR']}" in service["volumes"]
    assert "backup-data" in compose()["volumes"]
    assert service["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert not any("backup" in (compose_service(n).get("depends_on") or {}) for n in compose()["services"])
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    assert "docker compose --profile backup run --rm backup" in text and "cron" in text


def test_the_telegram_simulator_is_seeded_and_keeps_its_state_in_a_volume() -> None:
    service = compose_service("telegram-sim")
    command = service["command"]
    data_dir = command[command.index("--data-dir") + 1]
    assert f"telegram-sim-data:{data_dir}" in service["volumes"]
    assert "telegram-sim-data" in compose()["volumes"]
    groups = [arg.removeprefix("--group=").split("=", 1)[0] for arg in command if arg.startswith("--group=")]
    common = compose()["x-common-env"]
    assert sorted(groups) == sorted([common["LEADS_CHAT_ID"], common["ADMIN_CHAT_ID"]])


def test_the_minimum_compose_version_is_documented_and_checked() -> None:
    from devstack.compose_check import MIN_COMPOSE

    header = (ROOT / "compose.yaml").read_text(encoding="utf-8").split("\nname:")[0]
    assert MIN_COMPOSE == (2, 20) and "Compose v2.20 or newer" in header
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "2.20" in readme


def test_published_ports_can_be_moved_and_stay_on_loopback() -> None:
    for name, variable, port in (
        ("telegram-sim", "TELEGRAM_SIM_PORT", 8081),
        ("ai-sim", "AI_SIM_PORT", 8082),
        ("prometheus", "PROMETHEUS_PORT", 9090),
        ("grafana", "GRAFANA_PORT", 3000),
    ):
        assert compose_service(name)["ports"] == [f"127.0.0.1:${{{variable}:-{port}}}:{port}"], name


def test_the_kiosk_names_the_providers_the_worker_calls() -> None:
    """The consent screen (ingest) tells the guest which AI providers get the photo: it must read the same
    PRIMARY_AI_PROVIDER / FALLBACK_AI_PROVIDER as the worker that calls them."""
    ingest, worker = compose_service("ingest")["environment"], compose_service("worker")["environment"]
    for var in ("PRIMARY_AI_PROVIDER", "FALLBACK_AI_PROVIDER"):
        assert var in ingest and ingest[var] == worker[var], var


def test_the_consent_screen_states_the_retention_that_housekeeping_enforces() -> None:
    ingest, delivery = compose_service("ingest")["environment"], compose_service("delivery")["environment"]
    for var in ("SELFIE_RETENTION_HOURS", "STICKER_RETENTION_DAYS"):
        assert var in ingest and ingest[var] == delivery[var], var
