"""Validate custom resources the program emits against the pinned upstream CRD schemas.

The goal is to fail a test wherever the API server would reject an object *or silently change it*.
So, in the order the API server works on a create:

1-3. the structural schema, by the engine the program uses too (`upstream.structural.admit`):
   nulls in non-nullable fields are reported (the server prunes them without a word), schema
   defaults are applied (CEL rules and `required` see defaulted objects on a real server), then
   types, enums, bounds, patterns, formats, list-type uniqueness, and unknown fields wherever the
   schema does not preserve them (the server prunes those, or rejects them under strict field
   validation) are checked,
4. `metadata` is checked as ObjectMeta (name, DNS rules, label and annotation syntax),
5. every `x-kubernetes-validations` CEL rule on a present value is evaluated with cel-python.
   Transition rules (they read `oldSelf`) only run on update, so on create they are recorded as
   skipped; rules cel-python cannot run are recorded as skipped with the reason. Nothing is dropped
   silently: `ValidationReport.skipped` and the session summary of `conftest_crd` list them.

Schemas come from `<repo>/.cache/crds/<project>/<version>/` (filled by `scripts/fetch-crds` from the
pins in scripts/crd-pins.json; `scripts/bootstrap` runs it). Files are parsed lazily, one CRD at a
time, and the compiled validators are cached for the whole process.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import celpy
import lark
import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError, base_functions

from upstream import structural

__all__ = [
    "CrdRef",
    "RuleInfo",
    "RuleInventory",
    "SchemaNotFoundError",
    "SkippedRule",
    "ValidationLedger",
    "ValidationReport",
    "assert_valid",
    "available_kinds",
    "pop_ledger",
    "push_ledger",
    "rule_inventory",
    "schema_dir",
    "validate",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_CRDS = REPO_ROOT / ".cache" / "crds"
FETCH_COMMAND = "scripts/fetch-crds"

JSON = Any  # a parsed JSON/YAML value; recursive aliases buy nothing at the call sites
Schema = dict[str, Any]
Path_ = tuple[str | int, ...]


class SchemaNotFoundError(RuntimeError):
    """No pinned schema directory for a project/version (raised in CI instead of skipping)."""


# --------------------------------------------------------------------------------------------
# Public result types


@dataclass(frozen=True, order=True)
class CrdRef:
    """Which schema an object was validated against."""

    project: str
    version: str
    api_version: str
    kind: str

    def __str__(self) -> str:
        return f"{self.project} {self.version} {self.api_version} {self.kind}"


@dataclass(frozen=True, order=True)
class SkippedRule:
    """A CEL rule that applied to a present value but was not evaluated, and why."""

    path: str  # instance path, e.g. "spec.clusterQueue"
    rule: str
    reason: str
    category: Literal["transition", "unsupported"]
    schema_path: str = ""  # schema location, e.g. ".spec.resourceGroups[]"


@dataclass
class ValidationReport:
    """Outcome of one `validate` call: errors block, skipped rules must be looked at."""

    crd: CrdRef | None
    errors: list[str] = field(default_factory=list)
    skipped: list[SkippedRule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    evaluated_rules: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    def __str__(self) -> str:
        lines = [f"{self.crd or '<unresolved kind>'}: {len(self.errors)} error(s)"]
        lines += [f"  error: {e}" for e in self.errors]
        lines += [f"  warning: {w}" for w in self.warnings]
        lines += [
            f"  skipped CEL ({s.category}) {s.path}: {s.rule} -- {s.reason}" for s in self.skipped
        ]
        return "\n".join(lines)


@dataclass(frozen=True)
class RuleInfo:
    """One CEL rule of a CRD version, classified once per process."""

    schema_path: str
    rule: str
    message: str
    status: Literal["evaluable", "transition", "unsupported"]
    reason: str = ""


@dataclass(frozen=True)
class RuleInventory:
    """Every CEL rule in one CRD version and whether this harness can evaluate it on create."""

    crd: CrdRef
    rules: tuple[RuleInfo, ...]

    def count(self, status: str) -> int:
        return sum(1 for r in self.rules if r.status == status)

    def summary(self) -> str:
        return (
            f"{len(self.rules)} CEL rule(s): {self.count('evaluable')} evaluable, "
            f"{self.count('transition')} transition (oldSelf, update only), "
            f"{self.count('unsupported')} unsupported"
        )


# --------------------------------------------------------------------------------------------
# Locating and indexing schema files


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def schema_dir(project: str, version: str) -> Path:
    """The directory holding `project`/`version` schemas; skips the test (fails in CI) if none."""
    candidate = CACHE_CRDS / project / version
    if candidate.is_dir():
        return candidate
    message = (
        f"no pinned CRD schemas for {project} {version} in {candidate}; "
        f"run `{FETCH_COMMAND}` from the project root"
    )
    if _in_ci():
        # A skipped schema test in CI would let an invalid object ship; make it a failure.
        raise SchemaNotFoundError(message)
    pytest.skip(message, allow_module_level=True)


@dataclass(frozen=True)
class _Source:
    path: Path
    group: str
    kind: str
    scope: str
    swagger_definition: str = ""  # set for aggregated-API kinds described by swagger definitions


# Aggregated APIs have no CRD to say their scope; karmada's Cluster is cluster-scoped.
_SWAGGER_SCOPES = {("cluster.karmada.io", "Cluster"): "Cluster"}


@functools.cache
def _index(directory: Path) -> dict[tuple[str, str], _Source]:
    """(group, kind) -> file, reading only each CRD's header so big files stay unparsed."""
    index: dict[tuple[str, str], _Source] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix in {".yaml", ".yml"}:
            text = path.read_text(encoding="utf-8")
            # controller-gen writes group/names/scope before `versions:`; parse just that prefix.
            cut = text.find("\n  versions:")
            head = yaml.load(text[:cut] if cut > 0 else text, Loader=_YamlLoader)
            spec = head.get("spec", {}) if isinstance(head, dict) else {}
            if not spec.get("group") or not spec.get("names", {}).get("kind"):
                head = yaml.load(text, Loader=_YamlLoader)
                spec = head["spec"]
            src = _Source(
                path, spec["group"], spec["names"]["kind"], spec.get("scope", "Namespaced")
            )
            index[(src.group, src.kind)] = src
        elif path.name.endswith(".swagger-definitions.json"):
            for name, definition in _load_json(path)["definitions"].items():
                for gvk in definition.get("x-kubernetes-group-version-kind", []):
                    key = (gvk["group"], gvk["kind"])
                    if key in _SWAGGER_SCOPES:
                        index[key] = _Source(path, key[0], key[1], _SWAGGER_SCOPES[key], name)
    return index


