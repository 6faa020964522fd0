"""Placement: Karmada v1.18.2 static weights and OpenKruise v1.9.0 subset allocation.

Tables marked "upstream" are transcribed from the projects' own Go tests at the pinned tags.
"""

from __future__ import annotations

import dataclasses

import pytest

from preflight.whatif import parse_subsets, parse_weights
from upstream.placement import (
    PlacementPlan,
    SubsetSpec,
    allocate_subsets,
    allocate_webster_seats,
    divide_static_weights,
    parse_subset_replicas,
    plan_placement,
)

# pkg/util/helper/binding_test.go @ karmada v1.18.2
EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"
SEED_WEIGHTS = {"idc1": 1, "test-ucs": 2}


# --- the Karmada + OpenKruise walk-through: members idc1 and test-ucs at 1:2 ----------------------


def test_seed_six_replicas_split_two_four() -> None:
    assert divide_static_weights(6, SEED_WEIGHTS) == {"idc1": 2, "test-ucs": 4}


def test_seed_subsets_half_on_normal_nodes_in_each_member() -> None:
    plan = plan_placement(6, SEED_WEIGHTS, parse_subsets("subset-a=50%,subset-b"))
    assert plan.members == {"idc1": 2, "test-ucs": 4}
    assert plan.member_subsets == {
        "idc1": {"subset-a": 1, "subset-b": 1},
        "test-ucs": {"subset-a": 2, "subset-b": 2},
    }
    assert plan.subsets == {"subset-a": 3, "subset-b": 3}


@pytest.mark.parametrize("uid", ["", EVEN_UID, ODD_UID, "any-other-uid"])
def test_seed_split_does_not_depend_on_the_template_uid(uid: str) -> None:
    assert divide_static_weights(6, SEED_WEIGHTS, resource_uid=uid) == {"idc1": 2, "test-ucs": 4}


# --- Karmada: upstream tables ---------------------------------------------------------------------

# pkg/util/helper/webstermethod_test.go @ karmada v1.18.2, TestAllocateWebsterSeats (the Wikipedia
# Sainte-Lague example, 230,000 voters and 8 seats, round by round).
WIKIPEDIA = {"PartyA": 100000, "PartyB": 80000, "PartyC": 30000, "PartyD": 20000}


@pytest.mark.parametrize(
    ("seats", "expected"),
    [
        (1, (1, 0, 0, 0)),
        (2, (1, 1, 0, 0)),
        (3, (2, 1, 0, 0)),
        (4, (2, 1, 1, 0)),
        (5, (2, 2, 1, 0)),
        (6, (2, 2, 1, 1)),
        (7, (3, 2, 1, 1)),
        (8, (3, 3, 1, 1)),
    ],
)
def test_webster_wikipedia_rounds(seats: int, expected: tuple[int, ...]) -> None:
    assert allocate_webster_seats(seats, WIKIPEDIA) == dict(zip(WIKIPEDIA, expected, strict=True))


# Same file: the other rows. `names_descending` stands for the tie-breakers the test passes
# (nil and "a.Name < b.Name" are ascending, "a.Name > b.Name" descending).
@pytest.mark.parametrize(
    ("seats", "votes", "initial", "descending", "expected"),
    [
        pytest.param(1, {}, None, False, {}, id="empty party votes"),
        pytest.param(
            0, {"PartyA": 100, "PartyB": 200}, None, False, {"PartyA": 0, "PartyB": 0}, id="0 seats"
        ),
        pytest.param(0, {}, None, False, {}, id="no votes and 0 seats"),
        pytest.param(
            1,
            {"PartyA": 3, "PartyB": 1},
            {"PartyA": 1, "PartyB": 0},
            False,
            {"PartyA": 1, "PartyB": 1},
            id="tie broken by seats",
        ),
        pytest.param(
            1, {"PartyA": 1, "PartyB": 1}, None, False, {"PartyA": 1, "PartyB": 0}, id="by name"
        ),
        pytest.param(
            1, {"PartyA": 1, "PartyB": 1}, None, True, {"PartyA": 0, "PartyB": 1}, id="name desc"
        ),
        pytest.param(
            2,
            {"NewParty1": 1, "NewParty2": 1},
            {"OldParty": 0},
            False,
            {"NewParty1": 1, "NewParty2": 1, "OldParty": 0},
            id="new parties join",
        ),
        pytest.param(
            2,
            {"OldParty": 1, "NewParty": 1},
            {"OldParty": 1},
            False,
            {"NewParty": 2, "OldParty": 1},
            id="old and new compete",
        ),
        pytest.param(
            2,
            {"PartyA": 100},
            {"PartyB": 3},
            False,
            {"PartyA": 2, "PartyB": 3},
            id="initial party without votes",
        ),
    ],
)
def test_webster_upstream_rows(
    seats: int,
    votes: dict[str, int],
    initial: dict[str, int] | None,
    descending: bool,
    expected: dict[str, int],
) -> None:
    assert allocate_webster_seats(seats, votes, initial, names_descending=descending) == expected


