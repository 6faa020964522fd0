"""What the manager's Kueue may do on a worker, per Kueue version (sigs.k8s.io/kueue at v0.17.8 and
v0.19.2): the MultiKueue worker ClusterRole rules (create-multikueue-kubeconfig.sh's table, and the
adapter's own verbs for the kinds whose operator this stack installs), which frameworks have a
MultiKueue adapter, and the split into cluster-wide reads and per-namespace writes.

Adding a Kueue version: its rows here, beside its other facts in upstream/kueue.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

# --------------------------------------------------------------------------------------------
# Worker RBAC: what the manager's Kueue may do on a worker.


@dataclass(frozen=True, slots=True)
class Rule:
    """One ClusterRole rule."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def to_obj(self) -> dict[str, list[str]]:
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


ALWAYS: Final = ""  # table rows every worker gets, whatever the frameworks
GATE_ROW: Final = "gate:"  # table rows a worker gets only with that feature gate on
# Kueue reads the workers' ClusterQueues/LocalQueues only for this alpha gate (off by default):
# without it the remote client has no cache (multikueuecluster.go, newClientWithWatchers).
QUOTA_AUTOMATION_GATE: Final = "MultiKueueManagerQuotaAutomation"
_MANAGE = ("create", "delete", "get", "list", "watch")
_GET = ("get",)


def _rule(group: str, resource: str, verbs: tuple[str, ...]) -> Rule:
    return Rule((group,), (resource,), verbs)


def _job_rules(framework: str, group: str, resource: str) -> tuple[tuple[str, Rule], ...]:
    """The script's pair for one job kind: CDGLW on it, get on its status."""
    return (
        (framework, _rule(group, resource, _MANAGE)),
        (framework, _rule(group, f"{resource}/status", _GET)),
    )


