"""Kueue config: the install (`fleet.kueue`), queues per cluster (`clusters[i].queues`), checks.

Shapes follow Kueue's v1beta2 API (../shared/notes/kueue.md 2.x), with YAML keys named after the
fields they become (`cohortName`, `coveredResources`, `nominalQuota`, `provisioningClassName`), so
a user who knows Kueue reads the config without a glossary.

`config.models` imports this module for its field types, so nothing here may import `config.models`
or a builder that does at import time: hence its own name rules, and the lazy
`builders.kueue` imports in the two checks that need rendered objects.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import AfterValidator, Field, model_validator

from config.base import Model
from config.errors import Issue, key_path

if TYPE_CHECKING:
    from config.models import ClusterConfig, FleetConfig

# Versions whose CRDs (../shared/crds/kueue/) and feature-gate tables (below) we carry.
KUEUE_VERSIONS = ("0.19.2", "0.17.8")
DEFAULT_KUEUE_VERSION = "0.19.2"
KueueVersion = Literal["0.19.2", "0.17.8"]

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
    "managerConfig": "built from kueue.frameworks / kueue.multiKueue",
    "controllerManager.featureGates": "use kueue.featureGates",
    "fullnameOverride": "object names such as kueue-controller-manager derive from the release",
    "nameOverride": "object names such as kueue-controller-manager derive from the release",
}
# Namespaces a team namespace may not be: they exist already (creating them fails) or are Kueue's.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease", "kueue-system")
AGENTPOOL_LABELS = ("agentpool", "kubernetes.azure.com/agentpool")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

_DNS_LABEL = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(
    r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$"
)
_NAME_PART = re.compile(r"^[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
# apimachinery resource.Quantity, as the CRDs spell it; a sign is rejected separately (>= 0).
_QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_GO_DURATION = re.compile(r"^(?:0|(?:[0-9]+(?:\.[0-9]+)?(?:ns|us|µs|ms|s|m|h))+)$")


def quantity_value(value: str | int) -> Decimal:
    """A Kubernetes quantity as a number in base units ('500m' -> 0.5, '2Gi' -> 2147483648)."""
    text = str(value)
    if not _QUANTITY.match(text):
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. '8', '500m', '64Gi')")
    number = re.match(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)", text)
    assert number is not None  # the pattern above guarantees a leading number
    rest = text[number.end() :]
    try:
        base = Decimal(number.group(0))
        if rest[:1] in ("e", "E"):
            return base * Decimal(10) ** Decimal(rest[1:])
        return base * _SUFFIX[rest]
    except (InvalidOperation, KeyError):
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from None


def _pattern(regex: re.Pattern[str], max_len: int, allowed: str) -> AfterValidator:
    def check(value: str) -> str:
        if len(value) > max_len or not regex.match(value):
            raise ValueError(f"{value!r} is not allowed: {allowed}")
        return value

    return AfterValidator(check)


def qualified_name_problem(value: str, what: str) -> str | None:
    """Why `value` is not a Kubernetes qualified name (label key, resource name), or None."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return f"{what} {value!r}: prefix {prefix!r} must be a lowercase DNS subdomain"
    if len(name) > 63 or not _NAME_PART.match(name):
        return (
            f"{what} {value!r}: name must be 1-63 characters of [A-Za-z0-9_.-], "
            "starting and ending alphanumeric"
        )
    return None


def _qualified(what: str) -> AfterValidator:
    def check(value: str) -> str:
        problem = qualified_name_problem(value, what)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


