"""Applications on Karmada: a UnitedDeployment each and the PropagationPolicy that spreads it. Pure.

OpenKruise v1.9.0 UnitedDeployment (apps.kruise.io/v1alpha1): one workload template (Deployment,
CloneSet, StatefulSet or Advanced StatefulSet) split over subsets by Kruise inside each member;
Karmada v1.18.2 PropagationPolicy with `Divided` replicas and static weights per member. Virtual
node subsets select AKS virtual nodes by their label and tolerate their taint.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from config.karmada import ApplicationConfig, FailoverConfig, SubsetConfig
from upstream.aks import VIRTUAL_NODE_LABELS, VIRTUAL_NODE_TOLERATIONS

POLICY_API: Final = "policy.karmada.io/v1alpha1"
KRUISE_API: Final = "apps.kruise.io/v1alpha1"
TEMPLATE_KEYS: Final = {
    "deployment": "deploymentTemplate",
    "cloneSet": "cloneSetTemplate",
    "statefulSet": "statefulSetTemplate",
    "advancedStatefulSet": "advancedStatefulSetTemplate",
}
APP_LABEL: Final = "app.kubernetes.io/name"
# Pulumi property paths of a UnitedDeployment's subset placement. Kruise's webhook refuses an
# update that changes them for an existing subset (uniteddeployment_validation.go: "may not be
# changed in an update"); the Karmada API server has no such webhook and accepts it, so every
# member would refuse the Work while `pulumi up` reports success. Changing them replaces the
# UnitedDeployment instead. Kruise pairs old and new subsets by name, Pulumi's paths pair them
# by position: a subset renamed into another's place (e.g. two names swapped) keeps every
# position's term yet changes the term of a name, so a changed name replaces too (the real
# webhook refuses the swap: tests/realtier/test_kruise.py).
SUBSET_PLACEMENT_PATHS: Final = (
    "spec.topology.subsets[*].name",
    "spec.topology.subsets[*].nodeSelectorTerm",
    "spec.topology.subsets[*].tolerations",
)


def _subset(subset: SubsetConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"name": subset.name}
    expressions: list[dict[str, Any]] = []
    if subset.node_selector_term is not None:
        expressions += [
            {
                "key": r.key,
                "operator": r.operator,
                **({"values": list(r.values)} if r.values else {}),
            }
            for r in subset.node_selector_term.match_expressions
        ]
    tolerations = [t.model_dump(by_alias=True, exclude_none=True) for t in subset.tolerations]
    if subset.virtual_nodes:
        expressions += [
            {"key": key, "operator": "In", "values": [value]}
            for key, value in VIRTUAL_NODE_LABELS.items()
        ]
        tolerations += [dict(t) for t in VIRTUAL_NODE_TOLERATIONS]
    elif subset.virtual_nodes is False:
        expressions.append(
            {"key": "type", "operator": "NotIn", "values": [VIRTUAL_NODE_LABELS["type"]]}
        )
    if expressions:
        out["nodeSelectorTerm"] = {"matchExpressions": expressions}
    if tolerations:
        out["tolerations"] = tolerations
    if subset.replicas is not None:
        out["replicas"] = subset.replicas
    return out


def _container(app: ApplicationConfig) -> dict[str, Any]:
    template = app.template
    container: dict[str, Any] = {
        "name": template.container_name or app.name,
        "image": template.image,
    }
    if template.ports:
        container["ports"] = [{"containerPort": port} for port in template.ports]
    resources = {
        key: dict(value)
        for key, value in (
            ("requests", template.resources.requests),
            ("limits", template.resources.limits),
        )
        if value
    }
    if resources:
        container["resources"] = resources
    return container


def governed(app: ApplicationConfig) -> bool:
    """A StatefulSet template names a governing Service (its pods' DNS): the app brings one."""
    return app.template.kind in ("statefulSet", "advancedStatefulSet")


def headless_service(app: ApplicationConfig) -> dict[str, Any] | None:
    """The headless Service a StatefulSet template's `serviceName` refers to, or None.

    Propagated with the UnitedDeployment (same policy) to every member it lands on: without it
    the pods get no stable DNS names (`<pod>.<service>.<namespace>.svc`).
    """
    if not governed(app):
        return None
    spec: dict[str, Any] = {"clusterIP": "None", "selector": {APP_LABEL: app.name}}
    if app.template.ports:
        spec["ports"] = [{"name": f"p{port}", "port": port} for port in app.template.ports]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": app.name, "namespace": app.namespace, "labels": {APP_LABEL: app.name}},
        "spec": spec,
    }


def united_deployment(app: ApplicationConfig) -> dict[str, Any]:
    """The UnitedDeployment on the Karmada API server; Karmada revises spec.replicas per member."""
    selector = {"matchLabels": {APP_LABEL: app.name}}
    labels = {**app.template.labels, APP_LABEL: app.name}
    workload: dict[str, Any] = {
        "selector": selector,
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [_container(app)]}},
    }
    if governed(app):
        workload["serviceName"] = app.name
    return {
        "apiVersion": KRUISE_API,
        "kind": "UnitedDeployment",
        "metadata": {"name": app.name, "namespace": app.namespace, "labels": {APP_LABEL: app.name}},
        "spec": {
            "replicas": app.replicas,
            "selector": selector,
            "template": {
                TEMPLATE_KEYS[app.template.kind]: {"metadata": {"labels": labels}, "spec": workload}
            },
            "topology": {"subsets": [_subset(s) for s in app.subsets]},
        },
    }


