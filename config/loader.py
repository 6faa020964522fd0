"""Read the fleet config: the stack file, its secrets and the files its keys name (raw data ->
FleetConfig, with schema errors only: `config.schema`).

The cross-field rules run on the result in `checks`; `checks.stack` puts the two together.
"""

from __future__ import annotations

import difflib
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, cast

from config import yamlsafe
from config.errors import ConfigError, Issue, Lines, key_path
from config.models import FleetConfig
from config.schema import FULL_KEY
from config.stackfiles import no_stack_file
from constants import CONFIG_KEY, PROJECT_ROOT, resource_group_of
from upstream.karmada import KARMADA_CRD_FILES, kruise_app_version

SECRET_PLACEHOLDER = "<secret>"


def with_default_location(raw: object, location: object) -> object:
    """Fall back to the provider's `azure-native:location`, as Azure resources would."""
    result: object = raw
    # Any value but none (a number too: the model says a string is needed, at that line).
    if location is not None and isinstance(raw, dict):
        mapping = cast("dict[str, Any]", raw)
        if "location" not in mapping:
            result = {**mapping, "location": location}
    return result


# Where a `secure:` value may stand inside the fleet key: chart values can need credentials and
# are carried as a Pulumi secret. Anywhere else (names, counts, Azure tags) a secret would be
# written in plain text to Azure or to object metadata, so it is refused.
SECRET_HOMES: tuple[tuple[str, ...], ...] = (("kueue", "values"),)
# Kubeconfig documents are a few kB; CRD files up to a few MB (Kueue's workloads CRD: 1.4 MB).
MAX_KUBECONFIG_BYTES = 256 * 1024
MAX_CRD_BYTES = 8 * 1024 * 1024

Loc = tuple[str | int, ...]


def _is_secure(value: object) -> bool:
    return isinstance(value, dict) and set(cast("dict[Any, Any]", value)) == {"secure"}


def secure_paths(value: object, here: Loc = ()) -> list[Loc]:
    """Where `{secure: ...}` leaves stand in raw config data."""
    if _is_secure(value):
        return [here]
    if isinstance(value, dict):
        mapping = cast("dict[Any, Any]", value)
        return [p for k, v in mapping.items() for p in secure_paths(v, (*here, str(k)))]
    if isinstance(value, list):
        items = cast("list[Any]", value)
        return [p for i, v in enumerate(items) for p in secure_paths(v, (*here, i))]
    return []


def secret_issues(paths: list[Loc]) -> list[Issue]:
    """A `secure:` value outside SECRET_HOMES is refused with its key path."""
    homes = ", ".join(key_path(*h) for h in SECRET_HOMES)
    return [
        Issue(
            key_path(*p),
            f"a secret cannot stand here (it would be stored in plain text); only {homes} "
            "may hold `secure:` values",
        )
        for p in paths
        if not any(p[: len(h)] == h for h in SECRET_HOMES)
    ]


def secret_chart_values(paths: list[Loc]) -> bool:
    """Whether Kueue's chart values hold a secret (then they go to Helm as a Pulumi secret)."""
    return any(p[:2] == ("kueue", "values") for p in paths)


def _opaque_secrets(value: Any) -> Any:
    """Replace `{secure: ...}` with a placeholder: offline we never see secret values."""
    if _is_secure(value):
        return SECRET_PLACEHOLDER
    if isinstance(value, dict):
        mapping = cast("dict[str, Any]", value)
        return {k: _opaque_secrets(v) for k, v in mapping.items()}
    if isinstance(value, list):
        return [_opaque_secrets(v) for v in cast("list[Any]", value)]
    return value


def stack_file(stack: str, root: Path | None = None) -> Path:
    return (root or PROJECT_ROOT) / f"Pulumi.{stack}.yaml"


def read_stack_config(stack: str, root: Path | None = None) -> tuple[dict[str, Any], str] | None:
    """The `config` mapping of `Pulumi.<stack>.yaml` (None when there is no such file)."""
    path = stack_file(stack, root)
    if not path.is_file():
        return None
    try:
        with path.open("rb") as f:
            data = f.read(yamlsafe.MAX_BYTES + 1)
        document = yamlsafe.load(data, name=path.name)
    except OSError as exc:
        raise ConfigError([Issue("", f"cannot read {path.name}: {exc.strerror}")]) from None
    except yamlsafe.YamlError as exc:
        if exc.at is None:
            raise ConfigError([Issue("", str(exc))]) from None
        # `Pulumi.dev.yaml:37: not valid YAML: ...`, as every other error names its line.
        line, column = exc.at
        issue = Issue("", f"not valid YAML: {exc.problem} (column {column})", line=line)
        raise ConfigError([issue], path.name, lines=Lines(path.name, lambda _: None)) from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError([Issue("", f"{path.name} must be a mapping with a `config` key")])
    written = [str(k) for k in cast("dict[Any, Any]", document)]
    close = difflib.get_close_matches("config", written, n=1, cutoff=0.6)
    if "config" not in written and close:  # `confg:`: say so, not that the fleet key is missing
        hint = "unknown key; did you mean 'config'? That key, missing here, holds the fleet"
        raise ConfigError([Issue(close[0], hint)], path.name)
    config = cast("dict[str, Any]", document).get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError([Issue("config", f"must be a mapping of config keys in {path.name}")])
    return cast("dict[str, Any]", config), path.name


