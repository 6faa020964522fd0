"""The Azure twin's nodes, offline: what the program's Azure requests become as nodes
(testkit/realtier/azure_nodes.py), the stand-in kubelogin's convert-kubeconfig and Kueue's
webhooks on loopback (docs/testing.md, "The Azure twin"). The real tier runs them
(tests/realtier/test_azure_twin.py); here the mapping itself is judged."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.azure import azure_requests
from builders.fleet import kueue_objects
from config.resolve import custom_shapes
from testkit.realtier import azure_nodes
from testkit.realtier.azure_nodes import (
    ClusterRequest,
    PoolRequest,
    cluster_request,
    group_template,
    pool_request,
    template_node,
)
from testkit.realtier.harness import ControlPlane, StartError, Tools
from testkit.realtier.kubelogin_standin import convert
from testkit.realtier.kueue_webhooks import webhook_configurations
from testkit.realtier.twin import load_stack, stacks
from upstream.aks import SPOT_LABEL, SPOT_TAINT

MC = "azure-native:containerservice:ManagedCluster"
POOL = "azure-native:containerservice:AgentPool"
# Values that are maps of names the engine sends as written (not camelCased).
_VERBATIM = ("node_labels", "tags")


def _engine(value: Any, key: str = "") -> Any:
    """A builder's inputs as the engine sends them: camelCase property names, all the way down
    (the names inside labels and tags stay)."""
    if isinstance(value, Mapping) and key not in _VERBATIM:
        return {_camel(str(k)): _engine(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_engine(v) for v in value]
    return json.loads(json.dumps(value))


def _camel(key: str) -> str:
    first, *rest = key.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _requested(stack: str) -> dict[str, tuple[ClusterRequest, list[PoolRequest]]]:
    """Cluster -> its request and every pool the program asks AKS for (System pool first)."""
    out: dict[str, tuple[ClusterRequest, list[PoolRequest]]] = {}
    requests = azure_requests(load_stack(stack), stack)
    for r in requests:
        if r.token == MC:
            inputs = _engine(r.inputs)
            request = cluster_request(inputs)
            out[str(inputs["resourceName"])] = (request, list(request.system_pools))
    for r in requests:
        if r.token == POOL:
            inputs = _engine(r.inputs)
            out[str(inputs["resourceName"])][1].append(pool_request(inputs))
    return out


def _tolerated(taint: Mapping[str, str], tolerations: list[Mapping[str, str]]) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, taint["effect"]):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value") == taint.get("value"):
            return True
    return False


@pytest.mark.parametrize("stack", stacks())
def test_every_pool_bound_flavor_matches_nodes_the_program_asks_azure_for(stack: str) -> None:
    """Each ResourceFlavor the program renders with nodeLabels has a pool, among those its
    Azure requests make on that cluster, whose nodes carry those labels and whose taints the
    flavor tolerates: the fit the Azure twin's job test relies on."""
    fleet = load_stack(stack)
    requested = _requested(stack)
    assert requested, stack
    shapes = custom_shapes(fleet)
    flavors = [
        (m.target, m.obj)
        for ms in kueue_objects(fleet).values()
        for m in ms
        if m.obj.get("kind") == "ResourceFlavor" and m.obj.get("spec", {}).get("nodeLabels")
    ]
    assert flavors, stack
    for cluster, flavor in flavors:
        request, pools = requested[cluster]
        spec = flavor["spec"]
        fits = []
        for pool in pools:
            node = template_node(request, pool, shapes)
            labels, taints = node["metadata"]["labels"], node["spec"].get("taints") or []
            if spec["nodeLabels"].items() <= labels.items() and all(
                _tolerated(t, spec.get("tolerations") or []) for t in taints
            ):
                fits.append(pool.name)
        assert fits, (stack, cluster, flavor["metadata"]["name"], spec)


def test_a_spot_pool_gets_aks_spot_label_and_taint_even_unrequested() -> None:
    inputs = {
        "agentPoolName": "spot",
        "vmSize": "Standard_D4s_v5",
        "enableAutoScaling": True,
        "minCount": 1,
        "maxCount": 3,
        "scaleSetPriority": "Spot",
        "nodeLabels": {"workload": "batch"},
    }
    pool = pool_request(inputs)
    assert pool.count == 1  # no count: AKS starts an autoscaled pool at minCount
    request = cluster_request({"location": "westeurope", "agentPoolProfiles": []})
    node = template_node(request, pool, {})
    labels = node["metadata"]["labels"]
    assert labels[SPOT_LABEL[0]] == SPOT_LABEL[1]
    assert labels["workload"] == "batch"
    assert labels["kubernetes.azure.com/agentpool"] == labels["agentpool"] == "spot"
    key, rest = SPOT_TAINT.split("=", 1)
    value, effect = rest.split(":")
    assert node["spec"]["taints"] == [{"key": key, "value": value, "effect": effect}]
    template = group_template(request, pool, {}, 1)
    annotations = template["metadata"]["annotations"]
    assert annotations["cluster-autoscaler.kwok.nodegroup/min-count"] == "1"
    assert annotations["cluster-autoscaler.kwok.nodegroup/max-count"] == "3"


