"""Azure request bodies checked against Azure's own model of the API version that is sent.

pulumi-azure-native 3.29.0 sends each resource type at one pinned REST API version (its docstrings:
"Uses Azure REST API version ..."). Azure's Python management SDKs are generated from the same
REST specs and carry, per model, the wire name of every property (`_attribute_map`, with the
`properties.` flattening), what is read-only, required, and the declared patterns and limits
(`_validation`), and the enums (`__init__` annotations). This module rebuilds the ARM body from a
resource's azure-native inputs and walks it against those models.

The SDK modules are imported lazily, per resource type, only when a body of that type is checked:
`azure.mgmt.network.models` alone is one 2 MB module.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
import inspect
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from builders.azure import KNOWN_AFTER_DEPLOY, AzureRequest, azure_requests
from checks.azure_spec import RESOURCE_GROUP_NAME, RESOURCE_GROUP_NAME_MAX, SPEC_MODELS
from checks.azure_types import OPEN_ENUMS, TYPES, ApiType
from config.errors import Issue
from config.models import FleetConfig


@dataclass(frozen=True, slots=True)
class Finding:
    """One property of one request that Azure's model of the API version does not accept."""

    resource: str  # the Pulumi resource (or invoke) name
    token: str
    property: str  # ARM property path, e.g. properties.agentPoolProfiles[0].name
    problem: str

    def __str__(self) -> str:
        api = TYPES[self.token]
        return (
            f"{self.resource} ({api.arm_type} api-version {api.api_version}): "
            f"{self.property}: {self.problem}"
        )


def _norm(name: str) -> str:
    """azure-native's input names are the wire names in camelCase (`balance-similar-node-groups`
    is `balanceSimilarNodeGroups`); the Python SDKs' are snake_case. Compared without either."""
    return name.replace("_", "").replace("-", "").lower()


_DOT = re.compile(r"(?<!\\)\.")


def _segments(key: str) -> list[str]:
    return [s.replace("\\.", ".") for s in _DOT.split(key)]


def _import(name: str) -> Any:
    """Import `name` without running its packages' `__init__` beyond `azure.mgmt`.

    Those build the SDK's client, which imports every operation of the API (`azure.mgmt.network`
    alone: 4 MB of source, most of preflight's added time); the models and request builders need
    none of it. The packages are set up unexecuted for this import only and then dropped, so a
    later ordinary `import azure.mgmt.network` runs its `__init__` as usual.
    """
    if name in sys.modules:
        return sys.modules[name]
    parts = name.split(".")
    stubbed: list[str] = []
    try:
        for depth in range(3, len(parts)):
            package = ".".join(parts[:depth])
            if package in sys.modules:
                continue
            spec = importlib.util.find_spec(package)
            if spec is None or spec.submodule_search_locations is None:
                break
            sys.modules[package] = importlib.util.module_from_spec(spec)
            stubbed.append(package)
        return importlib.import_module(name)
    finally:
        for package in stubbed:
            del sys.modules[package]


@cache
def _models(module: str) -> Any:
    return _import(module)


def _model(api: ApiType, name: str) -> Any:
    if not api.models:  # written from Azure's REST spec (checks/azure_spec.py)
        return SPEC_MODELS.get(name)
    return getattr(_models(api.models), name, None)


@cache
def _enums(cls: type) -> dict[str, type[enum.Enum]]:
    """attribute -> its enum, from the model's `__init__` annotations (`Union[str, _models.X]`)."""
    out: dict[str, type[enum.Enum]] = {}
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return out
    models = sys.modules[cls.__module__.rsplit(".", 1)[0]]
    for name, param in params.items():
        found = re.search(r"_models\.(\w+)", str(param.annotation))
        if not found:
            continue
        candidate = getattr(models, found.group(1), None)
        if isinstance(candidate, type) and issubclass(candidate, enum.Enum):
            out[name] = candidate
    return out


@cache
def _index(cls: type) -> dict[str, list[tuple[str, dict[str, str]]]]:
    index: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for attr, spec in cls._attribute_map.items():  # type: ignore[attr-defined]
        index.setdefault(_norm(_segments(spec["key"])[-1]), []).append((attr, spec))
    return index


def _place(body: dict[str, Any], key: str, value: Any) -> None:
    parts = _segments(key)
    for part in parts[:-1]:
        body = body.setdefault(part, {})
    body[parts[-1]] = value


