"""Fixtures of the deployment checks: the kustomize renders, once per test module."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from tests.deploy.deploy_helpers import K8S, OVERLAY, RENDERS, Docs, kustomize


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
