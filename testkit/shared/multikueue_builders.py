"""What tests/test_multikueue_builders.py shares with other test modules (they import it from here,
not from a test module): expected_rules, split_rules and what they need."""

from __future__ import annotations

CDGLW = ["create", "delete", "get", "list", "watch"]


# The ClusterRole of site/static/examples/multikueue/create-multikueue-kubeconfig.sh in
# github.com/kubernetes-sigs/kueue, copied by hand, rule by rule and in the script's order, at tag
# v0.17.8 (818686e0) and v0.19.2 (8eab6877). Each row: (framework that needs it, or "" for every
# worker; apiGroups, resources, verbs). Independent of builders/multikueue.py on purpose.
SCRIPT_0_17_8: list[tuple[str, list[str], list[str], list[str]]] = [
    ("batch/job", ["batch"], ["jobs"], CDGLW),
    ("batch/job", ["batch"], ["jobs/status"], ["get"]),
    ("", [""], ["pods"], CDGLW),
    ("statefulset", ["apps"], ["statefulsets"], CDGLW),
    ("statefulset", ["apps"], ["statefulsets/status"], ["get"]),
    (
        "leaderworkerset.x-k8s.io/leaderworkerset",
        ["leaderworkerset.x-k8s.io"],
        ["leaderworkersets"],
        CDGLW,
    ),
    (
        "leaderworkerset.x-k8s.io/leaderworkerset",
        ["leaderworkerset.x-k8s.io"],
        ["leaderworkersets/status"],
        ["get"],
    ),
    ("jobset.x-k8s.io/jobset", ["jobset.x-k8s.io"], ["jobsets"], CDGLW),
    ("jobset.x-k8s.io/jobset", ["jobset.x-k8s.io"], ["jobsets/status"], ["get"]),
    ("", ["kueue.x-k8s.io"], ["workloads"], CDGLW),
    ("", ["kueue.x-k8s.io"], ["workloads/status"], ["get", "patch", "update"]),
    ("kubeflow.org/tfjob", ["kubeflow.org"], ["tfjobs"], CDGLW),
    ("kubeflow.org/tfjob", ["kubeflow.org"], ["tfjobs/status"], ["get"]),
    ("kubeflow.org/paddlejob", ["kubeflow.org"], ["paddlejobs"], CDGLW),
    ("kubeflow.org/paddlejob", ["kubeflow.org"], ["paddlejobs/status"], ["get"]),
    ("kubeflow.org/pytorchjob", ["kubeflow.org"], ["pytorchjobs"], CDGLW),
    ("kubeflow.org/pytorchjob", ["kubeflow.org"], ["pytorchjobs/status"], ["get"]),
    ("kubeflow.org/xgboostjob", ["kubeflow.org"], ["xgboostjobs"], CDGLW),
    ("kubeflow.org/xgboostjob", ["kubeflow.org"], ["xgboostjobs/status"], ["get"]),
    ("kubeflow.org/mpijob", ["kubeflow.org"], ["mpijobs"], CDGLW),
    ("kubeflow.org/mpijob", ["kubeflow.org"], ["mpijobs/status"], ["get"]),
    ("ray.io/rayjob", ["ray.io"], ["rayjobs"], CDGLW),
    ("ray.io/rayjob", ["ray.io"], ["rayjobs/status"], ["get"]),
    ("ray.io/raycluster", ["ray.io"], ["rayclusters"], CDGLW),
    ("ray.io/raycluster", ["ray.io"], ["rayclusters/status"], ["get"]),
    ("workload.codeflare.dev/appwrapper", ["workload.codeflare.dev"], ["appwrappers"], CDGLW),
    (
        "workload.codeflare.dev/appwrapper",
        ["workload.codeflare.dev"],
        ["appwrappers/status"],
        ["get"],
    ),
]


