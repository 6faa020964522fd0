"""Replica placement of a UnitedDeployment: Karmada static weights, then Kruise subsets. Pure.

Reproduces two upstream algorithms, read at the pinned tags:
- Karmada v1.18.2, `Divided` + `Weighted` with a `staticWeightList`:
  pkg/scheduler/core/assignment.go (assignByStaticWeightStrategy, getStaticWeightInfoList),
  pkg/scheduler/core/{common.go,util.go,generic_scheduler.go} (no-cluster error, zero-replica
  removal, empty-workload propagation) and pkg/util/helper/{binding.go,webstermethod.go}
  (Dispenser, tieBreakerByUID, AllocateWebsterSeats: Webster / Sainte-Lague).
- OpenKruise v1.9.0 UnitedDeployment: pkg/controller/uniteddeployment/allocator.go (specific,
  min/max, adaptive allocators), uniteddeployment_controller_utils.go (ParseSubsetReplicas) and the
  subset rules of pkg/webhook/uniteddeployment/validating/uniteddeployment_validation.go, which
  runs in every member that has Kruise installed.

When both apply, Karmada revises spec.replicas of each member's copy (ReviseReplica) and Kruise then
splits that number over the subsets inside the member; `plan_placement` does exactly that.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

from upstream.k8s import dns_label_problem

_V = TypeVar("_V")

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Kruise's webhook assumes this maxReplicas for subsets without one when it sums capacities.
_WEBHOOK_DEFAULT_MAX = 1_000_000
# strconv.ParseInt(s, 10, 32) syntax: optional sign, decimal digits, nothing else.
_GO_INT = re.compile(r"[+-]?[0-9]+")


# --- Karmada: static-weight division -------------------------------------------------------------


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _names_descending(resource_uid: str) -> bool:
    """tieBreakerByUID: an odd FNV-32a of the template UID favours larger names in exact ties."""
    return bool(resource_uid) and _fnv32a(resource_uid.encode()) & 1 == 1


@dataclass(slots=True)
class _Party:
    name: str
    votes: int
    seats: int

    def priority(self) -> float:
        # Same float64 expression as WebsterPriorityQueue.Less; exact ties depend on it.
        return float(self.votes) / float(2 * self.seats + 1)


@dataclass(slots=True)
class _Queued:
    """Heap entry ordered like WebsterPriorityQueue.Less with Karmada's UID tie-breaker."""

    party: _Party
    names_descending: bool

    def __lt__(self, other: _Queued) -> bool:
        a, b = self.party, other.party
        pa, pb = a.priority(), b.priority()
        if pa != pb:
            return pa > pb
        if a.seats != b.seats:
            return a.seats < b.seats
        return a.name > b.name if self.names_descending else a.name < b.name


def allocate_webster_seats(
    new_seats: int,
    votes: Mapping[str, int],
    initial: Mapping[str, int] | None = None,
    *,
    names_descending: bool = False,
) -> dict[str, int]:
    """AllocateWebsterSeats: each seat to the highest votes/(2*seats+1); every party, by name."""
    parties = {name: _Party(name, 0, seats) for name, seats in (initial or {}).items()}
    for name, vote in votes.items():
        if name in parties:
            parties[name].votes = vote
        else:
            parties[name] = _Party(name, vote, 0)
    heap = [_Queued(party, names_descending) for party in parties.values()]
    heapq.heapify(heap)
    for _ in range(new_seats if heap else 0):
        entry = heapq.heappop(heap)
        entry.party.seats += 1
        heapq.heappush(heap, entry)
    return {name: parties[name].seats for name in sorted(parties)}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_replicas(replicas: object, what: str) -> int:
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise ValueError(f"{what} must be an integer, got {replicas!r}")
    if not 0 <= replicas <= INT32_MAX:
        raise ValueError(f"{what} must be between 0 and {INT32_MAX}, got {replicas}")
    return replicas