def _check_label_value(value: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError(
            f"label value {value!r} must be at most 63 characters of [A-Za-z0-9_.-], "
            "starting and ending alphanumeric"
        )
    return value


def _check_quantity(value: str | int) -> str:
    text = str(value)
    amount = quantity_value(text)
    if amount < 0:
        raise ValueError(f"{text!r} must be >= 0")
    return text


DnsLabel = Annotated[
    str, _pattern(_DNS_LABEL, 63, "1-63 lowercase letters, digits and '-' (a DNS label)")
]
DnsSubdomain = Annotated[
    str,
    _pattern(_DNS_SUBDOMAIN, 253, "1-253 lowercase letters, digits, '-' and '.' (a DNS subdomain)"),
]
LabelKey = Annotated[str, _qualified("label key")]
LabelValue = Annotated[str, AfterValidator(_check_label_value)]
ResourceName = Annotated[str, _qualified("resource name")]
# Stored as the string Kueue gets: `16` and "16" mean the same quota.
Quantity = Annotated[str | int, AfterValidator(_check_quantity)]
GoDuration = Annotated[
    str, _pattern(_GO_DURATION, 64, "a Go duration such as '30s', '1m' or '15m'")
]


# ------------------------------------------------------------------------------------------------
# fleet.kueue: one Kueue install, the same on every cluster


class MultiKueueManagerSettings(Model):
    """The manager's `multiKueue` controller settings; unset keys keep Kueue's defaults."""

    gc_interval: GoDuration | None = None
    origin: LabelValue | None = None
    worker_lost_timeout: GoDuration | None = None
    dispatcher: Literal["AllAtOnce", "Incremental"] | None = None


class KueueSettings(Model):
    """The Kueue Helm release every cluster of the stack gets (one version fleet-wide)."""

    # `manifests-only`: apply the pinned CRDs (from `crdDir`) and no controller, for places
    # without the chart registry or where Kueue's controller runs elsewhere (the real tier).
    install: Literal["helm", "manifests-only"] = "helm"
    # Directory of the pinned version's CRD files, relative to the project; default: the
    # fetch-crds cache (.cache/crds/kueue/<version>), else ../shared/crds/kueue/<version>.
    crd_dir: str | None = None
    version: KueueVersion = DEFAULT_KUEUE_VERSION
    frameworks: list[str] = Field(default_factory=lambda: [BATCH_JOB], max_length=32)
    feature_gates: dict[str, bool] = Field(default_factory=dict[str, bool])
    multi_kueue: MultiKueueManagerSettings = MultiKueueManagerSettings()
    timeout_seconds: int = Field(default=600, ge=60, le=3600)
    # Escape hatch for chart values with no typed setting (merged last, owned keys rejected).
    values: dict[str, Any] = Field(default_factory=dict[str, Any])


# ------------------------------------------------------------------------------------------------
# clusters[i].queues: namespaces, flavors, gates and queues of one cluster


class TeamNamespace(Model):
    """A namespace the program creates for a team's LocalQueues and jobs."""

    name: DnsLabel
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict[str, str])


class Toleration(Model):
    """A toleration a flavor injects into admitted pods (for flavors not bound to a pool)."""

    key: LabelKey | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _shape(self) -> Toleration:
        # The ResourceFlavor CRD's CEL rules, reported here with the key path instead of at deploy.
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without key needs operator: Exists")
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("operator Exists takes no value")
        return self


class FlavorConfig(Model):
    """A ResourceFlavor: usually one per user pool (`pool`), else explicit labels/tolerations."""

    name: DnsSubdomain
    pool: str | None = None
    node_labels: dict[LabelKey, LabelValue] = Field(default_factory=dict[str, str])
    tolerations: list[Toleration] = Field(default_factory=list[Toleration])


class ResourceQuota(Model):
    """Quota of one resource in one flavor of a ClusterQueue."""

    name: ResourceName
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(Model):
    """One flavor's quotas, in the order of the group's coveredResources."""

    name: DnsSubdomain
    resources: list[ResourceQuota] = Field(min_length=1, max_length=64)


class ResourceGroup(Model):
    """Resources that are assigned a flavor together, and the flavors in preference order."""

    covered_resources: list[ResourceName] = Field(min_length=1, max_length=64)
    flavors: list[FlavorQuotas] = Field(min_length=1, max_length=64)


