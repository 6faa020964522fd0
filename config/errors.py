"""Config problems with their key paths, reported all at once."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


def key_path(*parts: str | int) -> str:
    """`key_path("clusters", 1, "pools", 0, "maxCount")` -> `clusters[1].pools[0].maxCount`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem in the stack config: where it is and what is allowed."""

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigError(Exception):
    """The stack config is invalid; carries every error found (and the warnings)."""

    def __init__(self, issues: Sequence[Issue], source: str = "") -> None:
        self.issues = list(issues)
        self.source = source
        super().__init__(self.render())

    @property
    def errors(self) -> list[Issue]:
        return [i for i in self.issues if i.severity == "error"]

    def render(self) -> str:
        errors = self.errors
        where = f" in {self.source}" if self.source else ""
        head = f"{len(errors)} config error{'s' if len(errors) != 1 else ''}{where}:"
        return "\n".join([head, *(f"  - {i}" for i in errors)])


def errors_of(issues: Iterable[Issue]) -> list[Issue]:
    return [i for i in issues if i.severity == "error"]