# pkg/util/helper/binding_test.go @ karmada v1.18.2, Test_dispenser_AllocateByWeight: scale-up rows
# (the Dispenser starts from an initial assignment; the static strategy never does).
@pytest.mark.parametrize(
    ("new", "expected"),
    [(6, {"A": 2, "B": 4, "C": 6}), (3, {"A": 2, "B": 3, "C": 4}), (2, {"A": 1, "B": 3, "C": 4})],
)
def test_dispenser_scale_up_rows(new: int, expected: dict[str, int]) -> None:
    initial = {"A": 1, "B": 2, "C": 3}
    assert allocate_webster_seats(new, {"A": 1, "B": 2, "C": 3}, initial) == expected


# Same test, brand-new rows. Upstream expects "B: 0" in the dispenser result; the scheduler then
# drops zero-replica clusters (removeZeroReplicasCluster), which divide_static_weights includes.
@pytest.mark.parametrize(
    ("replicas", "weights", "uid", "expected"),
    [
        pytest.param(1, {"A": 2, "B": 1}, "", {"A": 1}, id="HA 2:1, 1 replica"),
        pytest.param(2, {"A": 2, "B": 1}, "", {"A": 1, "B": 1}, id="HA 2:1, 2 replicas"),
        pytest.param(3, {"A": 2, "B": 1}, "", {"A": 2, "B": 1}, id="HA 2:1, 3 replicas"),
        pytest.param(5, {"A": 170, "B": 110, "C": 60}, "", {"A": 2, "B": 2, "C": 1}, id="5 of 340"),
        pytest.param(6, {"A": 170, "B": 110, "C": 60}, "", {"A": 3, "B": 2, "C": 1}, id="6 of 340"),
        pytest.param(5, {"A": 1, "B": 1}, ODD_UID, {"A": 2, "B": 3}, id="odd uid"),
        pytest.param(5, {"A": 1, "B": 1}, EVEN_UID, {"A": 3, "B": 2}, id="even uid"),
    ],
)
def test_dispenser_brand_new_rows(
    replicas: int, weights: dict[str, int], uid: str, expected: dict[str, int]
) -> None:
    assert divide_static_weights(replicas, weights, resource_uid=uid) == expected


# pkg/scheduler/core/assignment_test.go @ karmada v1.18.2, Test_assignByStaticWeightStrategy.
M1, M2, M3 = "member1", "member2", "member3"


@pytest.mark.parametrize(
    ("replicas", "weights", "candidates", "expected"),
    [
        pytest.param(12, {M1: 3, M2: 2, M3: 1}, None, {M1: 6, M2: 4, M3: 2}, id="12, 3:2:1"),
        pytest.param(12, {}, [M1, M2, M3], {M1: 4, M2: 4, M3: 4}, id="12, default weight"),
        pytest.param(13, {M1: 3, M2: 2, M3: 1}, None, {M1: 7, M2: 4, M3: 2}, id="13, 3:2:1"),
        pytest.param(14, {M1: 3, M2: 2, M3: 1}, None, {M1: 7, M2: 5, M3: 2}, id="14, 3:2:1"),
        # Upstream row lists both clusters with 0; the scheduler then removes them.
        pytest.param(0, {M1: 1, M2: 1}, None, {}, id="0 replicas"),
        pytest.param(2, {M1: 1}, [M1, M2], {M1: 2}, id="cluster without weight ignored"),
        # Upstream has two rules for member1 (1 and 2); the effective weight is their maximum.
        pytest.param(3, {M1: max(1, 2), M2: 1}, None, {M1: 2, M2: 1}, id="multiple weights"),
    ],
)
def test_assign_by_static_weight_rows(
    replicas: int,
    weights: dict[str, int],
    candidates: list[str] | None,
    expected: dict[str, int],
) -> None:
    assert divide_static_weights(replicas, weights, candidates=candidates) == expected


