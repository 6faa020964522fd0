"""What the program registers, as a comparable record, and the comparison a refactor must pass.

`record(stack)` runs the real program (`__main__.py`) for a committed stack under the strict mocks
(testkit/mocks.py), with the stack file's config as the CLI would pass it, and returns every
registration and `.get` read: URN, type, name, parent, provider, inputs, options and
dependencies. `compare(before, after)` says what changed: a refactor that must not touch the
deployed graph keeps every URN, input, parent, provider and option, and may only add
dependencies (a replace or a URN change shows up here before it shows up in a preview).

    scripts/urn-diff [REF]    # every committed stack, deploy and preview: REF (default HEAD)
                              # against the working tree; exit 1 when anything but an added
                              # dependency changed

The record of REF is taken from `git archive REF` in a temporary directory (with this tree's
fetched CRD pins, `.cache`) by this file's code, so REF may predate this module (it needs
testkit/mocks.py).
"""

from __future__ import annotations

import argparse
import json
import runpy
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

Record = dict[str, list[dict[str, Any]]]

ROOT = Path(__file__).resolve().parent.parent
FIELDS = ("type", "name", "parent", "provider", "custom", "inputs", "options")


def stack_config(root: Path, stack: str) -> dict[str, str]:
    """`Pulumi.<stack>.yaml`'s config as the CLI hands it to the program (objects as JSON)."""
    import yaml  # noqa: PLC0415 - the record's subprocess imports from its own root first

    config = yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text())["config"]
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def record(stack: str, *, preview: bool = False, root: Path = ROOT) -> Record:
    """Every registration and read of `root`'s program for `stack`, sorted by URN."""
    import pulumi  # noqa: PLC0415

    from testkit.mocks import Registered, mocked_engine, run_program  # noqa: PLC0415

    def row(r: Registered) -> dict[str, Any]:
        return {
            "urn": r.urn,
            "type": r.type,
            "name": r.name,
            "parent": r.parent,
            "provider": r.provider,
            "custom": r.custom,
            "inputs": r.inputs,
            "dependencies": sorted(set(r.dependencies)),
            "options": {
                "ignore_changes": sorted(r.ignore_changes),
                "additional_secret_outputs": sorted(r.additional_secret_outputs),
                "replace_on_changes": sorted(r.replace_on_changes),
                "delete_before_replace": r.delete_before_replace,
                "version": r.version,
            },
        }

    with mocked_engine(stack, preview=preview) as graph:
        pulumi.runtime.config.set_all_config(stack_config(root, stack), [])
        run_program(lambda: runpy.run_path(str(root / "__main__.py")))
        found = {
            "resources": sorted((row(r) for r in graph.resources), key=lambda x: x["urn"]),
            "reads": sorted((row(r) for r in graph.reads), key=lambda x: x["urn"]),
        }
    # Files the program reads are inputs by absolute path (the pinned CRDs): `<root>` in their
    # place, so that two checkouts of one tree record the same.
    text = json.dumps(found).replace(json.dumps(str(root))[1:-1], "<root>")
    return json.loads(text)


def compare(before: Record, after: Record) -> tuple[list[str], list[str]]:
    """(what changed that must not, the dependencies added), one line each."""
    changed: list[str] = []
    added: list[str] = []
    for part in ("resources", "reads"):
        old = {r["urn"]: r for r in before[part]}
        new = {r["urn"]: r for r in after[part]}
        changed += [f"{part}: gone: {urn}" for urn in sorted(old.keys() - new.keys())]
        changed += [f"{part}: new: {urn}" for urn in sorted(new.keys() - old.keys())]
        for urn in sorted(old.keys() & new.keys()):
            changed += [
                f"{part}: {field} of {urn}: {old[urn][field]!r} -> {new[urn][field]!r}"
                for field in FIELDS
                if old[urn][field] != new[urn][field]
            ]
            was, now = set(old[urn]["dependencies"]), set(new[urn]["dependencies"])
            changed += [f"{part}: {urn} no longer waits for {d}" for d in sorted(was - now)]
            added += [f"{urn} now waits for {d}" for d in sorted(now - was)]
    return changed, added


def _committed_stacks(root: Path) -> list[str]:
    files = [p for p in root.glob("Pulumi.*.yaml") if p.name.count(".") == 2]
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in files)


def _record_in_subprocess(root: Path, stack: str, preview: bool) -> Record:
    """A fresh interpreter per record: the program's modules are imported from `root` only."""
    args = [sys.executable, __file__, "--record", str(root), stack]
    done = subprocess.run(
        [*args, *(["--preview"] if preview else [])],
        check=True,
        capture_output=True,
        text=True,
        cwd=root,
    )
    return json.loads(done.stdout.splitlines()[-1])


def diff(ref: str) -> bool:
    """Print the comparison of `ref` with the working tree for every committed stack."""
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        old_root = Path(tmp)
        archive = subprocess.run(
            ["git", "archive", ref], cwd=ROOT, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        if (ROOT / ".cache").is_dir():  # the fetched CRD pins, not in git (scripts/fetch-crds)
            (old_root / ".cache").symlink_to(ROOT / ".cache")
        for stack in _committed_stacks(ROOT):
            for preview in (False, True):
                before = _record_in_subprocess(old_root, stack, preview)
                after = _record_in_subprocess(ROOT, stack, preview)
                changed, added = compare(before, after)
                mode = "preview" if preview else "up"
                print(
                    f"{stack} ({mode}): {len(before['resources'])} resources and "
                    f"{len(before['reads'])} reads at {ref}, {len(after['resources'])} and "
                    f"{len(after['reads'])} now; {len(changed)} changed, "
                    f"{len(added)} dependencies added"
                )
                for line in [*changed, *(f"  + {a}" for a in added)]:
                    print(f"  {line}")
                ok = ok and not changed
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="What a change does to the deployed graph.")
    parser.add_argument("ref", nargs="?", default="HEAD")
    parser.add_argument("--record", nargs=2, metavar=("ROOT", "STACK"), help=argparse.SUPPRESS)
    parser.add_argument("--preview", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:
        root = Path(args.record[0]).resolve()
        sys.path.insert(0, str(root))
        sys.modules.pop("testkit", None)  # this file's package: import root's testkit instead
        print(json.dumps(record(args.record[1], preview=args.preview, root=root)))
        return 0
    return 0 if diff(args.ref) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
