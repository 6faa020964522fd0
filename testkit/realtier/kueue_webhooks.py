"""Kueue's admission webhooks for its job frameworks, registered on a plane as Kueue's chart
registers them, served by the twin's Kueue process on loopback.

The tier's Kueue runs without webhook configurations (testkit/realtier/kueue.py), so a test that
submits a Job sets what Kueue's Job webhook would set (`managedBy` for MultiKueue:
testkit/realtier/jobs.py). A README line that applies `examples/sleep-job.yaml` as written needs
the webhook itself: on the manager, Kueue's `mjob.kb.io` sets `spec.managedBy:
kueue.x-k8s.io/multikueue` on a Job whose queue dispatches, without which MultiKueue rejects
the Workload ("The owner is not managed by Kueue"). So the Azure twin's planes get the pinned
Kueue's own webhook manifests (`config/components/webhook/manifests.yaml` of its source, in the
Go module cache of the tool builds) for the stack's frameworks: the same names, rules, failure
policy and the kustomization's namespaceSelector (not kube-system, not kueue-system); only the
client config differs: a URL on 127.0.0.1 (the Kueue process's webhook port) instead of the
chart's Service, with the CA of its self-signed serving pair.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any, Final

import yaml

from testkit.realtier.harness import ControlPlane, StartError, apply
from testkit.realtier.kueue import KueueManager

MANIFESTS: Final = Path("config") / "components" / "webhook" / "manifests.yaml"
# The kustomization's selector (config/components/webhook/kustomization.yaml): every webhook.
NAMESPACE_SELECTOR: Final = {
    "matchExpressions": [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": ["kube-system", "kueue-system"],
        }
    ]
}
PREFIX: Final = "kueue-"  # the chart's configuration names: kueue-<kustomize name>


def manifests_path(binary: Path) -> Path | None:
    """The pinned Kueue's webhook manifests beside its build (None when not downloaded)."""
    version = binary.parent.parent.name.removeprefix("kueue-")
    path = binary.parents[2] / "_go" / "mod" / "sigs.k8s.io" / f"kueue@v{version}" / MANIFESTS
    return path if path.is_file() else None


def _framework_rule(framework: str) -> tuple[str, str] | None:
    """(API group, resource) of a framework like `batch/job`; None for `pod` and the like."""
    if "/" not in framework:
        return None
    group, kind = framework.split("/", 1)
    return group, f"{kind.lower()}s"


def webhook_configurations(
    manifests: Path, frameworks: tuple[str, ...], port: int, ca: bytes
) -> list[dict[str, Any]]:
    """The mutating and validating configurations of `frameworks`' webhooks, on loopback."""
    wanted = {r for r in map(_framework_rule, frameworks) if r is not None}
    out: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(manifests.read_text()):
        if not doc or doc.get("kind") not in (
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ):
            continue
        hooks: list[dict[str, Any]] = []
        for hook in doc.get("webhooks") or []:
            rules = {
                (group, resource)
                for rule in hook.get("rules") or []
                for group in rule.get("apiGroups") or []
                for resource in rule.get("resources") or []
            }
            if not rules & wanted:
                continue
            path = hook["clientConfig"]["service"]["path"]
            hooks.append(
                {
                    **hook,
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port}{path}",
                        "caBundle": base64.b64encode(ca).decode(),
                    },
                    "namespaceSelector": json.loads(json.dumps(NAMESPACE_SELECTOR)),
                }
            )
        if hooks:
            name = f"{PREFIX}{doc['metadata']['name']}"
            out.append({**doc, "metadata": {"name": name}, "webhooks": hooks})
    return out


def register(plane: ControlPlane, kueue: KueueManager, manifests: Path) -> int:
    """Register `kueue`'s webhooks for its frameworks on its plane; returns how many."""
    config = yaml.safe_load((kueue.workdir / "kueue-config.yaml").read_text())
    port = int(config["webhook"]["port"])
    ca = (kueue.workdir / "webhook-certs" / "tls.crt").read_bytes()
    configurations = webhook_configurations(manifests, kueue.frameworks, port, ca)
    applied = apply(plane, configurations)
    if applied.rejected:
        raise StartError(f"[{plane.name}] Kueue webhook configurations: {applied.stderr}")
    return sum(len(c["webhooks"]) for c in configurations)
