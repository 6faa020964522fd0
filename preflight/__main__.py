"""`python -m preflight <stack> [--json] [--render DIR] [--against [REF]] [--markdown]
[--diagram]`, `python -m preflight placement ...`, `python -m preflight dashboard [--out FILE]`
and `python -m preflight alerts <stack> [--out FILE]`.

Exit status: 0 valid, 1 invalid config (every error printed with its line and key path), 2 bad
usage or a Python without the project's environment.
"""

from __future__ import annotations

import environment

# Before the first third-party import: a Python without the project's packages gets the command
# to run instead of a traceback.
environment.require("preflight")

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from checks.stack import load_from_file
from config import login
from config.errors import ConfigError, Written
from config.loader import read_stack_config, stack_lines
from preflight.access import access_section, azure_access
from preflight.plan import build_plan, quota_section
from preflight.render import write_render
from preflight.sources import collect, extra_sections
from upstream.aks import GPU_RESOURCE


def _stack_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m preflight",
        description="Validate Pulumi.<stack>.yaml offline, print the plan, render manifests.",
        epilog="What-if placement without a stack: python -m preflight placement --help",
    )
    parser.add_argument("stack", help="stack name: reads Pulumi.<stack>.yaml")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("--render", type=Path, metavar="DIR", help="write manifests to DIR")
    parser.add_argument(
        "--against",
        nargs="?",
        const="",
        metavar="REF",
        help="diff the plan against the stack at git REF (default: merge base with main)",
    )
    parser.add_argument(
        "--markdown", action="store_true", help="with --against/--diagram: GitHub Markdown"
    )
    parser.add_argument("--diagram", action="store_true", help="a Mermaid picture of the stack")
    return parser


def _print_tables(plan: dict[str, Any], console: Console, warnings: Sequence[str] = ()) -> None:
    console.print(
        f"[bold]stack[/] {plan['stack']}  [bold]resource group[/] {plan['resourceGroup'] or '-'}"
        f"  [bold]location[/] {plan['location']}"
    )
    clusters = Table(title="Clusters", title_justify="left")
    for column in ("cluster", "role", "k8s", "tier", "network", "virtual nodes", "support ends"):
        clusters.add_column(column)
    for c in plan["clusters"]:
        clusters.add_row(
            c["name"],
            c["role"],
            c["kubernetesVersion"],
            c["skuTier"],
            c["network"],
            "yes" if c["virtualNodes"] else "no",
            c.get("supportEnds", "-"),
        )
    console.print(clusters)
    upgrades = Table(title="Upgrades (docs/upgrades.md)", title_justify="left")
    for column in ("cluster", "channel", "window", "node OS", "node OS window", "batch pods"):
        upgrades.add_column(column)
    for c in plan["clusters"]:
        upgrades.add_row(
            c["name"],
            c.get("upgradeChannel", "-"),
            c.get("upgradeWindow", "-"),
            c.get("nodeOsChannel", "-"),
            c.get("nodeOsWindow", "-"),
            c.get("batchPods", "-"),
        )
    console.print(upgrades)
    pools = Table(title="Node pools (max allocatable = per-node allocatable x maxNodes)")
    for column in (
        "cluster",
        "pool",
        "mode",
        "vm size",
        "nodes",
        "node alloc",
        "max alloc",
        "k8s",
        "upgrade",
    ):
        pools.add_column(column, justify="right" if column == "nodes" else "left")
    for c in plan["clusters"]:
        for p in c["pools"]:
            node, most = p["nodeAllocatable"], p["maxAllocatable"]
            gpus = f", {most[GPU_RESOURCE]} GPU" if most[GPU_RESOURCE] else ""
            pools.add_row(
                c["name"],
                p["pool"],
                p["mode"],
                p["vmSize"],
                f"{p['minNodes']}..{p['maxNodes']}",
                f"{node['cpu']} CPU, {node['memory']}",
                f"{most['cpu']} CPU, {most['memory']}{gpus}",
                p.get("kubernetesVersion", "-"),
                p.get("upgrade", "-"),
            )
    console.print(pools)
    idle = plan["idle"]
    paid = ", ".join(idle["controlPlanes"]) or "none"
    console.print(
        f"[bold]Idle cost drivers[/]: {idle['nodes']} nodes ({idle['vcpus']} vCPU) stay up at "
        f"zero load; paid control-plane tiers: {paid}"
    )
    for section in plan.get("sections", []):
        table = Table(title=section["title"], title_justify="left")
        for column in section["columns"]:
            table.add_column(column)
        for row in section["rows"]:
            table.add_row(*(str(v) for v in row))
        console.print(table)
    for text in warnings:
        # Paths name items in brackets (`pools[gpu]`): escaped, never read as markup.
        console.print(f"[yellow]warning[/] {escape(text)}", soft_wrap=True, highlight=False)


def _invalid(err: ConfigError, *, as_json: bool) -> int:
    """Every error with its key path (JSON or red text); exit status 1."""
    if as_json:
        # `path` addresses the key by position; `at` names the items, as the text does.
        errors: list[dict[str, Any]] = []
        written = err.written
        for issue in err.errors:
            found = written.found(issue)
            error: dict[str, Any] = {"path": issue.path, "at": written.named(issue).path}
            error["message"] = written.with_text(issue, found).message
            if found is not None:  # the line of its key in the stack file
                error["line"] = found.line
            errors.append(error)
        print(json.dumps({"valid": False, "errors": errors}, indent=2))
    else:
        # soft_wrap: a key path is never broken across lines (rich wraps at 80 columns
        # when stderr is a pipe), so it can be copied and grepped whole.
        Console(stderr=True, soft_wrap=True).print(
            err.render(), style="red", highlight=False, markup=False
        )
    return 1