def divide_static_weights(
    replicas: int,
    weights: Mapping[str, int],
    *,
    candidates: Iterable[str] | None = None,
    resource_uid: str = "",
    has_replica_requirements: bool = True,
    empty_workload_propagation: bool = False,
) -> dict[str, int]:
    """Replicas per member cluster as Karmada v1.18.2 divides them by a staticWeightList.

    Clusters left with 0 replicas get no Work and are left out (removeZeroReplicasCluster). The
    keyword arguments stand for data only the Karmada control plane has; defaults are upstream's:

    - candidates: clusters that passed the scheduler's filters (Ready, API enabled, affinity,
      taints). Default: exactly the weighted names. A candidate without a weight gets nothing,
      unless no candidate has one (or `weights` is empty: no staticWeightList); then every
      candidate weighs 1.
    - resource_uid: metadata.uid of the resource template. Exact ties go to the smaller name,
      or to the larger one when FNV-32a(uid) is odd. Default "" (smaller name).
    - has_replica_requirements: whether GetReplicas returned requirements. With 0 replicas and
      none, Karmada treats the object as a non-workload and sends it to every candidate as is.
    - empty_workload_propagation: karmada-scheduler --enable-empty-workload-propagation (default
      off) keeps candidates that got 0 replicas in the result.

    The previous schedule plays no part: the static strategy starts from zero every time.
    """
    _check_replicas(replicas, "replicas")
    for name, weight in weights.items():
        if not _is_int(weight):
            raise ValueError(f"weight of {name!r} must be an integer, got {weight!r}")
        if not 1 <= weight <= INT64_MAX:  # CRD: staticWeightList[].weight minimum 1, int64
            raise ValueError(f"weight of {name!r} must be at least 1, got {weight}")
    members = sorted(set(weights if candidates is None else candidates))
    if not members:
        raise ValueError("no clusters available to schedule")
    if replicas == 0 and not has_replica_requirements:
        # AssignReplicas: not a workload, so every candidate gets the object and nothing to divide.
        return dict.fromkeys(members, 0)
    votes = {name: weights[name] for name in members if name in weights}
    if not votes:
        votes = dict.fromkeys(members, 1)
    seats = allocate_webster_seats(
        replicas, votes, names_descending=_names_descending(resource_uid)
    )
    result = {name: count for name, count in seats.items() if count > 0}
    if empty_workload_propagation:
        result = {name: result.get(name, 0) for name in members}
    return result


# --- OpenKruise: subsets inside one UnitedDeployment ---------------------------------------------


@dataclass(frozen=True, slots=True)
class SubsetSpec:
    """One entry of spec.topology.subsets: replicas/minReplicas/maxReplicas as int or "N%"."""

    name: str
    replicas: int | str | None = None
    min_replicas: int | str | None = None
    max_replicas: int | str | None = None


def parse_subset_replicas(ud_replicas: int, value: int | str) -> int:
    """ParseSubsetReplicas: an int as is, "N%" of the UD replicas rounded half up; -1 = unset."""
    if isinstance(value, bool):
        raise ValueError(f"subset replicas ({value!r}) must be an integer or a percentage")
    if isinstance(value, int):
        if value > INT32_MAX:
            raise ValueError(f"subset replicas ({value}) does not fit in int32")
        if value < 0:
            raise ValueError(f"subset replicas ({value}) should not be less than 0")
        return value
    if ud_replicas < 0:
        raise ValueError(
            f"subset replicas ({value}) should not be a percentage when the UnitedDeployment "
            "replicas is empty"
        )
    if not value.endswith("%"):
        raise ValueError(
            f"subset replicas ({value}) only support integer value or percentage value with a "
            "suffix '%'"
        )
    digits = value[:-1]
    if not _GO_INT.fullmatch(digits) or not -(2**31) <= int(digits) <= INT32_MAX:
        raise ValueError(f"subset replicas ({value}) should be a correct percentage integer")
    percent = int(digits)
    if not 0 <= percent <= 100:
        raise ValueError(f"subset replicas ({value}) should be in range [0, 100]")
    # Go: int32(math.Floor(float64(ud) * float64(p) / 100 + 0.5)), evaluated left to right.
    return math.floor(float(ud_replicas) * float(percent) / 100 + 0.5)


