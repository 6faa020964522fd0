"""The alert rules' expressions against Kueue v0.19.2's metrics (as checks.dashboard does for
panels), plus the scrape job's own `up` series, which every scraped target has."""

from __future__ import annotations

from collections.abc import Iterable

import promql_parser

from builders.alerts import AlertRule
from checks.dashboard import SCRAPE_LABELS, query_problems

# Prometheus' synthetic series per target: its name and the labels it carries (the target's).
UP = "up"


def _without_up(expr: str) -> tuple[list[str], str]:
    """Problems of the `up` selectors (only target labels allowed), and the expression with them
    replaced by a Kueue series, so the rest is judged by the dashboard's rules."""
    problems: list[str] = []

    def visit(node: object) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name == UP:
            for m in node.matchers.matchers:
                if m.name != "__name__" and m.name not in SCRAPE_LABELS:
                    problems.append(f"up has no label {m.name!r}")

    promql_parser.walk(promql_parser.parse(expr), visit)
    # `up` carries only target labels; `kueue_build_info` carries them too (and more), so a
    # grouping by a target label stays valid and one by anything else stays refused.
    return problems, expr.replace(f"{UP}{{", "kueue_build_info{")


def rule_problems(rules: Iterable[AlertRule]) -> list[str]:
    """Every problem of every rule, named by the rule and its first line of summary."""
    out: list[str] = []
    for rule in rules:
        try:
            own, rest = _without_up(rule.expr)
        except ValueError as err:
            out.append(f"alert {rule.name} ({rule.summary}): does not parse: {err}")
            continue
        # An `up` label already refused is not refused again as kueue_build_info's.
        stand_in = {p.replace("up has", "kueue_build_info has", 1) for p in own}
        rest_problems = [p for p in query_problems(rest) if p not in stand_in]
        out += [f"alert {rule.name} ({rule.summary}): {p}" for p in own + rest_problems]
    return out
