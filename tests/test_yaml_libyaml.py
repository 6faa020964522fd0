"""The stack loader and `--render` use libyaml (C) when PyYAML has it; same documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from builders.fleet import render_fleet
from checks.stack import load_from_file, parse_fleet
from config import yamlsafe
from preflight import render
from testkit.fleetgen import fleet, write_stack

libyaml = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML built without libyaml")


@libyaml
def test_loader_and_renderer_use_libyaml() -> None:
    c_parser = yaml.cyaml.CParser  # pyright: ignore[reportAttributeAccessIssue]
    assert issubclass(yamlsafe._Loader, c_parser)  # pyright: ignore[reportPrivateUsage]
    assert render.SAFE_DUMPER is yaml.CSafeDumper


def test_rendered_files_load_back_as_the_objects(tmp_path: Path) -> None:
    value, _ = parse_fleet(fleet(3))
    manifests, releases = render_fleet(value)
    written = render.write_render(tmp_path, manifests, releases)
    for target in {m.target for m in manifests}:
        docs = list(yaml.load_all((tmp_path / f"{target}.yaml").read_text(), yaml.SafeLoader))
        assert docs == [m.obj for m in manifests if m.target == target]
    for release in releases:
        path = tmp_path / f"{release.target}.{release.release}.values.yaml"
        assert yaml.load(path.read_text(), yaml.SafeLoader) == release.values
    assert len(written) == len({m.target for m in manifests}) + len(releases)


def test_a_stack_file_loads_the_same_with_either_loader(tmp_path: Path) -> None:
    path = write_stack(tmp_path, "gen", fleet(5))
    pure = yaml.load(path.read_text(), yaml.SafeLoader)["config"]["aks-batch-fleet:fleet"]
    value, _ = load_from_file("gen", tmp_path)
    assert value == parse_fleet(pure)[0]
