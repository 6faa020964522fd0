"""RetireGuard: `pulumi up` refuses to unlink a MultiKueue worker the manager still runs work on.

Why a resource on the manager, updated before the MultiKueueConfigs, and not a check at the
workers' deletes: Pulumi runs every create and update of an `up` before any delete of a resource
the program no longer declares. Removing a worker first updates each MultiKueueConfig that listed
it, and Kueue v0.19.2 then evicts on the manager every Workload admitted there (docs/operations.md,
"Draining a worker"), so a check at delete time would find nothing left to protect. The guard's
inputs are the linked workers; each MultiKueueConfig depends on it, so its update, the live read
of the manager, comes first, and a refusal fails `up` before any config changes or anything is
deleted. A preview runs no update: it shows the guard's `workers` change and reads nothing.

The provider runs in Pulumi's dynamic-provider process and imports the Kubernetes client only
when a worker leaves (the program itself never imports it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    ResourceProvider,
    UpdateResult,
)
from pulumi.dynamic import (
    Resource as DynamicResource,
)

from upstream.kueue import KUEUE_GROUP, admitted_worker

WORKLOADS_VERSION = "v1beta2"
# How many Workloads the refusal names per worker (the drain section's listing shows them all).
SHOWN = 10


def blocking(workloads: Sequence[Mapping[str, Any]], gone: Sequence[str]) -> dict[str, list[str]]:
    """Leaving worker -> `namespace/name` of the manager Workloads admitted and unfinished there."""
    return blocking_links(workloads, [(None, w) for w in gone])


def _checks_of(workload: Mapping[str, Any]) -> set[str]:
    status: Mapping[str, Any] = workload.get("status") or {}
    checks: list[Mapping[str, Any]] = list(status.get("admissionChecks") or [])
    return {str(c.get("name")) for c in checks}


def blocking_links(
    workloads: Sequence[Mapping[str, Any]], gone: Sequence[tuple[str | None, str]]
) -> dict[str, list[str]]:
    """Leaving (dispatch set, worker) -> `namespace/name` of the manager Workloads admitted and
    unfinished on that worker through that set's MultiKueue check (a set of None: any check).

    A Workload's set is its MultiKueue AdmissionCheck, named as the set's MultiKueueConfig
    (builders.multikueue), in its `status.admissionChecks`; one that lists no check is held for
    any set (the safe reading). Keyed `worker` for a whole worker, `worker (dispatch set S)` for
    one set.
    """
    out: dict[str, list[str]] = {}
    for wl in workloads:
        worker = admitted_worker(wl)
        if worker is None:
            continue
        checks = _checks_of(wl)
        for dispatch, leaving_worker in gone:
            # No check listed (not a Workload Kueue dispatched as it does): held for every set.
            if leaving_worker == worker and (dispatch is None or not checks or dispatch in checks):
                meta: Mapping[str, Any] = wl.get("metadata") or {}
                key = worker if dispatch is None else f"{worker} (dispatch set {dispatch})"
                out.setdefault(key, []).append(f"{meta.get('namespace')}/{meta.get('name')}")
                break
    order = [w if d is None else f"{w} (dispatch set {d})" for d, w in gone]
    return {k: sorted(out[k]) for k in dict.fromkeys(order) if k in out}


def refusal(found: Mapping[str, Sequence[str]]) -> str:
    """The message `up` fails with: the Workloads, the drain step, the override."""
    parts: list[str] = []
    for worker, names in found.items():
        shown = ", ".join(names[:SHOWN]) + (
            f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        )
        parts.append(f"{worker}: {len(names)} Workload(s) admitted there and not finished: {shown}")
    workers = ", ".join(dict.fromkeys(key.split(" (")[0] for key in found))
    return (
        f"refusing to remove MultiKueue worker(s) {workers} while the manager has work admitted "
        f"on them ({'; '.join(parts)}). Removing a worker takes it out of its MultiKueueConfigs, "
        "and Kueue then evicts that work on the manager while its copy keeps running on the "
        "worker. Nothing was changed or deleted. Put the worker back, drain it first "
        f"(multiKueue.drain: [{workers}], deploy, wait until the Workloads finish: "
        'docs/operations.md, "Draining a worker"), then remove it; for a dead worker whose '
        f"work is lost anyway, set multiKueue.forceRetire: [{workers}]"
    )


def read_workloads(kubeconfig: str) -> list[dict[str, Any]]:
    """Every Workload on the manager (the Kubernetes client is imported here, not at start)."""
    import yaml  # noqa: PLC0415 (only when a worker leaves)
    from kubernetes import client, config  # noqa: PLC0415 (not at program start)

    try:
        api: Any = config.new_client_from_config_dict(yaml.safe_load(kubeconfig))  # pyright: ignore[reportUnknownMemberType]
        try:
            listed: Any = client.CustomObjectsApi(api).list_cluster_custom_object(  # pyright: ignore[reportUnknownMemberType]
                KUEUE_GROUP, WORKLOADS_VERSION, "workloads"
            )
        finally:
            api.close()
    except Exception as exc:  # the client raises many kinds; all mean "not read"
        raise RuntimeError(
            "could not read the manager's Workloads to check that the removed MultiKueue "
            f"worker(s) run nothing ({type(exc).__name__}: {str(exc)[:300]}); nothing was "
            "changed or deleted. Retry once the manager answers"
        ) from None
    found: list[dict[str, Any]] = list(listed.get("items") or [])
    return found


def _names(props: Mapping[str, Any], key: str) -> list[str]:
    value: list[Any] = list(props.get(key) or [])
    return [str(v) for v in value]


def leaving(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """Workers linked before and not now, forceRetire aside, in their old order."""
    kept = {*_names(news, "workers"), *_names(news, "forceRetire")}
    return [w for w in _names(olds, "workers") if w not in kept]


def _links(props: Mapping[str, Any]) -> dict[str, list[str]] | None:
    raw: Any = props.get("links")
    if not isinstance(raw, Mapping):
        return None
    links: dict[str, list[Any]] = {str(k): list(v or []) for k, v in dict(raw).items()}  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return {k: [str(w) for w in v] for k, v in links.items()}


def leaving_links(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[tuple[str | None, str]]:
    """(dispatch set, worker) pairs linked before and not now, forceRetire aside.

    A worker that leaves one set while another keeps it leaves that set's MultiKueueConfig, and
    Kueue evicts the Workloads admitted on it through that set alone. State written before the
    guard knew sets has no `links`: then whole workers, as `leaving` (set None).
    """
    old, new = _links(olds), _links(news)
    if old is None or new is None:
        return [(None, w) for w in leaving(olds, news)]
    forced = set(_names(news, "forceRetire"))
    kept = {w for workers in new.values() for w in workers}
    # A worker that leaves every set leaves as a whole (the message names it alone).
    out: list[tuple[str | None, str]] = [(None, w) for w in leaving(olds, news)]
    out += [
        (dispatch, worker)
        for dispatch, workers in old.items()
        for worker in workers
        if worker in kept and worker not in forced and worker not in new.get(dispatch, [])
    ]
    return out


class RetireGuardProvider(ResourceProvider):
    """Refuses an update that unlinks a worker with admitted Workloads; otherwise a no-op."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_="retire-guard", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = ("workers", "links", "forceRetire", "kubeconfig")
        changed = [k for k in keys if olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(changed), replaces=[], stables=[], delete_before_replace=False
        )

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        gone = leaving_links(olds, news)
        if gone:
            found = blocking_links(read_workloads(str(news["kubeconfig"])), gone)
            if found:
                raise RuntimeError(refusal(found))
        return UpdateResult(outs=news)

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        # `destroy` (or the manager leaving the stack): deleting everything is what was asked.
        return None


class RetireGuard(DynamicResource):
    """The manager's linked MultiKueue workers; see the module docstring."""

    def __init__(
        self,
        name: str,
        *,
        workers: Sequence[str],
        force_retire: Sequence[str],
        kubeconfig: pulumi.Input[str],
        links: Mapping[str, Sequence[str]] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(
            RetireGuardProvider(),
            name,
            {
                "workers": list(workers),
                # dispatch set -> its workers: a worker leaving one set is judged there too.
                "links": {k: list(v) for k, v in (links or {}).items()},
                "forceRetire": list(force_retire),
                "kubeconfig": pulumi.Output.secret(kubeconfig),
            },
            pulumi.ResourceOptions.merge(opts, secret),
        )
