"""Damaged or hostile stack files: exit 1 with a key path, never a traceback, hang or escape.

Each case is one a careless or hostile contributor could commit, by category: damage to the file
rather than a field, alias bombs, lenient types, file-path keys that leave the project, and Azure
limits.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import preflight.__main__ as preflight_main
from checks.stack import load_from_file, parse_fleet, read_files
from config import yamlsafe
from config.errors import ConfigError
from config.loader import FULL_KEY
from testkit.mocks import FAKE_KUBECONFIG, built_stack
from testkit.repo import COMMITTED_STACKS, ROOT
from upstream import aks

DEV = (ROOT / "Pulumi.dev.yaml").read_text()


def dev_config() -> dict[str, Any]:
    return yaml.safe_load(DEV)


def write_stack(root: Path, data: bytes | str | dict[str, Any], stack: str = "s") -> None:
    if isinstance(data, dict):
        data = yaml.safe_dump(data)
    path = root / f"Pulumi.{stack}.yaml"
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def preflight_json(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict[str, Any]]:
    """`python -m preflight s --json` on the stack file in `root`: exit code and parsed JSON."""
    monkeypatch.setattr(preflight_main, "load_from_file", lambda s: load_from_file(s, root))
    started = time.process_time()
    code = preflight_main.main(["s", "--json"])
    assert time.process_time() - started < 2
    return code, json.loads(capsys.readouterr().out)


def with_fleet(fleet_yaml: str) -> str:
    return f"config:\n  azure-native:location: westeurope\n  {FULL_KEY}:\n{fleet_yaml}"


MINIMAL = "    clusters:\n      - {name: a, role: standalone}\n"

BOMB = (
    '    kueue:\n      values:\n        a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    + "".join(
        f"        {chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n"
        for i in range(9)
    )
    + MINIMAL
)

DAMAGED_FILES: dict[str, tuple[bytes | str, str]] = {
    "file is a list": ("- a\n- b\n", "must be a mapping with a `config` key"),
    "file is a scalar": ("just text\n", "must be a mapping with a `config` key"),
    "config is a list": ("config: [a, b]\n", "must be a mapping of config keys"),
    "fleet is a string": (with_fleet("    hello\n"), "must be a mapping with at least"),
    "latin-1": (with_fleet(MINIMAL).replace("a,", "caf\xe9,").encode("latin-1"), "not UTF-8"),
    "utf-16": (with_fleet(MINIMAL).encode("utf-16"), "not UTF-8"),
    "random bytes": (bytes(range(128, 256)) * 4, "not UTF-8"),
    "huge integer": (with_fleet(f"    kubernetesVersion: {'9' * 5000}\n"), "more than 100 digits"),
    "deep nesting": (with_fleet("    tags: " + "[" * 5000 + "]" * 5000 + "\n"), "nest"),
    "alias bomb in the fleet key": (with_fleet(BOMB), "aliases are expanded"),
    "duplicate key": (with_fleet("    location: a\n    location: b\n" + MINIMAL), "duplicate key"),
    "two documents": (with_fleet(MINIMAL) + "---\nx: 1\n", "not valid YAML"),
    "python tag": (with_fleet("    tags: !!python/object:os.system x\n"), "not valid YAML"),
    "NUL byte": (with_fleet(MINIMAL).replace("a,", "a\x00,"), "NUL"),
    "too large": (with_fleet(MINIMAL) + "#" * (yamlsafe.MAX_BYTES + 1), "larger than"),
    "self-referencing alias": (with_fleet("    tags: &t {a: *t}\n" + MINIMAL), "alias"),
}


@pytest.mark.parametrize("case", list(DAMAGED_FILES))
def test_damaged_file_gives_json_errors(
    case: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data, message = DAMAGED_FILES[case]
    write_stack(tmp_path, data)
    code, out = preflight_json(tmp_path, monkeypatch, capsys)
    assert code == 1
    assert out["valid"] is False
    assert any(message in e["message"] or message in e["path"] for e in out["errors"]), out


def test_alias_bomb_outside_the_fleet_key_is_bounded_too(tmp_path: Path) -> None:
    write_stack(tmp_path, "other: &x [1, 1]\n" + with_fleet(BOMB))
    started = time.process_time()
    with pytest.raises(ConfigError, match="aliases are expanded"):
        load_from_file("s", tmp_path)
    assert time.process_time() - started < 1


def test_anchors_of_the_committed_stacks_still_load() -> None:
    assert "&workerQueues" in DEV  # the dev stack shares its worker queues through an anchor
    for stack in COMMITTED_STACKS:
        text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
        assert yamlsafe.load(text.encode(), name=stack) == yaml.safe_load(text)


def test_libyaml_parser_is_used_and_fast() -> None:
    assert yaml.__with_libyaml__
    assert yamlsafe._Parser is yaml.cyaml.CParser  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    text = "root:\n" + "".join(f"  key{i}: [value, {i}, true]\n" for i in range(3000))
    assert len(yamlsafe.load(text, name="big")["root"]) == 3000

    def cpu(parse: Callable[[], object]) -> float:
        """Best of three, in this process's CPU time: the real tier runs beside this test in
        the other pytest process, and wall time would measure that machine load."""
        times: list[float] = []
        for _ in range(3):
            started = time.process_time()
            parse()
            times.append(time.process_time() - started)
        return min(times)

    ours = cpu(lambda: yamlsafe.load(text, name="big"))
    pure = cpu(lambda: yaml.load(text, Loader=yaml.SafeLoader))  # the parser it replaces
    assert ours < pure / 2, (ours, pure)


def test_limits_refuse_before_building() -> None:
    """A flat file of the largest size allowed, and one value over the value limit."""
    flat = "".join(f"- {i}\n" for i in range(yamlsafe.MAX_NODES))
    started = time.process_time()  # CPU time: machine load does not count
    with pytest.raises(yamlsafe.YamlError, match="more than 20000 values"):
        yamlsafe.load(flat, name="flat")
    assert time.process_time() - started < 0.5


@pytest.mark.parametrize(
    ("scalar", "value"),
    [
        ("yes", "yes"),
        ("on", "on"),
        ("1:20", "1:20"),
        ("2001-01-01", "2001-01-01"),
        ("true", True),
        ("017", 17),
        ("0x1f", 31),
        ("1e3", 1000.0),
        ("~", None),
    ],
)
def test_scalars_resolve_as_the_pulumi_cli_reads_them(scalar: str, value: object) -> None:
    """YAML 1.2 core schema (the CLI's go-yaml v3): `yes` is a string, not a boolean."""
    assert yamlsafe.load(f"k: {scalar}\n", name="f") == {"k": value}


def base_raw() -> dict[str, Any]:
    raw = dev_config()["config"][FULL_KEY]
    raw["location"] = "westeurope"
    return raw


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda r: r["clusters"][1]["pools"][0].update(maxCount=True), "maxCount"),
        (lambda r: r["clusters"][1]["virtualNodes"].update(enabled="yes"), "enabled"),
        (lambda r: r["clusters"][1]["virtualNodes"].update(enabled=1), "enabled"),
        (lambda r: r["clusters"][1]["systemPool"].update(count="2"), "count"),
        (lambda r: r["clusters"][1]["systemPool"].update(count=1.0), "count"),
        (lambda r: r["clusters"][1]["pools"][0].update(zones=[1]), "zones"),
        (lambda r: r.update(tags={"env": 5}), "tags.env"),
        (lambda r: r["clusters"][1]["pools"][0].update(spotMaxPrice=float("inf")), "spotMaxPrice"),
        (lambda r: r["clusters"][1]["pools"][0].update(spotMaxPrice=float("nan")), "spotMaxPrice"),
    ],
)
def test_strict_types(edit: Any, path: str) -> None:
    raw = base_raw()
    edit(raw)
    with pytest.raises(ConfigError, match=path):
        parse_fleet(raw)


