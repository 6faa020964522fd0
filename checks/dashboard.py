"""The dashboard's queries against Kueue v0.19.2's metrics: each parses and names what exists.

A real PromQL parser (promql-parser, the Rust `promql-parser` crate's bindings) reads each query;
every series it selects must be a metric family of `upstream.kueue_metrics` (a histogram's
`_bucket`/`_sum`/`_count` too), and every label it matches or groups by must be one that family
carries or the scrape job adds.
"""

from __future__ import annotations

from collections.abc import Iterable

import promql_parser

from builders.monitoring import CLUSTER_LABEL
from config.models import FleetConfig
from upstream.kueue_metrics import (
    CLUSTER_QUEUE_RESOURCE_METRICS,
    KUEUE_METRICS,
    OFF_BY_DEFAULT_GATES,
    metric_family,
)

# Labels every scraped series has besides Kueue's own: the scrape job's (builders.monitoring)
# and Prometheus' target labels.
SCRAPE_LABELS = frozenset({CLUSTER_LABEL, "pod", "job", "instance"})


def families(expr: str) -> set[str]:
    """The Kueue metric families a (parsing) query selects."""
    found: set[str] = set()

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            family = metric_family(node.name or "")
            if family is not None:
                found.add(family)

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


def empty_panels(fleet: FleetConfig, queries: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Panels that stay empty on this stack's Kueue, and the setting that would fill them."""
    out: dict[str, str] = {}
    gates = fleet.kueue.feature_gates
    for title, expr in queries:
        for family in sorted(families(expr)):
            gate = OFF_BY_DEFAULT_GATES.get(family)
            if gate is not None and not gates.get(gate, False):
                out[title] = f"kueue.featureGates: {{{gate}: true}}"
            resources = fleet.kueue.configuration.metrics.enable_cluster_queue_resources
            if family in CLUSTER_QUEUE_RESOURCE_METRICS and not resources:
                out[title] = "kueue.configuration.metrics: {enableClusterQueueResources: true}"
    return out


def query_problems(expr: str) -> list[str]:
    """What is wrong with one PromQL query; empty when it parses and names only what exists."""
    try:
        ast = promql_parser.parse(expr)
    except ValueError as err:
        return [f"does not parse: {err}"]
    problems: list[str] = []
    known: set[str] = set(SCRAPE_LABELS)
    grouped: list[str] = []

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            name = node.name or ""
            family = metric_family(name)
            if family is None:
                problems.append(f"{name!r} is not a metric of Kueue v0.19.2 (pkg/metrics)")
                return
            labels = set(KUEUE_METRICS[family].labels) | SCRAPE_LABELS
            if name.endswith("_bucket"):
                labels.add("le")
            known.update(labels)
            for m in node.matchers.matchers:
                if m.name != "__name__" and m.name not in labels:
                    problems.append(f"{name} has no label {m.name!r}")
        elif isinstance(node, promql_parser.AggregateExpr) and node.modifier is not None:
            grouped.extend(node.modifier.labels)

    promql_parser.walk(ast, visit)
    problems += [
        f"groups by {label!r}, which no selected metric has"
        for label in grouped
        if label not in known
    ]
    return problems


def dashboard_problems(queries: Iterable[tuple[str, str]]) -> list[str]:
    """Every problem of every (panel, query), named by its panel."""
    return [f"panel {title!r}: {p}" for title, expr in queries for p in query_problems(expr)]