def read_stack_file(stack: str, root: Path | None = None) -> tuple[Any, str]:
    """Offline: the fleet key of `Pulumi.<stack>.yaml` as the CLI would hand it to the program.

    Returns (raw data, file name); secret values become a placeholder (offline never sees them).
    """
    found = read_stack_config(stack, root)
    if found is None:
        raise ConfigError([Issue("", no_stack_file(stack_file(stack, root)))])
    config, name = found
    if FULL_KEY not in config:
        raise ConfigError([_missing_fleet(config, name)], name)
    raw = config[FULL_KEY]
    issues = secret_issues(secure_paths(raw))
    if issues:
        raise ConfigError(issues, name)
    return with_default_location(_opaque_secrets(raw), config.get("azure-native:location")), name


def _missing_fleet(config: dict[str, Any], name: str) -> Issue:
    """No fleet key: a key spelled close to it is the likely mistake (`aks-batch-fleet:fleets`)."""
    written = [str(k) for k in config]
    # A typo in it, or the fleet under another namespace (`fleet:`, `myproject:fleet`).
    close = difflib.get_close_matches(FULL_KEY, written, n=1, cutoff=0.8) or [
        k for k in written if k.rpartition(":")[2] == CONFIG_KEY
    ]
    if close:
        return Issue(
            close[0],
            f"unknown key; did you mean {FULL_KEY!r}? That key, missing here, holds the fleet",
        )
    return Issue(FULL_KEY, f"required in {name}")


def stack_lines(stack: str, root: Path | None = None) -> Lines | None:
    """Where the keys of `Pulumi.<stack>.yaml` are written, for error messages (None when the file
    cannot be read as YAML). A path of the fleet key is under `config.<FULL_KEY>`; a path that
    starts with a config key (`aks-batch-fleet:fleets`), or any path when the file has no fleet
    key, under `config`; `location`, when the fleet does not set it, is `azure-native:location`
    (`with_default_location`)."""
    path = stack_file(stack, root)
    try:
        with path.open("rb") as f:
            text = f.read(yamlsafe.MAX_BYTES + 1).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    if len(text) > yamlsafe.MAX_BYTES:
        return None
    top = yamlsafe.positions(text)
    if top is None:
        return None
    config = top.keys.get("config")
    fleet = config.value.keys.get(FULL_KEY) if config else None
    own_location = fleet is not None and "location" in fleet.value.keys

    def find(parts: tuple[str | int, ...]) -> yamlsafe.Found:
        if config is None:  # a misspelled `config` (`confg:`), from the file's top
            return yamlsafe.find(top, parts)
        if fleet is None or (isinstance(parts[0], str) and ":" in parts[0]):
            return yamlsafe.find(top, parts, under=("config",))
        if parts[0] == "location" and not own_location:
            return yamlsafe.find(top, ("azure-native:location",), under=("config",))
        return yamlsafe.find(top, parts, under=("config", FULL_KEY))

    return Lines(path.name, find)


def _inside(root: Path, relative: str, path: str, missing: str) -> Path | Issue:
    """`relative` resolved inside the project `root` (links followed), or the Issue at `path`."""
    problem = _project_path_problem(relative)
    if problem:
        return Issue(path, problem)
    base = root.resolve()
    try:
        resolved = (base / relative).resolve()
    except (OSError, RuntimeError, ValueError):
        return Issue(path, f"{missing}: {relative!r}")
    if not resolved.is_relative_to(base):
        return Issue(path, "must stay inside the project directory (a link leads out of it)")
    return resolved


def project_file(root: Path, relative: str, path: str, *, max_bytes: int) -> Path | Issue:
    """`relative` as a regular file inside the project `root`, or the Issue at key `path`."""
    resolved = _inside(root, relative, path, "no such file in the project")
    if isinstance(resolved, Issue):
        return resolved
    try:
        info = resolved.stat()
    except (OSError, ValueError):
        return Issue(path, f"no such file in the project: {relative!r}")
    if not stat.S_ISREG(info.st_mode):
        return Issue(path, f"must be a regular file: {relative!r}")
    if info.st_size == 0:
        return Issue(path, f"is an empty file: {relative!r}")
    if info.st_size > max_bytes:
        return Issue(path, f"is larger than {max_bytes // 1024} KiB: {relative!r}")
    return resolved