# Karmada v1.18.2 (pkg/apis/cluster/v1alpha1/well_known_constants.go): the cluster controller
# taints a NotReady cluster with this key NoSchedule; our ClusterTaintPolicy adds it NoExecute.
NOT_READY_TAINT: Final = "cluster.karmada.io/not-ready"
TAINT_POLICY_API: Final = POLICY_API
FAILOVER_TAINT_POLICY: Final = "fleet-member-not-ready"


def cluster_taint_policy(members: list[str]) -> dict[str, Any]:
    """The ClusterTaintPolicy that taints a member NoExecute while it is not Ready.

    Since v1.14 Karmada adds no NoExecute taint itself ("taint cluster by conditions" is explicit);
    the taint manager then evicts from a tainted member what does not tolerate it (with
    `--enable-no-execute-taint-eviction`). Shape: pkg/apis/policy/v1alpha1/clustertaint_types.go.
    The chart registers no validating webhook for it, so `--allow-no-execute-taint-policy` (a
    karmada-webhook flag the chart cannot set) is not needed.
    """
    return {
        "apiVersion": TAINT_POLICY_API,
        "kind": "ClusterTaintPolicy",
        "metadata": {"name": FAILOVER_TAINT_POLICY},
        "spec": {
            "targetClusters": {"clusterNames": sorted(members)},
            "addOnConditions": [
                {"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}
            ],
            "removeOnConditions": [
                {"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}
            ],
            "taints": [{"key": NOT_READY_TAINT, "effect": "NoExecute"}],
        },
    }


def failover_spec(failover: FailoverConfig) -> dict[str, Any] | None:
    """The policy's `failover` block, or None when failover is off."""
    if not failover.enabled:
        return None
    out: dict[str, Any] = {"cluster": {"purgeMode": failover.purge_mode}}
    application = failover.application
    if application is not None:
        block: dict[str, Any] = {
            "decisionConditions": {"tolerationSeconds": application.toleration_seconds},
            "purgeMode": application.purge_mode,
        }
        if application.grace_period_seconds is not None:
            block["gracePeriodSeconds"] = application.grace_period_seconds
        out["application"] = block
    return out


def propagation_policy(app: ApplicationConfig, failover: FailoverConfig) -> dict[str, Any]:
    """Divided + Weighted with static weights; selector in the policy's own namespace.

    `propagateDeps`: the ConfigMaps, Secrets, ServiceAccount and PVCs the pod template refers to
    (our GetDependencies script) follow the UnitedDeployment to its members, and move with it on
    failover.
    """
    weights = app.propagation.weights
    spec: dict[str, Any] = {"propagateDeps": True}
    failover_block = failover_spec(failover)
    placement: dict[str, Any] = {}
    if failover_block is not None:
        spec["failover"] = failover_block
        # A short NotReady spell (an API server upgrade) does not move anything.
        placement["clusterTolerations"] = [
            {
                "key": NOT_READY_TAINT,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": failover.toleration_seconds,
            }
        ]
    return {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": {"name": app.name, "namespace": app.namespace},
        "spec": spec
        | {
            "resourceSelectors": [
                {
                    "apiVersion": KRUISE_API,
                    "kind": "UnitedDeployment",
                    "namespace": app.namespace,
                    "name": app.name,
                },
                *(
                    [
                        {
                            "apiVersion": "v1",
                            "kind": "Service",
                            "namespace": app.namespace,
                            "name": app.name,
                        }
                    ]
                    if governed(app)
                    else []
                ),
            ],
            "placement": {
                # Only weighted members are candidates: nothing lands on an unweighted member.
                "clusterAffinity": {"clusterNames": sorted(weights)},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {
                        "staticWeightList": [
                            {"targetCluster": {"clusterNames": [member]}, "weight": weight}
                            for member, weight in weights.items()
                        ]
                    },
                },
            }
            | placement,
        },
    }


# Karmada v1.18.2 pkg/apis/policy/v1alpha1/well_known_constants.go: the namespace sync controller
# leaves a namespace with this label alone (namespace_sync_controller.go Reconcile).
SKIP_AUTO_PROPAGATION: Final = "namespace.karmada.io/skip-auto-propagation"


def application_namespaces(
    apps: Iterable[ApplicationConfig], *, propagate: bool = True
) -> list[dict[str, Any]]:
    """Namespaces to create on the Karmada API server.

    `propagate`: Karmada syncs them to every member (which needs a member credential that may
    create, update and delete namespaces); otherwise the program makes them on each member
    (memberAccess: scoped) and they carry the label that keeps Karmada from syncing them.
    """
    names = sorted({a.namespace for a in apps} - {"default"})
    meta: dict[str, Any] = {} if propagate else {"labels": {SKIP_AUTO_PROPAGATION: "true"}}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n} | meta} for n in names
    ]
