"""A STAND-IN for AKS's node image upgrade of one node pool, on a twin plane.

Nothing here is AKS: it is the order AKS documents, played against a twin's kwok nodes and its
real kube-apiserver, so that what the API server decides (the Eviction API judging each pod
against its PodDisruptionBudget) is real and the rest is this module's stand-in.

AKS's order ("How does an AKS upgrade happen", a two-node pool with maxSurge 1): a surge node is
added; node 1 is cordoned and drained (its pods go to the surge node and node 2), reimaged; node 2
the same (its pods go to node 1 and the surge node); "After all permanent nodes are upgraded, the
surge node is cordoned, drained and deleted". Per batch of `maxSurge` old nodes:

1. surge nodes shaped like the pool (the twin's node for it: labels, taints, capacity,
   allocatable; members of the autoscaler's node group as a VMSS instance is) are created with
   the new node image, and waited for until Ready; a buffer left by an earlier batch (a node
   drained and reimaged frees its buffer) is used first;
2. each old node of the batch is cordoned and drained through the Eviction API
   (`POST .../pods/<pod>/eviction`, policy/v1): every pod on it but DaemonSet and mirror pods,
   retried while the API server answers 429 (a disruption budget allows no disruption) until the
   drain timeout (`drainTimeoutInMinutes`, "The amount of time to wait on eviction of pods and
   graceful termination per node. This eviction wait time honors waiting on pod disruption
   budgets"; compressed to seconds here);
3. drained: the node is reimaged (its `kubernetes.azure.com/node-image-version` label set to the
   new image, any quarantine label removed) and uncordoned; blocked, with
   `undrainableNodeBehavior: Cordon`: "AKS will cordon the blocked nodes and replace them with
   surge nodes during upgrade. The blocked nodes will have label
   'kubernetes.azure.com/upgrade-status:Quarantined'. A surge node will be retained for each
   blocked node"; with `Schedule`: the blocked node is uncordoned and not upgraded;
4. "After all permanent nodes are upgraded, the surge node is cordoned, drained and deleted"
   (AKS, "How does an AKS upgrade happen"), each one no blocked node keeps ("A best-effort
   attempt will be made to delete all other surge nodes": one that cannot be drained stays,
   recorded). The operation fails when a node was blocked.

A later run (the next window) takes the pool's nodes not on the new image, the quarantined ones
included, and the buffers retained for them. What differs from AKS is listed in docs/testing.md
("The node reimage stand-in").

The same order is AKS's node upgrade to a new Kubernetes version ("How does an AKS upgrade
happen": the buffer node "runs the specified Kubernetes version", the drained node "is reimaged
to receive the new version"): with `kubelet_version`, the old nodes are those whose kubelet
reports another version, surge nodes report the new one and a drained node is reimaged to it
(its `status.nodeInfo.kubeletVersion`). The Azure twin's upgrade of a pool is this
(testkit/realtier/azure_nodes.py).
"""

from __future__ import annotations

import copy
import json
import math
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from testkit.realtier.autoscaler import GROUP_ANNOTATION, provider_id
from testkit.realtier.harness import ControlPlane
from upstream.aks import AGENTPOOL_LABEL

NODE_IMAGE_LABEL: Final = "kubernetes.azure.com/node-image-version"
UPGRADE_STATUS_LABEL: Final = "kubernetes.azure.com/upgrade-status"
QUARANTINED: Final = "Quarantined"
# Marks the stand-in's surge nodes (a test's own annotation; AKS's surge nodes are VMSS instances).
SURGE_ANNOTATION: Final = "aks-batch-fleet.test/surge-node"
EVICTION_RETRY: Final = 1.0  # seconds between eviction rounds on a blocked node (kubectl: 5 s)
SURGE_READY_TIMEOUT: Final = 60.0
HTTP_TIMEOUT: Final = 10.0

Behaviour = Literal["Cordon", "Schedule"]


@dataclass(frozen=True, slots=True)
class PoolUpgrade:
    """A pool's `upgradeSettings` as the stand-in plays them (the drain timeout in seconds)."""

    max_surge: str  # AKS's form: a node count ("1") or a percentage of the pool ("33%")
    drain_timeout: float
    undrainable: Behaviour = "Cordon"


def surge_count(max_surge: str, nodes: int) -> int:
    """How many nodes one batch takes: AKS rounds a percentage up, and at least one."""
    if max_surge.endswith("%"):
        wanted = math.ceil(nodes * int(max_surge[:-1]) / 100)
    else:
        wanted = int(max_surge)
    return max(1, min(wanted, max(nodes, 1)))


# ---- the API, as an upgrade operator calls it ------------------------------------------------