def project_dir(root: Path, relative: str, path: str) -> Path | Issue:
    """`relative` as a directory inside the project `root`, or the Issue at key `path`."""
    resolved = _inside(root, relative, path, "no such directory in the project")
    if isinstance(resolved, Issue) or resolved.is_dir():
        return resolved
    return Issue(path, f"no such directory in the project: {relative!r}")


def _project_path_problem(relative: str) -> str | None:
    if not relative.strip():
        return "must be a path relative to the project directory, not empty"
    if any(ord(ch) < 32 for ch in relative):
        return "must not hold control characters"
    if PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).is_absolute():
        return "must be relative to the project directory, not absolute"
    if ".." in PurePosixPath(relative.replace("\\", "/")).parts:
        return "must stay inside the project directory (no `..`)"
    return None


def _read_kubeconfig(root: Path, relative: str, key: str) -> str | Issue:
    """One kubeconfig file inside the project root, bounded; unparsed."""
    path = project_file(root, relative, key, max_bytes=MAX_KUBECONFIG_BYTES)
    if isinstance(path, Issue):
        return path
    try:
        with path.open("rb") as f:  # bounded: the file may have grown since it was checked
            data = f.read(MAX_KUBECONFIG_BYTES + 1)
    except OSError as exc:
        return Issue(key, f"cannot read the file: {exc.strerror}")
    if len(data) > MAX_KUBECONFIG_BYTES:
        return Issue(key, f"is larger than {MAX_KUBECONFIG_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return Issue(key, "is not a UTF-8 text file")


def read_existing_kubeconfigs(fleet: FleetConfig, root: Path) -> dict[str, str]:
    """Kubeconfig files of `source: existing` clusters, inside the project root; unparsed."""
    found: dict[str, str] = {}
    issues: list[Issue] = []
    for i, cluster in enumerate(fleet.clusters):
        if cluster.existing is None or cluster.existing.kubeconfig_path is None:
            continue
        key = key_path("clusters", i, "existing", "kubeconfigPath")
        document = _read_kubeconfig(root, cluster.existing.kubeconfig_path, key)
        if isinstance(document, Issue):
            issues.append(document)
        else:
            found[cluster.name] = document
    if issues:
        raise ConfigError(issues)
    return found


KARMADA_KUBECONFIG_KEY = "karmada.existing.kubeconfigPath"


def read_karmada_kubeconfig(fleet: FleetConfig, root: Path) -> str | None:
    """The kubeconfig file of an existing Karmada control plane (`karmada.existing`), if any."""
    source = fleet.karmada.existing if fleet.karmada is not None else None
    if source is None or source.kubeconfig_path is None:
        return None
    document = _read_kubeconfig(root, source.kubeconfig_path, KARMADA_KUBECONFIG_KEY)
    if isinstance(document, Issue):
        raise ConfigError([document])
    return document


# scripts/fetch-crds fills this from the pins (docs/upstream-pins.md); nothing else is read. The
# pinned CRDs belong to the program, not to a stack: they sit beside this code, wherever the stack
# file is read from.
PINNED_CRDS = PROJECT_ROOT / ".cache" / "crds"
# scripts/fetch-crds' Go module cache: the training operator's overlay is read from its module.
PINNED_GOMOD = PROJECT_ROOT / ".cache" / "gomod"
PINS_FILE = "scripts/crd-pins.json"


def kueue_crd_dir(fleet: FleetConfig, root: Path) -> Path:
    """Where `manifests-only` installs read the pinned Kueue CRDs from (crdDir unchecked)."""
    version = fleet.kueue.version
    if fleet.kueue.crd_dir is not None:
        return root / fleet.kueue.crd_dir
    return PINNED_CRDS / "kueue" / f"v{version}"


def kueue_crd_files(fleet: FleetConfig, root: Path) -> list[str]:
    """The pinned Kueue CRD files, for `kueue.install: manifests-only` (else none).

    Paths, not parsed objects: the Kubernetes provider reads them (the workloads CRD alone is
    1.4 MB, which costs seconds to parse and serialize in Python). A `crdDir` must lie inside the
    project and hold regular files only.
    """
    if fleet.kueue.install != "manifests-only":
        return []
    if fleet.kueue.crd_dir is not None:
        checked = project_dir(root, fleet.kueue.crd_dir, "kueue.crdDir")
        if isinstance(checked, Issue):
            raise ConfigError([checked])
        directory = checked
    else:
        directory = kueue_crd_dir(fleet, root)
    files = sorted(directory.glob("kueue.x-k8s.io_*.yaml")) if directory.is_dir() else []
    if not files:
        raise ConfigError(
            [
                Issue(
                    "kueue.crdDir",
                    f"no Kueue CRDs in {directory}: run scripts/fetch-crds (pins: "
                    f"{PINS_FILE}) or set crdDir",
                )
            ]
        )
    if fleet.kueue.crd_dir is not None:
        base = root.resolve()
        checked_files = [
            project_file(base, str(f.relative_to(base)), "kueue.crdDir", max_bytes=MAX_CRD_BYTES)
            for f in files
        ]
        issues = [f for f in checked_files if isinstance(f, Issue)]
        if issues:
            raise ConfigError(issues)
    return [str(path) for path in files]


KRUISE_CRD_DIR_KEY = "karmada.kruise.crdDir"


def kruise_crd_dir(fleet: FleetConfig, root: Path) -> Path | None:
    """Where the Karmada API server's Kruise CRDs are read from (crdDir unchecked): `crdDir`, else
    the pinned copy of the members' Kruise release; None without Karmada. Never a URL: a file
    fetched at deploy time would be neither pinned nor hashed."""
    if fleet.karmada is None:
        return None
    kruise = fleet.karmada.kruise
    if kruise.crd_dir is not None:
        return root / kruise.crd_dir
    return PINNED_CRDS / "kruise" / kruise_app_version(kruise.chart_version)


def kruise_crd_files(fleet: FleetConfig, root: Path) -> list[str]:
    """The Karmada API server's Kruise CRD files (builders.kruise.KARMADA_CRD_FILES), from a local
    directory. A `crdDir` must lie inside the project and hold the files as regular files."""
    directory = kruise_crd_dir(fleet, root)
    if directory is None or fleet.karmada is None:
        return []
    if fleet.karmada.kruise.crd_dir is not None:
        checked = project_dir(root, fleet.karmada.kruise.crd_dir, KRUISE_CRD_DIR_KEY)
        if isinstance(checked, Issue):
            raise ConfigError([checked])
        directory = checked
    files = [directory / name for name in KARMADA_CRD_FILES]
    missing = [f.name for f in files if not f.is_file()]
    if missing and fleet.karmada.kruise.crd_dir is None:
        version = kruise_app_version(fleet.karmada.kruise.chart_version)
        raise ConfigError(
            [
                Issue(
                    "karmada.kruise.chartVersion",
                    f"no pinned {', '.join(missing)} for Kruise {version} in {directory}: run "
                    f"scripts/fetch-crds (pins: {PINS_FILE}), or set {KRUISE_CRD_DIR_KEY}",
                )
            ]
        )
    if missing:
        raise ConfigError(
            [Issue(KRUISE_CRD_DIR_KEY, f"no {', '.join(missing)} in {directory}: set crdDir")]
        )
    if fleet.karmada.kruise.crd_dir is not None:
        base = root.resolve()
        checked_files = [
            project_file(
                base, str(f.relative_to(base)), KRUISE_CRD_DIR_KEY, max_bytes=MAX_CRD_BYTES
            )
            for f in files
        ]
        issues = [f for f in checked_files if isinstance(f, Issue)]
        if issues:
            raise ConfigError(issues)
    return [str(path) for path in files]


def stack_resource_groups(root: Path | None = None) -> dict[str, tuple[str, str | None]]:
    """Every `Pulumi.<stack>.yaml` beside the program that creates AKS clusters -> (its resource
    group as the program names it, its `azure-native:subscriptionId` or None).

    Read leniently: a file that cannot be read, or has no fleet, is left out (its own preflight
    reports it).
    """
    folder = root or PROJECT_ROOT
    out: dict[str, tuple[str, str | None]] = {}
    for path in sorted(folder.glob("Pulumi.*.yaml")):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        try:
            found = read_stack_config(stack, folder)
        except ConfigError:
            continue
        if found is None:
            continue
        config = found[0]
        fleet: Any = config.get(FULL_KEY)
        if not isinstance(fleet, dict):
            continue
        fleet = cast("dict[str, Any]", fleet)
        clusters: Any = fleet.get("clusters")
        if not isinstance(clusters, list) or not any(
            isinstance(c, dict) and cast("dict[str, Any]", c).get("source", "aks") == "aks"
            for c in cast("list[Any]", clusters)
        ):
            continue
        group = fleet.get("resourceGroup")
        subscription = config.get("azure-native:subscriptionId")
        out[stack] = (
            resource_group_of(group if isinstance(group, str) else None, stack),
            subscription if isinstance(subscription, str) else None,
        )
    return out
