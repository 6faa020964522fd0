"""What `Pulumi.<stack>.yaml` may say: typed models, derived defaults, loading. No resources here.

The rules that relate several keys are in `checks`; `checks.stack` loads and checks in one call.
"""

from config.errors import ConfigError, Issue
from config.models import ClusterConfig, FleetConfig, PoolConfig, SystemPoolConfig

__all__ = [
    "ClusterConfig",
    "ConfigError",
    "FleetConfig",
    "Issue",
    "PoolConfig",
    "SystemPoolConfig",
]
