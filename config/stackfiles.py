"""The stack files beside the program, by stack name, and what to say when one asked for is not
there (`python -m preflight prd`, or the file's name given for the stack's)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path


def stack_names(folder: Path) -> list[str]:
    """The stacks that have a `Pulumi.<stack>.yaml` in `folder`."""
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in folder.glob("Pulumi.*.yaml")
    )


def no_stack_file(path: Path) -> str:
    """The message for a stack file `path` that does not exist: the stack meant, when one is
    close, and the stacks there are."""
    stacks = stack_names(path.parent)
    asked = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    # `Pulumi.dev.yaml` or `dev.yaml` for `dev`: the file's name where the stack's belongs.
    bare = re.sub(r"^(?:Pulumi\.)?(.*?)(?:\.ya?ml)?$", r"\1", asked)
    close = [bare] if bare in stacks else difflib.get_close_matches(bare, stacks, n=1)
    message = f"no stack file {path.name} in {path.parent}"
    if close:
        return f"{message}; did you mean {close[0]!r}? Stacks here: {', '.join(stacks)}"
    return f"{message}; stacks here: {', '.join(stacks)}" if stacks else message