def test_the_autoscaler_profile_gives_scale_down_times_or_aks_defaults() -> None:
    set_ = cluster_request(
        {"autoScalerProfile": {"scaleDownUnneededTime": "5m", "expander": "least-waste"}}
    )
    assert set_.scale_down == (
        "--scale-down-unneeded-time=5m",
        "--scale-down-delay-after-add=10m",
    )
    assert set_.expander == "least-waste"
    assert cluster_request({}).scale_down[0] == "--scale-down-unneeded-time=10m"


def _aks_kubeconfig() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "users": [
            {
                "name": "clusterUser_rg_manager",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "kubelogin",
                        "args": [
                            "get-token",
                            "--environment",
                            "AzurePublicCloud",
                            "--server-id",
                            "6dae42f8-4368-4678-94ff-3960e28e3630",
                            "--client-id",
                            "04b07795-8ddb-461a-bbee-02f9e1bf7b46",
                            "--tenant-id",
                            "t",
                            "--login",
                            "devicecode",
                        ],
                        "installHint": "kubelogin is not installed",
                    }
                },
            },
            {"name": "admin", "user": {"token": "x"}},
        ],
    }


def test_kubelogin_converts_aks_devicecode_users_to_azurecli() -> None:
    doc = convert(_aks_kubeconfig(), "azurecli")
    converted, untouched = doc["users"]
    assert converted["user"]["exec"]["args"] == [
        "get-token",
        "--login",
        "azurecli",
        "--server-id",
        "6dae42f8-4368-4678-94ff-3960e28e3630",
    ]
    assert converted["user"]["exec"]["installHint"] == "kubelogin is not installed"
    assert untouched == {"name": "admin", "user": {"token": "x"}}
    with pytest.raises(ValueError, match="not modelled"):
        convert(_aks_kubeconfig(), "spn")


def test_kueue_job_webhooks_point_at_the_local_kueue(tmp_path: Path) -> None:
    hook = {
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "webhook-service", "path": "/mutate-batch-v1-job"}},
        "failurePolicy": "Fail",
        "name": "mjob.kb.io",
        "rules": [{"apiGroups": ["batch"], "resources": ["jobs"], "operations": ["CREATE"]}],
        "sideEffects": "None",
    }
    other = {**hook, "name": "mjobset.kb.io"}
    other["rules"] = [{"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"]}]
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": {"name": "mutating-webhook-configuration"},
                "webhooks": [hook, other],
            }
        )
    )
    (config,) = webhook_configurations(manifests, ("batch/job",), 9443, b"ca")
    assert config["metadata"]["name"] == "kueue-mutating-webhook-configuration"
    (made,) = config["webhooks"]
    assert made["name"] == "mjob.kb.io"
    assert made["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate-batch-v1-job",
        "caBundle": "Y2E=",
    }
    assert made["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "kube-system",
        "kueue-system",
    ]


def test_a_killed_autoscaler_is_not_taken_for_a_crash_by_a_wait_on_the_same_plane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kill_autoscaler` restarts a plane's autoscaler with a new pool list while another pool's
    create waits on the same plane with `_check_alive`. The wait runs here at the worst moment:
    after SIGKILL, with the process dead. It must find the plane healthy, not report
    "cluster-autoscaler exited with -9"."""
    idle = Path("/bin/true")
    plane = ControlPlane("worker-1", tmp_path, Tools(idle, idle, idle, idle, idle))
    plane._spawn(azure_nodes.TOOL, ["sleep", "60"])  # pyright: ignore[reportPrivateUsage]
    other = plane._spawn("kube-apiserver", ["sleep", "60"])  # pyright: ignore[reportPrivateUsage]
    seen: list[str] = []
    real_killpg = os.killpg

    def killpg_then_wait(pid: int, sig: int) -> None:
        real_killpg(pid, sig)
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped
        try:
            plane._check_alive()  # pyright: ignore[reportPrivateUsage]
        except StartError as error:
            seen.append(str(error))

    monkeypatch.setattr(azure_nodes.os, "killpg", killpg_then_wait)
    try:
        azure_nodes.kill_autoscaler(plane)
        assert seen == []
        assert [p.name for p in plane._processes] == ["kube-apiserver"]  # pyright: ignore[reportPrivateUsage]
    finally:
        plane.stop()
    assert other.popen.poll() is not None
