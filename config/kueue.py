"""Kueue config: the install (`fleet.kueue`) and the queues of each cluster (`clusters[i].queues`).

Shapes follow Kueue's v1beta2 API, with YAML keys named after the fields they become
(`cohortName`, `coveredResources`, `nominalQuota`, `provisioningClassName`), so a user who knows
Kueue reads the config without a glossary. Models only: the rules that relate several keys live in
`checks.kueue` (the install) and `checks.kueue_queues` (the queues), the per-version facts in
`upstream.kueue`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from config.base import Model
from config.types import (
    DnsLabel,
    DnsSubdomain,
    GoDuration,
    KubernetesVersion,
    LabelKey,
    LabelValue,
    Quantity,
    ResourceName,
)
from upstream.k8s import selector_matches
from upstream.kueue import BATCH_JOB, BEST_EFFORT_ATOMIC, DEFAULT_KUEUE_VERSION, KueueVersion
from upstream.podsecurity import LABEL_PREFIX as POD_SECURITY_LABEL_PREFIX
from upstream.podsecurity import PodSecurityLevel

# `extraSpec` of a queue object: fields of its pinned CRD's `spec` that have no typed key,
# deep-merged into the rendered spec. Checked in preflight against the CRD schema, and refused
# where a typed key (or the program) owns the field: checks.extraspec,
# builders.kueue_queues.OWNED_SPEC.
ExtraSpec = dict[str, Any]


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
        expressions = [(r.key, r.operator, list(r.values)) for r in self.match_expressions]
        return selector_matches(self.match_labels, expressions, labels)


# ------------------------------------------------------------------------------------------------
# fleet.kueue: one Kueue install, the same on every cluster


class IncrementalDispatcherConfig(Model):
    """`multiKueue.incrementalDispatcherConfig` (Kueue 0.19+, with `dispatcher: Incremental`)."""

    # Workers nominated per step (Kueue's default 3); 1 makes one worker at a time scale up.
    step_size: int = Field(ge=1, lt=2**31)


class MultiKueueManagerSettings(Model):
    """The manager's `multiKueue` controller settings; unset keys keep Kueue's defaults."""

    gc_interval: GoDuration | None = None
    origin: LabelValue | None = None
    worker_lost_timeout: GoDuration | None = None
    dispatcher: Literal["AllAtOnce", "Incremental"] | None = None
    incremental_dispatcher_config: IncrementalDispatcherConfig | None = None


# Typed parts of Kueue's Configuration (config.kueue.x-k8s.io/v1beta2, apis/config/v1beta2/
# configuration_types.go at the pinned tags): each field name is the Go struct's json name, so a
# key never reaches Kueue misspelt (Kueue drops unknown fields silently).


class PodsReadyRequeuing(Model):
    """`waitForPodsReady.requeuingStrategy`: how an evicted workload is requeued."""

    timestamp: Literal["Eviction", "Creation"] | None = None
    backoff_limit_count: int | None = Field(default=None, ge=0, lt=2**31)
    backoff_base_seconds: int | None = Field(default=None, ge=0, lt=2**31)
    backoff_max_seconds: int | None = Field(default=None, ge=0, lt=2**31)


class WaitForPodsReady(Model):
    """All-or-nothing start: a workload whose pods are not all ready in `timeout` is evicted.

    `enable` is the program's key, not a field of Kueue's v1beta2 Configuration (which dropped
    it): `enable: false` turns the feature off on the clusters the block applies to (Kueue 0.19:
    the `DisableWaitForPodsReady` gate on those clusters; 0.17: no block). Every other key is
    Kueue's own, and `enable: true` (the default) needs `timeout`.
    """

    enable: bool = True
    timeout: GoDuration | None = None
    block_admission: bool | None = None
    recovery_timeout: GoDuration | None = None
    requeuing_strategy: PodsReadyRequeuing | None = None

    @model_validator(mode="after")
    def _shape(self) -> WaitForPodsReady:
        others = (
            self.timeout,
            self.block_admission,
            self.recovery_timeout,
            self.requeuing_strategy,
        )
        if not self.enable and any(v is not None for v in others):
            raise ValueError("enable: false takes no other key (the feature is off)")
        if self.enable and self.timeout is None:
            raise ValueError("timeout is required (Kueue's v1beta2 field), e.g. timeout: 30m")
        return self


class WorkloadRetention(Model):
    """`objectRetentionPolicies.workloads`: when Kueue deletes finished/deactivated Workloads."""

    after_finished: GoDuration | None = None
    after_deactivated_by_kueue: GoDuration | None = None


class ObjectRetentionPolicies(Model):
    """`objectRetentionPolicies` (unset: Kueue deletes nothing)."""

    workloads: WorkloadRetention | None = None


class FairSharing(Model):
    """`fairSharing`: its presence turns fair sharing on; Kueue accepts three strategy lists."""

    preemption_strategies: list[Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]] = (
        Field(min_length=1, max_length=2)
    )


class AdmissionFairSharing(Model):
    """`admissionFairSharing`: order a ClusterQueue's admissions by its LocalQueues' past usage.

    Applies to ClusterQueues with `admissionScope.admissionMode: UsageBasedAdmissionFairSharing`.
    """

    usage_half_life_time: GoDuration
    # Kueue's default: 5m.
    usage_sampling_interval: GoDuration | None = None
    resource_weights: dict[ResourceName, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict[str, float]
    )


class KueueMetrics(Model):
    """Kueue's Configuration `metrics` (docs/metrics.md): served on :8443 on every cluster."""

    # The ClusterQueue quota and usage gauges (`kueue_cluster_queue_nominal_quota`,
    # `_resource_usage`, ...): Kueue's default is off; the fleet dashboard needs them.
    enable_cluster_queue_resources: bool = True


