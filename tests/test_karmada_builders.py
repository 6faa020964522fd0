"""Karmada and Kruise builders: chart values, join objects, applications, placement. Pure data.

Upstream references for the expected values (fetched snapshots, read with `git show <tag>:<path>`):
- karmada-io/karmada v1.18.2 (0533b555): charts/karmada/values.yaml and templates/,
  pkg/karmadactl/join/join.go, pkg/util/credential.go, pkg/util/names/names.go.
- openkruise/charts kruise-1.9.0-alpha4 (d31574a1) and kruise-1.8.3 (cfa309b0):
  versions/kruise/<v>/values.yaml and templates/manager.yaml.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from builders import applications as apps
from builders import karmada as kb
from builders import karmada_members as km
from builders import kruise as kr
from builders.manifest import KARMADA_TARGET, Manifest
from checks.karmada import placement_report
from checks.stack import load_from_file, parse_fleet
from config.karmada import KarmadaSettings, KruiseSettings, ResourceName
from config.loader import kruise_crd_files
from config.models import FleetConfig
from testkit import crdschema
from testkit.mocks import FAKE_KUBECONFIG
from testkit.repo import ROOT
from testkit.shared.karmada_config import BASE
from upstream.aks import CRITICAL_ADDONS_TAINT, GPU_RESOURCE, VIRTUAL_NODE_LABELS
from upstream.karmada import kruise_app_version

KARMADA = ("karmada", "v1.18.2")
KRUISE = ("kruise", "v1.9.0")


def dev() -> FleetConfig:
    return load_from_file("dev")[0]


def fleet_of(raw: dict[str, Any]) -> FleetConfig:
    return parse_fleet(raw)[0]


def with_app(**changes: Any) -> FleetConfig:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["applications"][0].update(changes)
    return fleet_of(raw)


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m.kind == kind]


# --- schemas ----------------------------------------------------------------------------------


def schema_for(kind: str) -> tuple[str, str] | None:
    if kind in ("PropagationPolicy", "ResourceInterpreterCustomization", "Cluster"):
        return KARMADA
    if kind == "UnitedDeployment":
        return KRUISE
    return None


def every_variant() -> list[FleetConfig]:
    """dev, plus every template kind and every subset feature on the BASE fleet."""
    fleets = [dev()]
    for kind in ("deployment", "cloneSet", "statefulSet", "advancedStatefulSet"):
        raw = copy.deepcopy(BASE)
        app = raw["karmada"]["applications"][0]
        app["template"] = {
            "kind": kind,
            "image": "nginx:1.27",
            "containerName": "web",
            "ports": [80, 443],
            "resources": {
                "requests": {"cpu": "50m", "memory": "64Mi"},
                "limits": {"memory": "128Mi"},
            },
            "labels": {"team": "a"},
        }
        app["subsets"] = [
            {
                "name": "zone-1",
                "replicas": 1,
                "nodeSelectorTerm": {
                    "matchExpressions": [
                        {
                            "key": "topology.kubernetes.io/zone",
                            "operator": "In",
                            "values": ["westeurope-1"],
                        },
                        {"key": "gpu", "operator": "DoesNotExist"},
                    ]
                },
                "tolerations": [
                    {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30}
                ],
            },
            {"name": "virtual", "replicas": "50%", "virtualNodes": True},
            {"name": "rest", "virtualNodes": False},
        ]
        if kind == "cloneSet":
            raw["karmada"]["failover"] = {
                "enabled": True,
                "purgeMode": "Directly",
                "application": {"tolerationSeconds": 120, "gracePeriodSeconds": 600},
            }
        fleets.append(fleet_of(raw))
    return fleets


def test_every_custom_resource_validates_against_the_pinned_schemas() -> None:
    checked: dict[str, int] = {}
    for fleet in every_variant():
        for manifest in kb.render_karmada(fleet):
            pinned = schema_for(manifest.kind)
            if pinned is None:
                continue
            report = crdschema.validate(manifest.obj, *pinned)
            assert report.errors == [], (manifest.kind, manifest.name, report.errors)
            assert report.skipped == [], report.skipped
            checked[manifest.kind] = checked.get(manifest.kind, 0) + 1
    assert checked == {
        "Cluster": 10,
        "ResourceInterpreterCustomization": 5,
        "PropagationPolicy": 5,
        "UnitedDeployment": 5,
    }


def test_schema_check_catches_a_misspelt_enum() -> None:
    """`Duplicate`, as a comment of the Karmada + OpenKruise walk-through spells it, is refused:
    the CRD enum is `Duplicated`."""
    settings = kb.settings_of(dev())
    policy = apps.propagation_policy(settings.applications[0], settings.failover)
    policy["spec"]["placement"]["replicaScheduling"]["replicaSchedulingType"] = "Duplicate"
    errors = crdschema.validate(policy, *KARMADA).errors
    assert any("replicaSchedulingType" in e for e in errors), errors


# --- applications -----------------------------------------------------------------------------


def test_propagation_policy_is_divided_weighted_with_the_seed_weights() -> None:
    (policy,) = of_kind(kb.render_karmada(dev()), "PropagationPolicy")
    assert policy.target == KARMADA_TARGET
    spec = policy.obj["spec"]
    assert spec["placement"] == {
        "clusterAffinity": {"clusterNames": ["worker-1", "worker-2"]},
        "replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {
                "staticWeightList": [
                    {"targetCluster": {"clusterNames": ["worker-1"]}, "weight": 1},
                    {"targetCluster": {"clusterNames": ["worker-2"]}, "weight": 2},
                ]
            },
        },
    }
    # Karmada's validating webhook rejects selectors outside the policy's namespace.
    for selector in spec["resourceSelectors"]:
        assert selector["namespace"] == policy.obj["metadata"]["namespace"] == "sample"
    assert spec["resourceSelectors"] == [
        {
            "apiVersion": "apps.kruise.io/v1alpha1",
            "kind": "UnitedDeployment",
            "namespace": "sample",
            "name": "sample-ud",
        },
        # dev's template is a StatefulSet: its governing Service goes along.
        {"apiVersion": "v1", "kind": "Service", "namespace": "sample", "name": "sample-ud"},
    ]


def test_united_deployment_is_the_seed_application() -> None:
    (ud,) = of_kind(kb.render_karmada(dev()), "UnitedDeployment")
    spec = ud.obj["spec"]
    assert ud.obj["metadata"]["namespace"] == "sample"
    assert spec["replicas"] == 6  # set explicitly: Karmada's GetReplicas fails on nil
    assert list(spec["template"]) == ["statefulSetTemplate"]
    workload = spec["template"]["statefulSetTemplate"]["spec"]
    assert workload["serviceName"] == "sample-ud"
    # Kruise adds the subset label to matchLabels: they must exist and select the pods.
    assert (
        workload["selector"]
        == spec["selector"]
        == {"matchLabels": {"app.kubernetes.io/name": "sample-ud"}}
    )
    pod = workload["template"]
    assert pod["metadata"]["labels"]["app.kubernetes.io/name"] == "sample-ud"
    (container,) = pod["spec"]["containers"]
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "50Mi"},
        "limits": {"cpu": "50m", "memory": "50Mi"},
    }
    subset_a, subset_b = spec["topology"]["subsets"]
    assert subset_a == {
        "name": "subset-a",
        "nodeSelectorTerm": {
            "matchExpressions": [
                {"key": "type", "operator": "NotIn", "values": ["virtual-kubelet"]}
            ]
        },
        "replicas": "50%",
    }
    assert subset_b == {
        "name": "subset-b",
        "nodeSelectorTerm": {
            "matchExpressions": [
                {"key": k, "operator": "In", "values": [v]} for k, v in VIRTUAL_NODE_LABELS.items()
            ]
        },
        # Both taints the AKS virtual-node docs tolerate, the provider's and azure.com/aci.
        "tolerations": [
            {"key": "virtual-kubelet.io/provider", "operator": "Exists"},
            {"key": "azure.com/aci", "operator": "Exists", "effect": "NoSchedule"},
        ],
    }


def test_subset_without_virtual_nodes_setting_adds_nothing() -> None:
    fleet = with_app(subsets=[{"name": "a", "replicas": 2}, {"name": "b"}])
    ud = apps.united_deployment(kb.settings_of(fleet).applications[0])
    assert ud["spec"]["topology"]["subsets"] == [{"name": "a", "replicas": 2}, {"name": "b"}]


def test_deployment_template_has_no_service_name() -> None:
    fleet = with_app(template={"image": "nginx:1.27"})
    ud = apps.united_deployment(kb.settings_of(fleet).applications[0])
    assert list(ud["spec"]["template"]) == ["deploymentTemplate"]
    assert "serviceName" not in ud["spec"]["template"]["deploymentTemplate"]["spec"]


def test_application_namespaces_are_created_once_on_karmada_only() -> None:
    raw = copy.deepcopy(BASE)
    second = copy.deepcopy(raw["karmada"]["applications"][0]) | {"name": "other"}
    third = copy.deepcopy(second) | {"name": "third", "namespace": "default"}
    raw["karmada"]["applications"] += [second, third]
    # `default` is refused under scoped member access (no Pod Security level there); wildcard
    # access takes it.
    raw["karmada"]["memberAccess"] = "wildcard"
    manifests = kb.render_karmada(fleet_of(raw))
    namespaces = [m for m in of_kind(manifests, "Namespace") if m.target == KARMADA_TARGET]
    # `default` exists everywhere; others are synced to every member by Karmada itself. Not
    # `karmada-cluster`: the chart makes it, and creating it again fails with AlreadyExists.
    assert sorted(m.name for m in namespaces) == ["sample"]


# --- member registration ----------------------------------------------------------------------


def test_member_objects_are_what_karmadactl_join_creates() -> None:
    wildcard = KarmadaSettings.model_validate({"memberAccess": "wildcard"})
    manifests = km.member_objects("worker-1", wildcard)
    assert {m.target for m in manifests} == {"worker-1"}
    objs = {(m.kind, m.name): m.obj for m in manifests}
    # Each object names what must exist first: the namespace, a token's account, a role.
    needs = {m.key: m.needs for m in manifests}
    assert needs["Secret/karmada-cluster/karmada-worker-1"] == (
        "Namespace/karmada-cluster",
        "ServiceAccount/karmada-cluster/karmada-worker-1",
    )
    assert needs["ClusterRoleBinding/karmada-controller-manager:karmada-worker-1"] == (
        "ClusterRole/karmada-controller-manager:karmada-worker-1",
    )
    assert list(objs) == [
        ("Namespace", "karmada-cluster"),
        ("ServiceAccount", "karmada-impersonator"),
        ("Secret", "karmada-impersonator"),
        ("ServiceAccount", "karmada-worker-1"),
        ("Secret", "karmada-worker-1"),
        ("ClusterRole", "karmada-controller-manager:karmada-worker-1"),
        ("ClusterRoleBinding", "karmada-controller-manager:karmada-worker-1"),
    ]
    for obj in objs.values():
        assert obj["metadata"]["labels"] == {"karmada.io/system": "true"}
    for account in ("karmada-impersonator", "karmada-worker-1"):
        secret = objs[("Secret", account)]
        assert secret["type"] == "kubernetes.io/service-account-token"
        assert secret["metadata"]["namespace"] == "karmada-cluster"
        assert secret["metadata"]["annotations"] == {
            "kubernetes.io/service-account.name": account,
            # The provider waits for the token controller before the credential reads it.
            "pulumi.com/waitFor": "jsonpath={.data.token}",
        }
        assert "data" not in secret  # the token controller fills it
    # util.ClusterPolicyRules at v1.18.2: everything, plus GET on every non-resource URL.
    role = objs[("ClusterRole", "karmada-controller-manager:karmada-worker-1")]
    assert role["rules"] == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["get"]},
    ]
    binding = objs[("ClusterRoleBinding", "karmada-controller-manager:karmada-worker-1")]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "karmada-controller-manager:karmada-worker-1",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "karmada-worker-1", "namespace": "karmada-cluster"}
    ]
    # The impersonator account gets no RBAC from join: the unified-auth controller grants it.
    assert not any(
        s["name"] == "karmada-impersonator"
        for o in objs.values()
        if o["kind"] == "ClusterRoleBinding"
        for s in o["subjects"]
    )


def test_control_plane_side_of_registration() -> None:
    manifests = kb.render_karmada(dev())
    on_karmada = [m for m in manifests if m.target == KARMADA_TARGET]
    secrets = {m.name: m.obj for m in of_kind(on_karmada, "Secret")}
    # memberAccess: scoped (dev's): no impersonator, so unified auth leaves the members alone.
    assert set(secrets) == {"worker-1", "worker-2"}
    assert set(secrets["worker-1"]["data"]) == {"token", "caBundle"}
    for secret in secrets.values():
        assert secret["metadata"]["namespace"] == "karmada-cluster"
        assert set(secret["data"].values()) == {kb.REDACTED}  # nothing real offline
    clusters = {m.name: m.obj for m in of_kind(on_karmada, "Cluster")}
    assert clusters["worker-2"]["spec"] == {
        "syncMode": "Push",
        "apiEndpoint": "https://worker-2.aks-fqdn.invalid:443",
        "secretRef": {"namespace": "karmada-cluster", "name": "worker-2"},
        "region": "westeurope",
    }
    member_targets = {m.target for m in manifests} - {KARMADA_TARGET}
    assert member_targets == {"worker-1", "worker-2"}


def test_credential_secret_carries_the_member_token_and_ca() -> None:
    token = base64.b64encode(b"jwt").decode()
    ca = base64.b64encode(b"pem").decode()
    secret = km.credential_secret("worker-1", token=token, ca_bundle=ca)
    assert secret["data"] == {"token": token, "caBundle": ca}
    assert km.impersonator_secret("worker-1", token=token)["data"] == {"token": token}


def test_rewrite_kubeconfig_server() -> None:
    doc = FAKE_KUBECONFIG.format(name="karmada-apiserver")
    out = yaml.safe_load(kb.rewrite_kubeconfig_server(doc, "https://20.1.2.3:5443"))
    assert [c["cluster"]["server"] for c in out["clusters"]] == ["https://20.1.2.3:5443"]
    assert out["users"] == yaml.safe_load(doc)["users"]
    assert out["current-context"] == "karmada-apiserver"


# --- Karmada chart ----------------------------------------------------------------------------


def test_karmada_values_public() -> None:
    raw = copy.deepcopy(BASE)
    raw["karmada"]["apiServer"] |= {"dnsLabel": "fleet-karmada"}
    fleet = fleet_of(raw)
    values = kb.karmada_values(fleet, address="20.1.2.3", resource_group="MC_rg_manager_we")
    assert values["installMode"] == "host"
    hosts = values["certs"]["auto"]["hosts"]
    # The chart's defaults stay (the control plane talks to itself by them), then our names.
    assert hosts[: len(kb.CHART_CERT_HOSTS)] == list(kb.CHART_CERT_HOSTS)
    assert hosts[len(kb.CHART_CERT_HOSTS) :] == [
        "20.1.2.3",
        "fleet-karmada.westeurope.cloudapp.azure.com",
    ]
    api = values["apiServer"]
    assert api["serviceType"] == "LoadBalancer"
    assert api["serviceAnnotations"] == {
        "service.beta.kubernetes.io/azure-pip-name": "manager-karmada-apiserver",
        "service.beta.kubernetes.io/azure-load-balancer-resource-group": "MC_rg_manager_we",
        "service.beta.kubernetes.io/azure-allowed-ip-ranges": "203.0.113.0/24",
    }
    assert values["etcd"] == {
        "mode": "internal",
        "internal": {
            "replicaCount": 1,
            "storageType": "pvc",
            "pvc": {"storageClass": "managed-csi", "size": "8Gi"},
            "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        },
    }


def test_karmada_values_internal() -> None:
    raw = copy.deepcopy(BASE)
    raw["clusters"][0]["network"] = {"mode": "nodeSubnet"}
    raw["karmada"]["apiServer"] = {"exposure": "internal", "internalIp": "10.224.0.50"}
    fleet = fleet_of(raw)
    (release,) = kb.karmada_releases(fleet)
    assert release.values["apiServer"]["serviceAnnotations"] == {
        "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
        "service.beta.kubernetes.io/azure-load-balancer-ipv4": "10.224.0.50",
    }
    assert "10.224.0.50" in release.values["certs"]["auto"]["hosts"]


def test_every_karmada_pod_tolerates_the_system_pool_taint() -> None:
    """A manager may have only its CriticalAddonsOnly system pool (dev does)."""
    values = kb.karmada_values(dev(), address="20.1.2.3", resource_group="g")
    key = CRITICAL_ADDONS_TAINT.partition("=")[0]
    for section in (*kb.COMPONENTS, *kb.HOOK_JOBS):
        assert values[section]["tolerations"] == [{"key": key, "operator": "Exists"}], section
    assert values["etcd"]["internal"]["tolerations"] == [{"key": key, "operator": "Exists"}]


def test_karmada_release_is_pinned_and_on_the_host() -> None:
    (release,) = kb.karmada_releases(dev())
    assert release.target == "manager"
    assert (release.chart, release.version) == ("oci://docker.io/karmada/karmada", "v1.18.2")
    assert (release.release, release.namespace) == ("karmada", "karmada-system")
    # The kubeconfig Secret the component reads: <release>-kubeconfig, key kubeconfig.
    assert (kb.KUBECONFIG_SECRET, kb.KUBECONFIG_KEY) == ("karmada-kubeconfig", "kubeconfig")
    assert kb.karmada_releases(fleet_of({k: v for k, v in BASE.items() if k != "karmada"})) == []


# --- Kruise chart -----------------------------------------------------------------------------


def test_kruise_releases_one_per_member() -> None:
    releases = kb.kruise_releases(dev())
    assert [r.target for r in releases] == ["worker-1", "worker-2"]
    for release in releases:
        assert (release.chart, release.repo) == ("kruise", "https://openkruise.github.io/charts")
        assert release.version == "1.9.0"
        assert release.release == "kruise"


def test_kruise_values() -> None:
    settings = KruiseSettings.model_validate(
        {"featureGates": {"PodWebhook": False, "ImagePullJobGate": True}, "managerReplicas": 3}
    )
    values = kr.kruise_values(settings, on_aks=True)
    assert values["featureGates"] == "ImagePullJobGate=true,PodWebhook=false"
    assert values["manager"]["replicas"] == 3
    assert values["manager"]["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    # The chart default gate survives a config that sets other gates.
    other = KruiseSettings.model_validate({"featureGates": {"KruiseDaemon": True}})
    assert (
        kr.kruise_values(other, on_aks=True)["featureGates"]
        == "ImagePullJobGate=true,KruiseDaemon=true"
    )
    assert (
        kr.kruise_values(KruiseSettings(), on_aks=True)["featureGates"] == "ImagePullJobGate=true"
    )


def test_kruise_daemon_stays_off_virtual_nodes() -> None:
    """What the pinned chart does, and what we rely on.

    versions/kruise/1.9.0-alpha.4/templates/manager.yaml renders the kruise-daemon DaemonSet with
    a hard-coded `tolerations: [{operator: Exists}]`: it tolerates every taint, including AKS
    virtual nodes' `virtual-kubelet.io/provider`. Only `daemon.affinity` keeps it off them, and
    the chart's default (values.yaml since 1.7.0, unchanged in 1.8.3 and 1.9.0-alpha4) is a
    required `type NotIn [virtual-kubelet]`. We set that same value explicitly, so a chart whose
    default differs cannot put the daemon (hostNetwork, CRI socket) on ACI.
    """
    affinity = kr.kruise_values(KruiseSettings(), on_aks=True)["daemon"]["affinity"]
    assert affinity == kr.CHART_DAEMON_AFFINITY
    (term,) = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    (expression,) = term["matchExpressions"]
    # The label AKS virtual nodes carry (builders.aks) is the one the chart excludes.
    assert expression == {
        "key": "type",
        "operator": "NotIn",
        "values": [VIRTUAL_NODE_LABELS["type"]],
    }


def test_kruise_makes_its_own_labelled_namespace() -> None:
    """The chart's kruise-system carries `control-plane: openkruise`, which its pod webhook
    (failurePolicy Fail) skips; a `--create-namespace` namespace would not, and kruise-manager's
    own pods would wait on the webhook they serve. So the chart creates it, and the release
    record goes to `default`, as upstream's README installs it."""
    release = kr.kruise_release("worker-1", KruiseSettings(), on_aks=True)
    assert release.values["installation"] == {"namespace": "kruise-system", "createNamespace": True}
    assert release.namespace == "default"


