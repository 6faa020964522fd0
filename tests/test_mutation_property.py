"""Property: any mutation of a committed stack file (types, keys, structure, bytes) makes
`python -m preflight <stack> --json` exit 0, or exit 1 with every error on a key path or the file;
never a traceback, never more than 2 s of CPU or 200 MiB. Seeded (derandomized) and bounded.

CPU time, not wall time: the machines that run this are shared, and a loaded one stretches the
wall clock several times over for the same work."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

import preflight.__main__ as preflight_main
from checks.stack import load_from_file
from testkit.repo import COMMITTED_STACKS, ROOT

STACKS = {name: (ROOT / f"Pulumi.{name}.yaml").read_text() for name in COMMITTED_STACKS}
MAX_SECONDS = 2.0
MAX_PEAK_BYTES = 200 * 1024 * 1024

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, -1, 2**31, 2**63]),
    st.just(10**200),  # over the loader's 100-digit limit
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["yes", "on", "1e999999999", "10.0.0.0/8", "../../etc/passwd", "/dev/zero"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=10), inner, max_size=4),
        st.builds(lambda v: {"secure": v}, st.text(max_size=8)),
    ),
    max_leaves=8,
)


def paths(node: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path in a YAML document (the root included)."""
    out: list[tuple[Any, ...]] = [here]
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, (*here, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += paths(value, (*here, i))
    return out


def mutate_data(doc: Any, data: st.DataObject) -> Any:
    """Replace, delete, rename or re-wrap one node of the parsed document."""
    target = data.draw(st.sampled_from(paths(doc)))
    kind = data.draw(st.sampled_from(["replace", "delete", "rename", "wrap"]))
    if not target:
        return data.draw(values)
    parent = doc
    for part in target[:-1]:
        parent = parent[part]
    last = target[-1]
    if kind == "replace":
        parent[last] = data.draw(values)
    elif kind == "delete":
        del parent[last]
    elif kind == "rename" and isinstance(parent, dict):
        parent[data.draw(st.text(max_size=12))] = parent.pop(last)
    else:
        parent[last] = data.draw(st.sampled_from([[parent[last]], {"x": parent[last]}]))
    return doc


def mutate_bytes(text: str, data: st.DataObject) -> bytes:
    """Insert, delete or overwrite a few bytes anywhere in the file."""
    raw = bytearray(text.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw)))
        chunk = data.draw(
            st.one_of(
                st.binary(min_size=1, max_size=8),
                st.sampled_from([b"*a", b"&a ", b"{", b"[", b": ", b"\t", b"\n  - ", b"!!", b"<<"]),
            )
        )
        cut = data.draw(st.integers(0, 8))
        raw[at : at + cut] = chunk
    return bytes(raw)


def preflight_json(root: Path) -> tuple[int, str]:
    out = io.StringIO()
    with (
        mock.patch.object(preflight_main, "load_from_file", lambda s: load_from_file(s, root)),
        contextlib.redirect_stdout(out),
    ):
        code = preflight_main.main(["s", "--json"])
    return code, out.getvalue()


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Each committed stack through preflight once, untimed: the CPU bound judges a mutated input,
    not the first call's imports (which land on this module when it runs first in its process,
    as under `pytest -n 2`)."""
    for name, text in STACKS.items():
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "Pulumi.s.yaml").write_text(text)
            code, _ = preflight_json(Path(tmp))
        assert code in (0, 1), name


@settings(
    max_examples=150,
    derandomize=True,  # a fixed seed: the same examples on every run
    database=None,
    deadline=None,  # timed below in CPU seconds, against MAX_SECONDS
    # No explain phase: it reruns failing examples many times, for a message we do not need.
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(stack=st.sampled_from(sorted(STACKS)), on_bytes=st.booleans(), data=st.data())
def test_mutated_stack_exits_cleanly(stack: str, on_bytes: bool, data: st.DataObject) -> None:
    text = STACKS[stack]
    if on_bytes:
        content = mutate_bytes(text, data)
    else:
        doc = mutate_data(yaml.safe_load(text), data)
        content = yaml.safe_dump(doc, allow_unicode=True).encode()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "Pulumi.s.yaml").write_bytes(content)
        tracemalloc.start()
        started = time.process_time()
        try:
            code, out = preflight_json(root)  # a traceback fails the test with the example
        finally:
            elapsed = time.process_time() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    assert elapsed < MAX_SECONDS, f"{elapsed:.2f} s of CPU"
    assert peak < MAX_PEAK_BYTES, f"peak of {peak // 2**20} MiB allocated"
    result = json.loads(out)
    event(f"exit {code}")
    assert code in (0, 1)
    assert result["valid"] is (code == 0)
    if code == 1:
        assert result["errors"]
        assert all(e["message"] for e in result["errors"])
