"""The plan diff (`preflight.diff.compare`) as plain text for a terminal, and as GitHub Markdown for
a pull request's comment."""

from __future__ import annotations

from typing import Any

from preflight.diff_changes import Change

MARK = {"added": "+", "removed": "-", "changed": "~"}


def _line(c: Change) -> str:
    flag = f"  [!] {c['flag']}" if c["flag"] else ""
    return f"{MARK[c['change']]} {c['text']}{flag}"


def render_text(diff: dict[str, Any]) -> str:
    """Plain text for a terminal."""
    lines = [f"plan diff of stack {diff['stack']} against {diff['against']}"]
    lines += [f"note: {n}" for n in diff["notes"]]
    if not diff["changed"]:
        return "\n".join([*lines, "no change"]) + "\n"
    for section in diff["sections"]:
        lines += ["", section["title"], *(f"  {_line(c)}" for c in section["changes"])]
    return "\n".join(lines) + "\n"


def render_markdown(diff: dict[str, Any], *, heading: str = "###") -> str:
    """GitHub Markdown: flagged changes first, then one `diff` block per section."""
    changes = [c for s in diff["sections"] for c in s["changes"]]
    title = f"{heading} Plan diff: `{diff['stack']}` against `{diff['against']}`"
    lines = [title, ""]
    lines += [f"> {n}" for n in diff["notes"]]
    if diff["notes"]:
        lines.append("")
    if not diff["changed"]:
        return "\n".join([*lines, "No change."]) + "\n"
    lines.append(f"{len(changes)} changes, {diff['flagged']} flagged.")
    flagged = [c for c in changes if c["flag"]]
    if flagged:
        lines += ["", "**Needs a second look:**", ""]
        # The key only: the whole line follows in its section.
        lines += [f"- :warning: **{c['flag']}**: `{c['key']}`" for c in flagged]
    for section in diff["sections"]:
        lines += ["", f"**{section['title']}**", "", "```diff"]
        # `diff` colours "+" green and "-" red; "!" marks a change in place.
        marks = {"added": "+", "removed": "-", "changed": "!"}
        for c in section["changes"]:
            flag = f"   <- {c['flag']}" if c["flag"] else ""
            lines.append(f"{marks[c['change']]} {c['text']}{flag}")
        lines.append("```")
    return "\n".join(lines) + "\n"
