"""`python -m fleetview status`, `python -m fleetview why <namespace>/<job>`, `... rbac`.

The kubeconfigs come from the stack's `kubeconfigs` output (`--stack`, or Pulumi's selected stack),
or from files (`--kubeconfig NAME=PATH`, repeated). Exit status: 0 answered (`status` always
answers, unreachable clusters included), 1 `why` found no Workload, 2 bad usage or no kubeconfigs.
"""

from __future__ import annotations

import environment

environment.require("fleetview")  # before the first third-party import: advice, not a traceback

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence

import yaml
from rich.console import Console

from fleetview.fetch import DEFAULT_TIMEOUT, SourceError, from_files, from_stack, read_all
from fleetview.rbac import reader_binding, reader_role
from fleetview.render import print_status, print_why
from fleetview.status import DEFAULT_STRANDED_AFTER, report
from fleetview.why import explain


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    source = common.add_mutually_exclusive_group()
    source.add_argument(
        "--stack", help="read the kubeconfigs output of this stack (default: the selected one)"
    )
    source.add_argument(
        "--kubeconfig",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a cluster's kubeconfig file (repeat per cluster), instead of the stack's outputs",
    )
    common.add_argument("--json", action="store_true", help="print JSON (stable keys)")
    common.add_argument(
        "--timeout",
        type=_positive,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="bound per cluster; a cluster that does not answer in time is a row saying so "
        f"(default {DEFAULT_TIMEOUT:.0f})",
    )
    common.add_argument(
        "--stranded-after",
        type=_positive,
        default=DEFAULT_STRANDED_AFTER,
        metavar="SECONDS",
        help="warn of Workloads holding manager quota without a worker for longer "
        f"(default {DEFAULT_STRANDED_AFTER:.0f})",
    )
    parser = argparse.ArgumentParser(
        prog="python -m fleetview",
        description="Read-only: where every job of the fleet is, and why (docs/observability.md).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("status", parents=[common], help="queues, dispatch, capacity, warnings")
    why = commands.add_parser("why", parents=[common], help="one job's story across the fleet")
    why.add_argument("job", metavar="NAMESPACE/JOB", help="the job (or Workload) to explain")
    rbac = commands.add_parser("rbac", help="print the read-only ClusterRole it needs (YAML)")
    rbac.add_argument("--group", help="also bind it to this group (e.g. an Entra ID group's ID)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "rbac":
        docs = [reader_role()] + ([reader_binding(args.group)] if args.group else [])
        print(yaml.safe_dump_all(docs, sort_keys=False), end="")
        return 0
    if args.command == "why":
        ns, sep, job = args.job.partition("/")
        if not (sep and ns and job) or "/" in job:
            parser.error(f"why: expected NAMESPACE/JOB, got {args.job!r}")
    try:
        kubeconfigs = from_files(args.kubeconfig) if args.kubeconfig else from_stack(args.stack)
    except SourceError as e:
        print(f"fleetview: {e}", file=sys.stderr)
        return 2
    if not kubeconfigs:
        print("fleetview: no clusters (the kubeconfigs output is empty)", file=sys.stderr)
        return 2
    snaps = read_all(kubeconfigs, args.timeout)
    now = dt.datetime.now(dt.UTC)
    console = Console()
    if args.command == "status":
        result = report(snaps, now, args.stranded_after)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_status(result, console)
        return 0
    answer = explain(snaps, args.job, now, args.stranded_after)
    if args.json:
        print(json.dumps(answer, indent=2))
    else:
        print_why(answer, console)
    return 0 if answer["workload"] else 1


if __name__ == "__main__":
    sys.exit(main())
