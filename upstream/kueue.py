"""Per-version facts of Kueue (sigs.k8s.io/kueue at v0.17.8 and v0.19.2): one module to change.

Adding a Kueue version: its CRDs (scripts/crd-pins.json), and the tables below: the version list,
feature gates, locked gates, the chart's manager config, and the MultiKueue worker RBAC and
adapters. Everything that judges or builds Kueue objects reads them from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal

# Versions whose CRDs (scripts/crd-pins.json) and tables (below) the project carries.
KUEUE_VERSIONS = ("0.19.2", "0.17.8")
DEFAULT_KUEUE_VERSION = "0.19.2"
KueueVersion = Literal["0.19.2", "0.17.8"]

# The Kubernetes minors each Kueue version runs on: README "Requires Kubernetes 1.29 or newer",
# and its newest e2e-tested minor (README test matrix; go.mod's k8s.io libraries). v0.19.2: e2e on
# 1.34-1.36, built against k8s.io 0.36.2. v0.17.x (read at v0.17.1; the module proxy does not
# serve v0.17.8): e2e on 1.33-1.35, built against 0.35.3. A cluster newer than the newest tested
# minor runs a Kueue nobody has tested there: checks.upgrades refuses it.
KUEUE_KUBERNETES: Final[dict[str, tuple[tuple[int, int], tuple[int, int]]]] = {
    "0.19.2": ((1, 29), (1, 36)),
    "0.17.8": ((1, 29), (1, 35)),
}

BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
BATCH_JOB = "batch/job"

# Built-in integrations (`FrameworkName` constants under pkg/controller/jobs at v0.17.8 and v0.19.2:
# the same 18 names). Unknown names stop Kueue at startup (config validation, NotSupported).
FRAMEWORKS = (
    "batch/job",
    "deployment",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/jaxjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "pod",
    "ray.io/raycluster",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "sparkoperator.k8s.io/sparkapplication",
    "statefulset",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
)
# The CRD each non-core framework's kind comes from (`<plural>.<group>`, as `kubectl get crd`
# shows it). Kueue defers a local integration whose CRD is absent, but MultiKueue's watch of it
# on a worker fails (multikueuecluster.go, establishWatcher), so the worker never becomes Active.
# batch/job, pod, deployment and statefulset are built-in kinds.
FRAMEWORK_CRDS: Final[dict[str, str]] = {
    "jobset.x-k8s.io/jobset": "jobsets.jobset.x-k8s.io",
    "kubeflow.org/jaxjob": "jaxjobs.kubeflow.org",
    "kubeflow.org/mpijob": "mpijobs.kubeflow.org",
    "kubeflow.org/paddlejob": "paddlejobs.kubeflow.org",
    "kubeflow.org/pytorchjob": "pytorchjobs.kubeflow.org",
    "kubeflow.org/tfjob": "tfjobs.kubeflow.org",
    "kubeflow.org/xgboostjob": "xgboostjobs.kubeflow.org",
    "leaderworkerset.x-k8s.io/leaderworkerset": "leaderworkersets.leaderworkerset.x-k8s.io",
    "ray.io/raycluster": "rayclusters.ray.io",
    "ray.io/rayjob": "rayjobs.ray.io",
    "ray.io/rayservice": "rayservices.ray.io",
    "sparkoperator.k8s.io/sparkapplication": "sparkapplications.sparkoperator.k8s.io",
    "trainer.kubeflow.org/trainjob": "trainjobs.trainer.kubeflow.org",
    "workload.codeflare.dev/appwrapper": "appwrappers.workload.codeflare.dev",
}
# Frameworks that refuse to start unless an alpha gate is on (sparkapplication_controller.go).
FRAMEWORK_GATES = {"sparkoperator.k8s.io/sparkapplication": "SparkApplicationIntegration"}

# Feature gates per version: pkg/features/kube_features.go at the tag, the spec in force for that
# minor. Kueue fails at startup on an unknown name ("unrecognized feature gate") and on a locked
# gate set away from its default.
_GATES_0_19 = """
AdmissionFairSharing AdmissionGatedBy AssignQueueLabelsForPods
CleanupProvisioningRequestsOnEviction ConcurrentAdmission CustomMetricLabels
DeferRayServiceFinalizationForRedisCleanup DisableWaitForPodsReady ElasticJobsViaWorkloadSlices
ElasticJobsViaWorkloadSlicesWithTAS FailureRecoveryPolicy FairSharingPreemptWithinNominal
FairSharingPrioritizeNonBorrowing FastQuotaReleaseInPodIntegration FinishOrphanedWorkloads
FlavorFungibility FlavorFungibilityPreserveScanProgress HierarchicalCohorts KueueDRAIntegration
KueueDRAIntegrationConsumableCapacity KueueDRAIntegrationExtendedResource
KueueDRAIntegrationPartitionableDevices KueueDRARejectWorkloadsWhenDRADisabled
LWSImmutableGroupSize LocalQueueMetrics ManagedJobsNamespaceSelectorAlwaysRespected
MetricForWorkloadCreationLatency MetricsForCohorts MultiKueue MultiKueueAdaptersForCustomJobs
MultiKueueAllowInsecureKubeconfigs MultiKueueClusterProfile
MultiKueueIncrementalDispatcherConfig MultiKueueIncrementalDispatcherRespectConfigOrder
MultiKueueKubeConfigPathValidation MultiKueueManagerQuotaAutomation
MultiKueueOrchestratedPreemption MultiKueueRedoAdmissionOnEvictionInWorker
MultiKueueRemoteSpecSync MultiKueueWaitForWorkloadAdmitted ObjectRetentionPolicies
PartialAdmission PodIntegrationValidateGroupOwner PrioritizePreemptorWorkloads PriorityBoost
PrioritySortingWithinCohort PropagateBatchJobLabelsToWorkload QuotaCheckStrategy ReclaimablePods
RecomputeAssignmentUponPreemptionTargetsOverlap RejectUpdatesToCQWithInvalidOnFlavors
RemoveFinalizersWithStrictPatch SchedulerLibraryIntegration SchedulerLongRequeueInterval
SchedulerTimestampPreemptionBuffer SchedulingEquivalenceHashing ShortWorkloadNames
SkipAncestorCheckForDeletedWorkloads SkipFinalizersForPodsSuspendedByParent
SkipReassignmentForPodOwnedWorkloads SparkApplicationIntegration
TASAssignmentsEncodingByHostnamePrefix TASBalancedPlacement TASCacheNodeMatchResults
TASCacheTopologyTree TASCachingRemainingResources TASFailedNodeReplacement
TASFailedNodeReplacementFailFast TASHandleOverlappingFlavors TASMultiLayerTopology
TASProfileMixed TASRecomputeAssignmentWithinSchedulingCycle
TASReplaceNodeDueToNotReadyOverFixedTime TASReplaceNodeOnNodeTaints
TASReplaceNodeOnPodTermination TASRespectNodeAffinityPreferred TASValidateWorkloadSliceSize
TLSOptions TopologyAwareScheduling UnadmittedWorkloadsExplicitStatus
UnadmittedWorkloadsObservability ValidateRayAndSparkJobUpdates VectorizedResourceRequests
VisibilityOnDemand WorkloadIdentifierAnnotations WorkloadPriorityClassDefaulting
WorkloadRequestUseMergePatch WorkloadValidateResourcesAreNonNegative
WorkloadValidationForPodSetMetadata
"""
_GATES_0_17 = """
AdmissionFairSharing AdmissionGatedBy AssignQueueLabelsForPods
CleanupProvisioningRequestsOnEviction CustomMetricLabels DRAExtendedResources
DeferRayServiceFinalizationForRedisCleanup DynamicResourceAllocation
ElasticJobsViaWorkloadSlices ElasticJobsViaWorkloadSlicesWithTAS FailureRecoveryPolicy
FairSharingPreemptWithinNominal FairSharingPrioritizeNonBorrowing
FastQuotaReleaseInPodIntegration FinishOrphanedWorkloads FlavorFungibility HierarchicalCohorts
LendingLimit LocalQueueDefaulting LocalQueueMetrics ManagedJobsNamespaceSelectorAlwaysRespected
MultiKueue MultiKueueAdaptersForCustomJobs MultiKueueAllowInsecureKubeconfigs
MultiKueueBatchJobWithManagedBy MultiKueueClusterProfile MultiKueueOrchestratedPreemption
MultiKueueRedoAdmissionOnEvictionInWorker MultiKueueWaitForWorkloadAdmitted
ObjectRetentionPolicies PartialAdmission PriorityBoost PrioritySortingWithinCohort
PropagateBatchJobLabelsToWorkload ReclaimablePods RejectUpdatesToCQWithInvalidOnFlavors
RemoveFinalizersWithStrictPatch SanitizePodSets SchedulerLongRequeueInterval
SchedulerTimestampPreemptionBuffer SchedulingEquivalenceHashing ShortWorkloadNames
SkipFinalizersForPodsSuspendedByParent SkipReassignmentForPodOwnedWorkloads
SparkApplicationIntegration TASBalancedPlacement TASCacheNodeMatchResults
TASCachingRemainingResources TASFailedNodeReplacement TASFailedNodeReplacementFailFast
TASHandleOverlappingFlavors TASMultiLayerTopology TASProfileMixed
TASRecomputeAssignmentWithinSchedulingCycle TASReplaceNodeDueToNotReadyOverFixedTime
TASReplaceNodeOnNodeTaints TASReplaceNodeOnPodTermination TLSOptions TopologyAwareScheduling
VectorizedResourceRequests VisibilityOnDemand WorkloadIdentifierAnnotations
WorkloadRequestUseMergePatch
"""
FEATURE_GATES: dict[str, frozenset[str]] = {
    "0.19.2": frozenset(_GATES_0_19.split()),
    "0.17.8": frozenset(_GATES_0_17.split()),
}
LOCKED_GATES: dict[str, dict[str, bool]] = {
    "0.19.2": {
        "HierarchicalCohorts": True,
        "ManagedJobsNamespaceSelectorAlwaysRespected": True,
        "MultiKueueAllowInsecureKubeconfigs": False,
        "MultiKueueRedoAdmissionOnEvictionInWorker": True,
        "MultiKueueWaitForWorkloadAdmitted": True,
        "ObjectRetentionPolicies": True,
        "PropagateBatchJobLabelsToWorkload": True,
        "SkipFinalizersForPodsSuspendedByParent": True,
    },
    "0.17.8": {
        "HierarchicalCohorts": True,
        "LendingLimit": True,
        "LocalQueueDefaulting": True,
        "MultiKueueBatchJobWithManagedBy": True,
        "ObjectRetentionPolicies": True,
        "PropagateBatchJobLabelsToWorkload": True,
        "SanitizePodSets": True,
    },
}
# Gates users still copy from old guides; the reason is worth more than "unknown".
REMOVED_GATES = {
    "ProvisioningACC": "GA in 0.14 and removed in 0.15: the ProvisioningRequest check is always on",
}
# Helm values the typed settings own: setting them twice is how Kueue ends up not starting.
OWNED_VALUES = {
    "managerConfig": "built from kueue.frameworks / kueue.multiKueue / kueue.configuration",
    "controllerManager.featureGates": "use kueue.featureGates",
    "controllerManager.replicas": "use kueue.replicas",
    "controllerManager.podDisruptionBudget": "set with kueue.replicas >= 2",
    "controllerManager.topologySpreadConstraints": "set with kueue.replicas >= 2",
    "fullnameOverride": "object names such as kueue-controller-manager derive from the release",
    "nameOverride": "object names such as kueue-controller-manager derive from the release",
}

# ------------------------------------------------------------------------------------------------
# The chart and the API

# The chart: upstream OCI location (promoted images registry.k8s.io/kueue/kueue:v<version>), an
# explicit release name so every chart-derived name is the documented one
# (kueue-controller-manager, kueue-webhook-service), and Kueue's default namespace.
KUEUE_CHART: Final = "oci://registry.k8s.io/kueue/charts/kueue"
KUEUE_RELEASE: Final = "kueue"
KUEUE_NAMESPACE: Final = "kueue-system"
# Namespaces a team namespace may not be: they exist already (creating them fails) or are Kueue's.
RESERVED_NAMESPACES: Final = (
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    KUEUE_NAMESPACE,
)
# The controller pods' labels (the chart's kueue.selectorLabels for release `kueue`).
KUEUE_SELECTOR_LABELS: Final = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/instance": KUEUE_RELEASE,
    "control-plane": "controller-manager",
}
# The manager container's metrics port (charts/kueue/templates/manager/manager.yaml at v0.19.2:
# containerPort 8443, name `metrics`): HTTPS, and every request is authenticated (TokenReview) and
# authorized (SubjectAccessReview: `get` on the non-resource URL /metrics).
KUEUE_METRICS_PORT: Final = "metrics"
KUEUE_METRICS_PATH: Final = "/metrics"
KUEUE_API: Final = "kueue.x-k8s.io/v1beta2"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
CONFIG_API: Final = "config.kueue.x-k8s.io/v1beta2"
PROVISIONING_CONTROLLER: Final = "kueue.x-k8s.io/provisioning-request"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
# Tolerates the AKS system pool taint (SystemPoolConfig.onlyCriticalAddons), as the AKS example.
CRITICAL_ADDONS_TOLERATION: Final = {
    "key": "CriticalAddonsOnly",
    "operator": "Exists",
    "effect": "NoSchedule",
}
# The Incremental dispatcher (pkg/controller/workloaddispatcher/incrementaldispatcher.go at
# v0.19.2): it nominates `stepSize` workers (DefaultStepSize 3, so 3 workers at once unless set),
# in MultiKueueConfig order (gate MultiKueueIncrementalDispatcherRespectConfigOrder, beta, on),
# and adds the next `stepSize` after each round of incrementalDispatcherRoundTimeout (5 min,
# not configurable) while no worker admitted the job; earlier nominees stay nominated.
# AllAtOnce (the default) nominates every worker of the set at once.
INCREMENTAL_DEFAULT_STEP_SIZE: Final = 3
INCREMENTAL_ROUND_SECONDS: Final = 300
DISPATCHERS: Final = {
    "AllAtOnce": "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
    "Incremental": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
}
# Kueue versions whose Configuration has multiKueue.incrementalDispatcherConfig.
INCREMENTAL_CONFIG_VERSIONS: Final = ("0.19.2",)
# The preemptionStrategies lists Kueue's config validation accepts (pkg/config/validation.go,
# validStrategySets, at both pinned tags).
FAIR_SHARING_STRATEGIES: Final = (
    ["LessThanOrEqualToFinalShare"],
    ["LessThanInitialShare"],
    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
)
# Kueue's webhook rule for a fair-sharing weight (pkg/webhooks/common.go validateFairSharing at
# v0.19.2): not negative (every config quantity is), and when not 0 more than 1e-9.
MIN_WEIGHT: Final = Decimal("1e-9")
# The namespaces Kueue's managedJobsNamespaceSelector must never select (validation.go,
# validateManagedJobsNamespaceSelector): kube-system and Kueue's own.
PROHIBITED_MANAGED_NAMESPACES: Final = ("kube-system", KUEUE_NAMESPACE)
# waitForPodsReady (all-or-nothing start) when the Configuration has no `waitForPodsReady` block:
# off up to 0.18 (the block's presence turned it on since v1beta2 dropped `enable`, 0.15), on from
# 0.19 (apis/config/v1beta2/defaults.go at v0.19.2: timeout 30m, recoveryTimeout = timeout,
# requeuing backoff 60 s..3600 s, no backoffLimitCount, so requeued without end; CHANGELOG-0.19
# "WaitForPodsReady is now enabled by default", #11855). From 0.19 the only way to turn it off is
# this alpha gate (pkg/util/waitforpodsready: Enabled() is false when the gate is on), which
# Kueue marks "planned to be removed in 0.21".
WAIT_FOR_PODS_READY_BY_DEFAULT: Final[dict[str, bool]] = {"0.19.2": True, "0.17.8": False}
DISABLE_WAIT_FOR_PODS_READY: Final = "DisableWaitForPodsReady"
DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT: Final = "30m"
# The chart's default `controllerManagerConfigYaml` at each tag (charts/kueue/values.yaml), minus
# `integrations`, which config decides. The value replaces the whole document, so what we do not
# restate is lost; the two tags differ in concurrency and client QPS.
_CHART_CONFIG_BASE: Final[dict[str, Any]] = {
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
}
CHART_MANAGER_CONFIG: Final[dict[str, dict[str, Any]]] = {
    "0.19.2": {
        **_CHART_CONFIG_BASE,
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
    },
    "0.17.8": {
        **_CHART_CONFIG_BASE,
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 5,
                "LocalQueue.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 1,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 50, "burst": 100},
    },
}

# ------------------------------------------------------------------------------------------------
# MultiKueue

MULTIKUEUE_CONTROLLER: Final = "kueue.x-k8s.io/multikueue"
KUBECONFIG_KEY: Final = "kubeconfig"  # Kueue's MultiKueueConfigSecretKey
# Upstream names (create-multikueue-kubeconfig.sh), so Kueue's docs and commands apply as written.
SERVICE_ACCOUNT: Final = "multikueue-sa"
CLUSTER_ROLE: Final = "multikueue-sa-role"
CLUSTER_ROLE_BINDING: Final = "multikueue-sa-crb"
# The write half of the worker rules: a ClusterRole bound by a RoleBinding (this name) in each
# namespace the manager dispatches to the worker, never cluster-wide.
WRITE_ROLE: Final = "multikueue-sa-write"
MAX_WORKERS: Final = 20  # MultiKueueConfig spec.clusters maxItems (since Kueue 0.16)
# Kueue's reason for a ClusterQueue with more than one MultiKueue check: so one ClusterQueue
# reaches at most MAX_WORKERS workers (pkg/cache/scheduler clusterqueue.go, v0.19.2).
MULTIPLE_CHECKS_REASON: Final = "MultipleMultiKueueAdmissionChecks"
# Kueue's reason for a ClusterQueue with both a MultiKueue and a ProvisioningRequest check.
GATE_REASON: Final = "MultiKueueWithProvisioningRequest"

# Seconds `pulumi up` waits for a MultiKueueCluster to be Active (multiKueue.connectTimeoutSeconds).
DEFAULT_CONNECT_TIMEOUT: Final = 300
# Kueue's `multiKueue.workerLostTimeout` when unset (apis/config/v1beta2/defaults.go at v0.19.2,
# DefaultMultiKueueWorkerLostTimeout): how long the manager waits for a worker it lost contact
# with before it evicts that worker's workloads and admits them again (on another worker).
DEFAULT_WORKER_LOST_TIMEOUT: Final = "15m"
# Below this, a worker's short API outage (an AKS upgrade of its control plane, a network blip)
# re-admits its running jobs elsewhere: their work starts over.
MIN_QUIET_WORKER_LOST_TIMEOUT_SECONDS: Final = 60


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


def admitted_worker(workload: Mapping[str, Any]) -> str | None:
    """The worker a manager Workload is admitted on and not finished there, else None.

    Kueue v0.19.2 writes `status.clusterName` once the MultiKueue check is Ready on a worker
    (pkg/controller/admissionchecks/multikueue/workload.go:1243-1250, `syncAdmittingRemoteState`;
    immutable while set) and resets it on eviction (pkg/workload/evict/evict.go:215). A Workload
    with `Finished=True` keeps the name but no longer runs there.
    """
    status = workload.get("status") or {}
    worker = status.get("clusterName")
    if not isinstance(worker, str) or not worker:
        return None
    for c in status.get("conditions") or []:
        if c.get("type") == "Finished" and c.get("status") == "True":
            return None
    return worker