class SelectorRequirement(Model):
    """One `matchExpressions` entry of a namespace selector."""

    key: LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list[str])

    @model_validator(mode="after")
    def _values(self) -> SelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class NamespaceSelector(Model):
    """Which namespaces may use the queue; empty (the default) selects every namespace."""

    match_labels: dict[LabelKey, LabelValue] = Field(default_factory=dict[str, str])
    match_expressions: list[SelectorRequirement] = Field(default_factory=list[SelectorRequirement])

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Label-selector semantics (apimachinery): every term must hold."""
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for req in self.match_expressions:
            present = req.key in labels
            value = labels.get(req.key)
            ok = {
                "In": present and value in req.values,
                "NotIn": not present or value not in req.values,
                "Exists": present,
                "DoesNotExist": not present,
            }[req.operator]
            if not ok:
                return False
        return True


class BorrowWithinCohort(Model):
    """Preemption while borrowing."""

    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = Field(default=None, ge=-(2**31), lt=2**31)


class Preemption(Model):
    """ClusterQueue preemption policies (Kueue defaults: Never everywhere)."""

    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None

    @model_validator(mode="after")
    def _borrow(self) -> Preemption:
        borrow = self.borrow_within_cohort
        if self.reclaim_within_cohort == "Never" and borrow and borrow.policy != "Never":
            raise ValueError(
                "borrowWithinCohort.policy other than Never needs reclaimWithinCohort "
                "LowerPriority or Any"
            )
        return self


class FlavorFungibility(Model):
    """Whether to try the next flavor before borrowing or preempting."""

    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = "MayStopSearch"
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = "TryNextFlavor"


class RetryStrategy(Model):
    """ProvisioningRequest retries (Kueue defaults 3 / 60 s / 1800 s; count 0 = no retry)."""

    backoff_limit_count: int = Field(default=3, ge=0, lt=2**31)
    backoff_base_seconds: int = Field(default=60, ge=0, lt=2**31)
    backoff_max_seconds: int = Field(default=1800, ge=0, lt=2**31)


class NodeSelectorUpdate(Model):
    """A node selector Kueue copies onto admitted pods from the ProvisioningRequest's details."""

    key: LabelKey = Field(max_length=317)
    value_from_provisioning_class_detail: str = Field(min_length=1, max_length=32768)


class ProvisioningGate(Model):
    """A provisioning gate: AdmissionCheck `name` and ProvisioningRequestConfig `configName`."""

    name: DnsSubdomain
    config_name: DnsLabel | None = None
    provisioning_class_name: Literal[
        "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "check-capacity.autoscaling.x-k8s.io",
    ] = BEST_EFFORT_ATOMIC
    managed_resources: list[ResourceName] = Field(default_factory=list[str], max_length=100)
    parameters: dict[str, Annotated[str, Field(max_length=255)]] = Field(
        default_factory=dict[str, str], max_length=100
    )
    retry_strategy: RetryStrategy | None = None
    pod_set_updates: list[NodeSelectorUpdate] = Field(
        default_factory=list[NodeSelectorUpdate], max_length=8
    )
    pod_set_merge_policy: (
        Literal["IdenticalPodTemplates", "IdenticalWorkloadSchedulingRequirements"] | None
    ) = None

    @property
    def prc_name(self) -> str:
        """The ProvisioningRequestConfig's name: `configName`, else `<name>-config`."""
        return self.config_name or f"{self.name}-config"


class GateRef(Model):
    """A ClusterQueue's use of a provisioning gate; `onFlavors` defaults to its pool flavors."""

    name: DnsSubdomain
    on_flavors: list[DnsSubdomain] | None = Field(default=None, max_length=64)


class ClusterQueueConfig(Model):
    """A ClusterQueue (v1beta2 shape: `cohortName`, `admissionChecksStrategy` via the gate)."""

    name: DnsSubdomain
    cohort_name: DnsSubdomain | None = None
    namespace_selector: NamespaceSelector = NamespaceSelector()
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    preemption: Preemption | None = None
    flavor_fungibility: FlavorFungibility | None = None
    resource_groups: list[ResourceGroup] = Field(min_length=1, max_length=16)
    provisioning_gate: GateRef | None = None

    @property
    def flavor_names(self) -> list[str]:
        return [f.name for g in self.resource_groups for f in g.flavors]


