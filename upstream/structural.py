"""Kubernetes structural schemas (a CRD version's `openAPIV3Schema`), as the API server applies
them to a created object (k8s.io/apiextensions-apiserver: structural defaulting, then
`validation.ValidateCustomResource`, then pruning).

`with_defaults` applies schema defaults; `schema_errors` reports what the server refuses, or
prunes without a word: wrong types, enum values, bounds, patterns, formats, required fields,
duplicate `set`/`map` list entries, nulls in non-nullable fields and fields the schema does not
have. Not here: CEL rules (`x-kubernetes-validations`); their callers check the ones they need
(checks.extraspec) and the test suite evaluates all of them (testkit/crdschema.py).

Pure, standard library only: the program and preflight both use it.
"""

from __future__ import annotations

import copy
import datetime as dt
import difflib
import functools
import re
from collections.abc import Mapping
from typing import Any, Final, cast

Schema = Mapping[str, Any]
# A position inside a value: keys and list indexes, outermost first.
Where = tuple[str | int, ...]

_INT_BOUNDS: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def _props(s: Schema) -> Mapping[str, Schema]:
    return cast("Mapping[str, Schema]", s.get("properties") or {})


def _type_of(s: Schema) -> str | None:
    if s.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return cast("str | None", s.get("type"))


def with_defaults(value: Any, s: Schema) -> Any:
    """`value` with the schema's `default`s set where a field is absent (a deep copy)."""
    value = copy.deepcopy(value)
    _default(value, s)
    return value


def _default(value: Any, s: Schema) -> None:
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        for key, sub in _props(s).items():
            if key not in mapping and "default" in sub:
                mapping[key] = copy.deepcopy(sub["default"])
            if key in mapping:
                _default(mapping[key], sub)
        extra = s.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key, item in mapping.items():
                if key not in _props(s):
                    _default(item, cast("Schema", extra))
    elif isinstance(value, list) and isinstance(s.get("items"), Mapping):
        for item in cast("list[Any]", value):
            _default(item, cast("Schema", s["items"]))