class _Walker:
    """Rebuilds one ARM body and records every finding on the way."""

    def __init__(self, api: ApiType, resource: str, token: str) -> None:
        self.api = api
        self.resource = resource
        self.token = token
        self.findings: list[Finding] = []

    def bad(self, where: str, problem: str) -> None:
        self.findings.append(Finding(self.resource, self.token, where, problem))

    def model(self, cls: Any, value: Any, where: str, skip: Sequence[str] = ()) -> Any:
        if not isinstance(value, Mapping):
            self.bad(where or "(body)", f"must be an object, got {_show(value)}")
            return value
        index = _index(cls)
        validation: dict[str, dict[str, Any]] = cls._validation
        body: dict[str, Any] = {}
        given: set[str] = set()
        for key, item in value.items():
            if key in skip:
                continue
            candidates = index.get(_norm(key), [])
            if not candidates:
                known = sorted(
                    _segments(s["key"])[-1]
                    for a, s in cls._attribute_map.items()
                    if not validation.get(a, {}).get("readonly")
                )
                self.bad(_join(where, key), f"unknown property; {cls.__name__} has {known}")
                continue
            # A name both read-only and writable (AgentPool's `type` vs `properties.type`): the
            # writable one is what azure-native sends.
            candidates.sort(key=lambda c: bool(validation.get(c[0], {}).get("readonly")))
            attr, spec = candidates[0]
            wire = _segments(spec["key"])
            path = _join(where, ".".join(wire))
            given.add(attr)
            rules = validation.get(attr, {})
            if rules.get("readonly"):
                self.bad(path, "read-only: set by Azure, not accepted in a request")
                continue
            if item is None:
                continue
            converted = self.value(cls, attr, spec["type"], item, path, rules)
            _place(body, spec["key"], converted)
        for attr, rules in validation.items():
            if rules.get("required") and not rules.get("readonly") and attr not in given:
                key = cls._attribute_map[attr]["key"]
                self.bad(_join(where, key), "required by the API, not set")
        return body

    def value(  # noqa: PLR0917 - one property: its model, attribute, type, value, path, rules
        self, cls: Any, attr: str, kind: str, item: Any, path: str, rules: Mapping[str, Any]
    ) -> Any:
        if kind.startswith("[") and kind.endswith("]"):
            if not isinstance(item, list):
                self.bad(path, f"must be a list, got {_show(item)}")
                return item
            self._limits(path, item, rules, length_keys=("min_items", "max_items"))
            return [
                self.value(cls, attr, kind[1:-1], x, f"{path}[{i}]", {}) for i, x in enumerate(item)
            ]
        if kind.startswith("{") and kind.endswith("}"):
            if isinstance(item, list) and attr.endswith("user_assigned_identities"):
                # azure-native takes a list of identity ids; the ARM body is a map of them.
                return {str(i): {} for i in item}
            if not isinstance(item, Mapping):
                self.bad(path, f"must be a map, got {_show(item)}")
                return item
            return {
                k: self.value(cls, attr, kind[1:-1], v, f"{path}.{k}", {}) for k, v in item.items()
            }
        nested = _model(self.api, kind) if kind[:1].isupper() else None
        if nested is not None and hasattr(nested, "_attribute_map"):
            return self.model(nested, item, path)
        return self.scalar(cls, attr, kind, item, path, rules)

    def scalar(  # noqa: PLR0917 - as `value`
        self, cls: Any, attr: str, kind: str, item: Any, path: str, rules: Mapping[str, Any]
    ) -> Any:
        if kind in ("int", "long"):
            if isinstance(item, bool) or not isinstance(item, int | float) or item != int(item):
                self.bad(path, f"must be an integer, got {_show(item)}")
                return item
            item = int(item)
        elif kind == "float":
            if isinstance(item, bool) or not isinstance(item, int | float):
                self.bad(path, f"must be a number, got {_show(item)}")
                return item
        elif kind == "bool":
            if not isinstance(item, bool):
                self.bad(path, f"must be true or false, got {_show(item)}")
                return item
        elif kind in ("str", "duration", "iso-8601", "rfc-1123", "bytearray"):
            if not isinstance(item, str):
                self.bad(path, f"must be a string, got {_show(item)}")
                return item
            choices = _enums(cls).get(attr) if not rules.get("constant") else None
            if choices is not None and choices.__name__ not in OPEN_ENUMS:
                values = [str(e.value) for e in choices]
                if item.lower() not in {v.lower() for v in values}:
                    self.bad(path, f"{item!r} is not one of {values} ({choices.__name__})")
            pattern = rules.get("pattern")
            if pattern and item != KNOWN_AFTER_DEPLOY and not re.search(pattern, item):
                self.bad(path, f"{item!r} does not match the API's pattern {pattern}")
        self._limits(path, item, rules)
        return item

    def _limits(
        self,
        path: str,
        item: Any,
        rules: Mapping[str, Any],
        length_keys: tuple[str, str] = ("min_length", "max_length"),
    ) -> None:
        low, high = (rules.get(k) for k in length_keys)
        if isinstance(item, str | list):
            if low is not None and len(item) < low:
                self.bad(path, f"shorter than the API's minimum length {low}")
            if high is not None and len(item) > high:
                self.bad(path, f"longer than the API's maximum length {high}")
        if isinstance(item, int | float) and not isinstance(item, bool):
            if rules.get("minimum") is not None and item < rules["minimum"]:
                self.bad(path, f"{item} is below the API's minimum {rules['minimum']}")
            if rules.get("maximum") is not None and item > rules["maximum"]:
                self.bad(path, f"{item} is above the API's maximum {rules['maximum']}")


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _show(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


class _UrlRules:
    """Stands in for a request builder's serializer and keeps the rules it is given per URL
    parameter: the SDK declares them (pattern, lengths) but no longer checks them itself."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.rules: dict[str, dict[str, Any]] = {}

    def url(self, name: str, data: Any, data_type: str, **kwargs: Any) -> Any:
        self.rules[name] = kwargs
        return self.real.url(name, data, data_type, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@cache
def _url_rules(module_name: str, function: str, keywords: tuple[str, ...]) -> dict[str, Any]:
    """keyword -> the rules the SDK's request builder declares for that URL parameter."""
    module: Any = _import(module_name)
    recorder = _UrlRules(module._SERIALIZER)
    module._SERIALIZER = recorder
    try:
        args = dict.fromkeys(keywords, "a")
        getattr(module, function)(subscription_id="s", **args)
    finally:
        module._SERIALIZER = recorder.real
    return recorder.rules


def _path_findings(api: ApiType, inputs: Mapping[str, Any], walker: _Walker) -> None:
    name = inputs.get("resourceGroupName")
    if (
        isinstance(name, str)
        and name != KNOWN_AFTER_DEPLOY
        and (not RESOURCE_GROUP_NAME.match(name) or len(name) > RESOURCE_GROUP_NAME_MAX)
    ):
        walker.bad(
            "resourceGroupName (URL)",
            f"{name!r} must be 1-{RESOURCE_GROUP_NAME_MAX} characters matching "
            f"{RESOURCE_GROUP_NAME.pattern}",
        )
    if api.builder is None:
        return
    module_name, function, params = api.builder
    rules = _url_rules(module_name, function, tuple(params.values()))
    for given, keyword in params.items():
        value = inputs.get(given)
        if not isinstance(value, str) or value == KNOWN_AFTER_DEPLOY:
            continue
        rule = rules.get(keyword, {})
        where = f"{given} (URL)"
        pattern = rule.get("pattern")
        if pattern and not re.search(pattern, value):
            walker.bad(where, f"{value!r} does not match the API's pattern {pattern}")
        if rule.get("min_length") is not None and len(value) < rule["min_length"]:
            walker.bad(where, f"{value!r} is shorter than the API's minimum {rule['min_length']}")
        if rule.get("max_length") is not None and len(value) > rule["max_length"]:
            walker.bad(where, f"{value!r} is longer than the API's maximum {rule['max_length']}")


def _named_params(api: ApiType, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """URL parameters under azure-native's camelCase names (builders use snake_case)."""
    names = {_norm(p): p for p in api.path}
    return {names.get(_norm(k), k): v for k, v in inputs.items()}


def url_params(token: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs that go into the URL (path and query), under azure-native's names."""
    api = TYPES[token]
    return {k: v for k, v in _named_params(api, inputs).items() if k in api.path}


def check_request(token: str, resource: str, inputs: Mapping[str, Any]) -> list[Finding]:
    """Every finding of one resource's (or invoke's) azure-native inputs at its API version."""
    api = TYPES.get(token)
    if api is None:
        raise KeyError(f"no Azure model is known for {token}: add it to checks.azure_types.TYPES")
    walker = _Walker(api, resource, token)
    inputs = _named_params(api, inputs)
    _path_findings(api, inputs, walker)
    if api.body is None:
        models = _models(api.models)
        for key, value in inputs.items():
            if key not in api.path:
                walker.bad(key, f"unknown parameter; the invoke takes {list(api.path)}")
            elif key in api.query_enums and value is not None:
                choices = getattr(models, api.query_enums[key])
                values = [str(e.value) for e in choices]
                if str(value).lower() not in {v.lower() for v in values}:
                    walker.bad(key, f"{value!r} is not one of {values} ({choices.__name__})")
        return walker.findings
    walker.model(_model(api, api.body), inputs, "", skip=api.path)
    return walker.findings


def arm_body(token: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The ARM request body azure-native sends for these inputs (`properties` nested)."""
    api = TYPES[token]
    if api.body is None:
        raise ValueError(f"{token} is an invoke: it sends no body")
    walker = _Walker(api, "", token)
    inputs = _named_params(api, inputs)
    return walker.model(_model(api, api.body), inputs, "", skip=api.path)


def check_requests(requests: Sequence[AzureRequest]) -> list[Issue]:
    """Every finding of every request, as Issues at the config key that sets the property."""
    issues: list[Issue] = []
    for request in requests:
        for finding in check_request(request.token, request.name, request.inputs):
            issues.append(Issue(request.config_path(finding.property), str(finding)))
    return issues


def azure_issues(fleet: FleetConfig, stack: str, deployer_type: str = "User") -> list[Issue]:
    """Every Azure request of the stack checked against Azure's models (preflight's check)."""
    return check_requests(azure_requests(fleet, stack, deployer_type))
