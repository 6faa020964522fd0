"""A stack's config, parsed and checked: the one entry point for preflight and the program."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builders.kubeconfig import KubeconfigError, server_of
from checks import validate
from checks.aks_rules import shared_resource_groups
from checks.frameworks import operator_files
from config.errors import ConfigError, Issue, errors_of, key_path
from config.loader import (
    KARMADA_KUBECONFIG_KEY,
    PINNED_CRDS,
    PINNED_GOMOD,
    kruise_crd_files,
    kueue_crd_files,
    read_existing_kubeconfigs,
    read_karmada_kubeconfig,
    read_stack_file,
    stack_lines,
    stack_resource_groups,
)
from config.models import FleetConfig
from config.schema import parse_model
from constants import PROJECT_ROOT


@dataclass(frozen=True)
class StackFiles:
    """What the config's file-path keys point at, checked: kubeconfig documents and CRD files."""

    kubeconfigs: dict[str, str] = field(default_factory=dict[str, str])
    crd_files: list[str] = field(default_factory=list[str])
    # `karmada.source: existing` with `kubeconfigPath`: the Karmada API server's kubeconfig.
    karmada_kubeconfig: str | None = None
    # The Karmada API server's Kruise CRD files, when read locally (`karmada.kruise`).
    kruise_crd_files: list[str] = field(default_factory=list[str])
    # The manager's pinned CRDs of the kinds `operators` installs, and the training operator's
    # upstream overlay in the pinned module (checks.frameworks.operator_files).
    operator_crd_files: list[str] = field(default_factory=list[str])
    training_operator_overlay: str | None = None


def parse_fleet(raw: Any, *, source: str = "") -> tuple[FleetConfig, list[Issue]]:
    """Schema, then every check: the model and its warnings, or ConfigError with every error."""
    fleet = parse_model(raw, source=source)
    issues = validate(fleet)
    if errors_of(issues):
        raise ConfigError(issues, source, raw)
    return fleet, issues


def kubeconfig_issue(document: str, context: str | None, path: str) -> Issue | None:
    """A kubeconfig that cannot reach its cluster, as an Issue at `path` (never its content)."""
    try:
        server_of(document, context)
    except KubeconfigError as exc:
        return Issue(path, f"not a usable kubeconfig: {exc}")
    return None


def read_files(fleet: FleetConfig, root: Path, *, source: str = "") -> StackFiles:
    """Every file-path key resolved inside `root` and read, kubeconfigs parsed with their context.

    Runs before any resource exists, in preflight and in the program alike.
    """
    issues: list[Issue] = []
    kubeconfigs: dict[str, str] = {}
    crd_files: list[str] = []
    try:
        kubeconfigs = read_existing_kubeconfigs(fleet, root)
    except ConfigError as err:
        issues += err.issues
    for i, cluster in enumerate(fleet.clusters):
        if cluster.existing is not None and cluster.name in kubeconfigs:
            at = key_path("clusters", i, "existing", "kubeconfigPath")
            found = kubeconfig_issue(kubeconfigs[cluster.name], cluster.existing.context, at)
            issues += [found] if found else []
    karmada: str | None = None
    try:
        karmada = read_karmada_kubeconfig(fleet, root)
    except ConfigError as err:
        issues += err.issues
    existing = fleet.karmada.existing if fleet.karmada is not None else None
    if karmada is not None and existing is not None:
        found = kubeconfig_issue(karmada, existing.context, KARMADA_KUBECONFIG_KEY)
        issues += [found] if found else []
    try:
        crd_files = kueue_crd_files(fleet, root)
    except ConfigError as err:
        issues += err.issues
    kruise_crds: list[str] = []
    try:
        kruise_crds = kruise_crd_files(fleet, root)
    except ConfigError as err:
        issues += err.issues
    operator_crds: list[str] = []
    overlay: str | None = None
    try:
        operator_crds, overlay = operator_files(fleet, PINNED_CRDS, PINNED_GOMOD)
    except ConfigError as err:
        issues += err.issues
    if issues:
        raise ConfigError(issues, source)
    return StackFiles(
        kubeconfigs=kubeconfigs,
        crd_files=crd_files,
        karmada_kubeconfig=karmada,
        kruise_crd_files=kruise_crds,
        operator_crd_files=operator_crds,
        training_operator_overlay=overlay,
    )


def with_lines(err: ConfigError, stack: str, root: Path | None = None) -> ConfigError:
    """`err` naming the lines of `Pulumi.<stack>.yaml` when that file holds the very config it is
    about: the program's config comes from the CLI, which may have read it elsewhere
    (`--config-file`), and a fleet with secrets differs from the file's placeholders."""
    try:
        written, _ = read_stack_file(stack, root)
    except ConfigError:
        return err
    if err.data is None or written != err.data:
        return err
    return ConfigError(err.issues, err.source, err.data, stack_lines(stack, root))


def load_from_file(
    stack: str, root: Path | None = None, *, files: bool = True
) -> tuple[FleetConfig, list[Issue]]:
    """Offline: `Pulumi.<stack>.yaml` parsed and checked, as the program would see it.

    `files=False` skips the file-path keys: for a stack file taken alone from another git ref.
    Every error names the line of its key (the file is read for lines only when there are errors).
    """
    raw: Any = None
    try:
        raw, source = read_stack_file(stack, root)
        fleet, warnings = parse_fleet(raw, source=source)
        if files:
            read_files(fleet, root or PROJECT_ROOT, source=source)
            shared = stack_collisions(stack, fleet, root or PROJECT_ROOT)
            if shared:
                raise ConfigError(shared, source, raw)
    except ConfigError as err:
        # A file that is not YAML has no key lines: its error already names where it stopped.
        lines = stack_lines(stack, root) or err.lines
        raise ConfigError(err.issues, err.source, err.data or raw, lines) from None
    return fleet, warnings


def stack_collisions(stack: str, fleet: FleetConfig, root: Path) -> list[Issue]:
    """This stack's resource group claimed by another stack file beside it (checks.aks_rules)."""
    if not any(c.source == "aks" for c in fleet.clusters):
        return []
    return shared_resource_groups(stack, stack_resource_groups(root))
