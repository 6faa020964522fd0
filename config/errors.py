"""Config problems with their key paths, reported all at once."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from config.yamlsafe import Found

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


def _steps(path: str, data: object) -> list[tuple[str, str | int, object]] | None:
    """Each step of `path` as (its text, its key or index, the value it steps into; None past
    what `data` holds); None when `path` is not a plain key path (e.g. a free-form label).

    Keys may hold dots (label keys, `workerClusterQueues.team-a`): a run of key steps is taken as
    the longest key the mapping has, else one step.
    """
    steps = [(m.group(0), m.group(1), m.group(2)) for m in _STEP.finditer(path)]
    if not steps or "".join(text for text, _, _ in steps) != path:
        return None
    out: list[tuple[str, str | int, object]] = []
    node: object = data
    i = 0
    while i < len(steps):
        text, index, key = steps[i]
        if index is not None and isinstance(node, dict) and int(index) in node:
            # A number as a mapping key (`tags: {1: x}`): pydantic's `tags[1]`, the key "1".
            node = cast("dict[Any, Any]", node)[int(index)]
            out.append((text, index, node))
            i += 1
            continue
        if index is not None:
            items = cast("list[Any]", node) if isinstance(node, list) else []
            position = int(index)
            node = items[position] if position < len(items) else None
            out.append((text, position, node))
            i += 1
            continue
        taken, child = 1, None
        if isinstance(node, dict):
            mapping = cast("dict[str, Any]", node)
            for end in range(len(steps), i, -1):
                run = steps[i:end]
                if any(idx is not None for _, idx, _ in run):
                    continue
                joined = ".".join(k for _, _, k in run if k is not None)
                if joined in mapping:
                    taken, child = end - i, mapping[joined]
                    key = joined
                    break
        out.append(("".join(t for t, _, _ in steps[i : i + taken]), str(key), child))
        node = child
        i += taken
    return out


def path_parts(path: str, data: object) -> tuple[str | int, ...]:
    """`clusters[1].pools[0].labels.kubernetes.io/os` -> ("clusters", 1, "pools", 0, "labels",
    "kubernetes.io/os") as `data` (the config as written) has its keys; () for no path."""
    steps = _steps(path, data)
    return tuple(part for _, part, _ in steps) if steps else ()


def named_path(path: str, data: object) -> str:
    """`clusters[2].pools[0].maxCount` -> `clusters[worker-2].pools[gpu].maxCount`: each list
    position that holds an item with a (unique) `name` in `data` (the config as written) shows
    that name, as a person wrote it. Anything the data does not hold stays as it was."""
    steps = _steps(path, data)
    if steps is None:
        return path
    out: list[str] = []
    node: object = data
    for text, part, child in steps:
        name = None
        if isinstance(part, int) and isinstance(node, list):
            items = cast("list[Any]", node)
            name = _name_at(items, part) if part < len(items) else None
        out.append(f"[{name}]" if name else text)
        node = child
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem in the stack config: where it is and what is allowed."""

    path: str
    message: str
    severity: Severity = "error"
    # The line of the stack file, when the issue itself knows it (a YAML syntax error, which has
    # no key path); otherwise `Written.found` looks the path up.
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


# What a string key says when YAML read a number or a boolean (`kubernetesVersion: 1.30`).
NEEDS_TEXT = "a string is needed here; write it quoted: "


def quote_it(written: str, value: object) -> str:
    """The hint for a plain scalar written `written` that YAML read as `value`."""
    kind = "boolean" if isinstance(value, bool) else "number"
    shown = str(value).lower() if isinstance(value, bool) else str(value)
    read = f"a {kind}" if written == shown else f"the {kind} {shown}"
    return f'{NEEDS_TEXT}"{written}" (YAML reads {written} as {read})'


@dataclass(frozen=True, slots=True)
class Lines:
    """Where a config's keys are written: the file, and the line of a key path given as parts
    (`path_parts`), with the anchored text the path goes through (`yamlsafe.find`)."""

    file: str
    find: Callable[[tuple[str | int, ...]], Found | None]


@dataclass(frozen=True, slots=True)
class Report:
    """One error (or warning) as printed: named paths, its line when known, and what shares its
    text."""

    issue: Issue
    line: int | None = None
    # The YAML anchor the mistake is written in and the aliases that repeat it: one mistake,
    # reported once.
    note: str = ""


@dataclass(frozen=True, slots=True)
class _Seen:
    issue: Issue  # as printed
    found: Found | None
    prefix: str  # the named path to the anchored text it is in ("" when in none)

    @property
    def alias_line(self) -> int | None:
        """The line of the `*alias` this error is reached through, if any."""
        return self.found.through[0][3] if self.found and self.found.through else None


