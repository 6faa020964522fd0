"""The prod stack's Azure half through the real engine: `pulumi up` against the Azure twin.

The committed `Pulumi.prod.yaml` as written (`source: aks`, mapped as
testkit/realtier/azure_twin_run.py maps every stack), the way test_azure_twin.py runs dev. Prod
adds to what dev exercises: five clusters (a GPU worker), Azure Monitor managed Prometheus (a
workspace, per cluster a data collection endpoint, a rule and the association on the cluster, and
the alert rules as a Prometheus rule group), maintenance configurations on every cluster, Spot
and zonal pools, Standard tier control planes.

- One `up` creates the whole fleet, Azure and Kubernetes halves; the next `up` changes nothing.
- `destroy` removes everything, Azure resources and planes.
(The pool-replace preview is dev's alone: the plugin's replace table is the same for both.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import pytest

from testkit.realtier.azure_twin_run import TwinRun, destroy_all, twin_session, up_twice
from testkit.realtier.harness import Report, Tools

pytestmark = [pytest.mark.real, pytest.mark.slow]

STACK: Final = "prod"
MONITOR_TYPES: Final = {
    "monitor:AzureMonitorWorkspace": 1,
    "monitor:DataCollectionEndpoint": 5,
    "monitor:DataCollectionRule": 5,
    "monitor:DataCollectionRuleAssociation": 5,
    "alertsmanagement:PrometheusRuleGroup": 1,
}


@pytest.fixture(scope="module")
def twin_run(tools: Tools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinRun]:
    with twin_session(STACK, tools, tmp_path_factory.mktemp("azure-twin-prod")) as session:
        yield session


def test_up_creates_the_whole_prod_fleet_and_the_next_up_is_a_no_op(
    twin_run: TwinRun, report: Report
) -> None:
    up_twice(STACK, twin_run, report)
    twin, _, raw = twin_run
    # Azure Monitor: one workspace and rule group, per cluster an endpoint, a rule and the
    # association on that cluster naming that rule.
    assert {t: len(twin.of_type(t)) for t in MONITOR_TYPES} == MONITOR_TYPES
    rules = {r.id for r in twin.of_type("monitor:DataCollectionRule")}
    clusters = {r.id for r in twin.of_type("containerservice:ManagedCluster")}
    links = twin.of_type("monitor:DataCollectionRuleAssociation")
    assert {r.inputs["resourceUri"] for r in links} == clusters
    assert all(r.inputs["dataCollectionRuleId"] in rules for r in links)
    # Maintenance windows: every cluster has its upgrade and node-image windows.
    windows = {
        (r.inputs["resourceName"], r.inputs["configName"])
        for r in twin.of_type("containerservice:MaintenanceConfiguration")
    }
    assert {n for n, _ in windows} == {c["name"] for c in raw["clusters"]}, windows
    assert len(windows) == 2 * len(raw["clusters"]), windows
    spot = [
        r
        for r in twin.of_type("containerservice:AgentPool")
        if r.inputs.get("scaleSetPriority") == "Spot"
    ]
    assert [r.inputs["agentPoolName"] for r in spot] == ["spot"]
    # The NVIDIA device plugin (the stand-in chart through the stand-in repository,
    # testkit/realtier/chart_repo.py): on worker-4 alone, tolerating its GPU pool's taint.
    for c in raw["clusters"]:
        plane = twin.clusters[c["name"]].plane
        found = plane.kubectl("get", "daemonsets", "-n", "kube-system", "-o", "name").stdout.split()
        want = ["daemonset.apps/nvidia-device-plugin"] if c["name"] == "worker-4" else []
        assert found == want, (c["name"], found)
    keys = (
        twin.clusters["worker-4"]
        .plane.kubectl(
            "get",
            "daemonset",
            "-n",
            "kube-system",
            "nvidia-device-plugin",
            "-o",
            "jsonpath={.spec.template.spec.tolerations[*].key}",
        )
        .stdout.split()
    )
    assert "nvidia.com/gpu" in keys, keys


def test_destroy_removes_every_azure_resource_and_plane(twin_run: TwinRun, report: Report) -> None:
    destroy_all(twin_run, report)
