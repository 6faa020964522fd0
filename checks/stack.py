"""A stack's config, parsed and checked: the one entry point for preflight and the program."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from checks import validate
from config.errors import ConfigError, Issue, errors_of
from config.loader import parse_model, read_stack_file
from config.models import FleetConfig


def parse_fleet(raw: Any, *, source: str = "") -> tuple[FleetConfig, list[Issue]]:
    """Schema, then every check: the model and its warnings, or ConfigError with every error."""
    fleet = parse_model(raw, source=source)
    issues = validate(fleet)
    if errors_of(issues):
        raise ConfigError(issues, source)
    return fleet, issues


def load_from_file(stack: str, root: Path | None = None) -> tuple[FleetConfig, list[Issue]]:
    """Offline: `Pulumi.<stack>.yaml` parsed and checked, as the program would see it."""
    raw, source = read_stack_file(stack, root)
    return parse_fleet(raw, source=source)
