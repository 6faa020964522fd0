"""The program (__main__.py) under mocks: secrets inside the fleet key stay secret or are refused,
file-path keys and kubeconfigs are checked before any resource, and no message carries a
credential."""

from __future__ import annotations

import copy
import json
import runpy
import shutil
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from checks.stack import load_from_file, read_files
from config.errors import ConfigError
from config.loader import FULL_KEY
from testkit.mocks import FAKE_KUBECONFIG, Graph, is_secret, run_program
from testkit.repo import ROOT

RELEASE = "kubernetes:helm.sh/v3:Release"
TOKEN = "tok-9f3b2c7e5d1a"  # stands for every credential: a token, a client key, a passphrase
SECURE = {"secure": "v1:AAAAciphertext"}


def dev_fleet() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"][FULL_KEY]


def plain(value: Any) -> Any:
    """What the CLI hands the program: every `secure:` leaf decrypted (to TOKEN)."""
    if value == SECURE:
        return TOKEN
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def run_main(
    project: Path,
    fleet: dict[str, Any],
    *,
    write_file: bool = True,
    extra: dict[str, str] | None = None,
    secret_keys: tuple[str, ...] = (),
) -> None:
    """__main__.py from `project` (stack `test`, as the mocks name it), config set as the CLI
    would: the fleet key decrypted and marked secret when any leaf is `secure:`."""
    shutil.copy(ROOT / "__main__.py", project / "__main__.py")
    if write_file:
        document = {"config": {"azure-native:location": "westeurope", FULL_KEY: fleet}}
        (project / "Pulumi.test.yaml").write_text(yaml.safe_dump(document))
    values = {FULL_KEY: json.dumps(plain(fleet)), "azure-native:location": "westeurope"}
    values |= extra or {}
    secret = [FULL_KEY] if plain(fleet) != fleet else []
    pulumi.runtime.config.set_all_config(values, [*secret, *secret_keys])
    run_program(lambda: runpy.run_path(str(project / "__main__.py")))


def clear_occurrences(value: Any, needle: str) -> int:
    """How often `needle` appears in recorded inputs outside a secret."""
    if is_secret(value):
        return 0
    if isinstance(value, dict):
        return sum(clear_occurrences(v, needle) for v in value.values())
    if isinstance(value, list):
        return sum(clear_occurrences(v, needle) for v in value)
    return int(isinstance(value, str) and needle in value)


def kueue_releases(graph: Graph) -> list[Any]:
    return [r for r in graph.of_type(RELEASE) if "kueue" in str(r.inputs.get("chart"))]


def test_secret_chart_values_reach_helm_as_a_secret(graph: Graph, tmp_path: Path) -> None:
    fleet = dev_fleet()
    fleet["kueue"]["values"] = {"controllerManager": {"podAnnotations": {"x": SECURE}}}
    run_main(tmp_path, fleet)
    releases = kueue_releases(graph)
    assert len(releases) == 3  # one a cluster
    assert all(is_secret(r.inputs["values"]) for r in releases)
    assert TOKEN in json.dumps([r.inputs for r in releases])  # it is there, inside the secret
    assert sum(clear_occurrences(r.inputs, TOKEN) for r in graph.resources) == 0


def test_without_secrets_chart_values_stay_plain(graph: Graph, tmp_path: Path) -> None:
    run_main(tmp_path, dev_fleet())
    assert not any(is_secret(r.inputs["values"]) for r in kueue_releases(graph))


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda f: f["tags"].update(owner=SECURE), "tags.owner"),
        (
            lambda f: f["clusters"][1].setdefault("tags", {}).update(cost=SECURE),
            r"clusters\[1\]\.tags\.cost",
        ),
        (lambda f: f.update(resourceGroup=SECURE), "resourceGroup"),
        (lambda f: f["clusters"][1]["pools"][0]["labels"].update(x=SECURE), r"labels\.x"),
    ],
)
def test_secret_where_it_makes_no_sense_is_refused(
    graph: Graph, tmp_path: Path, edit: Any, path: str
) -> None:
    fleet = dev_fleet()
    edit(fleet)
    with pytest.raises(pulumi.RunError, match=rf"{path}: a secret cannot stand here") as err:
        run_main(tmp_path, fleet)
    assert TOKEN not in str(err.value)
    assert graph.resources == []
    # Preflight refuses the same, from the file.
    with pytest.raises(ConfigError, match=rf"{path}: a secret cannot stand here"):
        load_from_file("test", tmp_path)


def test_secret_fleet_key_without_its_file_is_refused(graph: Graph, tmp_path: Path) -> None:
    fleet = dev_fleet()
    fleet["kueue"]["values"] = {"a": SECURE}
    with pytest.raises(
        pulumi.RunError, match=r"holds a secret, but Pulumi\.test\.yaml does not say"
    ):
        run_main(tmp_path, fleet, write_file=False)
    assert graph.resources == []


