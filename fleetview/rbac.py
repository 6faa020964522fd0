"""The read-only ClusterRole fleetview needs, built from the very lists it reads (pure).

`python -m fleetview rbac [--group G]` prints it (and a binding to an Entra ID group, or any
Kubernetes group) as YAML for `kubectl apply -f -` on every cluster.
"""

from __future__ import annotations

from typing import Any, Final

from fleetview.objects import KINDS, VISIBILITY_GROUP

ROLE_NAME: Final = "fleetview-reader"


def reader_role() -> dict[str, Any]:
    """get/list on exactly the kinds fleetview lists, get on the visibility API's one
    subresource it reads; nothing else, no Secrets, no writes."""
    groups: dict[str, list[str]] = {}
    for group, _, plural, _ in KINDS.values():
        groups.setdefault(group, []).append(plural)
    rules = [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": ["get", "list"]}
        for group, plurals in sorted(groups.items())
    ]
    # Kueue's visibility API: a ClusterQueue's pending Workloads in order (`why`'s position).
    # A GET of a named ClusterQueue's subresource is verb `get`: `list` matches no request of
    # it (the real tier reads it with `get` alone and is refused with `list` alone).
    rules.append(
        {
            "apiGroups": [VISIBILITY_GROUP],
            "resources": ["clusterqueues/pendingworkloads"],
            "verbs": ["get"],
        }
    )
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ROLE_NAME, "labels": {"app.kubernetes.io/name": "fleetview"}},
        "rules": rules,
    }


def reader_binding(group: str) -> dict[str, Any]:
    """Bind the reader role to a group (an Entra ID group's object ID on AKS with Entra ID)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": ROLE_NAME, "labels": {"app.kubernetes.io/name": "fleetview"}},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": ROLE_NAME,
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    }