def _unnamed(message: str, names: Iterable[str]) -> str:
    """`message` without the names on the way to an anchor: where errors in one anchored text
    differ."""
    for name in names:
        message = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", lambda _: "*", message)
    return message


@dataclass(frozen=True, slots=True)
class Written:
    """A config as written: its data (paths name the items) and, when it was read from a file,
    where its keys are (paths name their lines)."""

    data: object = None
    lines: Lines | None = None

    def named(self, issue: Issue) -> Issue:
        """`issue` with its path, and paths in its message, naming the items the user named
        (when the data is known)."""
        data = self.data
        if data is None:
            return issue
        message = _PATH_IN_TEXT.sub(lambda m: named_path(m.group(0), data), issue.message)
        return replace(issue, path=named_path(issue.path, data), message=message)

    def found(self, issue: Issue) -> Found | None:
        """Where `issue`'s key is written (the deepest part of it the file holds), when known."""
        if issue.line is not None:
            return Found(issue.line)
        parts = path_parts(issue.path, self.data)
        return self.lines.find(parts) if self.lines is not None and parts else None

    def with_text(self, issue: Issue, found: Found | None) -> Issue:
        """`issue` quoting the file's own text where the data lost it (`1.30`, read as 1.3)."""
        if found is None or found.text is None or not issue.message.startswith(NEEDS_TEXT):
            return issue
        steps = _steps(issue.path, self.data)
        value = steps[-1][2] if steps else None
        return replace(issue, message=quote_it(found.text, value)) if value is not None else issue

    def reports(self, issues: Iterable[Issue]) -> list[Report]:
        """`issues` as printed: named, with their lines, a mistake in anchored text once."""
        groups: dict[tuple[object, ...], list[_Seen]] = {}
        for position, issue in enumerate(issues):
            found = self.found(issue)
            shown = self.named(self.with_text(issue, found))
            key: tuple[object, ...] = (position,)
            prefix = ""
            if found is not None and found.through:
                anchor, depth, _, _ = found.through[0]
                parts = path_parts(issue.path, self.data)
                index_prefix = key_path(*parts[:depth])
                prefix = named_path(index_prefix, self.data)
                names = [prefix, index_prefix, *re.findall(r"\[([^\]]+)\]", prefix)]
                key = (anchor, parts[depth:], issue.severity, _unnamed(issue.message, names))
            groups.setdefault(key, []).append(_Seen(shown, found, prefix))
        return [_report(seen) for seen in groups.values()]

    def line_of(self, report: Report) -> str:
        """`Pulumi.dev.yaml:42: path: message (note)`: the form editors and CI logs link."""
        at = f"{self.lines.file}:{report.line}: " if self.lines and report.line else ""
        return f"{at}{report.issue}{report.note}"


class ConfigError(Exception):
    """The stack config is invalid; carries every error found (and the warnings)."""

    def __init__(
        self,
        issues: Sequence[Issue],
        source: str = "",
        data: object = None,
        lines: Lines | None = None,
    ) -> None:
        self.issues = list(issues)
        self.source = source
        # The config as written, when known: rendered paths name list items (`named_path`).
        self.data = data
        # Where its keys are written, when it was read from a file: errors name their lines.
        self.lines = lines
        super().__init__(self.render())

    @property
    def written(self) -> Written:
        return Written(self.data, self.lines)

    def named(self, issue: Issue) -> Issue:
        """`issue` naming the items the user named (`Written.named`)."""
        return self.written.named(issue)

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    def render(self) -> str:
        written = self.written
        reports = written.reports(self.errors)
        where = f" in {self.source}" if self.source else ""
        head = f"{len(reports)} config error{'s' if len(reports) != 1 else ''}{where}:"
        return "\n".join([head, *(f"  - {written.line_of(r)}" for r in reports)])


def _report(seen: list[_Seen]) -> Report:
    """One Report for the errors of one mistake in anchored text (or for one error)."""
    # Shown at the path through the anchor's own text when one error goes there.
    first = min(seen, key=lambda s: s.alias_line is not None)
    found = first.found
    if found is None:
        return Report(first.issue)
    if not found.through:
        return Report(first.issue, found.line)
    anchor, _, anchor_line, _ = found.through[0]
    uses = [f"{s.prefix} (line {s.alias_line})" for s in seen if s.alias_line is not None]
    note = f" (written once, under &{anchor} at line {anchor_line}"
    if uses:
        verb = "repeats" if len(uses) == 1 else "repeat"
        listed = ", ".join(uses[:-1]) + " and " + uses[-1] if len(uses) > 1 else uses[0]
        note += f"; {listed} {verb} it with *{anchor}"
    return Report(first.issue, found.line, note + ")")


def errors_of(issues: Iterable[Issue]) -> list[Issue]:
    return [i for i in issues if i.severity == "error"]