class LocalQueueConfig(Model):
    """A LocalQueue: what jobs name in their `kueue.x-k8s.io/queue-name` label."""

    name: DnsSubdomain
    namespace: DnsLabel
    cluster_queue: DnsSubdomain


class ClusterQueues(Model):
    """Everything Kueue-side one cluster declares (`clusters[i].queues`)."""

    namespaces: list[TeamNamespace] = Field(default_factory=list[TeamNamespace])
    flavors: list[FlavorConfig] = Field(default_factory=list[FlavorConfig])
    provisioning_gates: list[ProvisioningGate] = Field(default_factory=list[ProvisioningGate])
    cluster_queues: list[ClusterQueueConfig] = Field(default_factory=list[ClusterQueueConfig])
    local_queues: list[LocalQueueConfig] = Field(default_factory=list[LocalQueueConfig])

    def flavor(self, name: str) -> FlavorConfig | None:
        return next((f for f in self.flavors if f.name == name), None)

    def gate(self, name: str) -> ProvisioningGate | None:
        return next((g for g in self.provisioning_gates if g.name == name), None)

    def cluster_queue(self, name: str) -> ClusterQueueConfig | None:
        return next((q for q in self.cluster_queues if q.name == name), None)

    def namespace(self, name: str) -> TeamNamespace | None:
        return next((n for n in self.namespaces if n.name == name), None)


def gate_flavors(queues: ClusterQueues, cq: ClusterQueueConfig) -> list[str] | None:
    """The `onFlavors` of a queue's gate: explicit, else its pool-bound flavors, else None (all)."""
    ref = cq.provisioning_gate
    if ref is None:
        return None
    if ref.on_flavors is not None:
        return list(ref.on_flavors) or None  # `[]` means what Kueue reads it as: every flavor
    bound = [n for n in cq.flavor_names if (f := queues.flavor(n)) is not None and f.pool]
    return bound or None


# ------------------------------------------------------------------------------------------------
# Checks (config.validate runs KUEUE_CHECKS with the others; every issue names its key path)


def _base(i: int) -> str:
    return key_path("clusters", i, "queues")


def _dupes(names: list[str]) -> set[str]:
    return {n for n, c in Counter(names).items() if c > 1}


def check_kueue_settings(fleet: FleetConfig) -> Iterator[Issue]:
    """Frameworks, feature gates and Helm values that would stop Kueue from starting."""
    s = fleet.kueue
    known = FEATURE_GATES[s.version]
    for i, name in enumerate(s.frameworks):
        path = key_path("kueue", "frameworks", i)
        if name not in FRAMEWORKS:
            hint = difflib.get_close_matches(name, FRAMEWORKS, n=1)
            yield Issue(
                path,
                f"unknown integration {name!r}"
                + (f"; did you mean {hint[0]!r}?" if hint else "")
                + f" Allowed: {', '.join(FRAMEWORKS)}",
            )
        gate = FRAMEWORK_GATES.get(name)
        if gate and not s.feature_gates.get(gate):
            yield Issue(path, f"{name} is alpha in Kueue: set kueue.featureGates.{gate}: true")
    for name in _dupes(s.frameworks):
        yield Issue(key_path("kueue", "frameworks"), f"{name!r} is listed more than once")
    if BATCH_JOB not in s.frameworks:
        yield Issue(
            key_path("kueue", "frameworks"),
            f"must include {BATCH_JOB!r}: the queues and the example Job are batch Jobs",
        )
    for name, enabled in s.feature_gates.items():
        path = f"kueue.featureGates.{name}"
        if name in REMOVED_GATES:
            yield Issue(path, f"remove it: {REMOVED_GATES[name]}; Kueue fails on unknown gates")
        elif name not in known:
            other = [v for v in KUEUE_VERSIONS if name in FEATURE_GATES[v]]
            hint = difflib.get_close_matches(name, known, n=1)
            yield Issue(
                path,
                f"Kueue {s.version} has no feature gate {name!r} and would not start"
                + (f" (it exists in {', '.join(other)})" if other else "")
                + (f"; did you mean {hint[0]!r}?" if hint else ""),
            )
        elif LOCKED_GATES[s.version].get(name, enabled) != enabled:
            locked = LOCKED_GATES[s.version][name]
            yield Issue(
                path,
                f"locked to {str(locked).lower()} in Kueue {s.version}; any other value stops "
                "it at startup: remove the key",
            )
    for owned, why in OWNED_VALUES.items():
        node: Any = s.values
        for part in owned.split("."):
            node = cast("dict[str, Any]", node).get(part) if isinstance(node, dict) else None
        if node is not None:
            yield Issue(f"kueue.values.{owned}", f"set by the program ({why}); remove it here")
    if fleet.manager is None and s.multi_kueue != MultiKueueManagerSettings():
        yield Issue(
            "kueue.multiKueue",
            "applies only to a cluster with role 'manager'; this stack has none",
            "warning",
        )