def go_regex_to_python(pattern: str) -> str:
    """The RE2 pattern of a CRD (as the API server reads it) as an equivalent Python `re` one.

    Two differences matter for the pinned CRDs: RE2 accepts inline flags after `^` (kruise writes
    `^(?i)...`), and Go's `$` (and `\\z`) means end of text while Python's `$` also matches before
    a final newline, so `"a\n"` would pass `^a$` here and be refused by the API server.
    """
    match = re.match(r"^\^\(\?([a-zA-Z]+)\)", pattern)
    if match:
        pattern = f"(?{match.group(1)})^" + pattern[match.end() :]
    if re.match(r"^\(\?[a-zA-Z]*m", pattern):
        return pattern  # multi-line mode: `$` is per line in both engines
    out: list[str] = []
    escaped = in_class = False
    for ch in pattern:
        if escaped:
            out.append("Z" if ch == "z" else ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif in_class:
            out.append(ch)
            in_class = ch != "]"
        elif ch == "[":
            out.append(ch)
            in_class = True
        else:
            out.append(r"\Z" if ch == "$" else ch)
    converted = "".join(out)
    re.compile(converted)  # fail loudly at load time rather than silently not checking a pattern
    return converted


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(go_regex_to_python(text))


def _date_time(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in text or "t" in text


def _named(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a mapping",
    }
    return names.get(type(value), type(value).__name__)


def schema_errors(value: Any, s: Schema, where: Where = ()) -> list[tuple[Where, str]]:
    """Every structural-schema error in `value` (defaults applied first), with its position."""
    out: list[tuple[Where, str]] = []
    _check(value, s, where, out)
    return out


def _check(value: Any, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    if value is None:
        if not s.get("nullable"):
            out.append((where, "null: the API server drops it; set a value or leave the key out"))
        return
    kind = _type_of(s)
    if kind == "int-or-string":
        if isinstance(value, bool) or not isinstance(value, int | str):
            out.append((where, f"must be an integer or a string, not {_named(value)}"))
            return
        if isinstance(value, str):
            _check_string(value, s, where, out)
        return
    if kind == "object":
        if not isinstance(value, dict):
            out.append((where, f"must be a mapping, not {_named(value)}"))
            return
        _check_object(cast("dict[Any, Any]", value), s, where, out)
    elif kind == "array":
        if not isinstance(value, list):
            out.append((where, f"must be a list, not {_named(value)}"))
            return
        _check_array(cast("list[Any]", value), s, where, out)
    elif kind == "string":
        if not isinstance(value, str):
            out.append((where, f"must be a string, not {_named(value)}"))
            return
        _check_string(value, s, where, out)
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            out.append((where, f"must be an integer, not {_named(value)}"))
            return
        _check_number(value, s, where, out)
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            out.append((where, f"must be a number, not {_named(value)}"))
            return
        _check_number(value, s, where, out)
    elif kind == "boolean" and not isinstance(value, bool):
        out.append((where, f"must be true or false, not {_named(value)}"))
        return
    if "enum" in s and value not in s["enum"]:
        allowed = ", ".join(str(v) for v in s["enum"])
        out.append((where, f"{value!r} is not allowed; allowed: {allowed}"))


def _check_object(
    value: dict[Any, Any], s: Schema, where: Where, out: list[tuple[Where, str]]
) -> None:
    props = _props(s)
    extra = s.get("additionalProperties")
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    for key, item in value.items():
        if not isinstance(key, str):
            out.append(((*where, str(key)), "keys must be strings"))
            continue
        if key in props:
            _check(item, props[key], (*where, key), out)
        elif isinstance(extra, Mapping):
            _check(item, cast("Schema", extra), (*where, key), out)
        elif not preserve:
            hint = difflib.get_close_matches(key, list(props), n=1)
            known = f"did you mean {hint[0]!r}?" if hint else "known: " + ", ".join(sorted(props))
            out.append(((*where, key), f"unknown field ({known})"))
    for key in s.get("required", ()):
        if key not in value:
            out.append(((*where, key), "required field missing"))
    if "maxProperties" in s and len(value) > s["maxProperties"]:
        out.append((where, f"at most {s['maxProperties']} entries"))
    if "minProperties" in s and len(value) < s["minProperties"]:
        out.append((where, f"at least {s['minProperties']} entries"))


def _check_array(value: list[Any], s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    if "maxItems" in s and len(value) > s["maxItems"]:
        out.append((where, f"at most {s['maxItems']} items, got {len(value)}"))
    if "minItems" in s and len(value) < s["minItems"]:
        out.append((where, f"at least {s['minItems']} items, got {len(value)}"))
    items = s.get("items")
    if isinstance(items, Mapping):
        for n, item in enumerate(value):
            _check(item, cast("Schema", items), (*where, n), out)
    list_type = s.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: list[Any] = []
        for n, item in enumerate(value):
            if item in seen:
                out.append(((*where, n), f"duplicate entry {item!r} in a set"))
            seen.append(item)
    elif list_type == "map":
        keys = list(s.get("x-kubernetes-list-map-keys", ()))
        seen_keys: list[tuple[Any, ...]] = []
        for n, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            entry = cast("dict[str, Any]", item)
            key = tuple(entry.get(k) for k in keys)
            if key in seen_keys:
                out.append(((*where, n), f"duplicate entry for key {', '.join(keys)} {key}"))
            seen_keys.append(key)


def _check_string(value: str, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    if "maxLength" in s and len(value) > s["maxLength"]:
        out.append((where, f"at most {s['maxLength']} characters"))
    if "minLength" in s and len(value) < s["minLength"]:
        out.append((where, f"at least {s['minLength']} characters"))
    if "pattern" in s and not _pattern(s["pattern"]).search(value):
        out.append((where, f"{value!r} does not match {s['pattern']}"))
    if s.get("format") == "date-time" and not _date_time(value):
        out.append((where, f"{value!r} is not an RFC 3339 date-time"))


def _check_number(value: float, s: Schema, where: Where, out: list[tuple[Where, str]]) -> None:
    bounds = _INT_BOUNDS.get(str(s.get("format")))
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        out.append((where, f"{value} is out of range for {s['format']}"))
    if "minimum" in s:
        low = s["minimum"]
        if value < low or (s.get("exclusiveMinimum") and value == low):
            out.append((where, f"must be {'>' if s.get('exclusiveMinimum') else '>='} {low}"))
    if "maximum" in s:
        high = s["maximum"]
        if value > high or (s.get("exclusiveMaximum") and value == high):
            out.append((where, f"must be {'<' if s.get('exclusiveMaximum') else '<='} {high}"))


def crd_version_schema(crd: Mapping[str, Any], version: str) -> Schema | None:
    """The `openAPIV3Schema` of one served version of a CRD document, or None."""
    spec = cast("Mapping[str, Any]", crd.get("spec") or {})
    for v in cast("list[Mapping[str, Any]]", spec.get("versions") or []):
        if v.get("name") == version:
            schema = cast("Mapping[str, Any]", v.get("schema") or {})
            return cast("Schema | None", schema.get("openAPIV3Schema"))
    return None
