"""Per-version facts of Kueue (sigs.k8s.io/kueue at v0.17.8 and v0.19.2).

Adding a Kueue version: its CRDs (scripts/crd-pins.json), and the tables below: the version list,
feature gates, locked gates, the chart's manager config; and its MultiKueue worker RBAC and
adapters in upstream/kueue_rbac.py. Everything that judges or builds Kueue objects reads them from
these two modules.
"""

from __future__ import annotations

from collections.abc import Mapping
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
# On every pod Kueue admits, of any framework, when it starts the job: the pod set's name
# (pkg/constants PodSetLabel, set in jobframework/reconciler.go getPodSetsInfoFromStatus; read
# at v0.19.2 and v0.17.8). What `upgrades.batchPods: protect` selects (builders.batch_pods).
POD_SET_LABEL: Final = "kueue.x-k8s.io/podset"
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
# this alpha gate (pkg/util/waitforpodsready/waitforpodsready.go:24-29 at v0.19.2: Enabled() is
# false when the gate is on, else true whenever the block is there, which defaults.go:99-102
# makes it always be).
WAIT_FOR_PODS_READY_BY_DEFAULT: Final[dict[str, bool]] = {"0.19.2": True, "0.17.8": False}
DISABLE_WAIT_FOR_PODS_READY: Final = "DisableWaitForPodsReady"
DEFAULT_WAIT_FOR_PODS_READY_TIMEOUT: Final = "30m"
# The gate per pinned version: its stage, None where Kueue has no such gate. v0.19.2
# pkg/features/kube_features.go:49-52 "Deprecated: planned to be removed in 0.21. Temporary option
# while WaitForPodsReady is enabled by default." and :667-669 (Alpha from 0.19, default false);
# absent at v0.17.8; still there, unchanged, on main (0.20-devel, 2026-08-22: :48-51, :629-631).
# A Kueue without the gate refuses to start when it is set ("unrecognized feature gate").
DISABLE_WAIT_FOR_PODS_READY_STAGE: Final[dict[str, str | None]] = {
    "0.19.2": "alpha",
    "0.17.8": None,
}
DISABLE_WAIT_FOR_PODS_READY_REMOVED_IN: Final = "0.21"
# What the manager's waitForPodsReady does to a dispatched workload (v0.19.2, same on main), and so
# what keeps it harmless without the gate:
# - PodsReady on the manager's Workload is computed from the manager's own Job
#   (jobframework/reconciler.go:545-579, generatePodsReadyCondition :1846-1863, job.PodsReady),
#   whose status MultiKueue copies from the worker's Job (jobs/job/job_multikueue_adapter.go:66-75).
# - The timeout counts from the manager Workload's Admitted (workload_controller.go:1667-1675), i.e.
#   from the worker's admission; recoveryTimeout from PodsReady=False WaitForRecovery (:1676-1679),
#   and only when above 0 (core/core.go:151: "0s" turns recovery checking off). Past it the manager
#   evicts its Workload (reconcileNotReadyTimeout :1229-1277, reason PodsReadyTimeout, with requeue
#   backoff and deactivation past backoffLimitCount :1280-1294).
# - That eviction deactivates the worker's copy (admissionchecks/multikueue/workload.go:589-600,
#   "Evicted on manager") and, once quota is released, deletes every remote copy (:380-394); the
#   job is dispatched again. The worker's own eviction already resets the check to Retry
#   (:473-486), so the manager's timeout adds nothing but a cap on the worker's.
# - The other effects: blockAdmission (default false, defaults.go:111; cmd/kueue/main.go:716-720,
#   the scheduler's pods-ready tracking), and the ready-wait-time metrics the job reconciler
#   reports when PodsReady first turns true (reconciler.go:557-571).
# So an inert block: no recoveryTimeout ("0s"), blockAdmission false, and a timeout no start takes.
# Kueue's validation wants only timeout > 0 and nothing negative (pkg/config/validation.go:273-309);
# the bound is Go's Duration (about 292 years). A year keeps timeout - elapsed far from overflow.
INERT_WAIT_FOR_PODS_READY: Final[dict[str, Any]] = {
    "timeout": "8760h",
    "blockAdmission": False,
    "recoveryTimeout": "0s",
}


def has_disable_gate(version: str) -> bool:
    """Whether that Kueue version knows the DisableWaitForPodsReady gate (its gate table)."""
    return DISABLE_WAIT_FOR_PODS_READY in FEATURE_GATES[version]


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