_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the workloads CRD is 1.4 MB


@functools.cache
def _load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_YamlLoader)


@functools.cache
def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def available_kinds(project: str, version: str) -> list[tuple[str, str]]:
    """Sorted (apiVersion, kind) pairs that `validate` knows for a project/version."""
    directory = schema_dir(project, version)
    out: list[tuple[str, str]] = []
    for (group, kind), src in _index(directory).items():
        if src.swagger_definition:
            definition = _load_json(src.path)["definitions"][src.swagger_definition]
            out += [
                (f"{g['group']}/{g['version']}", kind)
                for g in definition["x-kubernetes-group-version-kind"]
            ]
        else:
            out += [
                (f"{group}/{v['name']}", kind) for v in _load_yaml(src.path)["spec"]["versions"]
            ]
    return sorted(out)


# --------------------------------------------------------------------------------------------
# Swagger ($ref) support: karmada's Cluster is an aggregated API described by swagger definitions

_REF_PREFIX = "#/definitions/"
_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
# Core types the karmada file refers to but does not carry (they live in the Kubernetes spec).
# Shapes follow k8s.io/api and apimachinery; ObjectMeta is replaced by _object_meta_schema anyway.
_EXTERNAL_DEFINITIONS: dict[str, Schema] = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta": {
        "type": "object",
        "properties": {
            "continue": {"type": "string"},
            "remainingItemCount": {"type": "integer", "format": "int64"},
            "resourceVersion": {"type": "string"},
            "selfLink": {"type": "string"},
        },
    },
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "x-kubernetes-int-or-string": True,
        "pattern": _QUANTITY_PATTERN,
    },
    "io.k8s.api.core.v1.Taint": {
        "type": "object",
        "required": ["key", "effect"],
        "properties": {
            "key": {"type": "string"},
            "value": {"type": "string"},
            "effect": {"type": "string", "enum": ["NoExecute", "NoSchedule", "PreferNoSchedule"]},
            "timeAdded": {"type": "string", "format": "date-time"},
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.Condition": {
        "type": "object",
        "required": ["type", "status", "lastTransitionTime", "reason", "message"],
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
        },
    },
}