# v0.19.2 = v0.17.8 plus: update/patch on workloads (#13693) and rayclusters (#13653), read on
# clusterqueues/localqueues (quota automation), and rayservices (+status).
SCRIPT_0_19_2: list[tuple[str, list[str], list[str], list[str]]] = [
    *SCRIPT_0_17_8[:9],
    ("", ["kueue.x-k8s.io"], ["workloads"], [*CDGLW, "update", "patch"]),
    ("", ["kueue.x-k8s.io"], ["clusterqueues", "localqueues"], ["get", "list", "watch"]),
    *SCRIPT_0_17_8[10:23],
    ("ray.io/raycluster", ["ray.io"], ["rayclusters"], [*CDGLW, "update", "patch"]),
    ("ray.io/raycluster", ["ray.io"], ["rayclusters/status"], ["get"]),
    ("ray.io/rayservice", ["ray.io"], ["rayservices"], CDGLW),
    ("ray.io/rayservice", ["ray.io"], ["rayservices/status"], ["get"]),
    *SCRIPT_0_17_8[25:],
]


SCRIPT = {"v0.17.8": SCRIPT_0_17_8, "v0.19.2": SCRIPT_0_19_2}
QUOTA_AUTOMATION = "MultiKueueManagerQuotaAutomation"


def project_rows(version: str) -> list[tuple[str, list[str], list[str], list[str]]]:
    """The script's rows with the project's three deliberate differences (upstream.kueue)."""
    out: list[tuple[str, list[str], list[str], list[str]]] = []
    for script_fw, g, r, script_verbs in SCRIPT[version]:
        fw, v = script_fw, script_verbs
        if r == ["pods"]:
            fw = "pod"  # only the pod adapter touches pods
        elif r == ["clusterqueues", "localqueues"]:
            fw = f"gate:{QUOTA_AUTOMATION}"  # read only with that alpha gate
        elif r == ["jobs"] and version == "v0.19.2":
            v = [*v, "update", "patch"]  # elastic Jobs are resized by a remote patch
        out.append((fw, g, r, v))
    return out


# The fourth difference, v0.19.2 only: the kinds whose operators the stack installs (KubeRay, the
# training operator) get exactly their MultiKueue adapter's verbs on the remote object, after the
# script's rows: no `/status` read (the adapter copies status from the object it gets), and on
# RayCluster `patch` (elastic replica sync) but no `update` (upstream/kueue_rbac.py, ADAPTER_RULES).
ADAPTER_0_19_2: dict[str, tuple[list[str], list[str], list[str]]] = {
    "ray.io/rayjob": (["ray.io"], ["rayjobs"], CDGLW),
    "ray.io/raycluster": (["ray.io"], ["rayclusters"], [*CDGLW, "patch"]),
    **{
        f"kubeflow.org/{k}": (["kubeflow.org"], [f"{k}s"], CDGLW)
        for k in ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
    },
}


def expected_rules(
    version: str, frameworks: list[str], gates: tuple[str, ...] = ()
) -> list[dict[str, list[str]]]:
    enabled = {*frameworks, *(f"gate:{g}" for g in gates)}
    exact = ADAPTER_0_19_2 if version == "v0.19.2" else {}
    return [
        {"apiGroups": g, "resources": r, "verbs": v}
        for fw, g, r, v in project_rows(version)
        if fw == "" or (fw in enabled and fw not in exact)
    ] + [
        {"apiGroups": g, "resources": r, "verbs": v}
        for fw, (g, r, v) in exact.items()
        if fw in enabled
    ]


READS = ("get", "list", "watch")


def split_rules(rules: list[dict[str, list[str]]], reads: bool) -> list[dict[str, list[str]]]:
    """The script's rules cut in two: get/list/watch (cluster-wide) or the rest (namespaced)."""
    out = []
    for rule in rules:
        verbs = [v for v in rule["verbs"] if (v in READS) == reads]
        if verbs:
            out.append({**rule, "verbs": verbs})
    return out