def _validate_subsets(replicas: int | None, subsets: Sequence[SubsetSpec], adaptive: bool) -> None:
    """What the member's Kruise webhook and allocator reject; one ValueError naming all of it."""
    errors: list[str] = []
    expected = -1 if replicas is None else replicas
    seen: set[str] = set()
    sum_replicas = sum_min = sum_max = 0
    count_replicas = count_max = 0
    has_replicas = has_capacity = False

    def parse(index: int, field: str, value: int | str, default: int) -> int:
        try:
            return parse_subset_replicas(expected, value)
        except ValueError as err:
            errors.append(f"subsets[{index}].{field}: {err}")
            return default

    for i, subset in enumerate(subsets):
        name = subset.name
        if not name:
            errors.append(f"subsets[{i}].name is required")
        elif dns_label_problem(name) is not None:
            errors.append(f"subsets[{i}].name {name!r} is not a DNS-1123 label")
        if name in seen:
            errors.append(f"subsets[{i}].name: duplicated subset name {name!r}")
        seen.add(name)
        if subset.replicas is not None:
            count_replicas += 1
            has_replicas = True
            sum_replicas += parse(i, "replicas", subset.replicas, 0)
            if adaptive:
                errors.append(
                    f"subsets[{i}].replicas is forbidden with the Adaptive strategy; "
                    "use minReplicas/maxReplicas"
                )
        low, high = 0, _WEBHOOK_DEFAULT_MAX
        if subset.min_replicas is not None:
            has_capacity = True
            low = parse(i, "minReplicas", subset.min_replicas, 0)
        if subset.max_replicas is not None:
            count_max += 1
            has_capacity = True
            high = parse(i, "maxReplicas", subset.max_replicas, 0)
        sum_min += low
        sum_max += high
        if low > high:
            errors.append(f"subsets[{i}].minReplicas ({low}) is greater than maxReplicas ({high})")

    if has_replicas and has_capacity:
        errors.append("subset replicas and minReplicas/maxReplicas are mutually exclusive")
    elif has_capacity:
        if replicas is None:
            errors.append("spec.replicas must be set when subsets use minReplicas/maxReplicas")
        if count_max >= len(subsets):
            errors.append("at least one subset must leave maxReplicas empty")
        if sum_min > sum_max:
            errors.append(
                f"sum of subset minReplicas ({sum_min}) is greater than sum of maxReplicas "
                f"({sum_max})"
            )
    elif replicas is not None:
        if sum_replicas > replicas:
            errors.append(
                f"sum of subset replicas ({sum_replicas}) is greater than the UnitedDeployment "
                f"replicas ({replicas})"
            )
        elif count_replicas and count_replicas == len(subsets) and sum_replicas != replicas:
            errors.append(
                f"every subset sets replicas, so their sum ({sum_replicas}) must equal the "
                f"UnitedDeployment replicas ({replicas})"
            )
        elif not subsets and replicas > 0 and not adaptive:
            # Passes the webhook but the specific allocator's validateReplicas fails on every sync.
            errors.append(f"no subsets to place {replicas} replicas in")
    elif count_replicas != len(subsets):
        errors.append("every subset must set replicas when the UnitedDeployment replicas is unset")

    if errors:
        raise ValueError("; ".join(errors))


def _allocate_min_max(replicas: int, subsets: Sequence[SubsetSpec]) -> dict[str, int]:
    """allocateByMinMaxMap: minimums in subset order first, then up to each maximum in order."""
    lows = {s.name: parse_subset_replicas(replicas, s.min_replicas or 0) for s in subsets}
    highs = {
        s.name: INT32_MAX
        if s.max_replicas is None
        else parse_subset_replicas(replicas, s.max_replicas)
        for s in subsets
    }
    result: dict[str, int] = {}
    allocated = 0
    for s in subsets:
        add = max(min(lows[s.name], replicas - allocated), 0)
        result[s.name] = add
        allocated += add
    if allocated >= replicas:
        return result
    for s in subsets:
        add = max(min(highs[s.name] - lows[s.name], replicas - allocated), 0)
        result[s.name] += add
        allocated += add
    return result


