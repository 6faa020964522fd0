"""The base of every config model; imported by each config module (models imports the others)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Frozen, strict types, unknown keys rejected, camelCase keys in YAML, snake_case in Python."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        str_strip_whitespace=False,
        # YAML and JSON already carry types: `maxCount: true` or `enabled: "yes"` is a mistake,
        # not a 1 or a true.
        strict=True,
        # `.inf` and `.nan` are YAML floats; no setting of ours means either.
        allow_inf_nan=False,
    )