def check_queue_names(fleet: FleetConfig) -> Iterator[Issue]:
    """Names unique per cluster (per namespace for LocalQueues); no system namespaces."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        lists: list[tuple[str, list[str]]] = [
            ("namespaces", [n.name for n in q.namespaces]),
            ("flavors", [f.name for f in q.flavors]),
            ("provisioningGates", [g.name for g in q.provisioning_gates]),
            ("clusterQueues", [x.name for x in q.cluster_queues]),
            ("localQueues", [f"{lq.namespace}/{lq.name}" for lq in q.local_queues]),
        ]
        for field, names in lists:
            for dup in _dupes(names):
                for j in (j for j, n in enumerate(names) if n == dup):
                    yield Issue(f"{base}.{field}[{j}].name", f"{dup!r} is declared more than once")
        configs = [g.prc_name for g in q.provisioning_gates]
        for dup in _dupes(configs):
            for j in (j for j, n in enumerate(configs) if n == dup):
                yield Issue(
                    f"{base}.provisioningGates[{j}].configName",
                    f"ProvisioningRequestConfig name {dup!r} is used by more than one gate",
                )
        for j, ns in enumerate(q.namespaces):
            if ns.name in RESERVED_NAMESPACES:
                yield Issue(
                    f"{base}.namespaces[{j}].name",
                    f"{ns.name!r} is not a team namespace (reserved: "
                    f"{', '.join(RESERVED_NAMESPACES)})",
                )


def check_flavors(fleet: FleetConfig) -> Iterator[Issue]:
    """Flavor -> pool references, and what AKS and the CRD allow on a flavor."""
    from builders.kueue import resource_flavor  # noqa: PLC0415 - see the module docstring

    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        user_pools = [p.name for p in c.pools]
        used = {n for cq in q.cluster_queues for n in cq.flavor_names}
        for j, f in enumerate(q.flavors):
            path = f"{base}.flavors[{j}]"
            if f.pool is not None:
                if f.pool not in user_pools:
                    system = " (that is the system pool)" if f.pool == c.system_pool.name else ""
                    yield Issue(
                        f"{path}.pool",
                        f"no user pool {f.pool!r} in cluster {c.name!r}{system}; allowed: "
                        + (", ".join(user_pools) or "none (declare pools first)"),
                    )
                    continue
                if f.node_labels or f.tolerations:
                    yield Issue(
                        path,
                        f"nodeLabels and tolerations come from pool {f.pool!r} when `pool` is "
                        "set (so the two cannot drift apart); remove them here",
                    )
                    continue
            else:
                for key in AGENTPOOL_LABELS:
                    named = f.node_labels.get(key)
                    if named in user_pools:
                        yield Issue(
                            f"{path}.nodeLabels",
                            f"selects pool {named!r} by label: use `pool: {named}` to get its "
                            "taints as tolerations and a capacity check",
                            "warning",
                        )
                    elif named is not None:
                        yield Issue(
                            f"{path}.nodeLabels.{key}",
                            f"cluster {c.name!r} has no user pool {named!r}; pods of this "
                            "flavor would never schedule",
                            "warning",
                        )
            spec = resource_flavor(f, c)["spec"]
            for field, limit in (("nodeLabels", 8), ("tolerations", 8)):
                if len(spec.get(field, ())) > limit:
                    yield Issue(
                        path,
                        f"the ResourceFlavor would get {len(spec[field])} {field}; Kueue allows "
                        f"at most {limit} (fewer pool labels/taints, or a flavor without `pool`)",
                    )
            if f.name not in used:
                yield Issue(f"{path}.name", "not used by any ClusterQueue", "warning")


def _check_groups(c: ClusterConfig, cq: ClusterQueueConfig, path: str) -> Iterator[Issue]:
    flavors_seen: dict[str, str] = {}
    resources_seen: dict[str, str] = {}
    total_flavors = total_covered = 0
    for k, group in enumerate(cq.resource_groups):
        gpath = f"{path}.resourceGroups[{k}]"
        total_flavors += len(group.flavors)
        total_covered += len(group.covered_resources)
        for r, res in enumerate(group.covered_resources):
            if res in resources_seen:
                yield Issue(
                    f"{gpath}.coveredResources[{r}]",
                    f"{res!r} is already covered by {resources_seen[res]}; a resource belongs "
                    "to one group",
                )
            else:
                resources_seen[res] = gpath
        if sum(len(f.resources) for f in group.flavors) > 512:
            yield Issue(gpath, "at most 512 flavor x resource quotas per group")
        for m, fq in enumerate(group.flavors):
            fpath = f"{gpath}.flavors[{m}]"
            if c.queues.flavor(fq.name) is None:
                known = ", ".join(f.name for f in c.queues.flavors) or "none declared"
                yield Issue(
                    f"{fpath}.name",
                    f"no flavor {fq.name!r} in clusters[].queues.flavors of {c.name!r} "
                    f"(declared: {known})",
                )
            if fq.name in flavors_seen:
                yield Issue(
                    f"{fpath}.name",
                    f"flavor {fq.name!r} is already used in {flavors_seen[fq.name]}; a flavor "
                    "belongs to one group",
                )
            else:
                flavors_seen[fq.name] = gpath
            names = [r.name for r in fq.resources]
            if names != group.covered_resources:
                yield Issue(
                    f"{fpath}.resources",
                    f"must list {', '.join(group.covered_resources)} in that order (the "
                    f"group's coveredResources); got {', '.join(names)}",
                )
            for n, rq in enumerate(fq.resources):
                rpath = f"{fpath}.resources[{n}]"
                for field, value in (
                    ("borrowingLimit", rq.borrowing_limit),
                    ("lendingLimit", rq.lending_limit),
                ):
                    if value is not None and cq.cohort_name is None:
                        yield Issue(
                            f"{rpath}.{field}",
                            "needs cohortName on the ClusterQueue (limits are about sharing "
                            "within a cohort)",
                        )
                if rq.lending_limit is not None and quantity_value(
                    rq.lending_limit
                ) > quantity_value(rq.nominal_quota):
                    yield Issue(
                        f"{rpath}.lendingLimit",
                        f"{rq.lending_limit} must be <= nominalQuota ({rq.nominal_quota})",
                    )
    if total_flavors > 256:
        yield Issue(f"{path}.resourceGroups", "at most 256 flavors across all groups")
    if total_covered > 256:
        yield Issue(f"{path}.resourceGroups", "at most 256 covered resources across all groups")


def check_cluster_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """References (flavors, gates, onFlavors) and the quota rules Kueue's webhook enforces."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        used_gates: set[str] = set()
        for j, cq in enumerate(q.cluster_queues):
            path = f"{base}.clusterQueues[{j}]"
            yield from _check_groups(c, cq, path)
            ref = cq.provisioning_gate
            if ref is None:
                continue
            used_gates.add(ref.name)
            gate = q.gate(ref.name)
            if gate is None:
                known = ", ".join(g.name for g in q.provisioning_gates) or "none declared"
                yield Issue(
                    f"{path}.provisioningGate.name",
                    f"no provisioning gate {ref.name!r} in cluster {c.name!r} (declared: {known})",
                )
                continue
            for n, flavor in enumerate(ref.on_flavors or []):
                if flavor not in cq.flavor_names:
                    yield Issue(
                        f"{path}.provisioningGate.onFlavors[{n}]",
                        f"{flavor!r} is not a flavor of this ClusterQueue; allowed: "
                        + ", ".join(cq.flavor_names),
                    )
            covered = {r for g in cq.resource_groups for r in g.covered_resources}
            for res in gate.managed_resources:
                if res not in covered:
                    yield Issue(
                        f"{path}.provisioningGate",
                        f"gate {gate.name!r} manages {res!r}, which this queue does not cover: "
                        "its workloads pass the gate without a ProvisioningRequest",
                        "warning",
                    )
        for g, gate in enumerate(q.provisioning_gates):
            if gate.name not in used_gates:
                yield Issue(
                    f"{base}.provisioningGates[{g}].name",
                    "not used by any ClusterQueue (provisioningGate.name)",
                    "warning",
                )