def _allocate_specific(
    replicas: int | None, subsets: Sequence[SubsetSpec], current: Mapping[str, int]
) -> dict[str, int]:
    """specificAllocator: fixed values first, the rest spread evenly over the others.

    Remainders go to the unspecified subsets that sort last by (current replicas, name), i.e. the
    ones that already run the most pods, then the larger name.
    """
    expected = -1 if replicas is None else replicas
    fixed = {
        s.name: parse_subset_replicas(expected, s.replicas)
        for s in subsets
        if s.replicas is not None
    }
    result = {s.name: fixed.get(s.name, 0) for s in subsets}
    order = sorted(subsets, key=lambda s: (current.get(s.name, 0), s.name))
    left = [s.name for s in order if s.name not in fixed]
    if left:
        average, remainder = divmod(expected - sum(fixed.values()), len(left))
        for name in reversed(left):
            result[name] = average + (1 if remainder > 0 else 0)
            remainder -= 1
    return result


def allocate_subsets(
    replicas: int | None,
    subsets: Sequence[SubsetSpec],
    *,
    adaptive: bool = False,
    current_replicas: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Replicas per subset as OpenKruise v1.9.0 allocates them, in subset order.

    - Fixed (default): integer and percentage subsets get their value; the subsets without one
      share the rest evenly. replicas=None is Kruise's unset spec.replicas: every subset must then
      give an integer.
    - Any minReplicas/maxReplicas: every subset gets its minimum, in order, then up to its maximum.
    - adaptive=True (scheduleStrategy.type Adaptive, with or without reserveUnschedulablePods):
      the same min/max walk; subsets may not set replicas.

    Data only the member has, with the defaults used here: current_replicas is each existing
    subset workload's spec.replicas (it only decides who gets the +1 remainders; default: none
    exist yet). The Adaptive strategy also looks at running and unschedulable pods; this models
    the state before any pod exists.
    Raises ValueError for what the member's Kruise webhook or allocator rejects.
    """
    if replicas is not None:
        _check_replicas(replicas, "UnitedDeployment replicas")
    _validate_subsets(replicas, subsets, adaptive)
    current = dict(current_replicas or {})
    for name, value in current.items():
        _check_replicas(value, f"current replicas of subset {name!r}")
    if adaptive or any(s.min_replicas is not None or s.max_replicas is not None for s in subsets):
        return _allocate_min_max(replicas or 0, subsets)
    return _allocate_specific(replicas, subsets, current)


# --- Both: what each member runs ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlacementPlan:
    """Where the replicas of one UnitedDeployment go; empty mappings for what was not asked."""

    replicas: int
    members: Mapping[str, int]
    """Member cluster -> replicas (with weights)."""
    subsets: Mapping[str, int]
    """Subset -> replicas, summed over all members (with subsets)."""
    member_subsets: Mapping[str, Mapping[str, int]]
    """Member cluster -> subset -> replicas (with weights and subsets)."""


def plan_placement(
    replicas: int,
    weights: Mapping[str, int] | None,
    subsets: Sequence[SubsetSpec] | None,
    *,
    resource_uid: str = "",
    adaptive: bool = False,
) -> PlacementPlan:
    """Karmada divides `replicas` by `weights`; Kruise then splits each member's share by subset."""
    _check_replicas(replicas, "replicas")
    if weights is None:
        if subsets is None:
            raise ValueError("give weights, subsets or both")
        per_subset = allocate_subsets(replicas, subsets, adaptive=adaptive)
        return PlacementPlan(replicas, _frozen({}), _frozen(per_subset), _frozen({}))
    members = divide_static_weights(replicas, weights, resource_uid=resource_uid)
    if subsets is None:
        return PlacementPlan(replicas, _frozen(members), _frozen({}), _frozen({}))
    by_member: dict[str, Mapping[str, int]] = {}
    totals = dict.fromkeys((s.name for s in subsets), 0)
    for member, count in members.items():
        try:
            split = allocate_subsets(count, subsets, adaptive=adaptive)
        except ValueError as err:
            # ReviseReplica set spec.replicas to `count`, so the member's Kruise sees this object.
            raise ValueError(f"member {member} ({count} replicas): {err}") from err
        by_member[member] = _frozen(split)
        for name, value in split.items():
            totals[name] += value
    return PlacementPlan(replicas, _frozen(members), _frozen(totals), _frozen(by_member))


def _frozen(mapping: Mapping[str, _V]) -> Mapping[str, _V]:
    return MappingProxyType(dict(mapping))
