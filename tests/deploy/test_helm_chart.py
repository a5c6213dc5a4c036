"""The Helm chart in helm/leveret, offline: linted, rendered with every values file under
values/, each manifest checked against Kubernetes' schemas, and the node's contract (environment,
probes, drain, security, volumes, secrets) checked on what the chart renders."""

from __future__ import annotations

import base64
import json
import os
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from leveret.config import SETTINGS, Config
from tests.deploy.chart import (
    CHART,
    KUBE_VERSIONS,
    NAMESPACE,
    PEER_DOMAIN,
    RELEASE,
    VALUES_FILES,
    Manifest,
    env_of,
    kinds,
    node_container,
    render,
    render_raw,
    required_module,
    the,
    toml_of,
    values_of,
)


@pytest.fixture(scope="session")
def helm() -> ModuleType:
    return required_module("helm_python")


@pytest.fixture(scope="session")
def kubernetes_validate() -> ModuleType:
    return required_module("kubernetes_validate")


@pytest.fixture(scope="session")
def rendered(helm: ModuleType) -> dict[str, list[Manifest]]:
    return {name: render(helm, values_of(helm, name)) for name in VALUES_FILES}


# ServiceMonitor is the Prometheus operator's CRD, for which kubernetes-validate has no schema:
# the fields the chart uses are checked against this part of monitoring.coreos.com/v1.
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "additionalProperties": False,
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "matchLabels": {
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                        }
                    },
                },
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchNames": {"type": "array", "items": {"type": "string"}}},
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                            "scrapeTimeout": {"type": "string", "pattern": "^[0-9]+(ms|s|m|h)$"},
                        },
                    },
                },
            },
        },
    },
}


def test_a_missing_tool_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no_such_helm_module"):
        required_module("no_such_helm_module")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no_such_helm_module"):
        required_module("no_such_helm_module")


# --- lint and schemas ---------------------------------------------------------------------------


def test_values_files_cover_the_cases() -> None:
    assert VALUES_FILES == [
        "defaults.yaml",
        "existing-secret.yaml",
        "federation.yaml",
        "five-hard.yaml",
        "monitoring-networkpolicy.yaml",
        "persistence-off.yaml",
        "tls.yaml",
    ]


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_lint_is_clean_in_strict_mode(
    helm: ModuleType, values_file: str, kube_version: str
) -> None:
    report = helm.lint(
        CHART,
        values_of(helm, values_file),
        strict=True,
        namespace=NAMESPACE,
        kube_version=f"v{kube_version}",
    )
    assert report["errors"] == []
    # Severity 1 is information ("icon is recommended"); warnings and errors fail.
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("values_file", VALUES_FILES)
def test_every_manifest_is_valid_kubernetes(
    kubernetes_validate: ModuleType,
    rendered: dict[str, list[Manifest]],
    values_file: str,
    kube_version: str,
) -> None:
    manifests = rendered[values_file]
    assert manifests
    for manifest in manifests:
        if manifest["kind"] == "ServiceMonitor":
            jsonschema.validate(manifest, SERVICE_MONITOR_SCHEMA)
        else:
            # Strict: a misspelt or misplaced field is an error, not ignored.
            kubernetes_validate.validate(manifest, kube_version, strict=True)
        assert manifest["metadata"]["namespace"] == NAMESPACE
        labels = manifest["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == "leveret"
        assert labels["app.kubernetes.io/instance"] == RELEASE
        assert labels["app.kubernetes.io/managed-by"] == "Helm"


def test_the_schema_covers_every_top_level_value(helm: ModuleType) -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema["additionalProperties"] is False
    with helm.Chart.load(CHART) as chart:
        defaults = chart.values
    assert set(defaults) <= set(schema["properties"])
    assert set(schema["properties"]) - set(defaults) == {"global"}


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"replicas": "three"}, "/replicas"),
        ({"replicas": 0}, "/replicas"),
        ({"replicaCount": 3}, "replicaCount"),
        ({"podAntiAffinity": "sometimes"}, "/podAntiAffinity"),
        ({"persistence": {"size": "lots"}}, "/persistence/size"),
        # Secrets never go into the ConfigMap, nor settings the chart makes through the
        # environment (where they would win over the file without a word).
        ({"config": {"default_pass": "hunter2"}}, "default_pass"),
        ({"config": {"join": ["elsewhere:25672"]}}, "join"),
        ({"config": {"cluster": {"name": "x"}}}, "/config/cluster"),
    ],
)
def test_the_schema_rejects_wrong_values(
    helm: ModuleType, values: dict[str, Any], complaint: str
) -> None:
    report = helm.lint(CHART, values, strict=True, namespace=NAMESPACE)
    assert report["errors"], report
    assert complaint in " ".join(report["errors"])
    with pytest.raises(helm.HelmValuesError, match=complaint):
        render_raw(helm, values)


