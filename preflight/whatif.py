"""`python -m preflight placement`: where replicas land, without a stack.

Weights alone give replicas per member (Karmada static weights), subsets alone the split of one
UnitedDeployment (Kruise), both together replicas per member and subset.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from upstream.k8s import dns_label_problem
from upstream.karmada import CLUSTER_NAME_MAX
from upstream.placement import INT32_MAX, INT64_MAX, PlacementPlan, SubsetSpec, plan_placement


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m preflight placement",
        description="Where the replicas of a UnitedDeployment land (Karmada static weights, "
        "then Kruise subsets in each member).",
    )
    parser.add_argument("--replicas", type=int, required=True, help="spec.replicas")
    parser.add_argument("--weights", help="member=weight,... e.g. idc1=1,test-ucs=2")
    parser.add_argument("--subsets", help="name=N|N%%,... the last may omit its value (the rest)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


def plan_as_data(plan: PlacementPlan) -> dict[str, Any]:
    data: dict[str, Any] = {"replicas": plan.replicas}
    if plan.members:
        data["members"] = dict(plan.members)
    if plan.subsets:
        data["subsets"] = dict(plan.subsets)
    if plan.member_subsets:
        data["memberSubsets"] = {m: dict(s) for m, s in plan.member_subsets.items()}
    return data


def placement_table(plan: PlacementPlan, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    subset_names = list(plan.subsets)
    table.add_column("member")
    table.add_column("replicas", justify="right")
    for name in subset_names:
        table.add_column(name, justify="right")
    if plan.member_subsets:
        for member, split in plan.member_subsets.items():
            row = [member, str(plan.members[member])]
            table.add_row(*row, *(str(split.get(n, 0)) for n in subset_names))
    elif plan.members:
        for member, count in plan.members.items():
            table.add_row(member, str(count))
    if plan.subsets:
        table.add_row("total", str(plan.replicas), *(str(plan.subsets[n]) for n in subset_names))
    return table


def run_placement(argv: list[str], console: Console) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.weights is None and args.subsets is None:
        parser.error("give --weights, --subsets or both")
    try:
        weights = parse_weights(args.weights) if args.weights is not None else None
        subsets = parse_subsets(args.subsets) if args.subsets is not None else None
        plan = plan_placement(args.replicas, weights, subsets)
    except ValueError as err:
        Console(stderr=True, soft_wrap=True).print(f"placement: {err}", style="red", markup=False)
        return 2
    if args.json:
        print(json.dumps(plan_as_data(plan), indent=2))
    else:
        console.print(placement_table(plan, f"{args.replicas} replicas"))
    return 0


# --- parsers of the command-line syntax ---------------------------------------------------------


def _items(text: str, what: str) -> list[str]:
    items = [item.strip() for item in text.split(",")]
    if not text.strip():
        raise ValueError(f"no {what} given")
    if any(not item for item in items):
        raise ValueError(f"empty entry in {what} {text!r}")
    return items


def parse_weights(text: str) -> dict[str, int]:
    """'idc1=1,test-ucs=2' -> {'idc1': 1, 'test-ucs': 2}; names are Karmada cluster names."""
    weights: dict[str, int] = {}
    for item in _items(text, "weights"):
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep:
            raise ValueError(f"weight entry {item!r} must look like <cluster>=<weight>")
        if len(name) > CLUSTER_NAME_MAX or dns_label_problem(name) is not None:
            raise ValueError(
                f"cluster name {name!r} must be a DNS-1123 label of at most {CLUSTER_NAME_MAX} "
                "characters"
            )
        if name in weights:
            raise ValueError(f"cluster {name!r} is given twice")
        if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= INT64_MAX:
            raise ValueError(f"weight of {name!r} must be an integer >= 1, got {value!r}")
        weights[name] = int(value)
    return weights


def parse_subsets(text: str) -> list[SubsetSpec]:
    """'subset-a=50%,subset-b' -> subsets; a value is N or N% (0-100); no value = takes the rest."""
    subsets: list[SubsetSpec] = []
    seen: set[str] = set()
    for item in _items(text, "subsets"):
        name, sep, value = (part.strip() for part in item.partition("="))
        if dns_label_problem(name) is not None:
            raise ValueError(f"subset name {name!r} must be a DNS-1123 label")
        if name in seen:
            raise ValueError(f"subset {name!r} is given twice")
        seen.add(name)
        if not sep:
            subsets.append(SubsetSpec(name))
            continue
        digits = value.removesuffix("%")
        if not digits.isascii() or not digits.isdigit() or int(digits) > INT32_MAX:
            raise ValueError(f"replicas of subset {name!r} must be N or N%, got {value!r}")
        if value.endswith("%"):
            if int(digits) > 100:
                raise ValueError(f"replicas of subset {name!r} must be 0-100%, got {value!r}")
            subsets.append(SubsetSpec(name, value))
        else:
            subsets.append(SubsetSpec(name, int(digits)))
    return subsets