def _resolve_refs(
    node: JSON, definitions: Mapping[str, Schema], stack: tuple[str, ...] = ()
) -> JSON:
    """Inline every `$ref` so the rest of the module sees one structural schema."""
    if isinstance(node, list):
        return [_resolve_refs(item, definitions, stack) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = str(node["$ref"]).removeprefix(_REF_PREFIX)
        if name in stack:
            raise ValueError(f"recursive $ref {name}: not representable as a structural schema")
        target = definitions.get(name) or _EXTERNAL_DEFINITIONS.get(name)
        if target is None:
            raise ValueError(f"unresolved $ref {name}; add a shape for it to _EXTERNAL_DEFINITIONS")
        resolved = _resolve_refs(target, definitions, (*stack, name))
        siblings = {k: v for k, v in node.items() if k != "$ref"}  # e.g. "default": {}
        return {**resolved, **_resolve_refs(siblings, definitions, stack)}
    return {k: _resolve_refs(v, definitions, stack) for k, v in node.items()}


# --------------------------------------------------------------------------------------------
# ObjectMeta as the API server accepts it on create (only the fields clients may send)

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")

_HINTS = {
    "k8s-dns-label": "must be an RFC 1123 label (lowercase alphanumerics and '-', at most 63)",
    "k8s-dns-subdomain": "must be an RFC 1123 subdomain (lowercase alphanumerics, '-', '.')",
    "k8s-qualified-name": "must be a qualified name ([prefix/]name, name at most 63 characters)",
    "k8s-label-value": "must be a label value (at most 63 alphanumerics, '-', '_', '.')",
    "karmada-cluster-name": "must be an RFC 1123 label of at most 48 characters (karmada Cluster)",
}


def _is_dns_label(v: str) -> bool:
    return len(v) <= 63 and bool(_DNS_LABEL.match(v))


def _is_dns_subdomain(v: str) -> bool:
    return len(v) <= 253 and bool(_DNS_SUBDOMAIN.match(v))


def _is_qualified_name(v: str) -> bool:
    prefix, _, name = v.rpartition("/")
    if "/" in v and not (prefix and _is_dns_subdomain(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME_PART.match(name))


def _is_label_value(v: str) -> bool:
    return v == "" or (len(v) <= 63 and bool(_QUALIFIED_NAME_PART.match(v)))


_NAME_CHECKS = {
    "k8s-dns-subdomain": _is_dns_subdomain,
    "karmada-cluster-name": lambda v: len(v) <= 48 and _is_dns_label(v),
}
_STRING = {"type": "string"}
_TIME = {"type": "string", "format": "date-time", "nullable": True}
_INT64 = {"type": "integer", "format": "int64"}
# ObjectMeta's shape for the structural engine; the name and key rules below are Go code on the
# server (apimachinery's ValidateObjectMeta), not schema.
_OBJECT_META: Schema = {
    "type": "object",
    "required": ["name"],  # generateName would make Pulumi and other objects' refs unstable
    "properties": {
        "name": _STRING,
        "generateName": _STRING,
        "namespace": _STRING,
        "labels": {"type": "object", "additionalProperties": _STRING},
        "annotations": {"type": "object", "additionalProperties": _STRING},
        "finalizers": {"type": "array", "items": _STRING},
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["apiVersion", "kind", "name", "uid"],
                "properties": {
                    "apiVersion": _STRING,
                    "kind": _STRING,
                    "name": _STRING,
                    "uid": _STRING,
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
        "uid": _STRING,
        "resourceVersion": _STRING,
        "generation": _INT64,
        "creationTimestamp": _TIME,
        "deletionTimestamp": _TIME,
        "deletionGracePeriodSeconds": _INT64,
        "managedFields": {
            "type": "array",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "selfLink": _STRING,
    },
}


def _object_meta_errors(meta: JSON, name_format: str) -> list[str]:
    out = [
        f"{_fmt_path(('metadata', *where))}: {message}"
        for where, message in structural.schema_errors(meta, _OBJECT_META)
    ]
    if not isinstance(meta, dict):
        return out
    name = meta.get("name")
    if isinstance(name, str) and not _NAME_CHECKS[name_format](name):
        out.append(f"metadata.name: {name!r} {_HINTS[name_format]}")
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and not _is_dns_label(namespace):
        out.append(f"metadata.namespace: {namespace!r} {_HINTS['k8s-dns-label']}")
    for field_, lower in (("labels", False), ("annotations", True)):
        entries = meta.get(field_)
        if not isinstance(entries, dict):
            continue
        for key, value in entries.items():
            # The API server lowercases annotation keys before the qualified-name check.
            if not _is_qualified_name(key.lower() if lower else key):
                out.append(f"metadata.{field_}: key {key!r} {_HINTS['k8s-qualified-name']}")
            if field_ == "labels" and isinstance(value, str) and not _is_label_value(value):
                path = _fmt_path(("metadata", "labels", key))
                out.append(f"{path}: {value!r} {_HINTS['k8s-label-value']}")
    for n, finalizer in enumerate(meta.get("finalizers") or ()):
        if isinstance(finalizer, str) and not _is_qualified_name(finalizer):
            out.append(f"metadata.finalizers[{n}]: {finalizer!r} {_HINTS['k8s-qualified-name']}")
    return out


# --------------------------------------------------------------------------------------------
# Compiled kinds


@dataclass(frozen=True, eq=False)  # identity hash: instances are cached, and keyed on by _inventory
class _Kind:
    ref: CrdRef
    scope: str
    served: bool
    deprecated: bool
    status_subresource: bool
    schema: Schema  # the Kubernetes structural schema, $refs inlined
    name_format: str  # how metadata.name is checked

    @functools.cached_property
    def unchecked_formats(self) -> frozenset[str]:
        return frozenset(structural.unchecked_formats(self.schema))

    @functools.cached_property
    def body_schema(self) -> Schema:
        """The schema without `metadata`, which `_object_meta_errors` checks as ObjectMeta."""
        properties = {
            k: v for k, v in (self.schema.get("properties") or {}).items() if k != "metadata"
        }
        required = {*self.schema.get("required", ()), "apiVersion", "kind"} - {"metadata"}
        return {**self.schema, "properties": properties, "required": sorted(required)}


def _find_source(directory: Path, api_version: str, kind: str) -> _Source | None:
    group = api_version.rpartition("/")[0]
    return _index(directory).get((group, kind))


@functools.cache
def _kind(directory: Path, project: str, version: str, api_version: str, kind: str) -> _Kind | None:
    src = _find_source(directory, api_version, kind)
    if src is None:
        return None
    group, _, api_ver = api_version.rpartition("/")
    ref = CrdRef(project, version, api_version, kind)
    if src.swagger_definition:
        definitions = _load_json(src.path)["definitions"]
        gvks = definitions[src.swagger_definition]["x-kubernetes-group-version-kind"]
        if not any(g["group"] == group and g["version"] == api_ver for g in gvks):
            return None
        schema = _resolve_refs(definitions[src.swagger_definition], definitions)
        served, deprecated, status_subresource = True, False, True
        name_format = "karmada-cluster-name" if kind == "Cluster" else "k8s-dns-subdomain"
    else:
        crd = _load_yaml(src.path)
        versions = {v["name"]: v for v in crd["spec"]["versions"]}
        if api_ver not in versions:
            return None
        entry = versions[api_ver]
        schema = entry["schema"]["openAPIV3Schema"]
        served = bool(entry.get("served", False))
        deprecated = bool(entry.get("deprecated", False))
        status_subresource = "status" in (entry.get("subresources") or {})
        name_format = "k8s-dns-subdomain"  # custom resources: apimachinery NameIsDNSSubdomain
    return _Kind(ref, src.scope, served, deprecated, status_subresource, schema, name_format)


def _resolve_kind(project: str, version: str, api_version: str, kind: str) -> _Kind | None:
    return _kind(schema_dir(project, version), project, version, api_version, kind)


# --------------------------------------------------------------------------------------------
# Paths


def _fmt_path(parts: Path_) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$-]*", p):
            out += f".{p}" if out else p
        else:
            out += f"[{p}]"
    return out or "<root>"


# --------------------------------------------------------------------------------------------
# Step 0: plain JSON


def _as_json(value: Any, path: Path_, errors: list[str]) -> JSON:
    """A JSON copy of `value`; anything a Kubernetes client could not serialise is an error."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            errors.append(f"{_fmt_path(path)}: {value!r} is not a JSON number")
            return None
        return value
    if isinstance(value, Mapping):
        out: dict[str, JSON] = {}
        for k, v in cast(Mapping[Any, Any], value).items():
            if not isinstance(k, str):
                errors.append(f"{_fmt_path(path)}: key {k!r} is not a string")
                continue
            out[k] = _as_json(v, (*path, k), errors)
        return out
    if isinstance(value, list | tuple):
        items = cast(list[Any] | tuple[Any, ...], value)
        return [_as_json(v, (*path, i), errors) for i, v in enumerate(items)]
    # e.g. a pulumi.Output leaking into a builder's result
    errors.append(f"{_fmt_path(path)}: {type(value).__name__} is not a JSON value")
    return None


def _body_errors(kind: _Kind, data: dict[str, JSON]) -> tuple[dict[str, JSON], list[str]]:
    """Steps 1-3 on everything but `metadata`: the object as stored, and the errors."""
    body = {k: v for k, v in data.items() if k != "metadata"}
    stored, errors = structural.admit(body, kind.body_schema)
    if "metadata" in data:
        stored["metadata"] = data["metadata"]
    else:
        errors.append((("metadata",), "required field missing"))
    return stored, [f"{_fmt_path(where)}: {message}" for where, message in errors]


def _metadata_errors(kind: _Kind, obj: Mapping[str, Any]) -> list[str]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    out: list[str] = []
    if kind.scope == "Cluster" and meta.get("namespace"):
        out.append(
            f"metadata.namespace: {kind.ref.kind} is cluster-scoped; "
            "the API server ignores a namespace"
        )
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        size = sum(len(k) + len(str(v)) for k, v in annotations.items())
        if size > 256 * 1024:
            out.append(f"metadata.annotations: total size {size} exceeds 262144 bytes")
    return out


# Karmada's Cluster is validated by Go code in karmada-aggregated-apiserver, not by a schema
# (pkg/apis/cluster/validation/validation.go at v1.18.2). The checks our objects can hit:
def _karmada_cluster_errors(obj: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return out
    if spec.get("syncMode") not in ("Push", "Pull"):
        out.append(f"spec.syncMode: Unsupported value {spec.get('syncMode')!r}: 'Pull', 'Push'")
    for ref in ("secretRef", "impersonatorSecretRef"):
        value = spec.get(ref)
        if isinstance(value, dict):
            out += [
                f"spec.{ref}.{k}: Required value" for k in ("namespace", "name") if not value.get(k)
            ]
    endpoint = spec.get("apiEndpoint")
    if isinstance(endpoint, str) and endpoint:
        parts = urlsplit(endpoint)
        if not parts.netloc:
            out.append(f"spec.apiEndpoint: {endpoint!r}: host must be provided")
        if parts.username or parts.fragment or parts.query:
            out.append(f"spec.apiEndpoint: {endpoint!r}: no user info, query or fragment allowed")
    proxy = spec.get("proxyURL")
    if (
        isinstance(proxy, str)
        and proxy
        and urlsplit(proxy).scheme not in ("http", "https", "socks5")
    ):
        out.append(f"spec.proxyURL: {proxy!r}: unsupported scheme, must be http, https, or socks5")
    taints = spec.get("taints")
    if isinstance(taints, list):
        seen: set[tuple[Any, Any]] = set()
        for i, taint in enumerate(taints):
            if isinstance(taint, dict):
                key = (taint.get("key"), taint.get("effect"))
                if key in seen:
                    out.append(
                        f"spec.taints[{i}]: Duplicate value: "
                        "taints must be unique by key and effect"
                    )
                seen.add(key)
                if isinstance(taint.get("key"), str) and not _is_qualified_name(taint["key"]):
                    out.append(f"spec.taints[{i}].key: {_HINTS['k8s-qualified-name']}")
    return out


_SERVER_CHECKS = {("cluster.karmada.io", "Cluster"): _karmada_cluster_errors}


# --------------------------------------------------------------------------------------------
# Step 5: CEL

_MACROS = {"has", "all", "exists", "exists_one", "map", "filter"}
_CEL_FUNCTIONS = _MACROS | set(base_functions)


def _fails_on_the_server_too(error: CELEvalError) -> bool:
    """Runtime errors the API server's CEL hits in the same situation, e.g. `self.x` when `x` is
    absent: they fail validation there, so they fail it here. Anything else (an undeclared function,
    a type cel-python models differently) is cel-python's limit and is reported as skipped."""
    message = str(error.args[0]) if error.args else ""
    cause = error.args[1] if len(error.args) > 1 else None
    if cause is KeyError:
        return message.startswith("no such member")
    return cause in (IndexError, ZeroDivisionError)


@functools.cache
def _cel_env() -> celpy.Environment:
    return celpy.Environment()  # ~0.2 s to build its parser: once per process


@dataclass(frozen=True)
class _Compiled:
    program: celpy.Runner | None
    status: Literal["evaluable", "transition", "unsupported"]
    reason: str = ""


@functools.cache
def _compile(rule: str, optional_old_self: bool) -> _Compiled:
    env = _cel_env()
    try:
        ast = env.compile(rule)
    except Exception as exc:  # celpy raises its own parse errors and lark errors
        return _Compiled(None, "unsupported", f"cel-python cannot parse it: {_short(exc)}")
    identifiers: set[str] = set()
    functions: set[str] = set()
    for node in ast.iter_subtrees():
        if node.data == "ident" and node.children:
            identifiers.add(str(node.children[0]))
        elif node.data == "ident_arg" and node.children:
            functions.add(str(node.children[0]))
        elif node.data == "member_dot_arg" and len(node.children) > 1:
            child = node.children[1]
            if isinstance(child, lark.Token):
                functions.add(str(child))
    if "oldSelf" in identifiers:
        if optional_old_self:
            return _Compiled(
                None,
                "unsupported",
                "optionalOldSelf rules need CEL optionals, which cel-python lacks",
            )
        return _Compiled(
            None, "transition", "transition rule (uses oldSelf): applies on update only"
        )
    missing = sorted(functions - _CEL_FUNCTIONS)
    if missing:
        return _Compiled(
            None,
            "unsupported",
            f"uses Kubernetes CEL functions cel-python lacks: {', '.join(missing)}",
        )
    return _Compiled(env.program(ast), "evaluable")


def _short(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    return text.split(" (in activation")[0][:200]


def _type_matches(s: Schema, value: JSON) -> bool:
    expected = s.get("type")
    if s.get("x-kubernetes-int-or-string"):
        return isinstance(value, int | str) and not isinstance(value, bool)
    checks: dict[str, Any] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    return expected not in checks or bool(checks[expected](value))


def _walk_cel(
    s: Schema,
    value: JSON,
    path: Path_,
    spath: tuple[str, ...],
    report: ValidationReport,
) -> None:
    rules = s.get("x-kubernetes-validations")
    if rules and value is not None and _type_matches(s, value):
        for rule in rules:
            _eval_rule(rule, value, path, "".join(spath) or "<root>", report)
    if isinstance(value, dict):
        properties: dict[str, Schema] = s.get("properties") or {}
        additional = s.get("additionalProperties")
        for k, v in value.items():
            if k in properties:
                _walk_cel(properties[k], v, (*path, k), (*spath, f".{k}"), report)
            elif not properties and isinstance(additional, dict):
                _walk_cel(additional, v, (*path, k), (*spath, "{}"), report)
    elif isinstance(value, list) and isinstance(s.get("items"), dict):
        for i, item in enumerate(value):
            _walk_cel(s["items"], item, (*path, i), (*spath, "[]"), report)


def _eval_rule(
    rule: Mapping[str, Any], value: JSON, path: Path_, spath: str, report: ValidationReport
) -> None:
    text = str(rule.get("rule", ""))
    where = _fmt_path((*path, *[p for p in str(rule.get("fieldPath", "")).split(".") if p]))
    compiled = _compile(text, bool(rule.get("optionalOldSelf")))
    if compiled.program is None:
        category: Literal["transition", "unsupported"] = (
            "transition" if compiled.status == "transition" else "unsupported"
        )
        report.skipped.append(SkippedRule(where, text, compiled.reason, category, spath))
        return
    message = str(rule.get("message") or f"failed rule: {text}")
    try:
        result: Any = compiled.program.evaluate({"self": json_to_cel(value)})
    except CELEvalError as exc:
        result = exc
    except Exception as exc:  # cel-python internals; never let one rule hide the others
        report.skipped.append(
            SkippedRule(where, text, f"cel-python failed: {_short(exc)}", "unsupported", spath)
        )
        return
    report.evaluated_rules += 1
    if isinstance(result, CELEvalError):
        reason = _short(result)
        if _fails_on_the_server_too(result):
            report.errors.append(f"{where}: {message} (rule {text!r} errored: {reason})")
        else:
            report.evaluated_rules -= 1
            report.skipped.append(
                SkippedRule(
                    where, text, f"cel-python could not evaluate it: {reason}", "unsupported", spath
                )
            )
    elif isinstance(result, celtypes.BoolType):
        if not result:
            report.errors.append(f"{where}: {message} (rule: {text})")
    else:
        report.evaluated_rules -= 1
        report.skipped.append(
            SkippedRule(
                where,
                text,
                f"rule returned {type(result).__name__}, not bool",
                "unsupported",
                spath,
            )
        )


def _collect_rules(s: Schema, spath: str, out: list[tuple[str, Mapping[str, Any]]]) -> None:
    for rule in s.get("x-kubernetes-validations") or []:
        out.append((spath or "<root>", rule))
    for k, sub in (s.get("properties") or {}).items():
        _collect_rules(sub, f"{spath}.{k}", out)
    if isinstance(s.get("items"), dict):
        _collect_rules(s["items"], f"{spath}[]", out)
    if isinstance(s.get("additionalProperties"), dict):
        _collect_rules(s["additionalProperties"], f"{spath}{{}}", out)


def rule_inventory(project: str, version: str, api_version: str, kind: str) -> RuleInventory:
    """Every CEL rule of one CRD version, classified (evaluable / transition / unsupported)."""
    resolved = _resolve_kind(project, version, api_version, kind)
    if resolved is None:
        raise KeyError(f"no schema for {api_version} {kind} in {project} {version}")
    return _inventory(resolved)


@functools.cache
def _inventory(kind: _Kind) -> RuleInventory:
    found: list[tuple[str, Mapping[str, Any]]] = []
    _collect_rules(kind.schema, "", found)
    infos: list[RuleInfo] = []
    for spath, rule in found:
        text = str(rule.get("rule", ""))
        compiled = _compile(text, bool(rule.get("optionalOldSelf")))
        infos.append(
            RuleInfo(spath, text, str(rule.get("message", "")), compiled.status, compiled.reason)
        )
    return RuleInventory(kind.ref, tuple(infos))


# --------------------------------------------------------------------------------------------
# Entry points


def _known_hint(directory: Path, api_version: str, kind: str) -> str:
    """What does exist, for an unknown apiVersion/kind; parses at most the one CRD file."""
    src = _find_source(directory, api_version, kind)
    if src is None:
        return "known kinds: " + ", ".join(sorted(f"{g} {k}" for g, k in _index(directory)))
    if src.swagger_definition:
        definition = _load_json(src.path)["definitions"][src.swagger_definition]
        versions = [g["version"] for g in definition["x-kubernetes-group-version-kind"]]
    else:
        versions = [v["name"] for v in _load_yaml(src.path)["spec"]["versions"]]
    return f"{kind} versions: {', '.join(f'{src.group}/{v}' for v in versions)}"


def validate(obj: Mapping[str, Any], project: str, version: str) -> ValidationReport:
    """Validate `obj` as the API server would on create, against `project`/`version` schemas."""
    errors: list[str] = []
    data = _as_json(obj, (), errors)
    if not isinstance(data, dict):
        return ValidationReport(None, [*errors, "<root>: not an object"])
    api_version, kind_name = data.get("apiVersion"), data.get("kind")
    if not isinstance(api_version, str) or "/" not in api_version or not isinstance(kind_name, str):
        errors.append("<root>: apiVersion (group/version) and kind are required")
        return ValidationReport(None, errors)
    kind = _resolve_kind(project, version, api_version, kind_name)
    if kind is None:
        hint = _known_hint(schema_dir(project, version), api_version, kind_name)
        errors.append(
            f"<root>: no schema for {api_version} {kind_name} in {project} {version} ({hint})"
        )
        return ValidationReport(None, errors)

    report = ValidationReport(kind.ref, errors)
    if not kind.served:
        report.errors.append(f"apiVersion: {api_version} is not served by {project} {version}")
    if kind.deprecated:
        report.warnings.append(
            f"apiVersion: {api_version} {kind_name} is deprecated in {project} {version}"
        )
    if kind.status_subresource and "status" in data:
        report.warnings.append("status: ignored on create (the kind has a status subresource)")
    report.warnings += [
        f"format {f!r} is not checked by this harness" for f in sorted(kind.unchecked_formats)
    ]

    data, errors = _body_errors(kind, data)
    report.errors += errors
    report.errors += _object_meta_errors(data.get("metadata"), kind.name_format)
    report.errors += _metadata_errors(kind, data)
    check = _SERVER_CHECKS.get((api_version.rpartition("/")[0], kind_name))
    if check is not None:
        report.errors += check(data)
    _walk_cel(kind.schema, data, (), (), report)
    report.errors = sorted(dict.fromkeys(report.errors))
    if _ledgers:
        _ledgers[-1].record(report, _inventory(kind))
    return report


def assert_valid(obj: Mapping[str, Any], project: str, version: str) -> ValidationReport:
    """`validate`, raising AssertionError listing every error; returns the report otherwise."""
    report = validate(obj, project, version)
    if report.errors:
        name = (
            obj.get("metadata", {}).get("name") if isinstance(obj.get("metadata"), dict) else None
        )
        raise AssertionError(f"{obj.get('kind')} {name!r} is invalid against {report}")
    return report


# --------------------------------------------------------------------------------------------
# Session ledger: what conftest_crd prints at the end of a pytest run


@dataclass(eq=False)  # identity: pop_ledger must remove this ledger, not an equal-looking one
class ValidationLedger:
    """Objects validated per CRD and each skipped CEL rule, for one test session."""

    objects: Counter[CrdRef] = field(default_factory=Counter[CrdRef])
    inventories: dict[CrdRef, RuleInventory] = field(default_factory=dict[CrdRef, RuleInventory])
    skipped: Counter[tuple[CrdRef, SkippedRule]] = field(
        default_factory=Counter[tuple[CrdRef, SkippedRule]]
    )

    def record(self, report: ValidationReport, inventory: RuleInventory) -> None:
        if report.crd is None:
            return
        self.objects[report.crd] += 1
        self.inventories[report.crd] = inventory
        for rule in report.skipped:
            # The same rule on list items differs only in the index: count it once per schema path.
            key = SkippedRule(
                rule.schema_path, rule.rule, rule.reason, rule.category, rule.schema_path
            )
            self.skipped[(report.crd, key)] += 1

    def summary_lines(self) -> list[str]:
        lines: list[str] = []
        for crd in sorted(self.objects):
            inventory = self.inventories[crd]
            lines.append(f"{crd}: {self.objects[crd]} object(s) validated; {inventory.summary()}")
            for (ref, rule), n in sorted(self.skipped.items()):
                if ref == crd:
                    lines.append(f"    skipped {n}x [{rule.category}] {rule.path}: {rule.rule}")
                    lines.append(f"        reason: {rule.reason}")
            for info in inventory.rules:
                if info.status == "unsupported":
                    lines.append(
                        f"    not evaluable: {info.schema_path}: {info.rule} ({info.reason})"
                    )
        return lines


# A stack, so a pytest session run inside a test (pytester) gets its own ledger and hands the outer
# one back when it ends. This is the one piece of module state: validate() must stay a plain call.
_ledgers: list[ValidationLedger] = []


def push_ledger() -> ValidationLedger:
    """Start recording validations into a new ledger (conftest_crd does this per session)."""
    ledger = ValidationLedger()
    _ledgers.append(ledger)
    return ledger


def pop_ledger(ledger: ValidationLedger) -> None:
    """Stop recording into `ledger`."""
    if ledger in _ledgers:
        _ledgers.remove(ledger)