# --- Karmada: edge cases -------------------------------------------------------------------------


def test_one_member_takes_everything() -> None:
    assert divide_static_weights(7, {"only": 3}) == {"only": 7}


@pytest.mark.parametrize(
    ("uid", "expected"),
    [("", {"a": 3, "b": 3, "c": 2, "d": 2}), (ODD_UID, {"a": 2, "b": 2, "c": 3, "d": 3})],
)
def test_equal_weights_remainder_goes_by_name_order(uid: str, expected: dict[str, int]) -> None:
    assert divide_static_weights(10, dict.fromkeys("abcd", 5), resource_uid=uid) == expected


def test_many_members_fewer_replicas_than_members() -> None:
    assert divide_static_weights(3, dict.fromkeys("abcdef", 1)) == {"a": 1, "b": 1, "c": 1}


def test_weights_1_2_differ_from_floor_plus_remainder() -> None:
    # Webster favours the smaller member for HA: 2 replicas go 1/1, not 0/2 (pre-v1.16 Karmada).
    assert divide_static_weights(2, SEED_WEIGHTS) == {"idc1": 1, "test-ucs": 1}
    assert divide_static_weights(5, SEED_WEIGHTS) == {"idc1": 2, "test-ucs": 3}


def test_large_weights_keep_the_float_tie_rules() -> None:
    assert divide_static_weights(4, {"a": 2**40, "b": 2**40 + 1}) == {"a": 2, "b": 2}


def test_weighted_cluster_that_is_not_a_candidate_gets_nothing() -> None:
    assert divide_static_weights(4, {"a": 1, "b": 1}, candidates=["b"]) == {"b": 4}


def test_no_candidate_has_a_weight_so_all_weigh_one() -> None:
    assert divide_static_weights(4, {"a": 5}, candidates=["x", "y"]) == {"x": 2, "y": 2}


def test_empty_workload_propagation_keeps_zero_members() -> None:
    got = divide_static_weights(
        1, {"a": 1, "b": 1}, candidates=["a", "b", "c"], empty_workload_propagation=True
    )
    assert got == {"a": 1, "b": 0, "c": 0}


def test_zero_replicas_without_requirements_go_everywhere() -> None:
    got = divide_static_weights(0, {"a": 1}, candidates=["a", "b"], has_replica_requirements=False)
    assert got == {"a": 0, "b": 0}