def test_karmada_gets_the_united_deployment_crd_of_the_members_kruise_release() -> None:
    fleet = load_from_file("dev")[0]
    assert fleet.karmada is not None
    (path,) = kruise_crd_files(fleet, ROOT)
    pins = json.loads((ROOT / "scripts" / "crd-pins.json").read_text())
    pinned = pins["projects"]["kruise"]["v1.9.0"]
    assert pinned["tag"] == kruise_app_version(fleet.karmada.kruise.chart_version) == "v1.9.0"
    assert path == str(crdschema.schema_dir(*KRUISE) / "apps.kruise.io_uniteddeployments.yaml")
    # The pinned copy of the members' release: one served version, no conversion webhook
    # (nothing on the Karmada API server could answer one).
    crd = yaml.safe_load(Path(path).read_text())
    assert [v["name"] for v in crd["spec"]["versions"] if v["served"]] == ["v1alpha1"]
    assert "conversion" not in crd["spec"]


# --- where replicas land ----------------------------------------------------------------------


def test_placement_report_for_the_seed() -> None:
    (report,) = placement_report(dev())
    assert (report.namespace, report.name) == ("sample", "sample-ud")
    assert dict(report.plan.members) == {"worker-1": 2, "worker-2": 4}
    assert {m: dict(s) for m, s in report.plan.member_subsets.items()} == {
        "worker-1": {"subset-a": 1, "subset-b": 1},
        "worker-2": {"subset-a": 2, "subset-b": 2},
    }
    assert dict(report.plan.subsets) == {"subset-a": 3, "subset-b": 3}
    assert report.virtual_subsets == ("subset-b",)
    assert report.uid_dependent is False
    assert report.rows() == [
        ("worker-1", "subset-a", 1, False),
        ("worker-1", "subset-b", 1, True),
        ("worker-2", "subset-a", 2, False),
        ("worker-2", "subset-b", 2, True),
    ]


