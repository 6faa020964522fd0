"""Composition root of the dispatch stack (see dispatch.py and docs/scale.md)."""

import sys
from pathlib import Path

# The project's packages (builders, components, config) live two levels up.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pulumi
from dispatch import dispatch_program, parse

from config.errors import ConfigError

try:
    settings = parse(pulumi.Config("dispatch").require_object("settings"))
except ConfigError as err:
    raise pulumi.RunError(str(err)) from None
dispatch_program(settings)
