"""Pod Security Standards as Pod Security Admission enforces them (k8s.io/pod-security-admission,
policy/check_*.go at v0.33). Pure.

A namespace opts in with labels `pod-security.kubernetes.io/<mode>: <level>` and
`<mode>-version`; the API server then refuses (enforce), warns about (warn) or records (audit) a
pod that breaks the level. `violations` restates the checks a batch or web pod can trip, so a
Job shipped with the project is verified offline against the level its namespace enforces; the
API server stays the authority (a real-tier test submits a privileged pod and is refused).
Not restated: AppArmor, SELinux, `/proc` mount type and sysctls (nothing here sets them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal, cast

from upstream.k8s import minor_of

PodSecurityLevel = Literal["privileged", "baseline", "restricted"]
LEVELS: Final[tuple[PodSecurityLevel, ...]] = ("privileged", "baseline", "restricted")
LABEL_PREFIX: Final = "pod-security.kubernetes.io/"
MODES: Final = ("enforce", "warn", "audit")

# check_capabilities_baseline.go: what baseline lets a container add.
BASELINE_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# check_capabilities_restricted.go: drop ALL, add at most NET_BIND_SERVICE.
RESTRICTED_CAPABILITIES: Final = frozenset({"NET_BIND_SERVICE"})
# check_restrictedVolumes.go: the volume sources restricted allows.
RESTRICTED_VOLUMES: Final = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
# check_seccompProfile_restricted.go.
RESTRICTED_SECCOMP: Final = frozenset({"RuntimeDefault", "Localhost"})


def policy_version(kubernetes_version: str | None) -> str:
    """The `<mode>-version` label: the cluster's minor as `v1.N` when known, else `latest`.

    Pinned to the minor, the policy moves with an upgrade the program makes, on purpose.
    """
    if not kubernetes_version:
        return "latest"
    major, minor = minor_of(kubernetes_version)
    return f"v{major}.{minor}"


def labels(level: PodSecurityLevel, version: str) -> dict[str, str]:
    """Namespace labels that enforce `level` and warn and audit at `restricted`.

    Warn and audit never refuse a pod; at `restricted` they say what a less strict namespace
    admits that the strictest would not.
    """
    out: dict[str, str] = {}
    for mode in MODES:
        out[f"{LABEL_PREFIX}{mode}"] = level if mode == "enforce" else "restricted"
        out[f"{LABEL_PREFIX}{mode}-version"] = version
    return out


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in cast("list[Mapping[str, Any]]", spec.get(key) or []):
            yield f"{key}[{c.get('name', '?')}]", c


def _baseline(spec: Mapping[str, Any]) -> Iterator[str]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            yield f"{field}: true"
    pod_seccomp = (spec.get("securityContext") or {}).get("seccompProfile") or {}
    if pod_seccomp.get("type") == "Unconfined":
        yield "securityContext.seccompProfile.type: Unconfined"
    for volume in cast("list[Mapping[str, Any]]", spec.get("volumes") or []):
        if "hostPath" in volume:
            yield f"volumes[{volume.get('name', '?')}]: hostPath"
    for where, c in _containers(spec):
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            yield f"{where}: privileged"
        added = set((sc.get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES
        if added:
            yield f"{where}: capabilities.add {sorted(added)}"
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            yield f"{where}: seccompProfile.type Unconfined"
        for port in cast("list[Mapping[str, Any]]", c.get("ports") or []):
            if port.get("hostPort"):
                yield f"{where}: hostPort {port['hostPort']}"


def _restricted(spec: Mapping[str, Any]) -> Iterator[str]:
    pod_sc = spec.get("securityContext") or {}
    for volume in cast("list[Mapping[str, Any]]", spec.get("volumes") or []):
        kinds = set(volume) - {"name"}
        if kinds - RESTRICTED_VOLUMES:
            yield f"volumes[{volume.get('name', '?')}]: {sorted(kinds - RESTRICTED_VOLUMES)}"
    if pod_sc.get("runAsUser") == 0:
        yield "securityContext.runAsUser: 0"
    for where, c in _containers(spec):
        sc = c.get("securityContext") or {}
        if sc.get("allowPrivilegeEscalation") is not False:
            yield f"{where}: allowPrivilegeEscalation must be false"
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True:
            yield f"{where}: runAsNonRoot must be true (pod or container)"
        if sc.get("runAsUser") == 0:
            yield f"{where}: runAsUser 0"
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in RESTRICTED_SECCOMP:
            yield f"{where}: seccompProfile.type must be RuntimeDefault or Localhost"
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            yield f"{where}: capabilities.drop must include ALL"
        added = set(caps.get("add") or []) - RESTRICTED_CAPABILITIES
        if added:
            yield f"{where}: capabilities.add {sorted(added)} (only NET_BIND_SERVICE)"


def violations(pod_spec: Mapping[str, Any], level: PodSecurityLevel) -> list[str]:
    """What in a pod spec the level forbids (empty: admitted)."""
    if level == "privileged":
        return []
    found = list(_baseline(pod_spec))
    if level == "restricted":
        found += _restricted(pod_spec)
    return found


def pod_spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod spec of a Pod, Job, CronJob or a workload with `spec.template`, else None."""
    kind = obj.get("kind")
    spec = cast("Mapping[str, Any]", obj.get("spec") or {})
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = cast("Mapping[str, Any]", (spec.get("jobTemplate") or {}).get("spec") or {})
    template = spec.get("template")
    if isinstance(template, Mapping):
        return cast("Mapping[str, Any]", template.get("spec") or {})
    return None


# A pod spec that passes `restricted` for an image that runs as any non-root user: what the
# Jobs and the examples this project ships set.
RESTRICTED_POD_SECURITY_CONTEXT: Final = {
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "seccompProfile": {"type": "RuntimeDefault"},
}
RESTRICTED_CONTAINER_SECURITY_CONTEXT: Final = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