@pytest.mark.parametrize(
    ("replicas", "weights", "uid_dependent"),
    [(3, {"worker-1": 1, "worker-2": 1}, True), (4, {"worker-1": 1, "worker-2": 1}, False)],
)
def test_placement_report_flags_exact_ties(
    replicas: int, weights: dict[str, int], uid_dependent: bool
) -> None:
    """An odd replica count over equal weights: which member gets the extra one depends on the
    FNV-32a of the UnitedDeployment's UID, known only once it exists."""
    fleet = with_app(replicas=replicas, propagation={"weights": weights})
    (report,) = placement_report(fleet)
    assert report.uid_dependent is uid_dependent
    assert sum(report.plan.members.values()) == replicas


def test_a_statefulset_template_brings_its_headless_service() -> None:
    """`serviceName` must name a Service that exists where the pods run: the app makes one,
    headless, selecting its pods, on the policy that spreads the UnitedDeployment."""
    manifests = kb.render_karmada(dev())
    (ud,) = [m.obj for m in manifests if m.kind == "UnitedDeployment"]
    (service,) = [m.obj for m in manifests if m.kind == "Service"]
    workload = ud["spec"]["template"]["statefulSetTemplate"]["spec"]
    assert service["metadata"]["name"] == workload["serviceName"] == "sample-ud"
    assert service["metadata"]["namespace"] == "sample"
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": {"app.kubernetes.io/name": "sample-ud"},
        "ports": [{"name": "p80", "port": 80}],
    }
    assert set(service["spec"]["selector"].items()) <= set(
        ud["spec"]["template"]["statefulSetTemplate"]["metadata"]["labels"].items()
    )


def test_a_deployment_template_has_no_service_name_and_no_service() -> None:
    fleet = with_app(template={"kind": "deployment", "image": "nginx"})
    app = kb.settings_of(fleet).applications[0]
    assert apps.headless_service(app) is None
    ud = apps.united_deployment(app)
    assert "serviceName" not in ud["spec"]["template"]["deploymentTemplate"]["spec"]


def test_a_subset_may_ask_for_the_gpu_resource_the_device_plugin_advertises() -> None:
    """A type's Literal cannot name a constant: this holds config's spelling to upstream's."""
    assert GPU_RESOURCE in get_args(ResourceName)