def check_local_queues(fleet: FleetConfig) -> Iterator[Issue]:
    """LocalQueue -> ClusterQueue and namespace resolve, and the queue admits that namespace."""
    for i, c in enumerate(fleet.clusters):
        q, base = c.queues, _base(i)
        for j, lq in enumerate(q.local_queues):
            path = f"{base}.localQueues[{j}]"
            ns = q.namespace(lq.namespace)
            cq = q.cluster_queue(lq.cluster_queue)
            if ns is None:
                known = ", ".join(n.name for n in q.namespaces) or "none declared"
                yield Issue(
                    f"{path}.namespace",
                    f"no team namespace {lq.namespace!r} in cluster {c.name!r} (declared: {known})",
                )
            if cq is None:
                known = ", ".join(x.name for x in q.cluster_queues) or "none declared"
                yield Issue(
                    f"{path}.clusterQueue",
                    f"no ClusterQueue {lq.cluster_queue!r} in cluster {c.name!r} (declared: "
                    f"{known})",
                )
            if ns is not None and cq is not None:
                labels = {**ns.labels, NAMESPACE_NAME_LABEL: ns.name}
                if not cq.namespace_selector.matches(labels):
                    yield Issue(
                        f"{path}.namespace",
                        f"ClusterQueue {cq.name!r} does not select namespace {ns.name!r} (its "
                        "namespaceSelector); Kueue would mark every workload inadmissible",
                    )