def test_strict_types_keep_text_values() -> None:
    raw = base_raw()
    raw["clusters"][1]["network"] = {"podCidr": "10.250.0.0/16", "dnsServiceIp": "10.0.0.10"}
    fleet, _ = parse_fleet(raw)
    assert str(fleet.clusters[1].network.pod_cidr) == "10.250.0.0/16"
    raw["clusters"][1]["network"] = {"podCidr": "10.250.0.1/16"}
    with pytest.raises(ConfigError, match=r"network\.podCidr: .*host bits"):
        parse_fleet(raw)


def test_quantity_overflow_is_a_config_error() -> None:
    raw = base_raw()
    resources = raw["clusters"][0]["queues"]["clusterQueues"][0]["resourceGroups"][0]
    resources["flavors"][0]["resources"][0]["nominalQuota"] = "1e999999999"
    with pytest.raises(ConfigError, match=r"nominalQuota: .*exponent out of range"):
        parse_fleet(raw)


def test_azure_tag_limits() -> None:
    raw = base_raw()
    raw["tags"] = {f"t{i}": "v" for i in range(120_000)}
    started = time.process_time()
    with pytest.raises(ConfigError, match="tags: Dictionary should have at most 50 items"):
        parse_fleet(raw)
    assert time.process_time() - started < 2
    raw["tags"] = {"a/b": "v", "ok": "v" * 257, "Azure-x": "v"}
    with pytest.raises(ConfigError) as err:
        parse_fleet(raw)
    assert {str(i) for i in err.value.errors} == {
        "tags.a/b: the key: a tag name cannot contain /",
        "tags.ok: a tag value has at most 256 characters",
        "tags.Azure-x: the key: tag names starting with microsoft, azure, windows are Azure's",
    }
    # 30 fleet tags + 20 cluster tags + the program's 3 exceed 50 on that cluster's resources.
    raw["tags"] = {f"f{i}": "v" for i in range(30)}
    raw["clusters"][1]["tags"] = {f"c{i}": "v" for i in range(20)}
    with pytest.raises(ConfigError, match=r"clusters\[worker-1\]\.tags: 53 tags .*Azure allows 50"):
        parse_fleet(raw)


