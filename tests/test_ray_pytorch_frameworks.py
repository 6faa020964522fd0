"""RayJob, RayCluster and PyTorchJob through MultiKueue: operators as config.

The example stack (examples/ai-jobs/Pulumi.ai-jobs.yaml) passes preflight; under mocks the program
installs KubeRay and the training operator on the GPU workers only and the kinds' CRDs alone on
the manager; the manager's credential on a worker grants exactly what Kueue v0.19.2's MultiKueue
adapters do with those kinds; a dispatch-set worker without the operator, an operator on the
manager, or a version without managedBy is refused with its key path. The example manifests are
valid against the pinned CRDs, pass Pod Security `restricted`, and each pod set fits a pool of
every worker its queue reaches.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.fleet import render_fleet
from builders.frameworks import manager_crd_files, training_operator_installs
from checks.frameworks import pools_fitting, worker_queues
from checks.stack import load_from_file, parse_fleet, read_files
from components.fleet import Fleet, FleetArgs
from config.errors import ConfigError
from config.loader import read_stack_file
from testkit import crdschema
from testkit.mocks import Graph, mocked_engine, run_program
from testkit.repo import ROOT
from upstream.k8s import quantity_value
from upstream.podsecurity import violations

EXAMPLE = ROOT / "examples" / "ai-jobs"
STACK = "ai-jobs"
RAYJOB = EXAMPLE / "rayjob.yaml"
PYTORCHJOB = EXAMPLE / "pytorchjob.yaml"
WORKERS = ("gpu-1", "gpu-2")
CDGLW = {"create", "delete", "get", "list", "watch"}

Raw = dict[str, Any]


def example_raw() -> Raw:
    raw, _ = read_stack_file(STACK, EXAMPLE)
    return copy.deepcopy(raw)


def errors_for(raw: Raw) -> list[str]:
    try:
        parse_fleet(raw)
    except ConfigError as err:
        return [str(i) for i in err.issues if i.severity == "error"]
    return []


def warnings_for(raw: Raw) -> list[str]:
    return [str(w) for w in parse_fleet(raw)[1]]


# ---- preflight of the example --------------------------------------------------------------


def test_example_stack_passes_preflight_without_warnings() -> None:
    fleet, warnings = load_from_file(STACK, EXAMPLE)
    assert [str(w) for w in warnings] == []
    assert {"ray.io/rayjob", "ray.io/raycluster", "kubeflow.org/pytorchjob"} <= set(
        fleet.kueue.frameworks
    )


def test_the_example_is_not_a_committed_stack() -> None:
    # The loopback twin deploys every Pulumi.<stack>.yaml of the root, and has no operator binaries.
    assert not (ROOT / f"Pulumi.{STACK}.yaml").exists()


def test_operators_render_on_workers_only_and_crds_alone_on_the_manager() -> None:
    fleet, _ = load_from_file(STACK, EXAMPLE)
    _, releases = render_fleet(fleet)
    kuberay = [r for r in releases if r.chart == "kuberay-operator"]
    assert [(r.target, r.version, r.repo, r.namespace) for r in kuberay] == [
        (w, "1.5.0", "https://ray-project.github.io/kuberay-helm/", "kuberay-system")
        for w in WORKERS
    ]
    # On the system pool, like Kueue: it carries CriticalAddonsOnly.
    assert kuberay[0].values["tolerations"] == [
        {"key": "CriticalAddonsOnly", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert kuberay[0].values["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi"},
        "limits": {"memory": "512Mi"},
    }
    training = training_operator_installs(fleet)
    assert [(k.target, k.version, k.path) for k in training] == [
        (w, "v1.9.3", "manifests/overlays/standalone") for w in WORKERS
    ]
    assert manager_crd_files(fleet) == [
        ("kuberay", "v1.5.0", "ray.io_rayjobs.yaml"),
        ("kuberay", "v1.5.0", "ray.io_rayclusters.yaml"),
        ("training-operator", "v1.9.3", "kubeflow.org_pytorchjobs.yaml"),
    ]


@pytest.fixture(scope="module")
def registered() -> Iterator[Graph]:
    fleet, _ = load_from_file(STACK, EXAMPLE)
    files = read_files(fleet, EXAMPLE)
    with mocked_engine(STACK) as g:
        run_program(
            lambda: Fleet(
                "fleet",
                FleetArgs(
                    config=fleet,
                    stack=STACK,
                    operator_crd_files=files.operator_crd_files,
                    training_operator_overlay=files.training_operator_overlay,
                ),
            )
        )
        yield g


def _cluster_of(g: Graph, urn: str) -> str:
    provider = g.by_urn(urn)
    names = [n for n in ("manager", *WORKERS) if f"-{n}-" in provider.name or provider.name == n]
    assert len(names) == 1, provider.name
    return names[0]


def test_the_program_registers_operators_on_workers_only(registered: Graph) -> None:
    g = registered
    releases = [
        r
        for r in g.of_type("kubernetes:helm.sh/v3:Release")
        if r.inputs["chart"] == "kuberay-operator"
    ]
    assert sorted(_cluster_of(g, g.provider_urn(r)) for r in releases) == list(WORKERS)
    assert {r.inputs["version"] for r in releases} == {"1.5.0"}
    overlays = g.of_type("kubernetes:kustomize/v2:Directory")
    assert sorted(_cluster_of(g, g.provider_urn(r)) for r in overlays) == list(WORKERS)
    assert all(r.inputs["directory"].endswith("manifests/overlays/standalone") for r in overlays)
    groups = [r for r in g.of_type("kubernetes:yaml/v2:ConfigGroup") if "operators" in r.name]
    assert [_cluster_of(g, g.provider_urn(r)) for r in groups] == ["manager"]
    assert sorted(Path(f).name for f in groups[0].inputs["files"]) == [
        "kubeflow.org_pytorchjobs.yaml",
        "ray.io_rayclusters.yaml",
        "ray.io_rayjobs.yaml",
    ]


# ---- the credential ------------------------------------------------------------------------


def _role_rules(name: str, target: str) -> dict[str, set[str]]:
    fleet, _ = load_from_file(STACK, EXAMPLE)
    manifests, _ = render_fleet(fleet)
    roles = [m for m in manifests if m.target == target and m.name == name and "rules" in m.obj]
    assert roles, f"no {name} on {target}"
    out: dict[str, set[str]] = {}
    for m in roles:
        for rule in m.obj["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.setdefault(f"{group}/{resource}", set()).update(rule["verbs"])
    return out


@pytest.mark.parametrize("worker", WORKERS)
def test_the_credential_is_narrowed_to_exactly_the_adapters_verbs(worker: str) -> None:
    reads = _role_rules("multikueue-sa-role", worker)
    writes = _role_rules("multikueue-sa-write", worker)
    kinds = {k: reads.get(k, set()) | writes.get(k, set()) for k in {*reads, *writes}}
    ray_and_kubeflow = {
        k: v for k, v in kinds.items() if k.split("/")[0] in {"ray.io", "kubeflow.org"}
    }
    # ray_multikueue_adapter.go: get, create, delete, and list/watch for the remote watch; only
    # RayCluster's elastic sync patches. kubeflowjob_multikueue_adapter.go: the same five verbs.
    assert ray_and_kubeflow == {
        "ray.io/rayjobs": CDGLW,
        "ray.io/rayclusters": CDGLW | {"patch"},
        "kubeflow.org/pytorchjobs": CDGLW,
    }
    # No `/status` read (the adapters copy status from the object they get) and no other of
    # their kinds: that dict holds every ray.io and kubeflow.org resource the roles name.


# ---- what is refused -------------------------------------------------------------------------


def test_an_operator_missing_from_one_worker_of_a_set_is_refused_with_the_key_path() -> None:
    raw = example_raw()
    raw["operators"]["kuberay"]["workers"] = ["gpu-1"]
    errors = errors_for(raw)
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        "operators.kuberay.workers: worker 'gpu-2' is in dispatch set 'multikueue' (manager "
        "ClusterQueues ml) but does not run the KubeRay operator: the manager's MultiKueue watch "
        "of ray.io/rayjob, ray.io/raycluster fails there"
    )
    assert "add 'gpu-2' to operators.kuberay.workers, or remove it from that set" in errors[0]


def test_the_manager_never_runs_an_operator() -> None:
    raw = example_raw()
    raw["operators"]["trainingOperator"]["workers"] = ["gpu-1", "gpu-2", "manager"]
    errors = errors_for(raw)
    assert len(errors) == 1, errors
    assert errors[0].startswith(
        "operators.trainingOperator.workers[2]: 'manager' is the manager, which never runs a job "
        "operator"
    )


@pytest.mark.parametrize(
    ("key", "field", "version", "message"),
    [
        (
            "kuberay",
            "chartVersion",
            "1.2.2",
            "operators.kuberay.chartVersion: KubeRay operator 1.2.2 has no spec.managedBy "
            "(first in 1.3.0)",
        ),
        (
            "trainingOperator",
            "version",
            "1.8.1",
            "operators.trainingOperator.version: Kubeflow training operator 1.8.1 has no "
            "spec.runPolicy.managedBy (first in 1.9.0)",
        ),
        (
            "kuberay",
            "chartVersion",
            "1.4.2",
            "operators.kuberay.chartVersion: KubeRay operator 1.4.2 has no pinned CRDs for the "
            "manager",
        ),
    ],
)
def test_a_version_without_managed_by_or_pinned_crds_is_refused(
    key: str, field: str, version: str, message: str
) -> None:
    raw = example_raw()
    raw["operators"][key][field] = version
    errors = errors_for(raw)
    assert len(errors) == 1, errors
    assert errors[0].startswith(message)


def test_a_framework_neither_installed_nor_declared_elsewhere_names_both_ways_out() -> None:
    raw = example_raw()
    del raw["operators"]["trainingOperator"]
    errors = errors_for(raw)
    assert len(errors) == 1, errors
    assert errors[0].startswith("kueue.frameworks[3]: kubeflow.org/pytorchjob needs the CRD")
    assert "operators.trainingOperator: {}" in errors[0]
    assert "operators.installedElsewhere: {kubeflow.org/pytorchjob: {version: ...}}" in errors[0]


def test_installed_elsewhere_is_allowed_with_a_warning_naming_its_version() -> None:
    raw = example_raw()
    raw["kueue"]["frameworks"].append("jobset.x-k8s.io/jobset")
    raw["operators"]["installedElsewhere"] = {"jobset.x-k8s.io/jobset": {"version": "0.10.1"}}
    assert errors_for(raw) == []
    assert warnings_for(raw) == [
        "operators.installedElsewhere.jobset.x-k8s.io/jobset: jobset.x-k8s.io/jobset 0.10.1 is "
        "declared installed elsewhere: this stack cannot prove that its CRD "
        "(jobsets.jobset.x-k8s.io) is on the manager and every worker, nor that the version "
        "honours managedBy and that no controller for it runs on the manager"
    ]


def test_installed_elsewhere_and_by_the_stack_at_once_is_refused() -> None:
    raw = example_raw()
    raw["operators"]["installedElsewhere"] = {"ray.io/rayjob": {"version": "1.5.0"}}
    assert errors_for(raw) == [
        "operators.installedElsewhere.ray.io/rayjob: ray.io/rayjob is installed by this stack "
        "(operators.kuberay): declare it in one place"
    ]


def test_unknown_operator_keys_are_refused_with_the_allowed_ones() -> None:
    raw = example_raw()
    raw["operators"]["kuberay"]["chartVersoin"] = "1.5.0"
    with pytest.raises(ConfigError) as err:
        parse_fleet(raw)
    assert "operators.kuberay.chartVersoin" in str(err.value)
    assert "chartVersion" in str(err.value)


def test_a_gang_gate_over_two_pools_that_start_empty_warns() -> None:
    raw = example_raw()
    for c in raw["clusters"][1:]:
        c["pools"][0]["minCount"] = 0
    warnings = warnings_for(raw)
    assert len(warnings) == 2, warnings  # gpu-2 shares gpu-1's queues (a YAML alias)
    assert warnings[0].startswith(
        "clusters[1].queues.clusterQueues[0]: gate 'gang-scaleup' covers flavors on pools cpu, "
        "gpu, which all scale from zero"
    )


# ---- the example manifests -----------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def test_the_example_manifests_are_valid_against_the_pinned_crds() -> None:
    crdschema.assert_valid(_load(RAYJOB), "kuberay", "v1.5.0")
    crdschema.assert_valid(_load(PYTORCHJOB), "training-operator", "v1.9.3")


def pod_sets(job: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """(name, count, pod spec) per pod set, as Kueue v0.19.2 builds them for these kinds."""
    spec = job["spec"]
    if job["kind"] == "RayJob":
        cluster = spec["rayClusterSpec"]
        out = [("head", 1, cluster["headGroupSpec"]["template"]["spec"])]
        out += [
            (g["groupName"], g["replicas"], g["template"]["spec"])
            for g in cluster["workerGroupSpecs"]
        ]
        if spec.get("submissionMode") == "K8sJobMode":
            out.append(("submitter", 1, spec["submitterPodTemplate"]["spec"]))
        return out
    return [
        (role.lower(), r["replicas"], r["template"]["spec"])
        for role, r in spec["pytorchReplicaSpecs"].items()
    ]


def requests_of(pod: dict[str, Any]) -> dict[str, str]:
    total: dict[str, Decimal] = {}
    for c in pod["containers"]:
        for resource, value in (c.get("resources", {}).get("requests") or {}).items():
            total[resource] = total.get(resource, Decimal(0)) + quantity_value(value)
    return {r: str(v) for r, v in total.items()}


@pytest.mark.parametrize("path", [RAYJOB, PYTORCHJOB], ids=lambda p: p.name)
def test_the_example_pods_pass_restricted(path: Path) -> None:
    for name, _, pod in pod_sets(_load(path)):
        assert violations(pod, "restricted") == [], name


@pytest.mark.parametrize("path", [RAYJOB, PYTORCHJOB], ids=lambda p: p.name)
def test_every_pod_set_fits_a_pool_of_every_worker_its_queue_reaches(path: Path) -> None:
    fleet, _ = load_from_file(STACK, EXAMPLE)
    job = _load(path)
    queue = job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    manager = fleet.manager
    assert manager is not None
    local = next(lq for lq in manager.queues.local_queues if lq.name == queue)
    reached = worker_queues(fleet, local.cluster_queue)
    assert [w.name for w, _ in reached] == list(WORKERS)
    for worker, cq in reached:
        for name, _, pod in pod_sets(job):
            requests = requests_of(pod)
            fits = pools_fitting(fleet, worker, cq, requests)
            # GPU pod sets on the GPU pool only, CPU pod sets on the CPU pool (heads, submitter).
            want = ["gpu"] if "nvidia.com/gpu" in requests else ["cpu", "gpu"]
            assert fits == want, (worker.name, name, requests, fits)


def test_a_pod_set_no_pool_can_hold_is_found() -> None:
    fleet, _ = load_from_file(STACK, EXAMPLE)
    worker = fleet.cluster("gpu-1")
    assert worker is not None
    assert pools_fitting(fleet, worker, "ml", {"nvidia.com/gpu": "2"}) == []  # 1 A100 a node
    assert pools_fitting(fleet, worker, "ml", {"cpu": "30"}) == []


def test_a_restricted_namespace_where_the_training_operator_runs_warns_of_init_pytorch() -> None:
    """The example's `ml` is baseline on purpose; restricted there (the default) is warned about
    once per declaration, on the manager (mirrored to the workers) and on each worker."""
    raw = example_raw()
    for cluster in raw["clusters"]:
        for ns in cluster.get("queues", {}).get("namespaces", []):
            ns.pop("podSecurity", None)
    warnings = warnings_for(raw)
    names = [c["name"] for c in raw["clusters"]]
    assert [w.split(":", 1)[0] for w in warnings] == [
        f"clusters[{names.index(name)}].queues.namespaces[0].podSecurity"
        for name in ("manager", *WORKERS)
    ], warnings
    assert [w.split(" on ", 1)[1].split()[0] for w in warnings] == ["manager", *WORKERS]
    assert all(
        "init-pytorch container without a securityContext" in w and "Set podSecurity: baseline" in w
        for w in warnings
    ), warnings
    # Without the training operator there is nothing to warn about.
    del raw["operators"]["trainingOperator"]
    raw["kueue"]["frameworks"].remove("kubeflow.org/pytorchjob")
    assert not [w for w in warnings_for(raw) if "init-pytorch" in w]
