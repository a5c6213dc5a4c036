"""Rendering the Helm chart offline (helm-python-sdk), for the chart's tests and the test that
runs the rendered pods as containers."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

CHART = Path(__file__).resolve().parents[2] / "helm" / "leveret"
VALUES_DIR = Path(__file__).parent / "values"
VALUES_FILES = sorted(path.name for path in VALUES_DIR.glob("*.yaml"))
# Two recent Kubernetes versions that kubernetes-validate ships strict schemas for.
KUBE_VERSIONS = ("1.31.0", "1.35.0")
RELEASE = "leveret"
NAMESPACE = "messaging"
PEER_DOMAIN = f"{RELEASE}-headless.{NAMESPACE}.svc.cluster.local"

Manifest = dict[str, Any]


def _load(module: str) -> ModuleType | str:
    """The module, or why it cannot be used here."""
    try:
        return importlib.import_module(module)
    # ImportError when not installed; helm-python-sdk raises its own HelmLibraryError at import
    # when its bundled native library is missing or cannot be loaded.
    except Exception as error:  # noqa: BLE001
        return f"{module} cannot be used: {error}"


def required_module(module: str) -> ModuleType:
    """Under CI nothing skips: a missing tool fails the test that needs it."""
    loaded = _load(module)
    if isinstance(loaded, str):
        if os.environ.get("CI") == "true":
            pytest.fail(loaded)
        pytest.skip(f"{loaded} (install the test extra: pip install -e '.[test]')")
    return loaded


def values_of(helm: ModuleType, name: str) -> dict[str, Any]:
    """A values file as `helm -f` reads it (Helm's own YAML parsing and number types)."""
    values: dict[str, Any] = helm.values_from_yaml((VALUES_DIR / name).read_text())
    return values


def render_raw(helm: ModuleType, values: dict[str, Any] | None) -> dict[str, str]:
    with helm.Chart.load(CHART) as chart:
        rendered: dict[str, str] = chart.render(
            values, name=RELEASE, namespace=NAMESPACE, is_install=True
        )
    return rendered


def render(helm: ModuleType, values: dict[str, Any] | None) -> list[Manifest]:
    """Every object the chart renders (NOTES.txt aside)."""
    manifests = []
    for template, text in sorted(render_raw(helm, values).items()):
        if template.endswith("NOTES.txt"):
            continue
        manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return manifests


def the(manifests: list[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [m for m in manifests if m["kind"] == kind and name in (None, m["metadata"]["name"])]
    assert len(found) == 1, f"{len(found)} {kind} objects named {name}"
    return found[0]


def kinds(manifests: list[Manifest]) -> list[str]:
    return sorted(m["kind"] for m in manifests)


def node_container(statefulset: Manifest) -> Manifest:
    containers = statefulset["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["leveret"]
    container: Manifest = containers[0]
    return container


def toml_of(manifests: list[Manifest]) -> str:
    text: str = the(manifests, "ConfigMap")["data"]["leveret.toml"]
    return text


def env_of(container: Manifest) -> dict[str, Manifest]:
    return {item["name"]: item for item in container["env"]}
