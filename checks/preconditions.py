"""What the AKS side must provide for provisioning gates to work (warnings, never errors).

Preflight shows these; they are preconditions outside the config, not config mistakes.
"""

from __future__ import annotations

from config.errors import Issue, key_path
from config.models import FleetConfig
from config.resolve import gate_flavors
from upstream.aks import PROVISIONING_REQUEST_SINCE, PROVISIONING_REQUEST_SOURCE
from upstream.k8s import minor_of
from upstream.kueue import KUEUE_NAMESPACE


def provisioning_warnings(fleet: FleetConfig) -> list[Issue]:
    """What the AKS side must provide for each cluster's provisioning gates to work."""
    out: list[Issue] = []
    for i, cluster in enumerate(fleet.clusters):
        q = cluster.queues
        gated = [cq for cq in q.cluster_queues if cq.provisioning_gate is not None]
        if not gated:
            continue
        base = key_path("clusters", i)
        version = fleet.version_of(cluster)
        if minor_of(version) < PROVISIONING_REQUEST_SINCE:
            # From 1.33 the AKS-managed autoscaler serves the API (upstream/aks.py), so no warning
            # there. Were the CRD still missing when Kueue starts, the gate's AdmissionCheck never
            # turns Active and its `pulumi.com/waitFor` fails `pulumi up` (docs/configuration.md
            # "Provisioning gates on AKS" has the check and the restart).
            lowest = ".".join(map(str, PROVISIONING_REQUEST_SINCE))
            out.append(
                Issue(
                    f"{base}.kubernetesVersion",
                    f"{cluster.name!r} has provisioning gates on Kubernetes {version}, but the AKS "
                    "cluster autoscaler serves the ProvisioningRequest API only from "
                    f"{lowest} ({PROVISIONING_REQUEST_SOURCE}): its gated workloads stay pending. "
                    f"Use {lowest} or later; check a live cluster with `kubectl get crd "
                    "provisioningrequests.autoscaling.x-k8s.io`, and if the CRD appeared after "
                    f"Kueue started, `kubectl -n {KUEUE_NAMESPACE} rollout restart "
                    "deploy/kueue-controller-manager`",
                    "warning",
                )
            )
        for j, cq in enumerate(q.cluster_queues):
            if cq.provisioning_gate is None:
                continue
            gate = q.gate(cq.provisioning_gate.name)
            flavors = gate_flavors(q, cq) or cq.flavor_names
            path = f"{base}.queues.clusterQueues[{j}].provisioningGate"
            for name in flavors:
                flavor = q.flavor(name)
                pool = cluster.pool(flavor.pool) if flavor and flavor.pool else None
                if flavor is not None and pool is None:
                    out.append(
                        Issue(
                            path,
                            f"gated flavor {name!r} is not bound to an autoscaled pool (`pool`): "
                            "the autoscaler can only provision nodes for its own pools",
                            "warning",
                        )
                    )
                elif (
                    pool is not None
                    and gate is not None
                    and gate.provisioning_class_name.startswith("check-capacity")
                    and pool.min_count == 0
                ):
                    out.append(
                        Issue(
                            path,
                            f"check-capacity only books nodes that exist; pool {pool.name!r} "
                            "scales from 0, so use best-effort-atomic-scale-up to add nodes",
                            "warning",
                        )
                    )
    return out
