"""`python -m fleetview status`, `python -m fleetview why <namespace>/<job>`, `... rbac`.

The kubeconfigs come from the stack's `kubeconfigs` output (`--stack`, or Pulumi's selected stack),
or from files (`--kubeconfig NAME=PATH`, repeated). Exit status (docs/observability.md "Exit
status"): 0 every cluster answered (and, with `--fail-on warning`, no warning fired); 1 `status
--fail-on warning` with a warning, or `why` found no Workload; 2 bad usage, no kubeconfigs, or a
cluster could not be read (one line per such cluster on stderr; the answer is still printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import yaml
from rich.console import Console

from fleetview.fetch import (
    DEFAULT_TIMEOUT,
    SourceError,
    from_files,
    from_stack,
    read_all,
    selected_stack,
)
from fleetview.kubelogin import LOGINS
from fleetview.rbac import reader_binding, reader_role
from fleetview.render import print_status, print_why
from fleetview.settings import Timings, from_stack_file
from fleetview.status import DEFAULT_STRANDED_AFTER, report
from fleetview.why import explain, states

STACK_FILE: Final = re.compile(r"Pulumi\.(.+)\.yaml")
EXIT_OK = 0
EXIT_FLAGGED = 1  # status: a warning fired under --fail-on warning; why: no Workload found
EXIT_UNREAD = 2  # bad usage, no kubeconfigs, or a cluster could not be read


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
        help="grace for what Kueue does at once (nominate a reserved job's workers, release an "
        "evicted job's quota) before a warning; the Incremental dispatcher's rounds come on top "
        f"(default {DEFAULT_STRANDED_AFTER:.0f})",
    )
    common.add_argument(
        "--login",
        choices=LOGINS,
        help="rewrite kubelogin users for this non-interactive login, as `kubelogin "
        "convert-kubeconfig -l LOGIN` would (an AKS Entra ID kubeconfig waits for a person "
        "with its default devicecode)",
    )
    common.add_argument(
        "--timings-from",
        metavar="STACK|PATH",
        help="judge waits by this stack's dispatcher and timeouts (Pulumi.STACK.yaml in the "
        "project, or a path to a Pulumi.<stack>.yaml file elsewhere); default: the stack read, "
        "else Kueue's defaults",
    )
    parser = argparse.ArgumentParser(
        prog="python -m fleetview",
        description="Read-only: where every job of the fleet is, and why (docs/observability.md).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    status = commands.add_parser(
        "status", parents=[common], help="queues, dispatch, capacity, warnings"
    )
    status.add_argument(
        "--fail-on",
        choices=("unread", "warning"),
        default="unread",
        help="exit 1 when a warning fires (warning), or only 2 when a cluster cannot be read "
        "(unread, the default)",
    )
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
        return EXIT_UNREAD
    if not kubeconfigs:
        print("fleetview: no clusters (the kubeconfigs output is empty)", file=sys.stderr)
        return EXIT_UNREAD
    timings = _timings(args)
    snaps = read_all(kubeconfigs, args.timeout, args.login)
    now = dt.datetime.now(dt.UTC)
    console = Console()
    if args.command == "status":
        found = states(snaps, now, args.stranded_after, timings)
        result = report(snaps, now, args.stranded_after, timings, found)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_status(result, console)
        code = EXIT_FLAGGED if args.fail_on == "warning" and result["warnings"] else EXIT_OK
    else:
        answer = explain(snaps, args.job, now, args.stranded_after, timings)
        if args.json:
            print(json.dumps(answer, indent=2))
        else:
            print_why(answer, console)
        code = EXIT_OK if answer["workload"] else EXIT_FLAGGED
    unread = [s for s in snaps if not s.reachable]
    for snap in unread:
        print(f"fleetview: {snap.cluster}: {snap.error}", file=sys.stderr)
    return EXIT_UNREAD if unread else code


def _timings(args: argparse.Namespace) -> Timings:
    """The stack whose file says the dispatcher and timeouts: asked for, read, or selected.

    `--timings-from` is a stack name, or a path (it has a `/` or ends in `.yaml`) to a
    `Pulumi.<stack>.yaml` file outside the project (a copy, an edited stack, a twin's)."""
    stack = args.timings_from or args.stack
    if stack is None and not args.kubeconfig:
        stack = selected_stack()
    asked: str | None = args.timings_from
    if asked and ("/" in asked or asked.endswith(".yaml")):
        path = Path(asked)
        found = STACK_FILE.fullmatch(path.name)
        if found is None:
            return Timings(note=f"{asked} not used (not a Pulumi.<stack>.yaml file name)")
        read = from_stack_file(found.group(1), path.parent)
        return read if read.note else dataclasses.replace(read, source=str(path))
    return from_stack_file(stack) if stack else Timings()


if __name__ == "__main__":
    sys.exit(main())