@pytest.mark.parametrize(
    ("fleet_json", "message"),
    [
        ("[" * 5000 + "]" * 5000, "unreadable"),  # the SDK's JSON decoder: RecursionError
        ('{"tags": ' + "[" * 100 + "]" * 100 + "}", "nested deeper than 64"),
        ('{"tags": {' + ",".join(f'"t{i}": "v"' for i in range(30_000)) + "}}", "more than"),
        ('{"clusters": ', "unreadable"),
    ],
)
def test_config_json_from_the_cli_is_bounded_too(
    graph: Graph, tmp_path: Path, fleet_json: str, message: str
) -> None:
    shutil.copy(ROOT / "__main__.py", tmp_path / "__main__.py")
    pulumi.runtime.config.set_all_config({FULL_KEY: fleet_json}, [])
    with pytest.raises(pulumi.RunError, match=rf"{FULL_KEY}: .*{message}"):
        run_program(lambda: runpy.run_path(str(tmp_path / "__main__.py")))
    assert graph.resources == []


def existing(source: dict[str, Any]) -> dict[str, Any]:
    return {
        "location": "westeurope",
        "clusters": [{"name": "a", "role": "standalone", "source": "existing", "existing": source}],
    }


def good_kubeconfig() -> str:
    return FAKE_KUBECONFIG.format(name="a").replace("token: fake", f"token: {TOKEN}")


# Kubeconfigs broken in every way we know, each with credential material on or near the break.
BROKEN_KUBECONFIGS: dict[str, tuple[str, str | None]] = {
    "YAML breaks at the token line": (
        good_kubeconfig().replace(f"token: {TOKEN}", f"token: [{TOKEN}"),
        None,
    ),
    "token on a line with a tab": (good_kubeconfig() + f"\t{TOKEN}\n", None),
    "duplicate token key": (good_kubeconfig() + f"token: {TOKEN}\ntoken: {TOKEN}\n", None),
    "unknown tag": (good_kubeconfig() + f"x: !{TOKEN} y\n", None),
    "missing context": (good_kubeconfig(), "other"),
    "not a mapping": (f"- {TOKEN}\n", None),
    "no server": (good_kubeconfig().replace("server: https://a.hcp", f"server: {TOKEN}"), None),
    "client key broken": (
        good_kubeconfig().replace("client-key-data: S0VZCg==", f"client-key-data: '{TOKEN}"),
        None,
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_KUBECONFIGS))
def test_kubeconfig_file_fails_before_resources_without_echo(
    graph: Graph, tmp_path: Path, case: str
) -> None:
    document, context = BROKEN_KUBECONFIGS[case]
    (tmp_path / "kube.yaml").write_text(document)
    fleet = existing({"kubeconfigPath": "kube.yaml", **({"context": context} if context else {})})
    with pytest.raises(pulumi.RunError, match=r"clusters\[0\]\.existing\.kubeconfigPath: ") as err:
        run_main(tmp_path, fleet)
    assert TOKEN not in str(err.value)
    assert graph.resources == []
    with pytest.raises(ConfigError) as offline:
        load_from_file("test", tmp_path)
    assert TOKEN not in str(offline.value)


@pytest.mark.parametrize("case", list(BROKEN_KUBECONFIGS))
def test_kubeconfig_secret_fails_before_resources_without_echo(
    graph: Graph, tmp_path: Path, case: str
) -> None:
    document, context = BROKEN_KUBECONFIGS[case]
    fleet = existing({"kubeconfigSecret": "aKube", **({"context": context} if context else {})})
    key = "aks-batch-fleet:aKube"
    with pytest.raises(
        pulumi.RunError, match=r"clusters\[0\]\.existing\.kubeconfigSecret: "
    ) as err:
        run_main(tmp_path, fleet, extra={key: document}, secret_keys=(key,))
    assert TOKEN not in str(err.value)
    assert graph.resources == []


def test_kubeconfig_secret_missing_names_the_key(graph: Graph, tmp_path: Path) -> None:
    fleet = existing({"kubeconfigSecret": "aKube"})
    with pytest.raises(pulumi.RunError, match=r"kubeconfigSecret: the stack has no config key"):
        run_main(tmp_path, fleet)
    assert graph.resources == []


def test_good_kubeconfig_secret_stays_secret(graph: Graph, tmp_path: Path) -> None:
    fleet = existing({"kubeconfigSecret": "aKube"})
    key = "aks-batch-fleet:aKube"
    run_main(tmp_path, fleet, extra={key: good_kubeconfig()}, secret_keys=(key,))
    assert graph.resources
    assert sum(clear_occurrences(r.inputs, TOKEN) for r in graph.resources) == 0


def test_environ_path_never_reaches_a_message(graph: Graph, tmp_path: Path) -> None:
    """A pull request pointing kubeconfigPath at the runner's environment (PR previews comment
    the error publicly): refused by the path alone, nothing read."""
    fleet = existing({"kubeconfigPath": "/proc/self/environ"})
    with pytest.raises(pulumi.RunError, match="must be relative to the project") as err:
        run_main(tmp_path, fleet)
    assert "PATH=" not in str(err.value)
    assert graph.resources == []


def test_token_through_every_offline_path(tmp_path: Path) -> None:
    """Every offline message for a kubeconfig file holding TOKEN, broken every known way."""
    fleet_raw = existing({"kubeconfigPath": "kube.yaml"})
    from checks.stack import parse_fleet  # noqa: PLC0415

    for document, context in BROKEN_KUBECONFIGS.values():
        (tmp_path / "kube.yaml").write_text(document)
        raw = copy.deepcopy(fleet_raw)
        if context:
            raw["clusters"][0]["existing"]["context"] = context
        fleet, _ = parse_fleet(raw)
        with pytest.raises(ConfigError) as err:
            read_files(fleet, tmp_path)
        assert TOKEN not in str(err.value)