# Rows (framework that needs the rule, ALWAYS, or GATE_ROW + a feature gate; rule), in the
# script's order. Source: the ClusterRole in site/static/examples/multikueue/
# create-multikueue-kubeconfig.sh of github.com/kubernetes-sigs/kueue at tag v0.17.8 (818686e0)
# and v0.19.2 (8eab6877): a generic example for every framework. Narrower than the script on
# purpose: `pods` only with the `pod` framework (cluster-wide pod create runs a pod as any
# ServiceAccount of the worker; only the pod adapter touches pods, as Kueue's own e2e RBAC,
# test/util/multikueue.go, grants it), and the queue reads only with QUOTA_AUTOMATION_GATE.
# Wider on purpose: update/patch on batch Jobs in v0.19.2, where elastic Jobs
# (ElasticJobsViaWorkloadSlices, beta, on) are resized by patching the remote Job
# (job_multikueue_adapter.go, syncElasticJob), as Kueue's e2e RBAC grants.
# v0.17.8's script grants no update/patch on workloads although v0.17.8's MultiKueue updates
# remote Workloads (finalizer removal, priority sync: pkg/controller/admissionchecks/multikueue/
# workload.go); v0.19.2's script added them (#13693). We follow each tag's script as published.
_V0_17_8: tuple[tuple[str, Rule], ...] = (
    *_job_rules("batch/job", "batch", "jobs"),
    ("pod", _rule("", "pods", _MANAGE)),
    *_job_rules("statefulset", "apps", "statefulsets"),
    *_job_rules(
        "leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "leaderworkersets"
    ),
    *_job_rules("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "jobsets"),
    (ALWAYS, _rule("kueue.x-k8s.io", "workloads", _MANAGE)),
    (ALWAYS, _rule("kueue.x-k8s.io", "workloads/status", ("get", "patch", "update"))),
    *_job_rules("kubeflow.org/tfjob", "kubeflow.org", "tfjobs"),
    *_job_rules("kubeflow.org/paddlejob", "kubeflow.org", "paddlejobs"),
    *_job_rules("kubeflow.org/pytorchjob", "kubeflow.org", "pytorchjobs"),
    *_job_rules("kubeflow.org/xgboostjob", "kubeflow.org", "xgboostjobs"),
    *_job_rules("kubeflow.org/mpijob", "kubeflow.org", "mpijobs"),
    *_job_rules("ray.io/rayjob", "ray.io", "rayjobs"),
    *_job_rules("ray.io/raycluster", "ray.io", "rayclusters"),
    *_job_rules("workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "appwrappers"),
)
_V0_19_2: tuple[tuple[str, Rule], ...] = (
    ("batch/job", _rule("batch", "jobs", (*_MANAGE, "update", "patch"))),
    ("batch/job", _rule("batch", "jobs/status", _GET)),
    ("pod", _rule("", "pods", _MANAGE)),
    *_job_rules("statefulset", "apps", "statefulsets"),
    *_job_rules(
        "leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "leaderworkersets"
    ),
    *_job_rules("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "jobsets"),
    (ALWAYS, _rule("kueue.x-k8s.io", "workloads", (*_MANAGE, "update", "patch"))),
    (
        GATE_ROW + QUOTA_AUTOMATION_GATE,
        Rule(("kueue.x-k8s.io",), ("clusterqueues", "localqueues"), ("get", "list", "watch")),
    ),
    (ALWAYS, _rule("kueue.x-k8s.io", "workloads/status", ("get", "patch", "update"))),
    *_job_rules("kubeflow.org/tfjob", "kubeflow.org", "tfjobs"),
    *_job_rules("kubeflow.org/paddlejob", "kubeflow.org", "paddlejobs"),
    *_job_rules("kubeflow.org/pytorchjob", "kubeflow.org", "pytorchjobs"),
    *_job_rules("kubeflow.org/xgboostjob", "kubeflow.org", "xgboostjobs"),
    *_job_rules("kubeflow.org/mpijob", "kubeflow.org", "mpijobs"),
    *_job_rules("ray.io/rayjob", "ray.io", "rayjobs"),
    ("ray.io/raycluster", _rule("ray.io", "rayclusters", (*_MANAGE, "update", "patch"))),
    ("ray.io/raycluster", _rule("ray.io", "rayclusters/status", _GET)),
    *_job_rules("ray.io/rayservice", "ray.io", "rayservices"),
    *_job_rules("workload.codeflare.dev/appwrapper", "workload.codeflare.dev", "appwrappers"),
)
WORKER_RBAC: Final[dict[str, tuple[tuple[str, Rule], ...]]] = {
    "v0.17.8": _V0_17_8,
    "v0.19.2": _V0_19_2,
}

# The kinds whose operator this stack installs (upstream/frameworks.py): the rows a worker gets
# are exactly the verbs Kueue's MultiKueue adapter uses on the remote object, not the script's
# generic pair. v0.19.2, pkg/controller/jobs/ray/ray_multikueue_adapter.go (RayJob, RayCluster):
# SyncJob gets the remote job and creates it, DeleteRemoteObject deletes it, GetEmptyList backs
# the remote watch (list, watch); status is copied from the remote object itself (no `/status`
# read). Only RayCluster wires WithElasticReplicaSync, whose clientutil.Patch patches the remote
# (pkg/util/client/client.go: c.Patch); RayJob creates once. kubeflowjob_multikueue_adapter.go
# (every kubeflow.org kind of the training operator): get, create, delete, list, watch.
_ADAPTER_CDGLW = ("create", "delete", "get", "list", "watch")
ADAPTER_RULES: Final[dict[str, dict[str, tuple[Rule, ...]]]] = {
    "v0.19.2": {
        "ray.io/rayjob": (_rule("ray.io", "rayjobs", _ADAPTER_CDGLW),),
        "ray.io/raycluster": (_rule("ray.io", "rayclusters", (*_ADAPTER_CDGLW, "patch")),),
        **{
            f"kubeflow.org/{kind}": (_rule("kubeflow.org", f"{kind}s", _ADAPTER_CDGLW),)
            for kind in ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
        },
    },
}

# Frameworks with a MultiKueue adapter at the tag (pkg/controller/jobs/**/*_multikueue_adapter.go,
# registered per framework name in jobframework.GetMultiKueueAdapters). The manager opens a watch
# on each enabled one in every worker and marks the worker connected only when all watches are up
# (multikueuecluster.go, updateConfigAndRefreshWatchers), so each needs worker RBAC.
_ADAPTERS_BOTH = frozenset(
    {
        "batch/job",
        "pod",
        "statefulset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
        "jobset.x-k8s.io/jobset",
        "kubeflow.org/tfjob",
        "kubeflow.org/paddlejob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/xgboostjob",
        "kubeflow.org/jaxjob",
        "kubeflow.org/mpijob",
        "trainer.kubeflow.org/trainjob",
        "ray.io/rayjob",
        "ray.io/raycluster",
        "ray.io/rayservice",
        "workload.codeflare.dev/appwrapper",
    }
)
MULTIKUEUE_ADAPTERS: Final[dict[str, frozenset[str]]] = {
    "v0.17.8": _ADAPTERS_BOTH,
    "v0.19.2": _ADAPTERS_BOTH,
}


def kueue_tag(version: str) -> str:
    """'0.19.2' or 'v0.19.2' -> 'v0.19.2' (the key of the tables above)."""
    return version if version.startswith("v") else f"v{version}"


def supported_versions() -> list[str]:
    return sorted(WORKER_RBAC)


def _table(version: str) -> tuple[tuple[str, Rule], ...]:
    tag = kueue_tag(version)
    if tag not in WORKER_RBAC:
        raise ValueError(
            f"no MultiKueue worker RBAC table for Kueue {tag}; known: "
            + ", ".join(supported_versions())
        )
    return WORKER_RBAC[tag]


def worker_rules(
    version: str, frameworks: Iterable[str], feature_gates: Mapping[str, bool] | None = None
) -> list[Rule]:
    """The worker ClusterRole rules for a Kueue version, its frameworks and feature gates."""
    enabled = {*frameworks, *(GATE_ROW + g for g, on in (feature_gates or {}).items() if on)}
    exact = ADAPTER_RULES.get(kueue_tag(version), {})
    rules = [
        rule for fw, rule in _table(version) if fw == ALWAYS or (fw in enabled and fw not in exact)
    ]
    return rules + [rule for fw, rows in exact.items() if fw in enabled for rule in rows]


# Where a worker grants each verb. MultiKueue watches remote objects across namespaces (a list
# with the origin label selector, multikueuecluster.go newClientWithWatchers, v0.19.2), so reads
# stay cluster-wide; it creates, updates and deletes remote Workloads and Jobs only in the
# namespace of the manager's object, and its garbage collector deletes only objects carrying the
# origin label, which exist only there. So write verbs are granted per dispatched namespace.
READ_VERBS: Final = frozenset({"get", "list", "watch"})


def _split(rules: Iterable[Rule], reads: bool) -> list[Rule]:
    out: list[Rule] = []
    for rule in rules:
        verbs = tuple(v for v in rule.verbs if (v in READ_VERBS) == reads)
        if verbs:
            out.append(Rule(rule.api_groups, rule.resources, verbs))
    return out


def worker_read_rules(
    version: str, frameworks: Iterable[str], feature_gates: Mapping[str, bool] | None = None
) -> list[Rule]:
    """The part of `worker_rules` granted cluster-wide: get, list, watch."""
    return _split(worker_rules(version, frameworks, feature_gates), reads=True)


def worker_write_rules(
    version: str, frameworks: Iterable[str], feature_gates: Mapping[str, bool] | None = None
) -> list[Rule]:
    """The part of `worker_rules` granted only in the namespaces dispatched to the worker."""
    return _split(worker_rules(version, frameworks, feature_gates), reads=False)


def frameworks_without_worker_rbac(version: str, frameworks: Iterable[str]) -> list[str]:
    """Enabled frameworks MultiKueue dispatches but the version's script grants nothing for.

    The manager could not watch them on a worker, so the worker would never become Active.
    """
    tag = kueue_tag(version)
    covered = {fw for fw, _ in _table(tag)} | set(ADAPTER_RULES.get(tag, {}))
    adapters = MULTIKUEUE_ADAPTERS[tag]
    return sorted(fw for fw in set(frameworks) if fw in adapters and fw not in covered)