@pytest.mark.parametrize(
    ("replicas", "weights", "candidates", "message"),
    [
        (1, {}, None, "no clusters"),
        (1, {"a": 0}, None, "at least 1"),
        (1, {"a": True}, None, "integer"),
        (-1, {"a": 1}, None, "between 0"),
        (2**31, {"a": 1}, None, "between 0"),
        (1, {"a": 1}, [], "no clusters"),
    ],
)
def test_divide_rejects(
    replicas: int, weights: dict[str, int], candidates: list[str] | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        divide_static_weights(replicas, weights, candidates=candidates)


# --- Kruise: upstream tables ----------------------------------------------------------------------


def _subsets(*names: str) -> list[SubsetSpec]:
    return [SubsetSpec(name) for name in names]


# pkg/controller/uniteddeployment/allocator_test.go @ kruise v1.9.0, TestScaleReplicas: nothing
# specified; `current` is each subset's existing spec.replicas, which decides the remainders.
@pytest.mark.parametrize(
    ("current", "replicas", "expected"),
    [
        ({"t1": 1, "t2": 4, "t3": 2, "t4": 2}, 5, {"t1": 1, "t2": 2, "t3": 1, "t4": 1}),
        ({"t1": 2}, 0, {"t1": 0}),
        ({"t1": 1, "t2": 4, "t3": 2, "t4": 2}, 17, {"t1": 4, "t2": 5, "t3": 4, "t4": 4}),
        ({"t1": 2, "t2": 4, "t3": 2, "t4": 2}, 9, {"t1": 2, "t2": 3, "t3": 2, "t4": 2}),
        ({"t1": 0, "t2": 10}, 19, {"t1": 9, "t2": 10}),
        ({"t1": 0, "t2": 10}, 21, {"t1": 10, "t2": 11}),
    ],
)
def test_scale_replicas_rows(
    current: dict[str, int], replicas: int, expected: dict[str, int]
) -> None:
    got = allocate_subsets(replicas, _subsets(*current), current_replicas=current)
    assert got == expected


# Same file, TestSpecifyValidReplicas. None is Kruise's unset spec.replicas (-1 in the test).
@pytest.mark.parametrize(
    ("current", "replicas", "fixed", "expected"),
    [
        (
            {"t1": 1, "t2": 4, "t3": 2, "t4": 2},
            27,
            {"t1": 4, "t3": 4},
            {"t1": 4, "t2": 10, "t3": 4, "t4": 9},
        ),
        (
            {"t1": 2, "t2": 4, "t3": 2, "t4": 2},
            8,
            {"t1": 4, "t3": 4},
            {"t1": 4, "t2": 0, "t3": 4, "t4": 0},
        ),
        (
            {"t1": 2, "t2": 4, "t3": 2, "t4": 2},
            16,
            {"t1": 4, "t2": 4, "t3": 4, "t4": 4},
            {"t1": 4, "t2": 4, "t3": 4, "t4": 4},
        ),
        (
            {"t1": 4, "t2": 2, "t3": 2, "t4": 2},
            10,
            {"t1": 1, "t2": 2, "t3": 3},
            {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        ),
        (
            {"t1": 4, "t2": 2, "t3": 2, "t4": 2},
            10,
            {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
            {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        ),
        (
            {"t1": 4, "t2": 2, "t3": 2, "t4": 2},
            None,
            {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
            {"t1": 1, "t2": 2, "t3": 3, "t4": 4},
        ),
    ],
)
def test_specify_valid_replicas_rows(
    current: dict[str, int],
    replicas: int | None,
    fixed: dict[str, int],
    expected: dict[str, int],
) -> None:
    subsets = [SubsetSpec(name, fixed.get(name)) for name in current]
    assert allocate_subsets(replicas, subsets, current_replicas=current) == expected


# Same file, TestSpecifyInvalidReplicas: upstream leaves the subsets as they were; we raise.
@pytest.mark.parametrize(
    ("fixed", "message"),
    [({"t1": 6, "t2": 6}, "must equal"), ({"t1": 10, "t2": 11}, "greater than")],
)
def test_specify_invalid_replicas_rows(fixed: dict[str, int], message: str) -> None:
    subsets = [SubsetSpec(name, value) for name, value in fixed.items()]
    with pytest.raises(ValueError, match=message):
        allocate_subsets(14, subsets, current_replicas={"t1": 10, "t2": 4})


# Same file, TestCapacityAllocator (-1 = no maxReplicas), and the start rows of
# TestDefaultAdaptiveAllocation and TestReservedAdaptiveAllocation (no pods exist yet).
@pytest.mark.parametrize(
    ("replicas", "mins", "maxes", "adaptive", "expected"),
    [
        pytest.param(10, [2] * 5, [5, 5, 5, 5, -1], False, [2, 2, 2, 2, 2], id="sum(min) == n"),
        pytest.param(14, [2] * 5, [5, 5, 5, 5, -1], False, [5, 3, 2, 2, 2], id="sum(min) < n"),
        pytest.param(5, [2] * 5, [5, 5, 5, 5, -1], False, [2, 2, 1, 0, 0], id="sum(min) > n"),
        pytest.param(4, [0] * 4, [2, -1, -1, -1], True, [2, 2, 0, 0], id="adaptive start"),
        pytest.param(8, [1] * 4, [2, 2, 2, -1], True, [2, 2, 2, 2], id="reserved 2 each"),
        pytest.param(2, [-1] * 3, [-1] * 3, True, [2, 0, 0], id="reserved 3 infinity"),
        pytest.param(2, [1, 1, 0], [-1] * 3, True, [1, 1, 0], id="reserved with min"),
    ],
)
def test_min_max_rows(
    replicas: int, mins: list[int], maxes: list[int], adaptive: bool, expected: list[int]
) -> None:
    subsets = [
        SubsetSpec(
            f"subset-{i}",
            min_replicas=None if low == -1 else low,
            max_replicas=None if high == -1 else high,
        )
        for i, (low, high) in enumerate(zip(mins, maxes, strict=True))
    ]
    got = allocate_subsets(replicas, subsets, adaptive=adaptive)
    assert list(got.values()) == expected


# pkg/webhook/uniteddeployment/validating/uniteddeployment_validation_test.go @ kruise v1.9.0:
# TestValidateUnitedDeployment (subset rows) and Test (min/max rows; -1 = no maxReplicas).
@pytest.mark.parametrize(
    ("replicas", "values", "expected"),
    [
        pytest.param(None, [1, 1], {"subset1": 1, "subset2": 1}, id="unset replicas, all ints"),
        pytest.param(10, [1, None], {"subset1": 1, "subset2": 9}, id="one unspecified"),
        pytest.param(10, [1, "90%"], {"subset1": 1, "subset2": 9}, id="int and percent"),
        pytest.param(10, ["71%", "29%"], {"subset1": 7, "subset2": 3}, id="two percents"),
        pytest.param(10, [None], {"subset1": 10}, id="single unspecified"),
    ],
)
def test_webhook_success_rows(
    replicas: int | None, values: list[int | str | None], expected: dict[str, int]
) -> None:
    subsets = [SubsetSpec(f"subset{i + 1}", value) for i, value in enumerate(values)]
    assert allocate_subsets(replicas, subsets) == expected


@pytest.mark.parametrize(
    ("replicas", "values", "message"),
    [
        pytest.param(10, [1, "71%"], "must equal", id="subset replicas is too small"),
        pytest.param(10, ["71%", "90%"], "greater than", id="subset replicas is too much"),
        pytest.param(None, ["90%", 1], "percentage", id="percent without spec replicas"),
    ],
)
def test_webhook_failure_rows(replicas: int | None, values: list[int | str], message: str) -> None:
    subsets = [SubsetSpec(f"subset{i + 1}", value) for i, value in enumerate(values)]
    with pytest.raises(ValueError, match=message):
        allocate_subsets(replicas, subsets)


@pytest.mark.parametrize(
    ("mins", "maxes", "message"),
    [
        pytest.param([2, 2, 2, 6, 2], [5, 5, 5, 5, -1], "greater than maxReplicas", id="min > max"),
        pytest.param([2] * 5, [5] * 5, "leave maxReplicas empty", id="all max set"),
    ],
)
def test_webhook_capacity_failure_rows(mins: list[int], maxes: list[int], message: str) -> None:
    subsets = [
        SubsetSpec(f"subset-{i}", min_replicas=low, max_replicas=None if high == -1 else high)
        for i, (low, high) in enumerate(zip(mins, maxes, strict=True))
    ]
    with pytest.raises(ValueError, match=message):
        allocate_subsets(5, subsets)


# --- Kruise: percentages and edge cases -----------------------------------------------------------


@pytest.mark.parametrize(
    ("ud", "value", "expected"),
    [
        (5, "50%", 3),  # 2.5 rounds half up
        (1, "50%", 1),
        (3, "50%", 2),
        (10, "33%", 3),
        (10, "29%", 3),
        (10, "71%", 7),
        (7, "0%", 0),
        (7, "100%", 7),
        (4, "+50%", 2),  # strconv.ParseInt accepts a sign
        (4, "050%", 2),
        (4, 3, 3),
    ],
)
def test_parse_subset_replicas(ud: int, value: int | str, expected: int) -> None:
    assert parse_subset_replicas(ud, value) == expected


@pytest.mark.parametrize(
    ("ud", "value", "message"),
    [
        (4, -1, "less than 0"),
        (4, "101%", r"range \[0, 100\]"),
        (4, "-5%", r"range \[0, 100\]"),
        (4, "5", "suffix"),
        (4, "abc%", "percentage integer"),
        (4, "1.5%", "percentage integer"),
        (-1, "50%", "empty"),
        (4, 2**31, "int32"),
    ],
)
def test_parse_subset_replicas_rejects(ud: int, value: int | str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_subset_replicas(ud, value)


def test_rest_spread_evenly_with_remainder_to_larger_names() -> None:
    got = allocate_subsets(10, _subsets("a", "b", "c", "d"))
    assert got == {"a": 2, "b": 2, "c": 3, "d": 3}


def test_zero_replicas() -> None:
    assert allocate_subsets(0, parse_subsets("subset-a=50%,subset-b")) == {
        "subset-a": 0,
        "subset-b": 0,
    }


def test_percentages_that_round_up_leave_less_for_the_rest() -> None:
    assert allocate_subsets(3, parse_subsets("a=50%,b")) == {"a": 2, "b": 1}


@pytest.mark.parametrize(
    ("replicas", "subsets", "adaptive", "message"),
    [
        (4, [], False, "no subsets"),
        (4, [SubsetSpec("a", 1), SubsetSpec("a")], False, "duplicated"),
        (4, [SubsetSpec("Bad_Name")], False, "DNS-1123"),
        (4, [SubsetSpec("")], False, "name is required"),
        (4, [SubsetSpec("a", 1, min_replicas=1), SubsetSpec("b")], False, "mutually exclusive"),
        (None, [SubsetSpec("a", min_replicas=1), SubsetSpec("b")], False, "must be set"),
        (None, [SubsetSpec("a", 1), SubsetSpec("b")], False, "every subset"),
        (4, [SubsetSpec("a", 1), SubsetSpec("b")], True, "forbidden"),
        (-1, [SubsetSpec("a")], False, "between 0"),
    ],
)
def test_allocate_rejects(
    replicas: int | None, subsets: list[SubsetSpec], adaptive: bool, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        allocate_subsets(replicas, subsets, adaptive=adaptive)


def test_adaptive_without_subsets_is_empty() -> None:
    assert allocate_subsets(3, [], adaptive=True) == {}


# --- plan_placement -------------------------------------------------------------------------------


def test_plan_weights_only() -> None:
    plan = plan_placement(9, {"a": 1, "b": 2}, None)
    assert plan == PlacementPlan(9, {"a": 3, "b": 6}, {}, {})


def test_plan_subsets_only() -> None:
    plan = plan_placement(5, None, parse_subsets("a=50%,b"))
    assert (plan.members, plan.subsets, plan.member_subsets) == ({}, {"a": 3, "b": 2}, {})


def test_plan_member_shares_are_split_by_kruise_per_member() -> None:
    # 5 replicas: idc1 2, test-ucs 3; 50% rounds half up inside each member: 1+2 = 3, not 50% of 5.
    plan = plan_placement(5, SEED_WEIGHTS, parse_subsets("subset-a=50%,subset-b"))
    assert plan.member_subsets == {
        "idc1": {"subset-a": 1, "subset-b": 1},
        "test-ucs": {"subset-a": 2, "subset-b": 1},
    }
    assert plan.subsets == {"subset-a": 3, "subset-b": 2}


def test_plan_fixed_subset_counts_break_in_the_members() -> None:
    # Karmada revises spec.replicas but not the subsets, so the member's webhook rejects 3+3 > 2.
    with pytest.raises(ValueError, match=r"member idc1 \(2 replicas\)"):
        plan_placement(6, SEED_WEIGHTS, parse_subsets("subset-a=3,subset-b=3"))


def test_plan_skips_members_without_replicas() -> None:
    plan = plan_placement(1, SEED_WEIGHTS, parse_subsets("subset-a=50%,subset-b"))
    assert plan.member_subsets == {"test-ucs": {"subset-a": 1, "subset-b": 0}}


def test_plan_needs_something_to_plan() -> None:
    with pytest.raises(ValueError, match="weights, subsets or both"):
        plan_placement(3, None, None)


def test_plan_is_immutable() -> None:
    plan = plan_placement(6, SEED_WEIGHTS, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.replicas = 7  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.members["idc1"] = 5  # type: ignore[index]


# --- parsers --------------------------------------------------------------------------------------


def test_parse_weights() -> None:
    assert parse_weights("idc1=1,test-ucs=2") == SEED_WEIGHTS
    assert parse_weights(" idc1 = 1 , test-ucs=2 ") == SEED_WEIGHTS


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no weights"),
        ("idc1", "<cluster>=<weight>"),
        ("idc1=0", ">= 1"),
        ("idc1=-1", ">= 1"),
        ("idc1=x", ">= 1"),
        ("idc1=1.5", ">= 1"),
        ("IDC1=1", "DNS-1123"),
        ("a" * 49 + "=1", "48"),
        ("idc1=1,idc1=2", "twice"),
        ("idc1=1,", "empty entry"),
    ],
)
def test_parse_weights_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_weights(text)


def test_parse_subsets() -> None:
    assert parse_subsets("subset-a=50%,subset-b") == [
        SubsetSpec("subset-a", "50%"),
        SubsetSpec("subset-b"),
    ]
    assert parse_subsets("a=3, b=0%") == [SubsetSpec("a", 3), SubsetSpec("b", "0%")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no subsets"),
        ("a=101%", "0-100%"),
        ("a=-1", "N or N%"),
        ("a=1.5", "N or N%"),
        ("a=", "N or N%"),
        ("a=%", "N or N%"),
        ("Subset", "DNS-1123"),
        ("a,a=1", "twice"),
    ],
)
def test_parse_subsets_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_subsets(text)
