"""k8s/ rendered with ``kubectl kustomize``: the Kubernetes schemas, and the policy a cluster would
enforce, and stricter."""

from __future__ import annotations

import copy
import inspect
import ipaddress
import re
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.deploy_helpers import (
    BATCH_WORKLOADS,
    CRD_KINDS,
    K8S,
    K8S_VERSION,
    MIN_GRACE_S,
    RENDERS,
    ROOT,
    SECRET_ENV,
    SERVICES,
    WORKER_GRACE_S,
    Docs,
    containers,
    find,
    load_yaml,
    millicores,
    needs_kubectl,
    one,
    pod_template,
    pod_templates,
    validate_custom_resources,
)

pytestmark = pytest.mark.unit


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_kustomization_renders(which: str, rendered: Callable[[str], Docs]) -> None:
    kinds = {d["kind"] for d in rendered(which)}
    assert {
        "Deployment",
        "Job",
        "CronJob",
        "PersistentVolumeClaim",
        "NetworkPolicy",
        "PodDisruptionBudget",
    } <= kinds
    assert "ConfigMap" in kinds
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


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_custom_resources_match_their_published_models(which: str, rendered: Callable[[str], Docs]) -> None:
    """Issue 22 item 4: what kubernetes-validate has no schema for (CRD_KINDS) is validated against the models
    of @kubernetes-models/keda and @kubernetes-models/prometheus-operator (tests/deploy/crd_models)."""
    custom = [doc for doc in rendered(which) if doc["kind"] in CRD_KINDS]
    answers = validate_custom_resources(custom)
    assert [a for a in answers if a["model"] is None] == [], "a custom resource no installed package models"
    assert [a for a in answers if a["errors"]] == []