class KueueConfiguration(Model):
    """Production settings of Kueue's Configuration, on top of the chart's document."""

    # Suspend and queue jobs without a `kueue.x-k8s.io/queue-name` label too (Kueue: false),
    # in the namespaces `managedJobsNamespaceSelector` selects (Kueue's default: every namespace
    # but kube-system and kueue-system).
    manage_jobs_without_queue_name: bool | None = None
    managed_jobs_namespace_selector: NamespaceSelector | None = None
    admission_fair_sharing: AdmissionFairSharing | None = None

    # Workers and standalone clusters only (the manager's is `kueue.managerConfiguration`).
    # Omitted: Kueue's default for the version, which is ON from 0.19 (30m timeout, requeued
    # without end) and off before; `enable: false` turns it off (docs/kueue-queueing.md).
    wait_for_pods_ready: WaitForPodsReady | None = None
    object_retention_policies: ObjectRetentionPolicies | None = None
    fair_sharing: FairSharing | None = None
    metrics: KueueMetrics = KueueMetrics()


class WorkloadPriorityClassConfig(Model):
    """A WorkloadPriorityClass: jobs name it in their `kueue.x-k8s.io/priority-class` label."""

    name: DnsSubdomain
    value: int = Field(ge=-(2**31), lt=2**31)
    description: str | None = Field(default=None, max_length=2048)


class ManagerConfiguration(Model):
    """Settings of the MultiKueue manager's Configuration that differ from the workers'."""

    # The manager runs no pod of a dispatched job, yet from Kueue 0.19 its waitForPodsReady is
    # on unless turned off, and its timeout evicts and re-dispatches a job still starting on a
    # worker. Omitted: OFF on the manager. Set it only to have the manager re-dispatch a job
    # whose pods are not all ready in `timeout` on whichever worker it went to.
    wait_for_pods_ready: WaitForPodsReady | None = None
    # How the manager's waitForPodsReady is kept off where Kueue turns it on by default (0.19+):
    # `featureGate`: the DisableWaitForPodsReady gate (Kueue 0.19 and 0.20; gone in 0.21);
    # `inertBlock`: a block that never evicts (no recoveryTimeout, a one-year timeout), any Kueue.
    # Omitted: `featureGate` where the version has the gate, else `inertBlock`.
    wait_for_pods_ready_off: Literal["featureGate", "inertBlock"] | None = None

    @model_validator(mode="after")
    def _off_needs_off(self) -> ManagerConfiguration:
        w = self.wait_for_pods_ready
        if self.wait_for_pods_ready_off is not None and w is not None and w.enable:
            raise ValueError(
                "waitForPodsReadyOff applies only while the manager's waitForPodsReady is off "
                "(omitted or enable: false); this stack turns it on"
            )
        return self


class KueueSettings(Model):
    """The Kueue Helm release every cluster of the stack gets (one version fleet-wide)."""

    # `manifests-only`: apply the pinned CRDs (from `crdDir`) and no controller, for places
    # without the chart registry or where Kueue's controller runs elsewhere (the real tier).
    install: Literal["helm", "manifests-only"] = "helm"
    # Directory of the pinned version's CRD files, relative to the project; default: the
    # fetch-crds cache, .cache/crds/kueue/v<version> (docs/upstream-pins.md).
    crd_dir: str | None = None
    version: KueueVersion = DEFAULT_KUEUE_VERSION
    # A Kubernetes minor past the newest this Kueue version was e2e-tested on, taken on purpose
    # (e.g. "1.37" with 0.19.2, tested to 1.36): clusters on it are warned instead of refused
    # (checks.upgrades). Only the one minor after the newest tested; docs/upgrades.md.
    untested_kubernetes_minor: KubernetesVersion | None = None
    frameworks: list[str] = Field(default_factory=lambda: [BATCH_JOB], max_length=32)
    feature_gates: dict[str, bool] = Field(default_factory=dict[str, bool])
    multi_kueue: MultiKueueManagerSettings = MultiKueueManagerSettings()
    configuration: KueueConfiguration = KueueConfiguration()
    manager_configuration: ManagerConfiguration = ManagerConfiguration()
    # On every cluster: a dispatched job keeps its priority-class label on the worker, where
    # Kueue looks the class up again.
    workload_priority_classes: list[WorkloadPriorityClassConfig] = Field(
        default_factory=list[WorkloadPriorityClassConfig], max_length=256
    )
    # Controller replicas (leader election is on): 2+ also get a PodDisruptionBudget
    # (minAvailable 1) and spread over nodes and zones, because Kueue's Job webhooks fail closed.
    replicas: int = Field(default=1, ge=1, le=5)
    timeout_seconds: int = Field(default=600, ge=60, le=3600)
    # Escape hatch for chart values with no typed setting (merged last, owned keys rejected).
    values: dict[str, Any] = Field(default_factory=dict[str, Any])


