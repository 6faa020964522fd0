"""Raw config data -> FleetConfig, and pydantic's errors as the project's Issues: a key path for
each, "did you mean" for a misspelled key, "write it quoted" for a number where a string belongs,
one error per mistake. `config.loader` reads the stack file; the checks run on the result.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from config.errors import ConfigError, Issue, key_path, quote_it
from config.models import FleetConfig
from constants import CONFIG_KEY, PROJECT

FULL_KEY = f"{PROJECT}:{CONFIG_KEY}"


def _known_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The model class that owns the mapping at `loc` (to suggest keys for a typo)."""
    model: Any = FleetConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None:
            return None
        annotation: Any = field.annotation
        for candidate in (annotation, *getattr(annotation, "__args__", ())):
            inner = getattr(candidate, "__args__", (candidate,))[-1]
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                model = inner
                break
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                model = candidate
                break
        else:
            return None
    return cast("type[BaseModel]", model)


def _issue_from(error: ErrorDetails) -> Issue:
    loc = tuple(error["loc"])
    # pydantic marks a bad mapping key with a "[key]" step; the path ends at the key itself.
    on_key = bool(loc) and loc[-1] == "[key]"
    loc = loc[:-1] if on_key else loc
    path = key_path(*loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        owner = _model_at(loc[:-1])
        known = _known_keys(owner) if owner else []
        hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
        allowed = f"; did you mean {hint[0]!r}?" if hint else ""
        if known:
            allowed += (
                f" Allowed keys: {', '.join(known)}"
                if hint
                else f"; allowed keys: {', '.join(known)}"
            )
        return Issue(path, f"unknown key{allowed}")
    if kind == "missing":
        return Issue(path, "required")
    message = error["msg"]
    value = error.get("input")
    # `zones: [1, 2]` where the allowed values are the strings '1', '2', '3': the same hint.
    allowed = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
    if kind == "literal_error" and isinstance(value, int | float):
        kind = "string_type" if str(value).lower() in allowed else kind
    if kind == "string_type" and isinstance(value, int | float):
        # An unquoted `1.36` or `true`; ConfigError quotes the file's own text (`1.30`) instead.
        # A key (`tags: {1: x}`) is quoted as YAML read it.
        written = str(value).lower() if isinstance(value, bool) else str(value)
        return Issue(
            path, f"the key: {quote_it(written, value)}" if on_key else quote_it(written, value)
        )
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif value is None and not on_key:
        # `key:` with nothing after it (or `~`, `null`): YAML reads null, which this key refuses.
        message = f"{message}; the key has no value (nothing, `~` or `null` after the colon)"
    elif kind == "literal_error":
        message = f"{message} (got {error['input']!r})"
    return Issue(path, f"the key: {message}" if on_key else message)


def parse_model(raw: Any, *, source: str = "") -> FleetConfig:
    """Raw config data as the model, or ConfigError with every schema error and its key path."""
    if not isinstance(raw, dict):
        raise ConfigError([Issue(FULL_KEY, "must be a mapping with at least `clusters`")], source)
    try:
        return FleetConfig.model_validate(raw)
    except ValidationError as exc:
        issues = _one_per_mistake([_issue_from(e) for e in exc.errors()])
        raise ConfigError(issues, source, cast("object", raw)) from None


_DID_YOU_MEAN = re.compile(r"unknown key; did you mean '([^']+)'")


def _one_per_mistake(issues: list[Issue]) -> list[Issue]:
    """A misspelled key is one mistake: the "required" error of the key it was meant to be is
    left out when the unknown key beside it says "did you mean" that key."""
    meant: set[str] = set()
    for issue in issues:
        hint = _DID_YOU_MEAN.match(issue.message)
        if hint:
            parent = issue.path.rpartition(".")[0] if "." in issue.path else ""
            meant.add(f"{parent}.{hint.group(1)}" if parent else hint.group(1))
    return [i for i in issues if not (i.message == "required" and i.path in meant)]
