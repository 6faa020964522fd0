"""Read the fleet config: raw data -> FleetConfig (schema errors only), and the stack file.

The cross-field rules run on the result in `checks`; `checks.stack` puts the two together.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from config.errors import ConfigError, Issue, key_path
from config.models import FleetConfig
from constants import CONFIG_KEY, PROJECT

# libyaml's safe loader when PyYAML was built with it (same documents, about 8x faster on a big
# stack file); the pure-Python one otherwise.
SAFE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

SECRET_PLACEHOLDER = "<secret>"
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
    path = key_path(*loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        owner = _model_at(loc[:-1])
        known = _known_keys(owner) if owner else []
        hint = difflib.get_close_matches(str(loc[-1]), known, n=1)
        allowed = f"; did you mean {hint[0]!r}?" if hint else ""
        if known:
            allowed += f" Allowed keys: {', '.join(known)}"
        return Issue(path, f"unknown key{allowed}")
    if kind == "missing":
        return Issue(path, "required")
    message = error["msg"]
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind == "literal_error":
        message = f"{message} (got {error['input']!r})"
    return Issue(path, message)


def parse_model(raw: Any, *, source: str = "") -> FleetConfig:
    """Raw config data as the model, or ConfigError with every schema error and its key path."""
    if not isinstance(raw, dict):
        raise ConfigError([Issue(FULL_KEY, "must be a mapping with at least `clusters`")], source)
    try:
        return FleetConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError([_issue_from(e) for e in exc.errors()], source) from None


def with_default_location(raw: object, location: object) -> object:
    """Fall back to the provider's `azure-native:location`, as Azure resources would."""
    result: object = raw
    if isinstance(location, str) and isinstance(raw, dict):
        mapping = cast("dict[str, Any]", raw)
        if "location" not in mapping:
            result = {**mapping, "location": location}
    return result


def _opaque_secrets(value: Any) -> Any:
    """Replace `{secure: ...}` with a placeholder: offline we never see secret values."""
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        if set(mapping) == {"secure"}:
            return SECRET_PLACEHOLDER
        return {k: _opaque_secrets(v) for k, v in mapping.items()}
    if isinstance(value, list):
        return [_opaque_secrets(v) for v in cast("list[Any]", value)]
    return value


def stack_file(stack: str, root: Path | None = None) -> Path:
    return (root or Path(__file__).resolve().parent.parent) / f"Pulumi.{stack}.yaml"


def read_stack_file(stack: str, root: Path | None = None) -> tuple[Any, str]:
    """Offline: the fleet key of `Pulumi.<stack>.yaml` as the CLI would hand it to the program.

    Returns (raw data, file name); secret values become a placeholder (offline never sees them).
    """
    path = stack_file(stack, root)
    if not path.is_file():
        raise ConfigError([Issue("", f"no stack file {path.name} in {path.parent}")])
    try:
        document: dict[str, Any] = yaml.load(path.read_text(), Loader=SAFE_LOADER) or {}
    except yaml.YAMLError as exc:
        raise ConfigError([Issue("", f"{path.name} is not valid YAML: {exc}")]) from None
    config: dict[str, Any] = document.get("config") or {}
    if FULL_KEY not in config:
        raise ConfigError([Issue(FULL_KEY, f"required in {path.name}")], path.name)
    raw = _opaque_secrets(config[FULL_KEY])
    return with_default_location(raw, config.get("azure-native:location")), path.name


def read_existing_kubeconfigs(fleet: FleetConfig, root: Path) -> dict[str, str]:
    """Kubeconfig files of `source: existing` clusters, relative to the project root."""
    found: dict[str, str] = {}
    issues: list[Issue] = []
    for i, cluster in enumerate(fleet.clusters):
        if cluster.existing is None or cluster.existing.kubeconfig_path is None:
            continue
        path = root / cluster.existing.kubeconfig_path
        try:
            found[cluster.name] = path.read_text()
        except OSError as exc:
            issues.append(
                Issue(
                    key_path("clusters", i, "existing", "kubeconfigPath"),
                    f"cannot read {path}: {exc.strerror}",
                )
            )
    if issues:
        raise ConfigError(issues)
    return found


def kueue_crd_dir(fleet: FleetConfig, root: Path) -> Path:
    """Where `manifests-only` installs read the pinned Kueue CRDs from."""
    version = fleet.kueue.version
    if fleet.kueue.crd_dir is not None:
        return root / fleet.kueue.crd_dir
    cached = root / ".cache" / "crds" / "kueue" / f"v{version}"
    return cached if cached.is_dir() else root.parent / "shared" / "crds" / "kueue" / f"v{version}"


def kueue_crd_files(fleet: FleetConfig, root: Path) -> list[str]:
    """The pinned Kueue CRD files, for `kueue.install: manifests-only` (else none).

    Paths, not parsed objects: the Kubernetes provider reads them (the workloads CRD alone is
    1.4 MB, which costs seconds to parse and serialize in Python).
    """
    if fleet.kueue.install != "manifests-only":
        return []
    directory = kueue_crd_dir(fleet, root)
    files = sorted(directory.glob("kueue.x-k8s.io_*.yaml")) if directory.is_dir() else []
    if not files:
        raise ConfigError(
            [
                Issue(
                    "kueue.crdDir",
                    f"no Kueue CRDs in {directory}: run scripts/fetch-crds or set crdDir",
                )
            ]
        )
    return [str(path) for path in files]