# ------------------------------------------------------------------------------------------------
# clusters[i].queues: namespaces, flavors, gates and queues of one cluster


class TeamNamespace(Model):
    """A namespace the program creates for a team's LocalQueues and jobs.

    `podSecurity`: the Pod Security Standard the API server enforces on its pods (labels
    `pod-security.kubernetes.io/*`; warn and audit stay `restricted`). The manager's credential
    creates Jobs in a worker's copy of this namespace, so `restricted` (the default) keeps a
    dispatched Job from running a privileged pod there; `baseline` or `privileged` only on purpose.
    """

    name: DnsLabel
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict[str, str])
    pod_security: PodSecurityLevel = "restricted"

    @model_validator(mode="after")
    def _pod_security_labels_are_typed(self) -> TeamNamespace:
        owned = sorted(k for k in self.labels if k.startswith(POD_SECURITY_LABEL_PREFIX))
        if owned:
            raise ValueError(
                f"labels {owned} are set from `podSecurity` (privileged, baseline or "
                "restricted); set that key instead"
            )
        return self


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
    extra_spec: ExtraSpec = Field(default_factory=dict[str, Any])


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


class FairShare(Model):
    """`fairSharing` of a ClusterQueue or Cohort: its weight among its siblings (Kueue: 1)."""

    # A quantity: "3", "0.5", "250m"; 0 means it only ever gets what nobody else wants.
    weight: Quantity


class AdmissionScope(Model):
    """`admissionScope`: admission fair sharing among this ClusterQueue's LocalQueues."""

    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


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
    # Used only when `kueue.configuration.fairSharing` is set (that turns fair sharing on).
    fair_sharing: FairShare | None = None
    admission_scope: AdmissionScope | None = None
    extra_spec: ExtraSpec = Field(default_factory=dict[str, Any])

    @property
    def flavor_names(self) -> list[str]:
        return [f.name for g in self.resource_groups for f in g.flavors]


class CohortConfig(Model):
    """A Cohort object (v1beta2): a node of the cohort tree ClusterQueues name in `cohortName`.

    Its `resourceGroups` are quota shared by its members on top of theirs; borrowing and
    lending limits need a `parentName`. Without a Cohort object, a `cohortName` is a plain
    cohort with no quota of its own and weight 1.
    """

    name: DnsSubdomain
    parent_name: DnsSubdomain | None = None
    resource_groups: list[ResourceGroup] = Field(default_factory=list[ResourceGroup], max_length=16)
    fair_sharing: FairShare | None = None
    extra_spec: ExtraSpec = Field(default_factory=dict[str, Any])


class LocalQueueConfig(Model):
    """A LocalQueue: what jobs name in their `kueue.x-k8s.io/queue-name` label."""

    name: DnsSubdomain
    namespace: DnsLabel
    cluster_queue: DnsSubdomain
    # Its weight in admission fair sharing (`admissionScope` of its ClusterQueue).
    fair_sharing: FairShare | None = None
    extra_spec: ExtraSpec = Field(default_factory=dict[str, Any])


class KueueObjects(Model):
    """Everything Kueue-side one cluster declares (`clusters[i].queues`)."""

    namespaces: list[TeamNamespace] = Field(default_factory=list[TeamNamespace])
    flavors: list[FlavorConfig] = Field(default_factory=list[FlavorConfig])
    provisioning_gates: list[ProvisioningGate] = Field(default_factory=list[ProvisioningGate])
    cluster_queues: list[ClusterQueueConfig] = Field(default_factory=list[ClusterQueueConfig])
    cohorts: list[CohortConfig] = Field(default_factory=list[CohortConfig])
    local_queues: list[LocalQueueConfig] = Field(default_factory=list[LocalQueueConfig])

    def flavor(self, name: str) -> FlavorConfig | None:
        return next((f for f in self.flavors if f.name == name), None)

    def gate(self, name: str) -> ProvisioningGate | None:
        return next((g for g in self.provisioning_gates if g.name == name), None)

    def cluster_queue(self, name: str) -> ClusterQueueConfig | None:
        return next((q for q in self.cluster_queues if q.name == name), None)

    def cohort(self, name: str) -> CohortConfig | None:
        return next((c for c in self.cohorts if c.name == name), None)

    def namespace(self, name: str) -> TeamNamespace | None:
        return next((n for n in self.namespaces if n.name == name), None)