@pytest.mark.parametrize("stack", COMMITTED_STACKS)
def test_the_programs_own_tags_obey_azure(stack: str) -> None:
    """Every tag the program puts on an Azure resource passes the rule the config's tags pass."""
    tagged = [r for r in built_stack(stack).graph.resources if r.inputs.get("tags")]
    assert tagged
    for r in tagged:
        assert len(r.inputs["tags"]) <= aks.MAX_TAGS
        assert [n for n in r.inputs["tags"] if aks.tag_name_problem(n)] == [], r.name


# ---- file-path keys ---------------------------------------------------------------------------


def existing_fleet(path: str, context: str | None = None) -> dict[str, Any]:
    existing: dict[str, Any] = {"kubeconfigPath": path}
    if context:
        existing["context"] = context
    return {
        "location": "westeurope",
        "clusters": [
            {"name": "a", "role": "standalone", "source": "existing", "existing": existing}
        ],
    }


def crd_fleet(crd_dir: str) -> dict[str, Any]:
    return {
        "location": "westeurope",
        "kueue": {"install": "manifests-only", "crdDir": crd_dir},
        "clusters": [{"name": "a", "role": "standalone"}],
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with a good kubeconfig, an empty file and links leading out."""
    root = tmp_path / "project"
    (root / "kube").mkdir(parents=True)
    (root / "kube" / "good.yaml").write_text(FAKE_KUBECONFIG.format(name="a"))
    (root / "kube" / "empty.yaml").write_text("")
    (tmp_path / "outside.yaml").write_text(FAKE_KUBECONFIG.format(name="a"))
    os.symlink(tmp_path / "outside.yaml", root / "kube" / "link-out.yaml")
    os.symlink("/dev/zero", root / "kube" / "zero.yaml")
    os.symlink(tmp_path, root / "parent-link")
    (root / "crds").mkdir()
    os.symlink(tmp_path / "outside.yaml", root / "crds" / "kueue.x-k8s.io_workloads.yaml")
    return root


PATH_CASES: dict[str, str] = {
    "kube/missing.yaml": "no such file",
    "kube/empty.yaml": "empty file",
    "kube/g\x00ood.yaml": "control characters",
    "../../etc/passwd": "no `..`",
    "/etc/passwd": "not absolute",
    "/proc/self/environ": "not absolute",
    "/dev/zero": "not absolute",
    "kube/link-out.yaml": "must stay inside the project",
    "parent-link/outside.yaml": "must stay inside the project",
    "kube/zero.yaml": "must stay inside the project",
    "kube": "must be a regular file",
    "": "not empty",
}


@pytest.mark.parametrize("relative", list(PATH_CASES))
def test_kubeconfig_path_stays_in_the_project(project: Path, relative: str) -> None:
    fleet, _ = parse_fleet(existing_fleet(relative))
    started = time.process_time()
    with pytest.raises(ConfigError) as err:
        read_files(fleet, project)
    assert time.process_time() - started < 1
    (issue,) = err.value.errors
    assert issue.path == "clusters[0].existing.kubeconfigPath"
    assert PATH_CASES[relative] in issue.message


def test_kubeconfig_path_too_large(project: Path) -> None:
    (project / "kube" / "big.yaml").write_bytes(b"#" * (300 * 1024))
    fleet, _ = parse_fleet(existing_fleet("kube/big.yaml"))
    with pytest.raises(ConfigError, match="larger than 256 KiB"):
        read_files(fleet, project)


@pytest.mark.parametrize(
    ("crd_dir", "message"),
    [
        ("../", "no `..`"),
        ("/tmp", "not absolute"),
        ("parent-link", "must stay inside the project"),
        ("missing", "no such directory"),
        ("crds", "must stay inside the project"),  # its CRD file is a link out
    ],
)
def test_crd_dir_stays_in_the_project(project: Path, crd_dir: str, message: str) -> None:
    fleet, _ = parse_fleet(crd_fleet(crd_dir))
    with pytest.raises(ConfigError) as err:
        read_files(fleet, project)
    assert all(i.path == "kueue.crdDir" for i in err.value.errors)
    assert message in err.value.errors[0].message


def test_preflight_refuses_what_the_program_refuses(project: Path) -> None:
    """The path checks run in preflight too (from the stack file in the project)."""
    write_stack(project, {"config": {FULL_KEY: existing_fleet("../outside.yaml")}})
    with pytest.raises(ConfigError, match=r"kubeconfigPath: must stay inside the project"):
        load_from_file("s", project)
    write_stack(project, {"config": {FULL_KEY: existing_fleet("kube/good.yaml")}})
    fleet, _ = load_from_file("s", project)
    assert fleet.clusters[0].existing is not None


@pytest.mark.parametrize(
    ("document", "context", "message"),
    [
        ("token: abc\nusers: [\n", None, "not valid YAML"),
        ("- a\n", None, "not a kubeconfig mapping"),
        (FAKE_KUBECONFIG.format(name="a"), "other", "no context named 'other'"),
        ("apiVersion: v1\nkind: Config\n", None, "no current-context"),
    ],
)
def test_kubeconfig_is_parsed_before_any_resource(
    project: Path, document: str, context: str | None, message: str
) -> None:
    (project / "kube" / "bad.yaml").write_text(document)
    fleet, _ = parse_fleet(existing_fleet("kube/bad.yaml", context))
    with pytest.raises(ConfigError) as err:
        read_files(fleet, project)
    (issue,) = err.value.errors
    assert issue.path == "clusters[0].existing.kubeconfigPath"
    assert message in issue.message
    assert "abc" not in issue.message


def test_committed_stacks_load_unchanged() -> None:
    for stack in COMMITTED_STACKS:
        fleet, _ = load_from_file(stack)
        raw = copy.deepcopy(yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text()))
        assert len(fleet.clusters) == len(raw["config"][FULL_KEY]["clusters"])