def check_capacity(fleet: FleetConfig) -> Iterator[Issue]:
    """Quota on pool-bound flavors vs the pool's maximum allocatable capacity."""
    from builders.kueue import pool_overcommit, quota_report  # noqa: PLC0415 - module docstring

    for row in quota_report(fleet):
        if row.status != "ok":
            yield Issue(row.path, row.message, "error" if row.status == "error" else "warning")
    yield from pool_overcommit(fleet)


def check_gate_conflicts(
    fleet: FleetConfig, multikueue_queues: Mapping[str, Collection[str]]
) -> Iterator[Issue]:
    """Hook for MultiKueue: `{cluster: ClusterQueue names given the MultiKueue check}`.

    Kueue deactivates a ClusterQueue that has both a MultiKueue and a ProvisioningRequest check
    (reason MultiKueueWithProvisioningRequest): gates belong on the worker queues.
    """
    for i, c in enumerate(fleet.clusters):
        names = multikueue_queues.get(c.name, ())
        for j, cq in enumerate(c.queues.cluster_queues):
            if cq.name in names and cq.provisioning_gate is not None:
                yield Issue(
                    f"{_base(i)}.clusterQueues[{j}].provisioningGate",
                    f"ClusterQueue {cq.name!r} also gets the MultiKueue admission check; Kueue "
                    "keeps a queue with both inactive: put the gate on the workers' queues",
                )


KUEUE_CHECKS: tuple[Callable[[FleetConfig], Iterator[Issue]], ...] = (
    check_kueue_settings,
    check_queue_names,
    check_flavors,
    check_cluster_queues,
    check_local_queues,
    check_capacity,
)