@needs_kubectl
def test_custom_resource_check_fails_on_wrongly_typed_fields_and_unknown_kinds(
    rendered: Callable[[str], Docs],
) -> None:
    docs = rendered("example-venue")
    scaled, monitor = (
        copy.deepcopy(one(docs, "ScaledObject", "worker")),
        copy.deepcopy(one(docs, "PodMonitor", "sticker-booth")),
    )
    scaled["spec"]["minReplicaCount"] = "1"  # an int32
    scaled["spec"]["triggers"][0]["metadata"]["lagCount"] = 2  # trigger metadata is map[string]string
    monitor["spec"]["podMetricsEndpoints"][0]["interval"] = "15 seconds"  # a Prometheus duration
    misspelt = {**copy.deepcopy(scaled), "kind": "ScaledObjekt"}
    answers = validate_custom_resources([scaled, monitor, misspelt])
    assert sorted(e.split(":")[0] for e in answers[0]["errors"]) == [
        "/spec/minReplicaCount",
        "/spec/triggers/0/metadata/lagCount",
    ]
    assert [e.split(":")[0] for e in answers[1]["errors"]] == ["/spec/podMetricsEndpoints/0/interval"]
    assert answers[2]["model"] is None


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
def test_gateway_runs_a_leader_and_a_standby_that_never_go_down_together(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    """Issue 22: two replicas (one leads through the lease), a rolling update that starts the new pod
    before stopping an old one, a PDB that keeps one through a drain, and the pods on different nodes."""
    docs = rendered(which)
    gateway = one(docs, "Deployment", "telegram-gateway")
    assert gateway["spec"]["replicas"] == 2
    assert gateway["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    spread = gateway["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    (term,) = spread["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    for kind in ("ScaledObject", "HorizontalPodAutoscaler"):
        targets = {d["spec"]["scaleTargetRef"]["name"] for d in find(docs, kind)}
        assert "telegram-gateway" not in targets
    pdb = one(docs, "PodDisruptionBudget", "telegram-gateway")
    assert pdb["spec"]["minAvailable"] == 1 and "maxUnavailable" not in pdb["spec"]


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_every_pod_is_non_root_with_a_read_only_root_and_no_capabilities(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    pods = list(pod_templates(rendered(which)))
    assert {name for name, _ in pods} == {*SERVICES, *BATCH_WORKLOADS}
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
        # /metrics on the ops port where a pod has one (ingest: never on the port its ingress publishes)
        assert annotations["prometheus.io/port"] == str(ports.get("ops", port))
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
            return {*SERVICES, *BATCH_WORKLOADS}
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
    assert internet == {"telegram-gateway", "worker", "preflight"}  # preflight checks the token and keys
    assert open_ingress == {"ingest"}
    assert datastores == {*SERVICES, *BATCH_WORKLOADS}
    # The policies select pods by labels the workloads really carry.
    for workload in (d for d in docs if d["kind"] in {"Deployment", "Job", "CronJob"}):
        labels = pod_template(workload)["metadata"]["labels"]
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
@pytest.mark.parametrize("which", RENDERS)
def test_backup_runs_daily_one_at_a_time_onto_its_own_volume(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    """Issue 11 item 4: a daily checked pg_dump (shared/backup.py) that never overlaps itself, writing to a
    PersistentVolumeClaim of the kustomization, with the retention from the shared ConfigMap."""
    docs = rendered(which)
    cron = one(docs, "CronJob", "backup")
    spec = cron["spec"]
    minute, hour, *every = spec["schedule"].split()
    assert minute.isdigit() and hour.isdigit() and every == ["*", "*", "*"], "once a day at a fixed time"
    assert spec["timeZone"] == "Etc/UTC", "the file names carry UTC"
    assert spec["concurrencyPolicy"] == "Forbid"
    job = spec["jobTemplate"]["spec"]
    assert job["activeDeadlineSeconds"] <= 86400 and job["backoffLimit"] >= 1
    pod = pod_template(cron)["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["command"] == ["python", "-m", "shared.backup"] and container["args"] == ["dump"]
    env = {e["name"]: e for e in container["env"]}
    assert env["DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"] == "sticker-booth-datastores"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["backups"] == env["BACKUP_DIR"]["value"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "backups"]
    claim = one(docs, "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    assert claim["spec"]["resources"]["requests"]["storage"]
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"], "the volume is writable"
    assert {"configMapRef": {"name": find(docs, "ConfigMap")[0]["metadata"]["name"]}} in container["envFrom"]
    assert int(find(docs, "ConfigMap")[0]["data"]["BACKUP_KEEP"]) >= 1


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
    annotations = ingress["metadata"].get("annotations", {})
    assert annotations.get("nginx.ingress.kubernetes.io/use-forwarded-headers", "false") == "false"
    (ingest,) = containers(pod_template(one(docs, "Deployment", "ingest"))["spec"])
    assert "FORWARDED_ALLOW_IPS" not in {e["name"] for e in ingest["env"]}, "set in the ConfigMap"
    # behind the controller every visitor would be one address for the per-client limits without it;
    # believed from the controller's pod network only (never "*": any pod could name itself anyone),
    # and safe only while the controller replaces a client's own X-Forwarded-For (the default above)
    trusted = find(docs, "ConfigMap")[0]["data"]["FORWARDED_ALLOW_IPS"]
    assert trusted and all(ipaddress.ip_network(n.strip()) for n in trusted.split(",")), trusted


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
    assert {e["port"] for e in endpoints} == {"ops"} and "ops" in port_names
    for endpoint in endpoints:
        assert endpoint["path"] == "/metrics"
        assert {r["targetLabel"] for r in endpoint["relabelings"]} == {"service"}


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_every_deployment_has_a_disruption_budget_for_exactly_its_pods(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    docs = rendered(which)
    for deployment in find(docs, "Deployment"):
        name = deployment["metadata"]["name"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        budgets = [
            pdb
            for pdb in find(docs, "PodDisruptionBudget")
            if pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
        ]
        assert len(budgets) == 1, f"{name}: {len(budgets)} PodDisruptionBudgets select its pods"
        assert budgets[0]["spec"]["selector"] == deployment["spec"]["selector"], name
        spec = budgets[0]["spec"]
        if "minAvailable" in spec:  # only below the replica count, or no node could ever be drained
            assert spec["minAvailable"] < deployment["spec"].get("replicas", 1), name
        else:
            assert spec["maxUnavailable"] >= 1, name


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_every_long_running_container_has_probes_requests_and_limits(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    for deployment in find(rendered(which), "Deployment"):
        for container in containers(deployment["spec"]["template"]["spec"]):
            where = f"{deployment['metadata']['name']}/{container['name']}"
            assert container["readinessProbe"] and container["livenessProbe"], where
            for key in ("cpu", "memory"):
                assert key in container["resources"]["requests"], f"{where} requests {key}"
                assert key in container["resources"]["limits"], f"{where} limits {key}"
    for job in [*find(rendered(which), "Job"), *find(rendered(which), "CronJob")]:
        for container in containers(pod_template(job)["spec"]):
            for key in ("cpu", "memory"):
                assert key in container["resources"]["requests"], f"{job['metadata']['name']} requests {key}"
                assert key in container["resources"]["limits"], f"{job['metadata']['name']} limits {key}"


@needs_kubectl
@pytest.mark.parametrize("which", RENDERS)
def test_grace_periods_exceed_what_the_services_wait_for_on_sigterm(
    which: str, rendered: Callable[[str], Docs]
) -> None:
    """The worker stops taking jobs, then waits SHUTDOWN_GRACE_SEC for running ones, then requeues them:
    the kubelet's SIGKILL must come after all of that, with room to spare."""
    from worker.main import SHUTDOWN_GRACE_SEC

    pods = dict(pod_templates(rendered(which)))
    assert pods["worker"]["terminationGracePeriodSeconds"] > SHUTDOWN_GRACE_SEC + 15
    for name in SERVICES:
        assert pods[name]["terminationGracePeriodSeconds"] >= MIN_GRACE_S, name


@needs_kubectl
def test_keda_reads_the_stream_and_group_the_worker_consumes(rendered: Callable[[str], Docs]) -> None:
    from shared import streams
    from worker import main as worker_main

    (trigger,) = one(rendered("example-venue"), "ScaledObject", "worker")["spec"]["triggers"]
    assert trigger["metadata"]["stream"] == streams.JOBS
    assert trigger["metadata"]["consumerGroup"] == worker_main.SERVICE
    source = inspect.getsource(worker_main).replace(" ", "").replace("\n", "")
    # shared.runtime.ServiceRuntime.consumer reads in the group named by the service
    assert "ServiceRuntime(SERVICE," in source and "rt.consumer(streams.JOBS," in source, "the consumer moved"


@needs_kubectl
def test_manifests_name_the_images_compose_builds(rendered: Callable[[str], Docs]) -> None:
    """The images `make compose-check` runs are the ones the manifests deploy (the overlay only retags)."""
    compose_images = {
        name: str(service["image"]).replace("${TAG:-dev}", "dev")
        for name, service in load_yaml(ROOT / "compose.yaml")["services"].items()
        if str(service.get("image", "")).startswith("sticker-booth/")
    }
    base = dict(pod_templates(rendered("base")))
    for name, pod in base.items():
        (container,) = pod["containers"]
        assert container["image"] == compose_images[name], name
    venue = dict(pod_templates(rendered("example-venue")))
    for name, pod in venue.items():
        (container,) = pod["containers"]
        repository, _, tag = container["image"].rpartition(":")
        assert repository.endswith(compose_images[name].rpartition(":")[0]), name
        assert re.fullmatch(r"\d+\.\d+\.\d+", tag), f"{name}: pin a release tag, not {tag}"
