"""Config problems with their key paths, reported all at once."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

Severity = Literal["error", "warning"]


def key_path(*parts: str | int) -> str:
    """`key_path("clusters", 1, "pools", 0, "maxCount")` -> `clusters[1].pools[0].maxCount`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


# One step of a key path: `[3]`, or a key (`.pools`, or the first key, which has no dot).
_STEP = re.compile(r"\[(\d+)\]|\.?([^.\[\]]+)")
# A key path inside a message: from a top-level key, with at least one list position.
_PATH_IN_TEXT = re.compile(
    r"\b[a-z][A-Za-z]*(?:\.[A-Za-z][\w-]*)*\[\d+\](?:\[\d+\]|\.[A-Za-z][\w-]*)*"
)
# A name that reads unambiguously inside brackets.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")


def _name_at(items: list[Any], index: int) -> str | None:
    """The `name` of list item `index` when it is plain text and no sibling shares it."""
    item = items[index]
    if not isinstance(item, dict):
        return None
    name = cast("dict[str, Any]", item).get("name")
    if not isinstance(name, str) or not _PLAIN_NAME.fullmatch(name) or name.isdigit():
        return None
    same = sum(
        1 for o in items if isinstance(o, dict) and cast("dict[str, Any]", o).get("name") == name
    )
    return name if same == 1 else None


def named_path(path: str, data: object) -> str:
    """`clusters[2].pools[0].maxCount` -> `clusters[worker-2].pools[gpu].maxCount`: each list
    position that holds an item with a (unique) `name` in `data` (the config as written) shows
    that name, as a person wrote it. Anything the data does not hold stays as it was."""
    steps = [(m.group(0), m.group(1), m.group(2)) for m in _STEP.finditer(path)]
    if "".join(text for text, _, _ in steps) != path:
        return path  # not a plain key path (e.g. a free-form label)
    out: list[str] = []
    node: object = data
    i = 0
    while i < len(steps):
        text, index, _ = steps[i]
        if index is not None:
            name = None
            if isinstance(node, list):
                items = cast("list[Any]", node)
                position = int(index)
                if position < len(items):
                    name = _name_at(items, position)
                    node = items[position]
                else:
                    node = None
            else:
                node = None
            out.append(f"[{name}]" if name else text)
            i += 1
            continue
        # Keys may hold dots (label keys, `workerClusterQueues.team-a`): take the longest run of
        # key steps that the mapping has, else the one step.
        taken = 1
        child: object = None
        if isinstance(node, dict):
            mapping = cast("dict[str, Any]", node)
            for end in range(len(steps), i, -1):
                run = steps[i:end]
                if any(idx is not None for _, idx, _ in run):
                    continue
                key = ".".join(k for _, _, k in run if k is not None)
                if key in mapping:
                    taken, child = end - i, mapping[key]
                    break
        out += [t for t, _, _ in steps[i : i + taken]]
        node = child
        i += taken
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem in the stack config: where it is and what is allowed."""

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(Exception):
    """The stack config is invalid; carries every error found (and the warnings)."""

    def __init__(self, issues: Sequence[Issue], source: str = "", data: object = None) -> None:
        self.issues = list(issues)
        self.source = source
        # The config as written, when known: rendered paths name list items (`named_path`).
        self.data = data
        super().__init__(self.render())

    def named(self, issue: Issue) -> Issue:
        """`issue` with its path, and paths in its message, naming the items the user named
        (when the data is known)."""
        data = self.data
        if data is None:
            return issue
        message = _PATH_IN_TEXT.sub(lambda m: named_path(m.group(0), data), issue.message)
        return replace(issue, path=named_path(issue.path, data), message=message)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    def render(self) -> str:
        errors = self.errors
        where = f" in {self.source}" if self.source else ""
        head = f"{len(errors)} config error{'s' if len(errors) != 1 else ''}{where}:"
        return "\n".join([head, *(f"  - {self.named(i)}" for i in errors)])


def errors_of(issues: Iterable[Issue]) -> list[Issue]:
    return [i for i in issues if i.severity == "error"]
