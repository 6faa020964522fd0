"""The `extraSpec` escape hatch of queue objects, checked as the API server would judge it.

`extraSpec` on a ClusterQueue, Cohort, LocalQueue or ResourceFlavor (clusters[i].queues) holds
fields of the object's `spec` that have no typed key; the builders deep-merge it into the rendered
spec (builders.kueue_queues.with_extra_spec). Here, before any resource is registered (preflight
and the program both run every check):

1. a field a typed key (or the program) owns is refused, naming the key to use instead
   (builders.kueue_queues.OWNED_SPEC): typed keys are never overridden;
2. the merged spec, with the CRD's defaults applied, is checked against the `spec` schema of the
   pinned CRD for `kueue.version` (the fetch-crds cache, verified against its sha256 pin):
   unknown or mistyped fields, enums, bounds, patterns, required fields (upstream.structural);
3. the CRD's CEL rules that an extraSpec can change are checked by their twins below; the others
   read only owned fields, or compare with the old object (they run on updates, not here).

Every issue names its key path inside `extraSpec`.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, cast

import yaml

from builders.kueue_queues import (
    PROGRAM_OWNED,
    cluster_queue,
    cohort,
    local_queue,
    owned_in_extra_spec,
    resource_flavor,
)
from checks.common import Check
from config.errors import Issue, key_path
from config.loader import PINNED_CRDS, PINS_FILE
from config.models import FleetConfig
from constants import PROJECT_ROOT
from upstream.k8s import TAINT_EFFECTS
from upstream.kueue import KUEUE_API, KUEUE_GROUP
from upstream.structural import Schema, Where, admit, crd_version_schema

# The config list of each kind in clusters[i].queues, and the CRD file that defines it.
KINDS: Final = {
    "ResourceFlavor": ("flavors", "resourceflavors"),
    "Cohort": ("cohorts", "cohorts"),
    "ClusterQueue": ("clusterQueues", "clusterqueues"),
    "LocalQueue": ("localQueues", "localqueues"),
}

# A twin of one CEL rule: the (defaulted) value at the rule's position -> whether it holds.
Twin = Callable[[Any], bool]


def _preference(ff: Any) -> bool:
    if not isinstance(ff, dict):
        return True  # a type error, reported by the schema
    tries = ff.get("whenCanBorrow") == "TryNextFlavor" == ff.get("whenCanPreempt")
    return "preference" not in ff or tries


def _topology_needs_labels(spec: Any) -> bool:
    if not isinstance(spec, dict):
        return True
    return "topologyName" not in spec or len(spec.get("nodeLabels") or {}) >= 1


def _taint_effects(taints: Any) -> bool:
    if not isinstance(taints, list):
        return True
    entries = cast("list[Any]", taints)
    return all(
        not isinstance(t, dict) or cast("dict[str, Any]", t).get("effect") in TAINT_EFFECTS
        for t in entries
    )


# The CRD rules an extraSpec can make fail on a create, by kind and rule text (Kueue v0.19.2 and
# v0.17.8, v1beta2): the position of the rule in `spec`, its twin, and what to do about it.
CEL_TWINS: Final[Mapping[str, Mapping[str, tuple[Where, Twin, str]]]] = {
    "ClusterQueue": {
        "!has(self.preference) || (self.whenCanBorrow == 'TryNextFlavor' && "
        "self.whenCanPreempt == 'TryNextFlavor')": (
            ("flavorFungibility",),
            _preference,
            "flavorFungibility.preference needs both flavorFungibility.whenCanBorrow and "
            "flavorFungibility.whenCanPreempt set to TryNextFlavor (typed keys; Kueue's defaults "
            "are MayStopSearch and TryNextFlavor)",
        ),
    },
    "ResourceFlavor": {
        "!has(self.topologyName) || self.nodeLabels.size() >= 1": (
            (),
            _topology_needs_labels,
            "topologyName needs at least one node label (nodeLabels, or a pool)",
        ),
        "self.all(x, x.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute'])": (
            ("nodeTaints",),
            _taint_effects,
            "every nodeTaints entry needs effect NoSchedule, PreferNoSchedule or NoExecute",
        ),
    },
}
# The kinds' other CEL rules, and why an extraSpec cannot make them fail on a create (the test
# suite holds these two tables complete against the pinned CRDs).
CEL_NOT_REACHED: Final[Mapping[str, str]] = {
    "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, "
    "rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true": "reads owned fields",
    "!(self.reclaimWithinCohort == 'Never' && has(self.borrowWithinCohort) &&  "
    "self.borrowWithinCohort.policy != 'Never')": "reads owned fields",
    "self.flavors.all(x, size(x.resources) == size(self.coveredResources))": "reads owned fields",
    "self.all(x, !has(x.key) ? x.operator == 'Exists' : true)": "tolerations are owned",
    "self.all(x, has(x.tolerationSeconds) ? x.effect == 'NoExecute' : true)": "owned",
    "self.all(x, !has(x.operator) || x.operator in ['Equal', 'Exists'])": "tolerations are owned",
    "self.all(x, has(x.operator) && x.operator == 'Exists' ? !has(x.value) : true)": "owned",
    "self.all(x, !has(x.effect) || x.effect in ['NoSchedule', 'PreferNoSchedule', "
    "'NoExecute'])": "tolerations are owned",
    "self == oldSelf": "compares with the old object: runs on updates",
    "!has(oldSelf.topologyName) || (has(self.nodeLabels) == has(oldSelf.nodeLabels) && "
    "(!has(self.nodeLabels) || self.nodeLabels == oldSelf.nodeLabels))": "runs on updates",
    "!has(oldSelf.topologyName) || (has(self.tolerations) == has(oldSelf.tolerations) && "
    "(!has(self.tolerations) || self.tolerations == oldSelf.tolerations))": "runs on updates",
    "!has(oldSelf.topologyName) || (has(self.topologyName) && self.topologyName == "
    "oldSelf.topologyName)": "runs on updates",
}


def crd_file(version: str, kind: str) -> Path:
    """Where the fetch-crds cache holds the pinned CRD of `kind` for Kueue `version`."""
    return PINNED_CRDS / "kueue" / f"v{version}" / f"{KUEUE_GROUP}_{KINDS[kind][1]}.yaml"


@functools.lru_cache(maxsize=16)
def spec_schema(version: str, kind: str) -> Schema | str:
    """The `spec` schema of `kind` (KUEUE_API's version) in the pinned CRD, or why there is none.

    The file must match its sha256 in scripts/crd-pins.json: a stale or edited cache would judge
    the hatch against the wrong schema.
    """
    path = crd_file(version, kind)
    fetch = f"run scripts/fetch-crds (pins: {PINS_FILE})"
    if not path.is_file():
        return f"no pinned Kueue v{version} CRD to check it against ({path.name}): {fetch}"
    data = path.read_bytes()
    pins = json.loads((PROJECT_ROOT / PINS_FILE).read_text())
    pin = pins["projects"]["kueue"].get(f"v{version}", {}).get("files", {}).get(path.name, {})
    if hashlib.sha256(data).hexdigest() != pin.get("sha256"):
        return f"the cached {path.name} does not match its sha256 pin: {fetch}"
    crd = yaml.load(data, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema = crd_version_schema(crd, KUEUE_API.rsplit("/", 1)[1])
    spec = (schema or {}).get("properties", {}).get("spec")
    if spec is None:
        return f"{path.name} has no {KUEUE_API} spec schema"
    return cast("Schema", spec)


def _in_extra(where: Where, extra: Mapping[str, Any]) -> bool:
    """Whether a position in the merged spec comes from (or lies under) the extraSpec's keys.

    The typed keys alone render a valid spec, so an error anywhere under a key the extraSpec
    sets (a required field missing from its mapping, too) is the extraSpec's.
    """
    return bool(where) and where[0] in extra


def _at(hatch: str, where: Where) -> str:
    return key_path(hatch, *where)


def _object_issues(
    kind: str, version: str, hatch: str, extra: Mapping[str, Any], spec: Mapping[str, Any]
) -> Iterator[Issue]:
    schema = spec_schema(version, kind)
    if isinstance(schema, str):
        yield Issue(hatch, f"cannot be checked: {schema}")
        return
    merged, errors = admit(dict(spec), schema)
    for where, message in errors:
        if _in_extra(where, extra):
            yield Issue(_at(hatch, where), message)
        else:  # a value the typed keys rendered, made wrong by the merge
            yield Issue(hatch, f"the merged spec.{key_path(*where)}: {message}")
    for where, twin, fix in CEL_TWINS.get(kind, {}).values():
        if any(at[: len(where)] == where for at, _ in errors):
            continue  # one error per mistake: the schema's, on the value the rule reads
        node: Any = merged
        for part in where:
            node = cast("Mapping[str, Any]", node).get(part) if isinstance(node, Mapping) else None
        if node is not None and not twin(node):
            at = _at(hatch, where) if _in_extra(where, extra) else hatch
            yield Issue(at, f"{fix} (a CEL rule of the {kind} CRD)")


def _owned_message(owners: list[str]) -> str:
    typed = [f"`{o}`" for o in owners if not o.startswith(PROGRAM_OWNED)]
    program = [o.removeprefix(PROGRAM_OWNED) for o in owners if o.startswith(PROGRAM_OWNED)]
    if program and not typed:
        why = "; ".join(program)
        return f"set by the program ({why}); extraSpec takes only fields without a typed key"
    head = "owned by the typed key" if len(owners) == 1 else "would replace the typed keys"
    return (
        f"{head} {', '.join(typed)}: set {'that' if len(owners) == 1 else 'those'} instead "
        "(extraSpec takes only fields without a typed key)"
    )


def _without(extra: Mapping[str, Any], paths: list[tuple[str, ...]]) -> dict[str, Any]:
    """`extra` without the values at `paths` (the owned ones, reported already)."""
    out = copy.deepcopy(dict(extra))
    for path in paths:
        node: Any = out
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]
    return out


def check_extra_spec(fleet: FleetConfig) -> Iterator[Issue]:
    """Each queue object's extraSpec: no owned field, and schema-clean merged into its spec."""
    version = fleet.kueue.version
    for i, c in enumerate(fleet.clusters):
        q = c.queues
        base = key_path("clusters", i, "queues")
        # (kind, index, the config, what renders its object from it)
        objects: list[tuple[str, int, Any, Callable[[Any], dict[str, Any]]]] = [
            *(
                ("ResourceFlavor", j, x, lambda x, c=c: resource_flavor(x, c))
                for j, x in enumerate(q.flavors)
            ),
            *(("Cohort", j, x, cohort) for j, x in enumerate(q.cohorts)),
            *(
                ("ClusterQueue", j, x, lambda x, q=q: cluster_queue(x, q))
                for j, x in enumerate(q.cluster_queues)
            ),
            *(("LocalQueue", j, x, local_queue) for j, x in enumerate(q.local_queues)),
        ]
        for kind, j, item, build in objects:
            extra: dict[str, Any] = item.extra_spec
            if not extra:
                continue
            hatch = f"{base}.{KINDS[kind][0]}[{j}].extraSpec"
            owned = owned_in_extra_spec(kind, extra)
            for where, owners in owned:
                yield Issue(_at(hatch, where), _owned_message(owners))
            # The rest is still checked, so every mistake shows at once.
            rest = _without(extra, [where for where, _ in owned])
            spec = build(item.model_copy(update={"extra_spec": rest}))["spec"]
            yield from _object_issues(kind, version, hatch, rest, spec)


EXTRA_SPEC_CHECKS: tuple[Check, ...] = (check_extra_spec,)
