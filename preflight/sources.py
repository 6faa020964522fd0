"""Where preflight gets each layer's objects, releases and plan sections (pure builders only)."""

from __future__ import annotations

from typing import Any

from builders.manifest import HelmRelease, Manifest
from config.errors import Issue
from config.models import FleetConfig

Section = dict[str, Any]


def collect(fleet: FleetConfig) -> tuple[list[Manifest], list[HelmRelease]]:
    """Every object and Helm release the stack would apply, per target API server."""
    manifests: list[Manifest] = []
    releases: list[HelmRelease] = []
    return manifests, releases


def extra_sections(fleet: FleetConfig) -> tuple[list[Section], list[Issue]]:
    """Plan tables contributed by the Kubernetes layers, and their warnings."""
    return [], []
