"""`--against`, `--markdown` and `--diagram`: the plan diff and the picture, for people and tools.

Exit status: 0 the stack is valid now, 1 it is not (its errors are in the diff), 2 bad usage or a
ref that cannot be resolved.
"""

from __future__ import annotations

import argparse
import json
import sys

from preflight import diagram
from preflight.diff import compare
from preflight.diff_render import render_markdown, render_text
from preflight.gitref import RefError, default_ref, short_ref, stack_at_ref
from preflight.snapshot import Snapshot, snapshot


def _errors_text(snap: Snapshot) -> str:
    lines = [f"{len(snap['errors'])} config errors in stack {snap['stack']}:"]
    return "\n".join([*lines, *(f"  - {e['path']}: {e['message']}" for e in snap["errors"])])


def _picture(snap: Snapshot, args: argparse.Namespace) -> str:
    if args.markdown:
        return (
            f"<details><summary>Picture of <code>{snap['stack']}</code> (Mermaid)</summary>\n\n"
            f"{diagram.render_markdown(snap)}\n</details>\n"
        )
    return diagram.render_mermaid(snap)


def run_review(args: argparse.Namespace) -> int:
    """Print the diff against a ref (and/or the picture) of `args.stack`."""
    head = snapshot(args.stack)
    if not head["exists"]:
        print(f"no stack file Pulumi.{args.stack}.yaml", file=sys.stderr)
        return 2
    if args.against is None:  # --diagram alone
        if not head["valid"]:
            print(_errors_text(head), file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps({"stack": args.stack, "mermaid": diagram.render_mermaid(head)}))
        elif args.markdown:
            print(diagram.render_markdown(head), end="")
        else:
            print(diagram.render_mermaid(head), end="")
        return 0
    try:
        ref = args.against or default_ref()
        base = stack_at_ref(args.stack, ref)
        label = short_ref(ref) if args.against else f"merge base with main, {short_ref(ref)}"
    except RefError as err:
        print(f"preflight: {err}", file=sys.stderr)
        return 2
    result = compare(base, head, ref=label)
    show_picture = args.diagram and head["valid"]
    if args.json:
        if show_picture:
            result["mermaid"] = diagram.render_mermaid(head)
        print(json.dumps(result, indent=2))
    else:
        out = render_markdown(result) if args.markdown else render_text(result)
        print(out + ("\n" + _picture(head, args) if show_picture else ""), end="")
    # A version step AKS refuses (two minors at once, a downgrade) fails like an invalid stack.
    return 0 if head["valid"] and not result["refused"] else 1