def request(
    plane: ControlPlane,
    method: str,
    path: str,
    body: Mapping[str, Any] | None = None,
    content_type: str = "application/json",
) -> tuple[int, dict[str, Any]]:
    """One API call as the plane's admin: (HTTP status, decoded body; {} when none)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        plane.url + path, data=data, method=method, headers={"Content-Type": content_type}
    )
    context: ssl.SSLContext = plane._tls  # the plane's admin client certificate
    try:
        with urllib.request.urlopen(req, context=context, timeout=HTTP_TIMEOUT) as response:
            raw = response.read()
            return int(response.status), json.loads(raw) if raw else {}
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return int(exc.code), json.loads(raw) if raw else {}
        except ValueError:
            return int(exc.code), {"message": raw.decode(errors="replace")}


def _merge_patch(plane: ControlPlane, path: str, patch: Mapping[str, Any]) -> dict[str, Any]:
    status, body = request(plane, "PATCH", path, patch, "application/merge-patch+json")
    if status != 200:
        raise AssertionError(f"[{plane.name}] PATCH {path} {patch}: {status} {body}")
    return body


def pool_nodes(plane: ControlPlane, pool: str) -> list[dict[str, Any]]:
    selector = urllib.parse.quote(f"{AGENTPOOL_LABEL}={pool}")
    status, body = request(plane, "GET", f"/api/v1/nodes?labelSelector={selector}")
    if status != 200:
        raise AssertionError(f"[{plane.name}] nodes of pool {pool}: {status} {body}")
    return sorted(body.get("items") or [], key=lambda n: str(n["metadata"]["name"]))


def pods_on(plane: ControlPlane, node: str) -> list[dict[str, Any]]:
    selector = urllib.parse.quote(f"spec.nodeName={node}")
    status, body = request(plane, "GET", f"/api/v1/pods?fieldSelector={selector}")
    if status != 200:
        raise AssertionError(f"[{plane.name}] pods on {node}: {status} {body}")
    return list(body.get("items") or [])


def _drainable(pod: Mapping[str, Any]) -> bool:
    """What a drain evicts: every pod but DaemonSet pods and mirror (static) pods."""
    meta = pod["metadata"]
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return False
    return not any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or [])


def is_surge(node: Mapping[str, Any]) -> bool:
    return SURGE_ANNOTATION in (node["metadata"].get("annotations") or {})


def kubelet_of(node: Mapping[str, Any]) -> str:
    """The version the node's kubelet reports."""
    return str(((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion") or "")


def is_ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def cordon(plane: ControlPlane, node: str, unschedulable: bool = True) -> None:
    _merge_patch(plane, f"/api/v1/nodes/{node}", {"spec": {"unschedulable": unschedulable}})


def label(plane: ControlPlane, node: str, labels: Mapping[str, str | None]) -> None:
    _merge_patch(plane, f"/api/v1/nodes/{node}", {"metadata": {"labels": dict(labels)}})


def evict(plane: ControlPlane, namespace: str, name: str) -> tuple[int, str]:
    """POST the pod's eviction (policy/v1): (status, the API server's message)."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    status, answer = request(
        plane, "POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body
    )
    # A refusal's reason is in its causes (e.g. "The disruption budget <name> needs ...").
    causes = [str(c.get("message")) for c in (answer.get("details") or {}).get("causes") or []]
    return status, " ".join([str(answer.get("message") or answer.get("status") or ""), *causes])


# ---- what happened -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evicted:
    pod: str  # namespace/name
    node: str
    at: float  # seconds since the run started
    labels: dict[str, str]


@dataclass
class Drain:
    node: str
    drained: bool = False
    seconds: float = 0.0
    attempts: int = 0
    blocked: dict[str, str] = field(default_factory=dict[str, str])  # pod -> last 429 message


@dataclass
class ReimageRecord:
    """One run of the stand-in over one pool: what it did to which node, and when."""

    cluster: str
    pool: str
    image: str  # "" when the run moves the kubelet version only (`kubelet_version`)
    settings: PoolUpgrade
    old_nodes: list[str] = field(default_factory=list[str])
    batches: list[list[str]] = field(default_factory=list[list[str]])
    surge_added: list[str] = field(default_factory=list[str])
    reimaged: list[str] = field(default_factory=list[str])
    quarantined: list[str] = field(default_factory=list[str])
    not_upgraded: list[str] = field(default_factory=list[str])  # blocked under `Schedule`
    retained_surge: dict[str, str] = field(default_factory=dict[str, str])  # surge -> for node
    # Surge nodes deleted at the end, and those that could not be drained (best effort).
    removed_surge: list[str] = field(default_factory=list[str])
    kept_surge: list[str] = field(default_factory=list[str])
    evicted: list[Evicted] = field(default_factory=list[Evicted])
    drains: list[Drain] = field(default_factory=list[Drain])
    timeline: list[tuple[float, str]] = field(default_factory=list[tuple[float, str]])
    seconds: float = 0.0

    @property
    def succeeded(self) -> bool:
        """AKS's operation state: Failed when a node could not be drained."""
        return not self.quarantined and not self.not_upgraded

    def summary(self) -> str:
        drains = ", ".join(
            f"{d.node} {'drained' if d.drained else 'blocked'} {d.seconds:.1f}s"
            for d in self.drains
        )
        return (
            f"{self.cluster}/{self.pool} -> {self.image}: {len(self.old_nodes)} old nodes in "
            f"{len(self.batches)} batches, {len(self.surge_added)} surge added; reimaged "
            f"{self.reimaged}, quarantined {self.quarantined}, not upgraded {self.not_upgraded}; "
            f"surge retained {sorted(self.retained_surge)}, removed {self.removed_surge}, kept "
            f"{self.kept_surge}; {len(self.evicted)} pods evicted; drains: {drains}; "
            f"{'Succeeded' if self.succeeded else 'Failed'} in {self.seconds:.1f}s"
        )


# ---- the stand-in ------------------------------------------------------------------------------


@dataclass
class _Run:
    plane: ControlPlane
    record: ReimageRecord
    template: Mapping[str, Any]
    kubelet_version: str | None = None
    t0: float = field(default_factory=time.monotonic)

    def note(self, text: str) -> None:
        self.record.timeline.append((round(time.monotonic() - self.t0, 2), text))

    def surge_node(self) -> str:
        """One more node of the pool on the new image, Ready."""
        taken = {str(n["metadata"]["name"]) for n in pool_nodes(self.plane, self.record.pool)}
        index = 0
        while (name := f"aks-{self.record.pool}-surge-vmss{index:06d}") in taken:
            index += 1
        node = copy.deepcopy(dict(self.template))
        meta = node["metadata"]
        meta["name"] = name
        meta["labels"] = {
            **meta.get("labels", {}),
            "kubernetes.io/hostname": name,
            **({NODE_IMAGE_LABEL: self.record.image} if self.record.image else {}),
        }
        meta["annotations"] = {
            **meta.get("annotations", {}),
            SURGE_ANNOTATION: "true",
            GROUP_ANNOTATION: self.record.pool,
        }
        meta.pop("resourceVersion", None)
        meta.pop("uid", None)
        node["spec"] = {**node.get("spec", {}), "providerID": provider_id(name)}
        node["spec"].pop("unschedulable", None)
        if self.kubelet_version is not None:
            node.setdefault("status", {}).setdefault("nodeInfo", {})
            node["status"]["nodeInfo"]["kubeletVersion"] = self.kubelet_version
        status, body = request(self.plane, "POST", "/api/v1/nodes", node)
        if status != 201:
            raise AssertionError(f"[{self.plane.name}] surge node {name}: {status} {body}")
        self.record.surge_added.append(name)
        self.note(f"surge {name} created")
        return name

    def await_ready(self, names: Sequence[str]) -> None:
        deadline = time.monotonic() + SURGE_READY_TIMEOUT
        waiting = set(names)
        while waiting:
            for node in pool_nodes(self.plane, self.record.pool):
                if node["metadata"]["name"] in waiting and is_ready(node):
                    waiting.discard(str(node["metadata"]["name"]))
            if waiting and time.monotonic() > deadline:
                raise AssertionError(f"[{self.plane.name}] surge nodes not Ready: {waiting}")
            if waiting:
                time.sleep(0.25)
        if names:
            self.note(f"surge {list(names)} Ready")

    def drain(self, node: str) -> Drain:
        """Cordon, then evict until nothing drainable is left or the drain timeout passes."""
        out = Drain(node)
        started = time.monotonic()
        cordon(self.plane, node)
        self.note(f"{node} cordoned")
        deadline = started + self.record.settings.drain_timeout
        evicted: set[str] = set()
        while True:
            left = [p for p in pods_on(self.plane, node) if _drainable(p)]
            if not left:
                out.drained = True
                break
            for pod in left:
                meta = pod["metadata"]
                ref = f"{meta['namespace']}/{meta['name']}"
                if meta.get("deletionTimestamp"):
                    continue  # evicted, going: a drain waits for it
                out.attempts += 1
                status, message = evict(self.plane, meta["namespace"], meta["name"])
                if status in {200, 201} and ref not in evicted:
                    evicted.add(ref)
                    out.blocked.pop(ref, None)
                    self.record.evicted.append(
                        Evicted(
                            ref,
                            node,
                            round(time.monotonic() - self.t0, 2),
                            dict(meta.get("labels") or {}),
                        )
                    )
                    self.note(f"{ref} evicted from {node}")
                elif status != 404 and status not in {200, 201}:
                    out.blocked[ref] = f"{status}: {message}"
            if time.monotonic() >= deadline:
                break
            time.sleep(EVICTION_RETRY)
        out.seconds = round(time.monotonic() - started, 2)
        self.note(f"{node} {'drained' if out.drained else 'blocked'} after {out.seconds}s")
        return out

    def finish(self, node: str, drain: Drain) -> None:
        if drain.drained:
            # "it's reimaged": the node comes back on the new image (version), schedulable.
            image = {NODE_IMAGE_LABEL: self.record.image} if self.record.image else {}
            label(self.plane, node, {**image, UPGRADE_STATUS_LABEL: None})
            if self.kubelet_version is not None:
                _merge_patch(
                    self.plane,
                    f"/api/v1/nodes/{node}/status",
                    {"status": {"nodeInfo": {"kubeletVersion": self.kubelet_version}}},
                )
            cordon(self.plane, node, unschedulable=False)
            self.record.reimaged.append(node)
            self.note(f"{node} reimaged")
        elif self.record.settings.undrainable == "Cordon":
            label(self.plane, node, {UPGRADE_STATUS_LABEL: QUARANTINED})
            self.record.quarantined.append(node)
            self.note(f"{node} quarantined (stays cordoned)")
        else:
            cordon(self.plane, node, unschedulable=False)
            self.record.not_upgraded.append(node)
            self.note(f"{node} uncordoned, not upgraded")


def reimage_pool(
    plane: ControlPlane,
    pool: str,
    template: Mapping[str, Any],
    image: str,
    settings: PoolUpgrade,
    *,
    after_batch: Callable[[ReimageRecord], None] | None = None,
    kubelet_version: str | None = None,
) -> ReimageRecord:
    """Upgrade `pool`'s nodes on `plane` to node image `image`, as AKS orders it (module doc).

    `template`: the Node the twin registers for the pool (testkit/realtier/twin.py), the shape of
    its surge nodes. The pool's nodes not already on `image` are upgraded (surge nodes kept from
    an earlier run are buffers, not old nodes). `after_batch` is called after each batch (a test
    may look at the plane between batches). `kubelet_version`: a version upgrade (the module's
    docstring); its nodes not on that version are the old ones, and `image` may be ""."""
    record = ReimageRecord(plane.name, pool, image, settings)
    run = _Run(plane, record, template, kubelet_version)
    nodes = pool_nodes(plane, pool)
    buffers = [str(n["metadata"]["name"]) for n in nodes if is_surge(n)]
    old = [
        str(n["metadata"]["name"])
        for n in nodes
        if not is_surge(n)
        and (
            kubelet_of(n) != kubelet_version
            if kubelet_version is not None
            else (n["metadata"].get("labels") or {}).get(NODE_IMAGE_LABEL) != image
        )
    ]
    record.old_nodes = list(old)
    size = surge_count(settings.max_surge, len(old))
    run.note(f"upgrade of {len(old)} nodes, surge {size} ({settings.max_surge}), buffers {buffers}")
    free = list(buffers)
    while old:
        batch, old = old[:size], old[size:]
        record.batches.append(batch)
        new = [run.surge_node() for _ in range(max(0, len(batch) - len(free)))]
        run.await_ready(new)
        free += new
        with ThreadPoolExecutor(max_workers=len(batch)) as pool_of:
            drains = list(pool_of.map(run.drain, batch))
        record.drains += drains
        for node, drain in zip(batch, drains, strict=True):
            run.finish(node, drain)
            if not drain.drained and settings.undrainable == "Cordon" and free:
                # One buffer stays for each blocked node: the busiest one (its pods stay too).
                held = max(free, key=lambda n: len([p for p in pods_on(plane, n) if _drainable(p)]))
                free.remove(held)
                record.retained_surge[held] = node
                run.note(f"surge {held} retained for {node}")
        if after_batch is not None:
            after_batch(record)
    # The end: "the surge node is cordoned, drained and deleted", each one no blocked node
    # keeps; best effort: one that cannot be drained stays.
    for node in free:
        drain = run.drain(node)
        record.drains.append(drain)
        if drain.drained:
            status, body = request(plane, "DELETE", f"/api/v1/nodes/{node}")
            if status not in {200, 202, 404}:
                raise AssertionError(f"[{plane.name}] delete {node}: {status} {body}")
            record.removed_surge.append(node)
            run.note(f"surge {node} deleted")
        else:
            cordon(plane, node, unschedulable=False)
            record.kept_surge.append(node)
            run.note(f"surge {node} kept: not drained")
    record.seconds = round(time.monotonic() - run.t0, 2)
    return record
