"""Typed, validated fleet configuration: models, cross-field checks, loaders. No resources here."""

from config.errors import ConfigError, Issue
from config.loader import load_from_file, load_from_pulumi, parse_fleet
from config.models import ClusterConfig, FleetConfig, PoolConfig, SystemPoolConfig

__all__ = [
    "ClusterConfig",
    "ConfigError",
    "FleetConfig",
    "Issue",
    "PoolConfig",
    "SystemPoolConfig",
    "load_from_file",
    "load_from_pulumi",
    "parse_fleet",
]
