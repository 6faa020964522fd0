# pyright: standard
# (PyYAML's stubs leave the loader mixins and the event stream untyped; strict would be noise.)
"""YAML for stack and kubeconfig files, safe by construction: bounded, strict, one meaning.

Limits are checked on the event stream (libyaml's parser is iterative) before any node is built,
so a billion-laughs document or ten thousand nesting levels costs milliseconds, not gigabytes.
Scalars resolve as YAML 1.2's core schema, as the Pulumi CLI (go-yaml v3) reads the same file:
`yes`, `on` and `1:20` are strings, not a boolean and a sexagesimal 80. `positions` says where each
value is written (and through which anchor), for messages that name lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, cast

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import BaseResolver

# The largest committed stack is 9 kB and 740 values: these bounds leave 25x room and keep the
# worst input allowed (flat, alias-free) within a second to load and validate.
MAX_BYTES = 256 * 1024
# Nesting of mappings and sequences; the fleet's deepest path is about 12.
MAX_DEPTH = 64
# Values (keys, scalars, collections) after expanding every alias, as every consumer sees them.
MAX_NODES = 20_000
# Digits of one integer (Python refuses to parse more than 4300 anyway).
MAX_INT_DIGITS = 100

if yaml.__with_libyaml__:  # 100x faster than the pure-Python parser on large files
    from yaml.cyaml import CParser as _Parser  # pyright: ignore[reportAttributeAccessIssue]
else:  # pragma: no cover - PyYAML built without libyaml
    from yaml.parser import Parser as _PyParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, _PyParser):
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _PyParser.__init__(self)


class YamlError(ValueError):
    """A document that is not acceptable YAML input: says where and why, never echoes values."""

    def __init__(self, message: str, *, at: tuple[int, int] | None = None, problem: str = ""):
        super().__init__(message)
        # Where the parser stopped (line, column; from 1) and what it found there, when it says.
        self.at = at
        self.problem = problem


class _CoreResolver(BaseResolver):
    """YAML 1.2 core schema (null, bool, int, float); everything else is a string."""


_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
_CoreResolver.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_CoreResolver.add_implicit_resolver("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"])


class _Constructor(SafeConstructor):
    """SafeConstructor that refuses duplicate keys and huge integers."""

    def construct_mapping(self, node: Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, MappingNode):
            seen: set[str] = set()
            for key_node, _ in node.value:
                if isinstance(key_node, ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                    if key_node.value in seen:
                        raise ConstructorError(
                            None, None, f"duplicate key {key_node.value!r}", key_node.start_mark
                        )
                    seen.add(key_node.value)
        return cast("dict[Any, Any]", super().construct_mapping(node, deep=deep))  # type: ignore[arg-type]

    def construct_yaml_int(self, node: Node) -> int:
        text = str(cast("ScalarNode", node).value)
        if len(text.lstrip("+-")) > MAX_INT_DIGITS:
            raise ConstructorError(
                None, None, f"integer of more than {MAX_INT_DIGITS} digits", node.start_mark
            )
        if text.startswith("0o"):
            return int(text[2:], 8)
        return int(text, 0) if text.startswith("0x") else int(text, 10)

    def construct_yaml_float(self, node: Node) -> float:
        text = str(cast("ScalarNode", node).value)
        if text.lower().lstrip("+-") == ".inf":
            return float("-inf") if text.startswith("-") else float("inf")
        if text.lower() == ".nan":
            return float("nan")
        return float(text)


# The stubs type constructors as taking a stock loader; ours is one of its own.
_Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)  # pyright: ignore[reportArgumentType]
_Constructor.add_constructor("tag:yaml.org,2002:float", _Constructor.construct_yaml_float)  # pyright: ignore[reportArgumentType]


class _Loader(_Parser, _Constructor, _CoreResolver):  # type: ignore[misc,valid-type]
    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)  # type: ignore[call-arg]
        _Constructor.__init__(self)
        _CoreResolver.__init__(self)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "?"


def _check_shape(text: str) -> None:
    """Depth and expanded size from the event stream, before any node exists."""
    sizes: dict[str, int] = {}  # anchor -> expanded node count
    stack: list[tuple[str | None, int]] = []  # open collections: (anchor, nodes so far)
    for event in yaml.parse(text, Loader=_Loader):
        size = 0
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append((event.anchor, 1))
            if len(stack) > MAX_DEPTH:
                raise YamlError(
                    f"nested deeper than {MAX_DEPTH} levels at {_where(event.start_mark)}"
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, size = stack.pop()
            if anchor:
                sizes[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in stack):
                raise YamlError(f"alias inside its own anchor at {_where(event.start_mark)}")
            size = sizes.get(str(event.anchor), 1)
        else:
            continue
        if stack:
            anchor, so_far = stack[-1]
            stack[-1] = (anchor, so_far + size)
            if so_far + size > MAX_NODES:
                raise YamlError(
                    f"more than {MAX_NODES} values once aliases are expanded "
                    f"(at {_where(event.start_mark)}): an alias bomb or a file far too large"
                )


@dataclass(frozen=True, slots=True)
class Step:
    """One key of a mapping or item of a sequence: the line it is written on, and its value."""

    line: int
    value: Where
    # `*name` written here: the value is the anchored text (its lines are the anchor's).
    alias: str | None = None
    # A key merged in by `<<: *name`: (name, the anchored mapping's line, the `<<` line).
    merged: tuple[str, int, int] | None = None


@dataclass(eq=False, slots=True)
class Where:
    """Where a value is written (1-based line) and where its children are: the file's shape beside
    the data, for messages. A value written once under an anchor is one Where wherever an alias
    repeats it, so a path through `*name` ends on the lines of the `&name` text."""

    line: int
    anchor: str | None = None
    # A plain scalar as written (`1.30`, which the data holds as 1.3).
    text: str | None = None
    keys: dict[str, Step] = field(default_factory=dict[str, Step])
    items: list[Step] = field(default_factory=list[Step])


@dataclass(frozen=True, slots=True)
class Found:
    """Where a path ends in the file, and the anchored text it went through, outermost first."""

    line: int
    # (anchor name, how many path steps lead to it, the anchored text's line, the line of the
    # `*name` the path takes, or None when it goes through the anchor's own text).
    through: tuple[tuple[str, int, int, int | None], ...] = ()
    text: str | None = None


def _step(node: Where, part: str | int) -> Step | None:
    if isinstance(part, int):
        return node.items[part] if 0 <= part < len(node.items) else None
    return node.keys.get(part)


def find(root: Where, parts: tuple[str | int, ...], *, under: tuple[str | int, ...] = ()) -> Found:
    """The line of the deepest step of `parts` that the file holds (a missing key: its parent),
    `parts` taken from the value at `under` (whose steps `Found.through` does not count)."""
    line, node = root.line, root
    for part in under:
        step = _step(node, part)
        if step is None:
            return Found(line)
        line, node = step.line, step.value
    through: list[tuple[str, int, int, int | None]] = []
    if node.anchor:
        through.append((node.anchor, 0, node.line, None))
    for depth, part in enumerate(parts, start=1):
        step = _step(node, part)
        if step is None:
            return Found(line, tuple(through))
        line, node = step.line, step.value
        if step.merged:  # the mapping that says `<<: *name` stands for the anchored one
            name, anchored, merge = step.merged
            through.append((name, depth - 1, anchored, merge))
        if step.alias:
            through.append((step.alias, depth, node.line, step.line))
        elif node.anchor:
            through.append((node.anchor, depth, node.line, None))
    return Found(line, tuple(through), node.text)


def _merge(mapping: Where) -> None:
    """`<<: *base` (or a list of them): the anchored keys, under the keys written here."""
    merged = mapping.keys.pop("<<", None)
    if merged is None:
        return
    sources = [s.value for s in merged.value.items] if merged.value.items else [merged.value]
    for source in sources:
        for key, step in source.keys.items():
            # A mistake in a merged key is the anchored text's, reported once (ConfigError).
            at = (source.anchor, source.line, merged.line) if source.anchor else None
            mapping.keys.setdefault(key, replace(step, merged=at) if at else step)


@dataclass(slots=True)
class _Open:
    """A collection being read: its Where, and in a mapping the key awaiting its value."""

    where: Where
    mapping: bool
    key: str | None = None
    key_line: int = 0


def positions(text: str) -> Where | None:
    """Where each value of a YAML document is written; None when it is not valid YAML.

    Read from the event stream (libyaml), where an alias keeps its own line (composed nodes forget
    it). Call it on text that `load` accepted.
    """
    anchors: dict[str, Where] = {}
    open_: list[_Open] = []
    root: Where | None = None
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.CollectionEndEvent):
                done = open_.pop()
                if done.mapping:
                    _merge(done.where)
                continue
            if not isinstance(
                event, yaml.ScalarEvent | yaml.CollectionStartEvent | yaml.AliasEvent
            ):
                continue
            line = event.start_mark.line + 1
            alias = None
            if isinstance(event, yaml.AliasEvent):
                alias = str(event.anchor)
                value = anchors.get(alias, Where(line))
            else:
                # A plain scalar's text (libyaml gives style '' for plain, PyYAML None).
                plain = isinstance(event, yaml.ScalarEvent) and not event.style
                written = str(cast("yaml.ScalarEvent", event).value) if plain else None
                value = Where(line, event.anchor, written)
                if event.anchor:
                    anchors[event.anchor] = value
            frame = open_[-1] if open_ else None
            if frame is None:
                root = value
            elif frame.mapping and frame.key is None:
                # A key: a scalar's text (a collection as a key has no path that could name it).
                frame.key = str(event.value) if isinstance(event, yaml.ScalarEvent) else "?"
                frame.key_line = line
            elif frame.mapping:
                frame.where.keys[str(frame.key)] = Step(frame.key_line, value, alias)
                frame.key = None
            else:
                frame.where.items.append(Step(line, value, alias))
            if isinstance(event, yaml.CollectionStartEvent):
                open_.append(_Open(value, isinstance(event, yaml.MappingStartEvent)))
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    return root


def check_data(value: Any, *, name: str) -> None:
    """The same depth and size limits on data that arrived parsed (the program's config JSON)."""
    pending: list[tuple[Any, int]] = [(value, 1)]
    count = 0
    while pending:
        node, depth = pending.pop()
        count += 1
        if count > MAX_NODES:
            raise YamlError(f"{name} holds more than {MAX_NODES} values")
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise YamlError(f"{name} is nested deeper than {MAX_DEPTH} levels")
            items = cast("dict[Any, Any]", node).values() if isinstance(node, dict) else node
            pending.extend((item, depth + 1) for item in cast("list[Any]", items))
            count += len(node) if isinstance(node, dict) else 0  # the keys


def load(data: bytes | str, *, name: str, sensitive: bool = False) -> Any:
    """One YAML document as Python data, or YamlError naming the file, line and problem.

    `sensitive` (kubeconfigs): the message drops every quoted fragment of the document (a key,
    a tag, a character), since any of them may be part of a credential.
    """
    if len(data) > MAX_BYTES:
        raise YamlError(f"{name} is larger than {MAX_BYTES // 1024} KiB")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise YamlError(
                f"{name} is not UTF-8 (invalid byte at offset {exc.start}): save it as UTF-8"
            ) from None
    else:
        text = data
    if "\x00" in text:
        raise YamlError(f"{name} holds a NUL character: not a text file")
    try:
        _check_shape(text)
        loader = _Loader(text)
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()  # type: ignore[no-untyped-call]
    except YamlError as exc:
        raise YamlError(f"{name}: {exc}") from None
    except yaml.MarkedYAMLError as exc:
        # problem and mark only: the context line of the document may hold a credential.
        problem = exc.problem or exc.context or "invalid YAML"
        if sensitive:
            problem = _QUOTED.sub("(...)", problem)
        mark = exc.problem_mark
        raise YamlError(
            f"{name} is not valid YAML: {problem} at {_where(mark)}",
            at=(mark.line + 1, mark.column + 1) if mark is not None else None,
            problem=problem,
        ) from None
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError) as exc:
        raise YamlError(f"{name} is not valid YAML: {type(exc).__name__}") from None