def run_stack(argv: list[str], console: Console) -> int:
    parser = _stack_parser()
    args = parser.parse_args(argv)
    if args.against is not None or args.diagram:
        if args.render:
            parser.error("--render does not combine with --against/--diagram")
        from preflight.review import run_review  # noqa: PLC0415 - only these flags

        return run_review(args)
    if args.markdown:
        parser.error("--markdown needs --against or --diagram")
    try:
        fleet, warnings = load_from_file(args.stack)
    except ConfigError as err:
        return _invalid(err, as_json=args.json)
    written = fleet.model_dump(mode="json", by_alias=True)
    # Azure's own models of the API versions sent: imported here only (docs/azure-api-check.md).
    from checks.azure_api import azure_issues  # noqa: PLC0415

    stack_config = read_stack_config(args.stack)
    deployer = login.resolve(
        fleet.deployer_principal_type,
        login.detect(provider_config=login.provider_keys(stack_config[0] if stack_config else {})),
    )
    refused = azure_issues(fleet, args.stack, deployer.principal_type)
    if refused:
        source = f"the Azure requests of stack {args.stack}"
        lines = stack_lines(args.stack)
        return _invalid(ConfigError(refused, source, written, lines), as_json=args.json)
    sections, more_warnings = extra_sections(fleet)
    every_warning = [*warnings, *more_warnings]
    plan = build_plan(args.stack, fleet, every_warning)
    # As errors read: named paths, lines, one warning for anchored text (docs/checks.md).
    shown = Written(written, stack_lines(args.stack) if every_warning else None)
    for w, issue in zip(plan["warnings"], every_warning, strict=True):
        w["at"] = shown.named(issue).path
        found = shown.found(issue)
        if found is not None:  # the line of its key in the stack file
            w["line"] = found.line
    warning_lines = [shown.line_of(r) for r in shown.reports(every_warning)]
    plan["deployer"] = {"principalType": deployer.principal_type, "reason": deployer.reason}
    plan["azureAccess"] = azure_access(fleet, deployer)
    plan["sections"] = [
        quota_section(plan["azureQuotas"]),
        access_section(plan["azureAccess"]),
        *sections,
    ]
    if args.render:
        manifests, releases = collect(fleet)
        written = write_render(args.render, manifests, releases)
        plan["rendered"] = [str(p) for p in written]
    if args.json:
        print(json.dumps({"valid": True, **plan}, indent=2))
    else:
        _print_tables(plan, console, warning_lines)
        if args.render:
            console.print(f"rendered {len(plan['rendered'])} files into {args.render}")
    return 0


def run_dashboard(argv: list[str]) -> int:
    """The fleet's Grafana dashboard as JSON (docs/metrics.md), on stdout or into a file."""
    parser = argparse.ArgumentParser(
        prog="python -m preflight dashboard",
        description="Print the fleet's Grafana dashboard (Kueue and MultiKueue metrics) as JSON.",
    )
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the JSON to FILE")
    args = parser.parse_args(argv)
    from builders.dashboard import fleet_dashboard, panel_queries  # noqa: PLC0415
    from checks.dashboard import dashboard_problems  # noqa: PLC0415 - only this subcommand

    problems = dashboard_problems(panel_queries())
    if problems:
        Console(stderr=True, soft_wrap=True).print("\n".join(problems), style="red", markup=False)
        return 1
    text = json.dumps(fleet_dashboard(), indent=2, sort_keys=True) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
    return 0


def run_alerts(argv: list[str]) -> int:
    """The stack's Prometheus alert rules as a rule file (docs/metrics.md), on stdout or a file."""
    parser = argparse.ArgumentParser(
        prog="python -m preflight alerts",
        description="Print the stack's Prometheus alert rules (a rule file, YAML).",
    )
    parser.add_argument("stack", help="the stack whose Pulumi.<stack>.yaml to read")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the rules to FILE")
    args = parser.parse_args(argv)
    import yaml  # noqa: PLC0415 - only this subcommand

    from builders.alerts import alert_rules, rule_file  # noqa: PLC0415
    from checks.alerts import rule_problems  # noqa: PLC0415

    try:
        fleet, _ = load_from_file(args.stack)
    except ConfigError as err:
        return _invalid(err, as_json=False)
    problems = rule_problems(alert_rules(fleet))
    if problems:
        Console(stderr=True, soft_wrap=True).print("\n".join(problems), style="red", markup=False)
        return 1
    text = yaml.safe_dump(rule_file(fleet), sort_keys=False, width=100)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    console = Console(soft_wrap=False, width=140)
    if argv and argv[0] == "placement":
        from preflight.whatif import run_placement  # noqa: PLC0415 - only this subcommand

        return run_placement(argv[1:], console)
    if argv and argv[0] == "dashboard":
        return run_dashboard(argv[1:])
    if argv and argv[0] == "alerts":
        return run_alerts(argv[1:])
    return run_stack(argv, console)


if __name__ == "__main__":
    sys.exit(main())