def test_a_drain_longer_than_the_grace_period_is_refused(helm: ModuleType) -> None:
    with pytest.raises(helm.HelmRenderError, match=r"drain\.timeoutSeconds must be less than"):
        render_raw(helm, {"drain": {"timeoutSeconds": 120}, "terminationGracePeriodSeconds": 120})


def test_tls_without_its_secret_is_refused(helm: ModuleType) -> None:
    with pytest.raises(helm.HelmRenderError, match=r"tls\.existingSecret"):
        render_raw(helm, {"tls": {"enabled": True}})


# --- the node contract on the default render ------------------------------------------------


def test_defaults_make_a_three_node_cluster(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["defaults.yaml"]
    assert kinds(manifests) == [
        "ConfigMap",
        "PodDisruptionBudget",
        "Secret",
        "Service",
        "Service",
        "ServiceAccount",
        "StatefulSet",
    ]
    statefulset = the(manifests, "StatefulSet", RELEASE)
    spec = statefulset["spec"]
    assert spec["replicas"] == 3
    assert spec["podManagementPolicy"] == "Parallel"
    assert spec["serviceName"] == f"{RELEASE}-headless"
    selector = spec["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "leveret", "app.kubernetes.io/instance": RELEASE}
    assert selector.items() <= spec["template"]["metadata"]["labels"].items()

    pdb = the(manifests, "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}


def test_the_node_runs_as_the_contract_says(rendered: dict[str, list[Manifest]]) -> None:
    statefulset = the(rendered["defaults.yaml"], "StatefulSet")
    pod = statefulset["spec"]["template"]["spec"]
    container = node_container(statefulset)
    assert container["image"] == "leveret:0.1.0"
    assert container["args"] == ["server"]
    assert "command" not in container  # the image's entrypoint is `leveret`
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"amqp": 5672, "management": 15672, "cluster": 25672, "data": 25673}
    assert pod["terminationGracePeriodSeconds"] == 120
    # A Service named leveret-<setting> would otherwise set LEVERET_<SETTING> in every pod.
    assert pod["enableServiceLinks"] is False
    assert pod["automountServiceAccountToken"] is False

    env = env_of(container)
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    plain = {name: item.get("value") for name, item in env.items()}
    assert plain["LEVERET_NODE_NAME"] == f"leveret@$(POD_NAME).{PEER_DOMAIN}"
    assert plain["LEVERET_BIND"] == "0.0.0.0"
    assert plain["LEVERET_DATA_DIR"] == "/var/lib/leveret"
    assert plain["LEVERET_CONFIG"] == "/etc/leveret/leveret.toml"
    assert plain["LEVERET_JOIN"] == f"{RELEASE}-0.{PEER_DOMAIN}:25672"
    assert plain["LEVERET_CLUSTER_SECRET_FILE"] == "/etc/leveret/secret/cluster-secret"
    assert plain["LEVERET_DATA_PORT"] == "25673"  # fixed, for network policies
    for variable, key in (
        ("LEVERET_DEFAULT_USER", "default-user"),
        ("LEVERET_DEFAULT_PASS", "default-pass"),
    ):
        assert env[variable]["valueFrom"] == {"secretKeyRef": {"name": RELEASE, "key": key}}
    assert plain["LEVERET_CTL_URL"] == (
        "http://$(LEVERET_DEFAULT_USER):$(LEVERET_DEFAULT_PASS)@127.0.0.1:15672"
    )
    # Kubernetes expands $(VAR) only for variables declared earlier in the list.
    names = list(env)
    assert names.index("POD_NAME") < names.index("LEVERET_NODE_NAME")
    assert names.index("LEVERET_DEFAULT_USER") < names.index("LEVERET_CTL_URL")
    assert names.index("LEVERET_DEFAULT_PASS") < names.index("LEVERET_CTL_URL")
    # Every LEVERET_* variable is one the node reads: a setting, or the configuration file
    # (LEVERET_CTL_URL is for `leveret ctl`).
    known = {f"LEVERET_{name.upper()}" for name in SETTINGS} | {"LEVERET_CONFIG"}
    assert {n for n in names if n.startswith("LEVERET_")} - known == {"LEVERET_CTL_URL"}


def test_probes_and_drain(rendered: dict[str, list[Manifest]]) -> None:
    container = node_container(the(rendered["defaults.yaml"], "StatefulSet"))
    probes = {
        kind: container[f"{kind}Probe"]["httpGet"] for kind in ("startup", "readiness", "liveness")
    }
    assert probes == {
        "startup": {"path": "/health/startup", "port": "management"},
        "readiness": {"path": "/health/ready", "port": "management"},
        "liveness": {"path": "/health/live", "port": "management"},
    }
    startup = container["startupProbe"]
    # Generous: a node replaying a long log must not be killed while it starts.
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 300
    assert container["lifecycle"]["preStop"]["exec"]["command"] == [
        "leveret",
        "ctl",
        "drain",
        "--timeout",
        "90",
    ]


def test_security_context(rendered: dict[str, list[Manifest]]) -> None:
    statefulset = the(rendered["defaults.yaml"], "StatefulSet")
    pod = statefulset["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert (pod["runAsUser"], pod["runAsGroup"], pod["fsGroup"]) == (999, 999, 999)
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    container = node_container(statefulset)["securityContext"]
    assert container["runAsNonRoot"] is True
    assert container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert container["capabilities"] == {"drop": ["ALL"]}
    assert container["seccompProfile"] == {"type": "RuntimeDefault"}


def test_volumes_and_mounts(rendered: dict[str, list[Manifest]]) -> None:
    statefulset = the(rendered["defaults.yaml"], "StatefulSet")
    mounts = {m["mountPath"]: m for m in node_container(statefulset)["volumeMounts"]}
    assert {path: m["name"] for path, m in mounts.items()} == {
        "/var/lib/leveret": "data",
        "/etc/leveret": "etc",
        "/tmp": "tmp",
    }
    assert mounts["/etc/leveret"]["readOnly"] is True
    volumes = {v["name"]: v for v in statefulset["spec"]["template"]["spec"]["volumes"]}
    assert set(volumes) == {"etc", "tmp"}  # data comes from the claim template
    assert volumes["tmp"] == {"name": "tmp", "emptyDir": {}}
    # /etc/leveret/leveret.toml from the ConfigMap, /etc/leveret/secret/cluster-secret from
    # the Secret, and nothing else of the Secret (the password stays in the environment).
    sources = volumes["etc"]["projected"]["sources"]
    assert sources == [
        {
            "configMap": {
                "name": RELEASE,
                "items": [{"key": "leveret.toml", "path": "leveret.toml", "mode": 0o444}],
            }
        },
        {
            "secret": {
                "name": RELEASE,
                "items": [
                    {"key": "cluster-secret", "path": "secret/cluster-secret", "mode": 0o440}
                ],
            }
        },
    ]
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["metadata"]["name"] == "data"
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "8Gi"
    assert "storageClassName" not in claim["spec"]  # the cluster's default class


def test_services(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["defaults.yaml"]
    selector = the(manifests, "StatefulSet")["spec"]["selector"]["matchLabels"]
    headless = the(manifests, "Service", f"{RELEASE}-headless")["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["publishNotReadyAddresses"] is True
    assert headless["selector"] == selector
    assert {p["name"]: p["port"] for p in headless["ports"]} == {
        "amqp": 5672,
        "management": 15672,
        "cluster": 25672,
        "data": 25673,
    }
    client = the(manifests, "Service", RELEASE)["spec"]
    assert client["type"] == "ClusterIP"
    assert client["selector"] == selector
    assert "publishNotReadyAddresses" not in client
    assert {p["name"]: (p["port"], p["targetPort"]) for p in client["ports"]} == {
        "amqp": (5672, "amqp"),
        "management": (15672, "management"),
    }


def test_soft_anti_affinity_by_default(rendered: dict[str, list[Manifest]]) -> None:
    pod = the(rendered["defaults.yaml"], "StatefulSet")["spec"]["template"]["spec"]
    anti = pod["affinity"]["podAntiAffinity"]
    assert list(anti) == ["preferredDuringSchedulingIgnoredDuringExecution"]
    (preferred,) = anti["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


# --- secrets and configuration --------------------------------------------------------------


def decoded_secret(manifests: list[Manifest]) -> dict[str, str]:
    secret = the(manifests, "Secret", RELEASE)
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


def test_the_secret_is_generated_once_and_kept(
    helm: ModuleType, rendered: dict[str, list[Manifest]]
) -> None:
    # Upgrades keep the Secret in the cluster: the template asks for it with lookup first.
    template = (CHART / "templates" / "secret.yaml").read_text()
    assert 'lookup "v1" "Secret" .Release.Namespace $name' in template
    secret = the(rendered["defaults.yaml"], "Secret", RELEASE)
    assert secret["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    first = decoded_secret(rendered["defaults.yaml"])
    assert set(first) == {"cluster-secret", "default-user", "default-pass"}
    assert first["default-user"] == "leveret"
    assert len(first["cluster-secret"]) == 64 and first["cluster-secret"].isalnum()
    assert len(first["default-pass"]) == 32 and first["default-pass"].isalnum()
    # With no cluster to look in (as here), each render makes new random values.
    second = decoded_secret(render(helm, None))
    assert second["cluster-secret"] != first["cluster-secret"]
    assert second["default-pass"] != first["default-pass"]


def test_no_secret_in_the_configmap(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["defaults.yaml"]
    configmap = json.dumps(the(manifests, "ConfigMap"))
    for value in decoded_secret(manifests).values():
        if value != "leveret":  # the user's name is no secret, and is the release's name too
            assert value not in configmap
    settings = tomllib.loads(toml_of(manifests))
    assert not {"default_user", "default_pass", "cluster_secret_file"} & set(settings)


def test_an_existing_secret_is_used(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["existing-secret.yaml"]
    assert "Secret" not in kinds(manifests)
    statefulset = the(manifests, "StatefulSet")
    env = env_of(node_container(statefulset))
    for variable in ("LEVERET_DEFAULT_USER", "LEVERET_DEFAULT_PASS"):
        assert env[variable]["valueFrom"]["secretKeyRef"]["name"] == "leveret-credentials"
    (etc,) = [v for v in statefulset["spec"]["template"]["spec"]["volumes"] if v["name"] == "etc"]
    secrets = [s["secret"]["name"] for s in etc["projected"]["sources"] if "secret" in s]
    assert secrets == ["leveret-credentials"]


@pytest.mark.parametrize("values_file", [f for f in VALUES_FILES if f != "tls.yaml"])
def test_the_node_accepts_the_rendered_configuration(
    rendered: dict[str, list[Manifest]],
    values_file: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in list(os.environ):
        if name.startswith("LEVERET_"):
            monkeypatch.delenv(name)
    path = tmp_path / "leveret.toml"
    path.write_text(toml_of(rendered[values_file]))
    # The node's own loader: an unknown key or a wrong value raises ConfigError.
    Config.load(str(path), {})


def test_configuration_from_values(rendered: dict[str, list[Manifest]]) -> None:
    defaults = tomllib.loads(toml_of(rendered["defaults.yaml"]))
    # 0.4 of the 1Gi memory limit: the node would otherwise take 0.4 of the host's memory.
    assert defaults == {
        "disk_free_limit": "1GB",
        "log_format": "json",
        "memory_high_watermark": int(0.4 * 1024**3),
    }
    given = tomllib.loads(toml_of(rendered["existing-secret.yaml"]))
    assert given["cluster_name"] == "payments"
    assert given["queue_leader_locator"] == "balanced"
    assert given["memory_high_watermark"] == 0.5  # given, so not computed from the limit
    assert given["max_message_size"] == 16777216  # from extraConfig
    # No memory limit: no watermark computed.
    assert "memory_high_watermark" not in tomllib.loads(toml_of(rendered["persistence-off.yaml"]))
    five = tomllib.loads(toml_of(rendered["five-hard.yaml"]))
    assert five["memory_high_watermark"] == int(0.4 * 2 * 1024**3)
    # A CPU limit: the node does not poll while idle (the quota would pay for it); none, it does.
    assert five["busy_poll_microseconds"] == 0
    assert "busy_poll_microseconds" not in defaults


def test_a_changed_configuration_rolls_the_pods(helm: ModuleType) -> None:
    def checksum(values: dict[str, Any] | None) -> str:
        template = the(render(helm, values), "StatefulSet")["spec"]["template"]
        annotation: str = template["metadata"]["annotations"]["checksum/config"]
        return annotation

    assert checksum(None) == checksum(None)
    assert checksum(None) != checksum({"config": {"log_level": "debug"}})


# --- the other values files -----------------------------------------------------------------


def test_persistence_off(rendered: dict[str, list[Manifest]]) -> None:
    statefulset = the(rendered["persistence-off.yaml"], "StatefulSet")
    assert "volumeClaimTemplates" not in statefulset["spec"]
    volumes = {v["name"]: v for v in statefulset["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}


def test_five_nodes_never_two_on_a_host(rendered: dict[str, list[Manifest]]) -> None:
    statefulset = the(rendered["five-hard.yaml"], "StatefulSet")
    assert statefulset["spec"]["replicas"] == 5
    pod = statefulset["spec"]["template"]["spec"]
    anti = pod["affinity"]["podAntiAffinity"]
    assert list(anti) == ["requiredDuringSchedulingIgnoredDuringExecution"]
    (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == statefulset["spec"]["selector"]["matchLabels"]
    assert pod["terminationGracePeriodSeconds"] == 180
    container = node_container(statefulset)
    assert container["lifecycle"]["preStop"]["exec"]["command"][-1] == "150"
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["storageClassName"] == "fast-ssd"
    assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi"
    # Every pod still names pod 0 as its seed.
    assert env_of(container)["LEVERET_JOIN"]["value"] == f"{RELEASE}-0.{PEER_DOMAIN}:25672"


def test_service_monitor_and_network_policy(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["monitoring-networkpolicy.yaml"]
    monitor = the(manifests, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["interval"]) == (
        "management",
        "/metrics",
        "15s",
    )
    # It selects the headless Service alone, so each pod is scraped once, ready or not.
    selected = monitor["spec"]["selector"]["matchLabels"]
    services = [
        s
        for s in manifests
        if s["kind"] == "Service" and selected.items() <= s["metadata"]["labels"].items()
    ]
    assert [s["metadata"]["name"] for s in services] == [f"{RELEASE}-headless"]

    policy = the(manifests, "NetworkPolicy")["spec"]
    selector = the(manifests, "StatefulSet")["spec"]["selector"]["matchLabels"]
    assert policy["podSelector"] == {"matchLabels": selector}
    peers, clients = policy["ingress"]
    assert peers["from"] == [{"podSelector": {"matchLabels": selector}}]
    assert [p["port"] for p in peers["ports"]] == ["cluster", "data", "management"]
    assert [p["port"] for p in clients["ports"]] == ["amqp", "management"]
    assert clients["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "apps"}}}
    ]
    client = the(manifests, "Service", RELEASE)["spec"]
    assert client["type"] == "LoadBalancer"
    assert client["externalTrafficPolicy"] == "Local"


def test_tls_adds_amqps(rendered: dict[str, list[Manifest]]) -> None:
    manifests = rendered["tls.yaml"]
    statefulset = the(manifests, "StatefulSet")
    container = node_container(statefulset)
    assert {p["name"]: p["containerPort"] for p in container["ports"]}["amqps"] == 5671
    for service in (RELEASE, f"{RELEASE}-headless"):
        ports = {p["name"]: p["port"] for p in the(manifests, "Service", service)["spec"]["ports"]}
        assert ports["amqps"] == 5671
    settings = tomllib.loads(toml_of(manifests))
    assert settings["amqps_port"] == 5671
    assert settings["ssl_options"] == {
        "certfile": "/etc/leveret/tls/tls.crt",
        "keyfile": "/etc/leveret/tls/tls.key",
    }
    (etc,) = [v for v in statefulset["spec"]["template"]["spec"]["volumes"] if v["name"] == "etc"]
    tls = [s["secret"] for s in etc["projected"]["sources"] if "secret" in s][-1]
    assert tls["name"] == "leveret-tls"
    assert [i["path"] for i in tls["items"]] == ["tls/tls.crt", "tls/tls.key"]
    clients = the(manifests, "NetworkPolicy")["spec"]["ingress"][1]
    assert "from" not in clients  # no allowedClients: anyone
    assert [p["port"] for p in clients["ports"]] == ["amqp", "amqps", "management"]


def test_without_tls_there_is_no_amqps(rendered: dict[str, list[Manifest]]) -> None:
    for values_file in VALUES_FILES:
        if values_file == "tls.yaml":
            continue
        text = json.dumps(rendered[values_file])
        assert "5671" not in text and "ssl_options" not in text


def test_notes_say_how_to_connect(helm: ModuleType) -> None:
    notes = render_raw(helm, None)["leveret/templates/NOTES.txt"]
    assert f"kubectl -n {NAMESPACE} port-forward service/{RELEASE} 5672:5672 15672:15672" in notes
    assert f"get secret {RELEASE} -o jsonpath='{{.data.default-pass}}' | base64 -d" in notes
    assert f"leveret ctl forget_cluster_node leveret@{RELEASE}-<ordinal>.{PEER_DOMAIN}" in notes


def test_federation_from_values_reaches_every_node_as_definitions(
    rendered: dict[str, list[Manifest]],
) -> None:
    manifests = rendered["federation.yaml"]
    secret = the(manifests, "Secret", "leveret-definitions")
    document = json.loads(base64.b64decode(secret["data"]["definitions.json"]))
    assert document["parameters"] == [
        {
            "component": "federation-upstream",
            "vhost": "/",
            "name": "origin",
            "value": {
                "uri": [
                    "amqp://user:secret@origin-0.example:5672",
                    "amqp://user:secret@origin-1.example:5672",
                ],
                "ack-mode": "on-confirm",
                "prefetch-count": 500,
            },
        }
    ]
    assert document["policies"] == [
        {
            "name": "federate-jobs",
            "vhost": "/",
            "pattern": "^jobs\\.",
            "apply-to": "queues",
            "priority": 0,
            "definition": {"federation-upstream": "origin"},
        }
    ]
    assert [queue["name"] for queue in document["queues"]] == ["jobs.main"]
    # The credentials stay out of the ConfigMap, which only says where the file is.
    toml = toml_of(manifests)
    assert 'load_definitions = "/etc/leveret/definitions.json"' in toml and "secret" not in toml
    [volume] = [
        v
        for v in the(manifests, "StatefulSet")["spec"]["template"]["spec"]["volumes"]
        if v["name"] == "etc"
    ]
    sources = [source.get("secret", {}).get("name") for source in volume["projected"]["sources"]]
    assert "leveret-definitions" in sources
    # Without federation values there is no definitions Secret and nothing to load.
    assert "load_definitions" not in toml_of(rendered["defaults.yaml"])
    assert not [
        m for m in rendered["defaults.yaml"] if m["metadata"]["name"] == "leveret-definitions"
    ]
